//! Configuration: file, environment and flags merged in that order of
//! increasing precedence, then validated into typed values.
//!
//! Every problem is reported as one line naming the key (`clusters[0].servers`)
//! and what to change; secrets never appear in errors or `Debug` output.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::fourlw::Command;
use crate::model::Limits;
use crate::model::candidate::IdentityMode;
use crate::model::groups::GroupSpec;
use crate::model::tree::TreePattern;

/// Prefix of environment variables that override configuration keys.
pub const ENV_PREFIX: &str = "ZK_EXPORTER";

/// Environment variables read by the command line itself; they are not
/// configuration keys and must not reach the `config` crate as such.
pub const CLI_ENV_VARS: &[&str] = &[
    "ZK_EXPORTER_CONFIG",
    "ZK_EXPORTER_ZK",
    "ZK_EXPORTER_ELECTION",
    "ZK_EXPORTER_GROUP",
    "ZK_EXPORTER_IDENTITY",
    "ZK_EXPORTER_LOG",
];

pub const DEFAULT_LISTEN_ADDRESS: &str = "0.0.0.0:9141";
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_secs(5);
const DEFAULT_FOURLW_TIMEOUT: Duration = Duration::from_secs(2);
const DEFAULT_FOURLW_MIN_INTERVAL: Duration = Duration::from_secs(1);

/// A configuration problem: which key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// A secret string whose `Debug` and `Display` never show the value.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The value, for handing to the ZooKeeper client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

// ---------------------------------------------------------------------------
// Raw shape, as written in TOML or environment variables.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    web: RawWeb,
    #[serde(default)]
    clusters: Vec<RawCluster>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeb {
    listen_address: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Option<String>,
    #[serde(default)]
    servers: Vec<String>,
    chroot: Option<String>,
    session_timeout: Option<String>,
    latency_probe_interval: Option<String>,
    watch_mode: Option<String>,
    auth: Option<RawAuth>,
    #[serde(default)]
    elections: Vec<RawElection>,
    #[serde(default)]
    groups: Vec<RawGroup>,
    four_letter_words: Option<RawFourLetterWords>,
    max_elections: Option<usize>,
    max_groups: Option<usize>,
    discovery: Option<RawDiscovery>,
    diagnostics: Option<RawDiagnostics>,
    probe: Option<RawProbe>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    enabled: Option<bool>,
    path: Option<String>,
    interval: Option<String>,
    write: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiagnostics {
    enabled: Option<bool>,
    cons_interval: Option<String>,
    watches: Option<bool>,
}

/// `true`, `false` or `"auto"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawAuto {
    Flag(bool),
    Word(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiscovery {
    enabled: Option<RawAuto>,
    root: Option<String>,
    exclude: Option<Vec<String>>,
    max_nodes: Option<usize>,
    interval: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    path: String,
    member: Option<String>,
    min_members: Option<u32>,
    export_members: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFourLetterWords {
    enabled: Option<bool>,
    servers: Option<Vec<String>>,
    commands: Option<Vec<String>>,
    timeout: Option<String>,
    min_interval: Option<String>,
    admin_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    scheme: Option<String>,
    credentials: Option<Secret>,
    credentials_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawElection {
    path: String,
    identity: Option<String>,
}

// ---------------------------------------------------------------------------
// Validated configuration.

/// The validated configuration the agent runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub web: WebConfig,
    pub clusters: Vec<ClusterConfig>,
}

#[derive(Debug, Clone)]
pub struct WebConfig {
    pub listen_address: SocketAddr,
}

#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Value of the `cluster` label.
    pub name: String,
    /// `host:port` of every ensemble member.
    pub servers: Vec<String>,
    /// Chroot applied to the session, `None` for `/`.
    pub chroot: Option<String>,
    pub session_timeout: Duration,
    /// How often the agent times a read of its own (session latency).
    pub latency_probe_interval: Duration,
    pub watch_mode: WatchMode,
    pub auth: Option<DigestAuth>,
    pub elections: Vec<ElectionConfig>,
    pub groups: Vec<GroupConfig>,
    pub four_letter_words: FourLetterWordsConfig,
    /// Cardinality guard.
    pub limits: Limits,
    pub discovery: DiscoveryConfig,
    pub diagnostics: DiagnosticsConfig,
    /// Failover canary; `None` unless `[clusters.probe]` is configured.
    pub probe: Option<ProbeConfig>,
}

/// The failover canary (opt-in: needs create and delete rights on `path`).
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    pub path: String,
    pub interval: Duration,
    pub write: bool,
}

/// How often the ghost-master diagnostics poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsInterval {
    /// After each round, wait `model::liveness::auto_interval` of the
    /// shortest session timeout among the owners of watched nodes.
    Auto,
    Every(Duration),
}

