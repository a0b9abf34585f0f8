//! What an instant of the models shows the agent's alerts: the conditions
//! true now, and the alerts the reading can neither start nor end.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Key, Kind};
use crate::model::attention::State;
use crate::model::cluster::ClusterState;
use crate::model::election::Election;
use crate::model::election::FLAP_SWITCHES;
use crate::model::election_tree::{ElectionTree, Style};
use crate::model::journal::{Cursor, Since};
use crate::model::lease::Verdict;
use crate::model::tree::{Tree, TreeId, TreePattern, TreeSource};

/// A condition true now.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub kind: Kind,
    pub election: String,
    /// Since when it holds, when the model knows (masterless since);
    /// otherwise from when the book first saw it.
    pub since: Option<Instant>,
    /// `{{ $value }}` of the description; for an epoch regression, the count
    /// of regressions (the alert holds for 10 minutes after it grows).
    pub value: u64,
    /// A hold other than the kind's (an election set's `no_master_for`).
    pub hold: Option<Duration>,
}

/// One cluster's conditions at an instant.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// False while the agent's session is not connected: the cluster's
    /// election alerts then neither fire nor resolve, since no reading is
    /// not a reading.
    pub fresh: bool,
    pub conditions: Vec<Condition>,
    /// Elections of trees not synced (no rights, a listing failed): their
    /// alerts are kept as they are.
    pub frozen: BTreeSet<String>,
    /// Elections whose lease source gives no reading now: their lease
    /// alerts are kept as they are (the others are judged as usual).
    pub lease_frozen: BTreeSet<String>,
    /// Alerts (kind, election) the reading can neither confirm nor deny,
    /// kept as they are and never started: a split brain in a set not yet
    /// shown to name its lease holders as its candidates (`unconfirmed`,
    /// the agent has just started), a ghost master whose session the ghost
    /// check has not judged yet (no round since the start, or rounds that
    /// cannot tell).
    pub unjudged: BTreeSet<(Kind, String)>,
    /// The trees' parts, whose conditions are in `conditions` and whose
    /// elections held still count as in the sets above: shared with the
    /// [`ReadingCache`] that keeps them, never copied.
    pub(crate) parts: Vec<Arc<TreeReading>>,
}

impl Reading {
    /// Whether `key`'s alert must stay as it is.
    pub(crate) fn holds_still(&self, key: &Key) -> bool {
        self.frozen.contains(&key.2)
            || (key.0.judged_from_lease() && self.lease_frozen.contains(&key.2))
            || self.unjudged.contains(&(key.0, key.2.clone()))
            || self.parts.iter().any(|p| p.holds_still(key.0, &key.2))
    }
}

/// What one election tree shows the agent's alerts: a part of a
/// [`Reading`], kept by the [`ReadingCache`] and brought up to date with
/// the elections that changed.
#[derive(Debug, Clone, Default)]
pub struct TreeReading {
    /// A tree that does not reflect ZooKeeper now (not synced): the alerts
    /// of every election it may hold are kept as they are.
    frozen: Option<Frozen>,
    /// The elections that show anything, and what.
    elections: HashMap<Box<str>, ElectionReading>,
}

/// The elections a tree may hold, told by their path: its glob, and a
/// node election's node name.
#[derive(Debug, Clone)]
struct Frozen {
    pattern: TreePattern,
    node: Option<String>,
}

impl Frozen {
    fn of(tree: &Tree) -> Option<Self> {
        let elections = tree.as_elections()?;
        let node = match &elections.spec().style {
            Style::Node(n) => Some(n.name.clone()),
            Style::Sequential => None,
        };
        Some(Self {
            pattern: tree.pattern().clone(),
            node,
        })
    }

    fn holds(&self, election: &str) -> bool {
        match &self.node {
            None => self.pattern.claims(election),
            Some(name) => election.rsplit_once('/').is_some_and(|(parent, n)| {
                n == name
                    && self
                        .pattern
                        .claims(if parent.is_empty() { "/" } else { parent })
            }),
        }
    }
}

impl TreeReading {
    fn holds_still(&self, kind: Kind, election: &str) -> bool {
        self.frozen.as_ref().is_some_and(|f| f.holds(election))
            || self.elections.get(election).is_some_and(|e| {
                (kind.judged_from_lease() && e.lease_frozen) || e.unjudged.contains(&kind)
            })
    }
}

/// What one election shows the agent's alerts.
#[derive(Debug, Clone, Default, PartialEq)]
struct ElectionReading {
    conditions: Vec<Condition>,
    /// Its lease source gives no reading now: its lease alerts are kept.
    lease_frozen: bool,
    /// Alerts the reading can neither confirm nor deny (see
    /// [`Reading::unjudged`]).
    unjudged: Vec<Kind>,
    /// When a condition of it ends with nothing changing but time (its
    /// flapping leaves the window).
    until: Option<Instant>,
}

impl ElectionReading {
    fn is_empty(&self) -> bool {
        self.conditions.is_empty() && !self.lease_frozen && self.unjudged.is_empty()
    }
}

