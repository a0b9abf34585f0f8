//! Validation of the whole configuration and of its shared pieces (servers,
//! credentials, durations), with messages that name the key.

use std::time::Duration;

use super::raw::{RawAuth, RawAuto, RawDiscovery, RawFourLetterWords};
use super::*;
use crate::fourlw::Command;

/// Where a duration must lie, and how the error says so.
pub(super) struct Bounds {
    pub min: Duration,
    pub max: Duration,
    pub says: &'static str,
}

impl Bounds {
    /// At least `min`, no upper bound.
    pub const fn at_least(min: Duration, says: &'static str) -> Self {
        Self {
            min,
            max: Duration::MAX,
            says,
        }
    }
}

/// At least 100 ms: the floor of every interval.
pub(super) const AT_LEAST_100MS: Bounds =
    Bounds::at_least(Duration::from_millis(100), "must be at least 100ms");

/// The duration at `key` (`default` when absent) within `bounds`.
pub(super) fn bounded_duration(
    key: &str,
    value: Option<&str>,
    default: Duration,
    bounds: &Bounds,
) -> Result<Duration, ConfigError> {
    let d = parse_duration(key, value, default)?;
    if d < bounds.min || d > bounds.max {
        return Err(ConfigError::new(key, bounds.says));
    }
    Ok(d)
}

/// The longest duration any setting takes. No interval, timeout or hold
/// needs more, and every one is added to clock readings: a value near
/// what the syntax allows (`"500000000000years"`) overflowed them and
/// panicked on every connection.
pub(super) const LONGEST: Duration = Duration::from_secs(366 * 24 * 3600);

pub(super) fn parse_duration(
    key: &str,
    value: Option<&str>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    let Some(text) = value else {
        return Ok(default);
    };
    let d = humantime::parse_duration(text).map_err(|e| {
        ConfigError::new(
            key,
            format!("`{text}` is not a duration ({e}); write e.g. \"10s\", \"1500ms\", \"2m\""),
        )
    })?;
    if d > LONGEST {
        return Err(ConfigError::new(
            key,
            format!("`{text}` is longer than any setting takes: at most 366 days"),
        ));
    }
    Ok(d)
}

pub(super) fn validate_discovery(
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
    let interval = bounded_duration(
        &format!("{key}.interval"),
        raw.interval.as_deref(),
        Duration::from_secs(300),
        &Bounds::at_least(Duration::from_secs(1), "must be at least 1s"),
    )?;
    let settle = bounded_duration(
        &format!("{key}.settle"),
        raw.settle.as_deref(),
        Duration::from_secs(10).min(interval),
        &Bounds::at_least(Duration::from_millis(100), "must be at least 100ms"),
    )?;
    if settle > interval {
        return Err(ConfigError::new(
            format!("{key}.settle"),
            format!(
                "must not be longer than discovery.interval ({}): the next walk would start before this one's finds are confirmed",
                humantime::format_duration(interval)
            ),
        ));
    }
    Ok(DiscoveryConfig {
        enabled,
        root,
        exclude,
        max_nodes,
        interval,
        settle,
    })
}

pub(super) fn validate_four_letter_words(
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
    let timeout = bounded_duration(
        &format!("{key}.timeout"),
        raw.timeout.as_deref(),
        DEFAULT_FOURLW_TIMEOUT,
        &Bounds {
            min: Duration::from_millis(10),
            max: Duration::from_secs(60),
            says: "must be between 10ms and 60s",
        },
    )?;
    let min_interval = parse_duration(
        &format!("{key}.min_interval"),
        raw.min_interval.as_deref(),
        DEFAULT_FOURLW_MIN_INTERVAL,
    )?;
    if let Some(url) = &raw.admin_url
        && !url.starts_with("http://")
        && !url.starts_with("https://")
    {
        return Err(ConfigError::new(
            format!("{key}.admin_url"),
            format!(
                "`{url}` must be an http:// or https:// URL such as \"http://{{host}}:8080/commands\""
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
        tls: None,
    })
}

/// Accepts `host:port`, `[v6]:port` and bare `host` (port 2181, as ZooKeeper's
/// own connect-string parser does).
pub(super) fn validate_server(key: &str, s: &str) -> Result<String, ConfigError> {
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

pub(super) fn validate_auth(key: &str, a: RawAuth) -> Result<Auth, ConfigError> {
    let scheme = match (
        a.scheme.as_deref().unwrap_or("digest"),
        a.mechanism.as_deref(),
    ) {
        ("digest", None) => AuthScheme::Digest,
        ("digest", Some(_)) => {
            return Err(ConfigError::new(
                format!("{key}.mechanism"),
                "applies to scheme = \"sasl\" only",
            ));
        }
        ("sasl", None | Some("DIGEST-MD5")) => AuthScheme::SaslDigestMd5,
        ("sasl", Some("GSSAPI")) => {
            return kerberos::validate(key, a, kerberos::BUILT_WITH_KERBEROS).map(Auth::Kerberos);
        }
        ("sasl", Some(other)) => {
            return Err(ConfigError::new(
                format!("{key}.mechanism"),
                format!("`{other}` is not supported; \"DIGEST-MD5\" or \"GSSAPI\""),
            ));
        }
        (other, _) => {
            return Err(ConfigError::new(
                format!("{key}.scheme"),
                format!("`{other}` is not supported; \"digest\" or \"sasl\""),
            ));
        }
    };
    if let Some(k) = kerberos::gssapi_keys(&a).first() {
        return Err(ConfigError::new(
            format!("{key}.{k}"),
            "applies to mechanism = \"GSSAPI\" only",
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
                format!(
                    "{} credentials from {origin} must have the form user:password",
                    scheme.label()
                ),
            ));
        }
    }
    Ok(Auth::Password(PasswordAuth {
        scheme,
        credentials,
        origin,
    }))
}

/// `pattern` without the paths of `exclude` (the tree's `exclude` key).
pub(super) fn with_exclude(
    tkey: &str,
    pattern: crate::model::tree::TreePattern,
    exclude: Option<&Vec<String>>,
) -> Result<crate::model::tree::TreePattern, ConfigError> {
    match exclude {
        None => Ok(pattern),
        Some(globs) => pattern
            .excluding(globs)
            .map_err(|(i, m)| ConfigError::new(format!("{tkey}.exclude[{i}]"), m)),
    }
}