/// Ghost-master diagnostics from `cons` and `dump`.
#[derive(Debug, Clone)]
pub struct DiagnosticsConfig {
    /// Default: on when four-letter words are.
    pub enabled: bool,
    pub cons_interval: ConsInterval,
    /// Also poll `wchp` to count watchers of election nodes (herd effect).
    pub watches: bool,
}

/// Zero-config discovery of election and group trees.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// Resolved: `auto` means on when no elections and no groups are configured.
    pub enabled: bool,
    pub root: String,
    pub exclude: Vec<String>,
    pub max_nodes: usize,
    pub interval: Duration,
}

/// A membership tree: every node matching `pattern` is a group.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub pattern: TreePattern,
    pub spec: GroupSpec,
}

/// Four-letter-word polling of the ensemble members.
#[derive(Debug, Clone)]
pub struct FourLetterWordsConfig {
    pub enabled: bool,
    /// Members to poll; members published in `/zookeeper/config` are added.
    pub servers: Vec<String>,
    pub commands: Vec<Command>,
    /// Bound on one whole exchange (connect, write, read) per server and command.
    pub timeout: Duration,
    /// Replies younger than this are reused by later scrapes.
    pub min_interval: Duration,
    /// AdminServer base URL with `{host}`, asked when a word is not allowed.
    pub admin_url: Option<String>,
}

/// How trees are watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// Persistent recursive watches and multi-reads (3.6+), falling back to
    /// one-shot watches when the server does not implement them.
    Auto,
    /// Persistent recursive watches and multi-reads only.
    Persistent,
    /// One-shot child watches and plain reads (works on 3.4 and 3.5).
    Oneshot,
}

impl ClusterConfig {
    /// Connect string in ZooKeeper's form: `h1:p1,h2:p2/chroot`.
    pub fn connect_string(&self) -> String {
        let mut s = self.servers.join(",");
        if let Some(chroot) = &self.chroot {
            s.push_str(chroot);
        }
        s
    }
}

/// Digest credentials (`user:password`).
#[derive(Debug, Clone)]
pub struct DigestAuth {
    pub credentials: Secret,
    /// Where they came from, for messages: `credentials` or a file path.
    pub origin: String,
}

#[derive(Debug, Clone)]
pub struct ElectionConfig {
    pub pattern: TreePattern,
    pub identity: IdentityMode,
}

/// What the command line contributes; it wins over file and environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub listen_address: Option<String>,
    /// `--zk`: servers of the first cluster (created if the file has none).
    pub zk: Option<String>,
    /// `--election`: replaces the first cluster's elections.
    pub elections: Vec<String>,
    /// `--group`: replaces the first cluster's groups.
    pub groups: Vec<String>,
    pub identity: Option<String>,
    /// `--four-letter-words` / `--no-four-letter-words`, for every cluster.
    pub four_letter_words: Option<bool>,
}

/// Loads and validates configuration from `overrides.config_file` (if any),
/// the `ZK_EXPORTER_*` variables in `env`, and the flags in `overrides`.
pub fn load(
    overrides: &Overrides,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, ConfigError> {
    let mut builder = config::Config::builder();
    if let Some(path) = &overrides.config_file {
        check_readable(path)?;
        builder = builder.add_source(
            config::File::from(path.as_path())
                .format(config::FileFormat::Toml)
                .required(true),
        );
    }
    let prefix = format!("{ENV_PREFIX}_");
    let env: HashMap<String, String> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix) && !CLI_ENV_VARS.contains(&k.as_str()))
        .collect();
    builder = builder.add_source(
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("_")
            .separator("__")
            .source(Some(env)),
    );
    if let Some(addr) = &overrides.listen_address {
        builder = builder
            .set_override("web.listen_address", addr.as_str())
            .map_err(|e| ConfigError::new("--web.listen-address", e.to_string()))?;
    }
    let source = overrides
        .config_file
        .as_ref()
        .map_or("environment".to_owned(), |p| p.display().to_string());
    let built = builder.build().map_err(|e| {
        ConfigError::new(
            "",
            format!("invalid configuration: {}", one_line(&e.to_string())),
        )
    })?;
    let mut raw: RawConfig = built.try_deserialize().map_err(|e| {
        ConfigError::new(
            "",
            format!(
                "invalid configuration in {source}: {}",
                one_line(&e.to_string())
            ),
        )
    })?;
    apply_quick_start(&mut raw, overrides)?;
    let mut config = validate(raw)?;
    if let Some(enabled) = overrides.four_letter_words {
        for cluster in &mut config.clusters {
            cluster.four_letter_words.enabled = enabled;
            // Diagnostics are four-letter words too.
            cluster.diagnostics.enabled &= enabled;
        }
    }
    Ok(config)
}

