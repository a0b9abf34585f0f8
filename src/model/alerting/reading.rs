//! What an instant of the models shows the agent's alerts: the conditions
//! true now, and the alerts the reading can neither start nor end.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Key, Kind};
use crate::model::attention::State;
use crate::model::cluster::ClusterState;
use crate::model::election::FLAP_SWITCHES;
use crate::model::lease::Verdict;
use crate::model::tree::{Tree, TreeId, TreeSource};

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
        let held = |frozen: &BTreeSet<String>,
                    lease_frozen: &BTreeSet<String>,
                    unjudged: &BTreeSet<(Kind, String)>| {
            frozen.contains(&key.2)
                || (key.0.judged_from_lease() && lease_frozen.contains(&key.2))
                || unjudged.contains(&(key.0, key.2.clone()))
        };
        held(&self.frozen, &self.lease_frozen, &self.unjudged)
            || self
                .parts
                .iter()
                .any(|p| held(&p.frozen, &p.lease_frozen, &p.unjudged))
    }
}

/// What one election tree shows the agent's alerts at an instant: a part
/// of a [`Reading`].
#[derive(Debug, Clone, Default)]
pub struct TreeReading {
    conditions: Vec<Condition>,
    frozen: BTreeSet<String>,
    lease_frozen: BTreeSet<String>,
    unjudged: BTreeSet<(Kind, String)>,
    /// When a condition of it can end with nothing changing but time (the
    /// soonest flapping to leave its window); `None`: never.
    until: Option<Instant>,
}

/// What a tree's part depends on besides time: the tree's stamp, the
/// ghost check's, and the flapping window it was counted within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    tree: u64,
    ghost: u64,
    flap_window: Duration,
}

/// The parts of one cluster's readings kept between readings, by tree:
/// a part is taken again only when its tree, the ghost check's verdicts
/// or the flapping window changed, or time alone can end one of its
/// conditions. So a reading of a million quiet elections walks none of
/// them. Owned by whoever reads (the alert pusher), not by the models.
#[derive(Debug, Default)]
pub struct ReadingCache {
    trees: HashMap<TreeId, (Stamp, Arc<TreeReading>)>,
}

impl ClusterState {
    /// The conditions of this cluster's configured elections at `now`,
    /// flapping counted within `flap_window` (the deployment's rule's).
    /// Discovered elections never page (their rule twin excludes them).
    /// Trees whose part in `cache` still holds are not walked.
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
        // Stamps are never reused: a tree or tracker a reload replaced
        // cannot match a part taken of its predecessor.
        let ghost = self.ghost().as_ref().map_or(0, |g| g.stamp());
        cache
            .trees
            .retain(|id, _| self.trees().iter().any(|t| t.id() == *id));
        for tree in self.trees() {
            if tree.source() == TreeSource::Discovered || tree.as_elections().is_none() {
                continue;
            }
            let stamp = Stamp {
                tree: tree.stamp(),
                ghost,
                flap_window,
            };
            let kept = cache
                .trees
                .get(&tree.id())
                .filter(|(s, part)| *s == stamp && part.until.is_none_or(|until| now < until));
            let part = match kept {
                Some((_, part)) => part.clone(),
                None => {
                    let part = Arc::new(self.tree_reading(tree, now, flap_window));
                    cache.trees.insert(tree.id(), (stamp, part.clone()));
                    part
                }
            };
            reading.conditions.extend(part.conditions.iter().cloned());
            reading.parts.push(part);
        }
        reading
    }

    /// One election tree's part of [`ClusterState::alert_reading`]: a walk
    /// over its elections.
    fn tree_reading(&self, tree: &Tree, now: Instant, flap_window: Duration) -> TreeReading {
        let mut part = TreeReading::default();
        let Some(elections) = tree.as_elections() else {
            return part;
        };
        if !tree.synced() {
            part.frozen = elections.elections().map(|(p, _)| p.to_owned()).collect();
            return part;
        }
        let conditions = &mut part.conditions;
        let mut lease_conditions = Vec::new();
        for (path, election) in elections.elections() {
            let own_hold = elections.spec().no_master_for;
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
                _ if self.ghost_unjudged(election) => {
                    part.unjudged.insert((Kind::GhostMaster, path.to_owned()));
                }
                _ => {}
            }
            let duplicates = election.duplicate_identities();
            if duplicates > 0 {
                push(Kind::DuplicateIdentity, None, duplicates as u64);
            }
            if election.switches_within(flap_window, now) >= FLAP_SWITCHES {
                push(Kind::MasterFlapping, None, 0);
                // Past what an Instant holds: taken again at every reading.
                let ends = election.flapping_ends(flap_window).unwrap_or(now);
                part.until = Some(part.until.map_or(ends, |u| u.min(ends)));
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
            let Some(lease) = elections.spec().lease.as_ref() else {
                continue;
            };
            if !elections.lease_book().is_some_and(|b| b.fresh()) {
                part.lease_frozen.insert(path.to_owned());
                continue;
            }
            let kind = match elections.lease_verdict(path, election) {
                Some(Verdict::SplitBrain) => (Kind::SplitBrain, lease.split_brain_for),
                Some(Verdict::Expired) => (Kind::LeaseExpired, lease.expired_for),
                Some(Verdict::Unconfirmed) => {
                    part.unjudged.insert((Kind::SplitBrain, path.to_owned()));
                    continue;
                }
                Some(_) => continue,
                // A master the last reading cannot judge (it took over
                // after the reading, it is unnamed, its row unusable):
                // no evidence either way, so what fires stays. Without
                // a master there is no second master to speak of.
                None if election.master().is_some() => {
                    part.lease_frozen.insert(path.to_owned());
                    continue;
                }
                None => continue,
            };
            lease_conditions.push(Condition {
                kind: kind.0,
                election: path.to_owned(),
                since: None,
                value: 0,
                hold: Some(kind.1),
            });
        }
        part.conditions.extend(lease_conditions);
        part
    }
}
