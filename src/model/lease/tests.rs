use super::*;
use proptest::prelude::*;

const T0: u64 = 1_000_000;

fn at(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(T0) + Duration::from_secs_f64(secs)
}

fn reading_at(secs: f64, rows: &[(&str, &str, f64, f64)]) -> LeaseReading {
    let mut r = LeaseReading::new(at(secs));
    for (k, h, rem, age) in rows {
        r.add(
            Some(((*k).to_owned(), false)),
            Some((*h).to_owned()),
            Some(*rem),
            Some(*age),
        );
    }
    r
}

fn master(identity: &str, since: f64) -> ZkSide<'_> {
    ZkSide::Master {
        identity,
        since: at(since),
    }
}

#[test]
fn the_master_holding_its_lease_agrees_and_an_expired_one_stopped() {
    let r = reading_at(
        100.0,
        &[("bot_1", "a", 5.0, 1.0), ("bot_2", "b", -3.0, 13.0)],
    );
    assert_eq!(
        judge(master("a", 10.0), r.rows.get("bot_1"), &r),
        Some(Verdict::Agrees)
    );
    assert_eq!(
        judge(master("b", 10.0), r.rows.get("bot_2"), &r),
        Some(Verdict::Expired)
    );
}

#[test]
fn an_old_master_writing_after_the_switch_is_split_brain() {
    // Switch at 90; "a" wrote 2 s before the 100 s reading: after it.
    let r = reading_at(100.0, &[("bot_1", "a", 8.0, 2.0)]);
    assert_eq!(
        judge(master("b", 90.0), r.rows.get("bot_1"), &r),
        Some(Verdict::SplitBrain)
    );
}

#[test]
fn an_old_lease_running_out_is_a_handover_not_split_brain() {
    // "a" last wrote 12 s before the reading, 2 s before the switch.
    let r = reading_at(100.0, &[("bot_1", "a", 3.0, 12.0)]);
    assert_eq!(
        judge(master("b", 90.0), r.rows.get("bot_1"), &r),
        Some(Verdict::HandingOver)
    );
    let later = reading_at(110.0, &[("bot_1", "a", -7.0, 22.0)]);
    assert_eq!(
        judge(master("b", 90.0), later.rows.get("bot_1"), &later),
        Some(Verdict::NotTaken)
    );
}

#[test]
fn a_reading_older_than_the_master_says_nothing_of_it() {
    let r = reading_at(89.0, &[("bot_1", "a", 8.0, 0.5)]);
    assert_eq!(judge(master("b", 90.0), r.rows.get("bot_1"), &r), None);
    // Nor does an unnamed master (owner-* identities before a round).
    let r = reading_at(100.0, &[("bot_1", "a", 8.0, 0.5)]);
    assert_eq!(judge(master("", 90.0), r.rows.get("bot_1"), &r), None);
}

#[test]
fn a_missing_row_is_no_row_only_when_every_row_was_read() {
    let mut r = reading_at(100.0, &[("bot_1", "a", 8.0, 0.5)]);
    assert_eq!(judge(master("b", 10.0), None, &r), Some(Verdict::NoRow));
    r.reject(Reject::OverCap);
    assert_eq!(judge(master("b", 10.0), None, &r), None);
}

#[test]
fn a_lease_written_without_candidates_is_reported_an_old_one_is_not() {
    let r = reading_at(
        100.0,
        &[("bot_1", "a", 8.0, 0.5), ("bot_2", "a", 8.0, 30.0)],
    );
    let masterless = ZkSide::Masterless { since: at(80.0) };
    assert_eq!(
        judge(masterless, r.rows.get("bot_1"), &r),
        Some(Verdict::NoCandidates)
    );
    assert_eq!(judge(masterless, r.rows.get("bot_2"), &r), None);
    assert_eq!(judge(masterless, None, &r), None);
}

