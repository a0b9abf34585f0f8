//! Loading: the file, the environment and the command-line flags merged in
//! that order of increasing precedence.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::cluster::validate_cluster;
use super::raw::{RawCluster, RawConfig, RawElection, RawGroup, RawSystem};
use super::{
    Config, ConfigError, DEFAULT_LISTEN_ADDRESS, DEFAULT_TELEMETRY_PATH, ENV_PREFIX, HttpLimits,
    Overrides, WebConfig,
};

/// Loads and validates configuration from `overrides.config_file` (if any),
/// the `ZK_EXPORTER_*` variables in `env`, and the flags in `overrides`.
pub fn load(
    overrides: &Overrides,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, ConfigError> {
    let mut builder = config::Config::builder();
    if let Some(path) = &overrides.config_file {
        check_readable(path)?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(
                "--config",
                format!("cannot read configuration file {}: {e}", path.display()),
            )
        })?;
        guard_top_level_keys(&text)?;
        builder = builder.add_source(config::File::from_str(&text, config::FileFormat::Toml));
    }
    let prefix = format!("{ENV_PREFIX}_");
    let (env, ignored): (HashMap<String, String>, HashMap<String, String>) = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix) && !overrides.cli_env_vars.contains(k))
        .partition(|(k, _)| ENV_KEYS.contains(&k[prefix.len()..].to_ascii_lowercase().as_str()));
    if !ignored.is_empty() {
        let mut names: Vec<&str> = ignored.keys().map(String::as_str).collect();
        names.sort_unstable();
        tracing::warn!(
            variables = %names.join(", "),
            "ignoring {ENV_PREFIX}_* variables that are not configuration keys (Kubernetes service links and Docker links set such names); docs/configuration.md lists the keys"
        );
    }
    builder = builder.add_source(
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("_")
            .separator("__")
            .source(Some(env)),
    );
    builder = with_web_flags(builder, overrides)?;
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
            // The ghost check is four-letter words too.
            cluster.ghost_check.enabled &= enabled;
        }
    }
    Ok(config)
}

/// The web flags, which override the file and the environment.
fn with_web_flags(
    mut builder: config::ConfigBuilder<config::builder::DefaultState>,
    overrides: &Overrides,
) -> Result<config::ConfigBuilder<config::builder::DefaultState>, ConfigError> {
    if let Some(file) = &overrides.web_config_file {
        builder = builder
            .set_override("web.config_file", file.display().to_string())
            .map_err(|e| ConfigError::new("--web.config.file", e.to_string()))?;
    }
    if let Some(path) = &overrides.telemetry_path {
        builder = builder
            .set_override("web.telemetry_path", path.as_str())
            .map_err(|e| ConfigError::new("--web.telemetry-path", e.to_string()))?;
    }
    if overrides.enable_lifecycle {
        builder = builder
            .set_override("web.enable_lifecycle", true)
            .map_err(|e| ConfigError::new("--web.enable-lifecycle", e.to_string()))?;
    }
    if !overrides.listen_address.is_empty() {
        builder = builder
            .set_override("web.listen_address", overrides.listen_address.clone())
            .map_err(|e| ConfigError::new("--web.listen-address", e.to_string()))?;
    }
    Ok(builder)
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
    guard_top_level_keys(text)?;
    let raw: RawConfig = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Toml))
        .build()
        .and_then(config::Config::try_deserialize)
        .map_err(|e| {
            ConfigError::new(
                "",
                format!("invalid configuration: {}", one_line(&e.to_string())),
            )
        })?;
    validate(raw)
}

/// Refuses top-level keys other than `web`, `clusters` and `alerting` before the
/// config crate sees them: it reads `a[N]` in a top-level key as an array
/// index and allocates N elements (found by fuzzing: an abort, not an
/// error). A text that does not parse is left to the config crate's
/// message.
fn guard_top_level_keys(text: &str) -> Result<(), ConfigError> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Ok(());
    };
    match table
        .keys()
        .find(|k| !matches!(k.as_str(), "web" | "clusters" | "alerting"))
    {
        Some(key) => Err(ConfigError::new(
            "",
            format!(
                "invalid configuration: unknown field `{}`, expected `web`, `clusters` or `alerting`",
                key.escape_debug()
            ),
        )),
        None => Ok(()),
    }
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
