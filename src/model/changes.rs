//! Waiting for the models to change: the tasks that act on what the models
//! show (the alert pusher, the timeline log) sleep until a source wrote to
//! a cluster or a reload replaced the list, instead of polling every
//! cluster at a fixed pace. At rest they do nothing.

use std::collections::HashMap;

use futures::FutureExt;
use tokio::sync::watch;

use super::{Roster, SharedCluster};

/// Follows the writes to every cluster of a roster, and the roster's
/// replacements.
pub struct WriteWatch {
    roster: Roster<SharedCluster>,
    replaced: watch::Receiver<std::sync::Arc<Vec<SharedCluster>>>,
    /// By [`SharedCluster::identity`]: a cluster rebuilt in place by a
    /// reload keeps its receiver.
    written: HashMap<usize, watch::Receiver<u64>>,
}

impl WriteWatch {
    /// Follows `roster`; the first [`WriteWatch::next`] returns at once, so
    /// the caller reads the models as they are when it starts.
    pub fn new(roster: &Roster<SharedCluster>) -> Self {
        let mut replaced = roster.replacements();
        replaced.mark_changed();
        Self {
            roster: roster.clone(),
            replaced,
            written: HashMap::new(),
        }
    }

    /// Returns once a cluster was written to, or the roster replaced,
    /// since the last return (at once if that happened meanwhile).
    pub async fn next(&mut self) {
        // A writer of a cluster no longer listed may be gone: its receiver
        // would answer at once, forever.
        self.follow();
        let replaced = self.replaced.changed().map(|_| ()).boxed();
        let written = self
            .written
            .values_mut()
            .map(|rx| rx.changed().map(|_| ()).boxed());
        futures::future::select_all(std::iter::once(replaced).chain(written)).await;
    }

    /// Receivers for the clusters listed now, and only for them. A cluster
    /// new to the list counts as changed.
    fn follow(&mut self) {
        let listed = self.roster.now();
        self.written
            .retain(|id, _| listed.iter().any(|c| c.identity() == *id));
        for c in listed.iter() {
            self.written.entry(c.identity()).or_insert_with(|| {
                let mut rx = c.changes();
                rx.mark_changed();
                rx
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cluster::ClusterState;
    use std::time::Duration;

    fn cluster(name: &str) -> SharedCluster {
        SharedCluster::new(ClusterState::new(name.into(), Vec::new(), false))
    }

    /// Whether `next` returns within a short wait (it returns at once or
    /// never: nothing else runs in these tests).
    async fn returns(changes: &mut WriteWatch) -> bool {
        tokio::time::timeout(Duration::from_millis(50), changes.next())
            .await
            .is_ok()
    }

    /// Takes the changes pending (a few at most: one per receiver).
    async fn drain(changes: &mut WriteWatch) {
        for _ in 0..4 {
            if !returns(changes).await {
                return;
            }
        }
        panic!("changes keep coming with nothing written");
    }

    #[tokio::test]
    async fn it_wakes_for_a_write_or_a_replacement_and_sleeps_otherwise() {
        let a = cluster("a");
        let roster = Roster::new(vec![a.clone()]);
        let mut changes = WriteWatch::new(&roster);
        assert!(
            returns(&mut changes).await,
            "the first wait reads the start"
        );
        // The cluster is new to it, and counts as changed once.
        drain(&mut changes).await;
        assert!(!returns(&mut changes).await, "nothing was written");

        a.session_started(1, Duration::from_secs(10), crate::model::Now::current());
        assert!(returns(&mut changes).await, "a write wakes it");
        assert!(!returns(&mut changes).await, "once");

        let b = cluster("b");
        roster.replace(vec![b.clone()]);
        assert!(returns(&mut changes).await, "a reload wakes it");
        drain(&mut changes).await;
        // The removed cluster's writes no longer count; the new one's do.
        a.session_started(2, Duration::from_secs(10), crate::model::Now::current());
        assert!(
            !returns(&mut changes).await,
            "a removed cluster is not followed"
        );
        drop(a);
        assert!(!returns(&mut changes).await, "nor is its end");
        b.session_started(3, Duration::from_secs(10), crate::model::Now::current());
        assert!(returns(&mut changes).await);
    }

    #[tokio::test]
    async fn the_timeline_tick_wakes_no_one() {
        let a = cluster("a");
        let roster = Roster::new(vec![a.clone()]);
        let mut changes = WriteWatch::new(&roster);
        drain(&mut changes).await;
        let _ = a.tick(crate::model::Now::current(), |_| 0);
        assert!(!returns(&mut changes).await);
    }
}
