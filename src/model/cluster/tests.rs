use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::tree::{ChildNode, Tree, TreePattern};
use std::time::{Instant, SystemTime};

/// The flapping window of the catalogue's rule.
pub(super) const FLAP: std::time::Duration = crate::model::election::FLAP_WINDOW;

fn now() -> crate::model::Now {
    crate::model::Now {
        mono: Instant::now(),
        wall: SystemTime::UNIX_EPOCH,
    }
}

fn listing(n: usize) -> Vec<(String, Vec<ChildNode>)> {
    (0..n).map(|i| (format!("/b/{i:03}"), vec![])).collect()
}

/// One election set `/b/*` (identities from the data), its session not
/// yet started; `four_letter_words` as the cluster's setting.
fn bots(four_letter_words: bool) -> ClusterState {
    ClusterState::new(
        "c".into(),
        vec![Tree::elections(
            TreePattern::parse("/b/*").unwrap(),
            crate::model::election_tree::ElectionSpec::from(IdentityMode::Data),
        )],
        four_letter_words,
    )
}

#[test]
fn the_guard_caps_elections_across_trees_and_counts_the_rest() {
    let trees = vec![
        Tree::elections(TreePattern::parse("/b/*").unwrap(), IdentityMode::Node),
        Tree::elections(TreePattern::parse("/c/*").unwrap(), IdentityMode::Node),
    ];
    let mut c = ClusterState::new("c".into(), trees, false);
    c.limits = Limits {
        max_elections: 1,
        max_tracked_elections: 5,
        max_groups: 1,
        max_locks: 1,
        ..Limits::default()
    };
    let (b, c_) = (c.trees[0].id(), c.trees[1].id());
    c.apply_listing(b, listing(3), now());
    c.apply_listing(
        c_,
        (0..4).map(|i| (format!("/c/{i}"), vec![])).collect(),
        now(),
    );
    assert_eq!(
        (c.trees[0].parent_count(), c.trees[1].parent_count()),
        (3, 2)
    );
    assert_eq!(c.dropped.get(&ContentKind::Election), Some(&2));
    // Full: a new election is declined and counted; its children ignored.
    c.parent_created(b, "/b/new", now());
    let child = ChildNode {
        name: "n_0000000001".into(),
        data: vec![],
        ephemeral_owner: 1,
        ctime_ms: 0,
    };
    c.child_upserted(b, "/b/new", child, now());
    assert!(!c.trees[0].has_parent("/b/new"));
    assert_eq!(c.dropped.get(&ContentKind::Election), Some(&3));
    // A resync keeps what is tracked before admitting anything new.
    c.apply_listing(b, listing(6), now());
    assert_eq!(c.trees[0].parent_count(), 3);
    // Room frees up when an election goes away.
    c.trees[1].parent_deleted("/c/0", now());
    c.parent_created(b, "/b/new", now());
    assert!(c.trees[0].has_parent("/b/new"));
}

/// One leased election set `/b/*` (split brain and expiry held `hold`),
/// its session connected, and a clock: `at(s)` is `s` seconds in.
fn leased(hold: std::time::Duration) -> (ClusterState, impl Fn(u64) -> crate::model::Now) {
    use crate::model::election_tree::ElectionSpec;
    use crate::model::lease::{KeyPaths, LeaseKey, LeaseSpec};
    use std::time::Duration;
    let mut spec = ElectionSpec::from(IdentityMode::Data);
    let pattern = TreePattern::parse("/b/*").unwrap();
    spec.lease = Some(LeaseSpec {
        paths: KeyPaths::of(&LeaseKey::Name, pattern.segments(), None),
        key: LeaseKey::Name,
        split_brain_for: hold,
        expired_for: hold,
    });
    let mut c = ClusterState::new(
        "c".into(),
        vec![Tree::elections(TreePattern::parse("/b/*").unwrap(), spec)],
        false,
    );
    let t0 = Instant::now();
    let at = move |s: u64| crate::model::Now {
        mono: t0 + Duration::from_secs(s),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s),
    };
    c.session_started(1, Duration::from_secs(10), at(0).wall);
    (c, at)
}

