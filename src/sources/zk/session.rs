//! Session lifecycle of one cluster: connect, watch and list every tree,
//! follow events, resync after a reconnect, rebuild after expiry.
//!
//! `zookeeper-client` 0.11 does not re-register persistent watches after a
//! reconnect (its `resend_watches` never selects SetWatches2), so on every
//! `SyncConnected` that follows a disconnect each watch is dropped, placed
//! again and its tree re-listed; events during the outage are lost anyway and
//! the listing counts them once. `Expired`, `AuthFailed` and `Closed` are
//! final for a client: a new one is built with capped exponential backoff.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};
use zookeeper_client::{Client, SessionState as ZkState};

use super::oneshot::{self, Sink};
use super::watch::{
    MAX_EVENTS_PER_BATCH, TreeEvent, TreeWatch, apply_events, list_tree, observe, start_watch,
};
use crate::config::{ClusterConfig, WatchMode};
use crate::fourlw::parse::parse_members;
use crate::model::SharedCluster;
use crate::model::candidate::IdentityMode;
use crate::model::election::Now;
use crate::model::groups::GroupSpec;
use crate::model::session::SessionState;
use crate::model::tree::TreePattern;
use crate::model::tree::{PathKind, Tree, TreeSource};
use crate::sources::discovery::{self, Found};

const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How often `/zookeeper/config` is re-read for ensemble members.
const MEMBERS_REFRESH: Duration = Duration::from_secs(30);
/// How soon a tree whose listing failed (no rights, connection loss) is retried.
const SYNC_RETRY: Duration = Duration::from_secs(5);

/// Why a client's life ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Expired,
    AuthFailed,
    Closed,
    Shutdown,
}

/// Capped exponential backoff with a little jitter so several agents do not
/// reconnect in lockstep.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Self {
        Self {
            next: BACKOFF_START,
        }
    }
    fn reset(&mut self) {
        self.next = BACKOFF_START;
    }
    fn next_delay(&mut self) -> Duration {
        let jitter = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 100);
        let delay = self.next + self.next * jitter / 1000;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        delay
    }
}

fn set_state(state: &SharedCluster, s: SessionState, error: Option<String>) {
    let mut g = state.write().unwrap_or_else(|p| p.into_inner());
    g.session.state = s;
    if error.is_some() || matches!(s, SessionState::Connected | SessionState::ReadOnly) {
        g.session.last_error = error;
    }
}

/// Logs once per agent life that the cardinality guard dropped series.
fn report_dropped(cluster: &str, state: &mut crate::model::ClusterState) {
    if !state.dropped_reported && !state.dropped.is_empty() {
        state.dropped_reported = true;
        warn!(
            cluster,
            max_elections = state.limits.max_elections,
            max_groups = state.limits.max_groups,
            "more elections or groups than the cardinality guard allows; the rest are not exported \
             (see zookeeper_exporter_series_dropped_total; raise max_elections / max_groups to export them)"
        );
    }
}

/// Explains a connect failure in operator terms.
fn describe_connect_error(cfg: &ClusterConfig, e: &zookeeper_client::Error) -> String {
    let servers = cfg.servers.join(",");
    match e {
        zookeeper_client::Error::NoHosts => {
            format!(
                "no ZooKeeper server of [{servers}] accepted a session (refused or unreachable)"
            )
        }
        zookeeper_client::Error::Timeout => {
            format!("no session established with [{servers}] within the session timeout")
        }
        zookeeper_client::Error::AuthFailed => format!(
            "authentication to [{servers}] failed with the digest credentials from {}",
            cfg.auth.as_ref().map_or("(none)", |a| a.origin.as_str())
        ),
        other => format!("cannot connect to [{servers}]: {other}"),
    }
}

