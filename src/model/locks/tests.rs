use super::*;
use proptest::prelude::*;
use std::time::SystemTime;

fn node(name: &str) -> ChildNode {
    ChildNode {
        name: name.into(),
        data: Vec::new(),
        ephemeral_owner: 7,
        ctime_ms: 0,
    }
}

fn at(base: Instant, secs: u64) -> Now {
    Now {
        mono: base + Duration::from_secs(secs),
        wall: SystemTime::UNIX_EPOCH,
    }
}

const KAZOO: &str = "7c2e1f3a9b1d__lock__";

#[test]
fn the_lowest_holds_a_released_lock_is_normal_and_holds_are_timed() {
    let t = Instant::now();
    let mut tree = LockTree::new(LockSpec::default());
    let a = format!("{KAZOO}0000000003");
    let b = format!("{KAZOO}0000000004");
    tree.apply_listing(
        vec![("/locks/r".into(), vec![node(&b), node(&a)])],
        at(t, 0),
        false,
    );
    let lock = tree.lock("/locks/r").unwrap();
    assert_eq!(
        (lock.holders(), lock.waiters(), lock.acquisitions()),
        (1, 1, 0)
    );
    assert_eq!(lock.hold(at(t, 5).mono), Some(Duration::from_secs(5)));
    // The holder releases: the waiter acquires.
    tree.child_deleted("/locks/r", &a, at(t, 10));
    let lock = tree.lock("/locks/r").unwrap();
    assert_eq!(
        (lock.holders(), lock.waiters(), lock.acquisitions()),
        (1, 0, 1)
    );
    assert_eq!(
        tree.hold_histogram().count(),
        0,
        "the hold found by the listing ended, but its start was not seen"
    );
    // Released entirely: not held, nobody waits, nothing is wrong.
    tree.child_deleted("/locks/r", &b, at(t, 12));
    let lock = tree.lock("/locks/r").unwrap();
    assert!(!lock.held());
    assert_eq!((lock.holders(), lock.waiters()), (0, 0));
    assert_eq!(tree.hold_histogram().count(), 1);
    assert_eq!(tree.hold_histogram().sum(), 2.0, "held from 10 s to 12 s");
}

#[test]
fn readers_ahead_of_the_first_writer_hold_together() {
    let t = Instant::now();
    let mut tree = LockTree::new(LockSpec::default());
    let names = [
        "__rlock__0000000001",
        "_c_x-__READ__0000000002",
        "__wlock__0000000003",
        "__rlock__0000000004",
    ];
    tree.apply_listing(
        vec![("/rw".into(), names.iter().map(|n| node(n)).collect())],
        at(t, 0),
        false,
    );
    let lock = tree.lock("/rw").unwrap();
    assert_eq!((lock.holders(), lock.waiters()), (2, 2));
    tree.child_deleted("/rw", names[0], at(t, 1));
    tree.child_deleted("/rw", names[1], at(t, 2));
    let lock = tree.lock("/rw").unwrap();
    assert_eq!((lock.holders(), lock.waiters()), (1, 1), "the writer alone");
    tree.child_deleted("/rw", names[2], at(t, 3));
    assert_eq!(tree.lock("/rw").unwrap().holders(), 1, "then the reader");
}

#[test]
fn recipe_names_are_recognised() {
    assert!(lock_named("7c2e__lock__0000000001"));
    assert!(lock_named("_c_5b3c-lock-0000000001"));
    assert!(lock_named("_c_5b3c-__READ__0000000001"));
    assert!(!lock_named("instance_0000000001"));
    assert!(!lock_named("_c_5b3c-latch-0000000001"));
    assert_eq!(Mode::of("x__WRIT__0000000001"), Mode::Write);
}

