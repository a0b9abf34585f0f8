//! Everything known about one configured cluster: its trees and the
//! changes its sources report within the cardinality guard, its timeline,
//! the agent's session and the ghost check's tracker. The parts another
//! source alone makes (the ensemble's readings, the probe's figures, the
//! Kerberos ticket, discovery's outcome) are feeds that source writes
//! without this state's lock; the state only hands out their handles.

use std::collections::BTreeMap;
use std::time::Duration;

use super::content::ContentKind;
use super::{carry, ghost, session, tree};

mod discovery;
mod ensemble;
mod ghost_flags;
mod owners;
mod probe;
mod session_events;
mod time;
mod view;
pub use discovery::{DiscoveryFeed, DiscoveryStatus};
pub use ensemble::{EnsembleFeed, EnsembleReadings};
pub use probe::{ProbeFeed, ProbeStats};

/// Everything known about one configured cluster.
#[derive(Debug)]
pub struct ClusterState {
    name: String,
    /// The timeline of switches, masterless periods and session losses.
    timeline: super::timeline::Timeline,
    session: session::Session,
    trees: Vec<tree::Tree>,
    /// What the members said and who they are, which the poller, the
    /// ghost check and the session publish without this state's lock.
    ensemble: EnsembleFeed,
    /// Cardinality guard: most elections and groups exported.
    limits: Limits,
    /// Elections and groups declined by the guard, by kind.
    dropped: BTreeMap<ContentKind, u64>,
    /// Set by the source once it has logged that the guard dropped series.
    dropped_reported: bool,
    /// Outcome of the last discovery walk, which the session publishes
    /// without this state's lock; `None` when discovery is off.
    discovery: Option<DiscoveryFeed>,
    /// Liveness of the sessions owning watched nodes; `None` until the
    /// ghost check's first round (or when it is off).
    ghost: Option<ghost::SessionTracker>,
    /// Sessions other than the agent's watching each election node itself
    /// (from `wchp`); `None` unless `ghost_check.watches` is on.
    parent_watchers: Option<BTreeMap<String, usize>>,
    /// Failover probe figures; `None` unless `[clusters.probe]` is set.
    /// The probe task writes them through its own handle, without this
    /// state's lock.
    probe: Option<ProbeFeed>,
    /// The agent's Kerberos ticket; `None` unless the cluster uses GSSAPI.
    kerberos: Option<super::kerberos::KerberosFeed>,
    /// Which elections the latest scrape gave series past the cap: how the
    /// lookup answers "has it series" without surveying every election
    /// again (see [`ClusterState::has_series`]).
    export: super::export::ExportRecord,
    /// The survey of its elections as the last scrape left it, brought up
    /// to date by the next (see [`super::survey`]).
    survey: super::survey::SurveyCache,
}

/// What a cluster's configuration decides of its models (see
/// [`ClusterState::set_up`]).
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub limits: Limits,
    /// Entries the timeline keeps.
    pub timeline_size: usize,
    pub discovery: bool,
    pub probe: bool,
    pub ghost_check: bool,
    /// The cluster authenticates with Kerberos (GSSAPI).
    pub kerberos: bool,
}

/// The default guard and timeline, nothing optional running.
impl Default for Setup {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            timeline_size: super::timeline::DEFAULT_CAP,
            discovery: false,
            probe: false,
            ghost_check: false,
            kerberos: false,
        }
    }
}

/// Bounds of one cluster. Every election is watched up to a memory guard
/// sized for millions; per-election series are exported for at most
/// `max_elections` of them, those needing attention first (see
/// [`attention`](super::attention)). Groups and locks past their bounds are
/// neither tracked nor exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most elections with per-election series.
    pub max_elections: usize,
    /// Most elections watched: the memory guard (about 0.6 KiB each with
    /// three candidates).
    pub max_tracked_elections: usize,
    /// How long an election that left a non-ok state keeps its series
    /// ahead of calm ones past the cap.
    pub attention_window: Duration,
    pub max_groups: usize,
    pub max_locks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_elections: 10_000,
            max_tracked_elections: 2_000_000,
            attention_window: Duration::from_secs(15 * 60),
            max_groups: 10_000,
            max_locks: 10_000,
        }
    }
}

