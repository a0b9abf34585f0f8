use super::*;
use proptest::prelude::*;

fn ms(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

fn at(base: Instant, t: u64) -> Now {
    Now {
        mono: ms(base, t),
        wall: SystemTime::UNIX_EPOCH + Duration::from_millis(t),
    }
}

fn conn(sid: i64, received: u64) -> Connection {
    Connection {
        address: "127.0.0.1:1".into(),
        session: Some(sid),
        received: Some(received),
        timeout_ms: Some(3000),
    }
}

/// A round of `connections` from `start` to `end` milliseconds.
fn observe(
    t: &mut SessionTracker,
    base: Instant,
    (start, end): (u64, u64),
    complete: bool,
    connections: &[Connection],
    owners: &[i64],
) {
    t.observe(
        Round {
            started: ms(base, start),
            finished: at(base, end),
            complete,
            connections,
            expiries: &[],
            dumped: true,
            dump_complete: false,
        },
        owners.iter().copied(),
    );
}

#[test]
fn disconnected_silent_and_back() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    assert!(!t.polled());
    observe(
        &mut t,
        t0,
        (0, 10),
        true,
        &[conn(1, 5), conn(2, 5)],
        &[1, 2, 3],
    );
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
    assert_eq!(
        t.liveness(3),
        Some(Liveness::Unknown(Unknown::Unconfirmed)),
        "an owner no member lists in one complete round may have been closed by its client"
    );
    // Session 1 keeps pinging; session 2 goes quiet; session 1 drops later.
    observe(
        &mut t,
        t0,
        (1000, 1010),
        true,
        &[conn(1, 6), conn(2, 5)],
        &[1, 2, 3],
    );
    assert_eq!(
        t.liveness(3),
        Some(Liveness::Disconnected { since: ms(t0, 10) }),
        "a second complete round misses it while it still owns a node: disconnected since the first"
    );
    assert_eq!(
        t.liveness(2),
        Some(Liveness::Connected),
        "quiet for under 2/3 of 3 s between the readings"
    );
    observe(
        &mut t,
        t0,
        (2020, 2030),
        true,
        &[conn(1, 7), conn(2, 5)],
        &[1, 2],
    );
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
    assert_eq!(
        t.liveness(2),
        Some(Liveness::Silent { since: ms(t0, 10) }),
        "the same count 2,010 ms apart: more than 2/3 of 3 s"
    );
    observe(&mut t, t0, (2500, 2510), true, &[conn(2, 9)], &[1, 2]);
    assert_eq!(t.liveness(2), Some(Liveness::Connected), "it spoke again");
    assert_eq!(t.liveness(1), Some(Liveness::Unknown(Unknown::Unconfirmed)));
    observe(&mut t, t0, (2700, 2710), true, &[conn(2, 10)], &[1, 2]);
    assert_eq!(
        t.liveness(1),
        Some(Liveness::Disconnected {
            since: ms(t0, 2510)
        })
    );
    observe(
        &mut t,
        t0,
        (3000, 3010),
        true,
        &[conn(1, 8), conn(2, 11)],
        &[1, 2],
    );
    assert_eq!(t.liveness(1), Some(Liveness::Connected), "reconnected");
}

#[test]
fn time_since_the_last_round_proves_nothing() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(&mut t, t0, (0, 10), true, &[conn(1, 5)], &[1]);
    // Rounds 5 s apart; the session's timeout is 3 s. Whatever the time
    // of asking, one reading is no evidence of silence.
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
    observe(&mut t, t0, (5000, 5010), true, &[conn(1, 9)], &[1]);
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
    // Only a span between a round's end and a later round's start counts:
    // 2,000 ms of it is not over 2/3 of 3 s, although the rounds'
    // ends are 2,100 ms apart.
    observe(&mut t, t0, (7010, 7110), true, &[conn(1, 9)], &[1]);
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
}

#[test]
fn incomplete_rounds_leave_unlisted_sessions_unknown() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(&mut t, t0, (0, 10), false, &[conn(1, 5)], &[1, 2]);
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
    assert_eq!(t.liveness(2), Some(Liveness::Unknown(Unknown::Unlisted)));
    // Session 1 moves to the member that does not answer.
    observe(&mut t, t0, (1000, 1010), false, &[], &[1, 2]);
    assert_eq!(t.liveness(1), Some(Liveness::Unknown(Unknown::Unlisted)));
    // An owner that appeared after the round began is not judged.
    observe(&mut t, t0, (2000, 2010), true, &[conn(1, 7)], &[1]);
    assert_eq!(t.liveness(4), None);
    assert_eq!(t.liveness(1), Some(Liveness::Connected));
}

