//! A node election watched node by node ([`WatchScope::Nodes`]): whatever
//! order the watches' events are applied in, and however late each batch
//! is read, the model ends where ZooKeeper is.

use std::time::{Duration, Instant, SystemTime};

use proptest::prelude::*;
use zookeeper_client::{EventType, WatchedEvent};

use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::{ElectionSpec, NodeSpec, Style};
use crate::model::tree::{Tree, TreePattern};

const PARENT: &str = "/app";
const NODE: &str = "/app/leader";
const EPOCH: &str = "/app/epoch";

fn tree() -> Tree {
    let (pattern, name) = TreePattern::split_node(NODE).unwrap();
    Tree::elections(
        pattern,
        ElectionSpec {
            identity: IdentityMode::parse("data").unwrap(),
            style: Style::Node(NodeSpec {
                name,
                epoch: Some("epoch".into()),
                standbys: None,
            }),
            min_candidates: None,
            record: None,
            no_master_for: None,
            slo: None,
            lease: None,
        },
    )
}

fn plan(tree: &Tree) -> WatchPlan {
    WatchPlan {
        pattern: tree.pattern().clone(),
        scope: tree.watch_scope(),
        sequential: false,
        outer_record: None,
        alive: None,
    }
}

#[test]
fn a_single_node_election_is_watched_node_by_node() {
    assert_eq!(
        tree().watch_scope(),
        WatchScope::Nodes {
            parent: PARENT.into(),
            node: NODE.into(),
            siblings: vec![EPOCH.into()],
        }
    );
}

/// ZooKeeper's state: the three nodes, each `None` or (owner, data).
#[derive(Debug, Clone, Default, PartialEq)]
struct Zk {
    parent: bool,
    node: Option<(i64, u8)>,
    epoch: Option<u8>,
}

/// The operations a client may make; each is refused as ZooKeeper would
/// refuse it (no parent, node exists, children left).
#[derive(Debug, Clone)]
enum Op {
    CreateParent,
    DeleteParent,
    CreateNode(i64),
    SetNode(u8),
    DeleteNode,
    WriteEpoch(u8),
    DeleteEpoch,
}

/// Which watch delivers an event: 0 the parent's, 1 the node's, 2 the
/// epoch's.
type Watch = usize;

impl Zk {
    /// Applies `op`; the events it fires on each watch.
    fn apply(&mut self, op: &Op) -> Vec<(Watch, EventType, &'static str)> {
        use EventType::*;
        let children_changed = (0, NodeChildrenChanged, PARENT);
        match op {
            Op::CreateParent if !self.parent => {
                self.parent = true;
                vec![(0, NodeCreated, PARENT)]
            }
            Op::DeleteParent if self.parent && self.node.is_none() && self.epoch.is_none() => {
                self.parent = false;
                vec![(0, NodeDeleted, PARENT)]
            }
            Op::CreateNode(owner) if self.parent && self.node.is_none() => {
                self.node = Some((*owner, 0));
                vec![(1, NodeCreated, NODE), children_changed]
            }
            Op::SetNode(d) if self.node.is_some() => {
                self.node = self.node.map(|(o, _)| (o, *d));
                vec![(1, NodeDataChanged, NODE)]
            }
            Op::DeleteNode if self.node.is_some() => {
                self.node = None;
                vec![(1, NodeDeleted, NODE), children_changed]
            }
            Op::WriteEpoch(v) if self.parent => {
                let created = self.epoch.is_none();
                self.epoch = Some(*v);
                match created {
                    true => vec![(2, NodeCreated, EPOCH), children_changed],
                    false => vec![(2, NodeDataChanged, EPOCH)],
                }
            }
            Op::DeleteEpoch if self.epoch.is_some() => {
                self.epoch = None;
                vec![(2, NodeDeleted, EPOCH), children_changed]
            }
            _ => Vec::new(),
        }
    }

    fn read(&self, path: &str) -> Option<ChildNode> {
        let node = |name: &str, owner, data: Vec<u8>| ChildNode {
            name: name.into(),
            data,
            ephemeral_owner: owner,
            ctime_ms: 1,
        };
        match path {
            PARENT => self.parent.then(|| node("app", 0, Vec::new())),
            NODE => self
                .node
                .map(|(o, d)| node("leader", o, format!("m{o}-{d}").into_bytes())),
            EPOCH => self
                .epoch
                .map(|v| node("epoch", 0, v.to_string().into_bytes())),
            _ => None,
        }
    }

    fn listing(&self) -> Vec<(String, Vec<ChildNode>)> {
        if !self.parent {
            return Vec::new();
        }
        let children = [NODE, EPOCH].iter().filter_map(|p| self.read(p)).collect();
        vec![(PARENT.to_owned(), children)]
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::CreateParent),
        Just(Op::DeleteParent),
        (1i64..4).prop_map(Op::CreateNode),
        (0u8..3).prop_map(Op::SetNode),
        Just(Op::DeleteNode),
        (0u8..9).prop_map(Op::WriteEpoch),
        Just(Op::DeleteEpoch),
    ]
}