/// Folds a multi-line parser message (TOML errors draw the offending line
/// with a caret) into one line: the position, the reason, the file.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('|')
                && !l
                    .split_once(" |")
                    .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
        })
        .collect::<Vec<_>>()
        .join(": ")
        .replace(": in ", " in ")
}

fn check_readable(path: &Path) -> Result<(), ConfigError> {
    std::fs::metadata(path).map(|_| ()).map_err(|e| {
        ConfigError::new(
            "--config",
            format!("cannot read configuration file {}: {e}", path.display()),
        )
    })
}

/// `--zk`, `--election` and `--identity` shape the first cluster.
fn apply_quick_start(raw: &mut RawConfig, o: &Overrides) -> Result<(), ConfigError> {
    if let Some(zk) = &o.zk {
        if raw.clusters.is_empty() {
            raw.clusters.push(RawCluster::default());
        }
        raw.clusters[0].servers = zk
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
    }
    if !o.elections.is_empty() {
        let Some(first) = raw.clusters.first_mut() else {
            return Err(ConfigError::new(
                "--election",
                "needs servers: pass --zk HOST:PORT or configure [[clusters]] in the file",
            ));
        };
        first.elections = o
            .elections
            .iter()
            .map(|path| RawElection {
                path: path.clone(),
                identity: o.identity.clone(),
            })
            .collect();
    }
    if !o.groups.is_empty() {
        let Some(first) = raw.clusters.first_mut() else {
            return Err(ConfigError::new(
                "--group",
                "needs servers: pass --zk HOST:PORT or configure [[clusters]] in the file",
            ));
        };
        first.groups = o
            .groups
            .iter()
            .map(|path| RawGroup {
                path: path.clone(),
                member: None,
                min_members: None,
                export_members: None,
            })
            .collect();
    }
    if o.elections.is_empty() && o.identity.is_some() {
        return Err(ConfigError::new(
            "--identity",
            "only applies to --election; set `identity` per election in the file",
        ));
    }
    Ok(())
}

fn parse_duration(
    key: &str,
    value: Option<&str>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let Some(text) = value else {
        return Ok(default);
    };
    humantime::parse_duration(text).map_err(|e| {
        ConfigError::new(
            key,
            format!("`{text}` is not a duration ({e}); write e.g. \"10s\", \"1500ms\", \"2m\""),
        )
    })
}

fn validate(raw: RawConfig) -> Result<Config, ConfigError> {
    let listen = raw
        .web
        .listen_address
        .unwrap_or_else(|| DEFAULT_LISTEN_ADDRESS.to_owned());
    let listen_address = listen.parse::<SocketAddr>().map_err(|_| {
        ConfigError::new(
            "web.listen_address",
            format!("`{listen}` is not IP:PORT (e.g. \"0.0.0.0:9141\" or \"[::1]:9141\")"),
        )
    })?;
    if raw.clusters.is_empty() {
        return Err(ConfigError::new(
            "clusters",
            "no ZooKeeper cluster configured: pass --zk HOST:PORT or add a [[clusters]] table",
        ));
    }
    let mut names = BTreeSet::new();
    let mut clusters = Vec::new();
    for (i, c) in raw.clusters.into_iter().enumerate() {
        let key = format!("clusters[{i}]");
        let cluster = validate_cluster(&key, c)?;
        if !names.insert(cluster.name.clone()) {
            return Err(ConfigError::new(
                format!("{key}.name"),
                format!(
                    "cluster name `{}` is used twice; names must be unique",
                    cluster.name
                ),
            ));
        }
        clusters.push(cluster);
    }
    Ok(Config {
        web: WebConfig { listen_address },
        clusters,
    })
}

