//! Loading: the file, the environment and the command-line flags merged in
//! that order of increasing precedence.

use std::collections::BTreeSet;
use std::path::Path;

use super::cluster::validate_cluster;
use super::raw::{RawCluster, RawConfig, RawElection, RawGroup, RawListen, RawSystem};
use super::{
    Config, ConfigError, DEFAULT_LISTEN_ADDRESS, DEFAULT_TELEMETRY_PATH, ENV_PREFIX, HttpLimits,
    Overrides, WebConfig,
};

/// Loads and validates configuration from `overrides.config_file` (if any),
/// the `ZK_EXPORTER_*` variables in `env`, and the flags in `overrides`.
/// The file is read by `toml` into the raw shape; the environment and the
/// flags then set fields of that shape, each parsed as its type.
pub fn load(
    overrides: &Overrides,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, ConfigError> {
    let mut raw = match &overrides.config_file {
        Some(path) => {
            check_readable(path)?;
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError::new(
                    "--config",
                    format!("cannot read configuration file {}: {e}", path.display()),
                )
            })?;
            toml::from_str::<RawConfig>(&text).map_err(|e| {
                ConfigError::new(
                    "",
                    format!(
                        "invalid configuration in {}: {}",
                        path.display(),
                        toml_error(&text, &e)
                    ),
                )
            })?
        }
        None => RawConfig::default(),
    };
    let prefix = format!("{ENV_PREFIX}_");
    let (mut env, ignored): (Vec<Variable>, Vec<Variable>) = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix) && !overrides.cli_env_vars.contains(k))
        .partition(|(k, _)| ENV_KEYS.contains(&k[prefix.len()..].to_ascii_lowercase().as_str()));
    if !ignored.is_empty() {
        let mut names: Vec<&str> = ignored.iter().map(|(k, _)| k.as_str()).collect();
        names.sort_unstable();
        tracing::warn!(
            variables = %names.join(", "),
            "ignoring {ENV_PREFIX}_* variables that are not configuration keys (Kubernetes service links and Docker links set such names); docs/configuration.md lists the keys"
        );
    }
    env.sort();
    for (name, value) in env {
        let key = name[prefix.len()..].to_ascii_lowercase();
        apply_env(&mut raw, &name, &key, value)?;
    }
    apply_web_flags(&mut raw, overrides);
    apply_quick_start(&mut raw, overrides)?;
    let mut config = validate(raw)?;
    if let Some(enabled) = overrides.four_letter_words {
        for cluster in &mut config.clusters {
            cluster.four_letter_words.enabled = enabled;
            // The ghost check is four-letter words too.
            cluster.ghost_check.enabled &= enabled;
        }
    }
    Ok(config)
}

/// An environment variable: name and value.
type Variable = (String, String);

/// Sets the field `key` (one of [`ENV_KEYS`]) names from variable `name`.
fn apply_env(raw: &mut RawConfig, name: &str, key: &str, value: String) -> Result<(), ConfigError> {
    let number = |value: &str| {
        value
            .trim()
            .parse::<usize>()
            .map_err(|_| ConfigError::new(name, format!("`{value}` is not a whole number")))
    };
    let web = &mut raw.web;
    match key {
        "web__listen_address" => web.listen_address = Some(RawListen::One(value)),
        "web__telemetry_path" => web.telemetry_path = Some(value),
        "web__config_file" => web.config_file = Some(value.into()),
        "web__header_timeout" => web.header_timeout = Some(value),
        "web__idle_timeout" => web.idle_timeout = Some(value),
        "web__write_timeout" => web.write_timeout = Some(value),
        "web__max_connections" => web.max_connections = Some(number(&value)?),
        "web__enable_lifecycle" => {
            web.enable_lifecycle = Some(match value.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => true,
                "false" | "0" | "no" | "off" => false,
                _ => {
                    return Err(ConfigError::new(
                        name,
                        format!("`{value}` is not true or false"),
                    ));
                }
            });
        }
        _ => {
            let alerting = raw.alerting.get_or_insert_default();
            match key {
                "alerting__resend_interval" => alerting.resend_interval = Some(value),
                "alerting__no_master_for" => alerting.no_master_for = Some(value),
                "alerting__session_lost_for" => alerting.session_lost_for = Some(value),
                "alerting__generator_url" => alerting.generator_url = Some(value),
                "alerting__runbook_url" => alerting.runbook_url = Some(value),
                "alerting__max_alerts" => alerting.max_alerts = Some(number(&value)?),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The web flags, which override the file and the environment.
fn apply_web_flags(raw: &mut RawConfig, overrides: &Overrides) {
    let web = &mut raw.web;
    if let Some(file) = &overrides.web_config_file {
        web.config_file = Some(file.clone());
    }
    if let Some(path) = &overrides.telemetry_path {
        web.telemetry_path = Some(path.clone());
    }
    if overrides.enable_lifecycle {
        web.enable_lifecycle = Some(true);
    }
    if !overrides.listen_address.is_empty() {
        web.listen_address = Some(RawListen::Many(overrides.listen_address.clone()));
    }
}

/// The variable names (after `ZK_EXPORTER_`, lower-cased) that are
/// configuration keys; any other `ZK_EXPORTER_*` variable is ignored with a
/// warning, so a Kubernetes service named `zk-exporter`
/// (`ZK_EXPORTER_SERVICE_HOST`, `ZK_EXPORTER_PORT`, ...) cannot stop the
/// agent. Clusters are lists: they come from the file or the flags.
pub const ENV_KEYS: &[&str] = &[
    "web__listen_address",
    "web__telemetry_path",
    "web__config_file",
    "web__header_timeout",
    "web__idle_timeout",
    "web__write_timeout",
    "web__max_connections",
    "web__enable_lifecycle",
    "alerting__resend_interval",
    "alerting__no_master_for",
    "alerting__session_lost_for",
    "alerting__generator_url",
    "alerting__runbook_url",
    "alerting__max_alerts",
];

/// The configuration in TOML `text` alone (no environment, no flags):
/// what `--config` would give, for checks and fuzzing.
pub fn parse_toml(text: &str) -> Result<Config, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        ConfigError::new(
            "",
            format!("invalid configuration: {}", toml_error(text, &e)),
        )
    })?;
    validate(raw)
}

