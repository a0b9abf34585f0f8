//! The lease guard judging only what changed gives what judging every
//! election against a reading of every row gives.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};

use proptest::prelude::*;

use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::ElectionSpec;
use crate::model::journal::Since;
use crate::model::lease::{KeyPaths, LeaseKey, LeaseReading, LeaseSpec, Page, Verdict};
use crate::model::tree::{ChildNode, Tree, TreePattern};

const ELECTIONS: usize = 4;
/// Keys past the elections: rows no election has.
const KEYS: usize = 6;
const NAMES: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Step {
    /// A candidate named NAMES[1] joins election .0.
    Join(usize, usize),
    /// Election .0's master leaves.
    Leave(usize),
    /// Row .0 written by NAMES[.1], its lease for .2 seconds (negative:
    /// already ended).
    Write(usize, usize, i64),
    /// Row .0 written with a NULL holder.
    Null(usize),
    /// Row .0 deleted.
    Delete(usize),
    /// Seconds pass.
    Tick(u64),
    /// Both agents read the table; with .0 the first reads every row in
    /// pages of two rows (otherwise what changed).
    Read(bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..ELECTIONS, 0..NAMES.len()).prop_map(|(e, n)| Step::Join(e, n)),
        1 => (0..ELECTIONS).prop_map(Step::Leave),
        3 => (0..KEYS, 0..NAMES.len(), -5i64..25).prop_map(|(k, n, d)| Step::Write(k, n, d)),
        1 => (0..KEYS).prop_map(Step::Null),
        1 => (0..KEYS).prop_map(Step::Delete),
        2 => (1u64..8).prop_map(Step::Tick),
        3 => any::<bool>().prop_map(Step::Read),
    ]
}

/// One agent: an election set `/b/*` with a lease keyed by name.
fn agent(paths: KeyPaths) -> ClusterState {
    let mut spec = ElectionSpec::from(IdentityMode::Data);
    spec.lease = Some(LeaseSpec {
        paths,
        key: LeaseKey::Name,
        split_brain_for: Duration::ZERO,
        expired_for: Duration::ZERO,
    });
    ClusterState::new(
        "c".into(),
        vec![Tree::elections(TreePattern::parse("/b/*").unwrap(), spec)],
        false,
    )
}

