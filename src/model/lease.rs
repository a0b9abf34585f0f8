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

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};

/// An election set's lease settings the model needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseSpec {
    /// How an election's row key follows from its path.
    pub key: LeaseKey,
    /// How long split brain must hold before it alerts (the rule's `for:`).
    pub split_brain_for: Duration,
    /// How long a master's expired lease must hold before it alerts.
    pub expired_for: Duration,
}

/// How an election's lease key follows from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseKey {
    /// The election node's own name (`/wechat/bots/bot_1234` → `bot_1234`).
    Name,
    /// The election's whole path.
    Path,
    /// What the glob's `*` segments matched, joined by `/`: the segment
    /// positions (0 for the first below `/`). `/flink/*/leader/latch` →
    /// the cluster id; `/apps/*/bots/*` → `app1/bot_7`.
    Capture(Box<[usize]>),
}

impl LeaseKey {
    pub fn of<'a>(&self, election: &'a str) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        match self {
            LeaseKey::Name => Cow::Borrowed(election.rsplit('/').next().unwrap_or(election)),
            LeaseKey::Path => Cow::Borrowed(election),
            LeaseKey::Capture(at) => {
                let segments: Vec<&str> = election.trim_start_matches('/').split('/').collect();
                let mut parts = at.iter().filter_map(|&i| segments.get(i).copied());
                match at.len() {
                    1 => Cow::Borrowed(parts.next().unwrap_or("")),
                    _ => Cow::Owned(parts.collect::<Vec<_>>().join("/")),
                }
            }
        }
    }
}

/// One usable lease row, as the database computed it at the reading.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseRow {
    /// Who holds the lease, cleaned and cut like an identity.
    pub holder: String,
    /// `lease_until - now()`: negative once expired.
    pub remaining: f64,
    /// `now() - last_seen`: how long ago the holder last wrote.
    pub heartbeat_age: f64,
    /// Whether a watched election has this row's key (set when the
    /// reading is taken up).
    pub matched: bool,
}

/// Why a row was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reject {
    /// A column was NULL or not convertible.
    Null,
    /// The key was longer than any election key the agent keeps.
    TooLong,
    /// Two rows had the same key: neither is the lease.
    Duplicate,
    /// `last_seen` lies in the database's future: the application writes
    /// in another time zone than the agent reads (see `time_zone`).
    Future,
    /// Past the row cap: not read.
    OverCap,
}

impl Reject {
    pub const ALL: [Reject; 5] = [
        Reject::Null,
        Reject::TooLong,
        Reject::Duplicate,
        Reject::Future,
        Reject::OverCap,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Reject::Null => "null",
            Reject::TooLong => "too_long",
            Reject::Duplicate => "duplicate",
            Reject::Future => "future",
            Reject::OverCap => "over_cap",
        }
    }
}

/// How far in the future `last_seen` may lie before the row is not
/// believed: the query's own latency and the databases' timestamp
/// rounding stay well below it.
pub const FUTURE_TOLERANCE: f64 = 1.0;

/// One successful query of a lease table.
#[derive(Debug, Clone, Default)]
pub struct LeaseReading {
    /// When the query was sent (wall clock of the agent); the database's
    /// `now()` lies after it, so `started - heartbeat_age` is no later than
    /// the holder's last write.
    pub started: Option<SystemTime>,
    /// The same moment on the agent's monotonic clock, which the
    /// election models keep their periods on.
    pub started_mono: Option<Instant>,
    /// How long the query took.
    pub took: Duration,
    /// Usable rows by key.
    pub rows: HashMap<Box<str>, LeaseRow>,
    /// Rows not used, by reason.
    pub rejected: BTreeMap<Reject, u64>,
    /// Keys whose rows could not be used (several rows, a NULL or a
    /// future `last_seen`): not absent, and not judged.
    pub unjudged: std::collections::HashSet<Box<str>>,
}

impl LeaseReading {
    /// A reading started at `started` (wall clock).
    pub fn new(started: SystemTime) -> Self {
        Self {
            started: Some(started),
            ..Self::default()
        }
    }

