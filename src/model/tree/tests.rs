use super::*;
use crate::model::candidate::IdentityMode;
use std::time::{Instant, SystemTime};

fn now() -> Now {
    Now {
        mono: Instant::now(),
        wall: SystemTime::UNIX_EPOCH,
    }
}

fn child(name: &str) -> ChildNode {
    ChildNode {
        name: name.into(),
        data: Vec::new(),
        ephemeral_owner: 1,
        ctime_ms: 0,
    }
}

#[test]
fn sync_state_follows_listings_and_failures() {
    let mut t = Tree::elections(TreePattern::parse("/b/*").unwrap(), IdentityMode::Node);
    assert!(!t.synced());
    t.apply_listing(vec![("/b/1".into(), vec![child("n_0000000001")])], now());
    assert!(t.synced());
    t.mark_unsynced();
    assert!(!t.synced());
    t.sync_failed("no rights".into());
    assert_eq!((t.sync_error(), t.sync_failures()), (Some("no rights"), 1));
    // The second listing is a resync: the new candidate counts as a join.
    t.apply_listing(
        vec![(
            "/b/1".into(),
            vec![child("n_0000000001"), child("n_0000000002")],
        )],
        now(),
    );
    assert!(t.synced() && t.sync_error().is_none());
    assert_eq!(
        t.as_elections().unwrap().election("/b/1").unwrap().joins(),
        1
    );
    assert_eq!(t.content_kind(), ContentKind::Election);
}

#[test]
fn a_listing_in_parts_is_a_listing() {
    let mut t = Tree::elections(TreePattern::parse("/b/*").unwrap(), IdentityMode::Node);
    t.apply_listing(
        vec![
            ("/b/1".into(), vec![child("n_0000000001")]),
            ("/b/2".into(), vec![child("n_0000000001")]),
        ],
        now(),
    );
    // A resync in two parts: /b/2 is gone, /b/3 is new, /b/1 switched.
    t.mark_unsynced();
    t.apply_listing_part(vec![("/b/1".into(), vec![child("n_0000000002")])], now());
    assert!(!t.synced(), "not synced until the listing ends");
    t.apply_listing_part(vec![("/b/3".into(), vec![])], now());
    t.finish_listing(&|p| p == "/b/1" || p == "/b/3", now());
    let e = t.as_elections().unwrap();
    assert!(t.synced());
    assert_eq!(
        e.elections().map(|(p, _)| p).collect::<Vec<_>>(),
        ["/b/1", "/b/3"]
    );
    assert_eq!(
        e.election("/b/1").unwrap().changes(),
        1,
        "counted as a resync"
    );
}

#[test]
fn groups_are_fed_the_same_way() {
    let spec = GroupSpec {
        member: IdentityMode::Node,
        min_members: None,
        export_members: false,
        alive: None,
    };
    let mut t = Tree::groups(TreePattern::parse("/svc/*").unwrap(), spec);
    t.apply_listing(vec![("/svc/api".into(), vec![child("10.0.0.1:80")])], now());
    t.child_upserted("/svc/api", child("10.0.0.2:80"), now());
    assert_eq!(
        (
            t.parent_count(),
            t.node_counts().ephemeral,
            t.node_counts().nodes
        ),
        (1, 2, 3)
    );
    assert!(t.has_parent("/svc/api"));
    assert_eq!(t.content_kind(), ContentKind::Group);
    assert_eq!(t.child_names("/svc/api").len(), 2);
}
