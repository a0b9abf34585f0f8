use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::tree::{ChildNode, Tree, TreePattern};
use std::time::{Instant, SystemTime};

fn now() -> crate::model::Now {
    crate::model::Now {
        mono: Instant::now(),
        wall: SystemTime::UNIX_EPOCH,
    }
}

fn listing(n: usize) -> Vec<(String, Vec<ChildNode>)> {
    (0..n).map(|i| (format!("/b/{i:03}"), vec![])).collect()
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
