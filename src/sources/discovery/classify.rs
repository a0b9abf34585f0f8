//! What a walk found, judged without I/O: the kind of each listed parent
//! from its sampled children, the globs found parents fold into, which
//! discovered trees a walk shows gone, the known systems a layout reveals,
//! and the trees a walk adds to those already watched. The walk itself and
//! the confirmation read ZooKeeper in [`super`].

use std::collections::{BTreeMap, BTreeSet};

use crate::config::system_trees;
use crate::model::candidate::IdentityMode;
use crate::model::candidate::exact_sequence;
use crate::model::content::ContentKind;
use crate::model::groups::GroupSpec;
use crate::model::locks::LockSpec;
use crate::model::locks::lock_named;
use crate::model::tree::{PathKind, Tree, TreePattern, TreeSource};
use crate::systems::{self, Spot};

/// Children whose stat is read to classify their parent.
pub(super) const SAMPLE: usize = 3;

/// What the walk made of one listed node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Election,
    Lock,
    Group,
    /// Persistent children: walked further.
    Other,
    /// No children (a leaf, or an election or group empty right now).
    Empty,
    /// Found as an election, lock or group, but none of the children the
    /// walk saw was still there `settle` later: no tree.
    Fleeting,
}

/// The outcome of one walk.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// Every listed node and what it is.
    pub nodes: BTreeMap<String, Found>,
    pub walked: usize,
    /// The walk stopped at `max_nodes` with nodes left to list.
    pub truncated: bool,
    /// Multi-read requests and the operations in them.
    pub requests: usize,
    pub operations: usize,
    /// The first children (by name) of every election, lock and group
    /// found: what [`confirm`](super::confirm) reads again for evidence that they last.
    pub sampled: BTreeMap<String, Vec<String>>,
}

impl Walk {
    pub fn elections(&self) -> impl Iterator<Item = &str> {
        self.of(Found::Election)
    }

    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.of(Found::Group)
    }

    pub fn of(&self, kind: Found) -> impl Iterator<Item = &str> {
        self.nodes
            .iter()
            .filter(move |(_, k)| **k == kind)
            .map(|(p, _)| p.as_str())
    }
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// What the walk read of one sampled child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sample {
    Ephemeral,
    /// Persistent, or unreadable for another reason than being gone.
    Persistent,
    /// Deleted between the listing and the read.
    Vanished,
}

/// What a listed parent is from its sampled children: a child deleted
/// between the listing and the read is no evidence of anything (a lock
/// released mid-walk must not read as a persistent child and retire the
/// lock's tree), so a parent whose samples all vanished is empty now.
pub(super) fn kind_of(samples: &[Sample], children: &[String], cversion: Option<i32>) -> Found {
    if samples.contains(&Sample::Persistent) {
        Found::Other
    } else if samples.contains(&Sample::Ephemeral) {
        classify(children, cversion)
    } else {
        Found::Empty
    }
}

/// What a parent with ephemeral children is, from their names and the
/// parent's `cversion` (`None` when its stat could not be read: no
/// election then).
fn classify(children: &[String], cversion: Option<i32>) -> Found {
    // A sequence number is taken from the parent's cversion at creation and
    // cversion only grows, so a real suffix lies below it (unless the
    // counter wrapped past i32::MAX, where nothing can be told).
    let sequential = |name: &String| {
        exact_sequence(name)
            .zip(cversion)
            .is_some_and(|(seq, cv)| cv < 0 || seq < cv)
    };
    let all_sequential = children.iter().all(sequential);
    if all_sequential && children.iter().any(|c| lock_named(c)) {
        Found::Lock
    } else if all_sequential {
        Found::Election
    } else if children.iter().any(sequential) {
        // Mixed: neither a clean queue of candidates nor a plain registry.
        Found::Other
    } else {
        Found::Group
    }
}

