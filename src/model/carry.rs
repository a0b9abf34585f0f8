//! What a configuration reload keeps of a cluster's trees: a tree whose
//! configuration did not change keeps its elections, counters and history;
//! the rest start fresh.

use super::tree::{Tree, TreeSource};

/// A reload's new set of configured trees for a cluster whose session
/// stays. A tree whose id a running tree has is that tree, unchanged: the
/// running model stays (see [`TreeId`](super::tree::TreeId)).
#[derive(Debug)]
pub struct TreePlan {
    pub configured: Vec<Tree>,
}

/// Whether the trees taken over are still followed by the same session
/// (a reload that changed only trees) or wait for a new one to list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// The session and its watches stay: what was taken over stays synced.
    Stays,
    /// A new session: every tree taken over is stale until it is listed
    /// again, as after an expiry.
    New,
}

/// The trees of a cluster after a reload. `configured` are the configured
/// trees now, new models; one whose id a tree of `old` has takes that
/// tree's model. When `keep_found` (discovery unchanged) the trees
/// discovery found follow, unless their glob is now configured.
pub fn trees(
    old: Vec<Tree>,
    configured: Vec<Tree>,
    keep_found: bool,
    session: Session,
) -> Vec<Tree> {
    let mut old: Vec<Option<Tree>> = old.into_iter().map(Some).collect();
    let mut take = |id| {
        let slot = old
            .iter_mut()
            .find(|t| t.as_ref().is_some_and(|t| t.id() == id))?;
        let mut tree = slot.take()?;
        if session == Session::New {
            tree.mark_unsynced();
        }
        Some(tree)
    };
    let mut trees: Vec<Tree> = configured
        .into_iter()
        .map(|fresh| take(fresh.id()).unwrap_or(fresh))
        .collect();
    if keep_found {
        let patterns: Vec<_> = trees.iter().map(|t| t.pattern().clone()).collect();
        for mut tree in old.into_iter().flatten() {
            if tree.source() != TreeSource::Configured && !patterns.contains(tree.pattern()) {
                if session == Session::New {
                    tree.mark_unsynced();
                }
                trees.push(tree);
            }
        }
    }
    trees
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ClusterState;
    use crate::model::Now;
    use crate::model::candidate::IdentityMode;
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
        let a = c.trees()[0].id();
        c.apply_listing(a, vec![("/a/x".into(), vec![])], now);
        for _ in 0..3 {
            c.session_reconnected(false, true, now.wall);
        }
        c
    }

    fn patterns(c: &ClusterState) -> Vec<&str> {
        c.trees().iter().map(|t| t.pattern().as_str()).collect()
    }

    #[test]
    fn a_rebuilt_cluster_takes_over_what_did_not_change() {
        let fresh = || ClusterState::new("c".into(), vec![tree("/new/*"), tree("/a/*")], false);
        let mut c = fresh();
        c.adopt(old(), true);
        // /gone/* was configured and is no more; /new/* is configured now,
        // so its discovered twin is not carried.
        assert_eq!(patterns(&c), ["/new/*", "/a/*", "/found/*"]);
        assert!(c.trees()[1].has_parent("/a/x"), "kept its elections");
        assert!(
            !c.trees()[1].synced(),
            "stale until the new session lists it"
        );
        assert_eq!(c.trees()[0].parent_count(), 0);
        assert_eq!(c.session().reconnects, 3, "session counters carry on");

        let mut c = fresh();
        c.adopt(old(), false);
        assert_eq!(
            c.trees().len(),
            2,
            "discovery changed: its finds are not carried"
        );
    }

    #[test]
    fn a_tree_change_keeps_the_session_and_the_unchanged_trees() {
        let mut c = old();
        c.retree(vec![tree("/a/*"), tree("/b/*")]);
        // Discovered trees stay (none is configured now); /gone/* goes.
        assert_eq!(patterns(&c), ["/a/*", "/b/*", "/found/*", "/new/*"]);
        assert!(c.trees()[0].has_parent("/a/x"));
        assert_eq!(c.trees()[0].id(), tree("/a/*").id(), "the same tree");
        assert!(c.trees()[0].synced(), "its session and watch stay");
        assert_eq!(c.session().reconnects, 3);
    }

    #[test]
    fn a_rebuilt_ensemble_counts_on_from_the_old_one() {
        let old = ClusterState::new("c".into(), vec![], true);
        for _ in 0..3 {
            old.ensemble().collected(vec![]);
        }
        let mut c = ClusterState::new("c".into(), vec![], true);
        c.adopt(old, true);
        assert_eq!(c.ensemble().now().generation(), 4);
    }
}