/// A row as the application wrote it: holder (`None`: NULL), until and
/// last write, in seconds.
type Row = (Option<&'static str>, i64, u64);

/// What one query reads: every row, what changed since a time, or a
/// page of a pass (the keys in a range, and where the page lies).
enum Query {
    All,
    Since(u64),
    Page(std::ops::Range<usize>, Page),
}

fn reading(
    rows: &BTreeMap<String, Row>,
    now: crate::model::Now,
    t: u64,
    query: &Query,
) -> LeaseReading {
    let mut r = match query {
        Query::All => LeaseReading::at(now),
        Query::Since(_) => LeaseReading::changed_at(now),
        Query::Page(_, page) => LeaseReading::page_at(now, *page),
    };
    for (i, (key, (holder, until, seen))) in rows.iter().enumerate() {
        match query {
            Query::Since(s) if seen < s => continue,
            Query::Page(range, _) if !range.contains(&i) => continue,
            _ => {}
        }
        r.returned += 1;
        r.add(
            Some((key.clone(), false)),
            holder.map(str::to_owned),
            Some((*until - i64::try_from(t).unwrap()) as f64),
            Some((t - seen) as f64),
        );
    }
    r
}

/// Each election's verdict now (unconfirmed read as split brain when
/// `alike`).
fn verdicts(c: &ClusterState, alike: bool) -> HashMap<String, Option<Verdict>> {
    let tree = &c.trees[0];
    tree.as_elections()
        .unwrap()
        .elections()
        .map(|(p, e)| {
            (
                p.to_owned(),
                tree.lease_verdict(p, e).map(|v| same(v, alike)),
            )
        })
        .collect()
}

fn conditions(r: &crate::model::alerting::Reading) -> Vec<String> {
    let mut v: Vec<String> = r
        .conditions
        .iter()
        .map(|c| format!("{:?} {} {}", c.kind, c.election, c.value))
        .collect();
    v.sort();
    v
}

/// The two agents, the table and the clock of one case.
struct World {
    /// Readings of what changed between passes over every row.
    changed: ClusterState,
    /// Every reading reads every row.
    full: ClusterState,
    id: crate::model::tree::TreeId,
    t0: Instant,
    t: u64,
    seq: u64,
    queues: Vec<Vec<String>>,
    rows: BTreeMap<String, Row>,
    last_read: Option<u64>,
    /// A row deleted since the last pass: the two may differ until it.
    deleted: bool,
    /// A row ever deleted: a deleted row judged until the pass that sees
    /// it may have confirmed the set (`agreed`) where the other agent was
    /// never shown that, so unconfirmed and split brain compare alike.
    ever_deleted: bool,
    cache: crate::model::alerting::ReadingCache,
}

impl World {
    fn new(walk: bool) -> Self {
        let pattern = TreePattern::parse("/b/*").unwrap();
        let paths = if walk {
            KeyPaths::Walk
        } else {
            KeyPaths::of(&LeaseKey::Name, pattern.segments(), None)
        };
        let (mut changed, mut full) = (agent(paths), agent(KeyPaths::Walk));
        let id = changed.trees[0].id();
        let mut w = Self {
            changed: agent(KeyPaths::Walk),
            full: agent(KeyPaths::Walk),
            id,
            t0: Instant::now(),
            t: 1,
            seq: 1,
            queues: vec![Vec::new(); ELECTIONS],
            rows: BTreeMap::new(),
            last_read: None,
            deleted: false,
            ever_deleted: false,
            cache: Default::default(),
        };
        let listing: Vec<(String, Vec<ChildNode>)> = (0..ELECTIONS)
            .map(|e| (format!("/b/bot_{e}"), Vec::new()))
            .collect();
        for c in [&mut changed, &mut full] {
            c.session_started(1, Duration::from_secs(10), w.at(0).wall);
            c.apply_listing(id, listing.clone(), w.at(0));
        }
        (w.changed, w.full) = (changed, full);
        w
    }

    fn at(&self, s: u64) -> crate::model::Now {
        crate::model::Now {
            mono: self.t0 + Duration::from_secs(s),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s),
        }
    }

    fn step(&mut self, step: Step) -> Result<(), TestCaseError> {
        let (id, now, t) = (self.id, self.at(self.t), i64::try_from(self.t).unwrap());
        match step {
            Step::Join(e, n) => {
                let child = ChildNode {
                    name: format!("n_{:010}", self.seq),
                    data: NAMES[n].as_bytes().to_vec(),
                    ephemeral_owner: self.seq.cast_signed(),
                    ctime_ms: 1_000_000_000,
                };
                self.seq += 1;
                self.queues[e].push(child.name.clone());
                for c in [&mut self.changed, &mut self.full] {
                    c.child_upserted(id, &format!("/b/bot_{e}"), child.clone(), now);
                }
            }
            Step::Leave(e) if !self.queues[e].is_empty() => {
                let name = self.queues[e].remove(0);
                for c in [&mut self.changed, &mut self.full] {
                    c.child_deleted(id, &format!("/b/bot_{e}"), &name, now);
                }
            }
            Step::Leave(_) => {}
            Step::Write(k, n, d) => {
                self.rows
                    .insert(format!("bot_{k}"), (Some(NAMES[n]), t + d, self.t));
            }
            Step::Null(k) => {
                self.rows.insert(format!("bot_{k}"), (None, t + 10, self.t));
            }
            Step::Delete(k) => {
                let gone = self.rows.remove(&format!("bot_{k}")).is_some();
                self.deleted |= gone;
                self.ever_deleted |= gone;
            }
            Step::Tick(s) => self.t += s,
            Step::Read(paged) => return self.read(paged),
        }
        Ok(())
    }

    /// Both agents read the table at `t`: the first what changed since
    /// its last reading (with a margin: rows read twice are harmless),
    /// then, with `paged` or first, every row in pages of two, as the
    /// source does; the second every row at once.
    fn read(&mut self, paged: bool) -> Result<(), TestCaseError> {
        let (id, t, now) = (self.id, self.t, self.at(self.t));
        let cursor = self.changed.trees[0]
            .as_elections()
            .unwrap()
            .journal()
            .cursor();
        let before = verdicts(&self.changed, false);
        let since = self.last_read.map(|l| l.saturating_sub(1));
        if let Some(since) = since {
            let r = reading(&self.rows, now, t, &Query::Since(since));
            self.changed.lease_succeeded(id, r, now);
        }
        if paged || since.is_none() {
            let pages = self.rows.len().div_ceil(2).max(1);
            for p in 0..pages {
                let page = Page {
                    first: p == 0,
                    last: p + 1 == pages,
                };
                let r = reading(&self.rows, now, t, &Query::Page(2 * p..2 * p + 2, page));
                self.changed.lease_succeeded(id, r, now);
            }
            self.deleted = false;
        }
        let r = reading(&self.rows, now, t, &Query::All);
        self.full.lease_succeeded(id, r, now);
        self.last_read = Some(t);
        if self.deleted {
            return Ok(());
        }
        self.check(cursor, &before)
    }

    /// The two agents agree, every changed verdict reached the journal,
    /// and the kept alert reading is the one read afresh.
    fn check(
        &mut self,
        cursor: crate::model::journal::Cursor,
        before: &HashMap<String, Option<Verdict>>,
    ) -> Result<(), TestCaseError> {
        let alike = self.ever_deleted;
        prop_assert_eq!(verdicts(&self.changed, alike), verdicts(&self.full, alike));
        let (a, b) = (
            self.changed.trees[0].as_elections().unwrap(),
            self.full.trees[0].as_elections().unwrap(),
        );
        let (ba, bb) = (a.lease_book().unwrap(), b.lease_book().unwrap());
        let kept = |v: &HashMap<Box<str>, Verdict>| -> BTreeMap<String, Verdict> {
            v.iter()
                .map(|(p, v)| (p.to_string(), same(*v, alike)))
                .collect()
        };
        prop_assert_eq!(kept(&ba.verdicts), kept(&bb.verdicts));
        prop_assert_eq!(ba.unmatched, bb.unmatched);
        for (path, _) in a.elections() {
            let (ra, rb) = (a.lease_row(path), b.lease_row(path));
            prop_assert_eq!(ra.map(|r| r.holder), rb.map(|r| r.holder));
            if let (Some(ra), Some(rb)) = (ra, rb) {
                prop_assert!((ra.remaining - rb.remaining).abs() < 1e-3);
                prop_assert!((ra.heartbeat_age - rb.heartbeat_age).abs() < 1e-3);
            }
        }
        if let Since::Changed(keys) = a.journal().since(Some(cursor)) {
            for (path, v) in verdicts(&self.changed, false) {
                if before.get(&path) != Some(&v) {
                    prop_assert!(
                        keys.contains(&path.as_str()),
                        "{path}: {:?} -> {v:?} not told",
                        before.get(&path)
                    );
                }
            }
        }
        let now = self.at(self.t).mono;
        let kept = self
            .changed
            .alert_reading(now, super::tests::FLAP, &mut self.cache);
        let afresh = self
            .changed
            .alert_reading(now, super::tests::FLAP, &mut Default::default());
        prop_assert_eq!(conditions(&kept), conditions(&afresh));
        Ok(())
    }
}

/// `v`, with unconfirmed read as split brain when `alike`.
fn same(v: Verdict, alike: bool) -> Verdict {
    match v {
        Verdict::Unconfirmed if alike => Verdict::SplitBrain,
        v => v,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn judging_what_changed_gives_what_judging_everything_gives(
        steps in proptest::collection::vec(step(), 1..60),
        walk in any::<bool>(),
    ) {
        let mut world = World::new(walk);
        for step in steps {
            world.step(step)?;
        }
    }
}