/// Turns found parents into watchable globs. Elections (or groups) that
/// share a parent become `parent/*` when every sibling that has children is
/// of the same kind (a sibling without children is then an election or
/// group that is empty right now); otherwise each keeps its exact path, so a
/// `config` node next to elections is never reported as a masterless one.
pub fn patterns(walk: &Walk, kind: Found) -> Vec<TreePattern> {
    let mut by_parent: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for path in walk.of(kind) {
        by_parent.entry(parent_of(path)).or_default().push(path);
    }
    let mut out = Vec::new();
    for (parent, paths) in by_parent {
        let uniform = walk
            .nodes
            .iter()
            .filter(|(p, _)| parent_of(p) == parent && p.as_str() != parent)
            .all(|(_, k)| *k == kind || *k == Found::Empty);
        let glob = if parent == "/" {
            "/*".to_owned()
        } else {
            format!("{parent}/*")
        };
        match TreePattern::parse(&glob) {
            Ok(p) if uniform && paths.len() > 1 => out.push(p),
            _ => out.extend(paths.iter().filter_map(|p| TreePattern::parse(p).ok())),
        }
    }
    out
}

/// A tree already watched, as discovery needs to know it.
#[derive(Debug, Clone)]
pub struct Watched {
    pub pattern: TreePattern,
    pub kind: ContentKind,
    pub source: TreeSource,
}

/// The found kind of a tree's kind.
fn found_kind(kind: ContentKind) -> Found {
    match kind {
        ContentKind::Election => Found::Election,
        ContentKind::Group => Found::Group,
        ContentKind::Lock => Found::Lock,
    }
}

/// Discovered trees the walk shows gone (no node matches them any more) or
/// of another kind now. Nothing is retired after a truncated walk: what it
/// did not reach is no evidence of absence.
pub(super) fn retired(walk: &Walk, watched: &[Watched]) -> Vec<TreePattern> {
    if walk.truncated {
        return Vec::new();
    }
    watched
        .iter()
        .filter(|w| w.source == TreeSource::Discovered)
        .filter(|w| {
            let kinds: Vec<Found> = walk
                .nodes
                .iter()
                .filter(|(path, _)| w.pattern.classify(path) == PathKind::Parent)
                .map(|(_, k)| *k)
                .collect();
            let expected = found_kind(w.kind);
            kinds.is_empty() || kinds.iter().any(|k| *k != expected && *k != Found::Empty)
        })
        .map(|w| w.pattern.clone())
        .collect()
}

/// Known systems whose layout the walk found, as (kind, root): each
/// system judges every listed node ([`crate::systems::KnownSystem::recognise`]).
pub fn recognise(walk: &Walk) -> BTreeSet<(&'static str, String)> {
    let listed = |p: &str| walk.nodes.contains_key(p);
    let mut found = BTreeSet::new();
    for path in walk.nodes.keys() {
        let spot = Spot::new(path, &listed);
        for system in systems::all() {
            if let Some(root) = system.recognise(&spot) {
                found.insert((system.name(), root));
            }
        }
    }
    found
}

/// Nodes a recognised system writes that none of its trees watches, and
/// that discovery must not take for generic trees.
fn claimed(kind: &str, root: &str) -> Vec<TreePattern> {
    let globs = systems::find(kind).map_or(&[][..], |s| s.claimed());
    let root = if root == "/" { "" } else { root };
    globs
        .iter()
        .filter_map(|g| TreePattern::parse(&format!("{root}{g}")).ok())
        .collect()
}

