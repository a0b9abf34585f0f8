//! Configuration: file, environment and flags merged in that order of
//! increasing precedence, then validated into typed values.
//!
//! Every problem is reported as one line naming the key (`clusters[0].servers`)
//! and what to change; secrets never appear in errors or `Debug` output.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::fourlw::Command;
use crate::model::Limits;
use crate::model::election_tree::ElectionSpec;
use crate::model::groups::GroupSpec;
use crate::model::locks::LockSpec;
use crate::model::tree::TreePattern;

/// Prefix of environment variables that override configuration keys.
pub const ENV_PREFIX: &str = "ZK_EXPORTER";

/// Where the web server listens unless `web.listen_address` says otherwise:
/// every IPv4 address, as every Prometheus exporter.
pub const DEFAULT_LISTEN_ADDRESS: &str = "0.0.0.0:9141";
/// Where metrics are served unless `web.telemetry_path` says otherwise.
pub const DEFAULT_TELEMETRY_PATH: &str = "/metrics";
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_LATENCY_READ_INTERVAL: Duration = Duration::from_secs(5);
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

/// The validated configuration the agent runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub web: WebConfig,
    pub clusters: Vec<ClusterConfig>,
    /// `[alerting]`: push the agent's own alerts; `None` when not set.
    pub alerting: Option<alerting::AlertingConfig>,
    /// The one Kerberos identity of the clusters that use GSSAPI, set up
    /// for the process at start ([`kerberos::KerberosIdentity`]).
    pub kerberos: Option<kerberos::KerberosIdentity>,
}

#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Every address to serve on (`--web.listen-address`, repeatable).
    pub listen_addresses: Vec<listen::ListenAddress>,
    /// Where the metrics are served (`/metrics` unless set).
    pub telemetry_path: String,
    /// `--web.config.file` (TLS, basic auth, headers) and what it held at
    /// start; re-read when it or a file it names changes.
    pub config_file: Option<(PathBuf, webfile::Loaded)>,
    pub limits: HttpLimits,
    /// `--web.enable-lifecycle`: whether `POST /-/reload` reloads (off by
    /// default, as in Prometheus and Alertmanager: anyone who reaches the
    /// port could otherwise make the agent re-read its files on demand).
    /// SIGHUP reloads either way.
    pub enable_lifecycle: bool,
}

/// What one HTTP connection may take, and how many there may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// From a request's first byte (or the TLS handshake's) to its last
    /// header byte.
    pub header_timeout: Duration,
    /// Between requests on a kept-alive connection.
    pub idle_timeout: Duration,
    /// How long a response write may make no progress (a scraper that
    /// stopped reading).
    pub write_timeout: Duration,
    /// Open connections at most; at the cap the longest-idle one is closed
    /// for a new one. Also held under the open-files limit.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(60),
            max_connections: 512,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Value of the `ensemble` label.
    pub name: String,
    /// `host:port` of every ensemble member.
    pub servers: Vec<String>,
    /// Chroot applied to the session, `None` for `/`.
    pub chroot: Option<String>,
    pub session_timeout: Duration,
    /// How often the agent times a read of its own (session latency).
    pub latency_read_interval: Duration,
    pub watch_mode: WatchMode,
    pub auth: Option<Auth>,
    /// TLS to `secureClientPort`; `None`: plain.
    pub tls: Option<zktls::ZkTls>,
    pub elections: Vec<ElectionConfig>,
    pub groups: Vec<GroupConfig>,
    pub locks: Vec<LockConfig>,
    pub four_letter_words: FourLetterWordsConfig,
    /// Cardinality guard.
    pub limits: Limits,
    /// Timeline entries kept (`/api/v1/events`).
    pub timeline_size: usize,
    pub discovery: DiscoveryConfig,
    pub ghost_check: GhostCheckConfig,
    /// Failover probe; `None` unless `[clusters.probe]` is configured.
    pub probe: Option<ProbeConfig>,
}

/// The failover probe (opt-in: needs create and delete rights on `path`).
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    pub path: String,
    pub interval: Duration,
    pub write: bool,
}

/// How often the ghost-master check poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsInterval {
    /// After each round, wait `model::ghost::auto_interval` of the
    /// shortest session timeout among the owners of watched nodes.
    Auto,
    Every(Duration),
}

/// The ghost-master check from `cons` and `dump`.
#[derive(Debug, Clone)]
pub struct GhostCheckConfig {
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
    /// How long the candidates a walk found must outlive it before their
    /// parent becomes a tree: nodes that live milliseconds (ClickHouse's
    /// insert locks and block numbers) never make an election.
    pub settle: Duration,
}

