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

/// How a lock's holders moved.
#[derive(Debug, Default)]
struct Settled {
    /// Holds that started (node, owner).
    started: Vec<(String, i64)>,
    /// Holds that ended (node, since when it was held).
    ended: Vec<(String, Instant)>,
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
    fn settle(&mut self, now: Instant, count: bool, seen: bool, ended: &mut Histogram) -> Settled {
        let mut settled = Settled::default();
        let rightful = self.rightful();
        let gone: Vec<String> = self
            .holding
            .keys()
            .filter(|n| !rightful.contains(*n))
            .cloned()
            .collect();
        for name in gone {
            if let Some((since, watched)) = self.holding.remove(&name) {
                if watched {
                    ended.observe(now.saturating_duration_since(since).as_secs_f64());
                }
                settled.ended.push((name, since));
            }
        }
        for name in rightful {
            if let std::collections::btree_map::Entry::Vacant(slot) =
                self.holding.entry(name.clone())
            {
                slot.insert((now, seen));
                if count {
                    self.acquisitions += 1;
                }
                let owner = self.owner_of(&name);
                settled.started.push((name, owner));
            }
        }
        settled
    }

    /// The session owning contender `name` (0: not known).
    fn owner_of(&self, name: &str) -> i64 {
        self.contenders
            .iter()
            .find(|((_, n), _)| n == name)
            .map_or(0, |(_, c)| c.owner)
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
    /// Holds not yet told as longer than `max_hold`, by start (start,
    /// lock, holder): the soonest to pass it is the first, so nothing
    /// walks the locks to find it. A hold that ended before is dropped
    /// when its turn comes.
    starts: BTreeSet<(Instant, String, String)>,
}

impl LockTree {
    pub fn new(spec: LockSpec) -> Self {
        Self {
            spec,
            locks: BTreeMap::new(),
            holds: Histogram::new(PERIOD_BUCKETS),
            events: Vec::new(),
            starts: BTreeSet::new(),
        }
    }

    /// Records, once per hold, the holds that passed `max_hold` by `now`
    /// (timed from when the agent saw them start, as the metric). Only the
    /// holds due are looked at.
    pub fn note_long_holds(&mut self, now: Instant) {
        let Some(max) = self.spec.max_hold else {
            return;
        };
        while let Some(first) = self.starts.first() {
            if now.saturating_duration_since(first.0) <= max {
                break;
            }
            let Some((since, path, node)) = self.starts.pop_first() else {
                break;
            };
            // Still the same hold: a hold that ended, or one that ended and
            // started again, has another start or none.
            let Some(lock) = self.locks.get(&path) else {
                continue;
            };
            if lock.holding.get(&node).map(|h| h.0) != Some(since) {
                continue;
            }
            let holder = Master {
                owner: lock.owner_of(&node),
                identity: node.clone(),
                node,
            };
            let held = now.saturating_duration_since(since);
            self.events
                .push((path, What::LockHeldLong { holder, held }));
        }
    }

    /// When the next hold passes `max_hold`, if one can: when
    /// [`LockTree::note_long_holds`] has something to tell.
    pub fn next_long_hold(&self) -> Option<Instant> {
        let max = self.spec.max_hold?;
        let (since, _, _) = self.starts.first()?;
        // Passing means longer than: the first instant after.
        Some(*since + max + Duration::from_millis(1))
    }

    /// Timeline entries since the last call.
    pub fn take_events(&mut self) -> Vec<(String, What)> {
        std::mem::take(&mut self.events)
    }

    /// How `lock`'s holders moved at `now`: the holds that started are
    /// timed for `max_hold` and, when they `count`, told as acquisitions.
    fn settled(&mut self, lock: &str, settled: Settled, now: Instant, count: bool) {
        for (node, since) in settled.ended {
            self.starts.remove(&(since, lock.to_owned(), node));
        }
        let holders = settled.started;
        if self.spec.max_hold.is_some() {
            for (node, _) in &holders {
                self.starts.insert((now, lock.to_owned(), node.clone()));
            }
        }
        if !count {
            return;
        }
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
            let settled = lock.settle(now.mono, resync, false, &mut self.holds);
            self.settled(&path, settled, now.mono, resync);
        }
    }

    fn retain_parents(&mut self, keep: &dyn Fn(&str) -> bool, _now: Now) {
        self.locks.retain(|path, _| keep(path));
        let locks = &self.locks;
        self.starts.retain(|(_, path, _)| locks.contains_key(path));
    }

    fn parent_created(&mut self, path: &str, _now: Now) {
        self.locks.entry(path.to_owned()).or_default();
    }

    fn parent_deleted(&mut self, path: &str, _now: Now) {
        if let Some(lock) = self.locks.remove(path) {
            for (node, (since, _)) in lock.holding {
                self.starts.remove(&(since, path.to_owned(), node));
            }
        }
    }

    fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now) {
        let lock = self.locks.entry(parent.to_owned()).or_default();
        lock.upsert(&child);
        let settled = lock.settle(now.mono, true, true, &mut self.holds);
        self.settled(parent, settled, now.mono, true);
    }

    fn child_deleted(&mut self, parent: &str, name: &str, now: Now) {
        if let Some(lock) = self.locks.get_mut(parent) {
            lock.remove(name);
            let settled = lock.settle(now.mono, true, true, &mut self.holds);
            self.settled(parent, settled, now.mono, true);
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
mod tests;
