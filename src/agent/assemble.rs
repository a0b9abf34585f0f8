//! One cluster's models and the sources that feed them: its session, its
//! four-letter-word poller, ghost check and failover probe.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::supervise::{Ends, Supervisor};
use crate::config::ClusterConfig;
use crate::model::carry::TreePlan;
use crate::model::cluster::Setup;
use crate::model::tree::Tree;
use crate::model::{ClusterState, SharedCluster};
use crate::sources;
use crate::sources::fourlw::ghost::{self, GhostCheck};
use crate::sources::fourlw::poller::Poller;

/// A source's run, boxed so that one helper spawns them all.
type BoxedTask = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// One cluster, assembled: its shared models, its scrape-time poller and
/// the tasks that feed the models.
pub(super) struct Cluster {
    pub state: SharedCluster,
    pub poller: Option<Arc<Poller>>,
    pub tasks: Vec<JoinHandle<()>>,
    /// A reload's tree changes, to the session.
    pub plans: mpsc::UnboundedSender<TreePlan>,
}

/// The configured trees of `cluster` before anything is known, each with
/// the id [`ClusterConfig::tree_ids`] gives it.
pub(super) fn configured_trees(cluster: &ClusterConfig) -> Vec<Tree> {
    let trees = cluster
        .elections
        .iter()
        .map(|e| Tree::elections(e.pattern.clone(), e.spec.clone()))
        .chain(
            cluster
                .groups
                .iter()
                .map(|g| Tree::groups(g.pattern.clone(), g.spec.clone())),
        )
        .chain(
            cluster
                .locks
                .iter()
                .map(|l| Tree::locks(l.pattern.clone(), l.spec.clone())),
        );
    trees
        .zip(cluster.tree_ids())
        .map(|(tree, id)| tree.with_id(id))
        .collect()
}

/// The models of `cluster` before anything is known.
pub(super) fn models(cluster: &ClusterConfig) -> ClusterState {
    let model = ClusterState::new(
        cluster.name.clone(),
        configured_trees(cluster),
        cluster.four_letter_words.enabled,
    );
    model.set_up(Setup {
        limits: cluster.limits,
        timeline_size: cluster.timeline_size,
        discovery: cluster.discovery.enabled,
        probe: cluster.probe.is_some(),
        ghost_check: cluster.ghost_check.enabled,
        kerberos: cluster
            .auth
            .as_ref()
            .and_then(crate::config::Auth::kerberos)
            .is_some(),
    })
}

/// Starts every source of `cluster` on `state` under `supervisor`; they
/// stop when `stop` flips to true.
pub(super) fn assemble(
    cluster: ClusterConfig,
    state: SharedCluster,
    stop: &watch::Receiver<bool>,
    supervisor: &Supervisor,
) -> Cluster {
    let name = cluster.name.clone();
    let spawn = |task: &str, work: BoxedTask| {
        supervisor.spawn(
            format!("cluster {name}: {task}"),
            Ends::WhenStopped,
            stop.clone(),
            work,
        )
    };
    let fourlw = &cluster.four_letter_words;
    let poller = fourlw.enabled.then(|| {
        Arc::new(Poller::new(
            cluster.name.clone(),
            fourlw.clone(),
            state.ensemble_feed(),
        ))
    });
    let mut tasks = Vec::new();
    if cluster.ghost_check.enabled {
        let check = GhostCheck {
            cluster: cluster.name.clone(),
            servers: fourlw.servers.clone(),
            pace: cluster.ghost_check.cons_interval,
            timeout: fourlw.timeout,
            watches: cluster.ghost_check.watches,
            tls: cluster.tls.clone(),
        };
        tasks.push(spawn(
            "ghost check",
            Box::pin(ghost::run(check, state.clone(), stop.clone())),
        ));
    }
    if let Some(probe) = cluster.probe.clone() {
        tasks.push(spawn(
            "failover probe",
            Box::pin(sources::probe::run(
                cluster.clone(),
                probe,
                state.clone(),
                stop.clone(),
            )),
        ));
    }
    for job in sources::lease::jobs(&cluster) {
        let task = format!("lease reader of {}", job.pattern);
        tasks.push(spawn(
            &task,
            Box::pin(sources::lease::run(job, state.clone(), stop.clone())),
        ));
    }
    let (plans, plans_rx) = mpsc::unbounded_channel();
    tasks.push(spawn(
        "ZooKeeper session",
        Box::pin(sources::zk::lifecycle::run_cluster(
            cluster,
            state.clone(),
            stop.clone(),
            plans_rx,
        )),
    ));
    Cluster {
        state,
        poller,
        tasks,
        plans,
    }
}
