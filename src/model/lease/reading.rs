//! One reading of the lease table, and the table as the readings built
//! it: rows on one clock, so that a reading of what changed lays over the
//! rows an earlier one read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// One usable lease row. Its two times are kept on the table's clock
/// (microseconds from the start of the reading that began the table), as
/// the database gave them relative to its `now()`: a row read a minute ago
/// and not written since is, at the latest reading, exactly a minute
/// nearer its end and a minute older, whatever the clocks of the hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseRow {
    /// Who holds the lease, cleaned and cut like an identity.
    pub holder: String,
    /// When the lease ends (`lease_until`), table clock.
    until: i64,
    /// When the holder last wrote (`last_seen`), table clock.
    written: i64,
    /// The pass over every row that last read it (or during which a
    /// reading of what changed brought it): a row older than the pass
    /// that just ended is gone from the table.
    pass: u32,
    /// Whether a watched election has this row's key (set when the
    /// reading is taken up).
    pub matched: bool,
}

/// A lease row as of the latest reading, for the outputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowAt<'a> {
    /// Who holds the lease.
    pub holder: &'a str,
    /// `lease_until - now()`: negative once expired.
    pub remaining: f64,
    /// `now() - last_seen`: how long ago the holder last wrote.
    pub heartbeat_age: f64,
}

/// Seconds as table-clock microseconds, bounded so that no date a
/// database can hold overflows.
#[expect(
    clippy::cast_possible_truncation,
    reason = "clamped to ±1e18, well within i64; NaN never reaches here"
)]
fn micros(secs: f64) -> i64 {
    (secs * 1e6).clamp(-1e18, 1e18) as i64
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
    /// Whether the query read every row; otherwise only the rows written
    /// lately, which the model lays over the rows it has.
    pub full: bool,
    /// For one page of a pass over every row (read in key order, a page
    /// per query, so that no query reads the whole table): whether it is
    /// the first and whether the last.
    pub page: Option<Page>,
    /// Rows the latest query returned: every row at a reading of every
    /// row, those written lately otherwise.
    pub returned: u64,
    /// Rows no watched election has (see [`LeaseRow::matched`]). Kept
    /// exactly by every change of a row; lowered with `saturating_sub`
    /// all the same, so that no table a database holds can ever panic the
    /// agent through it.
    unmatched: u64,
    /// The latest reading's start on the table clock (see [`LeaseRow`]).
    clock: i64,
    /// Usable rows by key.
    pub rows: HashMap<Arc<str>, LeaseRow>,
    /// Rows not used, by reason, at the latest reading of every row.
    pub rejected: BTreeMap<Reject, u64>,
    /// Keys whose rows could not be used (several rows, a NULL or a
    /// future `last_seen`): not absent, and not judged.
    pub unjudged: HashSet<Box<str>>,
    /// Keys the latest reading of every row found in several rows: a
    /// later reading of what changed, which sees only one of them, does
    /// not settle them.
    duplicated: HashSet<Box<str>>,
    /// The pass over every row under way (or the last one).
    pass: u32,
    /// Whether a pass over every row has ended: until then a missing row
    /// may just not have been read yet.
    passed: bool,
    /// What the pass under way found so far: rejected rows, duplicated
    /// and unusable keys, rows read; the table takes them when it ends.
    pass_rejected: BTreeMap<Reject, u64>,
    pass_duplicated: HashSet<Box<str>>,
    pass_unjudged: HashSet<Box<str>>,
    pass_rows: u64,
}

/// Where a page lies in its pass over every row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Page {
    pub first: bool,
    pub last: bool,
}

impl LeaseReading {
    /// A reading of every row started at `started` (wall clock).
    pub fn new(started: SystemTime) -> Self {
        Self {
            started: Some(started),
            full: true,
            passed: true,
            ..Self::default()
        }
    }

    /// A reading of every row started at `now`.
    pub fn at(now: crate::model::now::Now) -> Self {
        Self {
            started: Some(now.wall),
            started_mono: Some(now.mono),
            full: true,
            passed: true,
            ..Self::default()
        }
    }

    /// A page of a pass over every row, started at `now`.
    pub fn page_at(now: crate::model::now::Now, page: Page) -> Self {
        Self {
            full: false,
            passed: false,
            page: Some(page),
            ..Self::at(now)
        }
    }

    /// A reading of the rows written lately, started at `now`.
    pub fn changed_at(now: crate::model::now::Now) -> Self {
        Self {
            full: false,
            passed: false,
            ..Self::at(now)
        }
    }

    /// `lease_until - now()` of `row` at the latest reading: negative once
    /// expired.
    pub fn remaining(&self, row: &LeaseRow) -> f64 {
        (row.until - self.clock) as f64 / 1e6
    }

    /// `now() - last_seen` of `row` at the latest reading: how long ago
    /// the holder last wrote.
    pub fn heartbeat_age(&self, row: &LeaseRow) -> f64 {
        ((self.clock - row.written) as f64 / 1e6).max(0.0)
    }

