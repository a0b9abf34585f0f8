//! Failover probe: a real two-candidate election under the probe path,
//! run with two extra sessions, whose master is killed every interval.
//!
//! - Each round the master's session is **closed** and the time until the
//!   standby is notified and sees itself lowest is observed: the best-case
//!   switch time any election on this ensemble can reach.
//! - At least 10 session timeouts apart, the master's session is instead
//!   **abandoned** (connection dropped, session left to expire): the time a
//!   crashed master stays in place.
//! - With `write = true`, create and delete of an ephemeral node time the
//!   ensemble's write path (`zookeeper_session_request_duration_seconds{op="write"}`).
//!
//! Probe nodes live under `path/<instance>` (host, pid and start time), so
//! several agents never collide, and are deleted on shutdown.

use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;
use tracing::{info, warn};
use zookeeper_client::{Acls, Client, CreateMode, EventType};

use crate::config::{ClusterConfig, ProbeConfig};
use crate::model::SharedCluster;

/// What a round measured.
enum Measured {
    Failover(Duration),
    Expiry(Duration),
}

async fn connect(cfg: &ClusterConfig, detached: bool) -> Result<Client, zookeeper_client::Error> {
    let mut c = Client::connector();
    if detached {
        c = c.with_detached();
    }
    super::zk::connect::dial(cfg, c).await
}

fn instance_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let start = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!(
        "{}-{}-{start}",
        if host.is_empty() { "agent" } else { &host },
        std::process::id()
    )
}

fn describe(path: &str, e: &zookeeper_client::Error) -> String {
    match e {
        zookeeper_client::Error::NoAuth => format!(
            "the failover probe cannot write under {path}: not authorized; grant create and delete there or remove [clusters.probe]"
        ),
        other => format!("failover probe under {path} failed: {other}"),
    }
}

struct Probe<'a> {
    cfg: &'a ClusterConfig,
    settings: &'a ProbeConfig,
    election: String,
    standby: Option<Client>,
    last_expiry: Instant,
}

