//! The elections of one tree, plus the tree-wide masterless histogram.
//!
//! Two styles exist in the wild:
//! - **sequential** (kazoo, Curator, Solr, the seeds' bots): every node the
//!   glob matches is an election and its EPHEMERAL_SEQUENTIAL children are
//!   the candidates; the lowest sequence is master.
//! - **node** (Kafka `/controller`, HBase `/hbase/master`, HDFS
//!   `ActiveStandbyElectorLock`, most home-grown leaders): the election is
//!   one EPHEMERAL node whose owner is master. The tree watches the nodes
//!   that hold it (the glob without its last segment), and the election is
//!   keyed by the node's own path; it is masterless while the node is
//!   absent, and a re-created node is a switch.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use super::candidate::{IdentityMode, parse_sequence};
use super::child::ChildNode;
use super::content::{ContentKind, TreeContent};
use super::election::{Candidate, Election, Now};
use super::histogram::{Histogram, PERIOD_BUCKETS};

/// Children of one election that carry no sequence suffix; not candidates,
/// but counted so a misconfigured glob is visible.
#[derive(Debug, Clone, Default)]
struct Others {
    ephemeral: BTreeSet<String>,
    persistent: BTreeSet<String>,
}

impl Others {
    fn len(&self) -> usize {
        self.ephemeral.len() + self.persistent.len()
    }

    fn remove(&mut self, name: &str) {
        self.ephemeral.remove(name);
        self.persistent.remove(name);
    }
}

#[derive(Debug, Clone)]
struct Entry {
    election: Election,
    others: Others,
    facts: Facts,
}

/// How an election tree is read and exported.
#[derive(Debug, Clone)]
pub struct ElectionSpec {
    /// How a candidate's identity is read from its node.
    pub identity: IdentityMode,
    pub style: Style,
    /// Fewest candidates (master plus standbys) each election should have;
    /// exported as `zookeeper_election_min_candidates` so one alert rule
    /// covers every election, and absent (no alert) when not configured:
    /// exclusive designs keep only the master's node.
    pub min_candidates: Option<u32>,
}

impl From<IdentityMode> for ElectionSpec {
    fn from(identity: IdentityMode) -> Self {
        Self {
            identity,
            style: Style::Sequential,
            min_candidates: None,
        }
    }
}

/// How an election's master is found (see the module doc).
#[derive(Debug, Clone)]
pub enum Style {
    Sequential,
    /// The election is one child of each node the tree matches.
    Node(NodeSpec),
}

impl Style {
    /// A node election of `name` with nothing else configured.
    pub fn node(name: impl Into<String>) -> Self {
        Style::Node(NodeSpec {
            name: name.into(),
            epoch: None,
            record: None,
            standbys: None,
        })
    }

    pub fn is_sequential(&self) -> bool {
        matches!(self, Style::Sequential)
    }
}

/// A node election: its node and the siblings that tell more about it.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Name of the election node under each matched parent.
    pub name: String,
    /// A sibling holding the fencing epoch as an integer (Kafka's
    /// `controller_epoch`).
    pub epoch: Option<String>,
    /// A sibling where the application writes who it believes is master
    /// (HDFS's `ActiveBreadCrumb`), read with its own identity mode.
    pub record: Option<(String, IdentityMode)>,
    /// A registry whose ephemeral children are the standbys (Kafka's
    /// `/brokers/ids`); watched as a group tree of its own.
    pub standbys: Option<String>,
}

/// What a node election's siblings say.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The fencing epoch as last read.
    pub epoch: Option<i64>,
    /// Times the epoch was seen to go backwards: a fencing failure.
    pub epoch_regressions: u64,
    /// Who the record names.
    pub record: Option<String>,
}

/// All elections under one glob.
#[derive(Debug, Clone)]
pub struct ElectionTree {
    spec: ElectionSpec,
    elections: BTreeMap<String, Entry>,
    masterless: Histogram,
}

impl ElectionTree {
    pub fn new(spec: impl Into<ElectionSpec>) -> Self {
        Self {
            spec: spec.into(),
            elections: BTreeMap::new(),
            masterless: Histogram::new(PERIOD_BUCKETS),
        }
    }

    pub fn spec(&self) -> &ElectionSpec {
        &self.spec
    }