fn validate_cluster(key: &str, c: RawCluster) -> Result<ClusterConfig, ConfigError> {
    let name = c.name.unwrap_or_else(|| "default".to_owned());
    if name.trim().is_empty() {
        return Err(ConfigError::new(format!("{key}.name"), "must not be empty"));
    }
    if c.servers.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.servers"),
            "is empty: list at least one \"host:port\"",
        ));
    }
    let mut servers = Vec::new();
    for (j, s) in c.servers.iter().enumerate() {
        servers.push(validate_server(&format!("{key}.servers[{j}]"), s)?);
    }
    let chroot = match c.chroot.as_deref() {
        None | Some("/") | Some("") => None,
        Some(p) => {
            if !p.starts_with('/') || p.ends_with('/') || p.contains("//") {
                return Err(ConfigError::new(
                    format!("{key}.chroot"),
                    format!(
                        "`{p}` must be an absolute path like \"/apps/prod\" without a trailing `/`"
                    ),
                ));
            }
            Some(p.to_owned())
        }
    };
    let session_timeout = parse_duration(
        &format!("{key}.session_timeout"),
        c.session_timeout.as_deref(),
        DEFAULT_SESSION_TIMEOUT,
    )?;
    if session_timeout < Duration::from_millis(100) || session_timeout > Duration::from_secs(3600) {
        return Err(ConfigError::new(
            format!("{key}.session_timeout"),
            "must be between 100ms and 1h (the server further bounds it by 2..20 × tickTime)",
        ));
    }
    let latency_probe_interval = parse_duration(
        &format!("{key}.latency_probe_interval"),
        c.latency_probe_interval.as_deref(),
        DEFAULT_PROBE_INTERVAL,
    )?;
    if latency_probe_interval < Duration::from_millis(100) {
        return Err(ConfigError::new(
            format!("{key}.latency_probe_interval"),
            "must be at least 100ms",
        ));
    }
    let watch_mode = match c.watch_mode.as_deref() {
        None | Some("auto") => WatchMode::Auto,
        Some("persistent") => WatchMode::Persistent,
        Some("oneshot") => WatchMode::Oneshot,
        Some(other) => {
            return Err(ConfigError::new(
                format!("{key}.watch_mode"),
                format!(
                    "`{other}` is not a watch mode; use \"auto\", \"persistent\" or \"oneshot\""
                ),
            ));
        }
    };
    let auth = c
        .auth
        .map(|a| validate_auth(&format!("{key}.auth"), a))
        .transpose()?;
    let four_letter_words = validate_four_letter_words(
        &format!("{key}.four_letter_words"),
        c.four_letter_words.unwrap_or_default(),
        &servers,
    )?;
    let mut elections = Vec::new();
    for (j, e) in c.elections.into_iter().enumerate() {
        let ekey = format!("{key}.elections[{j}]");
        let pattern =
            TreePattern::parse(&e.path).map_err(|m| ConfigError::new(format!("{ekey}.path"), m))?;
        let identity = IdentityMode::parse(e.identity.as_deref().unwrap_or("data"))
            .map_err(|m| ConfigError::new(format!("{ekey}.identity"), m))?;
        elections.push(ElectionConfig { pattern, identity });
    }
    let mut groups = Vec::new();
    for (j, g) in c.groups.into_iter().enumerate() {
        let gkey = format!("{key}.groups[{j}]");
        let pattern =
            TreePattern::parse(&g.path).map_err(|m| ConfigError::new(format!("{gkey}.path"), m))?;
        let member = IdentityMode::parse(g.member.as_deref().unwrap_or("node")).map_err(|m| {
            ConfigError::new(
                format!("{gkey}.member"),
                m.replace("identity mode", "member mode"),
            )
        })?;
        groups.push(GroupConfig {
            pattern,
            spec: GroupSpec {
                member,
                min_members: g.min_members,
                export_members: g.export_members.unwrap_or(false),
            },
        });
    }
    let raw_diag = c.diagnostics.unwrap_or_default();
    let cons_key = format!("{key}.diagnostics.cons_interval");
    let cons_interval = match raw_diag.cons_interval.as_deref() {
        None | Some("auto") => ConsInterval::Auto,
        text => {
            let interval = parse_duration(&cons_key, text, Duration::ZERO)
                .map_err(|e| ConfigError::new(&cons_key, format!("{}, or \"auto\"", e.message)))?;
            if interval < Duration::from_millis(100) {
                return Err(ConfigError::new(cons_key, "must be at least 100ms"));
            }
            ConsInterval::Every(interval)
        }
    };
    let diagnostics = DiagnosticsConfig {
        enabled: raw_diag.enabled.unwrap_or(four_letter_words.enabled),
        cons_interval,
        watches: raw_diag.watches.unwrap_or(false),
    };
    let probe = match c.probe {
        Some(raw) if raw.enabled.unwrap_or(true) => {
            let path = raw
                .path
                .unwrap_or_else(|| "/zk-election-exporter/probe".to_owned());
            TreePattern::parse(&path)
                .ok()
                .filter(|p| p.segments().iter().all(Option::is_some))
                .ok_or_else(|| {
                    ConfigError::new(
                        format!("{key}.probe.path"),
                        format!("`{path}` must be an absolute path without `*`"),
                    )
                })?;
            let interval = parse_duration(
                &format!("{key}.probe.interval"),
                raw.interval.as_deref(),
                Duration::from_secs(30),
            )?;
            if interval < Duration::from_millis(100) {
                return Err(ConfigError::new(
                    format!("{key}.probe.interval"),
                    "must be at least 100ms",
                ));
            }
            Some(ProbeConfig {
                path,
                interval,
                write: raw.write.unwrap_or(true),
            })
        }
        _ => None,
    };
    let discovery = validate_discovery(
        &format!("{key}.discovery"),
        c.discovery.unwrap_or_default(),
        elections.is_empty() && groups.is_empty(),
    )?;
    Ok(ClusterConfig {
        name,
        servers,
        chroot,
        session_timeout,
        latency_probe_interval,
        watch_mode,
        auth,
        elections,
        groups,
        four_letter_words,
        limits: Limits {
            max_elections: c.max_elections.unwrap_or(Limits::default().max_elections),
            max_groups: c.max_groups.unwrap_or(Limits::default().max_groups),
        },
        discovery,
        diagnostics,
        probe,
    })
}