fn now(base: Instant, s: u64) -> Now {
    Now {
        mono: base + Duration::from_millis(s),
        wall: SystemTime::UNIX_EPOCH + Duration::from_millis(s),
    }
}

/// What the model says of the election: it exists, its master's owner
/// and node data, its epoch.
fn view(tree: &Tree) -> (bool, Option<(i64, String)>, Option<i64>) {
    let e = tree.as_elections().unwrap();
    let master = e
        .election(NODE)
        .and_then(|e| e.master().map(|m| (m.owner, m.identity.to_owned())));
    let epoch = e.facts(NODE).and_then(|f| f.epoch);
    (e.election(NODE).is_some(), master, epoch)
}

fn apply(tree: &mut Tree, changes: Vec<(TreeId, TreeChange)>, at: Now) {
    for (_, change) in changes {
        match change {
            TreeChange::ParentCreated(p) => tree.parent_created(&p, at),
            TreeChange::ParentDeleted(p) => tree.parent_deleted(&p, at),
            TreeChange::ChildUpserted { parent, child } => tree.child_upserted(&parent, child, at),
            TreeChange::ChildDeleted { parent, name } => tree.child_deleted(&parent, &name, at),
            TreeChange::OuterRecord { .. } => unreachable!("no record here"),
        }
    }
}

proptest! {
    /// The operations run against ZooKeeper one by one, each firing its
    /// events on its watch; the watches' events arrive merged in any
    /// order that keeps each watch's own (`picks`), in batches of any
    /// size, each batch read at any moment from its arrival on (`lags`).
    /// Once every event is applied, the model says what a fresh listing
    /// of ZooKeeper says.
    #[test]
    fn any_order_of_the_watches_ends_where_zookeeper_is(
        start in any::<Zk>(),
        ops in proptest::collection::vec(op(), 0..24),
        picks in proptest::collection::vec(0usize..3, 64),
        batches in proptest::collection::vec(1usize..4, 64),
        lags in proptest::collection::vec(0usize..4, 64),
    ) {
        let base = Instant::now();
        let mut truth = start.clone();
        let mut tree = tree();
        tree.apply_listing(start.listing(), now(base, 0));
        let mut history = vec![truth.clone()];
        let mut queues: [Vec<(usize, WatchedEvent)>; 3] = Default::default();
        for op in &ops {
            for (watch, kind, path) in truth.apply(op) {
                queues[watch].push((history.len(), WatchedEvent::new(kind, path)));
            }
            history.push(truth.clone());
        }
        // Merge the watches' queues in an order that keeps each's own.
        let mut merged = Vec::new();
        let mut heads = [0usize; 3];
        let mut pick = picks.iter().cycle();
        while heads.iter().zip(&queues).any(|(h, q)| *h < q.len()) {
            let mut w = *pick.next().unwrap();
            while heads[w] >= queues[w].len() {
                w = (w + 1) % 3;
            }
            merged.push(queues[w][heads[w]].clone());
            heads[w] += 1;
        }
        let plan = plan(&tree);
        let routes: HashMap<TreeId, WatchPlan> = [(tree.id(), plan)].into();
        let (mut at, mut read_at, mut step) = (0usize, 0usize, 0u64);
        let mut sizes = batches.iter().cycle();
        let mut lag = lags.iter().cycle();
        while at < merged.len() {
            let end = (at + sizes.next().unwrap()).min(merged.len());
            let batch = &merged[at..end];
            // Read no earlier than the latest event of the batch happened,
            // and never earlier than the batch before was read.
            let newest = batch.iter().map(|(i, _)| *i).max().unwrap();
            read_at = (newest.max(read_at) + lag.next().unwrap()).min(history.len() - 1);
            let events: Vec<TreeEvent> = batch
                .iter()
                .map(|(_, e)| TreeEvent { tree: tree.id(), generation: 1, event: e.clone() })
                .collect();
            let to_read = paths_to_read(&routes, &events);
            let read: Vec<Option<ChildNode>> =
                to_read.iter().map(|p| history[read_at].read(p)).collect();
            let (changes, applied) = changes_of(&routes, &events, &to_read, &read);
            prop_assert!(applied.misfits.is_empty());
            step += 1;
            apply(&mut tree, changes, now(base, step));
            at = end;
        }
        let mut fresh = self::tree();
        fresh.apply_listing(truth.listing(), now(base, 0));
        prop_assert_eq!(view(&tree), view(&fresh), "ZooKeeper ends as {:?}", truth);
    }
}

impl Arbitrary for Zk {
    type Parameters = ();
    type Strategy = BoxedStrategy<Self>;

    fn arbitrary_with((): ()) -> Self::Strategy {
        (
            any::<bool>(),
            proptest::option::of((1i64..4, 0u8..3)),
            proptest::option::of(0u8..9),
        )
            .prop_map(|(parent, node, epoch)| match parent {
                true => Zk {
                    parent,
                    node,
                    epoch,
                },
                false => Zk::default(),
            })
            .boxed()
    }
}