/// Explains a tree sync failure, with what to do about it.
fn describe_sync_error(
    cfg: &ClusterConfig,
    pattern: &TreePattern,
    e: &zookeeper_client::Error,
) -> String {
    match e {
        zookeeper_client::Error::NoAuth => format!(
            "not authorized to read {} (ACL); {}",
            pattern.root(),
            match &cfg.auth {
                Some(a) => format!("check the digest credentials from {}", a.origin),
                None => "configure `auth` for this cluster".to_owned(),
            }
        ),
        zookeeper_client::Error::Unimplemented => format!(
            "the server does not support persistent recursive watches on {} (needs ZooKeeper 3.6 or newer; set watch_mode = \"oneshot\" for older servers)",
            pattern.root()
        ),
        other => format!("cannot watch and list {}: {other}", pattern.root()),
    }
}

async fn connect(cfg: &ClusterConfig) -> Result<Client, zookeeper_client::Error> {
    let mut connector = Client::connector()
        .with_session_timeout(cfg.session_timeout)
        .with_connection_timeout(cfg.session_timeout.min(Duration::from_secs(5)))
        .with_fail_eagerly();
    if let Some(auth) = &cfg.auth {
        connector = connector.with_auth("digest", auth.credentials.expose().as_bytes());
    }
    connector.connect(&cfg.connect_string()).await
}

/// Runs the cluster until `shutdown` flips to true. Never returns early on
/// ZooKeeper trouble: every failure is recorded and retried.
pub async fn run_cluster(
    cfg: ClusterConfig,
    state: SharedCluster,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::new();
    let mut failing_since: Option<Instant> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        set_state(&state, SessionState::Connecting, None);
        let connected = tokio::select! {
            r = connect(&cfg) => r,
            _ = shutdown.changed() => return,
        };
        let end = match connected {
            Ok(client) => {
                if let Some(since) = failing_since.take() {
                    info!(cluster = %cfg.name, after = ?since.elapsed(), "connected to ZooKeeper again");
                } else {
                    info!(cluster = %cfg.name, servers = %cfg.connect_string(), "connected to ZooKeeper");
                }
                backoff.reset();
                let end = Session::new(&cfg, client, state.clone())
                    .run(&mut shutdown)
                    .await;
                if end == End::Shutdown {
                    return;
                }
                end
            }
            Err(e) => {
                let message = describe_connect_error(&cfg, &e);
                if failing_since.is_none() {
                    warn!(cluster = %cfg.name, "{message}; retrying with backoff");
                    failing_since = Some(Instant::now());
                } else {
                    debug!(cluster = %cfg.name, "{message}");
                }
                let mut g = state.write().unwrap_or_else(|p| p.into_inner());
                g.session.connect_failures += 1;
                let s = if matches!(e, zookeeper_client::Error::AuthFailed) {
                    SessionState::AuthFailed
                } else {
                    SessionState::Disconnected
                };
                g.session.state = s;
                g.session.last_error = Some(message);
                for tree in &mut g.trees {
                    tree.mark_unsynced();
                }
                End::Closed
            }
        };
        if end == End::Expired {
            warn!(cluster = %cfg.name, "ZooKeeper session expired; building a new session");
        }
        let delay = backoff.next_delay();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Errors meaning the server does not know persistent watches or
/// multi-reads (ZooKeeper before 3.6), as opposed to rights or connectivity.
fn is_unsupported(e: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error::*;
    matches!(
        e,
        Unimplemented | UnexpectedErrorCode(_) | UnmarshalError { .. } | MarshallingError
    )
}

/// How the current session watches trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Persistent,
    Oneshot,
}

/// One client's life.
struct Session<'a> {
    cfg: &'a ClusterConfig,
    client: Client,
    state: SharedCluster,
    patterns: Vec<TreePattern>,
    mode: Mode,
    /// Generation of each tree's live watch; events of others are stale.
    current: Vec<Option<u64>>,
    /// Persistent mode: the forwarder of each tree's recursive watch.
    watches: Vec<Option<TreeWatch>>,
    /// One-shot mode: intermediate nodes of each tree carrying a child watch.
    levels: Vec<HashSet<String>>,
    generation: u64,
    discovery_truncation_logged: bool,
    tx: mpsc::UnboundedSender<TreeEvent>,
    rx: mpsc::UnboundedReceiver<TreeEvent>,
}

