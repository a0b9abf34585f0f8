//! The face of one cluster's models shared between its sources (writers)
//! and the outputs (readers), in the manner of mini-redis's `Db`: sources
//! say what happened, the lock and its poison recovery live here, and every
//! rule stays in [`ClusterState`] (and the files that add to it: the ghost
//! flags in `ghost_flags.rs`, the survey in `attention.rs`, the alert
//! conditions in `alerting.rs`). Each verb here takes the lock once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::alerting::{Reading, ReadingCache};
use super::cluster::{ClusterState, DiscoveryFeed, EnsembleFeed, ProbeFeed, TreeChange};
use super::content::ContentKind;
use super::ghost::Round;
use super::now::Now;
use super::session::SessionState;
use super::timeline::Event;
use super::tree::{ChildNode, Tree, TreeId, TreePattern, TreeSource, WatchScope};

/// What [`SharedCluster::tick`] found.
#[derive(Debug)]
pub struct Ticked {
    pub name: String,
    /// The entries not yet taken, in order.
    pub new: Vec<Event>,
    /// When time alone makes the next entry, if it can.
    pub next: Option<std::time::Instant>,
}

/// A cluster's models behind one lock. Writers hold it only to apply data
/// already read; readers (a scrape, an API call) hold it while they render.
#[derive(Debug, Clone)]
pub struct SharedCluster(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    state: RwLock<ClusterState>,
    /// Counts the writes: the tasks that act on changes (the alert pusher,
    /// the timeline log) wait on it instead of polling the models.
    written: watch::Sender<u64>,
}

/// Write access; tells whoever waits on [`SharedCluster::changes`] when
/// it ends.
struct Writing<'a> {
    guard: RwLockWriteGuard<'a, ClusterState>,
    written: &'a watch::Sender<u64>,
}

impl std::ops::Deref for Writing<'_> {
    type Target = ClusterState;
    fn deref(&self) -> &ClusterState {
        &self.guard
    }
}

