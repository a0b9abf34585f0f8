//! What discovery's walks found, published by the session that walks:
//! it writes without taking the cluster's lock, and the scrape reads the
//! latest.

use std::sync::Arc;

use tokio::sync::watch;

/// What the last discovery walk found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoveryStatus {
    pub nodes_walked: usize,
    pub truncated: bool,
    pub last_run: Option<std::time::SystemTime>,
    /// Finds whose candidates did not outlive `discovery.settle`, since
    /// the agent started: churn that was never taken for trees.
    pub fleeting: u64,
}

/// The walks' outcome as one snapshot channel; cloning gives another
/// handle on the same outcome.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryFeed(Arc<watch::Sender<DiscoveryStatus>>);

impl DiscoveryFeed {
    /// A walk's outcome: it replaces the last one, and its fleeting
    /// finds add to the total.
    pub fn walked(&self, status: DiscoveryStatus) {
        self.0.send_modify(|s| {
            *s = DiscoveryStatus {
                fleeting: s.fleeting + status.fleeting,
                ..status
            }
        });
    }

    /// The outcome now; held only while it is read (writes wait).
    pub fn now(&self) -> watch::Ref<'_, DiscoveryStatus> {
        self.0.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_replaces_the_last_and_fleeting_finds_add_up() {
        let feed = DiscoveryFeed::default();
        let session = feed.clone();
        session.walked(DiscoveryStatus {
            nodes_walked: 10,
            truncated: true,
            last_run: None,
            fleeting: 2,
        });
        session.walked(DiscoveryStatus {
            nodes_walked: 7,
            truncated: false,
            last_run: None,
            fleeting: 3,
        });
        let now = feed.now();
        assert_eq!(
            (now.nodes_walked, now.truncated, now.fleeting),
            (7, false, 5)
        );
    }
}
