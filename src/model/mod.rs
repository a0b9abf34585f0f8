//! Pure data models: ZooKeeper events go in, metric values come out.
//! Nothing in here performs I/O or reads a clock.

pub mod candidate;
pub mod election;
pub mod elections;
pub mod ensemble;
pub mod groups;
pub mod histogram;
pub mod liveness;
pub mod pattern;
pub mod session;
pub mod tree;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Everything known about one configured cluster.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub session: session::Session,
    pub trees: Vec<tree::Tree>,
    /// Four-letter-word view of the members; `None` when polling is off.
    pub ensemble: Option<ensemble::Ensemble>,
    /// Client addresses the ensemble publishes in `/zookeeper/config`.
    pub members: Vec<String>,
    /// Servers listed in `/zookeeper/config` (0 for a standalone server);
    /// `None` where it cannot be read (3.4). Whether the members polled
    /// cover the ensemble, so that a session none lists is disconnected.
    pub ensemble_size: Option<usize>,
    /// Cardinality guard: most elections and groups exported.
    pub limits: Limits,
    /// Elections and groups declined by the guard, by kind.
    pub dropped: BTreeMap<&'static str, u64>,
    /// Set by the source once it has logged that the guard dropped series.
    pub dropped_reported: bool,
    /// Outcome of the last discovery walk; `None` when discovery is off.
    pub discovery: Option<DiscoveryStatus>,
    /// Liveness of the sessions owning watched nodes; `None` until the
    /// diagnostics' first round (or when they are off).
    pub liveness: Option<liveness::SessionTracker>,
    /// Sessions other than the agent's watching each election node itself
    /// (from `wchp`); `None` unless `diagnostics.watches` is on.
    pub parent_watchers: Option<BTreeMap<String, usize>>,
    /// Failover canary figures; `None` unless `[clusters.probe]` is set.
    pub probe: Option<ProbeStats>,
}

/// What the failover canary measured.
#[derive(Debug, Clone)]
pub struct ProbeStats {
    /// Master session closed → standby sees itself master.
    pub failover: histogram::Histogram,
    /// Master session abandoned → standby sees itself master (expiry).
    pub expiry: histogram::Histogram,
    /// Rounds that failed (no rights, timeouts, connection trouble).
    pub errors: u64,
}

impl Default for ProbeStats {
    fn default() -> Self {
        Self {
            failover: histogram::Histogram::new(histogram::LATENCY_BUCKETS),
            expiry: histogram::Histogram::new(histogram::PERIOD_BUCKETS),
            errors: 0,
        }
    }
}

/// What the last discovery walk found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoveryStatus {
    /// Trees added by discovery, by kind, since start.
    pub election_trees: usize,
    pub group_trees: usize,
    pub nodes_walked: usize,
    pub truncated: bool,
    pub last_run: Option<std::time::SystemTime>,
}

/// Most elections and most groups one cluster exports; past them new ones
/// are neither tracked nor exported, so a huge tree cannot exhaust the
/// agent's memory or Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_elections: usize,
    pub max_groups: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_elections: 10_000,
            max_groups: 10_000,
        }
    }
}

impl ClusterState {
    /// State of a cluster before anything is known.
    pub fn new(name: String, trees: Vec<tree::Tree>, four_letter_words: bool) -> Self {
        Self {
            name,
            session: session::Session::default(),
            trees,
            ensemble: four_letter_words.then(ensemble::Ensemble::default),
            members: Vec::new(),
            ensemble_size: None,
            limits: Limits::default(),
            dropped: BTreeMap::new(),
            dropped_reported: false,
            discovery: None,
            liveness: None,
            parent_watchers: None,
            probe: None,
        }
    }

    /// Parents tree `i` may still add: its kind's limit minus what all trees
    /// of that kind hold.
    fn room(&self, i: usize) -> usize {
        let kind = self.trees[i].kind_label();
        let limit = match kind {
            "election" => self.limits.max_elections,
            _ => self.limits.max_groups,
        };
        let used: usize = self
            .trees
            .iter()
            .filter(|t| t.kind_label() == kind)
            .map(tree::Tree::parent_count)
            .sum();
        limit.saturating_sub(used)
    }