/// A membership tree: every node matching `pattern` is a group.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub pattern: TreePattern,
    pub spec: GroupSpec,
}

/// A lock tree: every node matching `pattern` is a lock.
#[derive(Debug, Clone)]
pub struct LockConfig {
    pub pattern: TreePattern,
    pub spec: LockSpec,
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
    /// The cluster's TLS: words go to `secureClientPort` over TLS, and an
    /// `https://` AdminServer is verified with the same CA.
    pub tls: Option<zktls::ZkTls>,
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

/// How the agent authenticates to a cluster.
#[derive(Debug, Clone)]
pub enum Auth {
    /// A user and password: `addauth digest` or SASL DIGEST-MD5.
    Password(PasswordAuth),
    /// SASL GSSAPI: a Kerberos principal and its ticket.
    Kerberos(kerberos::Kerberos),
}

impl Auth {
    /// What the session presents, for messages: "digest", "SASL GSSAPI", …
    pub fn label(&self) -> &'static str {
        match self {
            Auth::Password(p) => p.scheme.label(),
            Auth::Kerberos(_) => "SASL GSSAPI (Kerberos)",
        }
    }

    /// Where the credentials come from, for messages (never the secret).
    pub fn origin(&self) -> String {
        match self {
            Auth::Password(p) => p.origin.clone(),
            Auth::Kerberos(k) => format!(
                "principal {} with {}",
                k.identity.principal_label(),
                k.identity.source_label()
            ),
        }
    }

    pub fn kerberos(&self) -> Option<&kerberos::Kerberos> {
        match self {
            Auth::Kerberos(k) => Some(k),
            Auth::Password(_) => None,
        }
    }
}

/// Credentials (`user:password`) and how they are presented.
#[derive(Debug, Clone)]
pub struct PasswordAuth {
    pub scheme: AuthScheme,
    pub credentials: Secret,
    /// Where they came from, for messages: `credentials` or a file path.
    pub origin: String,
}

impl PasswordAuth {
    /// User and password.
    pub fn user_password(&self) -> (&str, &str) {
        self.credentials
            .expose()
            .split_once(':')
            .unwrap_or((self.credentials.expose(), ""))
    }
}

/// How a user and password reach ZooKeeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthScheme {
    /// `addauth digest user:password` after connecting (ACL `digest:`).
    Digest,
    /// SASL DIGEST-MD5 at connect (ACL `sasl:user`; the server needs a
    /// JAAS `Server` section with `DigestLoginModule`).
    SaslDigestMd5,
}

impl AuthScheme {
    pub fn label(self) -> &'static str {
        match self {
            AuthScheme::Digest => "digest",
            AuthScheme::SaslDigestMd5 => "SASL DIGEST-MD5",
        }
    }
}

/// An election tree: every node matching `pattern` is an election.
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    pub pattern: TreePattern,
    pub spec: ElectionSpec,
    /// Where the application keeps its lease, when the set has one.
    pub lease: Option<LeaseSource>,
}

/// What the command line contributes; it wins over file and environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    /// `--web.listen-address`, each time it is given.
    pub listen_address: Vec<String>,
    /// `--web.telemetry-path`.
    pub telemetry_path: Option<String>,
    /// `--web.config.file`.
    pub web_config_file: Option<PathBuf>,
    /// `--web.enable-lifecycle` (only ever turns it on).
    pub enable_lifecycle: bool,
    /// `--zk`: servers of the first cluster (created if the file has none).
    pub zk: Option<String>,
    /// `--election`: replaces the first cluster's elections.
    pub elections: Vec<String>,
    /// `--group`: replaces the first cluster's groups.
    pub groups: Vec<String>,
    /// `--system KIND[:ROOT]`: replaces the first cluster's systems.
    pub systems: Vec<String>,
    pub identity: Option<String>,
    /// `--four-letter-words` / `--no-four-letter-words`, for every cluster.
    pub four_letter_words: Option<bool>,
    /// Environment variables the command line reads itself (its flags'
    /// `env` names): they are not configuration keys.
    pub cli_env_vars: Vec<String>,
}

pub mod alerting;
mod cluster;
mod elections;
mod fingerprint;
pub(crate) mod kerberos;
mod lease;
pub(crate) mod listen;
pub use lease::{Dialect, LeaseSource};
mod load;
mod raw;
mod summary;
mod systems;
#[cfg(test)]
mod tests;
mod validate;
pub mod webfile;
pub(crate) mod zktls;

pub use cluster::system_trees;
pub use load::{load, parse_toml};
pub use summary::summary;
