//! The JSON API: what the agent watches (`/api/v1/trees`) and everything
//! it knows about one election (`/api/v1/elections/{path}`), for people and
//! tooling. Every watched election answers, whether it has series in
//! `/metrics` or not.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::AppState;
use crate::model::ClusterState;
use crate::model::elections::Style;

/// Most election, group or lock paths listed per tree by `/api/v1/trees`:
/// a tree of a million elections is looked up one by one instead.
const LISTED_PER_TREE: usize = 1000;

fn style_label(style: &Style) -> &'static str {
    match style {
        Style::Sequential => "sequential",
        Style::Node(_) => "node",
    }
}

/// The watched trees, configured and discovered, with their elections,
/// groups or locks (the first [`LISTED_PER_TREE`] of each; `nodes_total`
/// counts them all): what the agent is looking at.
pub(super) async fn trees(State(state): State<AppState>) -> Response {
    let clusters: Vec<serde_json::Value> = state
        .clusters
        .now()
        .iter()
        .map(|c| {
            let c = c.read();
            let trees: Vec<serde_json::Value> = c
                .trees
                .iter()
                .map(|t| {
                    let parents: Vec<&str> = if let Some(e) = t.as_elections() {
                        e.elections()
                            .map(|(p, _)| p)
                            .take(LISTED_PER_TREE)
                            .collect()
                    } else if let Some(g) = t.as_groups() {
                        g.groups().map(|(p, _)| p).take(LISTED_PER_TREE).collect()
                    } else if let Some(l) = t.as_locks() {
                        l.locks().map(|(p, _)| p).take(LISTED_PER_TREE).collect()
                    } else {
                        Vec::new()
                    };
                    // Masters whose ghost check cannot say (enough): evidence
                    // missing, or rounds too slow for the session's timeout.
                    let unjudged: Vec<serde_json::Value> = match (t.as_elections(), &c.ghost) {
                        (Some(e), Some(tracker)) => e
                            .elections()
                            .filter_map(|(path, e)| {
                                let owner = e.master()?.owner;
                                let reason = tracker.cannot_judge(owner)?;
                                Some(serde_json::json!({
                                    "election": path,
                                    "session": format!("0x{owner:x}"),
                                    "reason": reason,
                                }))
                            })
                            .take(LISTED_PER_TREE)
                            .collect(),
                        _ => Vec::new(),
                    };
                    let style = t.as_elections().map(|e| style_label(&e.spec().style));
                    serde_json::json!({
                        "path": t.pattern().as_str(),
                        "kind": t.content_kind().label(),
                        "style": style,
                        "source": t.source().label(),
                        "synced": t.synced(),
                        "error": t.sync_error(),
                        "nodes": parents,
                        "nodes_total": t.parent_count(),
                        "ghost_check_unjudged": unjudged,
                    })
                })
                .collect();
            serde_json::json!({ "cluster": c.name, "trees": trees })
        })
        .collect();
    axum::Json(serde_json::json!({ "clusters": clusters })).into_response()
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Everything known about election `path` in cluster `c`, or `None` when no
/// tree of it watches that election.
fn describe(c: &ClusterState, path: &str, now: Instant) -> Option<Value> {
    let (tree, elections, election) = c.trees.iter().find_map(|t| {
        let e = t.as_elections()?;
        Some((t, e, e.election(path)?))
    })?;
    let state = c.state_of(elections, election, now);
    let exported = c
        .survey(now)
        .exported
        .iter()
        .any(|(t, p, _)| t.id() == tree.id() && *p == path);
    let master = election.master().map(|m| {
        json!({
            "node": m.node,
            "identity": m.identity,
            "sequence": m.sequence,
            "session": format!("0x{:x}", m.owner),
            "since_unix_seconds": unix_seconds(m.since),
        })
    });
    let candidates: Vec<Value> = election
        .candidates()
        .take(LISTED_PER_TREE)
        .map(|(sequence, node, identity)| json!({"node": node, "identity": identity, "sequence": sequence}))
        .collect();
    Some(json!({
        "cluster": c.name,
        "tree": tree.pattern().as_str(),
        "election": path,
        "style": style_label(&elections.spec().style),
        "state": state.label(),
        "exported": exported,
        "synced": tree.synced(),
        "master": master,
        "master_changes": election.changes(),
        "candidate_count": c.candidates_of(elections, election),
        "candidates": candidates,
        "masterless_seconds_total": election.masterless_total(now).as_secs_f64(),
        "joins": election.joins(),
        "leaves": election.leaves(),
        "duplicate_identities": election.duplicate_identities(),
        "record": elections.record(path),
    }))
}

/// `GET /api/v1/elections/{path}` (`?cluster=NAME` to pick one cluster):
/// who is master of the election, since when, how many switches, whether
/// it has series; 404 when no tree watches it.
pub(super) async fn election(
    State(state): State<AppState>,
    Path(path): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let path = format!("/{}", path.trim_start_matches('/'));
    let wanted = query.get("cluster");
    let now = Instant::now();
    let found: Vec<Value> = state
        .clusters
        .now()
        .iter()
        .filter_map(|c| {
            let c = c.read();
            if wanted.is_some_and(|w| *w != c.name) {
                return None;
            }
            describe(&c, &path, now)
        })
        .collect();
    if found.is_empty() {
        let error = format!(
            "no watched election is at {path}; /api/v1/trees lists the trees and the elections they hold"
        );
        return (StatusCode::NOT_FOUND, axum::Json(json!({ "error": error }))).into_response();
    }
    axum::Json(json!({ "elections": found })).into_response()
}