impl Probe<'_> {
    async fn standby(&mut self) -> Result<Client, zookeeper_client::Error> {
        if let Some(c) = &self.standby
            && !c.state().is_terminated()
        {
            return Ok(c.clone());
        }
        let c = connect(self.cfg, false).await?;
        self.standby = Some(c.clone());
        Ok(c)
    }

    async fn round(&mut self, state: &SharedCluster) -> Result<Measured, zookeeper_client::Error> {
        let standby = self.standby().await?;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match standby.mkdir(&self.election, &persistent).await {
            Ok(()) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
        // Leftovers of a round that failed halfway would outrank this one.
        for child in standby.list_children(&self.election).await? {
            match standby
                .delete(&format!("{}/{child}", self.election), None)
                .await
            {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        let expiry_round = self.last_expiry.elapsed() >= self.cfg.session_timeout * 10;
        let master = connect(self.cfg, expiry_round).await?;
        let candidate = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let prefix = format!("{}/n_", self.election);
        let (_, master_seq) = master.create(&prefix, b"probe-master", &candidate).await?;
        let master_node = format!("n_{master_seq}");
        let (_, standby_seq) = standby
            .create(&prefix, b"probe-standby", &candidate)
            .await?;
        let standby_node = format!("n_{standby_seq}");
        let (_, watcher) = standby
            .check_and_watch_stat(&format!("{}/{master_node}", self.election))
            .await?;
        let started = Instant::now();
        // Closing drops the node at once; a detached client abandons the
        // session, which then expires like a crashed process's.
        drop(master);
        let deadline = self.cfg.session_timeout * 3 + Duration::from_secs(5);
        let event = tokio::time::timeout(deadline, watcher.changed())
            .await
            .map_err(|_| zookeeper_client::Error::Timeout)?;
        if event.event_type != EventType::NodeDeleted {
            return Err(zookeeper_client::Error::UnexpectedError(format!(
                "probe watch saw {:?} instead of the master's deletion",
                event.event_type
            )));
        }
        let mut children = standby.list_children(&self.election).await?;
        children.sort_by_key(|c| crate::model::candidate::parse_sequence(c));
        let took = started.elapsed();
        if children.first() != Some(&standby_node) {
            return Err(zookeeper_client::Error::UnexpectedError(format!(
                "probe standby is not master after the failover: {children:?}"
            )));
        }
        if self.settings.write {
            let write = format!("{}/write", self.election);
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            let t = Instant::now();
            standby.create(&write, b"", &ephemeral).await?;
            state.request_observed("write", t.elapsed());
            let t = Instant::now();
            standby.delete(&write, None).await?;
            state.request_observed("write", t.elapsed());
        }
        standby
            .delete(&format!("{}/{standby_node}", self.election), None)
            .await?;
        if expiry_round {
            self.last_expiry = Instant::now();
            Ok(Measured::Expiry(took))
        } else {
            Ok(Measured::Failover(took))
        }
    }

    /// Deletes this agent's probe nodes (on shutdown).
    ///
    /// A round stopped halfway may leave the master's create in flight on
    /// its own session: it can land after the children were listed, and
    /// the election node is then not empty. So the removal is tried again,
    /// a few times over about a session timeout, on a fresh session should
    /// the standby's have ended.
    async fn clean_up(&mut self) {
        if self.standby.is_none() {
            return; // never connected: nothing was written
        }
        let pause = (self.cfg.session_timeout / 4)
            .clamp(Duration::from_millis(50), Duration::from_millis(500));
        let mut last = None;
        for _ in 0..CLEAN_UP_ATTEMPTS {
            match tokio::time::timeout(CLEAN_UP_ATTEMPT, self.remove_election()).await {
                Ok(Ok(())) => return,
                Ok(Err(e)) => last = Some(e.to_string()),
                Err(_) => last = Some(format!("no answer within {CLEAN_UP_ATTEMPT:?}")),
            }
            tokio::time::sleep(pause).await;
        }
        if let Some(e) = last {
            warn!(
                cluster = %self.cfg.name,
                "could not remove the failover probe's nodes under {}: {e}; delete them by hand",
                self.election
            );
        }
    }

    /// One attempt at deleting the election node and its children.
    async fn remove_election(&mut self) -> Result<(), zookeeper_client::Error> {
        let standby = self.standby().await?;
        let children = match standby.list_children(&self.election).await {
            Ok(children) => children,
            Err(zookeeper_client::Error::NoNode) => return Ok(()),
            Err(e) => return Err(e),
        };
        for c in children {
            match standby
                .delete(&format!("{}/{c}", self.election), None)
                .await
            {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        match standby.delete(&self.election, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// How often shutdown tries to remove the probe's nodes, and how long one
/// try may take: together well inside the agent's grace for a stopping task.
const CLEAN_UP_ATTEMPTS: usize = 5;
const CLEAN_UP_ATTEMPT: Duration = Duration::from_secs(1);

/// Runs the probe until `shutdown`, then removes its nodes.
pub async fn run(
    cfg: ClusterConfig,
    settings: ProbeConfig,
    state: SharedCluster,
    mut shutdown: watch::Receiver<bool>,
) {
    // Made with the cluster's models when `[clusters.probe]` is set.
    let Some(feed) = state.probe_feed() else {
        warn!(cluster = %cfg.name, "the failover probe has nowhere to report; it does not run (a bug: please report it)");
        return;
    };
    let mut p = Probe {
        election: format!(
            "{}/{}",
            settings.path.trim_end_matches('/'),
            instance_name()
        ),
        cfg: &cfg,
        settings: &settings,
        standby: None,
        last_expiry: Instant::now(),
    };
    let mut tick = tokio::time::interval(settings.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing: Option<String> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
        }
        let result = tokio::select! {
            r = p.round(&state) => r,
            _ = shutdown.changed() => break,
        };
        match result {
            Ok(Measured::Failover(d)) => feed.failover(d),
            Ok(Measured::Expiry(d)) => feed.expiry(d),
            Err(e) => {
                feed.failed();
                let message = describe(&settings.path, &e);
                if failing.as_deref() != Some(message.as_str()) {
                    warn!(cluster = %cfg.name, "{message}");
                    failing = Some(message);
                }
                continue;
            }
        }
        if failing.take().is_some() {
            info!(cluster = %cfg.name, "failover probe works again");
        }
    }
    p.clean_up().await;
}
