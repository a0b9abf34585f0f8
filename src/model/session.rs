//! The agent's own ZooKeeper session, as operators need to see it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::histogram::{Histogram, LATENCY_BUCKETS};

/// Session states exported as `zookeeper_session_state{state}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Building a client (first connect or after a terminal state).
    Connecting,
    Connected,
    ReadOnly,
    Disconnected,
    Expired,
    AuthFailed,
    Closed,
}

impl SessionState {
    pub const ALL: [SessionState; 7] = [
        Self::Connecting,
        Self::Connected,
        Self::ReadOnly,
        Self::Disconnected,
        Self::Expired,
        Self::AuthFailed,
        Self::Closed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::ReadOnly => "read_only",
            Self::Disconnected => "disconnected",
            Self::Expired => "expired",
            Self::AuthFailed => "auth_failed",
            Self::Closed => "closed",
        }
    }
}

/// Counters and state of one cluster's session.
#[derive(Debug, Clone)]
pub struct Session {
    pub state: SessionState,
    /// Times the session came back after a disconnect (same session id).
    pub reconnects: u64,
    pub expirations: u64,
    /// Failed attempts to build a client (connect refused, timeout, auth).
    pub connect_failures: u64,
    /// Negotiated session timeout of the current session.
    pub timeout: Option<Duration>,
    /// Id of the current session (its own watches are not "watchers").
    pub id: Option<i64>,
    /// Why the session is not connected, for `/ready` and logs.
    pub last_error: Option<String>,
    latency: BTreeMap<&'static str, Histogram>,
}

impl Default for Session {
    fn default() -> Self {
        Self {
            state: SessionState::Connecting,
            reconnects: 0,
            expirations: 0,
            connect_failures: 0,
            timeout: None,
            id: None,
            last_error: None,
            latency: BTreeMap::new(),
        }
    }
}

impl Session {
    /// Records one request round trip of operation `op` (`read`, `list`, …).
    pub fn observe_request(&mut self, op: &'static str, took: Duration) {
        self.latency
            .entry(op)
            .or_insert_with(|| Histogram::new(LATENCY_BUCKETS))
            .observe(took.as_secs_f64());
    }

    pub fn latency(&self) -> impl Iterator<Item = (&'static str, &Histogram)> {
        self.latency.iter().map(|(k, v)| (*k, v))
    }

    pub fn is_connected(&self) -> bool {
        matches!(self.state, SessionState::Connected | SessionState::ReadOnly)
    }
}