#[test]
fn a_session_without_timeout_is_not_judged() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    let quiet = Connection {
        timeout_ms: None,
        ..conn(1, 5)
    };
    observe(
        &mut t,
        t0,
        (0, 10),
        true,
        std::slice::from_ref(&quiet),
        &[1],
    );
    observe(&mut t, t0, (60_000, 60_010), true, &[quiet], &[1]);
    assert_eq!(t.liveness(1), Some(Liveness::Unknown(Unknown::NoTimeout)));
}

#[test]
fn expiry_from_dump() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    let expiry = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
    t.observe(
        Round {
            started: t0,
            finished: at(t0, 4000),
            complete: true,
            connections: &[],
            expiries: &[(7, Some(expiry))],
            dumped: true,
            dump_complete: false,
        },
        [7],
    );
    assert_eq!(
        t.expires_in(7, SystemTime::UNIX_EPOCH + Duration::from_secs(4)),
        Some(Duration::from_secs(6))
    );
    assert_eq!(
        t.expires_in(7, SystemTime::UNIX_EPOCH + Duration::from_secs(40)),
        Some(Duration::ZERO)
    );
    assert_eq!(t.expires_in(8, SystemTime::UNIX_EPOCH), None);
}

/// A round of `connections` from `start` to `end` milliseconds that also
/// asked every member `dump`, which held the sessions of `held`.
fn observe_dumped(
    t: &mut SessionTracker,
    base: Instant,
    (start, end): (u64, u64),
    connections: &[Connection],
    held: &[i64],
    owners: &[i64],
) {
    let expiry = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
    let expiries: Vec<(i64, Option<SystemTime>)> =
        held.iter().map(|s| (*s, Some(expiry))).collect();
    t.observe(
        Round {
            started: ms(base, start),
            finished: at(base, end),
            complete: true,
            connections,
            expiries: &expiries,
            dumped: true,
            dump_complete: true,
        },
        owners.iter().copied(),
    );
}

/// `dump` lists every ephemeral node of the server: the check asks it only
/// while an owner is a ghost (its expiry is then shown) or has just lost
/// its connection (it tells a lost session from a closed one), and a round
/// without it forgets the expiry times known.
#[test]
fn dump_is_wanted_only_while_an_owner_is_a_ghost_or_has_just_gone() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(
        &mut t,
        t0,
        (0, 10),
        true,
        &[conn(1, 5), conn(2, 5), conn(9, 1)],
        &[1, 2],
    );
    assert!(!t.wants_expiries(), "every owner live");
    // A session that is no owner leaves (a client closed): not wanted.
    observe(
        &mut t,
        t0,
        (100, 110),
        true,
        &[conn(1, 6), conn(2, 6)],
        &[1, 2],
    );
    assert!(!t.liveness(9).is_some_and(Liveness::is_ghost));
    assert!(!t.wants_expiries(), "no owner is a ghost or gone");
    // Owner 2 loses its connection: the next round asks dump, which still
    // holds its session: a ghost, with its expiry.
    observe(&mut t, t0, (200, 210), true, &[conn(1, 7)], &[1, 2]);
    assert!(t.wants_expiries());
    assert!(t.ghost_owners().is_empty(), "not yet: unconfirmed");
    observe_dumped(&mut t, t0, (300, 310), &[conn(1, 8)], &[1, 2], &[1, 2]);
    assert_eq!(t.ghost_owners(), [2].into());
    assert_eq!(
        t.liveness(2),
        Some(Liveness::Disconnected { since: ms(t0, 210) })
    );
    assert!(t.wants_expiries());
    assert!(t.expires_in(2, SystemTime::UNIX_EPOCH).is_some());
    // Its node is gone (the session expired): no owner is a ghost, and a
    // round without `dump` forgets the expiry it knew.
    t.observe(
        Round {
            started: ms(t0, 400),
            finished: at(t0, 410),
            complete: true,
            connections: &[conn(1, 9)],
            expiries: &[],
            dumped: false,
            dump_complete: false,
        },
        [1],
    );
    assert!(!t.wants_expiries());
    assert_eq!(t.expires_in(2, SystemTime::UNIX_EPOCH), None);
}

