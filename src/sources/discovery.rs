//! Zero-config discovery: walk the namespace breadth-first with batched
//! reads and find the nodes that hold elections (ephemeral children with
//! sequence suffixes) and groups (ephemeral children without).
//!
//! Ephemeral nodes cannot have children, so a node with children is always
//! persistent; what a parent is depends on its children. The walk lists
//! every node's children and reads the stat of the parent and of a small
//! sample of them: if the sample is ephemeral the parent is an election, a
//! lock or a group (its children are not walked further), otherwise the walk
//! descends. Persistent sequential children (queues) are therefore never
//! taken for elections.
//!
//! A discovered election can page someone, so it takes evidence: every
//! child carries exactly the suffix ZooKeeper writes for a sequential node
//! ([`exact_sequence`]) with a number below the parent's `cversion` (the
//! counter the suffix was taken from), and none is named the way lock
//! recipes name their contenders (kazoo `__lock__`, Curator `-lock-`, …):
//! such trees are locks, for which being released is normal. Children that
//! merely end in digits (HBase's `host,port,startcode`) make a group.
//!
//! And it takes lasting evidence: a walk's finds become trees only when
//! their candidates outlive it. The walk remembers the first few children of
//! each find; `discovery.settle` later [`confirm`] reads them again, and a
//! find none of whose children is still there is [`Found::Fleeting`]: the
//! EPHEMERAL_SEQUENTIAL nodes ClickHouse writes for milliseconds during every
//! INSERT (`temp/abandonable_lock-N`, `block_numbers/*/block-N`) never make
//! an election, a switch or a timeline event, however often a walk meets
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use tracing::{debug, info, warn};
use zookeeper_client::{Client, MultiReadResult};

use super::zk::read::{BATCH, Op, join, multi_read};
use crate::config::{ClusterConfig, system_trees};
use crate::model::DiscoveryStatus;
use crate::model::candidate::IdentityMode;
use crate::model::candidate::exact_sequence;
use crate::model::content::ContentKind;
use crate::model::groups::GroupSpec;
use crate::model::locks::LockSpec;
use crate::model::locks::lock_named;
use crate::model::tree::{PathKind, Tree, TreePattern, TreeSource};