    /// A reading started at `now`.
    pub fn at(now: super::now::Now) -> Self {
        Self {
            started: Some(now.wall),
            started_mono: Some(now.mono),
            ..Self::default()
        }
    }

    /// The wall-clock time of monotonic instant `at`, by the pair of
    /// clocks the reading started with.
    pub fn wall_of(&self, at: Instant) -> Option<SystemTime> {
        let (mono, wall) = (self.started_mono?, self.started?);
        Some(match mono.checked_duration_since(at) {
            Some(ago) => wall.checked_sub(ago).unwrap_or(wall),
            None => wall + at.saturating_duration_since(mono),
        })
    }

    /// Whether the reading saw every row: a key missing from a capped
    /// reading may simply not have been read.
    pub fn complete(&self) -> bool {
        !self.rejected.contains_key(&Reject::OverCap)
    }

    pub fn reject(&mut self, why: Reject) {
        *self.rejected.entry(why).or_default() += 1;
    }

    /// Adds one row as the database returned it; each `None` is a NULL.
    /// The key is kept as given (the caller cut it to its limit and says
    /// whether it was longer); the holder is cleaned like an identity.
    pub fn add(
        &mut self,
        key: Option<(String, bool)>,
        holder: Option<String>,
        remaining: Option<f64>,
        heartbeat_age: Option<f64>,
    ) {
        let Some((key, cut)) = key else {
            return self.reject(Reject::Null);
        };
        if cut {
            return self.reject(Reject::TooLong);
        }
        let key: Box<str> = key.into();
        let holder = holder.map(|h| super::candidate::clean_identity(&h));
        let (Some(holder), Some(remaining), Some(age)) = (holder, remaining, heartbeat_age) else {
            return self.unusable(key, Reject::Null);
        };
        if !remaining.is_finite() || !age.is_finite() || holder.is_empty() {
            return self.unusable(key, Reject::Null);
        }
        if age < -FUTURE_TOLERANCE {
            return self.unusable(key, Reject::Future);
        }
        if self.unjudged.contains(&key) {
            return self.reject(Reject::Duplicate);
        }
        let row = LeaseRow {
            holder,
            remaining,
            heartbeat_age: age.max(0.0),
            matched: false,
        };
        if self.rows.insert(key.clone(), row).is_some() {
            self.rows.remove(&key);
            self.unjudged.insert(key);
            // Both rows go: the first was counted as used.
            *self.rejected.entry(Reject::Duplicate).or_default() += 2;
        }
    }

    /// A row of `key` that cannot be used: the key is present, so its
    /// election is not judged (neither by this row nor as having none).
    fn unusable(&mut self, key: Box<str>, why: Reject) {
        self.reject(why);
        if self.rows.remove(&key).is_some() {
            // An earlier usable row of the same key: a duplicate after all.
            self.reject(Reject::Duplicate);
        }
        self.unjudged.insert(key);
    }
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
            let unexpired = row.remaining > 0.0;
            Some(match (row.holder == identity, unexpired) {
                (true, true) => Verdict::Agrees,
                (true, false) => Verdict::Expired,
                (false, false) => Verdict::NotTaken,
                (false, true) if wrote_after(started, row.heartbeat_age, since) => {
                    Verdict::SplitBrain
                }
                (false, true) => Verdict::HandingOver,
            })
        }
        ZkSide::Masterless { since } => {
            let row = row?;
            (row.remaining > 0.0 && wrote_after(started, row.heartbeat_age, since))
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
}

impl LeaseBook {
    /// Whether the last attempt gave a reading: only then may a lease
    /// alert fire or resolve.
    pub fn fresh(&self) -> bool {
        self.last.is_some() && self.failing.is_none()
    }

    /// Takes a reading.
    pub fn succeeded(&mut self, reading: LeaseReading) {
        self.readings += 1;
        self.failing = None;
        self.last = Some(reading);
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

    /// The election's row in the last reading.
    pub fn row(&self, key: &str) -> Option<&LeaseRow> {
        self.last.as_ref()?.rows.get(key)
    }
}

#[cfg(test)]
mod tests;