impl<'a> Session<'a> {
    fn new(cfg: &'a ClusterConfig, client: Client, state: SharedCluster) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        // Trees in the order the cluster state holds them (elections, then groups).
        let patterns: Vec<TreePattern> = state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .trees
            .iter()
            .map(|t| t.pattern().clone())
            .collect();
        Self {
            cfg,
            mode: match cfg.watch_mode {
                WatchMode::Oneshot => Mode::Oneshot,
                WatchMode::Auto | WatchMode::Persistent => Mode::Persistent,
            },
            current: patterns.iter().map(|_| None).collect(),
            watches: patterns.iter().map(|_| None).collect(),
            levels: patterns.iter().map(|_| HashSet::new()).collect(),
            patterns,
            discovery_truncation_logged: false,
            client,
            state,
            generation: 0,
            tx,
            rx,
        }
    }

    async fn run(mut self, shutdown: &mut watch::Receiver<bool>) -> End {
        let mut states = self.client.state_watcher();
        {
            let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
            g.session.timeout = Some(self.client.session_timeout());
            g.session.id = Some(self.client.session_id().0);
            g.session.state = SessionState::Connected;
            g.session.last_error = None;
        }
        self.sync_all().await;
        self.refresh_members().await;
        let mut members = tokio::time::interval(MEMBERS_REFRESH);
        members.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        members.reset();
        // The first walk runs right away, then every `interval`.
        let mut discover = tokio::time::interval(self.cfg.discovery.interval);
        discover.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut probe = tokio::time::interval(self.cfg.latency_probe_interval);
        probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = tokio::time::interval(SYNC_RETRY);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        retry.reset();
        let mut connected = true;
        loop {
            tokio::select! {
                _ = shutdown.changed() => {
                    set_state(&self.state, SessionState::Closed, None);
                    return End::Shutdown;
                }
                s = states.changed() => match s {
                    ZkState::Disconnected => {
                        connected = false;
                        warn!(cluster = %self.cfg.name, "disconnected from ZooKeeper; trees are stale until reconnect");
                        let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
                        g.session.state = SessionState::Disconnected;
                        g.session.last_error = Some("session disconnected, reconnecting".into());
                        for tree in &mut g.trees {
                            tree.mark_unsynced();
                        }
                    }
                    ZkState::SyncConnected | ZkState::ConnectedReadOnly => {
                        let read_only = s == ZkState::ConnectedReadOnly;
                        info!(cluster = %self.cfg.name, read_only, "reconnected to ZooKeeper; resyncing trees");
                        {
                            let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
                            if !connected {
                                g.session.reconnects += 1;
                            }
                            g.session.state = if read_only { SessionState::ReadOnly } else { SessionState::Connected };
                            g.session.last_error = None;
                        }
                        connected = true;
                        self.sync_all().await;
                        self.refresh_members().await;
                    }
                    ZkState::Expired => {
                        let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
                        g.session.expirations += 1;
                        g.session.state = SessionState::Expired;
                        g.session.last_error = Some("session expired; building a new session".into());
                        for tree in &mut g.trees {
                            tree.mark_unsynced();
                        }
                        return End::Expired;
                    }
                    ZkState::AuthFailed => {
                        set_state(&self.state, SessionState::AuthFailed, Some("authentication failed".into()));
                        return End::AuthFailed;
                    }
                    ZkState::Closed => {
                        set_state(&self.state, SessionState::Closed, Some("session closed".into()));
                        return End::Closed;
                    }
                },
                Some(first) = self.rx.recv() => {
                    let mut batch = vec![first];
                    while batch.len() < MAX_EVENTS_PER_BATCH {
                        match self.rx.try_recv() {
                            Ok(e) => batch.push(e),
                            Err(_) => break,
                        }
                    }
                    self.apply(batch).await;
                }
                _ = probe.tick(), if connected => {
                    let started = Instant::now();
                    if self.client.check_stat("/").await.is_ok() {
                        observe(&self.state, "read", started.elapsed());
                    }
                }
                _ = members.tick(), if connected => self.refresh_members().await,
                _ = discover.tick(), if connected && self.cfg.discovery.enabled => self.discover().await,
                _ = retry.tick(), if connected => {
                    let failed: Vec<usize> = {
                        let g = self.state.read().unwrap_or_else(|p| p.into_inner());
                        (0..g.trees.len()).filter(|i| !g.trees[*i].synced()).collect()
                    };
                    for i in failed {
                        self.sync_tree(i).await;
                    }
                }
            }
        }
    }

