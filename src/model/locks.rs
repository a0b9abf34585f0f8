//! Locks (kazoo `Lock`/`ReadLock`/`WriteLock`, Curator `InterProcessMutex`
//! and `InterProcessReadWriteLock`, home-grown queue locks): every node
//! matched by a glob is one lock, and each of its sequential children is a
//! contender. The lowest holds it; for read/write locks every reader ahead
//! of the first writer holds it too. Unlike an election, a lock nobody
//! holds is normal: what matters is how long it is held and who waits.
//!
//! Holds are timed from the moment the agent saw them start. A holder found
//! by a listing (at start, or after an outage) is timed from then: its hold
//! is not counted as an acquisition at start (like the first master of an
//! election), and its end does not enter the hold-duration histogram, which
//! only takes holds whose start was seen as it happened.

use super::timeline::{Master, What};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::candidate::parse_sequence;
use super::child::ChildNode;
use super::content::{ContentKind, NodeCounts, TreeContent};
use super::histogram::{Histogram, PERIOD_BUCKETS};
use super::now::Now;

/// How a lock tree is exported.
#[derive(Debug, Clone, Default)]
pub struct LockSpec {
    /// Longest expected hold; exported as `zookeeper_lock_max_hold_seconds`
    /// so one alert rule covers every lock.
    pub max_hold: Option<Duration>,
}

/// What a contender asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Exclusive,
    Read,
    Write,
}

impl Mode {
    /// From the node name: kazoo `__rlock__`/`__wlock__`, Curator
    /// `__READ__`/`__WRIT__`; anything else is exclusive.
    pub fn of(name: &str) -> Self {
        if name.contains("__rlock__") || name.contains("__READ__") {
            Mode::Read
        } else if name.contains("__wlock__") || name.contains("__WRIT__") {
            Mode::Write
        } else {
            Mode::Exclusive
        }
    }
}

/// Whether a node name is how a lock recipe names its contenders (kazoo,
/// Curator): discovery files such trees as locks, never as elections.
pub fn lock_named(name: &str) -> bool {
    [
        "__lock__",
        "__rlock__",
        "__wlock__",
        "-lock-",
        "__READ__",
        "__WRIT__",
    ]
    .iter()
    .any(|marker| name.contains(marker))
}

#[derive(Debug, Clone)]
struct Contender {
    mode: Mode,
    owner: i64,
}

/// One lock: its contenders in sequence order and its current holders.
#[derive(Debug, Clone, Default)]
pub struct Lock {
    contenders: BTreeMap<(i32, String), Contender>,
    /// Holder node names, when the agent saw each hold start, and whether
    /// it saw the start as it happened (an event, not a listing).
    holding: BTreeMap<String, (Instant, bool)>,
    /// Children without a sequence suffix: not contenders.
    ignored: BTreeSet<String>,
    acquisitions: u64,
}

impl Lock {
    /// Contenders holding the lock now.
    pub fn holders(&self) -> usize {
        self.holding.len()
    }

    /// Contenders waiting for it.
    pub fn waiters(&self) -> usize {
        self.contenders.len() - self.holding.len()
    }

    pub fn held(&self) -> bool {
        !self.holding.is_empty()
    }

    /// Holds that started while the agent watched.
    pub fn acquisitions(&self) -> u64 {
        self.acquisitions
    }

    /// How long the longest current hold has lasted, as far as seen.
    pub fn hold(&self, now: Instant) -> Option<Duration> {
        self.holding
            .values()
            .map(|(since, _)| now.saturating_duration_since(*since))
            .max()
    }

    /// Who holds the lock by the rules: the lowest contender, and for
    /// read/write locks every reader ahead of the first writer.
    fn rightful(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for ((_, name), c) in &self.contenders {
            match c.mode {
                Mode::Read => {
                    out.insert(name.clone());
                }
                Mode::Exclusive | Mode::Write => {
                    if out.is_empty() {
                        out.insert(name.clone());
                    }
                    break;
                }
            }
        }
        out
    }