    fn drop_parents(&mut self, i: usize, n: usize) {
        if n > 0 {
            *self.dropped.entry(self.trees[i].kind_label()).or_insert(0) += n as u64;
        }
    }

    /// Applies a full listing of tree `i` within the cardinality guard:
    /// parents already tracked stay, new ones are admitted in path order
    /// while there is room, the rest are counted as dropped.
    pub fn apply_listing(
        &mut self,
        i: usize,
        mut listing: Vec<(String, Vec<tree::ChildNode>)>,
        now: election::Now,
    ) {
        let budget = self.room(i) + self.trees[i].parent_count();
        if listing.len() > budget {
            let tree = &self.trees[i];
            listing.sort_by_key(|(path, _)| !tree.has_parent(path));
            let dropped = listing.len() - budget;
            listing.truncate(budget);
            self.drop_parents(i, dropped);
        }
        self.trees[i].apply_listing(listing, now);
    }

    /// A node matching tree `i`'s glob appeared; admitted if there is room.
    pub fn parent_created(&mut self, i: usize, path: &str, now: election::Now) {
        if self.trees[i].has_parent(path) {
            return;
        }
        if self.room(i) == 0 {
            self.drop_parents(i, 1);
            return;
        }
        self.trees[i].parent_created(path, now);
    }

    /// A child of a matching node changed; children of parents the guard
    /// declined are ignored.
    pub fn child_upserted(
        &mut self,
        i: usize,
        parent: &str,
        child: tree::ChildNode,
        now: election::Now,
    ) {
        if !self.trees[i].has_parent(parent) && self.room(i) == 0 {
            return;
        }
        self.trees[i].child_upserted(parent, child, now);
    }
}

/// A cluster's state shared between its session task (writer) and the HTTP
/// handlers (readers). Writers hold the lock only to apply already-read data.
pub type SharedCluster = Arc<RwLock<ClusterState>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::candidate::IdentityMode;
    use crate::model::tree::{ChildNode, Tree, TreePattern};
    use std::time::{Instant, SystemTime};

    fn now() -> election::Now {
        election::Now {
            mono: Instant::now(),
            wall: SystemTime::UNIX_EPOCH,
        }
    }

    fn listing(n: usize) -> Vec<(String, Vec<ChildNode>)> {
        (0..n).map(|i| (format!("/b/{i:03}"), vec![])).collect()
    }

    #[test]
    fn the_guard_caps_elections_across_trees_and_counts_the_rest() {
        let trees = vec![
            Tree::elections(TreePattern::parse("/b/*").unwrap(), IdentityMode::Node),
            Tree::elections(TreePattern::parse("/c/*").unwrap(), IdentityMode::Node),
        ];
        let mut c = ClusterState::new("c".into(), trees, false);
        c.limits = Limits {
            max_elections: 5,
            max_groups: 1,
        };
        c.apply_listing(0, listing(3), now());
        c.apply_listing(
            1,
            (0..4).map(|i| (format!("/c/{i}"), vec![])).collect(),
            now(),
        );
        assert_eq!(
            (c.trees[0].parent_count(), c.trees[1].parent_count()),
            (3, 2)
        );
        assert_eq!(c.dropped.get("election"), Some(&2));
        // Full: a new election is declined and counted; its children ignored.
        c.parent_created(0, "/b/new", now());
        let child = ChildNode {
            name: "n_0000000001".into(),
            data: vec![],
            ephemeral_owner: 1,
            ctime_ms: 0,
        };
        c.child_upserted(0, "/b/new", child, now());
        assert!(!c.trees[0].has_parent("/b/new"));
        assert_eq!(c.dropped.get("election"), Some(&3));
        // A resync keeps what is tracked before admitting anything new.
        c.apply_listing(0, listing(6), now());
        assert_eq!(c.trees[0].parent_count(), 3);
        // Room frees up when an election goes away.
        c.trees[1].parent_deleted("/c/0");
        c.parent_created(0, "/b/new", now());
        assert!(c.trees[0].has_parent("/b/new"));
    }
}
