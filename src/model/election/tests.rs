use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn at(base: Instant, secs: u64) -> Now {
    Now {
        mono: base + Duration::from_secs(secs),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs),
    }
}

fn cand(name: &str, identity: &str) -> Candidate {
    Candidate {
        name: name.into(),
        sequence: crate::model::candidate::parse_sequence(name).unwrap(),
        identity: identity.into(),
        owner: 1,
        ctime: SystemTime::UNIX_EPOCH + Duration::from_secs(42),
    }
}

#[test]
fn start_up_counts_nothing_and_uses_ctime() {
    let t = Instant::now();
    let e = Election::new(
        [cand("b_0000000002", "dev-b"), cand("a_0000000003", "dev-a")],
        at(t, 0),
    );
    let m = e.master().unwrap();
    assert_eq!(m.node, "b_0000000002");
    assert_eq!(m.identity, "dev-b");
    assert_eq!(m.since, SystemTime::UNIX_EPOCH + Duration::from_secs(42));
    assert_eq!((e.changes(), e.joins(), e.leaves()), (0, 0, 0));
    assert_eq!(
        e.masterless_total(t + Duration::from_secs(9)),
        Duration::ZERO
    );
}

#[test]
fn order_is_by_sequence_not_by_name() {
    let t = Instant::now();
    let e = Election::new(
        [
            cand("zzzz-uuid__lock__0000000002", "z"),
            cand("aaaa-uuid__lock__0000000003", "a"),
            cand("_c_1234-latch-0000000004", "c"),
        ],
        at(t, 0),
    );
    assert_eq!(e.master().unwrap().identity, "z");
}

#[test]
fn master_leaving_is_one_switch_and_standby_leaving_is_none() {
    let t = Instant::now();
    let mut e = Election::new(
        [
            cand("c_0000000001", "a"),
            cand("c_0000000002", "b"),
            cand("c_0000000003", "c"),
        ],
        at(t, 0),
    );
    let o = e.leave("c_0000000002", 2, at(t, 1));
    assert!(!o.switched);
    let o = e.leave("c_0000000001", 1, at(t, 2));
    assert!(o.switched);
    assert_eq!(e.changes(), 1);
    let m = e.master().unwrap();
    assert_eq!(m.identity, "c");
    assert_eq!(m.since, at(t, 2).wall);
    assert_eq!((e.joins(), e.leaves()), (0, 2));
}

#[test]
fn same_identity_under_a_new_node_is_a_switch() {
    let t = Instant::now();
    let mut e = Election::new([cand("c_0000000001", "dev")], at(t, 0));
    e.leave("c_0000000001", 1, at(t, 1));
    e.join(cand("c_0000000002", "dev"), at(t, 2));
    assert_eq!(e.changes(), 1);
}

#[test]
fn masterless_time_accumulates_and_reports_periods() {
    let t = Instant::now();
    let mut e = Election::new([], at(t, 0));
    assert!(e.master().is_none());
    let o = e.join(cand("c_0000000001", "a"), at(t, 5));
    assert_eq!(o.masterless_ended, Some(Duration::from_secs(5)));
    assert!(
        !o.switched,
        "the first master of an election is not a switch"
    );
    e.leave("c_0000000001", 1, at(t, 10));
    assert_eq!(e.masterless_total(at(t, 13).mono), Duration::from_secs(8));
    let o = e.join(cand("c_0000000002", "b"), at(t, 14));
    assert_eq!(o.masterless_ended, Some(Duration::from_secs(4)));
    assert!(o.switched, "a new master after a gap is a switch");
    assert_eq!(e.masterless_total(at(t, 100).mono), Duration::from_secs(9));
}

#[test]
fn join_is_idempotent_and_updates_identity() {
    let t = Instant::now();
    let mut e = Election::new([cand("c_0000000001", "a")], at(t, 0));
    e.join(cand("c_0000000001", "a2"), at(t, 1));
    assert_eq!(e.joins(), 0);
    assert_eq!(e.master().unwrap().identity, "a2");
    e.leave("c_0000000009", 9, at(t, 1));
    assert_eq!(e.leaves(), 0);
}

#[test]
fn resync_counts_outage_changes_once() {
    let t = Instant::now();
    let mut e = Election::new(
        [cand("c_0000000001", "a"), cand("c_0000000002", "b")],
        at(t, 0),
    );
    // During the outage: 1 and 2 died, 3 and 4 came, 3 is master.
    let o = e.resync(
        [cand("c_0000000004", "d"), cand("c_0000000003", "c")],
        at(t, 30),
    );
    assert!(o.switched);
    assert_eq!((e.changes(), e.joins(), e.leaves()), (1, 2, 2));
    // A second identical resync changes nothing.
    let o = e.resync(
        [cand("c_0000000004", "d"), cand("c_0000000003", "c")],
        at(t, 31),
    );
    assert!(!o.switched);
    assert_eq!((e.changes(), e.joins(), e.leaves()), (1, 2, 2));
}