#[test]
fn garbage_rows_are_counted_never_used() {
    let mut r = LeaseReading::new(at(0.0));
    r.add(None, Some("a".into()), Some(1.0), Some(1.0));
    r.add(Some(("k".into(), false)), None, Some(1.0), Some(1.0));
    r.add(Some(("k".into(), false)), Some("a".into()), None, Some(1.0));
    r.add(
        Some(("k".into(), false)),
        Some("a".into()),
        Some(f64::NAN),
        Some(1.0),
    );
    r.add(
        Some(("k".into(), false)),
        Some("   ".into()),
        Some(1.0),
        Some(1.0),
    );
    r.add(
        Some(("long".into(), true)),
        Some("a".into()),
        Some(1.0),
        Some(1.0),
    );
    r.add(
        Some(("f".into(), false)),
        Some("a".into()),
        Some(1.0),
        Some(-3600.0),
    );
    assert!(r.rows.is_empty());
    assert!(r.unjudged.contains("k") && r.unjudged.contains("f"));
    assert!(!r.unjudged.contains("long"), "a cut key names nothing");
    assert_eq!(r.rejected[&Reject::Null], 5);
    assert_eq!(r.rejected[&Reject::TooLong], 1);
    assert_eq!(r.rejected[&Reject::Future], 1);
}

#[test]
fn a_duplicated_key_drops_every_row_of_it_and_is_not_absent() {
    let r = reading_at(
        100.0,
        &[
            ("k", "a", 5.0, 1.0),
            ("k", "b", 5.0, 1.0),
            ("k", "c", 5.0, 1.0),
        ],
    );
    assert!(r.rows.is_empty());
    assert_eq!(r.rejected[&Reject::Duplicate], 3);
    assert!(r.unjudged.contains("k"));
}

#[test]
fn an_unusable_row_leaves_its_election_unjudged_not_rowless() {
    let mut r = reading_at(100.0, &[("ok", "a", 5.0, 1.0)]);
    r.add(Some(("k".into(), false)), None, Some(5.0), Some(1.0));
    assert_eq!(
        judge(master("a", 10.0), r.rows.get("k"), &r),
        Some(Verdict::NoRow)
    );
    assert!(r.unjudged.contains("k"), "the caller skips unjudged keys");
    // A usable row and an unusable one of the same key: a duplicate.
    r.add(
        Some(("ok".into(), false)),
        Some("a".into()),
        Some(5.0),
        Some(-7200.0),
    );
    assert!(!r.rows.contains_key("ok"));
    assert_eq!(r.rejected[&Reject::Duplicate], 1);
}

#[test]
fn a_huge_holder_is_cut_like_an_identity() {
    let long = "x".repeat(10_000);
    let r = reading_at(100.0, &[("k", &long, 5.0, 1.0)]);
    let holder = &r.rows["k"].holder;
    assert_eq!(
        holder.chars().count(),
        crate::model::candidate::MAX_IDENTITY_CHARS
    );
    let identity = crate::model::candidate::clean_identity(&long);
    assert_eq!(
        judge(master(&identity, 10.0), r.rows.get("k"), &r),
        Some(Verdict::Agrees)
    );
}

#[test]
fn failures_keep_the_last_reading_and_are_not_fresh() {
    let mut book = LeaseBook::default();
    assert!(!book.fresh());
    book.succeeded(reading_at(1.0, &[("k", "a", 5.0, 1.0)]));
    assert!(book.fresh());
    assert!(book.failed(Failure::Timeout, "no answer in 2s".into(), at(2.0)));
    assert!(!book.failed(Failure::Timeout, "no answer in 2s".into(), at(3.0)));
    assert!(book.failed(Failure::Connect, "refused".into(), at(4.0)));
    assert!(!book.fresh());
    assert_eq!(book.failing.as_ref().unwrap().2, at(2.0));
    assert_eq!(book.last.as_ref().unwrap().rows["k"].holder, "a");
    book.succeeded(reading_at(5.0, &[]));
    assert!(book.fresh());
    assert_eq!(book.failures[&Failure::Timeout], 2);
}

#[test]
fn keys_follow_from_the_path() {
    assert_eq!(LeaseKey::Name.of("/wechat/bots/bot_1234"), "bot_1234");
    let capture = |at: &[usize]| LeaseKey::Capture(at.into());
    assert_eq!(capture(&[1]).of("/flink/prod-7/leader/latch"), "prod-7");
    assert_eq!(capture(&[1, 3]).of("/apps/app1/bots/bot_7"), "app1/bot_7");
    assert_eq!(
        LeaseKey::Path.of("/wechat/bots/bot_1234"),
        "/wechat/bots/bot_1234"
    );
}

