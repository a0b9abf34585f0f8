//! What the cluster's models owe to time and to the start: the timeline
//! entries time alone makes (holds passing `max_hold`), and whether the
//! first listing is in.

use super::{ClusterState, tree};

impl ClusterState {
    /// Whether the session is connected and every tree's first listing
    /// ended (synced, or failed with a reason): what the agent was started
    /// to read is in.
    pub fn first_listing_done(&self) -> bool {
        self.session.is_connected()
            && self
                .trees
                .iter()
                .all(|t| t.synced() || t.sync_error().is_some())
    }

    /// When time alone next makes a timeline entry (a hold passing
    /// `max_hold`): when the timeline task calls [`ClusterState::tick`].
    pub fn next_tick(&self) -> Option<std::time::Instant> {
        self.trees
            .iter()
            .filter_map(tree::Tree::next_long_hold)
            .min()
    }

    /// Time-driven timeline entries (holds passing `max_hold`), then into
    /// the log; the timeline task calls this with the current time.
    pub fn tick(&mut self, now: crate::model::Now) {
        for tree in &mut self.trees {
            tree.note_long_holds(now.mono);
        }
        self.take_events(now);
    }
}
