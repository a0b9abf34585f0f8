//! What runs (each cluster's sources, the alert pusher) and how a reload
//! changes it: the new configuration, already validated whole, is applied as
//! a difference. A cluster whose configuration is unchanged keeps its
//! session, models, counters and history. One whose trees alone changed
//! keeps its session too: the session takes the new set up, and trees whose
//! configuration did not change keep their models, counters and history. A
//! cluster whose other settings changed (servers, credentials, certificates,
//! timeouts, ...) gets a new session; its unchanged trees, timeline and
//! session counters carry over all the same. A removed
//! cluster stops and its series disappear; an added one starts. `[alerting]`
//! changes restart the pusher, which carries on with what fires. `[web]` is
//! read at start only.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::assemble::{Cluster, assemble, configured_trees, models};
use super::supervise::{Ends, Supervisor};
use crate::config::{ClusterConfig, Config};
use crate::http::ReloadRequest;
use crate::model::alerting::{Book, PushStats};
use crate::model::carry::TreePlan;
use crate::model::{ClusterState, Roster, SharedCluster};
use crate::sources::fourlw::poller::Poller;

/// How long a stopping cluster's tasks get before they are aborted.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What a reload did to one cluster (an index into its tally).
#[derive(Debug, Clone, Copy)]
enum Change {
    Kept,
    Retreed,
    Rebuilt,
    Added,
    Removed,
}

/// One running cluster and what it was started from.
struct Live {
    config: ClusterConfig,
    fingerprint: u64,
    cluster: Cluster,
    stop: watch::Sender<bool>,
}

struct Pusher {
    /// The fingerprint of the `[alerting]` it runs with.
    fingerprint: u64,
    stop: watch::Sender<bool>,
    task: JoinHandle<Book>,
}

pub(super) struct Running {
    /// What the outputs read: the clusters and pollers in force.
    pub clusters: Roster<SharedCluster>,
    pub pollers: Roster<Arc<Poller>>,
    pub push: Arc<PushStats>,
    live: Vec<Live>,
    pusher: Option<Pusher>,
    supervisor: Supervisor,
}

fn launch(config: &ClusterConfig, state: SharedCluster, supervisor: &Supervisor) -> Live {
    let (stop, rx) = watch::channel(false);
    Live {
        config: config.clone(),
        fingerprint: config.fingerprint(),
        cluster: assemble(config.clone(), state, &rx, supervisor),
        stop,
    }
}

/// Stops a cluster's tasks (bounded) and hands back its models.
async fn stop(live: Live) -> SharedCluster {
    let _ = live.stop.send(true);
    for task in live.cluster.tasks {
        let abort = task.abort_handle();
        if tokio::time::timeout(STOP_GRACE, task).await.is_err() {
            warn!(cluster = %live.config.name, "a task did not stop in time; aborted");
            abort.abort();
        }
    }
    live.cluster.state
}

/// The new cluster's models, taking over from `old` what did not change
/// (trees keep their models by id, see [`crate::model::tree::TreeId`]).
fn carried(old_config: &ClusterConfig, old: ClusterState, config: &ClusterConfig) -> ClusterState {
    let same_discovery = old_config.discovery.fingerprint() == config.discovery.fingerprint();
    let mut state = models(config);
    state.adopt(old, same_discovery);
    state
}

impl Running {
    pub fn start(config: &Config, supervisor: Supervisor) -> Self {
        let mut running = Self {
            clusters: Roster::default(),
            pollers: Roster::default(),
            push: Arc::new(PushStats::default()),
            live: config
                .clusters
                .iter()
                .map(|c| launch(c, SharedCluster::new(models(c)), &supervisor))
                .collect(),
            pusher: None,
            supervisor,
        };
        running.publish();
        running.set_pusher(config, None);
        running
    }

    /// Shows the outputs the clusters running now.
    fn publish(&self) {
        self.clusters
            .replace(self.live.iter().map(|l| l.cluster.state.clone()).collect());
        self.pollers.replace(
            self.live
                .iter()
                .filter_map(|l| l.cluster.poller.clone())
                .collect(),
        );
    }

    /// Starts the pusher `[alerting]` asks for, carrying on with what
    /// the one before had firing.
    fn set_pusher(&mut self, config: &Config, carried: Option<Book>) {
        self.pusher = config.alerting.clone().map(|alerting| {
            let (stop, rx) = watch::channel(false);
            let fingerprint = alerting.fingerprint();
            let thresholds = crate::alerting::thresholds(&alerting);
            let adopt = carried.is_none();
            let book = match carried {
                Some(book) => book.retuned(thresholds),
                None => Book::new(thresholds),
            };
            let task = self.supervisor.spawn(
                "alert pusher",
                Ends::WhenStopped,
                rx.clone(),
                crate::alerting::run(
                    alerting,
                    self.clusters.clone(),
                    self.push.clone(),
                    rx,
                    book,
                    adopt,
                ),
            );
            Pusher {
                fingerprint,
                stop,
                task,
            }
        });
    }

