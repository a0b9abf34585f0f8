//! Fallback for servers without persistent watches or multi-reads
//! (ZooKeeper 3.4 and 3.5): one-shot child watches on every level of the
//! glob, re-armed when they fire, and plain pipelined reads.
//!
//! The walk starts at `/` and puts a child watch on each node whose depth is
//! below the glob's: on `/` and the literal ancestors (so a tree created later
//! is noticed), on every wildcard match, and on every election (its
//! candidates). A fired watch re-lists only the node it names: adding or
//! removing one candidate costs one listing of that election, not of the tree.
//! Data changes of candidates are not watched in this mode (a changed
//! identity is seen at the next resync).

use std::collections::{BTreeSet, HashSet};
use std::time::Instant;

use futures::future::join_all;
use tokio::sync::mpsc;
use zookeeper_client::{Client, EventType, OneshotWatcher};

use super::watch::TreeEvent;
use crate::model::Now;
use crate::model::tree::join;
use crate::model::tree::{ChildNode, TreeId, TreePattern};
use crate::model::{SharedCluster, TreeChange};

/// Requests issued concurrently by the walk and by data reads.
const CONCURRENCY: usize = 256;

/// Where a one-shot watch reports: tree, watch generation, channel.
#[derive(Clone)]
pub struct Sink {
    pub tree: TreeId,
    pub generation: u64,
    pub tx: mpsc::UnboundedSender<TreeEvent>,
}

fn forward(watcher: OneshotWatcher, sink: &Sink) {
    let sink = sink.clone();
    tokio::spawn(async move {
        let event = watcher.changed().await;
        if event.event_type != EventType::Session {
            let _ = sink.tx.send(TreeEvent {
                tree: sink.tree,
                generation: sink.generation,
                event,
            });
        }
    });
}

/// Depth of a path: the number of segments (`/` is 0).
fn depth(path: &str) -> usize {
    path.split('/').filter(|s| !s.is_empty()).count()
}