#[test]
fn duplicates_count_every_candidate_sharing_an_identity() {
    let t = Instant::now();
    let mut e = Election::new(
        [
            cand("c_0000000001", "a"),
            cand("c_0000000002", "a"),
            cand("c_0000000003", "b"),
        ],
        at(t, 0),
    );
    assert_eq!(e.duplicate_identities(), 2);
    e.join(cand("c_0000000004", "a"), at(t, 1));
    assert_eq!(e.duplicate_identities(), 3);
    e.join(cand("c_0000000003", "a"), at(t, 1)); // data change b -> a
    assert_eq!(e.duplicate_identities(), 4);
    e.leave("c_0000000001", 1, at(t, 2));
    e.leave("c_0000000002", 2, at(t, 2));
    e.leave("c_0000000003", 3, at(t, 2));
    assert_eq!(e.duplicate_identities(), 0);
}

#[test]
fn wrapped_negative_sequences_sort_first() {
    let t = Instant::now();
    let e = Election::new(
        [cand("c_2147483647", "old"), cand("c_-000000005", "wrapped")],
        at(t, 0),
    );
    assert_eq!(e.master().unwrap().identity, "wrapped");
}

#[derive(Debug, Clone)]
enum Op {
    Join(i32, u8),
    Leave(usize),
    Resync(Vec<(i32, u8)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<i32>(), 0u8..4).prop_map(|(s, p)| Op::Join(s, p)),
        3 => any::<usize>().prop_map(Op::Leave),
        1 => proptest::collection::vec((-50i32..50, 0u8..4), 0..5).prop_map(Op::Resync),
    ]
}

proptest! {
    /// For any sequence of joins, leaves and resyncs: the master is the
    /// lowest sequence, and changes equal the number of times the lowest
    /// node differed from the previous lowest one seen.
    #[test]
    fn master_is_min_and_changes_are_counted_exactly(ops in proptest::collection::vec(op(), 0..60)) {
        let t = Instant::now();
        let mut e = Election::new([], at(t, 0));
        let mut live: BTreeMap<(i32, String), ()> = BTreeMap::new();
        let mut last: Option<String> = None;
        let mut expected_changes = 0u64;
        for (i, op) in ops.into_iter().enumerate() {
            let now = at(t, i as u64 + 1);
            match op {
                Op::Join(seq, prefix) => {
                    let c = candidate(seq, prefix);
                    live.insert((c.sequence, c.name.clone()), ());
                    e.join(c, now);
                }
                Op::Leave(pick) => {
                    if live.is_empty() { continue; }
                    let key = live.keys().nth(pick % live.len()).unwrap().clone();
                    live.remove(&key);
                    e.leave(&key.1, key.0, now);
                }
                Op::Resync(set) => {
                    let cs: Vec<Candidate> = set.into_iter().map(|(s, p)| candidate(s, p)).collect();
                    live = cs.iter().map(|c| ((c.sequence, c.name.clone()), ())).collect();
                    e.resync(cs, now);
                }
            }
            let min = live.keys().next().cloned();
            if let Some((_, name)) = &min {
                if last.as_ref().is_some_and(|l| l != name) { expected_changes += 1; }
                last = Some(name.clone());
            }
            prop_assert_eq!(e.master().map(|m| (m.sequence, m.node.to_owned())), min);
            prop_assert_eq!(e.changes(), expected_changes);
            prop_assert_eq!(e.candidate_count(), live.len());
        }
    }
}

fn candidate(seq: i32, prefix: u8) -> Candidate {
    let seq = seq.max(i32::MIN + 1);
    Candidate {
        name: format!("p{prefix}_{seq:010}"),
        sequence: seq,
        identity: format!("id{}", seq.rem_euclid(3)),
        owner: 1,
        ctime: SystemTime::UNIX_EPOCH,
    }
}

#[test]
fn owner_named_candidates_are_named_in_place_and_duplicate_by_session() {
    let t = Instant::now();
    let owned = |name: &str, owner| Candidate {
        owner,
        ..cand(name, "")
    };
    // Two processes on one host, unnamed until a round lists them.
    let mut e = Election::new(
        [
            owned("_c_a-latch-0000000001", 10),
            owned("_c_b-latch-0000000002", 11),
        ],
        at(t, 0),
    )
    .named_by_owner();
    assert_eq!(e.master().unwrap().identity, "");
    assert_eq!(e.duplicate_identities(), 0, "unnamed is not a duplicate");
    let names = |o: i64| (o == 10 || o == 11).then_some("10.0.0.5");
    assert!(e.name_owners(names), "the master was named");
    assert_eq!(e.master().unwrap().identity, "10.0.0.5");
    assert_eq!(
        e.duplicate_identities(),
        0,
        "two sessions on one host are two processes"
    );
    assert!(!e.name_owners(names), "the same names again change nothing");
    assert_eq!(e.changes(), 0, "naming is not a switch");
    // One session holding two nodes is the zombie the count is for.
    e.join(owned("_c_c-latch-0000000003", 10), at(t, 1));
    assert_eq!(e.duplicate_identities(), 2);
    // A session no round knows stays unnamed; a known one is renamed.
    assert!(!e.name_owners(|o| (o == 11).then_some("10.0.0.6")));
    let ids: Vec<&str> = e.candidates().map(|(_, _, id)| id).collect();
    assert_eq!(ids, ["10.0.0.5", "10.0.0.6", ""]);
}