/// The trees `walk` shows that `watched` does not cover (configured globs
/// win: a found node one of them claims is left to it), with the known
/// system each recognised one belongs to.
pub(super) fn found_trees(
    walk: &Walk,
    mut watched: Vec<TreePattern>,
) -> Vec<(Tree, Option<&'static str>)> {
    let mut trees = Vec::new();
    // Known systems first: their trees are as good as configured, and the
    // registries they include are not found again as generic groups.
    for (kind, root) in recognise(walk) {
        let Ok((elections, groups)) = system_trees(kind, &root) else {
            continue;
        };
        let new_system = elections
            .iter()
            .all(|e| !watched.iter().any(|w| w.as_str() == e.pattern.as_str()));
        if !new_system {
            continue;
        }
        let system_trees = elections
            .into_iter()
            .map(|e| Tree::elections(e.pattern, e.spec))
            .chain(groups.into_iter().map(|g| Tree::groups(g.pattern, g.spec)))
            .filter(|t| !watched.iter().any(|w| w.as_str() == t.pattern().as_str()))
            .collect::<Vec<_>>();
        for tree in system_trees {
            watched.push(tree.pattern().clone());
            trees.push((tree.with_source(TreeSource::Recognised), Some(kind)));
        }
        watched.extend(claimed(kind, &root));
    }
    for kind in [Found::Election, Found::Lock, Found::Group] {
        let found: Vec<&str> = walk.of(kind).collect();
        for pattern in patterns(walk, kind) {
            let under: Vec<&str> = found
                .iter()
                .copied()
                .filter(|p| pattern.classify(p) == PathKind::Parent)
                .collect();
            let fresh = uncovered(under.iter().copied(), &watched);
            if fresh.is_empty() {
                continue;
            }
            // Part of a glob is already watched: watch the rest one by one.
            let globs = if fresh.len() == under.len() {
                vec![pattern]
            } else {
                fresh
                    .iter()
                    .filter_map(|p| TreePattern::parse(p).ok())
                    .collect()
            };
            for p in globs {
                let tree = match kind {
                    Found::Election => Tree::elections(p, IdentityMode::Data),
                    Found::Lock => Tree::locks(p, LockSpec::default()),
                    _ => Tree::groups(p, GroupSpec::discovered()),
                };
                trees.push((tree.with_source(TreeSource::Discovered), None));
            }
        }
    }
    trees
}

