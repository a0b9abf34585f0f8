//! The JSON the agent writes, as types: every `/api/v1/*` body, the status
//! page's data (the page renders from these structs, `/api/v1/status`
//! serializes them), the timeline's log fields and the alerts pushed to
//! Alertmanager. Each body is made from the models by a constructor here;
//! handlers only pick what to show and serialize.
//!
//! Fields are declared in alphabetical order, the order the hand-written
//! bodies these replaced had (their keys were sorted): a reader diffing
//! two versions of the agent's output sees no change.

pub mod alerts;
pub mod elections;
pub mod events;
pub mod status;

use std::time::SystemTime;

use serde::Serialize;

/// A session id as ZooKeeper's logs and `cons` print it (`0x…`).
pub fn session_hex(id: i64) -> String {
    format!("0x{id:x}")
}

/// A wall-clock time as RFC 3339 with milliseconds.
pub fn rfc3339_millis(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// A wall-clock time as RFC 3339 to the second (the status page's).
pub fn rfc3339_seconds(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `{"error": "..."}`: what a request got wrong, and what to do instead.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody {
    pub error: String,
}
