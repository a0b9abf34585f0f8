//! `check-config`'s account of the effective configuration: everything a
//! start would run with, defaults filled in and every `--system` expanded
//! into the trees it watches, as TOML a configuration file could hold
//! (loading it gives the same configuration, a test holds it to that).
//! Secrets are masked: inline credentials print as `<redacted>`, files are
//! named, never read out.
//!
//! The print is the types below, the file's own shape, serialised by
//! `toml`: what a file may hold is spelled once, here and in `raw`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::alerting::{AlertingConfig, AlertmanagerTarget};
use super::kerberos::TicketSource;
use super::{
    Auth, AuthScheme, ClusterConfig, Config, ConsInterval, DiscoveryConfig, ElectionConfig,
    FourLetterWordsConfig, GhostCheckConfig, GroupConfig, LockConfig, WatchMode, WebConfig,
};
use crate::model::election_tree::Style;
use crate::model::lease::LeaseKey;

/// The effective configuration as TOML.
pub fn summary(c: &Config) -> String {
    let printed = File {
        web: web(&c.web),
        clusters: c.clusters.iter().map(cluster).collect(),
        alerting: c.alerting.as_ref().map(alerting),
    };
    let toml = toml::to_string(&printed)
        .unwrap_or_else(|e| format!("# the configuration could not be printed: {e}\n"));
    match &c.web.config_file {
        // What the web config file held: named in a comment, as the file
        // itself is named above.
        Some((_, loaded)) => format!(
            "# web.config_file: tls = {}, basic_auth_users = {}, headers = {}\n{toml}",
            loaded.config.tls.is_some(),
            loaded.config.users.len(),
            loaded.config.headers.len()
        ),
        None => toml,
    }
}

/// A duration as the file spells it (`1m 30s`).
fn d(t: Duration) -> String {
    humantime::format_duration(t).to_string()
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[derive(Serialize)]
struct File {
    web: Web,
    clusters: Vec<Cluster>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alerting: Option<Alerting>,
}

#[derive(Serialize)]
struct Web {
    /// One address as a string, several as a list: as the file takes them.
    listen_address: OneOrMany,
    telemetry_path: String,
    enable_lifecycle: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_file: Option<String>,
    header_timeout: String,
    idle_timeout: String,
    write_timeout: String,
    max_connections: usize,
}

#[derive(Serialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn web(w: &WebConfig) -> Web {
    let mut addresses: Vec<String> = w.listen_addresses.iter().map(|a| a.to_string()).collect();
    let listen_address = match addresses.len() {
        1 => OneOrMany::One(addresses.remove(0)),
        _ => OneOrMany::Many(addresses),
    };
    let l = &w.limits;
    Web {
        listen_address,
        telemetry_path: w.telemetry_path.clone(),
        enable_lifecycle: w.enable_lifecycle,
        config_file: w.config_file.as_ref().map(|(path, _)| p(path)),
        header_timeout: d(l.header_timeout),
        idle_timeout: d(l.idle_timeout),
        write_timeout: d(l.write_timeout),
        max_connections: l.max_connections,
    }
}

#[derive(Serialize)]
struct Cluster {
    name: String,
    servers: Vec<String>,
    chroot: String,
    session_timeout: String,
    latency_read_interval: String,
    watch_mode: &'static str,
    max_elections: usize,
    max_tracked_elections: usize,
    attention_window: String,
    max_groups: usize,
    max_locks: usize,
    timeline_size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<AuthPrinted>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<Tls>,
    four_letter_words: Words,
    discovery: Discovery,
    ghost_check: Ghost,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<Probe>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    elections: Vec<Election>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    groups: Vec<Group>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locks: Vec<Lock>,
}

fn cluster(cl: &ClusterConfig) -> Cluster {
    let l = &cl.limits;
    Cluster {
        name: cl.name.clone(),
        servers: cl.servers.clone(),
        chroot: cl.chroot.clone().unwrap_or_else(|| "/".into()),
        session_timeout: d(cl.session_timeout),
        latency_read_interval: d(cl.latency_read_interval),
        watch_mode: match cl.watch_mode {
            WatchMode::Auto => "auto",
            WatchMode::Persistent => "persistent",
            WatchMode::Oneshot => "oneshot",
        },
        max_elections: l.max_elections,
        max_tracked_elections: l.max_tracked_elections,
        attention_window: d(l.attention_window),
        max_groups: l.max_groups,
        max_locks: l.max_locks,
        timeline_size: cl.timeline_size,
        auth: cl.auth.as_ref().map(auth),
        tls: cl.tls.as_ref().map(|t| Tls {
            ca_file: p(&t.ca_file),
            cert_file: t.identity_files.as_ref().map(|(cert, _)| p(cert)),
            key_file: t.identity_files.as_ref().map(|(_, key)| p(key)),
            server_name: t.server_name.clone(),
        }),
        four_letter_words: words(&cl.four_letter_words),
        discovery: discovery(&cl.discovery),
        ghost_check: ghost_check(&cl.ghost_check),
        probe: cl.probe.as_ref().map(|probe| Probe {
            enabled: true,
            path: probe.path.clone(),
            interval: d(probe.interval),
            write: probe.write,
        }),
        elections: cl.elections.iter().map(election).collect(),
        groups: cl.groups.iter().map(group).collect(),
        locks: cl.locks.iter().map(lock).collect(),
    }
}