/// Paths of the found kind not already covered by a configured pattern.
pub fn uncovered<'a>(
    paths: impl Iterator<Item = &'a str>,
    configured: &[TreePattern],
) -> BTreeSet<String> {
    paths
        .filter(|p| !configured.iter().any(|c| c.claims(p)))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk_of(nodes: &[(&str, Found)]) -> Walk {
        Walk {
            nodes: nodes.iter().map(|(p, k)| (p.to_string(), *k)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn siblings_fold_into_a_glob_only_when_uniform() {
        let w = walk_of(&[
            ("/bots", Found::Other),
            ("/bots/b1", Found::Election),
            ("/bots/b2", Found::Election),
            ("/locks", Found::Other),
            ("/locks/l1", Found::Election),
            ("/locks/config", Found::Other),
            ("/empty", Found::Other),
            ("/empty/e1", Found::Election),
            ("/empty/e2", Found::Election),
            ("/empty/e3", Found::Empty),
            ("/solo/leader", Found::Election),
        ]);
        let p: Vec<String> = patterns(&w, Found::Election)
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect();
        assert_eq!(p, vec!["/bots/*", "/empty/*", "/locks/l1", "/solo/leader"]);
    }

    #[test]
    fn fleeting_finds_make_no_tree_and_no_glob_over_their_siblings() {
        let w = walk_of(&[
            ("/bots", Found::Other),
            ("/bots/b1", Found::Election),
            ("/bots/b2", Found::Election),
            ("/ch/block_numbers", Found::Other),
            ("/ch/block_numbers/202401", Found::Fleeting),
            ("/ch/block_numbers/202402", Found::Fleeting),
            ("/jobs", Found::Other),
            ("/jobs/nightly", Found::Election),
            ("/jobs/insert", Found::Fleeting),
        ]);
        let found: Vec<String> = found_trees(&w, Vec::new())
            .iter()
            .map(|(t, _)| t.pattern().as_str().to_owned())
            .collect();
        assert_eq!(found, vec!["/bots/*", "/jobs/nightly"]);
    }

    #[test]
    fn a_child_deleted_mid_walk_is_no_evidence_of_a_kind() {
        use Sample::*;
        let lock = vec!["7c2e__lock__0000000000".to_owned()];
        assert_eq!(kind_of(&[Ephemeral], &lock, Some(1)), Found::Lock);
        // Released between the listing and the read: empty now, not a
        // persistent node that would retire the lock's tree.
        assert_eq!(kind_of(&[Vanished], &lock, Some(1)), Found::Empty);
        assert_eq!(kind_of(&[Vanished, Ephemeral], &lock, Some(2)), Found::Lock);
        assert_eq!(
            kind_of(&[Persistent, Vanished], &lock, Some(2)),
            Found::Other
        );
        assert_eq!(kind_of(&[], &lock, Some(1)), Found::Empty);
    }

    #[test]
    fn configured_patterns_win() {
        let configured = vec![
            TreePattern::parse("/bots/*")
                .unwrap()
                .excluding(&["/bots/retired".into()])
                .unwrap(),
        ];
        // An excluded election stays the configured tree's: not discovered.
        let found = ["/bots/b1", "/bots/retired", "/locks/l1"];
        assert_eq!(
            uncovered(found.into_iter(), &configured)
                .into_iter()
                .collect::<Vec<_>>(),
            vec!["/locks/l1"]
        );
    }

    #[test]
    fn spark_and_flink_are_recognised_at_any_root_and_flinks_leader_nodes_are_theirs() {
        use Found::*;
        let w = walk_of(&[
            ("/ha", Other),
            ("/ha/spark", Other),
            ("/ha/spark/leader_election", Election),
            ("/ha/spark/master_status", Empty),
            ("/fl", Other),
            ("/fl/app-1", Other),
            ("/fl/app-1/leader", Other),
            ("/fl/app-1/leader/latch", Election),
            ("/fl/app-1/leader/rest_server", Group),
            ("/fl/app-1/leader/dispatcher", Group),
            // Not Flink's: a `latch` without the leader information.
            ("/other/leader", Other),
            ("/other/leader/latch", Election),
        ]);
        let found: Vec<(&str, String)> = recognise(&w).into_iter().collect();
        assert_eq!(
            found,
            [
                ("flink", "/fl".to_owned()),
                ("spark", "/ha/spark".to_owned())
            ]
        );
        let trees: Vec<(String, &str)> = found_trees(&w, Vec::new())
            .into_iter()
            .map(|(t, kind)| (t.pattern().as_str().to_owned(), kind.unwrap_or("-")))
            .collect();
        assert_eq!(
            trees,
            [
                ("/fl/*/leader/latch".to_owned(), "flink"),
                ("/ha/spark/leader_election".to_owned(), "spark"),
                ("/other/leader/latch".to_owned(), "-"),
            ],
            "Flink's leader information is no generic group"
        );
    }

    /// Every known system, the unit tests' own included, is recognised
    /// where a walk lists its layout, at any root, as that system alone,
    /// and gives the trees `--system` would.
    #[test]
    fn every_known_system_is_recognised_at_its_layout_and_gives_its_trees() {
        for system in crate::systems::all() {
            for root in [system.default_root(), "/", "/deep/root"] {
                let base = if root == "/" { "" } else { root };
                let nodes: Vec<(String, Found)> = system
                    .layout()
                    .iter()
                    .map(|p| (format!("{base}{p}"), Found::Other))
                    .collect();
                let w = Walk {
                    nodes: nodes.into_iter().collect(),
                    ..Default::default()
                };
                let name = system.name();
                let found: Vec<(&str, String)> = recognise(&w).into_iter().collect();
                assert_eq!(found, [(name, root.to_owned())], "{name} at {root}");
                let (elections, groups) = system_trees(name, root).unwrap();
                let expected: BTreeSet<String> = elections
                    .iter()
                    .map(|e| e.pattern.as_str().to_owned())
                    .chain(groups.iter().map(|g| g.pattern.as_str().to_owned()))
                    .collect();
                let trees = found_trees(&w, Vec::new());
                assert!(trees.iter().all(|(_, kind)| *kind == Some(name)), "{name}");
                let patterns: BTreeSet<String> = trees
                    .iter()
                    .map(|(t, _)| t.pattern().as_str().to_owned())
                    .collect();
                assert_eq!(patterns, expected, "{name} at {root}");
            }
        }
    }
}
