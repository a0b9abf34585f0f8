//! Discovery in a session: a walk's finds wait `discovery.settle` and are
//! read again before they are watched; a discovered tree that vanished is
//! retired with its watch, and no other tree's watch is touched.

use super::Session;
use crate::model::DiscoveryStatus;
use crate::model::tree::{Tree, TreeId, TreePattern};
use crate::sources::discovery;

impl Session<'_> {
    fn watched_by_discovery(&self) -> Vec<discovery::Watched> {
        self.state
            .trees_watched()
            .into_iter()
            .map(|t| discovery::Watched {
                pattern: t.pattern,
                kind: t.kind,
                source: t.source,
            })
            .collect()
    }

    /// Runs a discovery walk: drops discovered trees that vanished or
    /// changed kind at once, and keeps what it found for [`Self::confirm`].
    pub(super) async fn discover(&mut self) {
        let watched = self.watched_by_discovery();
        let Some(looked) = discovery::look(
            &self.client,
            self.cfg,
            &watched,
            &mut self.discovery_truncation_logged,
        )
        .await
        else {
            return;
        };
        if let Some(walk) = looked.pending {
            let due = tokio::time::Instant::now() + self.cfg.discovery.settle;
            self.sighting = Some((walk, looked.status.clone(), due));
        }
        self.adopt(&looked.retired, Vec::new(), looked.status).await;
    }

    /// `discovery.settle` after a walk: starts watching the finds whose
    /// candidates are still there.
    pub(super) async fn confirm(&mut self) {
        let Some((walk, mut status, _)) = self.sighting.take() else {
            return;
        };
        let watched = self.watched_by_discovery();
        let Some(confirmed) = discovery::confirm(&self.client, self.cfg, walk, &watched).await
        else {
            return;
        };
        status.fleeting = confirmed.fleeting;
        self.adopt(&[], confirmed.added, status).await;
    }

    /// Hands discovery's changes to the models and watches the new trees.
    /// A retired tree's watch goes; no other tree's is touched.
    async fn adopt(&mut self, retired: &[TreePattern], added: Vec<Tree>, status: DiscoveryStatus) {
        let new: Vec<TreeId> = added.iter().map(Tree::id).collect();
        if let Some(feed) = self.state.discovery_feed() {
            feed.walked(status);
        }
        for id in self.state.trees_discovered(retired, added) {
            self.watched.remove(&id);
        }
        for id in new {
            self.sync_tree(id).await;
        }
    }
}
