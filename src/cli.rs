//! Command line. Flags win over `ZK_EXPORTER_*` environment variables, which
//! win over the configuration file (see [`crate::config::load`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::Overrides;

/// `--system`'s help, naming every known system.
fn system_help() -> String {
    format!(
        "A known system's elections and registries in one flag: {}, optionally with the root \
         its znodes live under (`kafka:/kafka-prod`); repeatable. Replaces the first cluster's \
         systems",
        or_list(crate::systems::names())
    )
}

/// `--identity`'s help, naming every mode a known system brings.
fn identity_help() -> String {
    let decoders: String = crate::systems::decoders()
        .map(|d| format!("{}, ", d.name))
        .collect();
    format!(
        "Identity mode for --election: data, node, json:/pointer, regex:PATTERN, \
         protobuf:N[.N…], {decoders}owner-host or owner-address (owner-record needs a record: \
         configure it in a file)"
    )
}

/// `a, b or c`.
fn or_list(names: Vec<&str>) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "zk-election-exporter",
    disable_version_flag = true,
    about = "Prometheus exporter for ZooKeeper elections: who is master, how often it moves, how long elections go without one."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Print version, git revision, build date and compiler, then exit.
    #[arg(short = 'V', long, global = true)]
    pub version: bool,

    #[command(flatten)]
    pub args: ConfigArgs,
}

/// What the agent runs with: file, flags (each also an environment
/// variable) and logging. `check-config` takes the same.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// TOML configuration file (see docs/configuration.md).
    #[arg(long, env = "ZK_EXPORTER_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// ZooKeeper servers of the (first) cluster, comma separated.
    #[arg(long, env = "ZK_EXPORTER_ZK", value_name = "HOST:PORT[,HOST:PORT...]")]
    pub zk: Option<String>,

    /// Election glob (`*` matches one path segment); repeatable. Replaces the
    /// first cluster's elections.
    #[arg(
        long = "election",
        env = "ZK_EXPORTER_ELECTION",
        value_name = "GLOB",
        value_delimiter = ','
    )]
    pub elections: Vec<String>,

    /// Group glob (service registry, membership); repeatable. Replaces the
    /// first cluster's groups.
    #[arg(
        long = "group",
        env = "ZK_EXPORTER_GROUP",
        value_name = "GLOB",
        value_delimiter = ','
    )]
    pub groups: Vec<String>,

    /// A known system's elections and registries in one flag; the help text
    /// names the systems from their files (`system_help`).
    #[arg(
        long = "system",
        help = system_help(),
        env = "ZK_EXPORTER_SYSTEM",
        value_name = "KIND[:ROOT]",
        value_delimiter = ','
    )]
    pub systems: Vec<String>,

    /// Identity mode for --election; the help text names the known
    /// systems' modes from their files (`identity_help`).
    #[arg(
        long,
        env = "ZK_EXPORTER_IDENTITY",
        value_name = "MODE",
        help = identity_help()
    )]
    pub identity: Option<String>,

    /// Poll the four-letter words of every ensemble member (the default).
    #[arg(long = "four-letter-words", overrides_with = "no_four_letter_words")]
    pub four_letter_words: bool,

    /// Do not poll four-letter words (elections and session only).
    #[arg(long = "no-four-letter-words", overrides_with = "four_letter_words")]
    pub no_four_letter_words: bool,

    /// Address to serve /metrics on: `:PORT` (every address), `HOST:PORT`,
    /// `IP:PORT` or `[IPv6]:PORT`; repeat for several (default
    /// 0.0.0.0:9141).
    #[arg(long = "web.listen-address", value_name = "[HOST]:PORT")]
    pub listen_address: Vec<String>,

    /// Path under which metrics are served (default /metrics).
    #[arg(long = "web.telemetry-path", value_name = "PATH")]
    pub telemetry_path: Option<String>,

    /// Web configuration (exporter-toolkit format): TLS, basic auth,
    /// response headers. Re-read when it or a file it names changes.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<std::path::PathBuf>,

    /// Let `POST /-/reload` reload the configuration, as Prometheus's flag
    /// of the same name does (off: it answers 403). SIGHUP always reloads.
    #[arg(long = "web.enable-lifecycle")]
    pub enable_lifecycle: bool,

    /// Log filter for power users, e.g. `zk_election_exporter=debug`;
    /// wins over --log.level.
    #[arg(long, env = "ZK_EXPORTER_LOG", value_name = "FILTER")]
    pub log: Option<String>,

    /// Least severe level logged: debug, info, warn or error. The client
    /// library's per-connection chatter stays at warn.
    #[arg(long = "log.level", value_name = "LEVEL", default_value = "info",
          value_parser = ["debug", "info", "warn", "error"])]
    pub log_level: String,

    /// Log line format: text (for people), logfmt or json (for shippers).
    #[arg(long = "log.format", value_name = "FORMAT", default_value = "text",
          value_parser = ["text", "logfmt", "json"])]
    pub log_format: String,
}

