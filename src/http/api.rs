//! The JSON API: what the agent watches (`/api/v1/trees`) and everything
//! it knows about one election (`/api/v1/elections/{path}`), for people and
//! tooling. Every watched election answers, whether it has series in
//! `/metrics` or not. The bodies are [`crate::api::elections`]'s types.

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::api::ErrorBody;
use crate::api::elections::{ClusterTrees, ElectionBody, ElectionsBody, TreesBody};

/// The watched trees, configured and discovered, with their elections,
/// groups or locks (the first [`crate::api::elections::LISTED`] of each;
/// `nodes_total` counts them all): what the agent is looking at.
pub(super) async fn trees(State(state): State<AppState>) -> Response {
    let clusters = state
        .clusters
        .now()
        .iter()
        .map(|c| c.view(ClusterTrees::of))
        .collect();
    axum::Json(TreesBody { clusters }).into_response()
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
    let elections: Vec<ElectionBody> = state
        .clusters
        .now()
        .iter()
        .filter_map(|c| {
            c.view(|c| {
                if wanted.is_some_and(|w| *w != c.name()) {
                    return None;
                }
                ElectionBody::of(c, &path, now)
            })
        })
        .collect();
    if elections.is_empty() {
        let error = format!(
            "no watched election is at {path}; /api/v1/trees lists the trees and the elections they hold"
        );
        return (StatusCode::NOT_FOUND, axum::Json(ErrorBody { error })).into_response();
    }
    axum::Json(ElectionsBody { elections }).into_response()
}
