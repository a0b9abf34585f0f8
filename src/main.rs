//! Thin shell: parse the command line, load configuration, start one task per
//! cluster and the HTTP server, wait for SIGTERM/SIGINT.

use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use clap::Parser;
use tokio::sync::watch;
use tracing::{error, info};
use zk_election_exporter::cli::{Cli, Command};
use zk_election_exporter::model::tree::Tree;
use zk_election_exporter::model::{ClusterState, SharedCluster};
use zk_election_exporter::sources::fourlw::ghost::{self, Diagnostics};
use zk_election_exporter::sources::fourlw::poller::Poller;
use zk_election_exporter::{config, http, metrics, simulate, sources};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log).unwrap_or_else(|e| {
        eprintln!(
            "zk-election-exporter: invalid --log filter `{}`: {e}; using info",
            cli.log
        );
        tracing_subscriber::EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-election-exporter: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Some(Command::Simulate(ref args)) => runtime.block_on(simulate::run(args.clone())),
        None => runtime.block_on(run_exporter(&cli)),
    }
}

async fn run_exporter(cli: &Cli) -> ExitCode {
    let config = match config::load(&cli.overrides(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zk-election-exporter: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let listener = match http::bind(config.web.listen_address).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("zk-election-exporter: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut clusters: Vec<SharedCluster> = Vec::new();
    let mut tasks = Vec::new();
    let mut pollers = Vec::new();
    for cluster in config.clusters {
        let trees = cluster
            .elections
            .iter()
            .map(|e| Tree::elections(e.pattern.clone(), e.identity.clone()))
            .chain(
                cluster
                    .groups
                    .iter()
                    .map(|g| Tree::groups(g.pattern.clone(), g.spec.clone())),
            )
            .collect();
        let fourlw = cluster.four_letter_words.enabled;
        let mut model = ClusterState::new(cluster.name.clone(), trees, fourlw);
        model.limits = cluster.limits;
        model.discovery = cluster.discovery.enabled.then(Default::default);
        let state = Arc::new(RwLock::new(model));
        if fourlw {
            pollers.push(Arc::new(Poller::new(
                cluster.name.clone(),
                cluster.four_letter_words.clone(),
                state.clone(),
            )));
        }
        clusters.push(state.clone());
        if cluster.diagnostics.enabled {
            let d = Diagnostics {
                cluster: cluster.name.clone(),
                servers: cluster.four_letter_words.servers.clone(),
                pace: cluster.diagnostics.cons_interval,
                timeout: cluster.four_letter_words.timeout,
                watches: cluster.diagnostics.watches,
            };
            tasks.push(tokio::spawn(ghost::run(d, state.clone(), stop_rx.clone())));
        }
        if let Some(probe) = cluster.probe.clone() {
            state.write().unwrap_or_else(|p| p.into_inner()).probe = Some(Default::default());
            tasks.push(tokio::spawn(sources::canary::run(
                cluster.clone(),
                probe,
                state.clone(),
                stop_rx.clone(),
            )));
        }
        tasks.push(tokio::spawn(sources::zk::session::run_cluster(
            cluster,
            state,
            stop_rx.clone(),
        )));
    }
    let app = http::AppState {
        exposition: Arc::new(metrics::Exposition::new(clusters.clone())),
        clusters,
        pollers,
    };
    info!(address = %config.web.listen_address, "serving /metrics");
    let mut http_stop = stop_rx.clone();
    let server = tokio::spawn(http::serve(listener, app, async move {
        let _ = http_stop.wait_for(|s| *s).await;
    }));
    shutdown_signal().await;
    info!("shutting down");
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    match server.await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            error!("HTTP server failed: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            error!("HTTP server task failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