proptest! {
    /// Split brain needs a write by another identity after the switch:
    /// whatever the numbers, a holder equal to the master, an expired
    /// lease, or a last write before the switch never gives it.
    #[test]
    fn split_brain_only_from_another_identitys_write_after_the_switch(
        same in any::<bool>(),
        remaining in -100.0f64..100.0,
        age in -0.5f64..1000.0,
        switch in 0.0f64..1000.0,
        read in 0.0f64..1000.0,
    ) {
        let r = reading_at(read, &[("k", if same { "a" } else { "b" }, remaining, age)]);
        let v = judge(master("a", switch), r.rows.get("k"), &r);
        if v == Some(Verdict::SplitBrain) {
            prop_assert!(!same);
            prop_assert!(remaining > 0.0);
            prop_assert!(read - age.max(0.0) > switch);
        }
        if read < switch {
            prop_assert_eq!(v, None);
        }
    }
}

#[test]
fn split_brain_needs_a_set_that_agreed() {
    assert_eq!(confirmed(Verdict::SplitBrain, false), Verdict::Unconfirmed);
    assert_eq!(confirmed(Verdict::SplitBrain, true), Verdict::SplitBrain);
    for v in Verdict::ALL
        .into_iter()
        .filter(|v| *v != Verdict::SplitBrain)
    {
        assert_eq!(confirmed(v, false), v);
    }
}

#[test]
fn a_key_gives_back_its_election_where_the_glob_fixes_the_rest() {
    let seg = |s: &[Option<&str>]| -> Vec<Option<String>> {
        s.iter().map(|p| p.map(str::to_owned)).collect()
    };
    let bots = seg(&[Some("wechat"), Some("bots"), None]);
    let name = KeyPaths::of(&LeaseKey::Name, &bots, None);
    assert_eq!(name.path("bot_7").as_deref(), Some("/wechat/bots/bot_7"));
    assert_eq!(name.path("a/b"), None, "a name has no `/`");
    assert_eq!(name.path(""), None);
    // Round trip: the key of the path is the key again.
    assert_eq!(LeaseKey::Name.of(&name.path("bot_7").unwrap()), "bot_7");
    let apps = seg(&[Some("apps"), None, Some("bots"), None]);
    let capture = LeaseKey::Capture([1, 3].into());
    let paths = KeyPaths::of(&capture, &apps, None);
    assert_eq!(
        paths.path("app1/bot_7").as_deref(),
        Some("/apps/app1/bots/bot_7")
    );
    assert_eq!(paths.path("app1"), None);
    assert_eq!(paths.path("app1/bot_7/x"), None);
    // A node election: the node below the matched parent.
    let flink = seg(&[Some("flink"), None]);
    let node = KeyPaths::of(&LeaseKey::Capture([1].into()), &flink, Some("latch"));
    assert_eq!(node.path("prod-7").as_deref(), Some("/flink/prod-7/latch"));
    // The name alone cannot say which app: a walk.
    assert_eq!(KeyPaths::of(&LeaseKey::Name, &apps, None), KeyPaths::Walk);
    assert_eq!(
        KeyPaths::of(&LeaseKey::Name, &flink, Some("latch")),
        KeyPaths::Walk
    );
    assert_eq!(
        KeyPaths::of(&LeaseKey::Path, &apps, None)
            .path("/x")
            .as_deref(),
        Some("/x")
    );
}