/// One election tree's part, and where it stands: the tree's journal
/// cursor, and what else its elections were judged against.
#[derive(Debug)]
struct KeptTree {
    cursor: Option<Cursor>,
    ghost: u64,
    flap_window: Duration,
    /// Shared with the readings made from it; a reading is dropped before
    /// the next is made, so bringing it up to date copies nothing.
    part: Arc<TreeReading>,
    /// When time alone ends a condition, by election (flapping leaving
    /// its window), soonest first.
    deadlines: BTreeSet<(Instant, Box<str>)>,
}

/// The parts of one cluster's readings kept between readings, by tree: a
/// tree's part is brought up to date with the elections its journal says
/// changed and those whose condition time alone ends; it is taken whole
/// again only when the journal starts over (a listing, the tree's sync
/// state, a lease reading), when the ghost check's verdicts or the
/// flapping window changed. So a reading of a million quiet elections
/// walks none of them, and one switch costs one election. Owned by
/// whoever reads (the alert pusher), not by the models.
#[derive(Debug, Default)]
pub struct ReadingCache {
    trees: HashMap<TreeId, KeptTree>,
    /// Elections judged so far (what the cache saves shows here).
    judged: u64,
}

impl ReadingCache {
    /// Elections judged since the cache was made.
    pub fn judged(&self) -> u64 {
        self.judged
    }
}

impl ClusterState {
    /// The conditions of this cluster's configured elections at `now`,
    /// flapping counted within `flap_window` (the deployment's rule's).
    /// Discovered elections never page (their rule twin excludes them).
    /// Each tree's part in `cache` is brought up to date with what changed.
    pub fn alert_reading(
        &self,
        now: Instant,
        flap_window: Duration,
        cache: &mut ReadingCache,
    ) -> Reading {
        let mut reading = Reading {
            fresh: self.session().is_connected(),
            ..Reading::default()
        };
        if !reading.fresh {
            return reading;
        }
        // Stamps are never reused: a tracker a reload replaced cannot
        // match a part taken against its predecessor.
        let ghost = self.ghost().as_ref().map_or(0, |g| g.stamp());
        cache
            .trees
            .retain(|id, _| self.trees().iter().any(|t| t.id() == *id));
        for tree in self.trees() {
            if tree.source() == TreeSource::Discovered || tree.as_elections().is_none() {
                continue;
            }
            let kept = cache.trees.entry(tree.id()).or_insert_with(|| KeptTree {
                cursor: None,
                ghost,
                flap_window,
                part: Arc::default(),
                deadlines: BTreeSet::new(),
            });
            cache.judged += self.keep_up(tree, kept, ghost, now, flap_window);
            reading.conditions.extend(
                kept.part
                    .elections
                    .values()
                    .flat_map(|e| e.conditions.iter().cloned()),
            );
            reading.parts.push(kept.part.clone());
        }
        reading
    }

    /// Brings `kept`, tree `tree`'s part, up to date at `now`: the
    /// elections its journal says changed and those whose deadline passed,
    /// or the whole tree when the journal started over or what its
    /// elections were judged against changed. Returns the elections judged.
    fn keep_up(
        &self,
        tree: &Tree,
        kept: &mut KeptTree,
        ghost: u64,
        now: Instant,
        flap_window: Duration,
    ) -> u64 {
        let Some(elections) = tree.as_elections() else {
            return 0;
        };
        let since = match (kept.ghost == ghost && kept.flap_window == flap_window)
            .then(|| elections.journal().since(kept.cursor))
        {
            Some(Since::Changed(keys)) => Some(keys),
            _ => None,
        };
        let due = kept
            .deadlines
            .first()
            .is_some_and(|(until, _)| *until <= now);
        let mut judged = 0;
        match since {
            Some(keys) if keys.is_empty() && !due => {}
            Some(keys) => {
                let mut keys: Vec<Box<str>> = keys.into_iter().map(Box::from).collect();
                while let Some((until, _)) = kept.deadlines.first()
                    && *until <= now
                {
                    if let Some((_, key)) = kept.deadlines.pop_first() {
                        keys.push(key);
                    }
                }
                keys.sort_unstable();
                keys.dedup();
                let part = Arc::make_mut(&mut kept.part);
                // An unsynced tree holds every election it may hold still.
                for key in keys.into_iter().filter(|_| tree.synced()) {
                    judged += 1;
                    let reading = elections
                        .election(&key)
                        .map(|e| self.election_reading(tree, &key, e, now, flap_window))
                        .unwrap_or_default();
                    keep(part, &mut kept.deadlines, key, reading);
                }
            }
            None => {
                let (part, deadlines) = self.tree_reading(tree, now, flap_window);
                if tree.synced() {
                    judged = tree.parent_count() as u64;
                }
                kept.part = Arc::new(part);
                kept.deadlines = deadlines;
            }
        }
        kept.cursor = Some(elections.journal().cursor());
        kept.ghost = ghost;
        kept.flap_window = flap_window;
        judged
    }

