//! Pure data models: ZooKeeper events go in, metric values come out.
//! Nothing in here performs I/O or reads a clock.

pub mod candidate;
pub mod election;
pub mod elections;
pub mod ensemble;
pub mod groups;
pub mod histogram;
pub mod pattern;
pub mod session;
pub mod tree;

use std::sync::{Arc, RwLock};

/// Everything known about one configured cluster.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub session: session::Session,
    pub trees: Vec<tree::Tree>,
    /// Four-letter-word view of the members; `None` when polling is off.
    pub ensemble: Option<ensemble::Ensemble>,
    /// Client addresses the ensemble publishes in `/zookeeper/config`.
    pub members: Vec<String>,
}

impl ClusterState {
    /// State of a cluster before anything is known.
    pub fn new(name: String, trees: Vec<tree::Tree>, four_letter_words: bool) -> Self {
        Self {
            name,
            session: session::Session::default(),
            trees,
            ensemble: four_letter_words.then(ensemble::Ensemble::default),
            members: Vec::new(),
        }
    }
}

/// A cluster's state shared between its session task (writer) and the HTTP
/// handlers (readers). Writers hold the lock only to apply already-read data.
pub type SharedCluster = Arc<RwLock<ClusterState>>;