#[test]
fn a_master_newer_than_the_lease_reading_keeps_the_lease_alerts_as_they_are() {
    use crate::model::lease::LeaseReading;
    let (mut c, at) = leased(std::time::Duration::from_secs(1));
    let id = c.trees[0].id();
    let child = |name: &str, data: &str, owner| ChildNode {
        name: name.into(),
        data: data.as_bytes().to_vec(),
        ephemeral_owner: owner,
        ctime_ms: 1_000_000_000,
    };
    c.apply_listing(
        id,
        vec![(
            "/b/bot".into(),
            vec![child("n_0000000001", "a", 1), child("n_0000000002", "b", 2)],
        )],
        at(0),
    );
    let reading = |s: u64| {
        let mut r = LeaseReading::at(at(s));
        r.add(
            Some(("bot".into(), false)),
            Some("a".into()),
            Some(5.0),
            Some(0.2),
        );
        r
    };
    // "a" leads and holds its lease: the set has shown that its holders
    // are named as its candidates.
    c.lease_succeeded(id, reading(5), at(5));
    // "a" leaves at 10 s: "b" leads; "a" keeps writing.
    c.child_deleted(id, "/b/bot", "n_0000000001", at(10));
    c.lease_succeeded(id, reading(12), at(12));
    let kinds = |r: &crate::model::alerting::Reading| {
        r.conditions.iter().map(|c| c.kind).collect::<Vec<_>>()
    };
    let r = c.alert_reading(at(12).mono, FLAP, &mut Default::default());
    assert_eq!(kinds(&r), vec![crate::model::alerting::Kind::SplitBrain]);
    // "b" leaves too at 13 s: "c" leads, newer than the reading of 12 s,
    // which says nothing of it: split brain is neither there nor gone.
    c.child_upserted(id, "/b/bot", child("n_0000000003", "c", 3), at(11));
    c.child_deleted(id, "/b/bot", "n_0000000002", at(13));
    let r = c.alert_reading(at(13).mono, FLAP, &mut Default::default());
    assert!(kinds(&r).is_empty());
    let split = || {
        (
            crate::model::alerting::Kind::SplitBrain,
            "c".to_owned(),
            "/b/bot".to_owned(),
        )
    };
    assert!(r.holds_still(&split()), "lease frozen: {r:?}");
    // The next reading shows "a" still writing after "c" took over.
    c.lease_succeeded(id, reading(14), at(14));
    let r = c.alert_reading(at(14).mono, FLAP, &mut Default::default());
    assert_eq!(kinds(&r), vec![crate::model::alerting::Kind::SplitBrain]);
    assert!(!r.holds_still(&split()));
}

#[test]
fn a_set_whose_holders_never_matched_an_identity_never_judges_split_brain() {
    use crate::model::lease::{LeaseReading, Verdict};
    let (mut c, at) = leased(std::time::Duration::ZERO);
    let id = c.trees[0].id();
    // Candidates carry device ids; the application writes host names.
    let bots: Vec<(String, Vec<ChildNode>)> = (0..3)
        .map(|i| {
            (
                format!("/b/bot_{i}"),
                vec![ChildNode {
                    name: "n_0000000001".into(),
                    data: format!("device-{i}").into_bytes(),
                    ephemeral_owner: i + 1,
                    ctime_ms: 1_000_000_000,
                }],
            )
        })
        .collect();
    c.apply_listing(id, bots, at(0));
    for s in [5, 6, 7] {
        let mut r = LeaseReading::at(at(s));
        for i in 0..3 {
            r.add(
                Some((format!("bot_{i}"), false)),
                Some(format!("host-{i}")),
                Some(5.0),
                Some(0.1),
            );
        }
        c.lease_succeeded(id, r, at(s));
        let reading = c.alert_reading(at(s).mono, FLAP, &mut Default::default());
        assert!(reading.conditions.is_empty(), "{:?}", reading.conditions);
    }
    let tree = c.trees[0].as_elections().unwrap();
    let election = tree.election("/b/bot_0").unwrap();
    assert_eq!(
        c.trees[0].lease_verdict("/b/bot_0", election),
        Some(Verdict::Unconfirmed)
    );
}

#[test]
fn a_split_brain_seen_before_any_election_agreed_is_unconfirmed_and_held() {
    use crate::model::lease::LeaseReading;
    let (mut c, at) = leased(std::time::Duration::from_secs(1));
    let id = c.trees[0].id();
    let child = |name: &str, data: &str, owner| ChildNode {
        name: name.into(),
        data: data.as_bytes().to_vec(),
        ephemeral_owner: owner,
        ctime_ms: 1_000_000_000,
    };
    // As an agent started after the switch sees it: "b" leads, and "a"
    // goes on writing its lease; no election of the set has agreed yet.
    c.apply_listing(
        id,
        vec![("/b/bot".into(), vec![child("n_0000000002", "b", 2)])],
        at(0),
    );
    let mut reading = LeaseReading::at(at(5));
    reading.add(
        Some(("bot".into(), false)),
        Some("a".into()),
        Some(5.0),
        Some(0.2),
    );
    c.lease_succeeded(id, reading, at(5));
    let r = c.alert_reading(at(5).mono, FLAP, &mut Default::default());
    assert!(r.conditions.is_empty(), "{r:?}");
    let held = (
        crate::model::alerting::Kind::SplitBrain,
        "c".to_owned(),
        "/b/bot".to_owned(),
    );
    assert!(r.holds_still(&held), "unjudged: {r:?}");
    let expired = (
        crate::model::alerting::Kind::LeaseExpired,
        "c".to_owned(),
        "/b/bot".to_owned(),
    );
    assert!(!r.holds_still(&expired), "only the split brain: {r:?}");
}