/// Credentials: files named, inline secrets masked.
#[derive(Serialize, Default)]
struct AuthPrinted {
    scheme: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    credentials: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    credentials_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mechanism: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keytab: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    credential_cache: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    krb5_conf: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_name: Option<String>,
}

fn auth(a: &Auth) -> AuthPrinted {
    match a {
        Auth::Password(a) => {
            let inline = a.origin == "credentials";
            AuthPrinted {
                scheme: match a.scheme {
                    AuthScheme::Digest => "digest",
                    AuthScheme::SaslDigestMd5 => "sasl",
                },
                credentials: inline.then_some("<redacted>"),
                credentials_file: (!inline).then(|| a.origin.clone()),
                ..Default::default()
            }
        }
        Auth::Kerberos(k) => {
            let id = &k.identity;
            AuthPrinted {
                scheme: "sasl",
                mechanism: Some("GSSAPI"),
                principal: id.principal.clone(),
                keytab: match &id.source {
                    TicketSource::Keytab(path) => Some(p(path)),
                    _ => None,
                },
                credential_cache: match &id.source {
                    TicketSource::Cache(c) => Some(c.clone()),
                    _ => None,
                },
                krb5_conf: id.krb5_conf.as_deref().map(p),
                service_name: Some(k.service_name.clone()),
                server_name: k.server_name.clone(),
                ..Default::default()
            }
        }
    }
}

#[derive(Serialize)]
struct Tls {
    ca_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cert_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_name: Option<String>,
}

#[derive(Serialize)]
struct Words {
    enabled: bool,
    servers: Vec<String>,
    commands: Vec<&'static str>,
    timeout: String,
    min_interval: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    admin_url: Option<String>,
}

fn words(f: &FourLetterWordsConfig) -> Words {
    Words {
        enabled: f.enabled,
        servers: f.servers.clone(),
        commands: f.commands.iter().map(|c| c.name()).collect(),
        timeout: d(f.timeout),
        min_interval: d(f.min_interval),
        admin_url: f.admin_url.clone(),
    }
}

#[derive(Serialize)]
struct Discovery {
    enabled: bool,
    root: String,
    exclude: Vec<String>,
    max_nodes: usize,
    interval: String,
    settle: String,
}

fn discovery(dc: &DiscoveryConfig) -> Discovery {
    Discovery {
        enabled: dc.enabled,
        root: dc.root.clone(),
        exclude: dc.exclude.clone(),
        max_nodes: dc.max_nodes,
        interval: d(dc.interval),
        settle: d(dc.settle),
    }
}

#[derive(Serialize)]
struct Ghost {
    enabled: bool,
    /// `"auto"` or a duration: both strings in the file.
    cons_interval: String,
    watches: bool,
}

fn ghost_check(g: &GhostCheckConfig) -> Ghost {
    Ghost {
        enabled: g.enabled,
        cons_interval: match g.cons_interval {
            ConsInterval::Auto => "auto".into(),
            ConsInterval::Every(t) => d(t),
        },
        watches: g.watches,
    }
}

#[derive(Serialize)]
struct Probe {
    enabled: bool,
    path: String,
    interval: String,
    write: bool,
}

#[derive(Serialize)]
struct Election {
    path: String,
    identity: String,
    style: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    standbys: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_candidates: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<Record>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_master_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slo: Option<Slo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<Lease>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
}

#[derive(Serialize)]
struct Record {
    path: String,
    identity: String,
}

#[derive(Serialize)]
struct Slo {
    availability: f64,
    window: String,
}

/// Files named, never their content (the DSN may hold a password).
#[derive(Serialize)]
struct Lease {
    dsn_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    password_file: Option<String>,
    table: String,
    key: String,
    holder: String,
    lease_until: String,
    last_seen: String,
    key_from: &'static str,
    interval: String,
    timeout: String,
    max_rows: u64,
    full_every: String,
    page_rows: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_zone: Option<String>,
    split_brain_for: String,
    expired_for: String,
}

/// `path` without its last segment.
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "",
        Some(cut) => &path[..cut],
    }
}

