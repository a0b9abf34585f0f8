//! What an instant of the models shows the agent's alerts: the conditions
//! true now, and the alerts the reading can neither start nor end.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::{Key, Kind};
use crate::model::attention::State;
use crate::model::cluster::ClusterState;
use crate::model::election::FLAP_SWITCHES;
use crate::model::lease::Verdict;
use crate::model::tree::TreeSource;

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
}

impl Reading {
    /// Whether `key`'s alert must stay as it is.
    pub(super) fn holds_still(&self, key: &Key) -> bool {
        self.frozen.contains(&key.2)
            || (key.0.from_lease() && self.lease_frozen.contains(&key.2))
            || self.unjudged.contains(&(key.0, key.2.clone()))
    }
}

impl ClusterState {
    /// The conditions of this cluster's configured elections at `now`,
    /// flapping counted within `flap_window` (the deployment's rule's).
    /// Discovered elections never page (their rule twin excludes them).
    pub fn alert_reading(&self, now: Instant, flap_window: Duration) -> Reading {
        let mut reading = Reading {
            fresh: self.session.is_connected(),
            ..Reading::default()
        };
        if !reading.fresh {
            return reading;
        }
        let conditions = &mut reading.conditions;
        let mut lease_conditions = Vec::new();
        let mut lease_frozen = BTreeSet::new();
        let mut unjudged = BTreeSet::new();
        for tree in &self.trees {
            if tree.source() == TreeSource::Discovered {
                continue;
            }
            let Some(elections) = tree.as_elections() else {
                continue;
            };
            if !tree.synced() {
                reading
                    .frozen
                    .extend(elections.elections().map(|(p, _)| p.to_owned()));
                continue;
            }
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
                        unjudged.insert((Kind::GhostMaster, path.to_owned()));
                    }
                    _ => {}
                }
                let duplicates = election.duplicate_identities();
                if duplicates > 0 {
                    push(Kind::DuplicateIdentity, None, duplicates as u64);
                }
                if election.switches_within(flap_window, now) >= FLAP_SWITCHES {
                    push(Kind::MasterFlapping, None, 0);
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
                    lease_frozen.insert(path.to_owned());
                    continue;
                }
                let kind = match elections.lease_verdict(path, election) {
                    Some(Verdict::SplitBrain) => (Kind::SplitBrain, lease.split_brain_for),
                    Some(Verdict::Expired) => (Kind::LeaseExpired, lease.expired_for),
                    Some(Verdict::Unconfirmed) => {
                        unjudged.insert((Kind::SplitBrain, path.to_owned()));
                        continue;
                    }
                    Some(_) => continue,
                    // A master the last reading cannot judge (it took over
                    // after the reading, it is unnamed, its row unusable):
                    // no evidence either way, so what fires stays. Without
                    // a master there is no second master to speak of.
                    None if election.master().is_some() => {
                        lease_frozen.insert(path.to_owned());
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
        }
        reading.conditions.extend(lease_conditions);
        reading.lease_frozen = lease_frozen;
        reading.unjudged.extend(unjudged);
        reading
    }
}
