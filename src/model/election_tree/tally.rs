//! What an election tree keeps in step with every change, so that readers
//! pay for what moved rather than for the tree: its [`Journal`] of changed
//! elections, how many candidates each owner session holds (the ghost
//! check asks about the distinct owners every round; a million elections
//! are held by a handful of sessions), its nodes counted, and its time
//! without a master summed (every scrape shows both).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::super::content::NodeCounts;
use super::super::journal::Journal;
use super::{ElectionTree, Entry};

/// What every election of a tree adds up to, kept as elections change.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    /// Candidates held per owner session (ephemeral ones only).
    owners: HashMap<i64, u32>,
    nodes: NodeCounts,
    /// Time without a master of the periods that ended.
    masterless_closed: Duration,
    /// Elections without a master now, and the sum of when each period
    /// began (nanoseconds after `base`): their time so far is
    /// `open × (now − base) − since_sum`.
    open: u64,
    since_sum: i128,
    base: Option<Instant>,
}

impl Tally {
    fn offset(&mut self, at: Instant) -> i128 {
        let base = *self.base.get_or_insert(at);
        match at.checked_duration_since(base) {
            Some(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
            None => -i128::try_from(base.duration_since(at).as_nanos()).unwrap_or(i128::MAX),
        }
    }

    /// `entry` joined the tree (or is its state after a change).
    pub(super) fn add(&mut self, entry: &Entry) {
        let e = &entry.election;
        for owner in e.owners() {
            *self.owners.entry(owner).or_insert(0) += 1;
        }
        self.nodes = self.nodes + entry.node_counts();
        self.masterless_closed += e.masterless_closed();
        if let Some(since) = e.masterless_since() {
            self.open += 1;
            self.since_sum += self.offset(since);
        }
    }

    /// `entry` left the tree (or is its state before a change).
    pub(super) fn remove(&mut self, entry: &Entry) {
        let e = &entry.election;
        for owner in e.owners() {
            if let Some(n) = self.owners.get_mut(&owner) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.owners.remove(&owner);
                }
            }
        }
        let n = entry.node_counts();
        self.nodes = NodeCounts {
            nodes: self.nodes.nodes.saturating_sub(n.nodes),
            ephemeral: self.nodes.ephemeral.saturating_sub(n.ephemeral),
            ignored: self.nodes.ignored.saturating_sub(n.ignored),
        };
        self.masterless_closed = self.masterless_closed.saturating_sub(e.masterless_closed());
        if let Some(since) = e.masterless_since() {
            self.open = self.open.saturating_sub(1);
            self.since_sum -= self.offset(since);
        }
    }

    /// Time without a master of every election now in the tree, a period
    /// still running included.
    fn masterless(&self, now: Instant) -> Duration {
        let running = match self.base {
            Some(base) if self.open > 0 => {
                let now = i128::try_from(now.saturating_duration_since(base).as_nanos())
                    .unwrap_or(i128::MAX);
                let nanos = (i128::from(self.open) * now - self.since_sum).max(0);
                Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
            }
            _ => Duration::ZERO,
        };
        self.masterless_closed + running
    }
}

impl ElectionTree {
    /// Which elections changed, for the readers that follow them.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Something changed that is no one election's (a listing, the
    /// tree's sync state, a lease reading): its readers read it all again.
    pub fn restart_journal(&mut self) {
        self.journal.restart(self.elections.len());
    }

    /// Each owner session holding candidates, and how many.
    pub fn owner_counts(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        self.tally.owners.iter().map(|(o, n)| (*o, *n as usize))
    }

    /// Its nodes, counted as they change (see [`TreeContent::node_counts`]
    /// for the walk).
    ///
    /// [`TreeContent::node_counts`]: super::super::content::TreeContent::node_counts
    pub fn node_totals(&self) -> NodeCounts {
        self.tally.nodes
    }

    /// Time without a master of the elections watched now, a period still
    /// running included (the deleted ones' is [`Self::masterless_gone`]).
    pub fn masterless_watched(&self, now: Instant) -> Duration {
        self.tally.masterless(now)
    }

