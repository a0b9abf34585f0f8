//! The agent: assembles each configured cluster (its models, its session,
//! its four-letter-word poller, ghost check and failover probe) and runs them with
//! the HTTP server until shutdown; a reload applies a new configuration as
//! a difference (`agent/reload.rs`).

mod assemble;
mod reload;
pub(crate) mod supervise;

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tracing::{error, info, warn};

use self::supervise::{Ends, Supervisor, TaskFailure};
use crate::config::Config;
use crate::http::auth::Web;
use crate::model::reload::ReloadStats;
use crate::model::web::WebStats;
use crate::{http, metrics};

/// Why the agent stopped other than by shutdown.
#[derive(Debug)]
pub enum AgentError {
    /// The listen address cannot be bound (what to do is in the message).
    Bind(String),
    /// The HTTP server failed while serving.
    Serve(std::io::Error),
    /// One of the agent's own tasks died (a bug): the agent stopped so
    /// that its supervisor starts it afresh (`agent/supervise.rs`).
    TaskFailed(TaskFailure),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bind(message) => f.write_str(message),
            Self::Serve(e) => write!(f, "HTTP server failed: {e}"),
            Self::TaskFailed(failure) => write!(
                f,
                "{failure}; the agent stopped rather than serve state nobody keeps current \
                 any more: restart it (systemd and Kubernetes do), and report the log above"
            ),
        }
    }
}

impl std::error::Error for AgentError {}

/// Where a reload gets its configuration: what a start reads (file,
/// environment, flags), read again.
pub type Loader = Box<dyn Fn() -> Result<Config, crate::config::ConfigError> + Send + Sync>;

/// Runs the agent until `shutdown` resolves, then stops every task and
/// finishes in-flight requests. SIGHUP and `POST /-/reload` reload the
/// configuration through `loader`, applied as a difference (`agent/reload.rs`).
/// Should one of its own tasks die, `/ready` fails and the agent stops the
/// same way, returning [`AgentError::TaskFailed`].
pub async fn run(
    config: Config,
    loader: Loader,
    shutdown: impl Future<Output = ()>,
) -> Result<(), AgentError> {
    let listeners = http::listen::bind_all(&config.web.listen_addresses)
        .await
        .map_err(AgentError::Bind)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let cap = http::server::connection_cap(
        config.web.limits.max_connections,
        crate::os::open_files_limit(),
    );
    let stats = Arc::new(WebStats::new(cap as u64));
    let reloads = Arc::new(ReloadStats::new(std::time::SystemTime::now()));
    let (supervisor, mut failures) = Supervisor::new();
    let health = Arc::new(crate::model::health::Health::default());
    let mut agent = reload::Running::start(&config, supervisor.clone());
    supervisor.spawn(
        "timeline log",
        Ends::WhenStopped,
        stop_rx.clone(),
        crate::timeline_log::run(agent.clusters.clone(), stop_rx.clone()),
    );
    let (reload_tx, mut reload_rx) = tokio::sync::mpsc::channel::<http::ReloadRequest>(4);
    // Ends by itself (logged) where signals cannot be had.
    supervisor.spawn(
        "SIGHUP listener",
        Ends::WhenItLikes,
        stop_rx.clone(),
        reload::on_sighup(reload_tx.clone()),
    );
    let app = http::AppState {
        exposition: Arc::new(metrics::Exposition::with_server(
            agent.clusters.clone(),
            stats.clone(),
            Some(agent.push.clone()),
            reloads.clone(),
        )),
        clusters: agent.clusters.clone(),
        pollers: agent.pollers.clone(),
        bodies: Default::default(),
        push: agent.push.clone(),
        telemetry_path: config.web.telemetry_path.as_str().into(),
        reload: reload_tx,
        lifecycle: config.web.enable_lifecycle,
        health: health.clone(),
    };
    let server = serve(&config, listeners, app, stats, cap, &stop_rx, &supervisor);
    let mut current = config;
    tokio::pin!(shutdown);
    let failed = loop {
        tokio::select! {
            _ = &mut shutdown => break None,
            Some(failure) = failures.recv() => break Some(failure),
            Some(reply) = reload_rx.recv() => {
                let outcome = reload(&mut agent, &mut current, &loader, &reloads).await;
                let _ = reply.send(outcome);
            }
        }
    };
    match &failed {
        Some(failure) => {
            error!(task = %failure.task, "{failure}; not ready any more, stopping");
            health.fail(failure.to_string());
        }
        None => info!("shutting down"),
    }
    let _ = stop_tx.send(true);
    agent.stop_all().await;
    let served = match server.await {
        Ok(result) => result.map_err(AgentError::Serve),
        Err(e) => Err(AgentError::Serve(std::io::Error::other(e))),
    };
    match failed {
        Some(failure) => Err(AgentError::TaskFailed(failure)),
        None => served,
    }
}

/// Starts the HTTP server with the web config file's TLS and basic auth
/// (and the task re-reading that file when it changes).
fn serve(
    config: &Config,
    listeners: Vec<tokio::net::TcpListener>,
    app: http::AppState,
    stats: Arc<WebStats>,
    cap: usize,
    stop: &watch::Receiver<bool>,
    supervisor: &Supervisor,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let (file, loaded) = match config.web.config_file.clone() {
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
        supervisor.spawn(
            "web config watcher",
            Ends::WhenStopped,
            stop.clone(),
            http::auth::watch_file(web.clone(), path, loaded.files, stop.clone()),
        );
    }
    let addresses: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.to_string())
        .collect();
    info!(
        address = %addresses.join(", "),
        tls = web.current().tls.is_some(),
        basic_auth = !web.current().users.is_empty(),
        max_connections = cap,
        path = %config.web.telemetry_path,
        "serving metrics"
    );
    supervisor.spawn(
        "HTTP server",
        Ends::WhenStopped,
        stop.clone(),
        http::server::serve(
            listeners,
            http::secured(app, web.clone()),
            web,
            config.web.limits,
            cap,
            stop.clone(),
        ),
    )
}

/// One reload: the configuration read again and applied as a difference
/// over `current`, or refused whole (nothing changes then).
async fn reload(
    agent: &mut reload::Running,
    current: &mut Config,
    loader: &Loader,
    reloads: &ReloadStats,
) -> Result<String, String> {
    match loader() {
        Ok(next) if next.kerberos != current.kerberos => {
            reloads.failed();
            let e = "the Kerberos identity (principal, keytab or credential cache, krb5_conf) is \
                     set up for the process at start: restart the agent to change it";
            warn!("configuration reload refused, nothing changed: {e}");
            Err(e.to_owned())
        }
        Ok(next) => {
            let done = agent.apply(current, &next).await;
            // [web] stays as started (read at start only), so every later
            // reload still says it differs.
            *current = Config {
                web: current.web.clone(),
                ..next
            };
            reloads.succeeded(std::time::SystemTime::now());
            info!("configuration reloaded: {done}");
            Ok(done)
        }
        Err(e) => {
            reloads.failed();
            warn!("configuration reload refused, nothing changed: {e}");
            Err(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests;