    /// The election a parent node holds: itself (sequential), or its child
    /// named by the style (node).
    fn key(&self, parent: &str) -> String {
        match &self.spec.style {
            Style::Sequential => parent.to_owned(),
            Style::Node(n) if parent == "/" => format!("/{}", n.name),
            Style::Node(n) => format!("{parent}/{}", n.name),
        }
    }

    /// Whether a child of a parent node belongs to its election at all: a
    /// node election looks at its one node, not at the node's siblings.
    fn concerns(&self, child: &str) -> bool {
        match &self.spec.style {
            Style::Sequential => true,
            Style::Node(n) => child == n.name,
        }
    }

    /// The sequence of a candidate node; a node election's one node has
    /// none (0) and is a candidate only while ephemeral.
    fn sequence(&self, name: &str, ephemeral: bool) -> Option<i32> {
        match self.spec.style {
            Style::Sequential => parse_sequence(name),
            Style::Node(_) => ephemeral.then_some(0),
        }
    }

    fn candidate(&self, child: &ChildNode) -> Option<Candidate> {
        let sequence = self.sequence(&child.name, child.ephemeral_owner != 0)?;
        Some(Candidate {
            identity: self.spec.identity.extract(&child.name, &child.data),
            name: child.name.clone(),
            sequence,
            owner: child.ephemeral_owner,
            ctime: SystemTime::UNIX_EPOCH
                + Duration::from_millis(u64::try_from(child.ctime_ms).unwrap_or(0)),
        })
    }

    fn split(&self, children: Vec<ChildNode>) -> (Vec<Candidate>, Others) {
        let mut candidates = Vec::with_capacity(children.len());
        let mut others = Others::default();
        for child in children.into_iter().filter(|c| self.concerns(&c.name)) {
            match self.candidate(&child) {
                Some(c) => candidates.push(c),
                None if child.ephemeral_owner != 0 => {
                    others.ephemeral.insert(child.name);
                }
                None => {
                    others.persistent.insert(child.name);
                }
            }
        }
        (candidates, others)
    }

    /// Reads a sibling the node style names (epoch, record) into `facts`;
    /// false when `name` is none of them. `None` data: the sibling is gone.
    fn sibling(style: &Style, facts: &mut Facts, name: &str, data: Option<&[u8]>) -> bool {
        let Style::Node(n) = style else {
            return false;
        };
        if n.epoch.as_deref() == Some(name) {
            let epoch = data.and_then(|d| std::str::from_utf8(d).ok()?.trim().parse::<i64>().ok());
            if let (Some(old), Some(new)) = (facts.epoch, epoch)
                && new < old
            {
                facts.epoch_regressions += 1;
            }
            facts.epoch = epoch;
            return true;
        }
        if let Some((record, mode)) = &n.record
            && record == name
        {
            facts.record = data.map(|d| mode.extract(name, d));
            return true;
        }
        false
    }

    /// What the siblings of election `path` say.
    pub fn facts(&self, path: &str) -> Option<&Facts> {
        self.elections.get(path).map(|e| &e.facts)
    }

    fn record(&mut self, outcome: super::election::Outcome) {
        if let Some(lasted) = outcome.masterless_ended {
            self.masterless.observe(lasted.as_secs_f64());
        }
    }

    /// Elections by path, in path order.
    pub fn elections(&self) -> impl Iterator<Item = (&str, &Election)> {
        self.elections
            .iter()
            .map(|(p, e)| (p.as_str(), &e.election))
    }

    pub fn election(&self, path: &str) -> Option<&Election> {
        self.elections.get(path).map(|e| &e.election)
    }

    pub fn masterless_histogram(&self) -> &Histogram {
        &self.masterless
    }
}

impl TreeContent for ElectionTree {
    fn kind(&self) -> ContentKind {
        ContentKind::Election
    }

