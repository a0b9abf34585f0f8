//! The agent: assembles each configured cluster (its models, its session,
//! its four-letter-word poller, ghost check and canary) and runs them with
//! the HTTP server until shutdown.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

use crate::config::{ClusterConfig, Config};
use crate::http::auth::Web;
use crate::model::alerting::PushStats;
use crate::model::tree::Tree;
use crate::model::web::WebStats;
use crate::model::{ClusterState, SharedCluster};
use crate::sources::fourlw::ghost::{self, GhostCheck};
use crate::sources::fourlw::poller::Poller;
use crate::{http, metrics, sources};

/// Why the agent stopped other than by shutdown.
#[derive(Debug)]
pub enum AgentError {
    /// The listen address cannot be bound (what to do is in the message).
    Bind(String),
    /// The HTTP server failed while serving.
    Serve(std::io::Error),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bind(message) => f.write_str(message),
            Self::Serve(e) => write!(f, "HTTP server failed: {e}"),
        }
    }
}

impl std::error::Error for AgentError {}

/// One cluster, assembled: its shared models, its scrape-time poller and
/// the tasks that feed the models.
struct Cluster {
    state: SharedCluster,
    poller: Option<Arc<Poller>>,
    tasks: Vec<JoinHandle<()>>,
}

/// The models of `cluster` before anything is known.
fn models(cluster: &ClusterConfig) -> ClusterState {
    let trees = cluster
        .elections
        .iter()
        .map(|e| Tree::elections(e.pattern.clone(), e.spec.clone()))
        .chain(
            cluster
                .groups
                .iter()
                .map(|g| Tree::groups(g.pattern.clone(), g.spec.clone())),
        )
        .chain(
            cluster
                .locks
                .iter()
                .map(|l| Tree::locks(l.pattern.clone(), l.spec.clone())),
        )
        .collect();
    let mut model = ClusterState::new(
        cluster.name.clone(),
        trees,
        cluster.four_letter_words.enabled,
    );
    model.limits = cluster.limits;
    model.events = crate::model::events::EventLog::new(cluster.event_log_size);
    model.discovery = cluster.discovery.enabled.then(Default::default);
    model.canary = cluster.canary.is_some().then(Default::default);
    model
}

/// Starts every source of `cluster`; they stop when `stop` flips to true.
fn assemble(cluster: ClusterConfig, stop: &watch::Receiver<bool>) -> Cluster {
    let state = SharedCluster::new(models(&cluster));
    let fourlw = &cluster.four_letter_words;
    let poller = fourlw.enabled.then(|| {
        Arc::new(Poller::new(
            cluster.name.clone(),
            fourlw.clone(),
            state.clone(),
        ))
    });
    let mut tasks = Vec::new();
    if cluster.diagnostics.enabled {
        let check = GhostCheck {
            cluster: cluster.name.clone(),
            servers: fourlw.servers.clone(),
            pace: cluster.diagnostics.cons_interval,
            timeout: fourlw.timeout,
            watches: cluster.diagnostics.watches,
            tls: cluster.tls.clone(),
        };
        tasks.push(tokio::spawn(ghost::run(check, state.clone(), stop.clone())));
    }
    if let Some(canary) = cluster.canary.clone() {
        tasks.push(tokio::spawn(sources::canary::run(
            cluster.clone(),
            canary,
            state.clone(),
            stop.clone(),
        )));
    }
    tasks.push(tokio::spawn(sources::zk::session::run_cluster(
        cluster,
        state.clone(),
        stop.clone(),
    )));
    Cluster {
        state,
        poller,
        tasks,
    }
}

/// Runs the agent until `shutdown` resolves, then stops every task and
/// finishes in-flight requests.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
    let listener = http::bind(config.web.listen_address)
        .await
        .map_err(AgentError::Bind)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let clusters: Vec<Cluster> = config
        .clusters
        .into_iter()
        .map(|c| assemble(c, &stop_rx))
        .collect();
    let states: Vec<SharedCluster> = clusters.iter().map(|c| c.state.clone()).collect();
    let cap = http::server::connection_cap(
        config.web.limits.max_connections,
        crate::os::open_files_limit(),
    );
    let stats = Arc::new(WebStats::new(cap as u64));
    tokio::spawn(crate::timeline::run(states.clone(), stop_rx.clone()));
    let push = config
        .alerting
        .as_ref()
        .map(|_| Arc::new(PushStats::default()));
    if let (Some(alerting), Some(push)) = (config.alerting.clone(), &push) {
        tokio::spawn(crate::alerting::run(
            alerting,
            states.clone(),
            push.clone(),
            stop_rx.clone(),
        ));
    }
    let app = http::AppState {
        exposition: Arc::new(metrics::Exposition::with_server(
            states.clone(),
            stats.clone(),
            push.clone(),
        )),
        clusters: states,
        pollers: clusters.iter().filter_map(|c| c.poller.clone()).collect(),
        bodies: Default::default(),
        push,
        telemetry_path: config.web.telemetry_path.as_str().into(),
    };
    let (file, loaded) = match config.web.config_file {
        Some((path, loaded)) => (Some(path), Some(loaded)),
        None => (None, None),
    };
    let web = Arc::new(Web::new(
        loaded
            .as_ref()
            .map(|l| l.config.clone())
            .unwrap_or_default(),
        stats,
    ));
    if let (Some(path), Some(loaded)) = (file, loaded) {
        tokio::spawn(http::auth::watch_file(
            web.clone(),
            path,
            loaded.files,
            stop_rx.clone(),
        ));
    }
    let tls = web.current().tls.is_some();
    info!(
        address = %config.web.listen_address,
        tls,
        basic_auth = !web.current().users.is_empty(),
        max_connections = cap,
        path = %config.web.telemetry_path,
        "serving metrics"
    );
    let server = tokio::spawn(http::server::serve(
        listener,
        http::secured(app, web.clone()),
        web,
        config.web.limits,
        cap,
        stop_rx.clone(),
    ));
    shutdown.await;
    info!("shutting down");
    let _ = stop_tx.send(true);
    for task in clusters.into_iter().flat_map(|c| c.tasks) {
        let _ = task.await;
    }
    match server.await {
        Ok(result) => result.map_err(AgentError::Serve),
        Err(e) => Err(AgentError::Serve(std::io::Error::other(e))),
    }
}