fn validate_discovery(
    key: &str,
    raw: RawDiscovery,
    nothing_configured: bool,
) -> Result<DiscoveryConfig, ConfigError> {
    let enabled = match raw.enabled {
        None => nothing_configured,
        Some(RawAuto::Flag(b)) => b,
        Some(RawAuto::Word(w)) if w == "auto" => nothing_configured,
        Some(RawAuto::Word(w)) => {
            return Err(ConfigError::new(
                format!("{key}.enabled"),
                format!("`{w}` is not true, false or \"auto\""),
            ));
        }
    };
    let root = raw.root.unwrap_or_else(|| "/".to_owned());
    if !root.starts_with('/') || (root.len() > 1 && root.ends_with('/')) {
        return Err(ConfigError::new(
            format!("{key}.root"),
            format!("`{root}` must be an absolute path like \"/\" or \"/apps\""),
        ));
    }
    let exclude = raw.exclude.unwrap_or_else(|| vec!["/zookeeper".to_owned()]);
    for (j, e) in exclude.iter().enumerate() {
        if !e.starts_with('/') {
            return Err(ConfigError::new(
                format!("{key}.exclude[{j}]"),
                format!("`{e}` must be an absolute path"),
            ));
        }
    }
    let max_nodes = raw.max_nodes.unwrap_or(100_000);
    if max_nodes == 0 {
        return Err(ConfigError::new(
            format!("{key}.max_nodes"),
            "must be at least 1",
        ));
    }
    let interval = parse_duration(
        &format!("{key}.interval"),
        raw.interval.as_deref(),
        Duration::from_secs(300),
    )?;
    if interval < Duration::from_secs(1) {
        return Err(ConfigError::new(
            format!("{key}.interval"),
            "must be at least 1s",
        ));
    }
    Ok(DiscoveryConfig {
        enabled,
        root,
        exclude,
        max_nodes,
        interval,
    })
}

fn validate_four_letter_words(
    key: &str,
    raw: RawFourLetterWords,
    cluster_servers: &[String],
) -> Result<FourLetterWordsConfig, ConfigError> {
    let servers = match raw.servers {
        None => cluster_servers.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for (j, s) in list.iter().enumerate() {
                out.push(validate_server(&format!("{key}.servers[{j}]"), s)?);
            }
            out
        }
    };
    let commands = match raw.commands {
        None => Command::DEFAULT.to_vec(),
        Some(names) => {
            let mut out: Vec<Command> = Vec::new();
            for (j, name) in names.iter().enumerate() {
                let command = Command::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
                    ConfigError::new(
                        format!("{key}.commands[{j}]"),
                        format!(
                            "`{name}` is not a supported command; choose from {}",
                            known.join(", ")
                        ),
                    )
                })?;
                if !out.contains(&command) {
                    out.push(command);
                }
            }
            if out.is_empty() {
                return Err(ConfigError::new(
                    format!("{key}.commands"),
                    "is empty; list commands or set `enabled = false`",
                ));
            }
            out
        }
    };
    let timeout = parse_duration(
        &format!("{key}.timeout"),
        raw.timeout.as_deref(),
        DEFAULT_FOURLW_TIMEOUT,
    )?;
    if timeout < Duration::from_millis(10) || timeout > Duration::from_secs(60) {
        return Err(ConfigError::new(
            format!("{key}.timeout"),
            "must be between 10ms and 60s",
        ));
    }
    let min_interval = parse_duration(
        &format!("{key}.min_interval"),
        raw.min_interval.as_deref(),
        DEFAULT_FOURLW_MIN_INTERVAL,
    )?;
    if let Some(url) = &raw.admin_url
        && !url.starts_with("http://")
    {
        return Err(ConfigError::new(
            format!("{key}.admin_url"),
            format!(
                "`{url}` must be a plain http:// URL such as \"http://{{host}}:8080/commands\""
            ),
        ));
    }
    Ok(FourLetterWordsConfig {
        enabled: raw.enabled.unwrap_or(true),
        servers,
        commands,
        timeout,
        min_interval,
        admin_url: raw.admin_url,
    })
}

