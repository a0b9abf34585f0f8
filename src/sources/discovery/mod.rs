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
//! (`exact_sequence`) with a number below the parent's `cversion` (the
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

use std::time::SystemTime;

use tracing::{debug, info, warn};
use zookeeper_client::{Client, MultiReadResult};

use super::zk::read::{BATCH, Op, multi_read};
use crate::config::ClusterConfig;
use crate::model::DiscoveryStatus;
use crate::model::tree::join;
use crate::model::tree::{Tree, TreePattern};

mod classify;

pub use classify::{Found, Walk, Watched, patterns, recognise, uncovered};
use classify::{SAMPLE, Sample, found_trees, kind_of, retired};

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
        let parents = list_level(client, frontier, &mut walk).await?;
        let mut next = classify_level(client, parents, exclude, &mut walk).await?;
        next.extend(rest);
        frontier = next;
    }
    Ok(walk)
}

/// Lists one level: the nodes with children (sorted), to classify; the
/// childless ones are recorded as empty.
async fn list_level(
    client: &Client,
    level: Vec<String>,
    walk: &mut Walk,
) -> Result<Vec<(String, Vec<String>)>, zookeeper_client::Error> {
    let listed = multi(client, &level, Op::Children, walk).await?;
    walk.walked += level.len();
    let mut parents = Vec::new();
    for (path, result) in level.into_iter().zip(listed) {
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
    Ok(parents)
}

/// Classifies each parent from its own stat (its cversion) and a sample
/// of its children; returns the next level (children of what is none of
/// the kinds, outside `exclude`).
async fn classify_level(
    client: &Client,
    parents: Vec<(String, Vec<String>)>,
    exclude: &[String],
    walk: &mut Walk,
) -> Result<Vec<String>, zookeeper_client::Error> {
    let samples: Vec<String> = parents
        .iter()
        .flat_map(|(p, c)| {
            std::iter::once(p.clone()).chain(c.iter().take(SAMPLE).map(move |c| join(p, c)))
        })
        .collect();
    let stats = multi(client, &samples, Op::Data, walk).await?;
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
            .map(sample_of)
            .collect();
        let kind = kind_of(&samples, &children, cversion);
        if matches!(kind, Found::Election | Found::Lock | Found::Group) {
            let sampled = children.iter().take(SAMPLE).cloned().collect();
            walk.sampled.insert(path.clone(), sampled);
        }
        if kind == Found::Other {
            let below = children.iter().map(|c| join(&path, c));
            next.extend(below.filter(|p| !excluded(p, exclude)));
        }
        walk.nodes.insert(path, kind);
    }
    Ok(next)
}

/// What one sampled child's read says.
fn sample_of(read: MultiReadResult) -> Sample {
    match read {
        MultiReadResult::Data { stat, .. } if stat.ephemeral_owner != 0 => Sample::Ephemeral,
        MultiReadResult::Error {
            err: zookeeper_client::Error::NoNode,
        } => Sample::Vanished,
        _ => Sample::Persistent,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusions_cover_subtrees() {
        let ex = vec!["/zookeeper".to_owned()];
        assert!(excluded("/zookeeper", &ex));
        assert!(excluded("/zookeeper/quota", &ex));
        assert!(!excluded("/zookeeperish", &ex));
    }
}
