//! The owner sessions of the cluster's ephemeral nodes: what the ghost
//! check asks each round about.

use std::collections::{BTreeSet, HashMap};

use super::ClusterState;
use crate::model::tree;

impl ClusterState {
    /// Owner sessions of the ephemeral nodes of every tree.
    pub fn owners(&self) -> Vec<i64> {
        self.trees.iter().flat_map(|t| t.owners()).collect()
    }

    /// The distinct owner sessions of every tree's ephemeral nodes; a
    /// tree whose stamp is the one `cache` kept its owners at is not
    /// walked again. A million quiet elections held by a few sessions are
    /// a few sessions, found without a walk.
    pub fn distinct_owners(&self, cache: &mut OwnersCache) -> Vec<i64> {
        cache
            .trees
            .retain(|id, _| self.trees.iter().any(|t| t.id() == *id));
        let mut all = BTreeSet::new();
        for tree in &self.trees {
            let kept = cache
                .trees
                .get(&tree.id())
                .filter(|(stamp, _)| *stamp == tree.stamp());
            match kept {
                Some((_, owners)) => all.extend(owners.iter().copied()),
                None => {
                    let owners: BTreeSet<i64> =
                        tree.owners().into_iter().filter(|o| *o != 0).collect();
                    all.extend(owners.iter().copied());
                    cache.trees.insert(tree.id(), (tree.stamp(), owners));
                }
            }
        }
        all.into_iter().collect()
    }
}

/// The distinct owners of each tree, kept with the tree's stamp by whoever
/// asks again and again (the ghost check, once a round).
#[derive(Debug, Default)]
pub struct OwnersCache {
    trees: HashMap<tree::TreeId, (u64, BTreeSet<i64>)>,
}