/// A TOML error in one line: where (line, column and the key written
/// there; never the value, which may be a secret) and why.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let reason = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return reason;
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    let written = text.lines().nth(line - 1).unwrap_or_default();
    let key = match written.split_once('=') {
        Some((key, _)) => key.trim(),
        None if written.trim_start().starts_with('[') => written.trim(),
        None => "",
    };
    let looks_like_a_key = !key.is_empty()
        && key.len() <= 100
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.\"'[] ".contains(c));
    if looks_like_a_key {
        format!("line {line}, column {column}, at `{key}`: {reason}")
    } else {
        format!("line {line}, column {column}: {reason}")
    }
}

fn check_readable(path: &Path) -> Result<(), ConfigError> {
    std::fs::metadata(path).map(|_| ()).map_err(|e| {
        ConfigError::new(
            "--config",
            format!("cannot read configuration file {}: {e}", path.display()),
        )
    })
}

/// The first cluster, which the command line's tree flags shape.
fn first_cluster<'a>(
    raw: &'a mut RawConfig,
    flag: &str,
) -> Result<&'a mut RawCluster, ConfigError> {
    raw.clusters.first_mut().ok_or_else(|| {
        ConfigError::new(
            flag,
            "needs servers: pass --zk HOST:PORT or configure [[clusters]] in the file",
        )
    })
}

