//! The raw shape of the configuration, as written in TOML or environment
//! variables; `validate` turns it into typed values.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::Secret;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) web: RawWeb,
    #[serde(default)]
    pub(super) clusters: Vec<RawCluster>,
    pub(super) alerting: Option<RawAlerting>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWeb {
    pub(super) listen_address: Option<RawListen>,
    pub(super) telemetry_path: Option<String>,
    pub(super) config_file: Option<PathBuf>,
    pub(super) header_timeout: Option<String>,
    pub(super) idle_timeout: Option<String>,
    pub(super) write_timeout: Option<String>,
    pub(super) max_connections: Option<usize>,
    pub(super) enable_lifecycle: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) servers: Vec<String>,
    pub(super) chroot: Option<String>,
    pub(super) session_timeout: Option<String>,
    /// `latency_probe_interval`, its earlier name, is still accepted.
    #[serde(alias = "latency_probe_interval")]
    pub(super) latency_read_interval: Option<String>,
    pub(super) watch_mode: Option<String>,
    pub(super) auth: Option<RawAuth>,
    pub(super) tls: Option<super::zktls::RawZkTls>,
    #[serde(default)]
    pub(super) elections: Vec<RawElection>,
    #[serde(default)]
    pub(super) groups: Vec<RawGroup>,
    #[serde(default)]
    pub(super) locks: Vec<RawLock>,
    #[serde(default)]
    pub(super) systems: Vec<RawSystem>,
    pub(super) four_letter_words: Option<RawFourLetterWords>,
    pub(super) max_elections: Option<usize>,
    pub(super) max_tracked_elections: Option<usize>,
    /// `event_log_size`, its earlier name, is still accepted.
    #[serde(alias = "event_log_size")]
    pub(super) timeline_size: Option<usize>,
    pub(super) attention_window: Option<String>,
    pub(super) max_groups: Option<usize>,
    pub(super) max_locks: Option<usize>,
    pub(super) discovery: Option<RawDiscovery>,
    /// `[clusters.ghost_check]`; `[clusters.diagnostics]`, its earlier name,
    /// is still accepted.
    #[serde(alias = "diagnostics")]
    pub(super) ghost_check: Option<RawGhostCheck>,
    pub(super) probe: Option<RawProbe>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProbe {
    pub(super) enabled: Option<bool>,
    pub(super) path: Option<String>,
    pub(super) interval: Option<String>,
    pub(super) write: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGhostCheck {
    pub(super) enabled: Option<bool>,
    pub(super) cons_interval: Option<String>,
    pub(super) watches: Option<bool>,
}

/// One listen address or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawListen {
    One(String),
    Many(Vec<String>),
}

impl RawListen {
    pub(super) fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(a) => vec![a],
            Self::Many(a) => a,
        }
    }
}

/// `true`, `false` or `"auto"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawAuto {
    Flag(bool),
    Word(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDiscovery {
    pub(super) enabled: Option<RawAuto>,
    pub(super) root: Option<String>,
    pub(super) exclude: Option<Vec<String>>,
    pub(super) max_nodes: Option<usize>,
    pub(super) interval: Option<String>,
    pub(super) settle: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSystem {
    pub(super) kind: String,
    pub(super) root: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecord {
    pub(super) path: String,
    pub(super) identity: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLock {
    pub(super) path: String,
    pub(super) max_hold: Option<String>,
    pub(super) exclude: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGroup {
    pub(super) path: String,
    pub(super) member: Option<String>,
    pub(super) min_members: Option<u32>,
    pub(super) export_members: Option<bool>,
    pub(super) alive: Option<String>,
    pub(super) exclude: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFourLetterWords {
    pub(super) enabled: Option<bool>,
    pub(super) servers: Option<Vec<String>>,
    pub(super) commands: Option<Vec<String>>,
    pub(super) timeout: Option<String>,
    pub(super) min_interval: Option<String>,
    pub(super) admin_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    pub(super) scheme: Option<String>,
    pub(super) mechanism: Option<String>,
    pub(super) credentials: Option<Secret>,
    pub(super) credentials_file: Option<PathBuf>,
    pub(super) principal: Option<String>,
    pub(super) keytab: Option<PathBuf>,
    pub(super) credential_cache: Option<String>,
    pub(super) krb5_conf: Option<PathBuf>,
    pub(super) service_name: Option<String>,
    pub(super) server_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawElection {
    pub(super) path: String,
    pub(super) identity: Option<String>,
    pub(super) style: Option<String>,
    pub(super) min_candidates: Option<u32>,
    pub(super) standbys: Option<String>,
    pub(super) epoch: Option<String>,
    pub(super) record: Option<RawRecord>,
    pub(super) no_master_for: Option<String>,
    pub(super) exclude: Option<Vec<String>>,
    pub(super) slo: Option<RawSlo>,
    pub(super) lease: Option<RawLease>,
}

/// An election set's objective: `slo = { availability = 0.999, window = "30d" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlo {
    pub(super) availability: f64,
    pub(super) window: Option<String>,
}

/// `[alerting]`, validated by `alerting::validate_alerting`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlerting {
    pub(super) alertmanagers: Option<Vec<RawAlertmanager>>,
    pub(super) resend_interval: Option<String>,
    pub(super) no_master_for: Option<String>,
    pub(super) session_lost_for: Option<String>,
    pub(super) holds: Option<BTreeMap<String, String>>,
    pub(super) windows: Option<BTreeMap<String, String>>,
    pub(super) external_labels: Option<BTreeMap<String, String>>,
    pub(super) generator_url: Option<String>,
    pub(super) runbook_url: Option<String>,
    pub(super) max_alerts: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawAlertmanager {
    Url(String),
    Table(RawAlertmanagerTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlertmanagerTable {
    pub(super) url: String,
    pub(super) basic_auth: Option<RawBasicAuth>,
    pub(super) bearer_token_file: Option<PathBuf>,
    pub(super) ca_file: Option<PathBuf>,
    pub(super) timeout: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBasicAuth {
    pub(super) username: String,
    pub(super) password_file: PathBuf,
}

/// `lease = { … }` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLease {
    pub(super) dsn_file: Option<PathBuf>,
    pub(super) password_file: Option<PathBuf>,
    pub(super) table: Option<String>,
    pub(super) key: Option<String>,
    pub(super) holder: Option<String>,
    pub(super) lease_until: Option<String>,
    pub(super) last_seen: Option<String>,
    pub(super) key_from: Option<String>,
    pub(super) interval: Option<String>,
    pub(super) timeout: Option<String>,
    pub(super) max_rows: Option<u64>,
    pub(super) full_every: Option<String>,
    pub(super) page_rows: Option<u64>,
    pub(super) time_zone: Option<String>,
    pub(super) split_brain_for: Option<String>,
    pub(super) expired_for: Option<String>,
}