    /// One election tree's part of [`ClusterState::alert_reading`], taken
    /// whole: a walk over its elections.
    fn tree_reading(
        &self,
        tree: &Tree,
        now: Instant,
        flap_window: Duration,
    ) -> (TreeReading, BTreeSet<(Instant, Box<str>)>) {
        let mut part = TreeReading::default();
        let mut deadlines = BTreeSet::new();
        let Some(elections) = tree.as_elections() else {
            return (part, deadlines);
        };
        if !tree.synced() {
            part.frozen = Frozen::of(tree);
            return (part, deadlines);
        }
        for (path, election) in elections.elections() {
            let judged = self.election_reading(tree, path, election, now, flap_window);
            keep(&mut part, &mut deadlines, Box::from(path), judged);
        }
        (part, deadlines)
    }

    /// What election `path` of `tree` shows the agent's alerts at `now`.
    fn election_reading(
        &self,
        tree: &Tree,
        path: &str,
        election: &Election,
        now: Instant,
        flap_window: Duration,
    ) -> ElectionReading {
        let mut judged = ElectionReading::default();
        let Some(elections) = tree.as_elections() else {
            return judged;
        };
        if !tree.synced() {
            return judged;
        }
        let own_hold = elections.spec().no_master_for;
        let conditions = &mut judged.conditions;
        let mut push = |kind, since, value| {
            conditions.push(Condition {
                kind,
                election: path.to_owned(),
                since,
                value,
                hold: own_hold.filter(|_| kind == Kind::NoMaster),
            })
        };
        match self.state_of(elections, path, election, now) {
            State::Masterless => push(Kind::NoMaster, election.masterless_since(), 0),
            State::Ghost => push(Kind::GhostMaster, None, 0),
            _ if self.ghost_unjudged(election) => judged.unjudged.push(Kind::GhostMaster),
            _ => {}
        }
        let duplicates = election.duplicate_identities();
        if duplicates > 0 {
            push(Kind::DuplicateIdentity, None, duplicates as u64);
        }
        if election.switches_within(flap_window, now) >= FLAP_SWITCHES {
            push(Kind::MasterFlapping, None, 0);
            // Past what an Instant holds: taken again at every reading.
            judged.until = Some(election.flapping_ends(flap_window).unwrap_or(now));
        }
        if let Some(facts) = elections.facts(path) {
            if facts.epoch_regressions > 0 {
                push(Kind::EpochRegression, None, facts.epoch_regressions);
            }
            if let (Some(record), Some(master)) = (&facts.record, election.master())
                && record != master.identity
                && record != master.node
            {
                push(Kind::RecordDisagrees, None, 0);
            }
        }
        self.lease_reading(elections, path, election, &mut judged);
        judged
    }

    /// What the lease table says of election `path` into `judged`: a split
    /// brain or an expired lease, or why the reading cannot tell.
    fn lease_reading(
        &self,
        elections: &ElectionTree,
        path: &str,
        election: &Election,
        judged: &mut ElectionReading,
    ) {
        let Some(lease) = elections.spec().lease.as_ref() else {
            return;
        };
        if !elections.lease_book().is_some_and(|b| b.fresh()) {
            judged.lease_frozen = true;
            return;
        }
        let kind = match elections.lease_verdict(path, election) {
            Some(Verdict::SplitBrain) => (Kind::SplitBrain, lease.split_brain_for),
            Some(Verdict::Expired) => (Kind::LeaseExpired, lease.expired_for),
            Some(Verdict::Unconfirmed) => {
                judged.unjudged.push(Kind::SplitBrain);
                return;
            }
            Some(_) => return,
            // A master the last reading cannot judge (it took over after
            // the reading, it is unnamed, its row unusable): no evidence
            // either way, so what fires stays. Without a master there is
            // no second master to speak of.
            None if election.master().is_some() => {
                judged.lease_frozen = true;
                return;
            }
            None => return,
        };
        judged.conditions.push(Condition {
            kind: kind.0,
            election: path.to_owned(),
            since: None,
            value: 0,
            hold: Some(kind.1),
        });
    }
}

/// Puts what election `key` shows now into `part`, in place of what it
/// showed, and its deadline into `deadlines`.
fn keep(
    part: &mut TreeReading,
    deadlines: &mut BTreeSet<(Instant, Box<str>)>,
    key: Box<str>,
    judged: ElectionReading,
) {
    let old = if judged.is_empty() && judged.until.is_none() {
        part.elections.remove(&key)
    } else {
        if let Some(until) = judged.until {
            deadlines.insert((until, key.clone()));
        }
        part.elections.insert(key.clone(), judged)
    };
    if let Some(until) = old.and_then(|o| o.until) {
        // The new deadline, if the same, was inserted above.
        let new = part.elections.get(&key).and_then(|e| e.until);
        if new != Some(until) {
            deadlines.remove(&(until, key));
        }
    }
}