    /// Moves the holders to what the contenders say. `count` is false for
    /// the first listing; `seen` is true for events (a hold starting now),
    /// false for listings. Ended holds whose start was seen go to `ended`.
    /// Returns the counted new holders (node and owner), for the timeline.
    fn settle(
        &mut self,
        now: Instant,
        count: bool,
        seen: bool,
        ended: &mut Histogram,
    ) -> Vec<(String, i64)> {
        let mut acquired = Vec::new();
        let rightful = self.rightful();
        let gone: Vec<String> = self
            .holding
            .keys()
            .filter(|n| !rightful.contains(*n))
            .cloned()
            .collect();
        for name in gone {
            if let Some((since, true)) = self.holding.remove(&name) {
                ended.observe(now.saturating_duration_since(since).as_secs_f64());
            }
        }
        for name in rightful {
            if let std::collections::btree_map::Entry::Vacant(slot) =
                self.holding.entry(name.clone())
            {
                slot.insert((now, seen));
                if count {
                    self.acquisitions += 1;
                    let owner = self
                        .contenders
                        .iter()
                        .find(|((_, n), _)| *n == name)
                        .map_or(0, |(_, c)| c.owner);
                    acquired.push((name, owner));
                }
            }
        }
        acquired
    }

    fn upsert(&mut self, child: &ChildNode) {
        match parse_sequence(&child.name) {
            Some(seq) => {
                self.contenders.insert(
                    (seq, child.name.clone()),
                    Contender {
                        mode: Mode::of(&child.name),
                        owner: child.ephemeral_owner,
                    },
                );
            }
            None => {
                self.ignored.insert(child.name.clone());
            }
        }
    }

    fn remove(&mut self, name: &str) {
        self.contenders.retain(|(_, n), _| n != name);
        self.ignored.remove(name);
    }
}

/// All locks under one glob.
#[derive(Debug, Clone)]
pub struct LockTree {
    spec: LockSpec,
    locks: BTreeMap<String, Lock>,
    /// Durations of holds that ended, across the tree's locks.
    holds: Histogram,
    /// Timeline entries not yet taken by the cluster (lock, what).
    events: Vec<(String, What)>,
    /// Holds already told as longer than `max_hold` (lock, holder).
    long: BTreeSet<(String, String)>,
}

impl LockTree {
    pub fn new(spec: LockSpec) -> Self {
        Self {
            spec,
            locks: BTreeMap::new(),
            holds: Histogram::new(PERIOD_BUCKETS),
            events: Vec::new(),
            long: BTreeSet::new(),
        }
    }

    /// Records, once per hold, the holds that passed `max_hold` by `now`
    /// (timed from when the agent saw them start, as the metric).
    pub fn note_long_holds(&mut self, now: Instant) {
        let Some(max) = self.spec.max_hold else {
            return;
        };
        let mut current = BTreeSet::new();
        for (path, lock) in &self.locks {
            for (holder, (since, _)) in &lock.holding {
                let key = (path.clone(), holder.clone());
                let held = now.saturating_duration_since(*since);
                if held > max && !self.long.contains(&key) {
                    let owner = lock
                        .contenders
                        .iter()
                        .find(|((_, n), _)| n == holder)
                        .map_or(0, |(_, c)| c.owner);
                    let holder = Master {
                        node: holder.clone(),
                        identity: holder.clone(),
                        owner,
                    };
                    self.events
                        .push((path.clone(), What::LockHeldLong { holder, held }));
                }
                if held > max {
                    current.insert(key);
                }
            }
        }
        self.long = current;
    }

    /// Timeline entries since the last call.
    pub fn take_events(&mut self) -> Vec<(String, What)> {
        std::mem::take(&mut self.events)
    }

    fn acquired(&mut self, lock: &str, holders: Vec<(String, i64)>) {
        for (node, owner) in holders {
            let holder = Master {
                identity: node.clone(),
                node,
                owner,
            };
            self.events
                .push((lock.to_owned(), What::LockAcquired { holder }));
        }
    }

    pub fn spec(&self) -> &LockSpec {
        &self.spec
    }