fn election(e: &ElectionConfig) -> Election {
    let path = e.pattern.as_str();
    let s = &e.spec;
    // A sequential election's record sits beside the election node; a
    // node election's siblings beside its node. Both are its parent.
    let parent = parent_of(path);
    let (style, epoch, standbys) = match &s.style {
        Style::Sequential => ("sequential", None, None),
        Style::Node(n) => (
            "node",
            n.epoch.as_ref().map(|epoch| format!("{parent}/{epoch}")),
            n.standbys.as_ref().map(|s| s.registry_of(path)),
        ),
    };
    Election {
        path: path.to_owned(),
        identity: s.identity.spec(),
        style,
        epoch,
        standbys,
        min_candidates: s.min_candidates,
        record: s.record.as_ref().map(|(name, identity)| Record {
            path: format!("{parent}/{name}"),
            identity: identity.spec(),
        }),
        no_master_for: s.no_master_for.map(d),
        slo: s.slo.as_ref().map(|slo| Slo {
            availability: slo.availability,
            window: d(slo.window),
        }),
        lease: e
            .lease
            .as_ref()
            .zip(s.lease.as_ref())
            .map(|(l, spec)| Lease {
                dsn_file: p(&l.dsn_file),
                password_file: l.password_file.as_deref().map(p),
                table: l.table.clone(),
                key: l.key.clone(),
                holder: l.holder.clone(),
                lease_until: l.lease_until.clone(),
                last_seen: l.last_seen.clone(),
                key_from: match spec.key {
                    LeaseKey::Name => "name",
                    LeaseKey::Path => "path",
                    LeaseKey::Capture(_) => "capture",
                },
                interval: d(l.interval),
                timeout: d(l.timeout),
                max_rows: l.max_rows,
                full_every: d(l.full_every),
                page_rows: l.page_rows,
                time_zone: l.time_zone.clone(),
                split_brain_for: d(spec.split_brain_for),
                expired_for: d(spec.expired_for),
            }),
        exclude: e.pattern.exclusions().map(str::to_owned).collect(),
    }
}

#[derive(Serialize)]
struct Group {
    path: String,
    member: String,
    export_members: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_members: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alive: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
}

fn group(g: &GroupConfig) -> Group {
    let s = &g.spec;
    Group {
        path: g.pattern.as_str().to_owned(),
        member: s.member.spec(),
        export_members: s.export_members,
        min_members: s.min_members,
        alive: s.alive.clone(),
        exclude: g.pattern.exclusions().map(str::to_owned).collect(),
    }
}

#[derive(Serialize)]
struct Lock {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_hold: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
}

fn lock(l: &LockConfig) -> Lock {
    Lock {
        path: l.pattern.as_str().to_owned(),
        max_hold: l.spec.max_hold.map(d),
        exclude: l.pattern.exclusions().map(str::to_owned).collect(),
    }
}

#[derive(Serialize)]
struct Alerting {
    alertmanagers: Vec<Target>,
    resend_interval: String,
    no_master_for: String,
    session_lost_for: String,
    external_labels: BTreeMap<String, String>,
    runbook_url: String,
    max_alerts: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    generator_url: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    holds: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    windows: BTreeMap<&'static str, String>,
}

fn alerting(a: &AlertingConfig) -> Alerting {
    Alerting {
        alertmanagers: a.alertmanagers.iter().map(target).collect(),
        resend_interval: d(a.resend_interval),
        no_master_for: d(a.no_master_for),
        session_lost_for: d(a.session_lost_for),
        external_labels: a.external_labels.clone().into_iter().collect(),
        runbook_url: a.runbook_url.clone(),
        max_alerts: a.max_alerts,
        generator_url: a.generator_url.clone(),
        holds: a
            .holds
            .iter()
            .map(|(k, h)| (k.alertname(), d(*h)))
            .collect(),
        windows: a
            .windows
            .iter()
            .map(|(k, w)| (k.alertname(), d(*w)))
            .collect(),
    }
}

#[derive(Serialize)]
struct Target {
    url: String,
    timeout: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    basic_auth: Option<BasicAuth>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bearer_token_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ca_file: Option<String>,
}

#[derive(Serialize)]
struct BasicAuth {
    username: String,
    password_file: String,
}

fn target(t: &AlertmanagerTarget) -> Target {
    Target {
        url: t.url.clone(),
        timeout: d(t.timeout),
        basic_auth: t.basic_auth.as_ref().map(|(user, file)| BasicAuth {
            username: user.clone(),
            password_file: p(file),
        }),
        bearer_token_file: t.bearer_token_file.as_deref().map(p),
        ca_file: t.ca_file.as_deref().map(p),
    }
}
