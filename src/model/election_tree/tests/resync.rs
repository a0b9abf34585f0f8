//! Listings after a reconnect or a new session: what changed meanwhile is
//! counted once, and what was counted before stays.

use super::*;

#[test]
fn resync_listing_counts_changes_and_drops_vanished_elections() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(IdentityMode::Node);
    tree.apply_listing(
        vec![
            ("/bots/b1".into(), vec![child("i_0000000001", true)]),
            ("/bots/gone".into(), vec![]),
        ],
        now(t, 0),
        false,
    );
    tree.apply_listing(
        vec![
            ("/bots/b1".into(), vec![child("i_0000000002", true)]),
            ("/bots/new".into(), vec![child("i_0000000005", true)]),
        ],
        now(t, 10),
        true,
    );
    let b1 = tree.election("/bots/b1").unwrap();
    assert_eq!((b1.changes(), b1.joins(), b1.leaves()), (1, 1, 1));
    let new = tree.election("/bots/new").unwrap();
    assert_eq!((new.changes(), new.joins()), (0, 1));
    assert!(tree.election("/bots/gone").is_none());
}

/// A session that expired is rebuilt and lists every tree again; what the
/// agent counted before (switches, their moments, regressions) stays, so
/// no counter goes backwards and a flapping window keeps what it saw.
#[test]
fn a_listing_after_a_new_session_keeps_switch_history_and_regressions() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(IdentityMode::Node);
    let e = "/bots/b1";
    let name = |i: u32| format!("i_{i:010}");
    tree.apply_listing(
        vec![(e.into(), vec![child(&name(1), true)])],
        now(t, 0),
        false,
    );
    for i in 2..=4 {
        tree.child_upserted(e, child(&name(i), true), now(t, u64::from(i)));
        tree.child_deleted(e, &name(i - 1), now(t, u64::from(i)));
    }
    let before = tree.election(e).unwrap();
    assert_eq!(before.changes(), 3);
    assert_eq!(
        before.switches_within(Duration::from_secs(60), t + Duration::from_secs(10)),
        3
    );
    // The new session's listing: the same master, one more candidate.
    tree.apply_listing(
        vec![(e.into(), vec![child(&name(4), true), child(&name(5), true)])],
        now(t, 20),
        true,
    );
    let after = tree.election(e).unwrap();
    assert_eq!(after.changes(), 3, "no switch lost, none invented");
    assert_eq!(
        after.switches_within(Duration::from_secs(60), t + Duration::from_secs(20)),
        3
    );

    let mut kafka = controller();
    let epoch = |v: &str| ChildNode {
        name: "controller_epoch".into(),
        data: v.as_bytes().to_vec(),
        ephemeral_owner: 0,
        ctime_ms: 0,
    };
    let listing = |v: &str| vec![("/".into(), vec![node("controller", 7, 1), epoch(v)])];
    kafka.apply_listing(listing("5"), now(t, 0), false);
    kafka.child_upserted("/", epoch("4"), now(t, 1));
    assert_eq!(kafka.facts("/controller").unwrap().epoch_regressions, 1);
    kafka.apply_listing(listing("4"), now(t, 20), true);
    assert_eq!(kafka.facts("/controller").unwrap().epoch_regressions, 1);
}
