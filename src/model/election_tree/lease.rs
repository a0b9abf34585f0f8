//! The lease table's readings, judged per election (see
//! [`crate::model::lease`]): verdicts for the outputs, timeline entries
//! when a verdict changes, and the new master's first lease write as
//! handover evidence.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::super::election::Election;
use super::super::journal::Since;
use super::super::lease::{
    Failure, LeaseBook, LeaseReading, LeaseRow, LeaseSpec, RowAt, Verdict, ZkSide, confirmed, judge,
};
use super::super::timeline::What;
use super::{ElectionTree, Entry, Now};

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

    /// The lease row of election `path` as of the last reading.
    pub fn lease_row(&self, path: &str) -> Option<RowAt<'_>> {
        let spec = self.spec.lease.as_ref()?;
        let table = self.lease.as_deref()?.last.as_ref()?;
        let row = table.rows.get(&*spec.key.of(path))?;
        Some(RowAt {
            holder: &row.holder,
            remaining: table.remaining(row),
            heartbeat_age: table.heartbeat_age(row),
        })
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

    /// A lease query gave `reading`, sent at `now`. With `judge_now` false
    /// (the tree does not reflect ZooKeeper now) the reading is kept, but
    /// no verdict is noted and no handover ends on it.
    ///
    /// Under the cluster's write lock, and costing what changed: after a
    /// reading of every row each election is judged (one hash lookup
    /// each); after a reading of the rows written lately, only the
    /// elections those rows belong to, those whose lease ran out since, and
    /// those ZooKeeper changed since (the journal). The readers of the tree
    /// are told of the elections whose verdict changed, and of everything
    /// only when the source starts or stops giving readings.
    pub fn lease_succeeded(&mut self, reading: LeaseReading, now: Now, judge_now: bool) {
        let (Some(spec), Some(mut book)) = (self.spec.lease.clone(), self.lease.take()) else {
            return;
        };
        let was_fresh = book.fresh();
        let was_complete = book.last.as_ref().map(LeaseReading::complete);
        let rows = book.succeeded(reading);
        let ran_out = book.ran_out();
        let table = book.last.as_mut().expect("a reading was just taken");
        let whole = rows.is_none() || was_complete != Some(table.complete());
        // Which elections to judge: `None` for all of them.
        let mut judge = self.lease_targets(&spec, table, rows.as_deref(), &ran_out);
        book.unmatched = table.unmatched();
        if !judge_now {
            // Judged again in full once the tree reflects ZooKeeper.
            book.cursor = None;
            self.lease = Some(book);
            if !was_fresh {
                self.restart_journal();
            }
            return;
        }
        // The elections ZooKeeper changed since the last judging: judged
        // again, and told to the readers whatever their verdict (a reader
        // may have read one against the last reading since).
        let moved: Option<Vec<Box<str>>> = match self.journal.since(book.cursor) {
            Since::Changed(keys) => Some(keys.into_iter().map(Box::from).collect()),
            Since::Everything => None,
        };
        match (&mut judge, &moved) {
            (Some(paths), Some(moved)) if !whole && was_fresh => {
                paths.extend(moved.iter().cloned())
            }
            _ => judge = None,
        }
        let agreed = book.agreed;
        let mut changed = moved.clone().unwrap_or_default();
        let any_agrees = self.judge_leases(&mut book, judge.as_ref(), agreed, now, &mut changed);
        if any_agrees && !agreed {
            // From now on a lease held by another identity is split brain,
            // not unconfirmed: those verdicts change at this reading.
            book.agreed = true;
            let unconfirmed: BTreeSet<Box<str>> = book
                .verdicts
                .iter()
                .filter(|(_, v)| **v == Verdict::Unconfirmed)
                .map(|(p, _)| p.clone())
                .collect();
            self.judge_leases(&mut book, Some(&unconfirmed), true, now, &mut changed);
        }
        self.lease = Some(book);
        if was_fresh && moved.is_some() {
            for path in &changed {
                self.journal.touched(path);
            }
        } else {
            // The per-election lease readings appear again, or which
            // elections moved since the last judging is not known.
            self.restart_journal();
        }
        if let Some(book) = self.lease.as_deref_mut() {
            book.cursor = Some(self.journal.cursor());
        }
    }

    /// The elections a reading brought rows of (`rows`: their keys, or
    /// `None` for a reading of every row) or whose leases ran out, with
    /// their rows marked matched; `None` for every election (the matches
    /// found anew).
    fn lease_targets(
        &self,
        spec: &LeaseSpec,
        table: &mut LeaseReading,
        rows: Option<&[Arc<str>]>,
        ran_out: &[Arc<str>],
    ) -> Option<BTreeSet<Box<str>>> {
        let Some(keys) = rows else {
            table.unmatch_all();
            for path in self.elections.keys() {
                table.mark_matched(&spec.key.of(path));
            }
            return None;
        };
        let mut paths = BTreeSet::new();
        let mut walk: HashSet<&str> = HashSet::new();
        for key in keys.iter().chain(ran_out) {
            match spec.paths.path(key) {
                Some(path) if self.elections.contains_key(path.as_str()) => {
                    table.mark_matched(key);
                    paths.insert(path.into_boxed_str());
                }
                Some(_) => {}
                None => {
                    walk.insert(key);
                }
            }
        }
        if !walk.is_empty() {
            for path in self.elections.keys() {
                let key = spec.key.of(path);
                if walk.contains(&*key) {
                    table.mark_matched(&key);
                    paths.insert(path.clone());
                }
            }
        }
        Some(paths)
    }

    /// Judges the elections `paths` (every election for `None`) against
    /// the book's table with `agreed` as the set's confirmation; notes each
    /// verdict, a change in the timeline and in `changed`, and ends the
    /// handovers the new master's first lease write completes. True when
    /// some election agrees.
    fn judge_leases(
        &mut self,
        book: &mut LeaseBook,
        paths: Option<&BTreeSet<Box<str>>>,
        agreed: bool,
        now: Now,
        changed: &mut Vec<Box<str>>,
    ) -> bool {
        let Some(spec) = self.spec.lease.as_ref() else {
            return false;
        };
        let Some(table) = book.last.as_ref() else {
            return false;
        };
        let mut judging = Judging {
            events: &mut self.events,
            verdicts: &mut book.verdicts,
            agreed,
            changed,
        };
        let mut any_agrees = false;
        let mut one = |judging: &mut Judging, path: &str, entry: &mut Entry| {
            let key = spec.key.of(path);
            let row = table.rows.get(&*key);
            let verdict = if row.is_none() && table.unjudged.contains(&*key) {
                None
            } else {
                judging.judge(path, &entry.election, row, table)
            };
            judging.note(path, verdict);
            any_agrees |= verdict == Some(Verdict::Agrees);
            if let (Some(Verdict::Agrees), Some(row), Some(handover)) = (
                verdict,
                row,
                entry.handover.as_deref_mut().filter(|h| h.done().is_none()),
            ) {
                let age = Duration::try_from_secs_f64(table.heartbeat_age(row)).unwrap_or_default();
                let write = now.mono.checked_sub(age).unwrap_or(now.mono);
                let took = handover.finish(write, now.wall);
                self.handovers.observe(took.as_secs_f64());
            }
        };
        match paths {
            None => {
                for (path, entry) in self.elections.iter_mut() {
                    one(&mut judging, path, entry);
                }
                // Elections gone since: their verdicts go with them.
                let gone: Vec<Box<str>> = judging
                    .verdicts
                    .keys()
                    .filter(|p| !self.elections.contains_key(&***p))
                    .cloned()
                    .collect();
                for path in gone {
                    judging.note(&path, None);
                }
            }
            Some(paths) => {
                for path in paths {
                    match self.elections.get_mut(&**path) {
                        Some(entry) => one(&mut judging, path, entry),
                        None => judging.note(path, None),
                    }
                }
            }
        }
        any_agrees
    }

    /// A lease query failed; true when the failure is new (log it).
    pub fn lease_failed(&mut self, why: Failure, message: String, now: Now) -> bool {
        let Some(book) = self.lease.as_deref_mut() else {
            return false;
        };
        let was_fresh = book.fresh();
        let new = book.failed(why, message, now.wall);
        if was_fresh {
            // The per-election lease readings go until it reads again.
            self.restart_journal();
        }
        new
    }
}

/// One reading's judging: the verdicts (each election's last), the
/// timeline entries, the elections whose verdict changed.
struct Judging<'a> {
    events: &'a mut Vec<(String, What)>,
    verdicts: &'a mut std::collections::HashMap<Box<str>, Verdict>,
    /// Whether the set had agreed before (see `confirmed`).
    agreed: bool,
    changed: &'a mut Vec<Box<str>>,
}

impl Judging<'_> {
    /// Judges one election against `row` (its row in `reading`): a new
    /// verdict becomes a timeline entry.
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
        let was = self.verdicts.get(path).copied();
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
        Some(verdict)
    }

    /// Keeps `verdict` as election `path`'s; a change is noted for the
    /// tree's readers.
    fn note(&mut self, path: &str, verdict: Option<Verdict>) {
        let was = match verdict {
            Some(v) => match self.verdicts.get_mut(path) {
                Some(kept) => Some(std::mem::replace(kept, v)),
                None => {
                    self.verdicts.insert(Box::from(path), v);
                    None
                }
            },
            None => self.verdicts.remove(path),
        };
        if was != verdict {
            self.changed.push(Box::from(path));
        }
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
