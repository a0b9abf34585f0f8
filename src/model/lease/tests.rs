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
    assert_eq!(book.row("k").unwrap().holder, "a");
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