/// Children whose stat is read to classify their parent.
const SAMPLE: usize = 3;

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
    /// found: what [`confirm`] reads again for evidence that they last.
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
enum Sample {
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
fn kind_of(samples: &[Sample], children: &[String], cversion: Option<i32>) -> Found {
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

fn excluded(path: &str, exclude: &[String]) -> bool {
    exclude
        .iter()
        .any(|e| path == e || path.starts_with(&format!("{}/", e.trim_end_matches('/'))))
}

/// One batched read of the walk, counted in it.
async fn multi(
    client: &Client,
    paths: &[String],
    op: Op,
    walk: &mut Walk,
) -> Result<Vec<MultiReadResult>, zookeeper_client::Error> {
    walk.requests += paths.len().div_ceil(BATCH);
    walk.operations += paths.len();
    multi_read(client, paths, op, &|_| {}).await
}

/// Walks from `root`, skipping `exclude` subtrees, listing at most
/// `max_nodes` nodes.
pub async fn walk(
    client: &Client,
    root: &str,
    exclude: &[String],
    max_nodes: usize,
) -> Result<Walk, zookeeper_client::Error> {
    let mut walk = Walk::default();
    let mut frontier = vec![root.to_owned()];
    while !frontier.is_empty() {
        let room = max_nodes.saturating_sub(walk.walked);
        if room == 0 {
            walk.truncated = true;
            break;
        }
        let rest = frontier.split_off(frontier.len().min(room));
        if !rest.is_empty() {
            walk.truncated = true;
        }
        let listed = multi(client, &frontier, Op::Children, &mut walk).await?;
        walk.walked += frontier.len();
        let mut parents: Vec<(String, Vec<String>)> = Vec::new();
        for (path, result) in frontier.into_iter().zip(listed) {
            match result {
                MultiReadResult::Children { mut children } if !children.is_empty() => {
                    children.sort();
                    parents.push((path, children));
                }
                MultiReadResult::Children { .. } => {
                    walk.nodes.insert(path, Found::Empty);
                }
                // Deleted meanwhile, or no rights: nothing to classify.
                _ => {}
            }
        }
        // Each parent's own stat (its cversion), then a sample of children.
        let samples: Vec<String> = parents
            .iter()
            .flat_map(|(p, c)| {
                std::iter::once(p.clone()).chain(c.iter().take(SAMPLE).map(move |c| join(p, c)))
            })
            .collect();
        let stats = multi(client, &samples, Op::Data, &mut walk).await?;
        let mut stats = stats.into_iter();
        let mut next = Vec::new();
        for (path, children) in parents {
            let cversion = match stats.next() {
                Some(MultiReadResult::Data { stat, .. }) => Some(stat.cversion),
                _ => None,
            };
            let samples: Vec<Sample> = stats
                .by_ref()
                .take(children.len().min(SAMPLE))
                .map(|r| match r {
                    MultiReadResult::Data { stat, .. } if stat.ephemeral_owner != 0 => {
                        Sample::Ephemeral
                    }
                    MultiReadResult::Error {
                        err: zookeeper_client::Error::NoNode,
                    } => Sample::Vanished,
                    _ => Sample::Persistent,
                })
                .collect();
            let kind = kind_of(&samples, &children, cversion);
            if matches!(kind, Found::Election | Found::Lock | Found::Group) {
                walk.sampled.insert(
                    path.clone(),
                    children.iter().take(SAMPLE).cloned().collect(),
                );
            }
            if kind == Found::Other {
                next.extend(
                    children
                        .iter()
                        .map(|c| join(&path, c))
                        .filter(|p| !excluded(p, exclude)),
                );
            }
            walk.nodes.insert(path, kind);
        }
        next.extend(rest);
        frontier = next;
    }
    Ok(walk)
}

/// A tree already watched, as discovery needs to know it.
#[derive(Debug, Clone)]
pub struct Watched {
    pub pattern: TreePattern,
    pub kind: ContentKind,
    pub source: TreeSource,
}

/// What one walk changes: discovered trees that vanished or are now of
/// another kind (dropped with their series), and trees to add.
#[derive(Debug, Default)]
pub struct Rediscovery {
    pub retired: Vec<TreePattern>,
    pub added: Vec<Tree>,
    pub status: DiscoveryStatus,
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
fn retired(walk: &Walk, watched: &[Watched]) -> Vec<TreePattern> {
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

/// Known systems whose layout the walk found, as (kind, root): Kafka's
/// `controller` beside `controller_epoch` and `brokers/ids`, HBase's
/// `master` beside `backup-masters` and `rs`, HDFS's
/// `*/ActiveStandbyElectorLock`, Solr's `overseer_elect/election`.
pub fn recognise(walk: &Walk) -> BTreeSet<(&'static str, String)> {
    let has = |p: &str| walk.nodes.contains_key(p);
    let mut found = BTreeSet::new();
    for path in walk.nodes.keys() {
        let (dir, name) = (parent_of(path), path.rsplit('/').next().unwrap_or_default());
        let sibling = |n: &str| has(&join(dir, n));
        match name {
            "controller" if sibling("controller_epoch") && has(&join(dir, "brokers/ids")) => {
                found.insert(("kafka", dir.to_owned()));
            }
            "master" if sibling("backup-masters") && sibling("rs") => {
                found.insert(("hbase", dir.to_owned()));
            }
            "ActiveStandbyElectorLock" if dir != "/" => {
                found.insert(("hdfs", parent_of(dir).to_owned()));
            }
            "election" if dir.ends_with("/overseer_elect") => {
                found.insert(("solr", parent_of(dir).to_owned()));
            }
            _ => {}
        }
    }
    found
}

/// What one walk changed at once, and what it found that waits for
/// evidence.
#[derive(Debug)]
pub struct Looked {
    /// Discovered trees that vanished or changed kind: dropped now.
    pub retired: Vec<TreePattern>,
    pub status: DiscoveryStatus,
    /// The walk, when it found trees nobody watches: [`confirm`] them after
    /// `discovery.settle`.
    pub pending: Option<Walk>,
}

/// Walks the namespace: retires discovered trees that vanished or changed
/// kind, and keeps the walk for [`confirm`] when it found election, lock or
/// group trees no tree covers. `None` when the walk failed (it is retried at
/// the next interval).
pub async fn look(
    client: &Client,
    cfg: &ClusterConfig,
    watched: &[Watched],
    truncation_logged: &mut bool,
) -> Option<Looked> {
    let d = &cfg.discovery;
    let walk = match walk(client, &d.root, &d.exclude, d.max_nodes).await {
        Ok(w) => w,
        Err(e) => {
            debug!(cluster = %cfg.name, "discovery walk failed ({e}); retrying at the next interval");
            return None;
        }
    };
    if walk.truncated && !*truncation_logged {
        *truncation_logged = true;
        warn!(
            cluster = %cfg.name,
            max_nodes = d.max_nodes,
            "discovery stopped after max_nodes nodes; trees deeper in the namespace are not found \
             (raise discovery.max_nodes, narrow discovery.root, or configure the trees)"
        );
    }
    let status = DiscoveryStatus {
        nodes_walked: walk.walked,
        truncated: walk.truncated,
        last_run: Some(SystemTime::now()),
        fleeting: 0,
    };
    let retired = retired(&walk, watched);
    for p in &retired {
        info!(cluster = %cfg.name, tree = %p.as_str(), "a discovered tree vanished or changed kind; dropping it");
    }
    let still: Vec<TreePattern> = watched
        .iter()
        .map(|w| w.pattern.clone())
        .filter(|p| !retired.contains(p))
        .collect();
    let pending = (!found_trees(&walk, still).is_empty()).then_some(walk);
    Some(Looked {
        retired,
        status,
        pending,
    })
}

/// What a confirmation adds.
#[derive(Debug, Default)]
pub struct Confirmed {
    pub added: Vec<Tree>,
    /// Finds none of whose sampled children outlived the settle time.
    pub fleeting: u64,
}

/// Reads again the children `walk` sampled of every find no tree covers
/// (`watched` as it is now: a reload may have moved on) and turns into
/// trees the finds with at least one still there; the others are
/// [`Found::Fleeting`]. `None` when the reads failed (the next walk tries
/// again).
pub async fn confirm(
    client: &Client,
    cfg: &ClusterConfig,
    mut walk: Walk,
    watched: &[Watched],
) -> Option<Confirmed> {
    let patterns: Vec<TreePattern> = watched.iter().map(|w| w.pattern.clone()).collect();
    let finds: Vec<String> = walk
        .nodes
        .iter()
        .filter(|(p, k)| {
            matches!(k, Found::Election | Found::Lock | Found::Group)
                && !patterns.iter().any(|w| w.claims(p))
        })
        .map(|(p, _)| p.clone())
        .collect();
    let sampled = |p: &str| walk.sampled.get(p).map_or(&[][..], Vec::as_slice);
    let paths: Vec<String> = finds
        .iter()
        .flat_map(|p| sampled(p).iter().map(move |c| join(p, c)))
        .collect();
    let counts: Vec<usize> = finds.iter().map(|p| sampled(p).len()).collect();
    let reads = match multi_read(client, &paths, Op::Data, &|_| {}).await {
        Ok(r) => r,
        Err(e) => {
            debug!(cluster = %cfg.name, "confirming discovered trees failed ({e}); the next walk tries again");
            return None;
        }
    };
    let mut reads = reads.into_iter();
    let mut confirmed = Confirmed::default();
    for (find, n) in finds.into_iter().zip(counts) {
        let lasting = reads.by_ref().take(n).fold(false, |any, r| {
            any | matches!(r, MultiReadResult::Data { .. })
        });
        if !lasting {
            debug!(cluster = %cfg.name, path = %find, "found candidates that did not outlive discovery.settle; not a tree");
            walk.nodes.insert(find, Found::Fleeting);
            confirmed.fleeting += 1;
        }
    }
    for (tree, system) in found_trees(&walk, patterns) {
        match system {
            Some(kind) => {
                info!(cluster = %cfg.name, system = kind, tree = %tree.pattern().as_str(), "recognised a known system")
            }
            None => {
                info!(cluster = %cfg.name, tree = %tree.pattern().as_str(), kind = ?tree.content_kind(), "discovered a tree")
            }
        }
        confirmed.added.push(tree);
    }
    Some(confirmed)
}

/// The trees `walk` shows that `watched` does not cover (configured globs
/// win: a found node one of them claims is left to it), with the known
/// system each recognised one belongs to.
fn found_trees(walk: &Walk, mut watched: Vec<TreePattern>) -> Vec<(Tree, Option<&'static str>)> {
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
    fn exclusions_cover_subtrees() {
        let ex = vec!["/zookeeper".to_owned()];
        assert!(excluded("/zookeeper", &ex));
        assert!(excluded("/zookeeper/quota", &ex));
        assert!(!excluded("/zookeeperish", &ex));
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
}
