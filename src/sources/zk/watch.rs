//! Tree watching: one persistent recursive watch per tree root (or, for a
//! node election with no `*`, one watch per node it reads:
//! [`WatchScope`]), full listings in batched multi-reads, and events turned
//! into model calls.
//!
//! Cost per change is O(changed nodes): an event names one path, the tree
//! classifies it, and only created or changed candidates are read (together,
//! in one multi-read per batch of events). Full listings happen only at start,
//! after a reconnect, and when a failed sync is retried.

use std::collections::{HashMap, HashSet};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zookeeper_client::{AddWatchMode, Client, EventType, PersistentWatcher, WatchedEvent};

use super::read::{Op, as_child, as_children, multi_read};

use crate::model::Now;
use crate::model::outer_record::OuterRecord;
use crate::model::tree::{ChildNode, PathKind, TreeId, TreePattern, WatchScope, join};
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

/// The live persistent watches of one tree: a task per watch forwarding
/// its events. Dropping it removes the watches.
#[derive(Debug)]
pub struct TreeWatch {
    forwarders: Vec<JoinHandle<()>>,
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        // Dropping a task drops its PersistentWatcher, which unregisters it.
        for f in &self.forwarders {
            f.abort();
        }
    }
}

/// Places the tree's persistent watches (one recursive watch, or one
/// watch per node: [`WatchScope`]) and starts forwarding their node
/// events. Session events are not forwarded (the session loop follows the
/// state watcher); a forwarder stops at a terminal state, because polling
/// a persistent watcher after one panics.
pub async fn start_watch(
    client: &Client,
    tree: TreeId,
    scope: &WatchScope,
    generation: u64,
    tx: mpsc::UnboundedSender<TreeEvent>,
) -> Result<TreeWatch, zookeeper_client::Error> {
    let placed: Vec<(&str, AddWatchMode)> = match scope {
        WatchScope::Recursive(root) => vec![(root.as_str(), AddWatchMode::PersistentRecursive)],
        WatchScope::Nodes {
            parent,
            node,
            siblings,
        } => [parent, node]
            .into_iter()
            .chain(siblings)
            .map(|p| (p.as_str(), AddWatchMode::Persistent))
            .collect(),
    };
    let mut watch = TreeWatch {
        forwarders: Vec::with_capacity(placed.len()),
    };
    for (path, mode) in placed {
        // On an error `watch` is dropped, and with it the watches placed.
        let watcher = client.watch(path, mode).await?;
        watch
            .forwarders
            .push(tokio::spawn(forward(watcher, tree, generation, tx.clone())));
    }
    Ok(watch)
}

/// Forwards one watch's node events until the session ends or the
/// receiver is gone.
async fn forward(
    mut watcher: PersistentWatcher,
    tree: TreeId,
    generation: u64,
    tx: mpsc::UnboundedSender<TreeEvent>,
) {
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
    let to_read = paths_to_read(routes, &events);
    let read = read_children(client, &to_read, state).await?;
    let (changes, mut applied) = changes_of(routes, &events, &to_read, &read);
    let mut delivered: Vec<(TreeId, u64)> = Vec::new();
    for e in &events {
        match delivered.iter_mut().find(|(id, _)| *id == e.tree) {
            Some((_, n)) => *n += 1,
            None => delivered.push((e.tree, 1)),
        }
    }
    applied.drops_to_report = state.events_applied(&delivered, changes, Now::current());
    Ok(applied)
}

/// The nodes a batch of events needs read, each once.
fn paths_to_read(routes: &HashMap<TreeId, WatchPlan>, events: &[TreeEvent]) -> Vec<String> {
    let mut to_read: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut add = |path| {
        if seen.insert(path) {
            to_read.push(path.to_owned());
        }
    };
    for e in events {
        let Some(route) = routes.get(&e.tree) else {
            continue;
        };
        if let Some(check) = ParentCheck::of(route, e) {
            check.paths().for_each(&mut add);
        } else if needs_read(route, e) {
            add(e.event.path.as_str());
        }
    }
    to_read
}

