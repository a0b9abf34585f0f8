//! The elections of one tree: every node matched by a glob, with its
//! candidates, plus the tree-wide masterless histogram.

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
}

/// How an election tree is read and exported.
#[derive(Debug, Clone)]
pub struct ElectionSpec {
    /// How a candidate's identity is read from its node.
    pub identity: IdentityMode,
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
            min_candidates: None,
        }
    }
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

    fn candidate(&self, child: &ChildNode) -> Option<Candidate> {
        let sequence = parse_sequence(&child.name)?;
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
        for child in children {
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
        for (path, children) in listing {
            let (candidates, others) = self.split(children);
            seen.insert(path.clone());
            match self.elections.get_mut(&path) {
                Some(entry) => {
                    entry.others = others;
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
                    self.elections.insert(path, Entry { election, others });
                }
            }
        }
        self.elections.retain(|path, _| seen.contains(path));
    }

    /// A node matching the glob was created (or found). No-op if known.
    fn parent_created(&mut self, path: &str, now: Now) {
        if !self.elections.contains_key(path) {
            self.elections.insert(
                path.to_owned(),
                Entry {
                    election: Election::new([], now),
                    others: Others::default(),
                },
            );
        }
    }

    /// An election node was deleted; its state and any running masterless
    /// period are dropped with it.
    fn parent_deleted(&mut self, path: &str) {
        self.elections.remove(path);
    }

    /// A child of an election was created or its data changed.
    fn child_upserted(&mut self, election: &str, child: ChildNode, now: Now) {
        if !self.elections.contains_key(election) {
            self.parent_created(election, now);
        }
        let candidate = self.candidate(&child);
        let Some(entry) = self.elections.get_mut(election) else {
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
    fn child_deleted(&mut self, election: &str, name: &str, now: Now) {
        let Some(entry) = self.elections.get_mut(election) else {
            return;
        };
        match parse_sequence(name) {
            Some(seq) => {
                let outcome = entry.election.leave(name, seq, now);
                self.record(outcome);
            }
            None => entry.others.remove(name),
        }
    }

    /// Names of all children of an election (candidates and ignored ones).
    fn child_names(&self, election: &str) -> BTreeSet<String> {
        self.elections
            .get(election)
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

    fn has_parent(&self, path: &str) -> bool {
        self.elections.contains_key(path)
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
