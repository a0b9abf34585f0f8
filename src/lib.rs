//! zk-election-exporter: watches ZooKeeper election trees and exports who is
//! master, how often mastership moves and how long elections go without one.
//!
//! Data flows one way. *Sources* ([`zk`]) own all ZooKeeper I/O: one task per
//! cluster keeps a session, places a persistent recursive watch on every tree
//! root and turns events into calls on the *models* ([`model`]), plain structs
//! that take events and a timestamp and hold every rule (who is master, what a
//! switch is, masterless time). *Outputs* read the models: [`metrics`] encodes
//! them at scrape time and [`http`] serves them. HTTP handlers never wait on
//! ZooKeeper.

pub mod cli;
pub mod config;
pub mod fourlw;
pub mod http;
pub mod metrics;
pub mod model;
pub mod simulate;
pub mod sources;

/// Version and git revision baked in at build time.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const REVISION: &str = match option_env!("ZKEE_GIT_REVISION") {
    Some(r) => r,
    None => "unknown",
};