#[test]
fn a_master_the_ghost_check_has_not_listed_yet_is_unjudged_not_live() {
    use crate::model::alerting::Kind;
    let mut c = bots(true);
    let t0 = Instant::now();
    let now = crate::model::Now {
        mono: t0,
        wall: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000),
    };
    c.session_started(1, std::time::Duration::from_secs(10), now.wall);
    let id = c.trees[0].id();
    let child = ChildNode {
        name: "n_0000000001".into(),
        data: b"a".to_vec(),
        ephemeral_owner: 7,
        ctime_ms: 1_000_000_000,
    };
    c.apply_listing(id, vec![("/b/bot".into(), vec![child])], now);
    // Without a ghost check, nothing to judge.
    let ghost = || (Kind::GhostMaster, "c".to_owned(), "/b/bot".to_owned());
    let r = c.alert_reading(t0, FLAP, &mut Default::default());
    assert!(!r.holds_still(&ghost()), "{r:?}");
    // With one that has not had its first round: held, not live.
    c.ghost = Some(Default::default());
    let r = c.alert_reading(t0, FLAP, &mut Default::default());
    assert!(r.conditions.is_empty(), "{r:?}");
    assert!(r.holds_still(&ghost()), "{r:?}");
}

/// What a step of the property test below does to the cluster.
#[derive(Debug, Clone)]
enum Step {
    /// A candidate joins election `e` with identity `who`, its node owned
    /// by session `owner` (1..=4).
    Join {
        e: u8,
        who: u8,
        owner: u8,
    },
    /// Election `e`'s lowest (its master) or highest candidate leaves.
    Leave {
        e: u8,
        lowest: bool,
    },
    /// Election `e`'s master leaves and a new candidate queues: a switch
    /// when one was waiting.
    Switch {
        e: u8,
    },
    /// Election `e`'s node is deleted (its candidates with it), or
    /// created again (without candidates).
    Deleted {
        e: u8,
    },
    Created {
        e: u8,
    },
    /// Listing the tree failed: it is not synced until the next listing
    /// (`Back`), while its watch goes on delivering changes.
    Failed,
    /// Seconds pass.
    Wait(u16),
    /// The agent's session is lost; or back, and the tree listed again.
    Lost,
    Back,
    /// A ghost-check round listing the sessions of `listed` (a bit each),
    /// complete or not; `moved` sessions sent something since the last;
    /// with `held`, every member answered `dump`, which held those sessions.
    Round {
        complete: bool,
        listed: u8,
        moved: u8,
        held: Option<u8>,
    },
}

/// A candidate the property holds: (sequence, identity, owner).
type Held = (u32, u8, i64);

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0u8..3, 0u8..3, 1u8..5).prop_map(|(e, who, owner)| Step::Join { e, who, owner }),
        3 => (0u8..3, any::<bool>()).prop_map(|(e, lowest)| Step::Leave { e, lowest }),
        4 => (0u8..3).prop_map(|e| Step::Switch { e }),
        1 => (0u8..3).prop_map(|e| Step::Deleted { e }),
        1 => (0u8..3).prop_map(|e| Step::Created { e }),
        1 => Just(Step::Failed),
        3 => (0u16..90).prop_map(Step::Wait),
        1 => Just(Step::Lost),
        1 => Just(Step::Back),
        2 => (any::<bool>(), 0u8..16, 0u8..16, proptest::option::of(0u8..16))
            .prop_map(|(complete, listed, moved, held)| Step::Round { complete, listed, moved, held }),
    ]
}