impl ConfigArgs {
    /// The log filter: `--log` if given, else `--log.level` with the client
    /// library kept at warn.
    pub fn log_filter(&self) -> String {
        self.log.clone().unwrap_or_else(|| {
            let lib = if self.log_level == "debug" || self.log_level == "info" {
                "warn"
            } else {
                &self.log_level
            };
            format!("{},zookeeper_client={lib}", self.log_level)
        })
    }

    pub fn overrides(&self) -> Overrides {
        Overrides {
            config_file: self.config.clone(),
            listen_address: self.listen_address.clone(),
            telemetry_path: self.telemetry_path.clone(),
            web_config_file: self.web_config_file.clone(),
            enable_lifecycle: self.enable_lifecycle,
            zk: self.zk.clone(),
            elections: self.elections.clone(),
            groups: self.groups.clone(),
            systems: self.systems.clone(),
            identity: self.identity.clone(),
            four_letter_words: match (self.four_letter_words, self.no_four_letter_words) {
                (_, true) => Some(false),
                (true, false) => Some(true),
                (false, false) => None,
            },
            cli_env_vars: Cli::env_vars(),
        }
    }
}

impl Cli {
    /// The environment variables the flags read, as clap declares them.
    pub fn env_vars() -> Vec<String> {
        use clap::CommandFactory;
        Self::command()
            .get_arguments()
            .filter_map(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned())
            .collect()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate the configuration exactly as a start would (file,
    /// environment, flags, the files it names) without starting anything;
    /// print the effective configuration with secrets masked; exit 0 when
    /// valid, 2 when not. For CI and configuration management.
    CheckConfig(ConfigArgs),
    /// Run real ZooKeeper sessions that compete in elections and kill masters:
    /// a load generator for demos and benchmarks.
    Simulate(SimulateArgs),
}

/// The election layouts `simulate` creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimStyle {
    Sequential,
    Exclusive,
    Node,
    Lock,
}

#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// ZooKeeper servers, comma separated.
    #[arg(long, value_name = "HOSTS")]
    pub zk: String,
    /// Parent of the elections; election i is PATH/bot_i (with `--style
    /// node`, the node PATH/bot_i/leader).
    #[arg(long, default_value = "/wechat/bots")]
    pub path: String,
    /// How candidates compete: `sequential` (each creates an
    /// EPHEMERAL_SEQUENTIAL child, lowest is master), `node` (whoever
    /// creates the one EPHEMERAL `leader` node is master; the others retry)
    /// `exclusive` (the single-active design: only the master keeps
    /// its node, standbys delete theirs and register again when the master
    /// dies) or `lock` (kazoo-style `__lock__` contenders: the lowest holds
    /// the lock for up to a second, releases it and queues again).
    #[arg(long, value_enum, default_value_t = SimStyle::Sequential)]
    pub style: SimStyle,
    /// Number of elections.
    #[arg(long, default_value_t = 10)]
    pub elections: usize,
    /// Candidates per election.
    #[arg(long, default_value_t = 3)]
    pub candidates: usize,
    /// Sessions the candidates are spread over (each session is one
    /// simulated process); default: candidates × elections, at most 50
    /// (ZooKeeper allows 60 connections per client IP by default).
    #[arg(long)]
    pub sessions: Option<usize>,
    /// Masters killed per second (0: none).
    #[arg(long, default_value_t = 0.0)]
    pub kill_rate: f64,
    /// Fraction of kills that abandon the session without closing it, so its
    /// nodes stay until the session expires.
    #[arg(long, default_value_t = 0.5)]
    pub abandon_ratio: f64,
    /// Session timeout of the simulated sessions. 10 s (kazoo's default) is
    /// long enough for the ghost-master check to show a frozen master before
    /// ZooKeeper expires it (see docs/configuration.md, `cons_interval`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub session_timeout: Duration,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::candidate::{IdentityMode, OwnerPart};
    use clap::CommandFactory;

