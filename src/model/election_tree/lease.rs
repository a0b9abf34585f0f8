//! The lease table's readings, judged per election (see
//! [`crate::model::lease`]): verdicts for the outputs, timeline entries
//! when a verdict changes, and the new master's first lease write as
//! handover evidence.

use std::time::Duration;

use super::super::election::Election;
use super::super::lease::{
    Failure, LeaseBook, LeaseReading, LeaseRow, Verdict, ZkSide, confirmed, judge,
};
use super::super::timeline::What;
use super::{ElectionTree, Now};

/// ZooKeeper's side of `election` for the judgement.
fn zk_side(
    election: &Election,
    masterless_since: Option<std::time::SystemTime>,
) -> Option<ZkSide<'_>> {
    match election.master() {
        Some(m) => Some(ZkSide::Master {
            identity: m.identity,
            since: m.since,
        }),
        None => masterless_since.map(|since| ZkSide::Masterless { since }),
    }
}

impl ElectionTree {
    /// The lease source's state; `None` when the set reads no lease.
    pub fn lease_book(&self) -> Option<&LeaseBook> {
        self.lease.as_deref()
    }

    /// The lease row of election `path` at the last reading.
    pub fn lease_row(&self, path: &str) -> Option<&LeaseRow> {
        let spec = self.spec.lease.as_ref()?;
        self.lease.as_deref()?.row(&spec.key.of(path))
    }

    /// What the last reading says of election `path` against its master
    /// now; `None` when it cannot tell (no reading, one older than the
    /// master, an unnamed master, a key whose rows could not be used).
    pub fn lease_verdict(&self, path: &str, election: &Election) -> Option<Verdict> {
        let spec = self.spec.lease.as_ref()?;
        let book = self.lease.as_deref()?;
        let reading = book.last.as_ref()?;
        let key = spec.key.of(path);
        let key = &*key;
        if reading.unjudged.contains(key) {
            return None;
        }
        let masterless = election
            .masterless_since()
            .and_then(|since| reading.wall_of(since));
        let side = zk_side(election, masterless)?;
        judge(side, reading.rows.get(key), reading).map(|v| confirmed(v, book.agreed))
    }

    /// The verdict of election `path` while the lease source reads: what
    /// the outputs show (a source that fails shows nothing, not its last
    /// verdicts as if they were current).
    pub fn fresh_lease_verdict(&self, path: &str, election: &Election) -> Option<Verdict> {
        if !self.lease.as_deref()?.fresh() {
            return None;
        }
        self.lease_verdict(path, election)
    }

    /// A lease query gave `reading`, sent at `now`. With `judge` false
    /// (the tree does not reflect ZooKeeper now) the reading is kept, but
    /// no verdict is noted and no handover ends on it.
    ///
    /// One pass over the elections, under the cluster's write lock: each
    /// election's row is found by hash, its last verdict moved (not
    /// copied) into the new map, and only a pending handover does more.
    pub fn lease_succeeded(&mut self, reading: LeaseReading, now: Now, judge_now: bool) {
        let (Some(spec), Some(mut book)) = (self.spec.lease.clone(), self.lease.take()) else {
            return;
        };
        book.succeeded(reading);
        let reading = book.last.as_mut().expect("set above");
        let mut judging = Judging {
            events: &mut self.events,
            verdicts: std::collections::HashMap::with_capacity(if judge_now {
                self.elections.len()
            } else {
                0
            }),
            before: std::mem::take(&mut book.verdicts),
            // As of the readings before this one: an election agreeing now
            // confirms the set from the next reading on.
            agreed: book.agreed,
        };
        let mut any_agrees = false;
        for (path, entry) in self.elections.iter_mut() {
            let key = spec.key.of(path);
            let key = &*key;
            // Marked whether judged or not: a row some election has is
            // not unmatched.
            let present = reading
                .rows
                .get_mut(key)
                .map(|r| r.matched = true)
                .is_some();
            if !judge_now || (!present && reading.unjudged.contains(key)) {
                continue;
            }
            let reading = &*reading;
            let row = if present { reading.rows.get(key) } else { None };
            let verdict = judging.judge(path, &entry.election, row, reading);
            any_agrees |= verdict == Some(Verdict::Agrees);
            if let (Some(Verdict::Agrees), Some(row), Some(handover)) = (
                verdict,
                row,
                entry.handover.as_deref_mut().filter(|h| h.done().is_none()),
            ) {
                let age = Duration::try_from_secs_f64(row.heartbeat_age).unwrap_or_default();
                let write = now.mono.checked_sub(age).unwrap_or(now.mono);
                let took = handover.finish(write, now.wall);
                self.handovers.observe(took.as_secs_f64());
            }
        }
        book.unmatched = reading.rows.values().filter(|r| !r.matched).count() as u64;
        if judge_now {
            book.verdicts = judging.verdicts;
            book.agreed |= any_agrees;
        } else {
            book.verdicts = judging.before;
        }
        self.lease = Some(book);
        self.restart_journal();
    }

    /// A lease query failed; true when the failure is new (log it).
    pub fn lease_failed(&mut self, why: Failure, message: String, now: Now) -> bool {
        let new = self
            .lease
            .as_deref_mut()
            .is_some_and(|book| book.failed(why, message, now.wall));
        self.restart_journal();
        new
    }
}

/// One reading's judging: the verdicts so far, the last reading's (their
/// keys moved over as elections are judged), the timeline entries.
struct Judging<'a> {
    events: &'a mut Vec<(String, What)>,
    verdicts: std::collections::HashMap<Box<str>, Verdict>,
    before: std::collections::HashMap<Box<str>, Verdict>,
    /// Whether the set had agreed before this reading (see `confirmed`).
    agreed: bool,
}

impl Judging<'_> {
    /// Judges one election against `row` (its row in `reading`): the
    /// verdict is kept, a change becomes a timeline entry.
    fn judge(
        &mut self,
        path: &str,
        election: &Election,
        row: Option<&LeaseRow>,
        reading: &LeaseReading,
    ) -> Option<Verdict> {
        let masterless = election
            .masterless_since()
            .and_then(|since| reading.wall_of(since));
        let verdict = confirmed(
            judge(zk_side(election, masterless)?, row, reading)?,
            self.agreed,
        );
        let (name, was) = match self.before.remove_entry(path) {
            Some((name, was)) => (name, Some(was)),
            None => (Box::from(path), None),
        };
        if noteworthy(was, verdict) {
            self.events.push((
                path.to_owned(),
                What::LeaseVerdict {
                    verdict,
                    master: election.master().map(|m| m.identity.to_owned()),
                    holder: row.map(|r| r.holder.clone()),
                },
            ));
        }
        self.verdicts.insert(name, verdict);
        Some(verdict)
    }
}

/// Whether a verdict change belongs in the timeline: every change, and a
/// first verdict that needs attention (a set's first reading does not list
/// each agreeing or unleased election).
fn noteworthy(before: Option<Verdict>, now: Verdict) -> bool {
    match before {
        Some(b) => b != now,
        None => matches!(
            now,
            Verdict::SplitBrain | Verdict::Expired | Verdict::NoCandidates
        ),
    }
}
