//! Building a client for a cluster, backing off between failed attempts,
//! and saying in operator terms why a connect or a tree sync failed.

use std::time::{Duration, SystemTime};

use zookeeper_client::Client;

use crate::config::ClusterConfig;
use crate::model::tree::TreePattern;

const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Capped exponential backoff with a little jitter so several agents do not
/// reconnect in lockstep.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: BACKOFF_START,
        }
    }
}

impl Backoff {
    pub fn reset(&mut self) {
        self.next = BACKOFF_START;
    }
    pub fn next_delay(&mut self) -> Duration {
        let jitter = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 100);
        let delay = self.next + self.next * jitter / 1000;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        delay
    }
}

/// Explains a connect failure in operator terms.
pub fn describe_connect_error(cfg: &ClusterConfig, e: &zookeeper_client::Error) -> String {
    let servers = cfg.servers.join(",");
    match e {
        zookeeper_client::Error::NoHosts => {
            format!(
                "no ZooKeeper server of [{servers}] accepted a session (refused or unreachable)"
            )
        }
        zookeeper_client::Error::Timeout => {
            format!("no session established with [{servers}] within the session timeout")
        }
        zookeeper_client::Error::AuthFailed => format!(
            "authentication to [{servers}] failed with the digest credentials from {}",
            cfg.auth.as_ref().map_or("(none)", |a| a.origin.as_str())
        ),
        other => format!("cannot connect to [{servers}]: {other}"),
    }
}

/// Explains a tree sync failure, with what to do about it.
pub fn describe_sync_error(
    cfg: &ClusterConfig,
    pattern: &TreePattern,
    e: &zookeeper_client::Error,
) -> String {
    match e {
        zookeeper_client::Error::NoAuth => format!(
            "not authorized to read {} (ACL); {}",
            pattern.root(),
            match &cfg.auth {
                Some(a) => format!("check the digest credentials from {}", a.origin),
                None => "configure `auth` for this cluster".to_owned(),
            }
        ),
        zookeeper_client::Error::Unimplemented => format!(
            "the server does not support persistent recursive watches on {} (needs ZooKeeper 3.6 or newer; set watch_mode = \"oneshot\" for older servers)",
            pattern.root()
        ),
        other => format!("cannot watch and list {}: {other}", pattern.root()),
    }
}

/// A new client for the cluster, with its credentials.
pub async fn connect(cfg: &ClusterConfig) -> Result<Client, zookeeper_client::Error> {
    let mut connector = Client::connector()
        .with_session_timeout(cfg.session_timeout)
        .with_connection_timeout(cfg.session_timeout.min(Duration::from_secs(5)))
        .with_fail_eagerly();
    if let Some(auth) = &cfg.auth {
        connector = connector.with_auth("digest", auth.credentials.expose().as_bytes());
    }
    connector.connect(&cfg.connect_string()).await
}
