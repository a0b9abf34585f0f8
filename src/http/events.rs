//! `GET /api/v1/events`: the timeline, newest first, filtered by cluster,
//! election and time: "who was master of bot_1234 at 03:12, and why did it
//! move?".

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::AppState;
use crate::model::events::{Event, MasterRef, What};

/// Events returned when `limit` is not given, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

fn master(m: &MasterRef) -> Value {
    json!({
        "node": m.node,
        "identity": m.identity,
        "session": format!("0x{:x}", m.owner),
    })
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// One event as JSON (also the shape of its log line's fields).
pub fn event_json(cluster: &str, e: &Event) -> Value {
    let mut v = json!({
        "seq": e.seq,
        "at": rfc3339(e.at),
        "cluster": cluster,
        "kind": e.what.kind(),
    });
    if !e.election.is_empty() {
        v["election"] = json!(e.election);
    }
    match &e.what {
        What::Switch { from, to, cause } => {
            v["from"] = from.as_ref().map_or(Value::Null, master);
            v["to"] = master(to);
            v["cause"] = json!(cause.map(|c| c.label()));
        }
        What::MasterlessStarted { last, cause } => {
            v["from"] = master(last);
            v["cause"] = json!(cause.label());
        }
        What::MasterlessEnded { lasted, to } => {
            v["to"] = master(to);
            v["masterless_seconds"] = json!(lasted.as_secs_f64());
        }
        What::GhostFlagged {
            master: m,
            liveness,
        } => {
            v["from"] = master(m);
            v["state"] = json!(liveness);
        }
        What::GhostCleared { master: m } | What::MemberLeft { member: m } => {
            v["from"] = master(m);
        }
        What::LockAcquired { holder: m } | What::MemberJoined { member: m } => {
            v["to"] = master(m);
        }
        What::LockHeldLong { holder, held } => {
            v["to"] = master(holder);
            v["held_seconds"] = json!(held.as_secs_f64());
        }
        What::SessionLost { state, reason } => {
            v["state"] = json!(state);
            v["reason"] = json!(reason);
        }
        What::SessionRestored => {}
    }
    v
}

/// `since`: RFC 3339 (`2026-11-30T03:12:00Z`) or Unix seconds.
fn parse_since(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok().or_else(|| {
        let secs: f64 = text.parse().ok()?;
        (secs.is_finite() && secs >= 0.0)
            .then(|| SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
    })
}

pub(super) async fn events(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let bad =
        |m: String| (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": m }))).into_response();
    let since = match query.get("since").map(|s| (s, parse_since(s))) {
        Some((s, None)) => {
            return bad(format!(
                "since=`{s}` is neither RFC 3339 (2026-11-30T03:12:00Z) nor Unix seconds"
            ));
        }
        Some((_, t)) => t,
        None => None,
    };
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        Some(Ok(n)) if n > 0 => n.min(MAX_LIMIT),
        Some(_) => return bad("limit must be a positive number".into()),
        None => DEFAULT_LIMIT,
    };
    let (cluster, election) = (query.get("cluster"), query.get("election"));
    let mut all: Vec<(SystemTime, Value)> = Vec::new();
    for c in state.clusters.now().iter() {
        let c = c.read();
        if cluster.is_some_and(|w| *w != c.name) {
            continue;
        }
        all.extend(
            c.events
                .newest_first()
                .filter(|e| election.is_none_or(|p| *p == e.election))
                .take_while(|e| since.is_none_or(|s| e.at >= s))
                .take(limit + 1)
                .map(|e| (e.at, event_json(&c.name, e))),
        );
    }
    all.sort_by_key(|e| std::cmp::Reverse(e.0));
    let truncated = all.len() > limit;
    all.truncate(limit);
    let events: Vec<Value> = all.into_iter().map(|(_, v)| v).collect();
    axum::Json(json!({ "events": events, "truncated": truncated })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_rfc3339_or_unix_seconds() {
        let t = parse_since("2026-11-30T03:12:00Z").unwrap();
        assert_eq!(parse_since("1796008320"), Some(t));
        assert_eq!(parse_since("yesterday"), None);
        assert_eq!(parse_since("-1"), None);
    }
}
