//! The lease table's readings, judged per election (see
//! [`crate::model::lease`]): verdicts for the outputs, timeline entries
//! when a verdict changes, and the new master's first lease write as
//! handover evidence.

use std::time::Duration;

use super::super::election::Election;
use super::super::lease::{Failure, LeaseBook, LeaseReading, LeaseRow, Verdict, ZkSide, judge};
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
        self.lease.as_deref()?.row(spec.key.of(path))
    }

    /// What the last reading says of election `path` against its master
    /// now; `None` when it cannot tell (no reading, one older than the
    /// master, an unnamed master, a key whose rows could not be used).
    pub fn lease_verdict(&self, path: &str, election: &Election) -> Option<Verdict> {
        let spec = self.spec.lease.as_ref()?;
        let book = self.lease.as_deref()?;
        let reading = book.last.as_ref()?;
        let key = spec.key.of(path);
        if reading.unjudged.contains(key) {
            return None;
        }
        let masterless = election
            .masterless_since()
            .and_then(|since| reading.wall_of(since));
        let side = zk_side(election, masterless)?;
        judge(side, reading.rows.get(key), reading)
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
    pub fn lease_succeeded(&mut self, reading: LeaseReading, now: Now, judge: bool) {
        if self.lease.is_none() {
            return;
        }
        let Some(spec) = self.spec.lease.clone() else {
            return;
        };
        let mut book = self.lease.take().unwrap_or_default();
        let keys: std::collections::HashSet<&str> =
            self.elections.keys().map(|p| spec.key.of(p)).collect();
        book.unmatched = reading
            .rows
            .keys()
            .filter(|k| !keys.contains(&***k))
            .count() as u64;
        drop(keys);
        book.succeeded(reading);
        let mut entries = Vec::new();
        let mut leased = Vec::new();
        let mut verdicts = std::collections::HashMap::with_capacity(book.verdicts.len());
        self.lease = Some(book);
        if !judge {
            return;
        }
        for (path, election) in self.elections() {
            let Some(verdict) = self.lease_verdict(path, election) else {
                continue;
            };
            let book = self.lease.as_deref().expect("set above");
            let before = book.verdicts.get(path).copied();
            let row = book.row(spec.key.of(path));
            if verdict == Verdict::Agrees
                && let Some(row) = row
            {
                let age = Duration::try_from_secs_f64(row.heartbeat_age).unwrap_or_default();
                leased.push((
                    path.to_owned(),
                    now.mono.checked_sub(age).unwrap_or(now.mono),
                ));
            }
            if noteworthy(before, verdict) {
                entries.push((
                    path.to_owned(),
                    What::LeaseVerdict {
                        verdict,
                        master: election.master().map(|m| m.identity.to_owned()),
                        holder: row.map(|r| r.holder.clone()),
                    },
                ));
            }
            verdicts.insert(Box::from(path), verdict);
        }
        if let Some(book) = self.lease.as_deref_mut() {
            book.verdicts = verdicts;
        }
        for (path, write) in leased {
            self.handover_leased(&path, write, now.wall);
        }
        self.events.extend(entries);
    }

    /// A lease query failed; true when the failure is new (log it).
    pub fn lease_failed(&mut self, why: Failure, message: String, now: Now) -> bool {
        self.lease
            .as_deref_mut()
            .is_some_and(|book| book.failed(why, message, now.wall))
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