/// A change a source saw in one tree: the model decides what it means.
#[derive(Debug, Clone)]
pub enum TreeChange {
    /// A node matching the tree's glob appeared (or was found).
    ParentCreated(String),
    ParentDeleted(String),
    /// A child of a matching node was created or its data changed.
    ChildUpserted {
        parent: String,
        child: tree::ChildNode,
    },
    ChildDeleted {
        parent: String,
        name: String,
    },
    /// The record of a sequential election (outside the tree) was read:
    /// its data and owner session (`None`: it does not exist).
    OuterRecord {
        election: String,
        read: Option<(Vec<u8>, i64)>,
    },
}

impl ClusterState {
    /// State of a cluster before anything is known.
    pub fn new(name: String, trees: Vec<tree::Tree>, four_letter_words: bool) -> Self {
        Self {
            name,
            session: session::Session::default(),
            trees,
            ensemble: EnsembleFeed::new(four_letter_words),
            limits: Limits::default(),
            dropped: BTreeMap::new(),
            dropped_reported: false,
            discovery: None,
            ghost: None,
            timeline: Default::default(),
            parent_watchers: None,
            probe: None,
            kerberos: None,
            export: Default::default(),
            survey: Default::default(),
        }
    }

    /// The cluster as its configuration sets it up: its guard, how long a
    /// timeline it keeps, and which optional parts run. Those that run
    /// start known-empty, so that what they have not judged yet is told
    /// apart from what they never judge.
    pub fn set_up(mut self, setup: Setup) -> Self {
        self.limits = setup.limits;
        self.timeline = super::timeline::Timeline::new(setup.timeline_size);
        self.discovery = setup.discovery.then(Default::default);
        self.probe = setup.probe.then(Default::default);
        self.ghost = setup.ghost_check.then(Default::default);
        self.kerberos = setup.kerberos.then(Default::default);
        self
    }

    /// After a reload rebuilt this cluster (a new session): takes over from
    /// `old` what [`carry::trees`] keeps, the timeline and the session's
    /// counters. What did not change keeps its counters and history.
    pub fn adopt(&mut self, old: ClusterState, keep_found: bool) {
        let configured = std::mem::take(&mut self.trees);
        self.trees = carry::trees(old.trees, configured, keep_found, carry::Session::New);
        self.timeline = old.timeline;
        self.session = old.session;
        if self.kerberos.is_some() {
            self.kerberos = old.kerberos.or(self.kerberos.take());
        }
        self.ensemble.follow(&old.ensemble);
    }

    /// A reload changed only the cluster's trees: the session stays and
    /// these become its trees (see [`carry::trees`]); the session then
    /// watches and lists the new ones and drops the watches of those gone.
    pub fn retree(&mut self, configured: Vec<tree::Tree>) {
        let old = std::mem::take(&mut self.trees);
        self.trees = carry::trees(old, configured, true, carry::Session::Stays);
    }

    /// The tree `id` names, if it is still watched (a change can arrive
    /// for a tree a reload or discovery retired meanwhile: it is dropped).
    pub fn tree(&self, id: tree::TreeId) -> Option<&tree::Tree> {
        self.trees.iter().find(|t| t.id() == id)
    }

    /// Trees are few (those configured and discovery's finds), so a scan
    /// finds one faster than an index would be kept in step.
    fn tree_mut(&mut self, id: tree::TreeId) -> Option<&mut tree::Tree> {
        self.trees.iter_mut().find(|t| t.id() == id)
    }

    /// What a discovery walk changed: discovered trees in `retired` are
    /// dropped with their series, `added` ones are appended. Returns the
    /// ids dropped.
    pub fn trees_discovered(
        &mut self,
        retired: &[tree::TreePattern],
        added: Vec<tree::Tree>,
    ) -> Vec<tree::TreeId> {
        let goes = |t: &tree::Tree| {
            t.source() == tree::TreeSource::Discovered && retired.contains(t.pattern())
        };
        let gone = self
            .trees
            .iter()
            .filter(|t| goes(t))
            .map(|t| t.id())
            .collect();
        self.trees.retain(|t| !goes(t));
        self.trees.extend(added);
        gone
    }

    /// Parents tree `id` may still add: its kind's limit minus what all
    /// trees of that kind hold.
    fn room(&self, kind: ContentKind) -> usize {
        let limit = match kind {
            ContentKind::Election => self.limits.max_tracked_elections,
            ContentKind::Group => self.limits.max_groups,
            ContentKind::Lock => self.limits.max_locks,
        };
        let used: usize = self
            .trees
            .iter()
            .filter(|t| t.content_kind() == kind)
            .map(tree::Tree::parent_count)
            .sum();
        limit.saturating_sub(used)
    }

