//! The owner sessions of the cluster's ephemeral nodes: what the ghost
//! check asks each round about.

use std::collections::BTreeSet;

use super::ClusterState;

impl ClusterState {
    /// Owner sessions of the ephemeral nodes of every tree.
    pub fn owners(&self) -> Vec<i64> {
        self.trees.iter().flat_map(|t| t.owners()).collect()
    }

    /// The distinct owner sessions of every tree's ephemeral nodes. An
    /// election tree keeps its owners counted as its candidates come and
    /// go, so a million elections held by a few sessions are a few
    /// sessions, found without a walk.
    pub fn distinct_owners(&self) -> Vec<i64> {
        let all: BTreeSet<i64> = self
            .trees
            .iter()
            .flat_map(|t| t.owner_counts())
            .map(|(owner, _)| owner)
            .filter(|o| *o != 0)
            .collect();
        all.into_iter().collect()
    }
}