proptest::proptest! {
    /// A reading that keeps the trees' parts between readings says at
    /// every step exactly what a reading that walks every election says:
    /// the same conditions, the same alerts held still; and so does the
    /// kept survey (states, lease verdicts, nodes, time without a master,
    /// which elections the cap exports). So no change the alert pusher or
    /// a scrape must see can pass unseen by the journal, and time alone
    /// ends a flapping condition, or an election's attention, in both.
    #[test]
    fn a_kept_reading_says_what_a_full_walk_says(
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        use crate::model::alerting::{Kind, ReadingCache};
        use crate::model::ghost::Round;
        use std::time::Duration;
        let window = Duration::from_secs(60);
        let mut c = bots(true);
        // Two exported of the three: the cap chooses at every step.
        c.limits = Limits {
            max_elections: 2,
            attention_window: Duration::from_secs(200),
            ..Limits::default()
        };
        let id = c.trees[0].id();
        let t0 = Instant::now();
        let mut secs = 0u64;
        let at = |s: u64| crate::model::Now {
            mono: t0 + Duration::from_secs(s),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s),
        };
        c.session_started(1, Duration::from_secs(10), at(0).wall);
        // Each election's candidates: (sequence, identity, owner); `None`
        // while its node is deleted.
        let mut candidates: Vec<Option<Vec<Held>>> = vec![Some(Vec::new()); 3];
        let mut seq = 0u32;
        let mut received = [0u64; 5];
        let node = |(s, who, owner): (u32, u8, i64)| ChildNode {
            name: format!("n_{s:010}"),
            data: format!("i{who}").into_bytes(),
            ephemeral_owner: owner,
            ctime_ms: 1_000_000_000,
        };
        let listing = |candidates: &Vec<Option<Vec<Held>>>| -> Vec<(String, Vec<ChildNode>)> {
            candidates
                .iter()
                .enumerate()
                .filter_map(|(e, cs)| Some((format!("/b/e{e}"), cs.as_ref()?.iter().map(|c| node(*c)).collect())))
                .collect()
        };
        c.apply_listing(id, listing(&candidates), at(0));
        let mut cache = ReadingCache::default();
        for s in steps {
            let now = at(secs);
            match s {
                Step::Join { e, who, owner } => {
                    seq += 1;
                    let cand = (seq, who, i64::from(owner));
                    let Some(cs) = &mut candidates[usize::from(e)] else {
                        continue;
                    };
                    cs.push(cand);
                    if c.session.is_connected() {
                        c.child_upserted(id, &format!("/b/e{e}"), node(cand), now);
                    }
                }
                Step::Leave { e, lowest } => {
                    let Some(cs) = &mut candidates[usize::from(e)] else {
                        continue;
                    };
                    if !cs.is_empty() {
                        let gone = if lowest { cs.remove(0) } else { cs.pop().unwrap() };
                        if c.session.is_connected() {
                            c.child_deleted(id, &format!("/b/e{e}"), &node(gone).name, now);
                        }
                    }
                }
                Step::Switch { e } => {
                    seq += 1;
                    let cand = (seq, 0, 1);
                    let Some(cs) = &mut candidates[usize::from(e)] else {
                        continue;
                    };
                    cs.push(cand);
                    let gone = cs.remove(0);
                    if c.session.is_connected() {
                        let parent = format!("/b/e{e}");
                        c.child_upserted(id, &parent, node(cand), now);
                        c.child_deleted(id, &parent, &node(gone).name, now);
                    }
                }
                Step::Deleted { e } => {
                    if candidates[usize::from(e)].take().is_some() && c.session.is_connected() {
                        c.parent_deleted(id, &format!("/b/e{e}"), now);
                    }
                }
                Step::Created { e } => {
                    let slot = &mut candidates[usize::from(e)];
                    if slot.is_none() {
                        *slot = Some(Vec::new());
                        if c.session.is_connected() {
                            c.parent_created(id, &format!("/b/e{e}"), now);
                        }
                    }
                }
                Step::Failed => {
                    let _ = c.tree_failed(id, "listing failed".into());
                }
                Step::Wait(s) => secs += u64::from(s),
                Step::Lost => c.session_lost(
                    crate::model::session::SessionState::Disconnected,
                    "cut",
                    now.wall,
                ),
                Step::Back => {
                    c.session_started(1, Duration::from_secs(10), now.wall);
                    c.apply_listing(id, listing(&candidates), now);
                }
                Step::Round { complete, listed, moved, held } => {
                    let expiries: Vec<(i64, Option<SystemTime>)> = (1..5)
                        .filter(|s| held.is_some_and(|h| h & (1 << (s - 1)) != 0))
                        .map(|s| (i64::from(s), None))
                        .collect();
                    let connections: Vec<crate::fourlw::parse::Connection> = (1..5)
                        .filter(|s| listed & (1 << (s - 1)) != 0)
                        .map(|s| {
                            if moved & (1 << (s - 1)) != 0 {
                                received[s] += 1;
                            }
                            crate::fourlw::parse::Connection {
                                address: format!("10.0.0.{s}:1"),
                                session: Some(i64::try_from(s).unwrap()),
                                received: Some(received[s]),
                                timeout_ms: Some(3000),
                            }
                        })
                        .collect();
                    let round = Round {
                        started: now.mono,
                        finished: now,
                        complete,
                        connections: &connections,
                        expiries: &expiries,
                        dumped: held.is_some(),
                        dump_complete: held.is_some() && complete,
                    };
                    let owners = c.owners();
                    c.ghost_round(round, owners, None);
                }
            }
            let mono = at(secs).mono;
            let kept = c.alert_reading(mono, window, &mut cache);
            let walked = c.alert_reading(mono, window, &mut ReadingCache::default());
            let sorted = |r: &crate::model::alerting::Reading| {
                let mut v: Vec<String> = r.conditions.iter().map(|c| format!("{c:?}")).collect();
                v.sort();
                v
            };
            proptest::prop_assert_eq!(sorted(&kept), sorted(&walked));
            let (kept_survey, walked_survey) =
                crate::model::survey::tests::kept_and_walked(&c, mono);
            proptest::prop_assert_eq!(kept_survey, walked_survey);
            for e in 0..3 {
                for kind in Kind::ALL {
                    let key = (kind, "c".to_owned(), format!("/b/e{e}"));
                    proptest::prop_assert_eq!(
                        kept.holds_still(&key),
                        walked.holds_still(&key),
                        "{:?}", key
                    );
                }
            }
        }
    }
}