/// Accepts `host:port`, `[v6]:port` and bare `host` (port 2181, as ZooKeeper's
/// own connect-string parser does).
fn validate_server(key: &str, s: &str) -> Result<String, ConfigError> {
    let s = s.trim();
    let bad = |why: &str| ConfigError::new(key, format!("`{s}` {why}; write \"host:port\""));
    if s.is_empty() || s.contains(['/', ',', ' ']) {
        return Err(bad("is not a server address"));
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("has an unclosed `[`"))?;
        (format!("[{host}]"), after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (s.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad("has no host"));
    }
    let port = match port {
        None => 2181,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad("has an invalid port"))?,
    };
    Ok(format!("{host}:{port}"))
}

fn validate_auth(key: &str, a: RawAuth) -> Result<DigestAuth, ConfigError> {
    let scheme = a.scheme.as_deref().unwrap_or("digest");
    if scheme != "digest" {
        return Err(ConfigError::new(
            format!("{key}.scheme"),
            format!("`{scheme}` is not supported; only \"digest\" is"),
        ));
    }
    let (credentials, origin) = match (a.credentials, a.credentials_file) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                key,
                "set either `credentials` or `credentials_file`, not both",
            ));
        }
        (None, None) => {
            return Err(ConfigError::new(
                key,
                "needs `credentials = \"user:password\"` or `credentials_file = \"/path\"`",
            ));
        }
        (Some(c), None) => (c, "credentials".to_owned()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::new(
                    format!("{key}.credentials_file"),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            (Secret::new(text.trim()), path.display().to_string())
        }
    };
    match credentials.expose().split_once(':') {
        Some((user, _)) if !user.is_empty() => {}
        _ => {
            return Err(ConfigError::new(
                key,
                format!("digest credentials from {origin} must have the form user:password"),
            ));
        }
    }
    Ok(DigestAuth {
        credentials,
        origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(contents: &str) -> tempfile_lite::TempFile {
        tempfile_lite::TempFile::new("toml", contents)
    }

    fn load_file(contents: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let f = file(contents);
        let o = Overrides {
            config_file: Some(f.path().to_owned()),
            ..Default::default()
        };
        load(&o, env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// A tiny temp-file helper; a dependency would be overkill for tests.
    mod tempfile_lite {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU32, Ordering};

        pub struct TempFile(PathBuf);
        static N: AtomicU32 = AtomicU32::new(0);

        impl TempFile {
            pub fn new(ext: &str, contents: &str) -> Self {
                let n = N.fetch_add(1, Ordering::Relaxed);
                let path = std::env::temp_dir()
                    .join(format!("zkee-test-{}-{n}.{ext}", std::process::id()));
                std::fs::write(&path, contents).unwrap();
                Self(path)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }
        impl Drop for TempFile {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    const FULL: &str = r#"
[web]
listen_address = "127.0.0.1:9999"
[[clusters]]
name = "prod"
servers = ["zk1:2181", "zk2", "[::1]:2182"]
chroot = "/apps"
session_timeout = "6s"
auth = { scheme = "digest", credentials = "user:s3cret" }
[[clusters.elections]]
path = "/wechat/bots/*"
identity = "json:/device"
[[clusters.elections]]
path = "/locks/*"
"#;

    #[test]
    fn full_file_loads() {
        let c = load_file(FULL, &[]).unwrap();
        assert_eq!(c.web.listen_address.to_string(), "127.0.0.1:9999");
        let p = &c.clusters[0];
        assert_eq!(p.name, "prod");
        assert_eq!(p.connect_string(), "zk1:2181,zk2:2181,[::1]:2182/apps");
        assert_eq!(p.session_timeout, Duration::from_secs(6));
        assert_eq!(p.elections.len(), 2);
        assert!(matches!(p.elections[1].identity, IdentityMode::Data));
        assert!(
            !format!("{c:?}").contains("s3cret"),
            "secrets never in Debug"
        );
    }

    #[test]
    fn precedence_flags_over_env_over_file() {
        let env = [("ZK_EXPORTER_WEB__LISTEN_ADDRESS", "127.0.0.1:1111")];
        assert_eq!(
            load_file(FULL, &env).unwrap().web.listen_address.port(),
            1111
        );
        let f = file(FULL);
        let o = Overrides {
            config_file: Some(f.path().to_owned()),
            listen_address: Some("127.0.0.1:2222".into()),
            zk: Some("other:2181".into()),
            elections: vec!["/x/*".into()],
            ..Default::default()
        };
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let c = load(&o, env).unwrap();
        assert_eq!(c.web.listen_address.port(), 2222);
        assert_eq!(c.clusters[0].servers, vec!["other:2181"]);
        assert_eq!(c.clusters[0].elections[0].pattern.as_str(), "/x/*");
    }

    #[test]
    fn quick_start_without_file() {
        let o = Overrides {
            zk: Some("127.0.0.1:2181".into()),
            elections: vec!["/wechat/bots/*".into()],
            ..Default::default()
        };
        let c = load(&o, [("ZK_EXPORTER_ZK".to_string(), "ignored".to_string())]).unwrap();
        assert_eq!(c.web.listen_address.to_string(), DEFAULT_LISTEN_ADDRESS);
        assert_eq!(c.clusters[0].name, "default");
        assert_eq!(c.clusters[0].session_timeout, DEFAULT_SESSION_TIMEOUT);
    }

    fn err(contents: &str) -> String {
        load_file(contents, &[]).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_key() {
        let base = "[[clusters]]\nservers=[\"a:1\"]\n";
        assert!(err("[web]\nlisten = 1").contains("unknown field `listen`"));
        assert!(err("[[clusters]]\nservers=[\"a:1\"]\nfoo=1").contains("unknown field `foo`"));
        assert_eq!(
            err("[[clusters]]\nservers=[]"),
            "clusters[0].servers: is empty: list at least one \"host:port\""
        );
        assert!(
            err(&format!("{base}session_timeout=\"10 parsecs\""))
                .starts_with("clusters[0].session_timeout: `10 parsecs` is not a duration")
        );
        assert!(
            err(&format!("{base}[[clusters.elections]]\npath=\"/a/**\""))
                .starts_with("clusters[0].elections[0].path:")
        );
        assert!(
            err(&format!(
                "{base}[[clusters.elections]]\npath=\"/a/*\"\nidentity=\"regex:(\""
            ))
            .starts_with("clusters[0].elections[0].identity: invalid regex")
        );
        assert!(
            err(&format!(
                "{base}auth={{credentials_file=\"/nonexistent/zk\"}}"
            ))
            .starts_with("clusters[0].auth.credentials_file: cannot read /nonexistent/zk")
        );
        assert!(err("[[clusters]]\nservers=[\"a:99999\"]").starts_with("clusters[0].servers[0]:"));
        assert!(
            err("[web]\nlisten_address=\"nope\"\n[[clusters]]\nservers=[\"a\"]")
                .starts_with("web.listen_address:")
        );
        assert!(err("").starts_with("clusters: no ZooKeeper cluster configured"));
        assert!(
            err("[[clusters]\n").contains("invalid")
                || err("[[clusters]\n").contains("cannot read")
        );
    }

    #[test]
    fn cons_interval_is_auto_unless_set() {
        let base = "[[clusters]]\nservers=[\"a\"]\n";
        let pace = |extra: &str| {
            load_file(&format!("{base}{extra}"), &[])
                .map(|c| c.clusters[0].diagnostics.cons_interval)
        };
        assert_eq!(pace("").unwrap(), ConsInterval::Auto);
        assert_eq!(
            pace("[clusters.diagnostics]\ncons_interval=\"auto\"").unwrap(),
            ConsInterval::Auto
        );
        assert_eq!(
            pace("[clusters.diagnostics]\ncons_interval=\"2s\"").unwrap(),
            ConsInterval::Every(Duration::from_secs(2))
        );
        let e = pace("[clusters.diagnostics]\ncons_interval=\"often\"").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("clusters[0].diagnostics.cons_interval: `often` is not a duration")
                && e.to_string().ends_with("or \"auto\""),
            "{e}"
        );
        assert_eq!(
            pace("[clusters.diagnostics]\ncons_interval=\"10ms\"")
                .unwrap_err()
                .to_string(),
            "clusters[0].diagnostics.cons_interval: must be at least 100ms"
        );
    }

    #[test]
    fn four_letter_words_defaults_and_errors() {
        let c = load_file("[[clusters]]\nservers=[\"a:1\",\"b\"]\n", &[]).unwrap();
        let f = &c.clusters[0].four_letter_words;
        assert!(f.enabled);
        assert_eq!(f.servers, vec!["a:1", "b:2181"]);
        assert_eq!(f.commands, Command::DEFAULT.to_vec());
        assert_eq!(
            (f.timeout, f.min_interval),
            (Duration::from_secs(2), Duration::from_secs(1))
        );
        let base = "[[clusters]]\nservers=[\"a\"]\n[clusters.four_letter_words]\n";
        assert!(
            err(&format!("{base}commands=[\"mntr\",\"kill\"]")).starts_with(
                "clusters[0].four_letter_words.commands[1]: `kill` is not a supported command"
            )
        );
        assert!(
            err(&format!("{base}timeout=\"0s\""))
                .starts_with("clusters[0].four_letter_words.timeout")
        );
        assert!(
            err(&format!("{base}admin_url=\"https://x\""))
                .starts_with("clusters[0].four_letter_words.admin_url")
        );
        assert!(err(&format!("{base}bogus=1")).contains("unknown field `bogus`"));
        let o = Overrides {
            zk: Some("a:1".into()),
            four_letter_words: Some(false),
            ..Default::default()
        };
        assert!(
            !load(&o, std::iter::empty()).unwrap().clusters[0]
                .four_letter_words
                .enabled
        );
    }

    #[test]
    fn discovery_is_auto_when_nothing_is_configured() {
        let c = load_file("[[clusters]]\nservers=[\"a\"]\n", &[]).unwrap();
        let d = &c.clusters[0].discovery;
        assert!(d.enabled);
        assert_eq!((d.root.as_str(), d.max_nodes), ("/", 100_000));
        assert_eq!(d.exclude, vec!["/zookeeper"]);
        let c = load_file(
            "[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"/a/*\"\n",
            &[],
        )
        .unwrap();
        assert!(
            !c.clusters[0].discovery.enabled,
            "auto is off once something is configured"
        );
        let c = load_file("[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"/a/*\"\n[clusters.discovery]\nenabled=true\ninterval=\"30s\"\n", &[]).unwrap();
        assert!(c.clusters[0].discovery.enabled);
        assert_eq!(c.clusters[0].discovery.interval, Duration::from_secs(30));
        assert!(
            err("[[clusters]]\nservers=[\"a\"]\n[clusters.discovery]\nenabled=\"maybe\"\n")
                .starts_with("clusters[0].discovery.enabled")
        );
        assert!(
            err("[[clusters]]\nservers=[\"a\"]\n[clusters.discovery]\nmax_nodes=0\n")
                .starts_with("clusters[0].discovery.max_nodes")
        );
    }

    #[test]
    fn the_shipped_example_is_valid() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/config.toml");
        let o = Overrides {
            config_file: Some(path.into()),
            ..Default::default()
        };
        let c = load(&o, std::iter::empty()).unwrap();
        assert_eq!(c.clusters.len(), 2);
        assert_eq!(c.clusters[0].elections.len(), 2);
        assert!(c.clusters[0].chroot.is_none());
    }

    #[test]
    fn bad_credentials_are_reported_without_the_secret() {
        let e = err("[[clusters]]\nservers=[\"a\"]\nauth={credentials=\"nocolonsecret\"}");
        assert!(e.contains("user:password"), "{e}");
        assert!(!e.contains("nocolonsecret"), "{e}");
    }

    #[test]
    fn credentials_file_is_read_and_trimmed() {
        let creds = file("");
        {
            let mut f = std::fs::File::create(creds.path()).unwrap();
            writeln!(f, "bob:pw").unwrap();
        }
        let toml = format!(
            "[[clusters]]\nservers=[\"a\"]\nauth={{credentials_file=\"{}\"}}",
            creds.path().display()
        );
        let c = load_file(&toml, &[]).unwrap();
        assert_eq!(
            c.clusters[0].auth.as_ref().unwrap().credentials.expose(),
            "bob:pw"
        );
    }
}
