//! Thin shell: parse the command line, set up logging, load configuration,
//! hand over to the agent, stop on SIGTERM/SIGINT.

use std::process::ExitCode;

use clap::Parser;
use tracing::error;
use zk_election_exporter::agent::{self, AgentError};
use zk_election_exporter::cli::{Cli, Command};
use zk_election_exporter::{config, simulate};

fn main() -> ExitCode {
    zk_election_exporter::os::cap_allocator_arenas();
    let cli = Cli::parse();
    if cli.version {
        println!("{}", zk_election_exporter::version_text());
        return ExitCode::SUCCESS;
    }
    let wanted = cli.args.log_filter();
    let filter = tracing_subscriber::EnvFilter::try_new(&wanted).unwrap_or_else(|e| {
        eprintln!("zk-election-exporter: invalid --log filter `{wanted}`: {e}; using info");
        tracing_subscriber::EnvFilter::new("info")
    });
    zk_election_exporter::logging::init(filter, &cli.args.log_format);
    zk_election_exporter::panics::install();
    if let Some((old, new)) = zk_election_exporter::os::raise_open_files_limit() {
        tracing::info!(
            soft = old,
            raised_to = new,
            "raised the soft limit of open files to the hard limit"
        );
    }
    // The exporter's configuration is read before the runtime starts its
    // threads: Kerberos is set up through the process environment.
    let config = match cli.command {
        None => match load_and_prepare(&cli) {
            Ok(c) => Some(c),
            Err(code) => return code,
        },
        Some(_) => None,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-election-exporter: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Some(Command::Simulate(ref args)) => runtime.block_on(simulate::run(args.clone())),
        Some(Command::CheckConfig(ref args)) => check_config(args),
        None => match config {
            Some(config) => runtime.block_on(run_exporter(&cli, config)),
            None => ExitCode::FAILURE,
        },
    }
}

/// Loads the configuration and points GSSAPI at its Kerberos identity.
fn load_and_prepare(cli: &Cli) -> Result<config::Config, ExitCode> {
    let config = config::load(&cli.args.overrides(), std::env::vars()).map_err(|e| {
        eprintln!("zk-election-exporter: configuration error: {e}");
        ExitCode::from(2)
    })?;
    if let Some(identity) = &config.kerberos {
        // SAFETY: no thread but this one runs yet (the runtime starts
        // after), so nothing reads the environment meanwhile.
        let env = unsafe { zk_election_exporter::sources::kerberos::prepare_process(identity) };
        for (name, value) in env {
            tracing::info!(%name, %value, "Kerberos: set for GSSAPI");
        }
    }
    Ok(config)
}

/// `check-config`: what a start would load, or why it would not start.
fn check_config(args: &zk_election_exporter::cli::ConfigArgs) -> ExitCode {
    match config::load(&args.overrides(), std::env::vars()) {
        Ok(c) => {
            println!("{}", config::summary(&c));
            println!("configuration is valid");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zk-election-exporter: configuration error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run_exporter(cli: &Cli, config: config::Config) -> ExitCode {
    let overrides = cli.args.overrides();
    // A reload reads what a start reads: the same file, environment, flags.
    let loader = Box::new(move || config::load(&overrides, std::env::vars()));
    match agent::run(config, loader, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(AgentError::Bind(e)) => {
            eprintln!("zk-election-exporter: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            error!("{e}");
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
