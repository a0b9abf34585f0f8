//! The application's lease, judged against ZooKeeper's master.
//!
//! ZooKeeper says who *should* be master; a single-active application
//! often keeps, beside it, a lease row in its own database that the master
//! renews as a heartbeat (`key, holder, lease_until, last_seen`). During a
//! partition the old master may keep renewing while ZooKeeper already
//! elected another: two instances act. This module compares one reading of
//! the lease table (taken by `sources::lease`) with an election's master.
//!
//! Only evidence counts:
//! - a reading is judged against a master only when it was taken after that
//!   master took over (an older reading says nothing about the new master);
//! - split brain needs the other holder's *own write after the switch*:
//!   its `last_seen` later than the moment the agent saw the new master
//!   take over. An old master whose unexpired lease simply runs out, as in
//!   every normal handover, is `handing_over`, not split brain;
//! - times are the database's (`lease_until - now()`, `now() - last_seen`
//!   computed in one query), so no clock of another host enters;
//! - a failed or timed-out query is no reading: the last verdicts are
//!   neither extended nor cleared (see [`LeaseBook::fresh`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::journal::Cursor;

mod key;
mod reading;

pub use key::{KeyPaths, LeaseKey};
pub use reading::{FUTURE_TOLERANCE, LeaseReading, LeaseRow, Page, Reject, RowAt};

/// An election set's lease settings the model needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseSpec {
    /// How an election's row key follows from its path.
    pub key: LeaseKey,
    /// How long split brain must hold before it alerts (the rule's `for:`).
    pub split_brain_for: Duration,
    /// How long a master's expired lease must hold before it alerts.
    pub expired_for: Duration,
    /// How an election's path follows from its key, for the rows a
    /// reading of what changed brings.
    pub paths: KeyPaths,
}

/// What the lease says of one election, against ZooKeeper's master.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// The master holds an unexpired lease.
    Agrees,
    /// Another identity holds an unexpired lease *and wrote it after
    /// ZooKeeper's master took over*: two instances act.
    SplitBrain,
    /// Another identity's lease has not yet expired but it last wrote
    /// before the master took over: a handover in progress.
    HandingOver,
    /// The master's own lease expired: the application stopped its
    /// heartbeat behind a live ZooKeeper session.
    Expired,
    /// Another identity's lease expired and the master has not taken it.
    NotTaken,
    /// The master has no lease row (the reading saw every row).
    NoRow,
    /// An unexpired lease, written while the election had no candidates.
    NoCandidates,
    /// What would be split brain, while no election of the set has yet
    /// agreed: nothing shows that the table names instances as the
    /// election names its candidates (a holder written as a host name where
    /// the candidates carry a device id would otherwise page for every
    /// election). See [`confirmed`].
    Unconfirmed,
}

impl Verdict {
    pub const ALL: [Verdict; 8] = [
        Verdict::Agrees,
        Verdict::SplitBrain,
        Verdict::HandingOver,
        Verdict::Expired,
        Verdict::NotTaken,
        Verdict::NoRow,
        Verdict::NoCandidates,
        Verdict::Unconfirmed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::SplitBrain => "split_brain",
            Verdict::HandingOver => "handing_over",
            Verdict::Expired => "expired",
            Verdict::NotTaken => "not_taken",
            Verdict::NoRow => "no_row",
            Verdict::NoCandidates => "no_candidates",
            Verdict::Unconfirmed => "unconfirmed",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// ZooKeeper's side of one election, as the judgement needs it.
#[derive(Debug, Clone, Copy)]
pub enum ZkSide<'a> {
    /// The master's identity (empty while unnamed) and since when it is
    /// master (agent wall clock; the node's ctime for a master found in
    /// place).
    Master {
        identity: &'a str,
        since: SystemTime,
    },
    /// No candidate, since this moment (agent wall clock).
    Masterless { since: SystemTime },
}

/// The verdict of `row` (the election's row in `reading`, if any) against
/// ZooKeeper's side; `None` when the reading cannot tell.
pub fn judge(zk: ZkSide<'_>, row: Option<&LeaseRow>, reading: &LeaseReading) -> Option<Verdict> {
    let started = reading.started?;
    match zk {
        ZkSide::Master { identity, since } => {
            if identity.is_empty() || started < since {
                return None;
            }
            let Some(row) = row else {
                return reading.complete().then_some(Verdict::NoRow);
            };
            let unexpired = reading.unexpired(row);
            Some(match (row.holder == identity, unexpired) {
                (true, true) => Verdict::Agrees,
                (true, false) => Verdict::Expired,
                (false, false) => Verdict::NotTaken,
                (false, true) if wrote_after(started, reading.heartbeat_age(row), since) => {
                    Verdict::SplitBrain
                }
                (false, true) => Verdict::HandingOver,
            })
        }
        ZkSide::Masterless { since } => {
            let row = row?;
            (reading.unexpired(row) && wrote_after(started, reading.heartbeat_age(row), since))
                .then_some(Verdict::NoCandidates)
        }
    }
}

/// Split brain only once the set has shown, by an election that agreed,
/// that its lease holders are named as its candidates are: without that,
/// another holder may just be the master written another way.
pub fn confirmed(verdict: Verdict, agreed: bool) -> Verdict {
    match verdict {
        Verdict::SplitBrain if !agreed => Verdict::Unconfirmed,
        v => v,
    }
}

/// Whether a write `age` seconds before the database's `now()` (which lies
/// after `started`) surely came after `since`: `started - age` is the
/// earliest the write can have been.
fn wrote_after(started: SystemTime, age: f64, since: SystemTime) -> bool {
    Duration::try_from_secs_f64(age)
        .ok()
        .and_then(|age| started.checked_sub(age))
        .is_some_and(|write| write > since)
}

/// Why a query gave no reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// The DSN or password file could not be read, or the DSN is invalid.
    Config,
    /// No connection (refused, TLS, authentication).
    Connect,
    /// The query failed (missing table or column, wrong types).
    Query,
    /// No answer within the timeout.
    Timeout,
}