    /// Applies a full listing: every election that exists with its children.
    ///
    /// The first listing (`resync` false) only loads state. Later ones
    /// (after a reconnect) count what changed during the outage, exactly once.
    fn apply_listing(&mut self, listing: Vec<(String, Vec<ChildNode>)>, now: Now, resync: bool) {
        let mut seen = BTreeSet::new();
        for (parent, children) in listing {
            let path = self.key(&parent);
            let mut facts = self
                .elections
                .get(&path)
                .map(|e| e.facts.clone())
                .unwrap_or_default();
            let mut siblings = BTreeSet::new();
            for c in &children {
                if Self::sibling(&self.spec.style, &mut facts, &c.name, Some(&c.data)) {
                    siblings.insert(c.name.clone());
                }
            }
            // A sibling the listing no longer has is gone.
            if let Style::Node(n) = &self.spec.style {
                for name in n.epoch.iter().chain(n.record.iter().map(|(r, _)| r)) {
                    if !siblings.contains(name) {
                        Self::sibling(&self.spec.style, &mut facts, name, None);
                    }
                }
            }
            let (candidates, others) = self.split(children);
            seen.insert(path.clone());
            match self.elections.get_mut(&path) {
                Some(entry) => {
                    entry.others = others;
                    entry.facts = facts;
                    let outcome = entry.election.resync(candidates, now);
                    self.record(outcome);
                }
                None => {
                    let election = if resync {
                        // Appeared during the outage: its candidates joined then.
                        let mut e = Election::new([], now);
                        // No masterless period of ours ends here.
                        let _ = e.resync(candidates, now);
                        e
                    } else {
                        Election::new(candidates, now)
                    };
                    self.elections.insert(
                        path,
                        Entry {
                            election,
                            others,
                            facts,
                        },
                    );
                }
            }
        }
        self.elections.retain(|path, _| seen.contains(path));
    }

    /// A node matching the glob was created (or found). No-op if known.
    fn parent_created(&mut self, parent: &str, now: Now) {
        let path = self.key(parent);
        self.elections.entry(path).or_insert_with(|| Entry {
            election: Election::new([], now),
            others: Others::default(),
            facts: Facts::default(),
        });
    }

    /// An election node was deleted; its state and any running masterless
    /// period are dropped with it.
    fn parent_deleted(&mut self, parent: &str) {
        let path = self.key(parent);
        self.elections.remove(&path);
    }

