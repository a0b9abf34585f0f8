//! Session lifecycle of one cluster: connect, watch and list every tree,
//! follow events, resync after a reconnect, rebuild after expiry.
//!
//! `zookeeper-client` 0.11 does not re-register persistent watches after a
//! reconnect (its `resend_watches` never selects SetWatches2), so on every
//! `SyncConnected` that follows a disconnect each watch is dropped, placed
//! again and its tree re-listed; events during the outage are lost anyway and
//! the listing counts them once. `Expired`, `AuthFailed` and `Closed` are
//! final for a client: a new one is built with capped exponential backoff.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};
use zookeeper_client::{Client, MultiReadResult, SessionState as ZkState};

use super::connect::describe_sync_error;
use super::oneshot::{self, Sink};
use super::read::{Op, multi_read};
use super::watch::{
    Applied, LISTING_SLICE, MAX_EVENTS_PER_BATCH, TreeEvent, TreeWatch, apply_events, list_parents,
    list_part, read_outer_records, start_watch,
};
use crate::config::{ClusterConfig, WatchMode};
use crate::fourlw::parse::parse_members;
use crate::model::Now;
use crate::model::carry::TreePlan;
use crate::model::session::SessionState;
use crate::model::tree::{ChildNode, TreeId};
use crate::model::{DiscoveryStatus, Listed, SharedCluster, WatchPlan};
use crate::sources::discovery;

mod discovered;

/// How often `/zookeeper/config` is re-read for ensemble members.
const MEMBERS_REFRESH: Duration = Duration::from_secs(30);
/// How soon a tree whose listing failed (no rights, connection loss) is retried.
const SYNC_RETRY: Duration = Duration::from_secs(5);

/// What to say about election node `node` of a sequential tree that is
/// itself ephemeral.
fn ephemeral_election_node(node: &str) -> String {
    format!(
        "{node} is itself an ephemeral node: its owner is the master and it has no \
         candidates; set style = \"node\" for this election (as for Kafka's /controller)"
    )
}

/// Why a tree could not be synced: ZooKeeper trouble, or a misfit said in
/// operator terms.
enum SyncError {
    Zk(zookeeper_client::Error),
    Misfit(String),
}

impl From<zookeeper_client::Error> for SyncError {
    fn from(e: zookeeper_client::Error) -> Self {
        Self::Zk(e)
    }
}

/// Why a client's life ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Expired,
    AuthFailed,
    Closed,
    Shutdown,
}

/// Logs once per agent life that a guard declined to watch something.
fn report_dropped(cfg: &ClusterConfig) {
    warn!(
        cluster = %cfg.name,
        max_tracked_elections = cfg.limits.max_tracked_elections,
        max_groups = cfg.limits.max_groups,
        max_locks = cfg.limits.max_locks,
        "more elections, groups or locks than the memory guards allow; the rest are not watched at all \
         (see zookeeper_exporter_series_dropped_total; raise max_tracked_elections / max_groups / max_locks, \
         or narrow the trees' globs)"
    );
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

/// What the session keeps for one watched tree. `plan` is read once: a
/// tree's id stands for its configuration, so what the plan says cannot
/// change while the id is watched.
#[derive(Debug)]
struct Watched {
    plan: WatchPlan,
    /// Generation of the tree's live watch; events of others are stale.
    current: Option<u64>,
    /// Persistent mode: the forwarders of the tree's watches.
    watch: Option<TreeWatch>,
    /// One-shot mode: intermediate nodes carrying a child watch.
    levels: HashSet<String>,
}

impl Watched {
    fn new(plan: WatchPlan) -> Self {
        Self {
            plan,
            current: None,
            watch: None,
            levels: HashSet::new(),
        }
    }

    /// Drops the watch: its events are stale from now on.
    fn unwatch(&mut self) {
        self.watch = None;
        self.current = None;
    }
}

/// One client's life.
pub(super) struct Session<'a> {
    cfg: &'a ClusterConfig,
    client: Client,
    state: SharedCluster,
    /// The trees watched now, by id; the models hold the same set once a
    /// change of it ([`Self::sync_all`], [`Self::adopt`]) is applied.
    watched: HashMap<TreeId, Watched>,
    mode: Mode,
    generation: u64,
    discovery_truncation_logged: bool,
    /// A walk whose finds wait for `discovery.settle` to prove lasting,
    /// with its status and when the confirmation is due.
    sighting: Option<(discovery::Walk, DiscoveryStatus, tokio::time::Instant)>,
    tx: mpsc::UnboundedSender<TreeEvent>,
    rx: mpsc::UnboundedReceiver<TreeEvent>,
}

