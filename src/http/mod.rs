//! HTTP endpoints: `/metrics` (or `web.telemetry_path`, in `scrape.rs`),
//! `/healthz` and `/-/healthy`, `/ready` and `/-/ready`, the status page `/` and its JSON twin `/api/v1/status`, the
//! JSON API (`/api/v1/trees`, `/api/v1/elections/{path}`, `/api/v1/events`)
//! and `POST /-/reload`. Handlers only read models and never wait on the
//! ZooKeeper session; `/metrics` alone first runs the four-letter-word
//! collection, bounded by its timeout.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

mod api;
pub mod auth;
mod conns;
pub(crate) mod events;
pub(crate) mod listen;
mod scrape;
pub mod server;
mod status;

pub use scrape::Bodies;
use scrape::metrics_handler;

use crate::metrics::Exposition;
use crate::model::{Roster, SharedCluster};
use crate::sources::fourlw::poller::Poller;

/// What the handlers read.
#[derive(Clone)]
pub struct AppState {
    pub exposition: Arc<Exposition>,
    /// The clusters watched now (a reload swaps them).
    pub clusters: Roster<SharedCluster>,
    /// Four-letter-word pollers, run before each render.
    pub pollers: Roster<Arc<Poller>>,
    /// The last body of each format, shared by concurrent scrapes.
    pub bodies: Arc<Bodies>,
    /// The alert pusher's counters and firing alerts (empty and disabled
    /// without `[alerting]`).
    pub push: Arc<crate::model::alerting::PushStats>,
    /// `web.telemetry_path`: where the metrics are served.
    pub telemetry_path: Arc<str>,
    /// Asks the agent to reload its configuration (`POST /-/reload`).
    pub reload: tokio::sync::mpsc::Sender<ReloadRequest>,
    /// `--web.enable-lifecycle`: without it `POST /-/reload` answers 403.
    pub lifecycle: bool,
    /// Set when one of the agent's own tasks died: `/ready` fails.
    pub health: Arc<crate::model::health::Health>,
}

impl AppState {
    /// A state showing `clusters` with nothing running behind it: no
    /// pollers, no pusher; reloads go to the returned receiver. For
    /// tests, benchmarks and the router's fuzz target.
    pub fn detached(
        clusters: Vec<SharedCluster>,
        web: Arc<crate::model::web::WebStats>,
        lifecycle: bool,
    ) -> (Self, tokio::sync::mpsc::Receiver<ReloadRequest>) {
        let clusters = Roster::new(clusters);
        let push = Arc::new(crate::model::alerting::PushStats::default());
        let reloads = Arc::new(crate::model::reload::ReloadStats::new(
            std::time::SystemTime::now(),
        ));
        let (reload, requests) = tokio::sync::mpsc::channel(4);
        let state = Self {
            exposition: Arc::new(Exposition::with_server(
                clusters.clone(),
                web,
                Some(push.clone()),
                reloads,
            )),
            clusters,
            pollers: Roster::default(),
            bodies: Default::default(),
            push,
            telemetry_path: crate::config::DEFAULT_TELEMETRY_PATH.into(),
            reload,
            lifecycle,
            health: Default::default(),
        };
        (state, requests)
    }
}

/// A reload asked for; the agent answers with what it did or why not.
pub type ReloadRequest = tokio::sync::oneshot::Sender<Result<String, String>>;

/// The router, exposed for tests and benchmarks.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(status::page))
        .route("/api/v1/status", get(status::json_status))
        .route(&state.telemetry_path.clone(), get(metrics_handler))
        .route("/healthz", get(healthy))
        .route("/-/healthy", get(healthy))
        .route("/ready", get(ready))
        .route("/-/ready", get(ready))
        .route("/-/reload", post(reload))
        .route("/api/v1/trees", get(api::trees))
        .route("/api/v1/elections/{*path}", get(api::election))
        .route("/api/v1/events", get(events::events))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(state)
}