    /// Applies `new` (valid as a whole) over `old`; says what it did.
    pub async fn apply(&mut self, old: &Config, new: &Config) -> String {
        let mut tally = [0usize; 5];
        tally[Change::Removed as usize] = self.remove_gone(new).await;
        for config in &new.clusters {
            tally[self.apply_cluster(config).await as usize] += 1;
        }
        // The configuration's order.
        self.live.sort_by_key(|l| {
            new.clusters
                .iter()
                .position(|c| c.name == l.config.name)
                .unwrap_or(usize::MAX)
        });
        self.publish();
        let pusher_note = self.repush(new).await;
        let web_note = if old.web.listener_fingerprint() != new.web.listener_fingerprint() {
            warn!(
                "reload: [web] changed; listen address, path, timeouts and web config file apply at the next start"
            );
            "; [web] changes apply at the next start"
        } else {
            ""
        };
        let [kept, retreed, rebuilt, added, removed] = tally;
        format!(
            "clusters kept {kept}, trees changed {retreed}, rebuilt {rebuilt}, added {added}, removed {removed}{pusher_note}{web_note}"
        )
    }

    /// Removed clusters leave the outputs first, then stop; says how many.
    async fn remove_gone(&mut self, new: &Config) -> usize {
        let mut removed = 0;
        while let Some(i) = self
            .live
            .iter()
            .position(|l| !new.clusters.iter().any(|c| c.name == l.config.name))
        {
            let gone = self.live.remove(i);
            self.publish();
            info!(cluster = %gone.config.name, "reload: cluster removed");
            stop(gone).await;
            removed += 1;
        }
        removed
    }

    /// Takes up one cluster's new configuration, as little as it needs.
    async fn apply_cluster(&mut self, config: &ClusterConfig) -> Change {
        let Some(i) = self.live.iter().position(|l| l.config.name == config.name) else {
            self.live.push(launch(
                config,
                SharedCluster::new(models(config)),
                &self.supervisor,
            ));
            self.publish();
            info!(cluster = %config.name, "reload: cluster added");
            return Change::Added;
        };
        let live = &mut self.live[i];
        if live.fingerprint == config.fingerprint() {
            return Change::Kept;
        }
        if live.config.session_fingerprint() == config.session_fingerprint() {
            // Only trees changed: the session stays and takes them up.
            let plan = TreePlan {
                configured: configured_trees(config),
            };
            if live.cluster.plans.send(plan).is_err() {
                warn!(cluster = %config.name, "reload: the cluster's session task is gone; its trees stay as they were");
            }
            live.config = config.clone();
            live.fingerprint = config.fingerprint();
            info!(cluster = %config.name, "reload: trees changed; the session stays, unchanged trees keep their state");
            return Change::Retreed;
        }
        // The old sources stop; the models stay in place and serve their
        // last values while the new sources start on what they carry over.
        let old_live = self.live.remove(i);
        let old_config = old_live.config.clone();
        let state = stop(old_live).await;
        state.rebuild(|old| carried(&old_config, old, config));
        self.live.insert(i, launch(config, state, &self.supervisor));
        self.publish();
        info!(cluster = %config.name, "reload: cluster changed, new session; unchanged trees keep their state");
        Change::Rebuilt
    }

    /// A changed `[alerting]` restarts the pusher, which carries on with
    /// what fires; says so.
    async fn repush(&mut self, new: &Config) -> &'static str {
        let fingerprint = new.alerting.as_ref().map(|a| a.fingerprint());
        if self.pusher.as_ref().map(|p| p.fingerprint) == fingerprint {
            return "";
        }
        let book = match self.pusher.take() {
            Some(p) => {
                let _ = p.stop.send(true);
                p.task.await.ok()
            }
            None => None,
        };
        self.set_pusher(new, book);
        if self.pusher.is_some() {
            "; alert pusher (re)started"
        } else {
            self.push.with(|s| {
                s.enabled = false;
                s.active.clear();
                s.firing.clear();
            });
            "; alert pusher stopped"
        }
    }

    /// Stops everything (shutdown).
    pub async fn stop_all(&mut self) {
        if let Some(p) = self.pusher.take() {
            let _ = p.stop.send(true);
            let _ = p.task.await;
        }
        for live in std::mem::take(&mut self.live) {
            stop(live).await;
        }
    }
}

/// Turns every SIGHUP into a reload request; the agent logs the outcome.
pub(super) async fn on_sighup(requests: mpsc::Sender<ReloadRequest>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        warn!("cannot listen for SIGHUP; reload with POST /-/reload");
        return;
    };
    while hangups.recv().await.is_some() {
        info!("SIGHUP: reloading the configuration");
        let (tx, _rx) = tokio::sync::oneshot::channel();
        if requests.send(tx).await.is_err() {
            return;
        }
    }
}