/// A session its client closed has no connection, like a lost one, but
/// ZooKeeper ends it and deletes its nodes at once: its nodes the agent
/// still shows are deletions on their way. `dump` no longer holds it: it
/// never counts as a ghost, however many of its nodes are still shown.
#[test]
fn a_closed_session_is_no_ghost_while_its_deletions_arrive() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(
        &mut t,
        t0,
        (0, 10),
        true,
        &[conn(1, 5), conn(2, 5)],
        &[1, 2],
    );
    // Session 2 is closed; the agent still shows its nodes.
    observe(&mut t, t0, (100, 110), true, &[conn(1, 6)], &[1, 2]);
    assert_eq!(t.liveness(2), Some(Liveness::Unknown(Unknown::Unconfirmed)));
    observe_dumped(&mut t, t0, (200, 210), &[conn(1, 7)], &[1], &[1, 2]);
    assert_eq!(t.liveness(2), Some(Liveness::Unknown(Unknown::Ended)));
    assert!(t.ghost_owners().is_empty());
    // Rounds go on while its deletions arrive: still no ghost.
    observe(&mut t, t0, (300, 310), true, &[conn(1, 8)], &[1, 2]);
    observe(&mut t, t0, (400, 410), true, &[conn(1, 9)], &[1, 2]);
    assert!(t.ghost_owners().is_empty());
    assert!(!t.wants_expiries(), "nothing left to tell");
    // A dump asked of only some members (one refused it) is no evidence
    // either way: two complete rounds are then what shows a lost session.
    let mut t = SessionTracker::default();
    observe(
        &mut t,
        t0,
        (0, 10),
        true,
        &[conn(1, 5), conn(3, 5)],
        &[1, 3],
    );
    observe(&mut t, t0, (100, 110), true, &[conn(1, 6)], &[1, 3]);
    t.observe(
        Round {
            started: ms(t0, 200),
            finished: at(t0, 210),
            complete: true,
            connections: &[conn(1, 7)],
            expiries: &[],
            dumped: true,
            dump_complete: false,
        },
        [1, 3],
    );
    assert_eq!(
        t.liveness(3),
        Some(Liveness::Disconnected { since: ms(t0, 110) })
    );
}

/// The stamp moves with a verdict, not with traffic.
#[test]
fn the_stamp_moves_when_a_verdict_changes_only() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(&mut t, t0, (0, 10), true, &[conn(1, 5)], &[1]);
    let live = t.stamp();
    observe(&mut t, t0, (100, 110), true, &[conn(1, 6)], &[1]);
    assert_eq!(t.stamp(), live, "packets, still live");
    observe(&mut t, t0, (200, 210), true, &[], &[1]);
    assert_ne!(t.stamp(), live, "no connection: unconfirmed");
}

#[test]
fn a_round_is_complete_only_when_it_covers_the_ensemble() {
    assert!(round_complete(1, 1, Some(0)), "standalone");
    assert!(round_complete(3, 3, Some(3)));
    assert!(!round_complete(3, 2, Some(3)), "a member did not answer");
    assert!(
        !round_complete(1, 1, Some(3)),
        "one member of three polled: others' sessions are not listed"
    );
    assert!(!round_complete(1, 1, None), "membership unknown");
    assert!(!round_complete(0, 0, Some(0)));
}

#[test]
fn the_auto_pace_follows_the_shortest_timeout_within_bounds() {
    let s = Duration::from_secs;
    assert_eq!(auto_interval(None), s(1));
    assert_eq!(auto_interval(Some(s(4))), s(1));
    assert_eq!(auto_interval(Some(s(18))), Duration::from_millis(2250));
    assert_eq!(auto_interval(Some(s(90))), s(5));
}

/// Rounds as (gap before start, duration, where in the round the
/// session's member answered, in 0..=1000 of its length), in ms.
/// Short gaps and slow rounds are where a careless rule misfires.
fn schedule() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    let gap = prop_oneof![0u64..50, 0u64..5_000];
    let len = prop_oneof![0u64..20, 0u64..3_000];
    let pos = prop_oneof![Just(0u64), Just(1_000u64), 0u64..=1_000];
    prop::collection::vec((gap, len, pos), 1..40)
}