impl<'a> Session<'a> {
    pub(super) fn new(cfg: &'a ClusterConfig, client: Client, state: SharedCluster) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            cfg,
            mode: match cfg.watch_mode {
                WatchMode::Oneshot => Mode::Oneshot,
                WatchMode::Auto | WatchMode::Persistent => Mode::Persistent,
            },
            watched: HashMap::new(),
            discovery_truncation_logged: false,
            sighting: None,
            client,
            state,
            generation: 0,
            tx,
            rx,
        }
    }

    pub(super) async fn run(
        mut self,
        shutdown: &mut watch::Receiver<bool>,
        plans: &mut mpsc::UnboundedReceiver<TreePlan>,
    ) -> End {
        let mut states = self.client.state_watcher();
        let (id, timeout) = (self.client.session_id().0, self.client.session_timeout());
        self.state.session_started(id, timeout, Now::current());
        self.sync_all().await;
        self.refresh_members().await;
        let mut members = tokio::time::interval(MEMBERS_REFRESH);
        members.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        members.reset();
        // The first walk runs right away, then every `interval`.
        let mut discover = tokio::time::interval(self.cfg.discovery.interval);
        discover.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut latency_read = tokio::time::interval(self.cfg.latency_read_interval);
        latency_read.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = tokio::time::interval(SYNC_RETRY);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        retry.reset();
        let mut connected = true;
        loop {
            tokio::select! {
                _ = shutdown.changed() => {
                    self.state.session_ended(SessionState::Closed, None);
                    return End::Shutdown;
                }
                s = states.changed() => {
                    if let Some(end) = self.on_state(s, &mut connected).await {
                        return end;
                    }
                }
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
                // A cheap read of `/` times the agent's own round trips.
                _ = latency_read.tick(), if connected => {
                    let started = Instant::now();
                    if self.client.check_stat("/").await.is_ok() {
                        self.state.request_observed("read", started.elapsed());
                    }
                }
                Some(plan) = plans.recv() => self.retree(plan, connected).await,
                _ = members.tick(), if connected => self.refresh_members().await,
                // No new walk while one's finds wait for their confirmation.
                _ = discover.tick(), if connected && self.cfg.discovery.enabled && self.sighting.is_none() => self.discover().await,
                _ = tokio::time::sleep_until(self.sighting.as_ref().map_or_else(tokio::time::Instant::now, |s| s.2)), if connected && self.sighting.is_some() => self.confirm().await,
                _ = retry.tick(), if connected => {
                    for id in self.state.unsynced_trees() {
                        self.sync_tree(id).await;
                    }
                }
            }
        }
    }

    /// The client's state changed; `Some` when this client's life ends.
    /// A reconnect re-places every watch and re-lists every tree (the
    /// client library does not re-register persistent watches).
    async fn on_state(&mut self, s: ZkState, connected: &mut bool) -> Option<End> {
        match s {
            ZkState::Disconnected => {
                *connected = false;
                warn!(cluster = %self.cfg.name, "disconnected from ZooKeeper; trees are stale until reconnect");
                let why = "session disconnected, reconnecting";
                self.state
                    .session_lost(SessionState::Disconnected, why, Now::current());
            }
            ZkState::SyncConnected | ZkState::ConnectedReadOnly => {
                let read_only = s == ZkState::ConnectedReadOnly;
                info!(cluster = %self.cfg.name, read_only, "reconnected to ZooKeeper; resyncing trees");
                self.state
                    .session_reconnected(read_only, !*connected, Now::current());
                *connected = true;
                self.sync_all().await;
                self.refresh_members().await;
            }
            ZkState::Expired => {
                let why = "session expired; building a new session";
                self.state
                    .session_lost(SessionState::Expired, why, Now::current());
                return Some(End::Expired);
            }
            ZkState::AuthFailed => {
                let why = Some("authentication failed".into());
                self.state.session_ended(SessionState::AuthFailed, why);
                return Some(End::AuthFailed);
            }
            ZkState::Closed => {
                let why = Some("session closed".into());
                self.state.session_ended(SessionState::Closed, why);
                return Some(End::Closed);
            }
        }
        None
    }

    async fn apply(&mut self, batch: Vec<TreeEvent>) {
        let current: Vec<TreeEvent> = batch
            .into_iter()
            .filter(|e| {
                self.watched
                    .get(&e.tree)
                    .is_some_and(|w| w.current == Some(e.generation))
            })
            .collect();
        if current.is_empty() {
            return;
        }
        let mut trees: Vec<TreeId> = current.iter().map(|e| e.tree).collect();
        trees.sort_unstable();
        trees.dedup();
        let result = match self.mode {
            Mode::Persistent => {
                let routes: HashMap<TreeId, WatchPlan> = trees
                    .iter()
                    .filter_map(|id| Some((*id, self.watched.get(id)?.plan.clone())))
                    .collect();
                apply_events(&self.client, &routes, current, &self.state).await
            }
            Mode::Oneshot => self
                .apply_oneshot(current)
                .await
                .map(|()| Applied::default()),
        };
        match result {
            Ok(applied) => {
                if applied.drops_to_report {
                    report_dropped(self.cfg);
                }
                for (id, node) in applied.misfits {
                    let message = ephemeral_election_node(&node);
                    if self.state.tree_failed(id, message.clone()) {
                        warn!(cluster = %self.cfg.name, tree = %node, "{message}");
                    }
                }
            }
            Err(e) => {
                // A read failed (connection loss mid-batch): the affected
                // trees are re-listed rather than guessed.
                debug!(cluster = %self.cfg.name, "reading changed nodes failed ({e}); resyncing");
                for id in trees {
                    self.sync_tree(id).await;
                }
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
            let Some(w) = self.watched.get_mut(&event.tree) else {
                continue;
            };
            oneshot::apply_event(
                &self.client,
                &w.plan.pattern,
                event,
                &sink,
                &mut w.levels,
                &self.state,
            )
            .await?;
        }
        Ok(())
    }

    /// A reload changed the configured trees: the models take the new set
    /// (unchanged trees keep theirs, and their watches), new trees are
    /// watched and listed, and the watches of trees gone are dropped.
    async fn retree(&mut self, plan: TreePlan, connected: bool) {
        self.state.retree(plan.configured);
        let now: HashSet<TreeId> = self.state.trees_watched().iter().map(|t| t.id).collect();
        self.watched.retain(|id, _| now.contains(id));
        if connected {
            for id in now {
                if !self.watched.contains_key(&id) {
                    self.sync_tree(id).await;
                }
            }
        }
    }

    /// Reads the members the ensemble publishes in `/zookeeper/config`
    /// (3.5+), so the four-letter-word poller sees a grown ensemble and the
    /// ghost check knows the ensemble's size. Servers without it (3.4)
    /// leave both unknown.
    async fn refresh_members(&self) {
        match self.client.get_config().await {
            Ok((data, _)) => {
                let all = parse_members(&String::from_utf8_lossy(&data));
                let size = all.len();
                // Only plain client ports are published: under TLS, poll `servers`.
                let addresses = if self.cfg.tls.is_some() {
                    Vec::new()
                } else {
                    all.into_iter().filter_map(|m| m.client_address).collect()
                };
                self.state
                    .ensemble_feed()
                    .members_published(addresses, Some(size));
            }
            Err(e) => {
                debug!(cluster = %self.cfg.name, "no /zookeeper/config ({e})");
                self.state
                    .ensemble_feed()
                    .members_published(Vec::new(), None);
            }
        }
    }

    /// Watches and lists every tree the models hold, in their order
    /// (configured, then discovered), dropping watches of trees gone.
    async fn sync_all(&mut self) {
        let ids: Vec<TreeId> = self.state.trees_watched().iter().map(|t| t.id).collect();
        self.watched.retain(|id, _| ids.contains(id));
        for id in ids {
            self.sync_tree(id).await;
        }
        // The listings' buffers are gone: give their pages back.
        crate::os::release_freed_memory();
    }

    /// Replaces the tree's watches and re-lists it (a tree no longer in
    /// the models is not watched at all).
    async fn sync_tree(&mut self, id: TreeId) {
        let Some(plan) = self.state.watch_plan(id) else {
            self.watched.remove(&id);
            return;
        };
        self.watched
            .entry(id)
            .or_insert_with(|| Watched::new(plan))
            .unwatch();
        self.generation += 1;
        let mut result = self.list(id).await;
        if self.mode == Mode::Persistent
            && self.cfg.watch_mode == WatchMode::Auto
            && matches!(&result, Err(SyncError::Zk(e)) if is_unsupported(e))
        {
            warn!(
                cluster = %self.cfg.name,
                "the server does not support persistent watches or multi-reads (ZooKeeper < 3.6); using one-shot watches"
            );
            self.mode = Mode::Oneshot;
            result = self.list(id).await;
        }
        let Some(w) = self.watched.get_mut(&id) else {
            return;
        };
        let pattern = w.plan.pattern.clone();
        match result {
            Ok(listed) => {
                if listed.recovered {
                    info!(cluster = %self.cfg.name, tree = %pattern.as_str(), "tree synced again");
                }
                if listed.drops_to_report {
                    report_dropped(self.cfg);
                }
                w.current = Some(self.generation);
            }
            Err(e) => {
                let message = match e {
                    SyncError::Misfit(m) => m,
                    SyncError::Zk(e) => describe_sync_error(self.cfg, &pattern, &e),
                };
                w.watch = None;
                if self.state.tree_failed(id, message.clone()) {
                    warn!(cluster = %self.cfg.name, tree = %pattern.as_str(), "{message}; retrying every {SYNC_RETRY:?}");
                }
            }
        }
    }

    /// A sequential election whose node is itself ephemeral (an election
    /// node election configured the wrong way) would be masterless forever:
    /// the elections a listing found without children are checked.
    async fn ephemeral_election_node(
        &self,
        plan: &WatchPlan,
        listing: &[(String, Vec<ChildNode>)],
    ) -> Option<String> {
        if !plan.sequential {
            return None;
        }
        let empty: Vec<String> = listing
            .iter()
            .filter(|(_, children)| children.is_empty())
            .map(|(path, _)| path.clone())
            .collect();
        if empty.is_empty() {
            return None;
        }
        let timed = |took| self.state.request_observed("multi_read", took);
        let stats = multi_read(&self.client, &empty, Op::Data, &timed)
            .await
            .ok()?;
        empty.into_iter().zip(stats).find_map(|(path, r)| match r {
            MultiReadResult::Data { stat, .. } if stat.ephemeral_owner != 0 => Some(path),
            _ => None,
        })
    }

    /// Places the watches of tree `id`, lists it and applies the listing,
    /// in the current mode. With persistent watches the listing arrives in
    /// slices of [`LISTING_SLICE`] parents, each applied before the next
    /// is read: memory stays bounded whatever the tree's size.
    async fn list(&mut self, id: TreeId) -> Result<Listed, SyncError> {
        let Some(plan) = self.watched.get(&id).map(|w| w.plan.clone()) else {
            return Ok(Listed::default());
        };
        match self.mode {
            Mode::Persistent => {
                let tx = self.tx.clone();
                let watch = start_watch(&self.client, id, &plan.scope, self.generation, tx).await?;
                if let Some(w) = self.watched.get_mut(&id) {
                    w.watch = Some(watch);
                }
                let parents = list_parents(&self.client, &plan.pattern, &self.state).await?;
                let mut listed: HashSet<String> = HashSet::with_capacity(parents.len());
                for slice in parents.chunks(LISTING_SLICE) {
                    let alive = plan.alive.as_deref();
                    let part = list_part(&self.client, slice, alive, &self.state).await?;
                    if let Some(node) = self.ephemeral_election_node(&plan, &part).await {
                        return Err(SyncError::Misfit(ephemeral_election_node(&node)));
                    }
                    listed.extend(part.iter().map(|(p, _)| p.clone()));
                    self.state.tree_listing_part(id, part, Now::current());
                }
                let records = match &plan.outer_record {
                    Some(r) => {
                        // A single election's record is read even before
                        // its election node exists.
                        let elections = match plan.pattern.is_single() {
                            true => vec![plan.pattern.as_str().to_owned()],
                            false => listed.iter().cloned().collect(),
                        };
                        read_outer_records(&self.client, r, elections, &self.state).await?
                    }
                    None => Vec::new(),
                };
                let done =
                    self.state
                        .tree_listing_done(id, &|p| listed.contains(p), Now::current());
                if !records.is_empty() {
                    let changes = records.into_iter().map(|r| (id, r)).collect();
                    self.state.trees_changed(changes, Now::current());
                }
                Ok(done)
            }
            Mode::Oneshot if plan.alive.is_some() => Err(SyncError::Misfit(format!(
                "{}: members marked alive by a child are followed only with persistent watches (ZooKeeper >= 3.6)",
                plan.pattern.as_str()
            ))),
            Mode::Oneshot => {
                let sink = Sink {
                    tree: id,
                    generation: self.generation,
                    tx: self.tx.clone(),
                };
                let (listing, levels) =
                    oneshot::list_tree(&self.client, &plan.pattern, &sink, &self.state).await?;
                if let Some(w) = self.watched.get_mut(&id) {
                    w.levels = levels;
                }
                // A record read once and never again would soon disagree
                // with a master that moved: with one-shot watches it is not
                // read at all, so its series stays absent.
                if plan.outer_record.is_some() {
                    warn!(
                        cluster = %self.cfg.name,
                        tree = %plan.pattern.as_str(),
                        "the election record is only followed with persistent watches (ZooKeeper >= 3.6); zookeeper_election_record_agrees stays absent, and owner-record identities unnamed"
                    );
                }
                if let Some(node) = self.ephemeral_election_node(&plan, &listing).await {
                    return Err(SyncError::Misfit(ephemeral_election_node(&node)));
                }
                Ok(self.state.tree_listed(id, listing, Now::current()))
            }
        }
    }
}
