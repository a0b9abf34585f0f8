//! Pure data models: ZooKeeper events go in, metric values come out.
//! Nothing in here performs I/O or reads a clock; time is passed in.

pub mod alerting;
pub mod attention;
pub mod backoff;
pub mod candidate;
pub mod carry;
pub mod changes;
pub mod child;
pub mod cluster;
pub mod content;
pub mod election;
pub mod election_tree;
pub mod ensemble;
pub mod export;
pub mod ghost;
pub mod groups;
pub mod health;
pub mod histogram;
pub mod kerberos;
pub mod lease;
pub mod locks;
pub mod now;
pub mod outer_record;
pub mod pattern;
pub mod reload;
pub mod roster;
pub mod session;
pub mod shared;
/// Small models built alike by the unit tests and the router's fuzz target.
#[doc(hidden)]
pub mod testing;
pub mod timeline;
pub mod tree;
pub mod web;

pub use cluster::{
    ClusterState, DiscoveryFeed, DiscoveryStatus, Limits, ProbeFeed, ProbeStats, TreeChange,
};
pub use now::Now;
pub use roster::Roster;
pub use shared::{Listed, SharedCluster, WatchPlan, WatchedTree};