    /// Every identity mode is named in `--help` and in the configuration
    /// reference: `--help` once listed four of seven. The match makes a new
    /// mode a compile error here until it is listed; a known system's modes
    /// come from its file.
    #[test]
    fn every_identity_mode_is_named_in_the_help_and_the_docs() {
        let mut all = vec![
            IdentityMode::Data,
            IdentityMode::Node,
            IdentityMode::parse("json:/a").unwrap(),
            IdentityMode::parse("regex:(x)").unwrap(),
            IdentityMode::parse("protobuf:1").unwrap(),
            IdentityMode::Owner(OwnerPart::Host),
            IdentityMode::Owner(OwnerPart::Address),
            IdentityMode::OwnerRecord,
        ];
        all.extend(
            crate::systems::shipped()
                .flat_map(|s| s.decoders())
                .map(IdentityMode::Decoded),
        );
        let help = Cli::command().render_long_help().to_string();
        let docs = include_str!("../docs/configuration.md");
        for mode in &all {
            match mode {
                IdentityMode::Data
                | IdentityMode::Node
                | IdentityMode::JsonPointer(_)
                | IdentityMode::Regex(_)
                | IdentityMode::Protobuf(_)
                | IdentityMode::Decoded(_)
                | IdentityMode::Owner(_)
                | IdentityMode::OwnerRecord => {}
            }
            let spec = mode.spec();
            let name = spec.split_once(':').map_or(spec.as_str(), |(n, _)| n);
            let shown = if spec.contains(':') {
                format!("{name}:")
            } else {
                name.to_owned()
            };
            assert!(help.contains(&shown), "--help does not name {shown}");
            assert!(
                docs.contains(&format!("`\"{shown}")),
                "docs/configuration.md does not name {shown}"
            );
        }
    }

    /// Every known system a release ships is named by `--help`, the
    /// README and the configuration reference (its row in the table of
    /// kinds, with its default root, and the `kind` line above it), and
    /// nothing else is: the lists come from the systems' files.
    #[test]
    fn every_known_system_is_named_in_the_help_and_the_docs() {
        let help = Cli::command().render_long_help().to_string();
        let readme = include_str!("../README.md");
        let docs = include_str!("../docs/configuration.md");
        let kinds_line = docs
            .lines()
            .find(|l| l.starts_with("kind = \"kafka\""))
            .expect("docs/configuration.md shows `kind = \"kafka\"`");
        let listed: Vec<&str> = kinds_line
            .split_once('#')
            .map(|(_, names)| names.split('|').map(str::trim).collect())
            .unwrap_or_default();
        let mut shipped: Vec<&str> = crate::systems::shipped().map(|s| s.name()).collect();
        let table: Vec<&str> = docs
            .lines()
            .skip_while(|l| !l.starts_with("| kind | default root |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(table.len(), shipped.len(), "{table:#?}");
        for system in crate::systems::shipped() {
            let name = system.name();
            assert!(help.contains(name), "--help does not name {name}");
            assert!(
                readme.contains(&format!("`{name}`"))
                    || readme.contains(&format!("--system {name}`")),
                "README.md does not name {name}"
            );
            let row = format!("| `{name}` | `{}`", system.default_root());
            assert!(
                table.iter().any(|l| l.starts_with(&row)),
                "docs/configuration.md has no row {row}"
            );
        }
        let mut listed = listed;
        listed.sort_unstable();
        shipped.sort_unstable();
        assert_eq!(listed, shipped, "{kinds_line}");
    }

    /// Every known system, the unit tests' own included, is expanded by
    /// `--system KIND:ROOT` into its trees, and `check-config` prints them.
    #[test]
    fn every_known_system_is_expanded_by_the_flag_and_printed_by_check_config() {
        for system in crate::systems::all() {
            let name = system.name();
            let flag = format!("{name}:/deep/root");
            let cli = Cli::try_parse_from([
                "zk-election-exporter",
                "check-config",
                "--zk",
                "zk1:2181",
                "--system",
                &flag,
            ])
            .unwrap();
            let Some(Command::CheckConfig(args)) = &cli.command else {
                panic!("check-config is a command: {cli:?}");
            };
            let config = crate::config::load(&args.overrides(), std::iter::empty())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (elections, groups) = crate::config::system_trees(name, "/deep/root").unwrap();
            let cluster = &config.clusters[0];
            let paths = |e: &[crate::config::ElectionConfig]| -> Vec<String> {
                e.iter().map(|e| e.pattern.as_str().to_owned()).collect()
            };
            assert_eq!(paths(&cluster.elections), paths(&elections), "{name}");
            assert_eq!(cluster.groups.len(), groups.len(), "{name}");
            let printed = crate::config::summary(&config);
            for path in paths(&elections)
                .into_iter()
                .chain(groups.iter().map(|g| g.pattern.as_str().to_owned()))
            {
                assert!(
                    printed.contains(&format!("path = \"{path}\"")),
                    "{name}: {path} in\n{printed}"
                );
            }
            for tree in system.trees(&crate::systems::Root("/deep/root")) {
                if let crate::systems::SystemTree::Election(e) = tree {
                    assert!(
                        printed.contains(&format!("identity = \"{}\"", e.identity)),
                        "{name}"
                    );
                }
            }
        }
    }
}