    /// A child of an election was created or its data changed.
    fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now) {
        if !self.concerns(&child.name) {
            let key = self.key(parent);
            if let Some(entry) = self.elections.get_mut(&key) {
                Self::sibling(
                    &self.spec.style,
                    &mut entry.facts,
                    &child.name,
                    Some(&child.data),
                );
            }
            return;
        }
        let election = self.key(parent);
        if !self.elections.contains_key(&election) {
            self.parent_created(parent, now);
        }
        let candidate = self.candidate(&child);
        let Some(entry) = self.elections.get_mut(&election) else {
            return;
        };
        match candidate {
            Some(c) => {
                let outcome = entry.election.join(c, now);
                self.record(outcome);
            }
            None if child.ephemeral_owner != 0 => {
                entry.others.ephemeral.insert(child.name);
            }
            None => {
                entry.others.persistent.insert(child.name);
            }
        }
    }

    /// A child of an election was deleted.
    fn child_deleted(&mut self, parent: &str, name: &str, now: Now) {
        if !self.concerns(name) {
            let key = self.key(parent);
            if let Some(entry) = self.elections.get_mut(&key) {
                Self::sibling(&self.spec.style, &mut entry.facts, name, None);
            }
            return;
        }
        let election = self.key(parent);
        let sequence = self.sequence(name, true);
        let Some(entry) = self.elections.get_mut(&election) else {
            return;
        };
        entry.others.remove(name);
        if let Some(seq) = sequence {
            let outcome = entry.election.leave(name, seq, now);
            self.record(outcome);
        }
    }

    /// Names of all children of an election (candidates and ignored ones).
    fn child_names(&self, parent: &str) -> BTreeSet<String> {
        self.elections
            .get(&self.key(parent))
            .map(|e| {
                e.election
                    .candidates()
                    .map(|(_, name, _)| name.to_owned())
                    .chain(e.others.ephemeral.iter().cloned())
                    .chain(e.others.persistent.iter().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn has_parent(&self, parent: &str) -> bool {
        self.elections.contains_key(&self.key(parent))
    }

    fn parent_count(&self) -> usize {
        self.elections.len()
    }

    /// Election nodes plus all their children.
    fn node_count(&self) -> usize {
        self.elections
            .values()
            .map(|e| 1 + e.election.candidate_count() + e.others.len())
            .sum()
    }

    /// Owner sessions of every ephemeral candidate.
    fn owners(&self) -> Vec<i64> {
        self.elections
            .values()
            .flat_map(|e| e.election.owners())
            .collect()
    }

    /// Ephemeral children (candidates or not) across all elections.
    fn ephemeral_count(&self) -> usize {
        self.elections
            .values()
            .map(|e| e.election.ephemeral_count() + e.others.ephemeral.len())
            .sum()
    }

    /// Children that are not candidates because they have no sequence suffix.
    fn ignored_count(&self) -> usize {
        self.elections.values().map(|e| e.others.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn child(name: &str, ephemeral: bool) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: name.as_bytes().to_vec(),
            ephemeral_owner: i64::from(ephemeral),
            ctime_ms: 1_700_000_000_000,
        }
    }

    fn now(base: Instant, s: u64) -> Now {
        Now {
            mono: base + Duration::from_secs(s),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(s),
        }
    }

    fn node(name: &str, owner: i64, ctime_ms: i64) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: format!(r#"{{"brokerid":{owner}}}"#).into_bytes(),
            ephemeral_owner: owner,
            ctime_ms,
        }
    }

    fn controller() -> ElectionTree {
        ElectionTree::new(ElectionSpec {
            identity: IdentityMode::parse("json:/brokerid").unwrap(),
            style: Style::Node(NodeSpec {
                name: "controller".into(),
                epoch: Some("controller_epoch".into()),
                record: None,
                standbys: None,
            }),
            min_candidates: None,
        })
    }

    #[test]
    fn a_node_election_is_its_one_ephemeral_node() {
        let t = Instant::now();
        let mut tree = controller();
        // Kafka's root: /controller beside persistent siblings.
        tree.apply_listing(
            vec![(
                "/".into(),
                vec![
                    node("controller", 7, 1),
                    node("brokers", 0, 0),
                    node("controller_epoch", 0, 0),
                ],
            )],
            now(t, 0),
            false,
        );
        assert_eq!(tree.parent_count(), 1);
        let e = tree.election("/controller").unwrap();
        let master = e.master().unwrap();
        assert_eq!(
            (master.node, master.identity, master.owner),
            ("controller", "7", 7)
        );
        assert_eq!(
            tree.ignored_count(),
            0,
            "siblings are no business of the election"
        );
        // The broker dies: masterless, then another broker re-creates it.
        tree.child_deleted("/", "controller", now(t, 1));
        assert!(tree.election("/controller").unwrap().master().is_none());
        tree.child_deleted("/", "brokers", now(t, 1));
        tree.child_upserted("/", node("controller", 9, 2), now(t, 3));
        let e = tree.election("/controller").unwrap();
        assert_eq!((e.changes(), e.master().unwrap().identity), (1, "9"));
        assert_eq!(e.masterless_total(now(t, 3).mono), Duration::from_secs(2));
        // A data change of the same node is no switch; another session
        // re-creating it during an outage is one, counted at the resync.
        tree.child_upserted("/", node("controller", 9, 2), now(t, 4));
        tree.apply_listing(
            vec![("/".into(), vec![node("controller", 11, 5)])],
            now(t, 6),
            true,
        );
        assert_eq!(tree.election("/controller").unwrap().changes(), 2);
        // A persistent node of that name is no master.
        tree.child_deleted("/", "controller", now(t, 7));
        tree.child_upserted("/", node("controller", 0, 7), now(t, 7));
        assert!(tree.election("/controller").unwrap().master().is_none());
    }

    #[test]
    fn epoch_regressions_and_records_are_read_from_siblings() {
        let t = Instant::now();
        let mut tree = ElectionTree::new(ElectionSpec {
            identity: IdentityMode::Hdfs,
            style: Style::Node(NodeSpec {
                name: "lock".into(),
                epoch: Some("epoch".into()),
                record: Some(("crumb".into(), IdentityMode::Data)),
                standbys: None,
            }),
            min_candidates: None,
        });
        let data = |name: &str, text: &str, owner| ChildNode {
            name: name.into(),
            data: text.as_bytes().to_vec(),
            ephemeral_owner: owner,
            ctime_ms: 0,
        };
        tree.apply_listing(
            vec![(
                "/ns1".into(),
                vec![data("epoch", "5", 0), data("crumb", "nn1", 0)],
            )],
            now(t, 0),
            false,
        );
        let facts = tree.facts("/ns1/lock").unwrap();
        assert_eq!(
            (facts.epoch, facts.record.as_deref()),
            (Some(5), Some("nn1"))
        );
        tree.child_upserted("/ns1", data("epoch", "6", 0), now(t, 1));
        tree.child_upserted("/ns1", data("epoch", "4", 0), now(t, 2));
        tree.child_upserted("/ns1", data("epoch", "7", 0), now(t, 3));
        let facts = tree.facts("/ns1/lock").unwrap();
        assert_eq!((facts.epoch, facts.epoch_regressions), (Some(7), 1));
        tree.child_deleted("/ns1", "crumb", now(t, 4));
        assert_eq!(tree.facts("/ns1/lock").unwrap().record, None);
        assert_eq!(tree.parent_count(), 1, "siblings are facts, not elections");
    }

    proptest::proptest! {
        /// Whatever the interleaving of creations (by any session) and
        /// deletions of a node election's node, switches are exactly the
        /// creations by another session than the last master's (or the same
        /// session at another time), after the first master.
        #[test]
        fn node_switches_equal_owner_changes(
            ops in proptest::collection::vec(proptest::option::of(1i64..4), 1..60),
        ) {
            let t = Instant::now();
            let mut tree = controller();
            tree.apply_listing(vec![("/".into(), vec![])], now(t, 0), false);
            let (mut present, mut last, mut switches) = (false, None::<(i64, i64)>, 0u64);
            for (i, op) in ops.into_iter().enumerate() {
                let at = now(t, i as u64 + 1);
                match op {
                    Some(owner) if !present => {
                        let incarnation = (owner, i as i64);
                        tree.child_upserted("/", node("controller", owner, i as i64), at);
                        if last.is_some_and(|l| l != incarnation) {
                            switches += 1;
                        }
                        last = Some(incarnation);
                        present = true;
                    }
                    Some(_) => {} // ZooKeeper refuses a second create
                    None => {
                        tree.child_deleted("/", "controller", at);
                        present = false;
                    }
                }
                proptest::prop_assert_eq!(tree.election("/controller").unwrap().changes(), switches);
            }
        }
    }

    #[test]
    fn counts_and_ignored_children() {
        let t = Instant::now();
        let mut tree = ElectionTree::new(IdentityMode::Data);
        tree.apply_listing(
            vec![
                (
                    "/bots/b1".into(),
                    vec![
                        child("i_0000000001", true),
                        child("i_0000000002", true),
                        child("config", false),
                    ],
                ),
                ("/bots/b2".into(), vec![]),
            ],
            now(t, 0),
            false,
        );
        assert_eq!(tree.parent_count(), 2);
        assert_eq!(tree.node_count(), 5);
        assert_eq!(tree.ephemeral_count(), 2);
        assert_eq!(tree.ignored_count(), 1);
        tree.child_upserted("/bots/b2", child("i_0000000001", true), now(t, 3));
        assert_eq!(tree.masterless_histogram().count(), 1);
        assert_eq!(tree.masterless_histogram().sum(), 3.0);
        tree.child_deleted("/bots/b1", "config", now(t, 4));
        assert_eq!(tree.ignored_count(), 0);
        tree.child_deleted("/bots/b2", "i_0000000001", now(t, 5));
        tree.parent_deleted("/bots/b2");
        assert_eq!(tree.parent_count(), 1);
    }

    #[test]
    fn resync_listing_counts_changes_and_drops_vanished_elections() {
        let t = Instant::now();
        let mut tree = ElectionTree::new(IdentityMode::Node);
        tree.apply_listing(
            vec![
                ("/bots/b1".into(), vec![child("i_0000000001", true)]),
                ("/bots/gone".into(), vec![]),
            ],
            now(t, 0),
            false,
        );
        tree.apply_listing(
            vec![
                ("/bots/b1".into(), vec![child("i_0000000002", true)]),
                ("/bots/new".into(), vec![child("i_0000000005", true)]),
            ],
            now(t, 10),
            true,
        );
        let b1 = tree.election("/bots/b1").unwrap();
        assert_eq!((b1.changes(), b1.joins(), b1.leaves()), (1, 1, 1));
        let new = tree.election("/bots/new").unwrap();
        assert_eq!((new.changes(), new.joins()), (0, 1));
        assert!(tree.election("/bots/gone").is_none());
    }
}