/// What a batch of events changes, given `read` (the nodes of
/// [`paths_to_read`] as read after the batch arrived), in the batch's
/// order; misfits apart.
fn changes_of(
    routes: &HashMap<TreeId, WatchPlan>,
    events: &[TreeEvent],
    to_read: &[String],
    read: &[Option<ChildNode>],
) -> (Vec<(TreeId, TreeChange)>, Applied) {
    let index: HashMap<&str, usize> = to_read
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_str(), i))
        .collect();
    // A node with several events in the batch was read once; each of its
    // events applies that one reading. `None`: gone again before the read.
    let reading = |path: &str| index.get(path).and_then(|i| read[*i].as_ref());
    let mut changes = Vec::with_capacity(events.len());
    let mut applied = Applied::default();
    for e in events {
        let Some(route) = routes.get(&e.tree) else {
            continue;
        };
        if let Some(check) = ParentCheck::of(route, e) {
            changes.extend(check.changes(reading).into_iter().map(|c| (e.tree, c)));
            continue;
        }
        match change_of(route, e, reading(&e.event.path)) {
            Some(Ok(change)) => changes.push((e.tree, change)),
            Some(Err(misfit)) => applied.misfits.push((e.tree, misfit)),
            None => {}
        }
    }
    (changes, applied)
}

/// An event of the parent's own watch in a tree watched node by node
/// ([`WatchScope::Nodes`]): the parent created or deleted. It is not
/// applied as told, since the node's events come on another watch and may
/// be applied before or after it (a parent deleted and created again
/// around its node would otherwise leave an election with a master
/// masterless, or gone). What the parent and its siblings are when read
/// decides.
struct ParentCheck<'a> {
    parent: &'a str,
    node: &'a str,
    siblings: &'a [String],
}

impl<'a> ParentCheck<'a> {
    fn of(route: &'a WatchPlan, e: &TreeEvent) -> Option<Self> {
        let WatchScope::Nodes {
            parent,
            node,
            siblings,
        } = &route.scope
        else {
            return None;
        };
        let created_or_deleted = matches!(
            e.event.event_type,
            EventType::NodeCreated | EventType::NodeDeleted
        );
        (created_or_deleted && e.event.path == *parent).then_some(Self {
            parent,
            node,
            siblings,
        })
    }

    /// What is read to decide: the parent and its siblings (the node
    /// itself is decided by its own events).
    fn paths(&self) -> impl Iterator<Item = &'a str> {
        std::iter::once(self.parent).chain(self.siblings.iter().map(String::as_str))
    }

    /// The parent absent: its node and siblings are gone too (ZooKeeper
    /// deletes no node with children), the node first, so the master
    /// leaves as its own deletion says (its event, still to come, then
    /// changes nothing). The parent present: it is known (a no-op if it
    /// was), and its siblings are as read, since their own events may have
    /// come while the election was not known and been dropped. The node
    /// itself follows only its own events, which keep their order: a read
    /// here could count a switch its events count again.
    fn changes(&self, reading: impl Fn(&str) -> Option<&'a ChildNode>) -> Vec<TreeChange> {
        let name = |path: &str| path.rsplit('/').next().unwrap_or_default().to_owned();
        let deleted = |path: &str| TreeChange::ChildDeleted {
            parent: self.parent.into(),
            name: name(path),
        };
        if reading(self.parent).is_none() {
            return [self.node]
                .into_iter()
                .chain(self.siblings.iter().map(String::as_str))
                .map(deleted)
                .chain([TreeChange::ParentDeleted(self.parent.into())])
                .collect();
        }
        std::iter::once(TreeChange::ParentCreated(self.parent.into()))
            .chain(self.siblings.iter().map(|s| match reading(s) {
                Some(child) => TreeChange::ChildUpserted {
                    parent: self.parent.into(),
                    child: child.clone(),
                },
                None => deleted(s),
            }))
            .collect()
    }
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

#[cfg(test)]
mod tests;
