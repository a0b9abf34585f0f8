//! Tree watching: one persistent recursive watch per tree root, full listings
//! in batched multi-reads, and events turned into model calls.
//!
//! Cost per change is O(changed nodes): an event names one path, the tree
//! classifies it, and only created or changed candidates are read (together,
//! in one multi-read per batch of events). Full listings happen only at start,
//! after a reconnect, and when a failed sync is retried.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zookeeper_client::{AddWatchMode, Client, EventType, WatchedEvent};

use super::read::{Op, as_child, as_children, join, multi_read};

use crate::model::Now;
use crate::model::outer_record::OuterRecord;
use crate::model::tree::{ChildNode, PathKind, TreeId, TreePattern};
use crate::model::{SharedCluster, TreeChange, WatchPlan};

/// Events applied under one lock and one multi-read.
pub const MAX_EVENTS_PER_BATCH: usize = 1024;

/// A node event from one tree's watch, tagged with the watch's own
/// generation: a resync replaces a tree's watch, and events of the old one
/// still queued would undo what the new listing showed (a lock node
/// deleted and created again before the listing would read as free).
#[derive(Debug)]
pub struct TreeEvent {
    pub tree: TreeId,
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

/// Places the persistent recursive watch on the tree root and starts
/// forwarding its node events. Session events are not forwarded (the session
/// loop follows the state watcher); the forwarder stops at a terminal state,
/// because polling a persistent watcher after one panics.
pub async fn start_watch(
    client: &Client,
    tree: TreeId,
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

/// Reads data and stat of `paths` (children of elections) as [`ChildNode`]s;
/// `None` for nodes deleted meanwhile.
async fn read_children(
    client: &Client,
    paths: &[String],
    state: &SharedCluster,
) -> Result<Vec<Option<ChildNode>>, zookeeper_client::Error> {
    let timed = |took| state.request_observed("multi_read", took);
    let reads = multi_read(client, paths, Op::Data, &timed).await?;
    paths
        .iter()
        .zip(reads)
        .map(|(p, r)| as_child(p, r))
        .collect()
}

/// Lists `paths`; `None` for nodes deleted meanwhile.
async fn list_children(
    client: &Client,
    paths: &[String],
    state: &SharedCluster,
) -> Result<Vec<Option<Vec<String>>>, zookeeper_client::Error> {
    let timed = |took| state.request_observed("multi_read", took);
    let lists = multi_read(client, paths, Op::Children, &timed).await?;
    lists.into_iter().map(as_children).collect()
}

/// The nodes matching `pattern` (elections, groups or locks), found level
/// by level.
pub async fn list_parents(
    client: &Client,
    pattern: &TreePattern,
    state: &SharedCluster,
) -> Result<Vec<String>, zookeeper_client::Error> {
    let mut level = vec![pattern.root()];
    for segment in pattern.segments_below_root() {
        level = match segment {
            Some(literal) => level.iter().map(|p| join(p, literal)).collect(),
            None => {
                let listed = list_children(client, &level, state).await?;
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
    // Excluded trees are not listed at all (their events are ignored too:
    // `classify` calls their paths `Other`).
    level.retain(|p| !pattern.excludes(p));
    Ok(level)
}

/// Parents listed per slice of a large tree: each slice's children are
/// read and applied before the next, so a tree of a million elections is
/// never held whole in memory (one slice is a few multi-reads).
pub const LISTING_SLICE: usize = 2048;

/// `parents` (a slice of [`list_parents`]) with their children; parents
/// deleted meanwhile are left out.
/// With `alive` (a group whose members are live while they hold a child of
/// that name), each member is read as its marker: a member without one is
/// not listed, and the marker's data and owner stand for the member's.
pub async fn list_part(
    client: &Client,
    parents: &[String],
    alive: Option<&str>,
    state: &SharedCluster,
) -> Result<Vec<(String, Vec<ChildNode>)>, zookeeper_client::Error> {
    let listed = list_children(client, parents, state).await?;
    let elections: Vec<(&String, Vec<String>)> = parents
        .iter()
        .zip(listed)
        .filter_map(|(path, children)| children.map(|c| (path, c)))
        .collect();
    let child_paths: Vec<String> = elections
        .iter()
        .flat_map(|(path, children)| children.iter().map(move |c| join(path, c)))
        .map(|member| match alive {
            Some(marker) => join(&member, marker),
            None => member,
        })
        .collect();
    let mut nodes = read_children(client, &child_paths, state)
        .await?
        .into_iter();
    Ok(elections
        .into_iter()
        .map(|(path, children)| {
            let read: Vec<ChildNode> = children
                .iter()
                .zip(nodes.by_ref())
                .filter_map(|(name, node)| {
                    let mut node = node?;
                    node.name.clone_from(name);
                    Some(node)
                })
                .collect();
            (path.clone(), read)
        })
        .collect())
}

/// The election whose outer record is at `path`, if the tree has one.
fn election_of_record(plan: &WatchPlan, path: &str) -> Option<String> {
    plan.outer_record.as_ref()?.election_of(path)
}

/// Reads the outer records of `elections` (the listed ones, or the one
/// election a single glob names) in one multi-read: the changes to apply
/// after the tree's listing.
pub async fn read_outer_records(
    client: &Client,
    record: &OuterRecord,
    elections: Vec<String>,
    state: &SharedCluster,
) -> Result<Vec<TreeChange>, zookeeper_client::Error> {
    let paths: Vec<String> = elections.iter().map(|e| record.record_of(e)).collect();
    let read = read_children(client, &paths, state).await?;
    Ok(elections
        .into_iter()
        .zip(read)
        .map(|(election, node)| TreeChange::OuterRecord {
            election,
            read: node.map(|n| (n.data, n.ephemeral_owner)),
        })
        .collect())
}

/// What applying a batch of events showed.
#[derive(Debug, Default)]
pub struct Applied {
    /// The cardinality guard dropped series nobody was told about yet.
    pub drops_to_report: bool,
    /// Election nodes of sequential trees created as ephemeral nodes (a
    /// node election configured the wrong way): (tree, path). They are not
    /// applied: such an election would be masterless forever.
    pub misfits: Vec<(TreeId, String)>,
}

/// Applies a batch of events of one or more trees: reads the created or
/// changed children (and created election nodes of `sequential` trees, to
/// check they are persistent) in one multi-read, then applies everything in
/// order under one lock.
pub async fn apply_events(
    client: &Client,
    routes: &HashMap<TreeId, WatchPlan>,
    events: Vec<TreeEvent>,
    state: &SharedCluster,
) -> Result<Applied, zookeeper_client::Error> {
    let mut to_read: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for e in &events {
        let path = e.event.path.as_str();
        let needed = routes.get(&e.tree).is_some_and(|r| needs_read(r, e));
        if needed && !index.contains_key(path) {
            index.insert(path, to_read.len());
            to_read.push(path.to_owned());
        }
    }
    let read = read_children(client, &to_read, state).await?;
    // A node with several events in the batch was read once; each of its
    // events applies that one reading. `None`: gone again before the read.
    let reading = |path: &str| index.get(path).and_then(|i| read[*i].as_ref());
    let mut changes = Vec::with_capacity(events.len());
    let mut applied = Applied::default();
    for e in &events {
        let Some(route) = routes.get(&e.tree) else {
            continue;
        };
        match change_of(route, e, reading(&e.event.path)) {
            Some(Ok(change)) => changes.push((e.tree, change)),
            Some(Err(misfit)) => applied.misfits.push((e.tree, misfit)),
            None => {}
        }
    }
    applied.drops_to_report = state.trees_changed(changes, Now::current());
    Ok(applied)
}

/// For a group with an `alive` marker: the (group, member) whose marker
/// `path` is.
fn marker_of<'a>(route: &WatchPlan, path: &'a str) -> Option<(&'a str, &'a str)> {
    let marker = route.alive.as_deref()?;
    let member = path.strip_suffix(marker)?.strip_suffix('/')?;
    match route.pattern.classify(member) {
        PathKind::Child { parent, name } => Some((parent, name)),
        _ => None,
    }
}

/// Whether event `e` of the tree `route` describes needs its node read:
/// created or changed candidates (or members' markers), created election
/// nodes of sequential trees (to check they are persistent) and the outer
/// record.
fn needs_read(route: &WatchPlan, e: &TreeEvent) -> bool {
    let path = e.event.path.as_str();
    let created_or_changed = matches!(
        e.event.event_type,
        EventType::NodeCreated | EventType::NodeDataChanged
    );
    if route.alive.is_some() {
        // A marked member's own node says nothing; its marker does.
        return created_or_changed && marker_of(route, path).is_some();
    }
    match (route.pattern.classify(path), e.event.event_type) {
        (PathKind::Child { .. }, EventType::NodeCreated | EventType::NodeDataChanged) => true,
        (PathKind::Parent, EventType::NodeCreated) => route.sequential,
        (PathKind::Other, EventType::NodeCreated | EventType::NodeDataChanged) => {
            election_of_record(route, path).is_some()
        }
        _ => false,
    }
}

/// What event `e` changes in its tree, given the node as read (if it was);
/// `Err(path)` for an election node created ephemeral under a sequential
/// glob (a misfit, not applied); `None` for events that change nothing.
fn change_of(
    route: &WatchPlan,
    e: &TreeEvent,
    node: Option<&ChildNode>,
) -> Option<Result<TreeChange, String>> {
    let path = e.event.path.as_str();
    if route.alive.is_some() {
        return marker_change(route, e, node);
    }
    if let Some(election) = election_of_record(route, path) {
        let read = match e.event.event_type {
            EventType::NodeDeleted => None,
            EventType::NodeCreated | EventType::NodeDataChanged => {
                node.map(|n| (n.data.clone(), n.ephemeral_owner))
            }
            _ => return None,
        };
        return Some(Ok(TreeChange::OuterRecord { election, read }));
    }
    let change = match (route.pattern.classify(path), e.event.event_type) {
        (PathKind::Parent, EventType::NodeCreated) => {
            if node.is_some_and(|n| n.ephemeral_owner != 0) {
                return Some(Err(path.to_owned()));
            }
            TreeChange::ParentCreated(path.into())
        }
        (PathKind::Parent, EventType::NodeDeleted) => TreeChange::ParentDeleted(path.into()),
        (PathKind::Child { parent, .. }, EventType::NodeCreated | EventType::NodeDataChanged) => {
            TreeChange::ChildUpserted {
                parent: parent.into(),
                child: node?.clone(),
            }
        }
        (PathKind::Child { parent, name }, EventType::NodeDeleted) => TreeChange::ChildDeleted {
            parent: parent.into(),
            name: name.into(),
        },
        _ => return None,
    };
    Some(Ok(change))
}

/// What event `e` changes in a group whose members are live while they
/// hold a marker: the marker appearing is the member joining (named after
/// the member, owned by the marker's session), the marker or the member
/// going is the member leaving; nothing else counts.
fn marker_change(
    route: &WatchPlan,
    e: &TreeEvent,
    node: Option<&ChildNode>,
) -> Option<Result<TreeChange, String>> {
    let path = e.event.path.as_str();
    let deleted = e.event.event_type == EventType::NodeDeleted;
    if let Some((parent, name)) = marker_of(route, path) {
        let change = if deleted {
            TreeChange::ChildDeleted {
                parent: parent.into(),
                name: name.into(),
            }
        } else {
            let mut child = node?.clone();
            child.name = name.to_owned();
            TreeChange::ChildUpserted {
                parent: parent.into(),
                child,
            }
        };
        return Some(Ok(change));
    }
    match route.pattern.classify(path) {
        PathKind::Parent if e.event.event_type == EventType::NodeCreated => {
            Some(Ok(TreeChange::ParentCreated(path.into())))
        }
        PathKind::Parent if deleted => Some(Ok(TreeChange::ParentDeleted(path.into()))),
        PathKind::Child { parent, name } if deleted => Some(Ok(TreeChange::ChildDeleted {
            parent: parent.into(),
            name: name.into(),
        })),
        _ => None,
    }
}