    fn drop_parents(&mut self, kind: ContentKind, n: usize) {
        if n > 0 {
            *self.dropped.entry(kind).or_insert(0) += n as u64;
        }
    }

    /// Applies a full listing of tree `id` within the cardinality guard:
    /// parents already tracked stay, new ones are admitted in path order
    /// while there is room, the rest are counted as dropped.
    pub fn apply_listing(
        &mut self,
        id: tree::TreeId,
        listing: Vec<(String, Vec<tree::ChildNode>)>,
        now: crate::model::Now,
    ) {
        let listed: std::collections::HashSet<String> =
            listing.iter().map(|(p, _)| p.clone()).collect();
        self.apply_listing_part(id, listing, now);
        self.finish_listing(id, &|p| listed.contains(p), now);
    }

    /// Applies part of a full listing of tree `id` within the guard (see
    /// [`apply_listing`](Self::apply_listing));
    /// [`finish_listing`](Self::finish_listing) ends it.
    pub fn apply_listing_part(
        &mut self,
        id: tree::TreeId,
        mut part: Vec<(String, Vec<tree::ChildNode>)>,
        now: crate::model::Now,
    ) {
        let Some(tree) = self.tree(id) else {
            return;
        };
        let kind = tree.content_kind();
        let known = part.iter().filter(|(p, _)| tree.has_parent(p)).count();
        let budget = self.room(kind) + known;
        if part.len() > budget {
            part.sort_by_key(|(path, _)| !tree.has_parent(path));
            let dropped = part.len() - budget;
            part.truncate(budget);
            self.drop_parents(kind, dropped);
        }
        if let Some(tree) = self.tree_mut(id) {
            tree.apply_listing_part(part, now);
        }
        self.take_events(now);
    }

    /// The listing of tree `id` given in parts is complete: parents for
    /// which `listed` is false are gone.
    pub fn finish_listing(
        &mut self,
        id: tree::TreeId,
        listed: &dyn Fn(&str) -> bool,
        now: crate::model::Now,
    ) {
        if let Some(tree) = self.tree_mut(id) {
            tree.finish_listing(listed, now);
        }
    }

    /// Moves the trees' new timeline entries into the cluster's log. A
    /// deleted master whose session the ghost check had seen disconnected
    /// or silent went by session expiry.
    pub(super) fn take_events(&mut self, now: crate::model::Now) {
        use super::timeline::{Cause, What};
        for i in 0..self.trees.len() {
            for (election, mut what) in self.trees[i].take_events() {
                let owner = match &what {
                    What::Switch { from: Some(m), .. } => m.owner,
                    What::MasterlessStarted { last, .. } => last.owner,
                    _ => 0,
                };
                let ghost = self.ghost.as_ref().is_some_and(|t| {
                    owner != 0
                        && (t.liveness(owner).is_some_and(|l| l.is_ghost())
                            || t.ghost_seen(owner).is_some())
                });
                if ghost {
                    match &mut what {
                        What::Switch { cause: Some(c), .. }
                        | What::MasterlessStarted { cause: c, .. }
                            if *c == Cause::NodeDeleted =>
                        {
                            *c = Cause::SessionExpired
                        }
                        _ => {}
                    }
                }
                self.timeline.push(now.wall, election, what);
            }
        }
    }

    /// A lease query of tree `id`, sent at `now`, gave `reading`.
    pub fn lease_succeeded(
        &mut self,
        id: tree::TreeId,
        reading: super::lease::LeaseReading,
        now: crate::model::Now,
    ) {
        let connected = self.session.is_connected();
        if let Some(tree) = self.tree_mut(id) {
            // Judged only against a current view of ZooKeeper: a stale
            // master against a fresh lease would read as split brain.
            let judge = connected && tree.synced();
            if let Some(elections) = tree.as_elections_mut() {
                elections.lease_succeeded(reading, now, judge);
            }
        }
        self.take_events(now);
    }

    /// A lease query of tree `id` failed; true when the failure is new.
    pub fn lease_failed(
        &mut self,
        id: tree::TreeId,
        why: super::lease::Failure,
        message: String,
        now: crate::model::Now,
    ) -> bool {
        self.tree_mut(id)
            .and_then(|t| t.as_elections_mut())
            .is_some_and(|tree| tree.lease_failed(why, message, now))
    }