    async fn apply(&mut self, batch: Vec<TreeEvent>) {
        let current: Vec<TreeEvent> = batch
            .into_iter()
            .filter(|e| self.current[e.tree] == Some(e.generation))
            .collect();
        if current.is_empty() {
            return;
        }
        let mut trees: Vec<usize> = current.iter().map(|e| e.tree).collect();
        trees.sort_unstable();
        trees.dedup();
        let result = match self.mode {
            Mode::Persistent => {
                apply_events(&self.client, &self.patterns, current, &self.state).await
            }
            Mode::Oneshot => self.apply_oneshot(current).await,
        };
        report_dropped(
            &self.cfg.name,
            &mut self.state.write().unwrap_or_else(|p| p.into_inner()),
        );
        if let Err(e) = result {
            // A read failed (connection loss mid-batch): the affected trees
            // are re-listed rather than guessed.
            debug!(cluster = %self.cfg.name, "reading changed nodes failed ({e}); resyncing");
            for i in trees {
                self.sync_tree(i).await;
            }
        }
    }

    async fn apply_oneshot(
        &mut self,
        events: Vec<TreeEvent>,
    ) -> Result<(), zookeeper_client::Error> {
        for event in events {
            let sink = Sink {
                tree: event.tree,
                generation: event.generation,
                tx: self.tx.clone(),
            };
            let pattern = &self.patterns[event.tree];
            let levels = &mut self.levels[event.tree];
            oneshot::apply_event(&self.client, pattern, event, &sink, levels, &self.state).await?;
        }
        Ok(())
    }

    /// Walks the namespace for election and group trees and starts watching
    /// the ones no tree covers yet. Configured trees win: a found node a
    /// configured glob matches is left to it.
    async fn discover(&mut self) {
        let d = &self.cfg.discovery;
        let walk = match discovery::walk(&self.client, &d.root, &d.exclude, d.max_nodes).await {
            Ok(w) => w,
            Err(e) => {
                debug!(cluster = %self.cfg.name, "discovery walk failed ({e}); retrying at the next interval");
                return;
            }
        };
        if walk.truncated && !self.discovery_truncation_logged {
            self.discovery_truncation_logged = true;
            warn!(
                cluster = %self.cfg.name,
                max_nodes = d.max_nodes,
                "discovery stopped after max_nodes nodes; trees deeper in the namespace are not found \
                 (raise discovery.max_nodes, narrow discovery.root, or configure the trees)"
            );
        }
        let mut added = Vec::new();
        for kind in [Found::Election, Found::Group] {
            for pattern in discovery::patterns(&walk, kind) {
                let found: Vec<&str> = match kind {
                    Found::Election => walk.elections().collect(),
                    _ => walk.groups().collect(),
                };
                let under: Vec<&str> = found
                    .into_iter()
                    .filter(|p| pattern.classify(p) == PathKind::Parent)
                    .collect();
                let fresh = discovery::uncovered(under.iter().copied(), &self.patterns);
                if fresh.is_empty() {
                    continue;
                }
                // Part of a glob is already watched: watch the rest one by one.
                let patterns = if fresh.len() == under.len() {
                    vec![pattern]
                } else {
                    fresh
                        .iter()
                        .filter_map(|p| TreePattern::parse(p).ok())
                        .collect()
                };
                for p in patterns {
                    let tree = match kind {
                        Found::Election => Tree::elections(p.clone(), IdentityMode::Data),
                        _ => Tree::groups(
                            p.clone(),
                            GroupSpec {
                                member: IdentityMode::Node,
                                min_members: None,
                                export_members: false,
                            },
                        ),
                    };
                    added.push((p, tree.with_source(TreeSource::Discovered), kind));
                }
            }
        }
        let first_new = self.patterns.len();
        {
            let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
            let status = g.discovery.get_or_insert_with(Default::default);
            status.nodes_walked = walk.walked;
            status.truncated = walk.truncated;
            status.last_run = Some(std::time::SystemTime::now());
            for (_, _, kind) in &added {
                match kind {
                    Found::Election => status.election_trees += 1,
                    _ => status.group_trees += 1,
                }
            }
            for (pattern, tree, _) in added {
                info!(cluster = %self.cfg.name, tree = %pattern.as_str(), kind = tree.kind_label(), "discovered a tree");
                g.trees.push(tree);
                self.patterns.push(pattern);
                self.current.push(None);
                self.watches.push(None);
                self.levels.push(HashSet::new());
            }
        }
        for i in first_new..self.patterns.len() {
            self.sync_tree(i).await;
        }
    }