impl Failure {
    pub const ALL: [Failure; 4] = [
        Failure::Config,
        Failure::Connect,
        Failure::Query,
        Failure::Timeout,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Failure::Config => "config",
            Failure::Connect => "connect",
            Failure::Query => "query",
            Failure::Timeout => "timeout",
        }
    }
}

/// One election set's lease source as the models hold it.
#[derive(Debug, Clone, Default)]
pub struct LeaseBook {
    /// The last successful reading.
    pub last: Option<LeaseReading>,
    /// Why the latest attempt failed, what the source said and since when
    /// it fails; `None` while the latest attempt succeeded.
    pub failing: Option<(Failure, String, SystemTime)>,
    /// Successful readings so far.
    pub readings: u64,
    /// Failed attempts so far, by reason.
    pub failures: BTreeMap<Failure, u64>,
    /// Rows of the last reading that match no election.
    pub unmatched: u64,
    /// The verdict of each election at the last reading, for the timeline.
    pub verdicts: HashMap<Box<str>, Verdict>,
    /// Whether any election of the set has agreed (its master holding its
    /// lease) at a reading: see [`confirmed`].
    pub agreed: bool,
    /// Where the judging of the last reading left the tree's journal: the
    /// elections changed since are judged at the next reading.
    pub cursor: Option<Cursor>,
    /// Unexpired rows by when they end (table clock), so that a reading
    /// judges the leases that ran out since the last one without looking
    /// at the others. An entry whose row was written since is stale and
    /// skipped; each reading of every row builds it anew.
    expiries: BinaryHeap<Reverse<(i64, Arc<str>)>>,
}

impl LeaseBook {
    /// Whether the last attempt gave a reading: only then may a lease
    /// alert fire or resolve.
    pub fn fresh(&self) -> bool {
        self.last.is_some() && self.failing.is_none()
    }

    /// Takes a reading: the keys whose rows it brought, or `None` when
    /// anything may have changed (a first reading, one of every row).
    pub fn succeeded(&mut self, reading: LeaseReading) -> Option<Vec<Arc<str>>> {
        self.readings += 1;
        self.failing = None;
        let changed = self.last.get_or_insert_default().take_up(reading);
        let last = self.last.as_ref().expect("set above");
        let due = |(key, row): (&Arc<str>, &LeaseRow)| {
            last.unexpired(row)
                .then(|| Reverse((LeaseReading::until(row), key.clone())))
        };
        match &changed {
            None => self.expiries = last.rows.iter().filter_map(due).collect(),
            Some(keys) => {
                let fresh = keys
                    .iter()
                    .filter_map(|k| last.rows.get_key_value(k))
                    .filter_map(due);
                self.expiries.extend(fresh);
            }
        }
        changed
    }

    /// The keys whose leases ran out by the latest reading since the last
    /// call (each lease once).
    pub fn ran_out(&mut self) -> Vec<Arc<str>> {
        let Some(last) = &self.last else {
            return Vec::new();
        };
        let mut out = Vec::new();
        while self
            .expiries
            .peek()
            .is_some_and(|Reverse((until, _))| *until <= last.clock())
        {
            let Some(Reverse((until, key))) = self.expiries.pop() else {
                break;
            };
            if last
                .rows
                .get(&key)
                .is_some_and(|r| LeaseReading::until(r) == until)
            {
                out.push(key);
            }
        }
        out
    }

    /// Records a failed attempt; true when it starts a failure or changes
    /// its reason (log it), false while it repeats.
    pub fn failed(&mut self, why: Failure, message: String, now: SystemTime) -> bool {
        *self.failures.entry(why).or_default() += 1;
        let new = self
            .failing
            .as_ref()
            .is_none_or(|(w, m, _)| *w != why || *m != message);
        let since = match &self.failing {
            Some((_, _, since)) => *since,
            None => now,
        };
        self.failing = Some((why, message, since));
        new
    }
}

#[cfg(test)]
mod tests;
