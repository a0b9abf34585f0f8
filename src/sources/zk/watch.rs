//! Tree watching: one persistent recursive watch per tree root, full listings
//! in batched multi-reads, and events turned into model calls.
//!
//! Cost per change is O(changed nodes): an event names one path, the tree
//! classifies it, and only created or changed candidates are read (together,
//! in one multi-read per batch of events). Full listings happen only at start,
//! after a reconnect, and when a failed sync is retried.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zookeeper_client::{AddWatchMode, Client, EventType, MultiReadResult, WatchedEvent};

use crate::model::SharedCluster;
use crate::model::election::Now;
use crate::model::tree::{ChildNode, PathKind, TreePattern};

/// Operations per multi-read request. Large enough to amortise round trips,
/// small enough that one reply stays well under ZooKeeper's 1 MiB packet
/// limit for typical node data.
const BATCH: usize = 256;
/// Multi-read requests in flight at once during a listing.
const IN_FLIGHT: usize = 4;
/// Events applied under one lock and one multi-read.
pub const MAX_EVENTS_PER_BATCH: usize = 1024;

/// A node event from one tree's watch, tagged with the watch generation so
/// events of a replaced watch are discarded.
#[derive(Debug)]
pub struct TreeEvent {
    pub tree: usize,
    pub generation: u64,
    pub event: WatchedEvent,
}

/// The live persistent watch of one tree: a task forwarding its events.
/// Dropping it removes the watch.
#[derive(Debug)]
pub struct TreeWatch {
    forwarder: JoinHandle<()>,
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        // Dropping the task drops the PersistentWatcher, which unregisters it.
        self.forwarder.abort();
    }
}