    /// Runs `change` on election `key`'s entry, keeping the tally and the
    /// journal in step with it.
    pub(super) fn changing<R>(&mut self, key: &str, change: impl FnOnce(&mut Self) -> R) -> R {
        if let Some(entry) = self.elections.get(key) {
            self.tally.remove(entry);
        }
        let out = change(self);
        if let Some(entry) = self.elections.get(key) {
            self.tally.add(entry);
        }
        self.journal.touched(key);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::candidate::IdentityMode;
    use super::super::super::child::ChildNode;
    use super::super::super::content::TreeContent;
    use super::super::super::journal::Since;
    use super::super::super::now::Now;
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn child(seq: u32, owner: i64) -> ChildNode {
        ChildNode {
            name: format!("n_{seq:010}"),
            data: Vec::new(),
            ephemeral_owner: owner,
            ctime_ms: 0,
        }
    }

    /// Distinct owners with their candidates, walked.
    fn walked(t: &ElectionTree) -> BTreeMap<i64, usize> {
        let mut m = BTreeMap::new();
        for owner in t.owners() {
            *m.entry(owner).or_insert(0) += 1;
        }
        m
    }

    #[derive(Debug, Clone)]
    enum Op {
        Join(u8, u32, i64),
        Leave(u8, u32),
        Created(u8),
        Deleted(u8),
        List(Vec<(u8, Vec<(u32, i64)>)>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..6, 1u32..8, 0i64..4).prop_map(|(e, s, o)| Op::Join(e, s, o)),
            (0u8..6, 1u32..8).prop_map(|(e, s)| Op::Leave(e, s)),
            (0u8..6).prop_map(Op::Created),
            (0u8..6).prop_map(Op::Deleted),
            proptest::collection::vec(
                (0u8..6, proptest::collection::vec((1u32..8, 0i64..4), 0..4)),
                0..4
            )
            .prop_map(Op::List),
        ]
    }

    proptest! {
        /// Whatever happens to the tree, its owner counts, node counts and
        /// time without a master are what a walk counts, and every election
        /// that changed is in the journal after a cursor taken before (or
        /// the journal says to read it all).
        #[test]
        fn owner_counts_and_journal_follow_every_change(ops in proptest::collection::vec(op(), 0..40)) {
            let start = Now::current();
            let mut now = start;
            let mut t = ElectionTree::new(IdentityMode::Node);
            let path = |e: u8| format!("/e/{e}");
            for op in ops {
                let before = t.journal().cursor();
                let snapshot: BTreeMap<String, String> = t
                    .elections()
                    .map(|(p, e)| (p.to_owned(), format!("{:?}", e.candidates().collect::<Vec<_>>())))
                    .collect();
                let mut listed = false;
                match op {
                    Op::Join(e, s, o) => t.child_upserted(&path(e), child(s, o), now),
                    Op::Leave(e, s) => t.child_deleted(&path(e), &child(s, 0).name, now),
                    Op::Created(e) => t.parent_created(&path(e), now),
                    Op::Deleted(e) => t.parent_deleted(&path(e), now),
                    Op::List(l) => {
                        listed = true;
                        let l = l
                            .into_iter()
                            .map(|(e, cs)| (path(e), cs.into_iter().map(|(s, o)| child(s, o)).collect()))
                            .collect();
                        t.apply_listing(l, now, true);
                    }
                }
                let counted: BTreeMap<i64, usize> = t.owner_counts().collect();
                prop_assert_eq!(counted, walked(&t));
                prop_assert_eq!(t.tally.nodes, TreeContent::node_counts(&t));
                let later = now.mono + std::time::Duration::from_millis(1500);
                let summed: std::time::Duration =
                    t.elections().map(|(_, e)| e.masterless_total(later)).sum();
                prop_assert_eq!(t.masterless_watched(later), summed);
                now.mono += std::time::Duration::from_millis(700);
                let after: BTreeMap<String, String> = t
                    .elections()
                    .map(|(p, e)| (p.to_owned(), format!("{:?}", e.candidates().collect::<Vec<_>>())))
                    .collect();
                match t.journal().since(Some(before)) {
                    Since::Everything => {}
                    Since::Changed(keys) => {
                        prop_assert!(!listed, "a listing restarts the journal");
                        for p in snapshot.keys().chain(after.keys()) {
                            if snapshot.get(p) != after.get(p) {
                                prop_assert!(keys.contains(&p.as_str()), "{} changed unjournaled", p);
                            }
                        }
                    }
                }
            }
        }
    }
}
