//! HTTP endpoints: `/metrics`, `/healthz`, `/ready`, `/api/v1/trees` and a
//! small index page. Handlers only read models and never wait on the
//! ZooKeeper session; `/metrics` alone first runs the four-letter-word
//! collection, bounded by its timeout.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::metrics::{self, Exposition};
use crate::model::SharedCluster;
use crate::model::elections::Style;
use crate::sources::fourlw::poller::Poller;
use futures::future::join_all;

/// What the handlers read.
#[derive(Clone)]
pub struct AppState {
    pub exposition: Arc<Exposition>,
    pub clusters: Vec<SharedCluster>,
    /// Four-letter-word pollers, run before each render.
    pub pollers: Vec<Arc<Poller>>,
}

/// The router, exposed for tests and benchmarks.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .route("/api/v1/trees", get(trees))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Binds the listen address with an error that says what to do.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}; choose another --web.listen-address"))
}

async fn index() -> Html<&'static str> {
    Html(concat!(
        "<!doctype html><html><head><title>zk-election-exporter</title></head><body>",
        "<h1>zk-election-exporter</h1>",
        "<p>Who is master of every ZooKeeper election, and how often it moves.</p><ul>",
        "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>",
        "<li><a href=\"/ready\">/ready</a>: 200 when every session is connected and every tree synced</li>",
        "<li><a href=\"/healthz\">/healthz</a>: process is alive</li>",
        "<li><a href=\"/api/v1/trees\">/api/v1/trees</a>: watched elections and groups (JSON)</li>",
        "</ul></body></html>"
    ))
}

fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/openmetrics-text"))
}

async fn metrics_handler(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let openmetrics = wants_openmetrics(&headers);
    // Bounded by each poller's timeout; the only wait a scrape has.
    join_all(state.pollers.iter().map(|p| p.collect())).await;
    let exposition = state.exposition.clone();
    // Encoding a large model takes milliseconds of CPU; keep it off the reactor.
    let rendered = tokio::task::spawn_blocking(move || exposition.render(openmetrics)).await;
    match rendered {
        Ok(Ok(body)) => {
            let content_type = if openmetrics {
                metrics::OPENMETRICS_CONTENT_TYPE
            } else {
                metrics::TEXT_CONTENT_TYPE
            };
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        _ => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding metrics failed\n",
        )
            .into_response(),
    }
}

/// Reasons the agent is not ready, empty when it is.
pub fn not_ready_reasons(clusters: &[SharedCluster]) -> Vec<String> {
    let mut reasons = Vec::new();
    for c in clusters {
        let c = c.read();
        if !c.session.is_connected() {
            reasons.push(format!(
                "cluster {}: session {}{}",
                c.name,
                c.session.state.label(),
                c.session
                    .last_error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
        }
        for tree in &c.trees {
            if !tree.synced() {
                reasons.push(format!(
                    "cluster {}: tree {} not synced{}",
                    c.name,
                    tree.pattern().as_str(),
                    tree.sync_error()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    reasons
}

/// The watched trees, configured and discovered, with their elections or
/// groups: what the agent is looking at, for people and tooling.
async fn trees(State(state): State<AppState>) -> Response {
    let clusters: Vec<serde_json::Value> = state
        .clusters
        .iter()
        .map(|c| {
            let c = c.read();
            let trees: Vec<serde_json::Value> = c
                .trees
                .iter()
                .map(|t| {
                    let parents: Vec<&str> = if let Some(e) = t.as_elections() {
                        e.elections().map(|(p, _)| p).collect()
                    } else if let Some(g) = t.as_groups() {
                        g.groups().map(|(p, _)| p).collect()
                    } else if let Some(l) = t.as_locks() {
                        l.locks().map(|(p, _)| p).collect()
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
                            .collect(),
                        _ => Vec::new(),
                    };
                    let style = t.as_elections().map(|e| match &e.spec().style {
                        Style::Sequential => "sequential",
                        Style::Node(_) => "node",
                    });
                    serde_json::json!({
                        "path": t.pattern().as_str(),
                        "kind": t.content_kind().label(),
                        "style": style,
                        "source": t.source().label(),
                        "synced": t.synced(),
                        "error": t.sync_error(),
                        "nodes": parents,
                        "ghost_check_unjudged": unjudged,
                    })
                })
                .collect();
            serde_json::json!({ "cluster": c.name, "trees": trees })
        })
        .collect();
    axum::Json(serde_json::json!({ "clusters": clusters })).into_response()
}

async fn ready(State(state): State<AppState>) -> Response {
    let reasons = not_ready_reasons(&state.clusters);
    if reasons.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready\n{}\n", reasons.join("\n")),
        )
            .into_response()
    }
}