/// `parent/child`, without doubling the slash under `/`.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// Places the persistent recursive watch on the tree root and starts
/// forwarding its node events. Session events are not forwarded (the session
/// loop follows the state watcher); the forwarder stops at a terminal state,
/// because polling a persistent watcher after one panics.
pub async fn start_watch(
    client: &Client,
    tree: usize,
    root: &str,
    generation: u64,
    tx: mpsc::UnboundedSender<TreeEvent>,
) -> Result<TreeWatch, zookeeper_client::Error> {
    let mut watcher = client
        .watch(root, AddWatchMode::PersistentRecursive)
        .await?;
    let forwarder = tokio::spawn(async move {
        loop {
            let event = watcher.changed().await;
            if event.event_type == EventType::Session {
                if event.session_state.is_terminated() {
                    break;
                }
                continue;
            }
            let event = TreeEvent {
                tree,
                generation,
                event,
            };
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    Ok(TreeWatch { forwarder })
}

/// Result of one read in a batch: `None` when the node does not exist.
type Read<T> = Option<T>;

/// Reads `paths` in multi-read batches, `IN_FLIGHT` at a time, preserving order.
async fn multi_read<T>(
    client: &Client,
    paths: &[String],
    children: bool,
    state: &SharedCluster,
    extract: fn(MultiReadResult) -> Result<Read<T>, zookeeper_client::Error>,
) -> Result<Vec<Read<T>>, zookeeper_client::Error> {
    let mut out = Vec::with_capacity(paths.len());
    for group in paths.chunks(BATCH * IN_FLIGHT) {
        let batches: Vec<_> = group
            .chunks(BATCH)
            .map(|chunk| read_batch(client, chunk, children, state, extract))
            .collect();
        for batch in join_all(batches).await {
            out.extend(batch?);
        }
    }
    Ok(out)
}

/// One multi-read request.
async fn read_batch<T>(
    client: &Client,
    chunk: &[String],
    children: bool,
    state: &SharedCluster,
    extract: fn(MultiReadResult) -> Result<Read<T>, zookeeper_client::Error>,
) -> Result<Vec<Read<T>>, zookeeper_client::Error> {
    let mut reader = client.new_multi_reader();
    for path in chunk {
        if children {
            reader.add_get_children(path)?;
        } else {
            reader.add_get_data(path)?;
        }
    }
    let started = Instant::now();
    let results = reader.commit().await?;
    observe(state, "multi_read", started.elapsed());
    results.into_iter().map(extract).collect()
}

fn as_children(r: MultiReadResult) -> Result<Read<Vec<String>>, zookeeper_client::Error> {
    match r {
        MultiReadResult::Children { children } => Ok(Some(children)),
        MultiReadResult::Error {
            err: zookeeper_client::Error::NoNode,
        } => Ok(None),
        MultiReadResult::Error { err } => Err(err),
        _ => Err(zookeeper_client::Error::UnexpectedError(
            "multi-read returned data for a children request".into(),
        )),
    }
}

fn as_node(r: MultiReadResult) -> Result<Read<(Vec<u8>, i64, i64)>, zookeeper_client::Error> {
    match r {
        MultiReadResult::Data { data, stat } => Ok(Some((data, stat.ephemeral_owner, stat.ctime))),
        MultiReadResult::Error {
            err: zookeeper_client::Error::NoNode,
        } => Ok(None),
        MultiReadResult::Error { err } => Err(err),
        _ => Err(zookeeper_client::Error::UnexpectedError(
            "multi-read returned children for a data request".into(),
        )),
    }
}

/// Reads data and stat of `paths` (children of elections) as [`ChildNode`]s;
/// nodes deleted meanwhile are left out.
async fn read_children(
    client: &Client,
    paths: &[String],
    state: &SharedCluster,
) -> Result<Vec<Option<ChildNode>>, zookeeper_client::Error> {
    let reads = multi_read(client, paths, false, state, as_node).await?;
    Ok(paths
        .iter()
        .zip(reads)
        .map(|(path, read)| {
            read.map(|(data, ephemeral_owner, ctime_ms)| ChildNode {
                name: path.rsplit('/').next().unwrap_or_default().to_owned(),
                data,
                ephemeral_owner,
                ctime_ms,
            })
        })
        .collect())
}

/// Lists every election matching `pattern` with its children, level by level.
pub async fn list_tree(
    client: &Client,
    pattern: &TreePattern,
    state: &SharedCluster,
) -> Result<Vec<(String, Vec<ChildNode>)>, zookeeper_client::Error> {
    let mut level = vec![pattern.root()];
    for segment in pattern.segments_below_root() {
        level = match segment {
            Some(literal) => level.iter().map(|p| join(p, literal)).collect(),
            None => {
                let listed = multi_read(client, &level, true, state, as_children).await?;
                level
                    .iter()
                    .zip(listed)
                    .flat_map(|(parent, children)| {
                        children
                            .unwrap_or_default()
                            .into_iter()
                            .map(move |c| join(parent, &c))
                    })
                    .collect()
            }
        };
    }
    let listed = multi_read(client, &level, true, state, as_children).await?;
    let elections: Vec<(String, Vec<String>)> = level
        .into_iter()
        .zip(listed)
        .filter_map(|(path, children)| children.map(|c| (path, c)))
        .collect();
    let child_paths: Vec<String> = elections
        .iter()
        .flat_map(|(path, children)| children.iter().map(move |c| join(path, c)))
        .collect();
    let mut nodes = read_children(client, &child_paths, state)
        .await?
        .into_iter();
    Ok(elections
        .into_iter()
        .map(|(path, children)| {
            let read: Vec<ChildNode> = nodes.by_ref().take(children.len()).flatten().collect();
            (path, read)
        })
        .collect())
}

/// Applies a batch of events of one or more trees: reads the created or
/// changed children in one multi-read, then applies everything in order under
/// one lock.
pub async fn apply_events(
    client: &Client,
    patterns: &[TreePattern],
    events: Vec<TreeEvent>,
    state: &SharedCluster,
) -> Result<(), zookeeper_client::Error> {
    let mut to_read: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for e in &events {
        let path = e.event.path.as_str();
        if matches!(
            e.event.event_type,
            EventType::NodeCreated | EventType::NodeDataChanged
        ) && matches!(patterns[e.tree].classify(path), PathKind::Child { .. })
            && !index.contains_key(path)
        {
            index.insert(path, to_read.len());
            to_read.push(path.to_owned());
        }
    }
    let read = read_children(client, &to_read, state).await?;
    let now = Now::current();
    let mut guard = state.write().unwrap_or_else(|p| p.into_inner());
    for e in &events {
        let path = e.event.path.as_str();
        match (patterns[e.tree].classify(path), e.event.event_type) {
            (PathKind::Parent, EventType::NodeCreated) => guard.parent_created(e.tree, path, now),
            (PathKind::Parent, EventType::NodeDeleted) => guard.trees[e.tree].parent_deleted(path),
            (
                PathKind::Child { parent, .. },
                EventType::NodeCreated | EventType::NodeDataChanged,
            ) => {
                // Clone only when the same node had several events in the batch.
                let node = index.get(path).and_then(|i| read[*i].clone());
                if let Some(node) = node {
                    guard.child_upserted(e.tree, parent, node, now);
                }
            }
            (PathKind::Child { parent, name }, EventType::NodeDeleted) => {
                guard.trees[e.tree].child_deleted(parent, name, now)
            }
            _ => {}
        }
    }
    Ok(())
}

/// Records one request round trip in the session model.
pub fn observe(state: &SharedCluster, op: &'static str, took: Duration) {
    state
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .session
        .observe_request(op, took);
}
