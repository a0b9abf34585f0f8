//! Pure data models: ZooKeeper events go in, metric values come out.
//! Nothing in here performs I/O or reads a clock.

pub mod candidate;
pub mod election;
pub mod histogram;
pub mod session;
pub mod tree;

use std::sync::{Arc, RwLock};

/// Everything known about one configured cluster.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub session: session::Session,
    pub trees: Vec<tree::ElectionTree>,
}

/// A cluster's state shared between its session task (writer) and the HTTP
/// handlers (readers). Writers hold the lock only to apply already-read data.
pub type SharedCluster = Arc<RwLock<ClusterState>>;