/// Lists children of `path` and leaves a child watch; `None` if it is gone.
async fn list_watch(
    client: &Client,
    path: &str,
    sink: &Sink,
    state: &SharedCluster,
) -> Result<Option<Vec<String>>, zookeeper_client::Error> {
    let started = Instant::now();
    match client.list_and_watch_children(path).await {
        Ok((children, watcher)) => {
            state.request_observed("list", started.elapsed());
            forward(watcher, sink);
            Ok(Some(children))
        }
        Err(zookeeper_client::Error::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Elections found by a walk, with their children's names, and the
/// intermediate nodes now carrying a child watch.
#[derive(Debug, Default)]
pub struct Walk {
    pub elections: Vec<(String, Vec<String>)>,
    pub levels: Vec<String>,
}

/// Walks the glob down from `start` (a node matching its first
/// `depth(start)` segments), watching every node on the way.
pub async fn walk(
    client: &Client,
    pattern: &TreePattern,
    start: String,
    sink: &Sink,
    state: &SharedCluster,
) -> Result<Walk, zookeeper_client::Error> {
    let segments = pattern.segments();
    let mut walk = Walk::default();
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for chunk in frontier.chunks(CONCURRENCY) {
            let listed = join_all(chunk.iter().map(|p| list_watch(client, p, sink, state))).await;
            for (path, children) in chunk.iter().zip(listed) {
                let Some(children) = children? else { continue };
                let d = depth(path);
                if d == segments.len() {
                    if !pattern.excludes(path) {
                        walk.elections.push((path.clone(), children));
                    }
                    continue;
                }
                walk.levels.push(path.clone());
                for child in children {
                    if segments[d].as_deref().is_none_or(|s| s == child) {
                        next.push(join(path, &child));
                    }
                }
            }
        }
        frontier = next;
    }
    Ok(walk)
}

/// Reads data and stat of `paths` with plain pipelined requests.
pub async fn read_nodes(
    client: &Client,
    paths: &[String],
    state: &SharedCluster,
) -> Result<Vec<Option<ChildNode>>, zookeeper_client::Error> {
    let mut out = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(CONCURRENCY) {
        let reads = join_all(chunk.iter().map(|p| async move {
            let started = Instant::now();
            let r = client.get_data(p).await;
            (r, started.elapsed())
        }))
        .await;
        for (path, (read, took)) in chunk.iter().zip(reads) {
            match read {
                Ok((data, stat)) => {
                    state.request_observed("read", took);
                    out.push(Some(ChildNode {
                        name: path.rsplit('/').next().unwrap_or_default().to_owned(),
                        data,
                        ephemeral_owner: stat.ephemeral_owner,
                        ctime_ms: stat.ctime,
                    }))
                }
                Err(zookeeper_client::Error::NoNode) => out.push(None),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// Reads the children of walked elections into a listing.
async fn listing(
    client: &Client,
    elections: Vec<(String, Vec<String>)>,
    state: &SharedCluster,
) -> Result<Vec<(String, Vec<ChildNode>)>, zookeeper_client::Error> {
    let paths: Vec<String> = elections
        .iter()
        .flat_map(|(e, children)| children.iter().map(move |c| join(e, c)))
        .collect();
    let mut nodes = read_nodes(client, &paths, state).await?.into_iter();
    Ok(elections
        .into_iter()
        .map(|(e, children)| {
            let read = nodes.by_ref().take(children.len()).flatten().collect();
            (e, read)
        })
        .collect())
}

/// Full listing of a tree in one-shot mode; returns it with the watched
/// intermediate levels.
pub async fn list_tree(
    client: &Client,
    pattern: &TreePattern,
    sink: &Sink,
    state: &SharedCluster,
) -> Result<(Vec<(String, Vec<ChildNode>)>, HashSet<String>), zookeeper_client::Error> {
    let walk = walk(client, pattern, "/".to_owned(), sink, state).await?;
    let levels = walk.levels.into_iter().collect();
    Ok((listing(client, walk.elections, state).await?, levels))
}

/// Applies one fired watch: re-lists the node it names and reconciles.
pub async fn apply_event(
    client: &Client,
    pattern: &TreePattern,
    event: TreeEvent,
    sink: &Sink,
    levels: &mut HashSet<String>,
    state: &SharedCluster,
) -> Result<(), zookeeper_client::Error> {
    let path = event.event.path;
    let at_election = depth(&path) == pattern.segments().len();
    if at_election && pattern.excludes(&path) {
        return Ok(());
    }
    if event.event.event_type == EventType::NodeDeleted {
        if at_election {
            state.trees_changed(
                vec![(sink.tree, TreeChange::ParentDeleted(path))],
                Now::current(),
            );
        } else {
            levels.remove(&path);
        }
        return Ok(());
    }
    if at_election {
        return reconcile_election(client, path, sink, state).await;
    }
    // An intermediate level changed: walk only the children not seen before.
    let Some(children) = list_watch(client, &path, sink, state).await? else {
        levels.remove(&path);
        return Ok(());
    };
    let Some(segment) = pattern.segments().get(depth(&path)) else {
        return Ok(());
    };
    let fresh: Vec<String> = children
        .iter()
        .filter(|c| segment.as_deref().is_none_or(|s| s == c.as_str()))
        .map(|c| join(&path, c))
        .filter(|p| !levels.contains(p) && !state.has_parent(sink.tree, p))
        .collect();
    for start in fresh {
        let walked = walk(client, pattern, start, sink, state).await?;
        levels.extend(walked.levels);
        let found = listing(client, walked.elections, state).await?;
        let mut changes = Vec::new();
        for (election, children) in found {
            changes.push((sink.tree, TreeChange::ParentCreated(election.clone())));
            for child in children {
                let parent = election.clone();
                changes.push((sink.tree, TreeChange::ChildUpserted { parent, child }));
            }
        }
        state.trees_changed(changes, Now::current());
    }
    Ok(())
}

/// Re-lists one election and applies the difference to the model.
async fn reconcile_election(
    client: &Client,
    election: String,
    sink: &Sink,
    state: &SharedCluster,
) -> Result<(), zookeeper_client::Error> {
    let Some(children) = list_watch(client, &election, sink, state).await? else {
        let gone = vec![(sink.tree, TreeChange::ParentDeleted(election))];
        state.trees_changed(gone, Now::current());
        return Ok(());
    };
    let known: BTreeSet<String> = state.child_names(sink.tree, &election);
    let listed: BTreeSet<String> = children.into_iter().collect();
    let joined: Vec<String> = listed
        .difference(&known)
        .map(|c| join(&election, c))
        .collect();
    let read = read_nodes(client, &joined, state).await?;
    let mut changes = vec![(sink.tree, TreeChange::ParentCreated(election.clone()))];
    for gone in known.difference(&listed) {
        let (parent, name) = (election.clone(), gone.clone());
        changes.push((sink.tree, TreeChange::ChildDeleted { parent, name }));
    }
    for child in read.into_iter().flatten() {
        let parent = election.clone();
        changes.push((sink.tree, TreeChange::ChildUpserted { parent, child }));
    }
    state.trees_changed(changes, Now::current());
    Ok(())
}