    /// Locks by path, in path order.
    pub fn locks(&self) -> impl Iterator<Item = (&str, &Lock)> {
        self.locks.iter().map(|(p, l)| (p.as_str(), l))
    }

    pub fn lock(&self, path: &str) -> Option<&Lock> {
        self.locks.get(path)
    }

    /// Durations of the holds that ended while the agent watched.
    pub fn hold_histogram(&self) -> &Histogram {
        &self.holds
    }
}

impl TreeContent for LockTree {
    fn kind(&self) -> ContentKind {
        ContentKind::Lock
    }

    fn apply_listing_part(
        &mut self,
        listing: Vec<(String, Vec<ChildNode>)>,
        now: Now,
        resync: bool,
    ) {
        for (path, children) in listing {
            let lock = self.locks.entry(path.clone()).or_default();
            lock.contenders.clear();
            lock.ignored.clear();
            for child in &children {
                lock.upsert(child);
            }
            let acquired = lock.settle(now.mono, resync, false, &mut self.holds);
            self.acquired(&path, acquired);
        }
    }

    fn retain_parents(&mut self, keep: &dyn Fn(&str) -> bool, _now: Now) {
        self.locks.retain(|path, _| keep(path));
    }

    fn parent_created(&mut self, path: &str, _now: Now) {
        self.locks.entry(path.to_owned()).or_default();
    }

    fn parent_deleted(&mut self, path: &str, _now: Now) {
        self.locks.remove(path);
    }

    fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now) {
        let lock = self.locks.entry(parent.to_owned()).or_default();
        lock.upsert(&child);
        let acquired = lock.settle(now.mono, true, true, &mut self.holds);
        self.acquired(parent, acquired);
    }

    fn child_deleted(&mut self, parent: &str, name: &str, now: Now) {
        if let Some(lock) = self.locks.get_mut(parent) {
            lock.remove(name);
            let acquired = lock.settle(now.mono, true, true, &mut self.holds);
            self.acquired(parent, acquired);
        }
    }

    fn child_names(&self, parent: &str) -> BTreeSet<String> {
        self.locks
            .get(parent)
            .map(|l| {
                l.contenders
                    .keys()
                    .map(|(_, n)| n.clone())
                    .chain(l.ignored.iter().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn has_parent(&self, path: &str) -> bool {
        self.locks.contains_key(path)
    }

    fn parent_count(&self) -> usize {
        self.locks.len()
    }

    fn node_counts(&self) -> NodeCounts {
        self.locks
            .values()
            .map(|l| NodeCounts {
                nodes: 1 + l.contenders.len() + l.ignored.len(),
                ephemeral: l.contenders.values().filter(|c| c.owner != 0).count(),
                ignored: l.ignored.len(),
            })
            .sum()
    }

    fn owners(&self) -> Vec<i64> {
        self.locks
            .values()
            .flat_map(|l| l.contenders.values().map(|c| c.owner))
            .filter(|o| *o != 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::SystemTime;

    fn node(name: &str) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: Vec::new(),
            ephemeral_owner: 7,
            ctime_ms: 0,
        }
    }

    fn at(base: Instant, secs: u64) -> Now {
        Now {
            mono: base + Duration::from_secs(secs),
            wall: SystemTime::UNIX_EPOCH,
        }
    }

    const KAZOO: &str = "7c2e1f3a9b1d__lock__";

    #[test]
    fn the_lowest_holds_a_released_lock_is_normal_and_holds_are_timed() {
        let t = Instant::now();
        let mut tree = LockTree::new(LockSpec::default());
        let a = format!("{KAZOO}0000000003");
        let b = format!("{KAZOO}0000000004");
        tree.apply_listing(
            vec![("/locks/r".into(), vec![node(&b), node(&a)])],
            at(t, 0),
            false,
        );
        let lock = tree.lock("/locks/r").unwrap();
        assert_eq!(
            (lock.holders(), lock.waiters(), lock.acquisitions()),
            (1, 1, 0)
        );
        assert_eq!(lock.hold(at(t, 5).mono), Some(Duration::from_secs(5)));
        // The holder releases: the waiter acquires.
        tree.child_deleted("/locks/r", &a, at(t, 10));
        let lock = tree.lock("/locks/r").unwrap();
        assert_eq!(
            (lock.holders(), lock.waiters(), lock.acquisitions()),
            (1, 0, 1)
        );
        assert_eq!(
            tree.hold_histogram().count(),
            0,
            "the hold found by the listing ended, but its start was not seen"
        );
        // Released entirely: not held, nobody waits, nothing is wrong.
        tree.child_deleted("/locks/r", &b, at(t, 12));
        let lock = tree.lock("/locks/r").unwrap();
        assert!(!lock.held());
        assert_eq!((lock.holders(), lock.waiters()), (0, 0));
        assert_eq!(tree.hold_histogram().count(), 1);
        assert_eq!(tree.hold_histogram().sum(), 2.0, "held from 10 s to 12 s");
    }

    #[test]
    fn readers_ahead_of_the_first_writer_hold_together() {
        let t = Instant::now();
        let mut tree = LockTree::new(LockSpec::default());
        let names = [
            "__rlock__0000000001",
            "_c_x-__READ__0000000002",
            "__wlock__0000000003",
            "__rlock__0000000004",
        ];
        tree.apply_listing(
            vec![("/rw".into(), names.iter().map(|n| node(n)).collect())],
            at(t, 0),
            false,
        );
        let lock = tree.lock("/rw").unwrap();
        assert_eq!((lock.holders(), lock.waiters()), (2, 2));
        tree.child_deleted("/rw", names[0], at(t, 1));
        tree.child_deleted("/rw", names[1], at(t, 2));
        let lock = tree.lock("/rw").unwrap();
        assert_eq!((lock.holders(), lock.waiters()), (1, 1), "the writer alone");
        tree.child_deleted("/rw", names[2], at(t, 3));
        assert_eq!(tree.lock("/rw").unwrap().holders(), 1, "then the reader");
    }

    #[test]
    fn recipe_names_are_recognised() {
        assert!(lock_named("7c2e__lock__0000000001"));
        assert!(lock_named("_c_5b3c-lock-0000000001"));
        assert!(lock_named("_c_5b3c-__READ__0000000001"));
        assert!(!lock_named("instance_0000000001"));
        assert!(!lock_named("_c_5b3c-latch-0000000001"));
        assert_eq!(Mode::of("x__WRIT__0000000001"), Mode::Write);
    }

    proptest! {
        /// Whatever the order of arrivals and departures, an exclusive lock
        /// has at most one holder, a holder whenever anyone contends, and
        /// every hold that started while watched is counted once.
        #[test]
        fn an_exclusive_lock_has_one_holder_and_counts_every_hold(
            ops in prop::collection::vec((any::<bool>(), 0usize..6), 1..80),
        ) {
            let t = Instant::now();
            let mut tree = LockTree::new(LockSpec::default());
            tree.apply_listing(vec![("/l".into(), vec![])], at(t, 0), false);
            let mut seq = 0;
            let mut live: Vec<String> = Vec::new();
            let mut holds = 0u64;
            let mut holder: Option<String> = None;
            for (i, (join, pick)) in ops.into_iter().enumerate() {
                let now = at(t, i as u64 + 1);
                if join || live.is_empty() {
                    seq += 1;
                    let name = format!("{KAZOO}{seq:010}");
                    live.push(name.clone());
                    tree.child_upserted("/l", node(&name), now);
                } else {
                    let name = live.remove(pick % live.len());
                    tree.child_deleted("/l", &name, now);
                }
                let lowest = live.first().cloned();
                if lowest.is_some() && lowest != holder {
                    holds += 1;
                }
                holder = lowest;
                let lock = tree.lock("/l").unwrap();
                prop_assert_eq!(lock.holders(), usize::from(holder.is_some()));
                prop_assert_eq!(lock.waiters(), live.len().saturating_sub(1));
                prop_assert_eq!(lock.acquisitions(), holds);
            }
        }
    }
}