    /// Whether `row`'s lease is unexpired at the latest reading.
    pub fn unexpired(&self, row: &LeaseRow) -> bool {
        row.until > self.clock
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
        self.passed && !self.rejected.contains_key(&Reject::OverCap)
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
        let holder = holder.map(|h| crate::model::candidate::clean_identity(&h));
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
            self.duplicated.insert(key);
            return self.reject(Reject::Duplicate);
        }
        let row = LeaseRow {
            holder,
            until: self.clock + micros(remaining),
            written: self.clock - micros(age.max(0.0)),
            pass: 0,
            matched: false,
        };
        if self.rows.insert(Arc::from(&*key), row).is_none() {
            self.unmatched += 1;
        } else {
            // The row just put in, never matched, goes.
            self.rows.remove(&*key);
            self.unmatched = self.unmatched.saturating_sub(1);
            self.duplicated.insert(key.clone());
            self.unjudged.insert(key);
            // Both rows go: the first was counted as used.
            *self.rejected.entry(Reject::Duplicate).or_default() += 2;
        }
    }

    /// Lays `newer`, a reading of the rows written since this one (or of
    /// every row), over this one; returns the keys whose rows it brought,
    /// or `None` when it read every row (everything may have changed).
    pub fn take_up(&mut self, mut newer: LeaseReading) -> Option<Vec<Arc<str>>> {
        let page = newer.page;
        if (newer.full && page.is_none()) || (self.started.is_none() && page.is_none()) {
            newer.passed = newer.full;
            *self = newer;
            return None;
        }
        if page.is_some_and(|p| p.first) {
            self.pass = self.pass.wrapping_add(1);
            self.pass_rejected.clear();
            self.pass_duplicated.clear();
            self.pass_unjudged.clear();
            self.pass_rows = 0;
        }
        if page.is_some() {
            for (why, n) in &newer.rejected {
                *self.pass_rejected.entry(*why).or_default() += n;
            }
            self.pass_duplicated
                .extend(newer.duplicated.iter().cloned());
            self.pass_rows += newer.returned;
        }
        self.pass_unjudged.extend(newer.unjudged.iter().cloned());
        // Where the newer reading's start lies on this table's clock.
        let since = match (self.started_mono, newer.started_mono) {
            (Some(old), Some(new)) => new.saturating_duration_since(old),
            _ => match (self.started, newer.started) {
                (Some(old), Some(new)) => new.duration_since(old).unwrap_or_default(),
                _ => Duration::ZERO,
            },
        };
        let offset = self.clock + micros(since.as_secs_f64()) - newer.clock;
        let mut changed = Vec::with_capacity(newer.rows.len() + newer.unjudged.len());
        for (key, mut row) in newer.rows.drain() {
            if self.duplicated.contains(&*key) || self.pass_duplicated.contains(&*key) {
                continue;
            }
            row.until += offset;
            row.written += offset;
            row.pass = self.pass;
            match self.rows.get(&key) {
                Some(old) => row.matched = old.matched,
                None => self.unmatched += 1,
            }
            self.unjudged.remove(&*key);
            self.pass_unjudged.remove(&*key);
            changed.push(key.clone());
            self.rows.insert(key, row);
        }
        for key in newer.unjudged.drain() {
            let key: Arc<str> = Arc::from(&*key);
            if self.rows.remove(&key).is_some_and(|r| !r.matched) {
                self.unmatched = self.unmatched.saturating_sub(1);
            }
            self.unjudged.insert(Box::from(&*key));
            changed.push(key);
        }
        if page.is_none() {
            self.duplicated.extend(newer.duplicated);
        }
        self.started = newer.started;
        self.started_mono = newer.started_mono;
        self.took = newer.took;
        self.returned = newer.returned;
        self.clock = newer.clock + offset;
        if page.is_some_and(|p| p.last) {
            self.end_pass();
            return None;
        }
        Some(changed)
    }

    /// The pass over every row ended: the rows it did not meet (nor a
    /// reading of what changed since it began) are gone from the table,
    /// and what it found unusable is what the table has.
    fn end_pass(&mut self) {
        let pass = self.pass;
        let mut gone = 0;
        self.rows.retain(|_, r| {
            let kept = r.pass == pass;
            gone += u64::from(!kept && !r.matched);
            kept
        });
        self.unmatched = self.unmatched.saturating_sub(gone);
        self.rejected = std::mem::take(&mut self.pass_rejected);
        self.duplicated = std::mem::take(&mut self.pass_duplicated);
        self.unjudged = std::mem::take(&mut self.pass_unjudged);
        for key in &self.duplicated {
            if self.rows.remove(&**key).is_some_and(|r| !r.matched) {
                self.unmatched = self.unmatched.saturating_sub(1);
            }
        }
        self.passed = true;
    }

    /// Rows the pass under way has read so far.
    pub fn pass_rows(&self) -> u64 {
        self.pass_rows
    }

    /// A watched election has `key`: its row (if any) is matched.
    pub fn mark_matched(&mut self, key: &str) {
        if let Some(row) = self.rows.get_mut(key).filter(|r| !r.matched) {
            row.matched = true;
            self.unmatched = self.unmatched.saturating_sub(1);
        }
    }

    /// Forgets every row's match, before the matches are found anew.
    pub fn unmatch_all(&mut self) {
        self.rows.values_mut().for_each(|r| r.matched = false);
        self.unmatched = self.rows.len() as u64;
    }

    /// Usable rows no watched election has.
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// The table clock of the latest reading.
    pub fn clock(&self) -> i64 {
        self.clock
    }

    /// When `row`'s lease ends, table clock.
    pub fn until(row: &LeaseRow) -> i64 {
        row.until
    }

    /// A row of `key` that cannot be used: the key is present, so its
    /// election is not judged (neither by this row nor as having none).
    fn unusable(&mut self, key: Box<str>, why: Reject) {
        self.reject(why);
        if let Some(gone) = self.rows.remove(&*key) {
            self.unmatched = self.unmatched.saturating_sub(u64::from(!gone.matched));
            // An earlier usable row of the same key: a duplicate after all.
            self.reject(Reject::Duplicate);
            self.duplicated.insert(key.clone());
        }
        self.unjudged.insert(key);
    }
}