#[test]
fn a_quiet_tree_is_not_walked_again_and_a_change_costs_its_election() {
    use crate::model::alerting::{Kind, ReadingCache};
    let mut c = bots(false);
    let id = c.trees[0].id();
    let t = now();
    c.session_started(1, std::time::Duration::from_secs(10), t.wall);
    let child = || ChildNode {
        name: "n_0000000001".into(),
        data: b"a".to_vec(),
        ephemeral_owner: 7,
        ctime_ms: 1_000_000_000,
    };
    let listing = (0..100)
        .map(|e| (format!("/b/bot{e}"), vec![child()]))
        .collect();
    c.apply_listing(id, listing, t);
    let mut cache = ReadingCache::default();
    let first = c.alert_reading(t.mono, FLAP, &mut cache);
    assert!(first.conditions.is_empty());
    assert_eq!(
        cache.judged(),
        100,
        "the first reading takes the tree whole"
    );
    let _ = c.alert_reading(t.mono, FLAP, &mut cache);
    assert_eq!(cache.judged(), 100, "nothing changed: nothing judged");
    c.child_deleted(id, "/b/bot7", "n_0000000001", t);
    let after = c.alert_reading(t.mono, FLAP, &mut cache);
    assert_eq!(
        after.conditions.iter().map(|c| c.kind).collect::<Vec<_>>(),
        vec![Kind::NoMaster]
    );
    assert_eq!(cache.judged(), 101, "one change, one election judged");
    let _ = c.survey(t.mono);
    assert_eq!(
        c.survey.judged(),
        100,
        "the first survey takes the tree whole"
    );
    let _ = c.survey(t.mono);
    assert_eq!(c.survey.judged(), 100, "nothing changed: nothing judged");
    c.child_upserted(id, "/b/bot7", child(), t);
    let _ = c.survey(t.mono);
    assert_eq!(c.survey.judged(), 101, "one change, one election judged");
}

#[test]
fn the_first_listing_is_done_once_connected_and_every_tree_listed_or_failed() {
    let mut c = ClusterState::new(
        "c".into(),
        vec![
            Tree::elections(TreePattern::parse("/b/*").unwrap(), IdentityMode::Node),
            Tree::elections(TreePattern::parse("/c/*").unwrap(), IdentityMode::Node),
        ],
        true,
    );
    let (b, c_) = (c.trees[0].id(), c.trees[1].id());
    c.apply_listing(b, listing(2), now());
    assert!(!c.first_listing_done(), "not connected");
    c.session_started(
        1,
        std::time::Duration::from_secs(10),
        SystemTime::UNIX_EPOCH,
    );
    assert!(!c.first_listing_done(), "/c/* not listed yet");
    // A listing that failed ended too: the reason is on /ready.
    c.trees[1].sync_failed("no rights".into());
    assert!(c.first_listing_done());
    c.apply_listing(c_, Vec::new(), now());
    assert!(c.first_listing_done());
}