/// `--zk`, `--election`, `--identity`, `--group` and `--system` shape the
/// first cluster.
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
        first_cluster(raw, "--election")?.elections = o
            .elections
            .iter()
            .map(|path| RawElection {
                path: path.clone(),
                identity: o.identity.clone(),
                ..Default::default()
            })
            .collect();
    }
    if !o.groups.is_empty() {
        first_cluster(raw, "--group")?.groups = o
            .groups
            .iter()
            .map(|path| RawGroup {
                path: path.clone(),
                ..Default::default()
            })
            .collect();
    }
    if !o.systems.is_empty() {
        first_cluster(raw, "--system")?.systems = o
            .systems
            .iter()
            .map(|s| {
                let (kind, root) = match s.split_once(':') {
                    Some((kind, root)) => (kind, Some(root.to_owned())),
                    None => (s.as_str(), None),
                };
                RawSystem {
                    kind: kind.to_owned(),
                    root,
                }
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

/// Validates the whole configuration: the web side and every cluster.
fn validate(mut raw: RawConfig) -> Result<Config, ConfigError> {
    let listen = raw
        .web
        .listen_address
        .take()
        .map_or_else(|| vec![DEFAULT_LISTEN_ADDRESS.to_owned()], |l| l.into_vec());
    let listen_addresses =
        super::listen::parse_all(&listen).map_err(|e| ConfigError::new("web.listen_address", e))?;
    let telemetry_path = telemetry_path(raw.web.telemetry_path.as_deref())?;
    let config_file = match raw.web.config_file.clone() {
        Some(path) => {
            let loaded = super::webfile::load(&path)
                .map_err(|e| ConfigError::new("web.config_file", e.to_string()))?;
            Some((path, loaded))
        }
        None => None,
    };
    let limits = http_limits(&raw.web)?;
    let alerting = super::alerting::validate_alerting(raw.alerting)?;
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
    let kerberos = super::kerberos::shared_identity(clusters.iter().enumerate().map(|(i, c)| {
        (
            format!("clusters[{i}]"),
            c.auth.as_ref().and_then(super::Auth::kerberos),
        )
    }))?;
    Ok(Config {
        web: WebConfig {
            listen_addresses,
            telemetry_path,
            config_file,
            limits,
            enable_lifecycle: raw.web.enable_lifecycle.unwrap_or(false),
        },
        clusters,
        alerting,
        kerberos,
    })
}

/// Paths the agent serves itself; metrics may not take one of them.
const RESERVED_PATHS: &[&str] = &[
    "/",
    "/healthz",
    "/ready",
    "/-/healthy",
    "/-/ready",
    "/-/reload",
];

/// `web.telemetry_path`: an absolute path of its own, `/metrics` unless set.
fn telemetry_path(path: Option<&str>) -> Result<String, ConfigError> {
    let Some(path) = path else {
        return Ok(DEFAULT_TELEMETRY_PATH.to_owned());
    };
    let key = "web.telemetry_path";
    if !path.starts_with('/') || path.len() < 2 {
        return Err(ConfigError::new(
            key,
            format!("`{path}` must be an absolute path such as \"/metrics\""),
        ));
    }
    if let Some(c) = path
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "/-_.~".contains(*c)))
    {
        return Err(ConfigError::new(
            key,
            format!("`{path}` has `{c}`; use letters, digits and / - _ . ~"),
        ));
    }
    if path.contains("//") || path.ends_with('/') || path.split('/').any(|s| s == "." || s == "..")
    {
        return Err(ConfigError::new(
            key,
            format!("`{path}` is not a plain path (no //, trailing / or dot segments)"),
        ));
    }
    if RESERVED_PATHS.contains(&path) || path.starts_with("/api/") || path == "/api" {
        return Err(ConfigError::new(
            key,
            format!(
                "`{path}` is served by the agent itself (/, /healthz, /ready, /-/reload, /api/...); choose another"
            ),
        ));
    }
    Ok(path.to_owned())
}

/// `[web]` timeouts and the connection cap.
fn http_limits(web: &super::raw::RawWeb) -> Result<HttpLimits, ConfigError> {
    use super::validate::{AT_LEAST_100MS as bounds, bounded_duration};
    let d = HttpLimits::default();
    let max_connections = web.max_connections.unwrap_or(d.max_connections);
    if max_connections < 2 {
        return Err(ConfigError::new(
            "web.max_connections",
            "must be at least 2 (a scraper and a health check)",
        ));
    }
    Ok(HttpLimits {
        header_timeout: bounded_duration(
            "web.header_timeout",
            web.header_timeout.as_deref(),
            d.header_timeout,
            &bounds,
        )?,
        idle_timeout: bounded_duration(
            "web.idle_timeout",
            web.idle_timeout.as_deref(),
            d.idle_timeout,
            &bounds,
        )?,
        write_timeout: bounded_duration(
            "web.write_timeout",
            web.write_timeout.as_deref(),
            d.write_timeout,
            &bounds,
        )?,
        max_connections,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variable the environment may set reaches its field: a key
    /// listed but not applied would be accepted and then do nothing.
    #[test]
    fn every_environment_key_sets_its_field() {
        for key in ENV_KEYS {
            let value = if key.ends_with("max_connections") || key.ends_with("max_alerts") {
                "7"
            } else if key.ends_with("enable_lifecycle") {
                "on"
            } else {
                "x"
            };
            let mut raw = RawConfig::default();
            let before = format!("{raw:?}");
            apply_env(&mut raw, key, key, value.to_owned()).unwrap();
            let after = format!("{raw:?}");
            assert_ne!(before, after, "{key} changed nothing");
            assert!(value != "x" || after.contains("\"x\""), "{key}: {after}");
        }
        let mut raw = RawConfig::default();
        let e = apply_env(
            &mut raw,
            "ZK_EXPORTER_WEB__ENABLE_LIFECYCLE",
            "web__enable_lifecycle",
            "maybe".into(),
        )
        .unwrap_err();
        assert_eq!(e.key, "ZK_EXPORTER_WEB__ENABLE_LIFECYCLE");
    }

    /// The configuration reference names every key the environment may
    /// set.
    #[test]
    fn every_environment_key_is_in_the_configuration_reference() {
        let docs = include_str!("../../docs/configuration.md");
        for key in ENV_KEYS {
            let name = key.to_ascii_uppercase();
            assert!(
                docs.contains(&format!("`{name}`")),
                "docs/configuration.md does not name {name}"
            );
        }
    }
}