    /// A timeline entry of the agent's own (its session).
    pub fn note(&mut self, at: std::time::SystemTime, what: super::timeline::What) {
        self.timeline.push(at, String::new(), what);
    }

    /// A node matching tree `id`'s glob appeared; admitted if there is
    /// room.
    pub fn parent_created(&mut self, id: tree::TreeId, path: &str, now: crate::model::Now) {
        let Some(tree) = self.tree(id) else {
            return;
        };
        if tree.has_parent(path) {
            return;
        }
        let kind = tree.content_kind();
        if self.room(kind) == 0 {
            self.drop_parents(kind, 1);
            return;
        }
        if let Some(tree) = self.tree_mut(id) {
            tree.parent_created(path, now);
        }
    }

    /// A child of a matching node changed; children of parents the guard
    /// declined are ignored.
    pub fn child_upserted(
        &mut self,
        id: tree::TreeId,
        parent: &str,
        child: tree::ChildNode,
        now: crate::model::Now,
    ) {
        let Some(tree) = self.tree(id) else {
            return;
        };
        if !tree.has_parent(parent) && self.room(tree.content_kind()) == 0 {
            return;
        }
        if let Some(tree) = self.tree_mut(id) {
            tree.child_upserted(parent, child, now);
        }
    }

    pub fn parent_deleted(&mut self, id: tree::TreeId, path: &str, now: crate::model::Now) {
        if let Some(tree) = self.tree_mut(id) {
            tree.parent_deleted(path, now);
        }
    }

    pub fn child_deleted(
        &mut self,
        id: tree::TreeId,
        parent: &str,
        name: &str,
        now: crate::model::Now,
    ) {
        if let Some(tree) = self.tree_mut(id) {
            tree.child_deleted(parent, name, now);
        }
    }

    /// `n` node events of tree `id`'s watches arrived.
    pub fn events_delivered(&mut self, id: tree::TreeId, n: u64) {
        if let Some(tree) = self.tree_mut(id) {
            tree.events_delivered(n);
        }
    }

    /// Applies one change of tree `id`.
    pub fn apply(&mut self, id: tree::TreeId, change: TreeChange, now: crate::model::Now) {
        match change {
            TreeChange::ParentCreated(path) => self.parent_created(id, &path, now),
            TreeChange::ParentDeleted(path) => self.parent_deleted(id, &path, now),
            TreeChange::ChildUpserted { parent, child } => {
                self.child_upserted(id, &parent, child, now)
            }
            TreeChange::ChildDeleted { parent, name } => {
                self.child_deleted(id, &parent, &name, now)
            }
            TreeChange::OuterRecord { election, read } => {
                if let Some(tree) = self.tree_mut(id) {
                    let read = read.as_ref().map(|(data, owner)| (data.as_slice(), *owner));
                    tree.outer_record_read(&election, read, now);
                }
            }
        }
        self.take_events(now);
    }

    /// Watching or listing tree `id` failed with `message`; true when the
    /// message is new, false when it repeats or the tree is gone.
    pub fn tree_failed(&mut self, id: tree::TreeId, message: String) -> bool {
        let Some(tree) = self.tree_mut(id) else {
            return false;
        };
        let new = tree.sync_error() != Some(message.as_str());
        tree.sync_failed(message);
        new
    }

    /// Whether the guard dropped series and nobody was told yet; true once.
    pub fn drops_to_report(&mut self) -> bool {
        let report = !self.dropped_reported && !self.dropped.is_empty();
        self.dropped_reported |= report;
        report
    }

    /// `wchp` showed the sessions watching each path: count, per election
    /// node, those other than the agent's own.
    pub fn watchers_seen(&mut self, watchers: &BTreeMap<String, std::collections::BTreeSet<i64>>) {
        let own = self.session.id;
        let counts = self
            .trees
            .iter()
            .filter_map(|t| t.as_elections())
            .flat_map(|e| e.elections().map(|(path, _)| path.to_owned()))
            .map(|path| {
                let n = watchers
                    .get(&path)
                    .map_or(0, |s| s.iter().filter(|sid| Some(**sid) != own).count());
                (path, n)
            })
            .collect();
        self.parent_watchers = Some(counts);
    }

    /// The group at `path`, in whichever group tree holds it.
    pub fn group(&self, path: &str) -> Option<&super::groups::Group> {
        self.trees
            .iter()
            .filter_map(|t| t.as_groups())
            .find_map(|g| g.group(path))
    }
}

#[cfg(test)]
mod lease_tests;
#[cfg(test)]
mod tests;