/// Headers every response carries: browsers must not guess a JSON or
/// text body to be something else.
async fn security_headers(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// The router behind the web config's basic auth and headers.
pub fn secured(state: AppState, web: Arc<auth::Web>) -> Router {
    router(state).layer(axum::middleware::from_fn_with_state(web, auth::guard))
}

/// Reasons the agent is not ready, empty when it is.
pub fn not_ready_reasons(clusters: &[SharedCluster]) -> Vec<String> {
    let mut reasons = Vec::new();
    for c in clusters {
        c.view(|c| {
            if !c.session().is_connected() {
                reasons.push(format!(
                    "cluster {}: session {}{}",
                    c.name(),
                    c.session().state.label(),
                    c.session()
                        .last_error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ));
            }
            for tree in c.trees() {
                if !tree.synced() {
                    reasons.push(format!(
                        "cluster {}: tree {} not synced{}",
                        c.name(),
                        tree.pattern().as_str(),
                        tree.sync_error()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    ));
                }
            }
        });
    }
    reasons
}

/// `/healthz` and `/-/healthy`: the process answers HTTP.
async fn healthy() -> &'static str {
    "ok\n"
}

/// `POST /-/reload`, as Prometheus and Alertmanager take it: 200 when the
/// new configuration is in force, 500 with the reason when it was refused
/// (nothing changed then); 403 unless `--web.enable-lifecycle` was given.
async fn reload(State(state): State<AppState>) -> Response {
    if !state.lifecycle {
        return (
            StatusCode::FORBIDDEN,
            "Lifecycle API is not enabled: start the agent with --web.enable-lifecycle, or send it SIGHUP\n",
        )
            .into_response();
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if state.reload.send(tx).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match rx.await {
        Ok(Ok(done)) => (StatusCode::OK, format!("{done}\n")).into_response(),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload config: {e}\n"),
        )
            .into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response(),
    }
}

/// What works but not fully: lease sources that give no reading, a
/// Kerberos ticket the agent could not renew while its session still
/// runs (it needs one only at the next reconnect). The
/// agent still reports ZooKeeper's truth, so it stays ready (a readiness
/// failure would take it out of the scrape's endpoints); `/ready` names
/// them so that whoever looks sees why split brain cannot be judged.
pub fn degraded_reasons(clusters: &[SharedCluster]) -> Vec<String> {
    let mut reasons = Vec::new();
    for c in clusters {
        c.view(|c| {
            for lease in crate::api::status::LeaseStatus::of(c) {
                if let (Some(reason), Some(error)) = (lease.reason, &lease.error) {
                    reasons.push(format!(
                        "cluster {}: lease source of tree {} gives no reading ({reason}): {error}",
                        c.name(),
                        lease.tree
                    ));
                }
            }
            // Without a session, the failure is already the session's
            // reason on the not-ready list.
            let failing = c.kerberos().and_then(|k| {
                k.now()
                    .failing
                    .as_ref()
                    .map(|(failure, _)| failure.message.clone())
            });
            if let Some(message) = failing
                && c.session().is_connected()
            {
                reasons.push(format!("cluster {}: {message}", c.name()));
            }
        });
    }
    reasons
}

async fn ready(State(state): State<AppState>) -> Response {
    let clusters = state.clusters.now();
    let mut reasons = not_ready_reasons(&clusters);
    if let Some(failure) = state.health.failure() {
        reasons.insert(0, format!("the agent is stopping: {failure}"));
    }
    if reasons.is_empty() {
        let degraded = degraded_reasons(&clusters);
        if degraded.is_empty() {
            (StatusCode::OK, "ready\n").into_response()
        } else {
            (
                StatusCode::OK,
                format!("ready, degraded\n{}\n", degraded.join("\n")),
            )
                .into_response()
        }
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready\n{}\n", reasons.join("\n")),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::web::WebStats;
    use tower::ServiceExt;

    async fn get(router: &Router, path: &str) -> (StatusCode, String) {
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// Once one of the agent's tasks died, both readiness paths say so
    /// (and why) while the agent stops; liveness stays "ok".
    #[tokio::test]
    async fn a_dead_task_fails_readiness_with_its_reason() {
        let (state, _reloads) = AppState::detached(Vec::new(), Arc::new(WebStats::new(8)), false);
        let health = state.health.clone();
        let router = router(state);
        assert_eq!(
            get(&router, "/ready").await,
            (StatusCode::OK, "ready\n".into())
        );
        assert_eq!(get(&router, "/-/ready").await.0, StatusCode::OK);
        health.fail("background task `alert pusher` panicked: boom".into());
        for path in ["/ready", "/-/ready"] {
            let (status, body) = get(&router, path).await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
            assert!(
                body.contains("the agent is stopping: background task `alert pusher` panicked"),
                "{path}: {body}"
            );
        }
        for path in ["/healthz", "/-/healthy"] {
            assert_eq!(get(&router, path).await, (StatusCode::OK, "ok\n".into()));
        }
    }
}
