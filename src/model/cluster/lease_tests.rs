//! The lease guard judging only what changed gives what judging every
//! election against a reading of every row gives.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};

use proptest::prelude::*;

use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::ElectionSpec;
use crate::model::journal::Since;
use crate::model::lease::{KeyPaths, LeaseKey, LeaseReading, LeaseSpec, Verdict};
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
    /// Seconds pass.
    Tick(u64),
    /// Both agents read the table.
    Read,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..ELECTIONS, 0..NAMES.len()).prop_map(|(e, n)| Step::Join(e, n)),
        1 => (0..ELECTIONS).prop_map(Step::Leave),
        3 => (0..KEYS, 0..NAMES.len(), -5i64..25).prop_map(|(k, n, d)| Step::Write(k, n, d)),
        1 => (0..KEYS).prop_map(Step::Null),
        2 => (1u64..8).prop_map(Step::Tick),
        2 => Just(Step::Read),
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

fn reading(
    rows: &BTreeMap<String, Row>,
    now: crate::model::Now,
    t: u64,
    since: Option<u64>,
) -> LeaseReading {
    let mut r = match since {
        None => LeaseReading::at(now),
        Some(_) => LeaseReading::changed_at(now),
    };
    for (key, (holder, until, seen)) in rows {
        if since.is_some_and(|s| *seen < s) {
            continue;
        }
        r.add(
            Some((key.clone(), false)),
            holder.map(str::to_owned),
            Some((*until - i64::try_from(t).unwrap()) as f64),
            Some((t - seen) as f64),
        );
    }
    r
}

fn verdicts(c: &ClusterState) -> HashMap<String, Option<Verdict>> {
    let tree = &c.trees[0];
    tree.as_elections()
        .unwrap()
        .elections()
        .map(|(p, e)| (p.to_owned(), tree.lease_verdict(p, e)))
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn judging_what_changed_gives_what_judging_everything_gives(
        steps in proptest::collection::vec(step(), 1..60),
        walk in any::<bool>(),
    ) {
        let pattern = TreePattern::parse("/b/*").unwrap();
        let paths = if walk {
            KeyPaths::Walk
        } else {
            KeyPaths::of(&LeaseKey::Name, pattern.segments(), None)
        };
        // `changed`: readings of what changed between readings of every
        // row; `full`: every reading reads every row.
        let (mut changed, mut full) = (agent(paths), agent(KeyPaths::Walk));
        let t0 = Instant::now();
        let at = |s: u64| crate::model::Now {
            mono: t0 + Duration::from_secs(s),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s),
        };
        let id = changed.trees[0].id();
        let mut seq = 1u64;
        let mut queues: Vec<Vec<(String, usize)>> = vec![Vec::new(); ELECTIONS];
        let listing: Vec<(String, Vec<ChildNode>)> = (0..ELECTIONS)
            .map(|e| (format!("/b/bot_{e}"), Vec::new()))
            .collect();
        for c in [&mut changed, &mut full] {
            c.session_started(1, Duration::from_secs(10), at(0).wall);
            c.apply_listing(id, listing.clone(), at(0));
        }
        let mut rows: BTreeMap<String, Row> = BTreeMap::new();
        let mut t = 1u64;
        let mut last_read: Option<u64> = None;
        let mut cache = Default::default();
        for step in steps {
            match step {
                Step::Join(e, n) => {
                    let child = ChildNode {
                        name: format!("n_{seq:010}"),
                        data: NAMES[n].as_bytes().to_vec(),
                        ephemeral_owner: seq.cast_signed(),
                        ctime_ms: 1_000_000_000,
                    };
                    seq += 1;
                    queues[e].push((child.name.clone(), n));
                    for c in [&mut changed, &mut full] {
                        c.child_upserted(id, &format!("/b/bot_{e}"), child.clone(), at(t));
                    }
                }
                Step::Leave(e) => {
                    if !queues[e].is_empty() {
                        let (name, _) = queues[e].remove(0);
                        for c in [&mut changed, &mut full] {
                            c.child_deleted(id, &format!("/b/bot_{e}"), &name, at(t));
                        }
                    }
                }
                Step::Write(k, n, d) => {
                    rows.insert(format!("bot_{k}"), (Some(NAMES[n]), i64::try_from(t).unwrap() + d, t));
                }
                Step::Null(k) => {
                    rows.insert(format!("bot_{k}"), (None, i64::try_from(t).unwrap() + 10, t));
                }
                Step::Tick(s) => t += s,
                Step::Read => {
                    let tree = changed.trees[0].as_elections().unwrap();
                    let cursor = tree.journal().cursor();
                    let before = verdicts(&changed);
                    // What changed since the last reading, with a margin
                    // (rows read twice are harmless).
                    let since = last_read.map(|l| l.saturating_sub(1));
                    changed.lease_succeeded(id, reading(&rows, at(t), t, since), at(t));
                    full.lease_succeeded(id, reading(&rows, at(t), t, None), at(t));
                    last_read = Some(t);
                    let after = verdicts(&changed);
                    prop_assert_eq!(&after, &verdicts(&full));
                    let (a, b) = (
                        changed.trees[0].as_elections().unwrap(),
                        full.trees[0].as_elections().unwrap(),
                    );
                    let (ba, bb) = (a.lease_book().unwrap(), b.lease_book().unwrap());
                    prop_assert_eq!(&ba.verdicts, &bb.verdicts);
                    prop_assert_eq!(ba.unmatched, bb.unmatched);
                    for (path, _) in a.elections() {
                        let (ra, rb) = (a.lease_row(path), b.lease_row(path));
                        prop_assert_eq!(ra.map(|r| r.holder), rb.map(|r| r.holder));
                        if let (Some(ra), Some(rb)) = (ra, rb) {
                            prop_assert!((ra.remaining - rb.remaining).abs() < 1e-3);
                            prop_assert!((ra.heartbeat_age - rb.heartbeat_age).abs() < 1e-3);
                        }
                    }
                    // Every election whose verdict changed is in the
                    // journal for the tree's readers.
                    if let Since::Changed(keys) = a.journal().since(Some(cursor)) {
                        for (path, v) in &after {
                            if before.get(path) != Some(v) {
                                prop_assert!(keys.contains(&path.as_str()), "{path}: {:?} -> {v:?} not told", before.get(path));
                            }
                        }
                    }
                    // The alert reading kept across readings is the one
                    // read afresh.
                    let kept = changed.alert_reading(at(t).mono, super::tests::FLAP, &mut cache);
                    let afresh = changed.alert_reading(at(t).mono, super::tests::FLAP, &mut Default::default());
                    prop_assert_eq!(conditions(&kept), conditions(&afresh));
                }
            }
        }
    }
}
