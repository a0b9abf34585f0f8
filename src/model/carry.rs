//! What a configuration reload keeps of a cluster's trees: a tree whose
//! configuration did not change keeps its elections, counters and history;
//! the rest start fresh.

use super::tree::{Tree, TreeSource};

/// A reload's new set of configured trees for a cluster whose session
/// stays: `fresh` are new models, `kept[j] = Some(i)` says fresh tree `j` is
/// configured tree `i` now, unchanged, whose model stays.
#[derive(Debug)]
pub struct TreePlan {
    pub fresh: Vec<Tree>,
    pub kept: Vec<Option<usize>>,
}

/// The trees of a cluster after a reload. `fresh` are the configured trees
/// now, new models; `kept[j] = Some(i)` says fresh tree `j` is configured
/// tree `i` of `old` unchanged, whose model takes its place. When
/// `keep_found` (discovery unchanged) the trees discovery found follow,
/// unless now configured. Every tree taken over is stale until it is listed
/// again, as after an expiry.
pub fn trees(
    old: Vec<Tree>,
    mut fresh: Vec<Tree>,
    kept: &[Option<usize>],
    keep_found: bool,
) -> Vec<Tree> {
    let mut old: Vec<Option<Tree>> = old.into_iter().map(Some).collect();
    for (j, from) in kept.iter().enumerate().take(fresh.len()) {
        if let Some(mut tree) = from.and_then(|i| old.get_mut(i)?.take()) {
            tree.mark_unsynced();
            fresh[j] = tree;
        }
    }
    if keep_found {
        let configured: Vec<_> = fresh.iter().map(|t| t.pattern().clone()).collect();
        for mut tree in old.into_iter().flatten() {
            if tree.source() != TreeSource::Configured && !configured.contains(tree.pattern()) {
                tree.mark_unsynced();
                fresh.push(tree);
            }
        }
    }
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ClusterState;
    use crate::model::candidate::IdentityMode;
    use crate::model::election::Now;
    use crate::model::tree::TreePattern;
    use std::time::{Instant, SystemTime};

    fn tree(p: &str) -> Tree {
        Tree::elections(TreePattern::parse(p).unwrap(), IdentityMode::Node)
    }

    fn old() -> ClusterState {
        let found = |p: &str| tree(p).with_source(TreeSource::Discovered);
        let mut c = ClusterState::new(
            "c".into(),
            vec![
                tree("/a/*"),
                tree("/gone/*"),
                found("/found/*"),
                found("/new/*"),
            ],
            false,
        );
        let now = Now {
            mono: Instant::now(),
            wall: SystemTime::UNIX_EPOCH,
        };
        c.apply_listing(0, vec![("/a/x".into(), vec![])], now);
        c.session.reconnects = 3;
        c
    }

    fn patterns(c: &ClusterState) -> Vec<&str> {
        c.trees.iter().map(|t| t.pattern().as_str()).collect()
    }

    #[test]
    fn a_rebuilt_cluster_takes_over_what_did_not_change() {
        let fresh = || ClusterState::new("c".into(), vec![tree("/new/*"), tree("/a/*")], false);
        let mut c = fresh();
        c.adopt(old(), &[None, Some(0)], true);
        // /gone/* was configured and is no more; /new/* is configured now,
        // so its discovered twin is not carried.
        assert_eq!(patterns(&c), ["/new/*", "/a/*", "/found/*"]);
        assert!(c.trees[1].has_parent("/a/x"), "kept its elections");
        assert!(!c.trees[1].synced(), "stale until the new session lists it");
        assert_eq!(c.trees[0].parent_count(), 0);
        assert_eq!(c.session.reconnects, 3, "session counters carry on");

        let mut c = fresh();
        c.adopt(old(), &[None, Some(0)], false);
        assert_eq!(
            c.trees.len(),
            2,
            "discovery changed: its finds are not carried"
        );
    }

    #[test]
    fn a_tree_change_keeps_the_session_and_the_unchanged_trees() {
        let mut c = old();
        c.retree(vec![tree("/a/*"), tree("/b/*")], &[Some(0), None]);
        // Discovered trees stay (none is configured now); /gone/* goes.
        assert_eq!(patterns(&c), ["/a/*", "/b/*", "/found/*", "/new/*"]);
        assert!(c.trees[0].has_parent("/a/x"));
        assert_eq!(c.session.reconnects, 3);
    }

    #[test]
    fn a_rebuilt_ensemble_counts_on_from_the_old_one() {
        let mut old = ClusterState::new("c".into(), vec![], true);
        for _ in 0..3 {
            old.ensemble.as_mut().unwrap().apply(vec![]);
        }
        let mut c = ClusterState::new("c".into(), vec![], true);
        c.adopt(old, &[], true);
        assert_eq!(c.ensemble.as_ref().unwrap().generation(), 4);
    }
}