#[test]
fn a_reading_of_what_changed_lays_over_the_table_and_ages_the_rest() {
    let mut book = LeaseBook::default();
    assert_eq!(
        book.succeeded(reading_at(
            100.0,
            &[
                ("a", "x", 30.0, 1.0),
                ("b", "y", 5.0, 2.0),
                ("c", "z", 50.0, 0.0)
            ]
        )),
        None,
        "a first reading: everything"
    );
    // 10 s later only "a" was written (by "w").
    let mut later = LeaseReading::new(at(110.0));
    later.full = false;
    later.add(
        Some(("a".into(), false)),
        Some("w".into()),
        Some(20.0),
        Some(0.5),
    );
    let changed = book.succeeded(later).expect("a reading of what changed");
    assert_eq!(changed.iter().map(|k| &**k).collect::<Vec<_>>(), ["a"]);
    let t = book.last.as_ref().unwrap();
    let row = |k: &str| &t.rows[k];
    assert_eq!(row("a").holder, "w");
    assert!((t.remaining(row("a")) - 20.0).abs() < 1e-6);
    assert!((t.heartbeat_age(row("a")) - 0.5).abs() < 1e-6);
    // "b" and "c" were not written: ten seconds nearer their end, older.
    assert!((t.remaining(row("b")) + 5.0).abs() < 1e-6);
    assert!((t.heartbeat_age(row("b")) - 12.0).abs() < 1e-6);
    assert!((t.remaining(row("c")) - 40.0).abs() < 1e-6);
    assert_eq!(t.started, Some(at(110.0)));
    // "b" ran out between the readings (5 s after the first): once.
    assert_eq!(
        book.ran_out().iter().map(|k| &**k).collect::<Vec<_>>(),
        ["b"]
    );
    assert!(book.ran_out().is_empty());
}

#[test]
fn a_key_in_several_rows_stays_unjudged_until_every_row_is_read_again() {
    let mut book = LeaseBook::default();
    book.succeeded(reading_at(
        1.0,
        &[
            ("k", "a", 5.0, 1.0),
            ("k", "b", 5.0, 1.0),
            ("j", "a", 5.0, 1.0),
        ],
    ));
    let mut later = LeaseReading::new(at(2.0));
    later.full = false;
    // Only one of the two rows was written since: still two rows.
    later.add(
        Some(("k".into(), false)),
        Some("b".into()),
        Some(5.0),
        Some(0.1),
    );
    // A NULL written into "j" makes it unusable.
    later.add(Some(("j".into(), false)), None, Some(5.0), Some(0.1));
    let changed = book.succeeded(later).unwrap();
    assert_eq!(changed.iter().map(|k| &**k).collect::<Vec<_>>(), ["j"]);
    let t = book.last.as_ref().unwrap();
    assert!(t.rows.is_empty());
    assert!(t.unjudged.contains("k") && t.unjudged.contains("j"));
    // A reading of every row settles both.
    book.succeeded(reading_at(
        3.0,
        &[("k", "b", 5.0, 1.0), ("j", "a", 5.0, 1.0)],
    ));
    let t = book.last.as_ref().unwrap();
    assert_eq!(t.rows.len(), 2);
    assert!(t.unjudged.is_empty());
}

#[test]
fn a_pass_in_pages_keeps_what_it_met_and_drops_what_it_did_not() {
    let page = |secs: f64, first: bool, last: bool, rows: &[(&str, &str, f64, f64)]| {
        let mut r = reading_at(secs, rows);
        r.full = false;
        r.page = Some(Page { first, last });
        r.returned = rows.len() as u64;
        r
    };
    let mut book = LeaseBook::default();
    // The first pass: until its last page, a missing row may be unread.
    assert!(
        book.succeeded(page(1.0, true, false, &[("a", "x", 30.0, 1.0)]))
            .is_some()
    );
    assert!(!book.last.as_ref().unwrap().complete());
    assert_eq!(
        book.succeeded(page(1.0, false, true, &[("b", "y", 30.0, 1.0)])),
        None
    );
    let t = book.last.as_ref().unwrap();
    assert!(t.complete());
    assert_eq!(t.rows.len(), 2);
    // The next pass: "a" was deleted; "b" and a new "c" are met.
    book.succeeded(page(10.0, true, false, &[("b", "y", 30.0, 1.0)]));
    assert!(
        book.last.as_ref().unwrap().rows.contains_key("a"),
        "kept until the pass ends"
    );
    book.succeeded(page(10.0, false, true, &[("c", "z", 30.0, 1.0)]));
    let t = book.last.as_ref().unwrap();
    let mut keys: Vec<&str> = t.rows.keys().map(|k| &**k).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["b", "c"]);
    assert_eq!(t.unmatched(), 2, "every row counted once, none matched");
}