proptest! {
    /// Whatever the order of arrivals and departures, an exclusive lock
    /// has at most one holder, a holder whenever anyone contends, and
    /// every hold that started while watched is counted once.
    #[test]
    fn an_exclusive_lock_has_one_holder_and_counts_every_hold(
        ops in prop::collection::vec((any::<bool>(), 0usize..6), 1..80),
    ) {
        let t = Instant::now();
        let mut tree = LockTree::new(LockSpec::default());
        tree.apply_listing(vec![("/l".into(), vec![])], at(t, 0), false);
        let mut seq = 0;
        let mut live: Vec<String> = Vec::new();
        let mut holds = 0u64;
        let mut holder: Option<String> = None;
        for (i, (join, pick)) in ops.into_iter().enumerate() {
            let now = at(t, i as u64 + 1);
            if join || live.is_empty() {
                seq += 1;
                let name = format!("{KAZOO}{seq:010}");
                live.push(name.clone());
                tree.child_upserted("/l", node(&name), now);
            } else {
                let name = live.remove(pick % live.len());
                tree.child_deleted("/l", &name, now);
            }
            let lowest = live.first().cloned();
            if lowest.is_some() && lowest != holder {
                holds += 1;
            }
            holder = lowest;
            let lock = tree.lock("/l").unwrap();
            prop_assert_eq!(lock.holders(), usize::from(holder.is_some()));
            prop_assert_eq!(lock.waiters(), live.len().saturating_sub(1));
            prop_assert_eq!(lock.acquisitions(), holds);
        }
    }
}

#[test]
fn a_hold_past_max_hold_is_told_once_when_due_and_an_ended_one_never() {
    let t = Instant::now();
    let mut tree = LockTree::new(LockSpec {
        max_hold: Some(Duration::from_secs(60)),
    });
    let (a, b) = (format!("{KAZOO}0000000001"), format!("{KAZOO}0000000002"));
    let (c, d) = (format!("{KAZOO}0000000003"), format!("{KAZOO}0000000004"));
    tree.apply_listing(
        vec![("/locks/x".into(), vec![node(&a), node(&b)])],
        at(t, 0),
        false,
    );
    tree.child_upserted("/locks/y", node(&c), at(t, 30));
    let _ = tree.take_events();
    // Nothing due: nothing told, and the soonest is the first hold's.
    tree.note_long_holds(at(t, 59).mono);
    assert!(tree.take_events().is_empty());
    let first = tree.next_long_hold().unwrap();
    assert!(
        first > at(t, 60).mono && first <= at(t, 61).mono,
        "{first:?}"
    );

    // `a` ends before its turn; `b`, holding from 40 s, is timed anew.
    tree.child_deleted("/locks/x", &a, at(t, 40));
    let _ = tree.take_events();
    assert!(tree.next_long_hold().unwrap() > at(t, 90).mono);
    // `/locks/y` is held past 60 s at 91 s: told once, and only it.
    tree.note_long_holds(at(t, 91).mono);
    let told: Vec<String> = tree.take_events().into_iter().map(|(p, _)| p).collect();
    assert_eq!(told, vec!["/locks/y".to_owned()]);
    tree.note_long_holds(at(t, 95).mono);
    assert!(tree.take_events().is_empty(), "told once");
    assert!(
        tree.next_long_hold().unwrap() > at(t, 100).mono,
        "`b` is next"
    );

    // A lock deleted whole takes its holds' turns with it.
    tree.parent_deleted("/locks/x", at(t, 96));
    assert_eq!(tree.next_long_hold(), None);
    tree.child_upserted("/locks/z", node(&d), at(t, 97));
    let _ = tree.take_events();
    tree.note_long_holds(at(t, 200).mono);
    match tree.take_events().as_slice() {
        [(path, What::LockHeldLong { holder, held })] => {
            assert_eq!(
                (path.as_str(), holder.node.as_str()),
                ("/locks/z", d.as_str())
            );
            assert_eq!(*held, Duration::from_secs(103));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_max_hold_nothing_is_timed() {
    let t = Instant::now();
    let mut tree = LockTree::new(LockSpec::default());
    tree.child_upserted("/locks/x", node(&format!("{KAZOO}0000000001")), at(t, 0));
    assert_eq!(tree.next_long_hold(), None);
    tree.note_long_holds(at(t, 10_000).mono);
    assert!(
        !tree
            .take_events()
            .iter()
            .any(|(_, w)| matches!(w, What::LockHeldLong { .. }))
    );
}