/// The `recved` count a member reports at `t`: packets up to then.
fn count_at(pings: &[u64], t: u64) -> u64 {
    pings.iter().take_while(|p| **p <= t).count() as u64
}

proptest! {
    /// A session that sends something at least every third of its
    /// timeout is never judged silent, whatever the rounds' timing.
    #[test]
    fn a_pinging_session_is_never_silent(
        timeout_ms in 1_000u64..30_000,
        gaps in prop::collection::vec(1u64..=1_000, 1..2_000),
        rounds in schedule(),
    ) {
        // Ping gaps are a fraction (in thousandths) of a third of the timeout.
        let mut pings = Vec::new();
        let mut p = 0;
        for g in &gaps {
            p += (timeout_ms / 3 * g / 1_000).max(1);
            pings.push(p);
        }
        let base = Instant::now();
        let mut tracker = SessionTracker::default();
        let mut start = 0;
        for (gap, len, pos) in rounds {
            start += gap;
            let end = start + len;
            if end > *pings.last().unwrap() {
                break; // the pings (and so the premise) end here
            }
            let c = Connection {
                timeout_ms: Some(timeout_ms),
                ..conn(1, count_at(&pings, start + len * pos / 1_000))
            };
            observe(&mut tracker, base, (start, end), true, &[c], &[1]);
            let live = tracker.liveness(1).unwrap();
            prop_assert_eq!(live, Liveness::Connected);
            start = end;
        }
    }

    /// A session that stops sending is flagged by the first round whose
    /// start lies more than 2/3 of its timeout after the end of the
    /// first round that saw its final count, and not before.
    #[test]
    fn a_frozen_session_is_flagged_by_the_first_pair_that_can_show_it(
        timeout_ms in 1_000u64..30_000,
        frozen_at in 0u64..20_000,
        rounds in schedule(),
    ) {
        // Pings every third of the timeout until it freezes.
        let pings: Vec<u64> = (1..)
            .map(|i| i * (timeout_ms / 3))
            .take_while(|p| *p <= frozen_at)
            .collect();
        let base = Instant::now();
        let mut tracker = SessionTracker::default();
        let mut start = 0;
        let mut final_seen: Option<u64> = None;
        for (gap, len, pos) in rounds {
            start += gap;
            let end = start + len;
            let read = start + len * pos / 1_000;
            let c = Connection {
                timeout_ms: Some(timeout_ms),
                ..conn(1, count_at(&pings, read))
            };
            observe(&mut tracker, base, (start, end), true, &[c], &[1]);
            let at_final = count_at(&pings, read) == pings.len() as u64;
            if at_final && final_seen.is_none() {
                final_seen = Some(end);
            }
            let expected = final_seen.is_some_and(|seen| start > seen
                && Duration::from_millis(start - seen) > Duration::from_millis(timeout_ms) * 2 / 3);
            let live = tracker.liveness(1).unwrap();
            prop_assert_eq!(
                matches!(live, Liveness::Silent { .. }),
                expected,
                "round {}..{} read at {}: {:?}", start, end, read, live
            );
            start = end;
        }
    }
}

#[test]
fn a_session_is_named_by_the_address_of_its_live_connection() {
    let t0 = Instant::now();
    let mut t = SessionTracker::default();
    observe(&mut t, t0, (0, 10), true, &[], &[7]);
    assert_eq!(t.address(7), None, "owner never listed: no address");
    let at = |address: &str, received| Connection {
        address: address.into(),
        ..conn(7, received)
    };
    // Listed by two members (the first not yet aware the client moved):
    // the connection that carried more is the live one.
    observe(
        &mut t,
        t0,
        (100, 110),
        false,
        &[at("10.0.0.5:4000", 3), at("10.0.0.5:4100", 9)],
        &[7],
    );
    assert_eq!(t.address(7), Some("10.0.0.5:4100"));
    // Gone from two complete rounds: disconnected, and still named.
    observe(&mut t, t0, (200, 210), true, &[], &[7]);
    observe(&mut t, t0, (300, 310), true, &[], &[7]);
    assert!(t.liveness(7).unwrap().is_ghost());
    assert_eq!(t.address(7), Some("10.0.0.5:4100"));
}