    /// Reads the members the ensemble publishes in `/zookeeper/config`
    /// (3.5+), so the four-letter-word poller sees a grown ensemble. Servers
    /// without it (3.4, or no client addresses listed) leave the list empty.
    async fn refresh_members(&self) {
        let (members, size) = match self.client.get_config().await {
            Ok((data, _)) => {
                let all = parse_members(&String::from_utf8_lossy(&data));
                let size = all.len();
                (
                    all.into_iter().filter_map(|m| m.client_address).collect(),
                    Some(size),
                )
            }
            Err(e) => {
                debug!(cluster = %self.cfg.name, "no /zookeeper/config ({e})");
                (Vec::new(), None)
            }
        };
        let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
        g.members = members;
        g.ensemble_size = size;
    }

    async fn sync_all(&mut self) {
        for i in 0..self.patterns.len() {
            self.sync_tree(i).await;
        }
    }

    /// Replaces the tree's watches and re-lists it.
    async fn sync_tree(&mut self, i: usize) {
        self.watches[i] = None;
        self.current[i] = None;
        self.generation += 1;
        let pattern = self.patterns[i].clone();
        let mut result = self.list(i, &pattern).await;
        if self.mode == Mode::Persistent
            && self.cfg.watch_mode == WatchMode::Auto
            && result.as_ref().is_err_and(is_unsupported)
        {
            warn!(
                cluster = %self.cfg.name,
                "the server does not support persistent watches or multi-reads (ZooKeeper < 3.6); using one-shot watches"
            );
            self.mode = Mode::Oneshot;
            result = self.list(i, &pattern).await;
        }
        let mut g = self.state.write().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(listing) => {
                if g.trees[i].sync_error().is_some() {
                    info!(cluster = %self.cfg.name, tree = %pattern.as_str(), "tree synced again");
                }
                g.apply_listing(i, listing, Now::current());
                report_dropped(&self.cfg.name, &mut g);
                self.current[i] = Some(self.generation);
            }
            Err(e) => {
                self.watches[i] = None;
                let message = describe_sync_error(self.cfg, &pattern, &e);
                let tree = &mut g.trees[i];
                if tree.sync_error() != Some(message.as_str()) {
                    warn!(cluster = %self.cfg.name, tree = %pattern.as_str(), "{message}; retrying every {SYNC_RETRY:?}");
                }
                tree.sync_failed(message);
            }
        }
    }

    /// Places the watches of tree `i` and lists it, in the current mode.
    async fn list(
        &mut self,
        i: usize,
        pattern: &TreePattern,
    ) -> Result<Vec<(String, Vec<crate::model::tree::ChildNode>)>, zookeeper_client::Error> {
        match self.mode {
            Mode::Persistent => {
                let watch = start_watch(
                    &self.client,
                    i,
                    &pattern.root(),
                    self.generation,
                    self.tx.clone(),
                )
                .await?;
                self.watches[i] = Some(watch);
                list_tree(&self.client, pattern, &self.state).await
            }
            Mode::Oneshot => {
                let sink = Sink {
                    tree: i,
                    generation: self.generation,
                    tx: self.tx.clone(),
                };
                let (listing, levels) =
                    oneshot::list_tree(&self.client, pattern, &sink, &self.state).await?;
                self.levels[i] = levels;
                Ok(listing)
            }
        }
    }
}