impl std::ops::DerefMut for Writing<'_> {
    fn deref_mut(&mut self) -> &mut ClusterState {
        &mut self.guard
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.written.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl SharedCluster {
    pub fn new(state: ClusterState) -> Self {
        Self(Arc::new(Shared {
            state: RwLock::new(state),
            written: watch::channel(0).0,
        }))
    }

    /// Sees every write from now on (`changed()`): a source applied what
    /// it read, so what the models show may have changed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.0.written.subscribe()
    }

    /// Replaces the models with what `rebuild` makes of them, under one
    /// lock: readers see the old models or the new, never none (a reload
    /// rebuilding the cluster).
    pub fn rebuild(&self, rebuild: impl FnOnce(ClusterState) -> ClusterState) {
        let mut g = self.write();
        let placeholder = ClusterState::new(g.name().to_owned(), Vec::new(), false);
        let old = std::mem::replace(&mut *g, placeholder);
        *g = rebuild(old);
    }

    /// A reload's new set of configured trees (see
    /// [`ClusterState::retree`]).
    pub fn retree(&self, configured: Vec<Tree>) {
        self.write().retree(configured);
    }

    /// Tells this cluster's models from another cluster's while both exist
    /// (a reload rebuilds a cluster in place: its ensemble's generations
    /// then count on, see [`crate::model::ensemble::Ensemble::follow`]).
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// What `f` makes of the models, under one read lock: how the API,
    /// the status page and `/ready` read a cluster (one consistent view,
    /// the guard never escapes, nothing is held across an await).
    pub fn view<R>(&self, f: impl FnOnce(&ClusterState) -> R) -> R {
        f(&self.read())
    }

    /// Read access held for a whole scrape: `/metrics` encodes every
    /// family from one guard per cluster. A writer that panicked leaves its
    /// last consistent state, which is still worth serving.
    pub fn read(&self) -> RwLockReadGuard<'_, ClusterState> {
        self.0.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// What `f` makes of the models if no writer holds them now, else
    /// `None` at once: for a caller that must not wait (a task deciding
    /// whether a render may run on the runtime's own thread).
    pub fn try_view<R>(&self, f: impl FnOnce(&ClusterState) -> R) -> Option<R> {
        match self.0.state.try_read() {
            Ok(g) => Some(f(&g)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(f(&p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    fn write(&self) -> Writing<'_> {
        Writing {
            guard: self.write_quietly(),
            written: &self.0.written,
        }
    }

    /// Write access that tells no one: for the timeline task's own ticks,
    /// which would otherwise wake it again.
    fn write_quietly(&self) -> RwLockWriteGuard<'_, ClusterState> {
        self.0.state.write().unwrap_or_else(|p| p.into_inner())
    }

    // --- what the outputs read ---

    /// What the alert pusher reads at `now`: the cluster's name, its alert
    /// conditions (flapping within `flap_window`; the trees whose part in
    /// `cache` still holds are not walked) and whether its session is
    /// connected, under one lock.
    pub fn alert_reading(
        &self,
        now: std::time::Instant,
        flap_window: std::time::Duration,
        cache: &mut ReadingCache,
    ) -> (String, Reading, bool) {
        let g = self.read();
        (
            g.name().to_owned(),
            g.alert_reading(now, flap_window, cache),
            g.session().is_connected(),
        )
    }

    /// The cluster's name.
    pub fn name(&self) -> String {
        self.read().name().to_owned()
    }

    // --- the agent's own session ---

    pub fn session_started(&self, id: i64, timeout: Duration, now: Now) {
        self.write().session_started(id, timeout, now.wall);
    }

    pub fn session_reconnected(&self, read_only: bool, after_disconnect: bool, now: Now) {
        self.write()
            .session_reconnected(read_only, after_disconnect, now.wall);
    }

    pub fn session_lost(&self, state: SessionState, error: impl Into<String>, now: Now) {
        self.write().session_lost(state, error, now.wall);
    }

    pub fn connect_failed(&self, auth_failed: bool, message: String) {
        self.write().connect_failed(auth_failed, message);
    }

    pub fn session_ended(&self, state: SessionState, error: Option<String>) {
        self.write().session_ended(state, error);
    }

    /// The Kerberos check's handle on the cluster's credentials: it
    /// writes them without this lock.
    pub fn kerberos_feed(&self) -> Option<super::kerberos::KerberosFeed> {
        self.read().kerberos().cloned()
    }

    /// One request round trip of the agent's session (`op`: read,
    /// multi_read, write).
    pub fn request_observed(&self, op: &'static str, took: Duration) {
        self.write().request_observed(op, took);
    }

    // --- trees ---

    /// Trees whose last listing failed or that went stale.
    pub fn unsynced_trees(&self) -> Vec<TreeId> {
        let g = self.read();
        g.trees()
            .iter()
            .filter(|t| !t.synced())
            .map(Tree::id)
            .collect()
    }

    /// A full listing of tree `id` arrived: applies it, and says whether
    /// the tree had been failing and whether the guard dropped series
    /// nobody was told about yet.
    pub fn tree_listed(
        &self,
        id: TreeId,
        listing: Vec<(String, Vec<ChildNode>)>,
        now: Now,
    ) -> Listed {
        let mut g = self.write();
        let recovered = g.tree(id).is_some_and(|t| t.sync_error().is_some());
        g.apply_listing(id, listing, now);
        Listed {
            recovered,
            drops_to_report: g.drops_to_report(),
        }
    }

    /// Part of a full listing of tree `id` arrived (large trees are listed
    /// in slices); [`tree_listing_done`](Self::tree_listing_done) ends it.
    pub fn tree_listing_part(&self, id: TreeId, part: Vec<(String, Vec<ChildNode>)>, now: Now) {
        self.write().apply_listing_part(id, part, now);
    }

    /// The listing of tree `id` given in parts is complete: parents for
    /// which `listed` is false are gone. Says what
    /// [`tree_listed`](Self::tree_listed) says.
    pub fn tree_listing_done(&self, id: TreeId, listed: &dyn Fn(&str) -> bool, now: Now) -> Listed {
        let mut g = self.write();
        let recovered = g.tree(id).is_some_and(|t| t.sync_error().is_some());
        g.finish_listing(id, listed, now);
        Listed {
            recovered,
            drops_to_report: g.drops_to_report(),
        }
    }

    /// Watching or listing tree `id` failed with `message`; true when the
    /// message is new (log it), false when it repeats or the tree is gone.
    pub fn tree_failed(&self, id: TreeId, message: String) -> bool {
        self.write().tree_failed(id, message)
    }

    /// Changes of one or more trees, applied in order under one lock.
    /// Returns whether the guard dropped series nobody was told about yet.
    pub fn trees_changed(&self, changes: Vec<(TreeId, TreeChange)>, now: Now) -> bool {
        self.events_applied(&[], changes, now)
    }

    /// [`Self::trees_changed`] for what a batch of watch events changed,
    /// with the number of events each tree's watches delivered in it.
    pub fn events_applied(
        &self,
        delivered: &[(TreeId, u64)],
        changes: Vec<(TreeId, TreeChange)>,
        now: Now,
    ) -> bool {
        let mut g = self.write();
        for (id, n) in delivered {
            g.events_delivered(*id, *n);
        }
        for (id, change) in changes {
            g.apply(id, change, now);
        }
        g.drops_to_report()
    }

    /// What the session needs to watch tree `id` and route its events, or
    /// `None` when the tree is no longer watched.
    pub fn watch_plan(&self, id: TreeId) -> Option<WatchPlan> {
        let g = self.read();
        let tree = g.tree(id)?;
        Some(WatchPlan {
            pattern: tree.pattern().clone(),
            scope: tree.watch_scope(),
            sequential: tree
                .as_elections()
                .is_some_and(|e| e.spec().style.is_sequential()),
            outer_record: tree.outer_record(),
            alive: tree.as_groups().and_then(|g| g.spec().alive.clone()),
        })
    }

    /// Whether tree `id` tracks `path` as an election or group.
    pub fn has_parent(&self, id: TreeId, path: &str) -> bool {
        self.read().tree(id).is_some_and(|t| t.has_parent(path))
    }

    /// Names of the known children of `parent` in tree `id`.
    pub fn child_names(&self, id: TreeId, parent: &str) -> BTreeSet<String> {
        self.read()
            .tree(id)
            .map(|t| t.child_names(parent))
            .unwrap_or_default()
    }

    /// What a discovery walk changed: discovered trees in `retired` are
    /// dropped with their series, `added` ones are appended. Returns the
    /// ids of the trees dropped (their watches go; no other tree's does).
    pub fn trees_discovered(&self, retired: &[TreePattern], added: Vec<Tree>) -> Vec<TreeId> {
        self.write().trees_discovered(retired, added)
    }

    /// Discovery's handle on its walks' outcome: the session publishes it
    /// without this lock.
    pub fn discovery_feed(&self) -> Option<DiscoveryFeed> {
        self.read().discovery().cloned()
    }

    /// Every tree's id, glob, kind and source, in tree order.
    pub fn trees_watched(&self) -> Vec<WatchedTree> {
        self.read()
            .trees()
            .iter()
            .map(|t| WatchedTree {
                id: t.id(),
                pattern: t.pattern().clone(),
                kind: t.content_kind(),
                source: t.source(),
            })
            .collect()
    }

    // --- the ensemble ---

    /// The handle on the ensemble's readings, taken once by each source
    /// that writes them (the poller, the ghost check, the session): they
    /// write without this lock.
    pub fn ensemble_feed(&self) -> EnsembleFeed {
        self.read().ensemble().clone()
    }

    /// A ghost-check round: the session tracker judges what it shows
    /// about `owners` (the owners when the round began). `watchers`, when
    /// `wchp` was asked, are the sessions watching each path.
    pub fn ghost_round(
        &self,
        round: Round<'_>,
        owners: Vec<i64>,
        watchers: Option<BTreeMap<String, BTreeSet<i64>>>,
    ) {
        self.write().ghost_round(round, owners, watchers);
    }

    /// The timeline entries numbered after what `after` says of the
    /// cluster's name, the time-driven ones due at `now` first (see
    /// [`ClusterState::tick`]), with the name and when time alone makes
    /// the next. The write lock is taken only when an entry is due: at
    /// rest the timeline task reads.
    pub fn tick(&self, now: Now, after: impl FnOnce(&str) -> u64) -> Ticked {
        let due = |g: &ClusterState, from: u64| {
            g.timeline().last_seq() > from || g.next_tick().is_some_and(|t| t <= now.mono)
        };
        let from = {
            let g = self.read();
            let from = after(g.name());
            if !due(&g, from) {
                return Ticked {
                    name: g.name().to_owned(),
                    new: Vec::new(),
                    next: g.next_tick(),
                };
            }
            from
        };
        let mut g = self.write_quietly();
        g.tick(now);
        Ticked {
            name: g.name().to_owned(),
            new: g.timeline().after(from).into_iter().cloned().collect(),
            next: g.next_tick(),
        }
    }

    /// A lease query of tree `id`, sent at `now`, gave `reading`.
    pub fn lease_succeeded(
        &self,
        id: TreeId,
        reading: crate::model::lease::LeaseReading,
        now: Now,
    ) {
        self.write().lease_succeeded(id, reading, now);
    }

    /// A lease query of tree `id` failed; true when the failure is new (log it).
    pub fn lease_failed(
        &self,
        id: TreeId,
        why: crate::model::lease::Failure,
        message: String,
        now: Now,
    ) -> bool {
        self.write().lease_failed(id, why, message, now)
    }

    /// The distinct owner sessions of every tree's ephemeral nodes (see
    /// [`ClusterState::distinct_owners`]).
    pub fn distinct_owners(&self) -> Vec<i64> {
        self.read().distinct_owners()
    }

    /// Whether the next ghost-check round needs `dump` (see
    /// [`SessionTracker::wants_expiries`](super::ghost::SessionTracker::wants_expiries)).
    pub fn wants_expiries(&self) -> bool {
        self.read()
            .ghost()
            .as_ref()
            .is_some_and(|g| g.wants_expiries())
    }

    /// The shortest session timeout among `owners`, as `cons` reported.
    pub fn shortest_timeout_of(&self, owners: &[i64]) -> Option<Duration> {
        self.read()
            .ghost()
            .as_ref()?
            .shortest_timeout(owners.iter().copied())
    }

    // --- the probe ---

    /// The probe's handle on its figures, taken once when it starts: it
    /// writes them without this lock.
    pub fn probe_feed(&self) -> Option<ProbeFeed> {
        self.read().probe().cloned()
    }
}

/// What the session needs of one tree to watch it and route its events.
#[derive(Debug, Clone)]
pub struct WatchPlan {
    pub pattern: TreePattern,
    /// Which watches follow it (see [`Tree::watch_scope`]).
    pub scope: WatchScope,
    /// It holds sequential elections, whose election nodes must be
    /// persistent (their children are the candidates).
    pub sequential: bool,
    /// Where its elections keep their records, outside the tree.
    pub outer_record: Option<super::outer_record::OuterRecord>,
    /// A group whose members are live while they hold a child of this name.
    pub alive: Option<String>,
}

/// One tree as the session and discovery see it.
#[derive(Debug, Clone)]
pub struct WatchedTree {
    pub id: TreeId,
    pub pattern: TreePattern,
    pub kind: ContentKind,
    pub source: TreeSource,
}

/// What applying a listing showed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Listed {
    /// The tree had been failing and is synced again.
    pub recovered: bool,
    /// The guard dropped series nobody was told about yet.
    pub drops_to_report: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_view_does_not_wait_for_a_writer() {
        let c = SharedCluster::new(ClusterState::new("c".into(), vec![], true));
        assert_eq!(c.try_view(|c| c.name().to_owned()), Some("c".to_owned()));
        let held = c.write();
        assert_eq!(c.try_view(|_| ()), None);
        drop(held);
        assert_eq!(c.try_view(|_| ()), Some(()));
    }
}
