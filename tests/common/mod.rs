//! Test harness: real ZooKeeper servers (Debian's package) on free loopback
//! ports, a cuttable TCP proxy, the exporter binary, and helpers to read its
//! metrics and wait with deadlines. One file per concern; every test file
//! takes them all with `use common::*`.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

pub mod database;
mod exporter;
mod failover;
pub mod fleet;
mod http;
pub mod kdc;
pub mod kerberos_agent;
pub mod labels;
pub mod layout;
pub mod lease_agent;
mod metrics;
pub mod node_agent;
pub mod ongoing;
pub mod payloads;
pub mod pki;
pub mod podman;
pub mod program;
pub mod receiver;
mod system;
mod wait;
mod zk;

// Each test binary uses some of them: the rest are not unused code.
#[allow(unused_imports)]
pub use {exporter::*, failover::*, http::*, metrics::*, system::*, wait::*, zk::*};

pub(crate) static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh directory under the target dir (kept after failures for logs).
pub fn temp_dir(tag: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A free loopback port (bound then released; good enough on a test box).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
