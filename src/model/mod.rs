//! Pure data models: ZooKeeper events go in, metric values come out.
//! Nothing in here performs I/O or reads a clock; time is passed in.

pub(crate) mod alerting;
pub(crate) mod attention;
pub(crate) mod backoff;
pub mod candidate;
pub(crate) mod carry;
pub(crate) mod changes;
pub(crate) mod child;
pub mod cluster;
pub(crate) mod content;
pub(crate) mod election;
pub mod election_tree;
pub mod ensemble;
pub(crate) mod export;
pub(crate) mod ghost;
pub(crate) mod groups;
pub(crate) mod health;
pub(crate) mod histogram;
pub mod journal;
pub(crate) mod kerberos;
pub mod lease;
pub(crate) mod locks;
pub(crate) mod now;
pub(crate) mod outer_record;
pub(crate) mod pattern;
pub(crate) mod reload;
pub(crate) mod roster;
pub(crate) mod session;
pub(crate) mod shared;
pub(crate) mod survey;
/// Small models built alike by the unit tests and the router's fuzz target.
#[doc(hidden)]
pub(crate) mod testing;
pub(crate) mod timeline;
pub mod tree;
pub mod web;

pub use cluster::{
    ClusterState, DiscoveryFeed, DiscoveryStatus, Limits, ProbeFeed, ProbeStats, TreeChange,
};
pub use now::Now;
pub use roster::Roster;
pub use shared::{Listed, SharedCluster, WatchPlan, WatchedTree};
