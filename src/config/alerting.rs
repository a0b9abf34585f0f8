//! `[alerting]`: Alertmanagers the agent pushes its own alerts to, and the
//! thresholds of those alerts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::ConfigError;
use super::raw::{RawAlerting, RawAlertmanager, RawAlertmanagerTable};
use super::validate::{AT_LEAST_100MS, bounded_duration};
use crate::model::alerting::Kind;

/// The labels the agent gives each pushed alert itself: an external label
/// of the same name would be overwritten, so it is refused instead.
const OWN_LABELS: [&str; 4] = ["alertname", "severity", "ensemble", "election"];

/// Where the runbooks are published unless `runbook_url` says otherwise:
/// the same address as the mixin's `_config.runbookURL` (a test holds the
/// two together).
pub const DEFAULT_RUNBOOK_URL: &str =
    "https://github.com/zk-election-exporter/zk-election-exporter/blob/main/docs/runbooks.md";

/// Where and how alerts are pushed.
#[derive(Debug, Clone)]
pub struct AlertingConfig {
    pub alertmanagers: Vec<AlertmanagerTarget>,
    /// Active alerts are sent again this often (Alertmanager expects it).
    pub resend_interval: Duration,
    /// An election without a master this long is alerted.
    pub no_master_for: Duration,
    /// The agent's own session lost this long is alerted.
    pub session_lost_for: Duration,
    /// The `for:` of rules whose mixin `_config` changed it, so the agent
    /// holds those alerts as long as the deployment's rules do.
    pub holds: BTreeMap<Kind, Duration>,
    /// The window of rules that judge one (flapping, epoch regressions)
    /// whose mixin `_config` changed it, so the agent counts within the
    /// same window as the deployment's rules.
    pub windows: BTreeMap<Kind, Duration>,
    /// Added to every alert: set them as Prometheus's
    /// `global.external_labels`, or the two copies are not one alert.
    pub external_labels: BTreeMap<String, String>,
    /// Base of each alert's `generatorURL`.
    pub generator_url: Option<String>,
    /// Where `docs/runbooks.md` is published: each pushed alert links to
    /// `<runbook_url>#<alertname in lower case>`, as the mixin's rules do
    /// (`_config.runbookURL`), so both copies of an alert link alike.
    pub runbook_url: String,
    /// Alerts per cluster at most; more are dropped and counted.
    pub max_alerts: usize,
}

/// One Alertmanager.
#[derive(Clone)]
pub struct AlertmanagerTarget {
    /// As configured, for labels and messages.
    pub url: String,
    /// `host:port` to connect to.
    pub authority: String,
    /// The path `/api/v2/alerts` is appended to.
    pub path: String,
    /// TLS with this CA when the URL is `https://`.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Where that CA came from (`check-config`).
    pub ca_file: Option<PathBuf>,
    pub basic_auth: Option<(String, PathBuf)>,
    pub bearer_token_file: Option<PathBuf>,
    /// Bound on one POST.
    pub timeout: Duration,
}

impl std::fmt::Debug for AlertmanagerTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlertmanagerTarget")
            .field("url", &self.url)
            .field("tls", &self.tls.is_some())
            .field("basic_auth", &self.basic_auth.as_ref().map(|(u, _)| u))
            .field("bearer_token_file", &self.bearer_token_file)
            .finish()
    }
}

fn label_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn validate_alerting(
    raw: Option<RawAlerting>,
) -> Result<Option<AlertingConfig>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let targets = raw.alertmanagers.unwrap_or_default();
    if targets.is_empty() {
        return Err(ConfigError::new(
            "alerting.alertmanagers",
            "is empty: list at least one Alertmanager URL, e.g. [\"http://alertmanager:9093\"], or remove [alerting]",
        ));
    }
    let mut alertmanagers = Vec::new();
    for (i, t) in targets.into_iter().enumerate() {
        alertmanagers.push(target(&format!("alerting.alertmanagers[{i}]"), t)?);
    }
    let resend_interval = bounded_duration(
        "alerting.resend_interval",
        raw.resend_interval.as_deref(),
        Duration::from_secs(30),
        &AT_LEAST_100MS,
    )?;
    let no_master_for = bounded_duration(
        "alerting.no_master_for",
        raw.no_master_for.as_deref(),
        Duration::from_secs(5),
        &AT_LEAST_100MS,
    )?;
    let session_lost_for = bounded_duration(
        "alerting.session_lost_for",
        raw.session_lost_for.as_deref(),
        Duration::from_secs(30),
        &AT_LEAST_100MS,
    )?;
    let holds = rule_holds(raw.holds.unwrap_or_default())?;
    let windows = rule_windows(raw.windows.unwrap_or_default())?;
    let external_labels = raw.external_labels.unwrap_or_default();
    for name in external_labels.keys() {
        if !label_name_ok(name) || OWN_LABELS.contains(&name.as_str()) {
            return Err(ConfigError::new(
                format!("alerting.external_labels.{name}"),
                "is not a label name the agent may add (letters, digits, `_`; not alertname, severity, ensemble or election, which the agent sets)",
            ));
        }
    }
    for (key, url) in [
        ("alerting.generator_url", &raw.generator_url),
        ("alerting.runbook_url", &raw.runbook_url),
    ] {
        if let Some(url) = url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError::new(
                key,
                format!("`{url}` is not an http:// or https:// URL"),
            ));
        }
    }
    Ok(Some(AlertingConfig {
        alertmanagers,
        resend_interval,
        no_master_for,
        session_lost_for,
        holds,
        windows,
        external_labels,
        generator_url: raw.generator_url,
        runbook_url: raw
            .runbook_url
            .unwrap_or_else(|| DEFAULT_RUNBOOK_URL.to_owned()),
        max_alerts: raw.max_alerts.unwrap_or(1000).max(1),
    }))
}

/// `holds`: alert name to its rule's `for:`. Only alerts whose hold is
/// the rule's own are named here; the others have their key already, and a
/// second one could only disagree with it.
fn rule_holds(raw: BTreeMap<String, String>) -> Result<BTreeMap<Kind, Duration>, ConfigError> {
    let mut holds = BTreeMap::new();
    for (name, value) in raw {
        let key = format!("alerting.holds.{name}");
        let Some(kind) = Kind::ALL.into_iter().find(|k| k.alertname() == name) else {
            let names: Vec<&str> = Kind::ALL
                .into_iter()
                .filter(|k| k.entry().hold.is_some() && own_key(*k).is_none())
                .map(Kind::alertname)
                .collect();
            return Err(ConfigError::new(
                key,
                format!(
                    "is not an alert the agent pushes with a `for:` of its rule; these are: {}",
                    names.join(", ")
                ),
            ));
        };
        if let Some(other) = own_key(kind) {
            return Err(ConfigError::new(
                key,
                format!("is set by {other}: remove it here"),
            ));
        }
        if kind.entry().hold.is_none() {
            return Err(ConfigError::new(
                key,
                "judges a window, not a `for:`: its window goes in alerting.windows",
            ));
        }
        let hold = bounded_duration(&key, Some(&value), Duration::ZERO, &AT_LEAST_100MS)?;
        holds.insert(kind, hold);
    }
    Ok(holds)
}

/// `windows`: alert name to its rule's window. A window bounds how long
/// an alert stays after its last evidence, so it is capped like any hold.
fn rule_windows(raw: BTreeMap<String, String>) -> Result<BTreeMap<Kind, Duration>, ConfigError> {
    let mut windows = BTreeMap::new();
    for (name, value) in raw {
        let key = format!("alerting.windows.{name}");
        let Some(kind) = Kind::ALL
            .into_iter()
            .find(|k| k.alertname() == name && k.entry().window.is_some())
        else {
            let names: Vec<&str> = Kind::ALL
                .into_iter()
                .filter(|k| k.entry().window.is_some())
                .map(Kind::alertname)
                .collect();
            return Err(ConfigError::new(
                key,
                format!(
                    "is not an alert the agent pushes that judges a window; these are: {} (a `for:` goes in alerting.holds)",
                    names.join(", ")
                ),
            ));
        };
        let window = bounded_duration(&key, Some(&value), Duration::ZERO, &AT_LEAST_100MS)?;
        windows.insert(kind, window);
    }
    Ok(windows)
}

/// Where an alert's hold is configured when not in `holds`.
fn own_key(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::NoMaster => Some("alerting.no_master_for (or an election set's no_master_for)"),
        Kind::SessionDown => Some("alerting.session_lost_for"),
        Kind::SplitBrain => Some("the election set's lease.split_brain_for"),
        Kind::LeaseExpired => Some("the election set's lease.expired_for"),
        _ => None,
    }
}

fn target(key: &str, raw: RawAlertmanager) -> Result<AlertmanagerTarget, ConfigError> {
    let t = match raw {
        RawAlertmanager::Url(url) => RawAlertmanagerTable {
            url,
            basic_auth: None,
            bearer_token_file: None,
            ca_file: None,
            timeout: None,
        },
        RawAlertmanager::Table(t) => t,
    };
    let url = t.url.trim_end_matches('/').to_owned();
    let (authority, path, https) = split_url(key, &url)?;
    let readable = |k: &str, p: &PathBuf| {
        std::fs::metadata(p).map(|_| ()).map_err(|e| {
            ConfigError::new(
                format!("{key}.{k}"),
                format!("cannot read {}: {e}", p.display()),
            )
        })
    };
    if let Some(b) = &t.basic_auth {
        readable("basic_auth.password_file", &b.password_file)?;
    }
    if let Some(p) = &t.bearer_token_file {
        readable("bearer_token_file", p)?;
    }
    if t.basic_auth.is_some() && t.bearer_token_file.is_some() {
        return Err(ConfigError::new(
            key,
            "set basic_auth or bearer_token_file, not both",
        ));
    }
    let tls = match (https, &t.ca_file) {
        (false, None) => None,
        (false, Some(_)) => {
            return Err(ConfigError::new(
                format!("{key}.ca_file"),
                "applies to https:// URLs only",
            ));
        }
        (true, None) => {
            return Err(ConfigError::new(
                format!("{key}.ca_file"),
                "is required for an https:// Alertmanager (the CA that signed its certificate)",
            ));
        }
        (true, Some(ca)) => Some(client_config(&format!("{key}.ca_file"), ca)?),
    };
    Ok(AlertmanagerTarget {
        url: url.clone(),
        authority,
        path,
        tls,
        ca_file: t.ca_file.clone(),
        basic_auth: t.basic_auth.map(|b| (b.username, b.password_file)),
        bearer_token_file: t.bearer_token_file,
        timeout: bounded_duration(
            &format!("{key}.timeout"),
            t.timeout.as_deref(),
            Duration::from_secs(10),
            &AT_LEAST_100MS,
        )?,
    })
}

/// The `host:port` (the scheme's port when none is given), the path and
/// whether it is https of an Alertmanager's `url`.
fn split_url(key: &str, url: &str) -> Result<(String, String, bool), ConfigError> {
    let (rest, https) = match url.strip_prefix("https://") {
        Some(rest) => (rest, true),
        None => match url.strip_prefix("http://") {
            Some(rest) => (rest, false),
            None => {
                return Err(ConfigError::new(
                    format!("{key}.url"),
                    format!(
                        "`{url}` is not an http:// or https:// URL such as \"http://alertmanager:9093\""
                    ),
                ));
            }
        },
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.url"),
            format!("`{url}` has no host"),
        ));
    }
    let authority = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if https { 443 } else { 80 })
    };
    Ok((authority, path.to_owned(), https))
}

fn client_config(key: &str, ca: &PathBuf) -> Result<Arc<rustls::ClientConfig>, ConfigError> {
    let pem = std::fs::read(ca)
        .map_err(|e| ConfigError::new(key, format!("cannot read {}: {e}", ca.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| ConfigError::new(key, format!("is not PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| ConfigError::new(key, format!("holds an unusable certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(ConfigError::new(key, "holds no PEM certificate"));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| ConfigError::new(key, e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<AlertingConfig>, ConfigError> {
        let raw: super::RawAlerting = toml::from_str(text).unwrap();
        validate_alerting(Some(raw))
    }

    #[test]
    fn urls_defaults_and_mistakes() {
        let c = parse("alertmanagers = [\"http://am1:9093/\", \"http://am2\"]\n")
            .unwrap()
            .unwrap();
        assert_eq!(c.alertmanagers[0].authority, "am1:9093");
        assert_eq!(c.alertmanagers[1].authority, "am2:80");
        assert_eq!(c.alertmanagers[0].path, "");
        assert_eq!(c.resend_interval, Duration::from_secs(30));
        assert_eq!(c.no_master_for, Duration::from_secs(5));
        let prefixed = parse("alertmanagers = [\"http://gw/am\"]\n")
            .unwrap()
            .unwrap();
        assert_eq!(prefixed.alertmanagers[0].path, "/am");
        for (text, key) in [
            ("alertmanagers = []\n", "alerting.alertmanagers"),
            (
                "alertmanagers = [\"am1:9093\"]\n",
                "alerting.alertmanagers[0].url",
            ),
            (
                "alertmanagers = [{ url = \"https://am\" }]\n",
                "alerting.alertmanagers[0].ca_file",
            ),
            (
                "alertmanagers = [\"http://am\"]\nexternal_labels = { \"a-b\" = \"x\" }\n",
                "alerting.external_labels.a-b",
            ),
            (
                "alertmanagers = [\"http://am\"]\nexternal_labels = { ensemble = \"x\" }\n",
                "alerting.external_labels.ensemble",
            ),
            (
                "alertmanagers = [{ url = \"http://am\", bearer_token_file = \"/nonexistent\" }]\n",
                "alerting.alertmanagers[0].bearer_token_file",
            ),
            (
                "alertmanagers = [\"http://am\"]\nno_master_for = \"0s\"\n",
                "alerting.no_master_for",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn holds_name_the_alerts_whose_rule_has_its_own_for() {
        let c = parse(
            "alertmanagers = [\"http://am\"]\n\
             holds = { ZooKeeperElectionDuplicateIdentity = \"15m\", ZooKeeperElectionGhostMaster = \"1m\" }\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.holds.get(&Kind::DuplicateIdentity),
            Some(&Duration::from_secs(900))
        );
        assert_eq!(
            c.holds.get(&Kind::GhostMaster),
            Some(&Duration::from_secs(60))
        );
        assert_eq!(c.holds.get(&Kind::RecordDisagrees), None);
        for (name, says) in [
            ("ZooKeeperElectionNoMaster", "no_master_for"),
            ("ZooKeeperExporterSessionDown", "session_lost_for"),
            ("ZooKeeperElectionSplitBrain", "split_brain_for"),
            ("ZooKeeperElectionMasterFlapping", "alerting.windows"),
            ("ZooKeeperElectionEpochRegression", "alerting.windows"),
            ("ZooKeeperElectionNoMastr", "ZooKeeperElectionGhostMaster"),
        ] {
            let e = parse(&format!(
                "alertmanagers = [\"http://am\"]\nholds = {{ {name} = \"1m\" }}\n"
            ))
            .unwrap_err();
            assert_eq!(e.key, format!("alerting.holds.{name}"));
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
        let e = parse(
            "alertmanagers = [\"http://am\"]\nholds = { ZooKeeperElectionGhostMaster = \"forever\" }\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "alerting.holds.ZooKeeperElectionGhostMaster");
    }

    #[test]
    fn windows_name_the_alerts_that_judge_one() {
        let c = parse(
            "alertmanagers = [\"http://am\"]\n\
             windows = { ZooKeeperElectionMasterFlapping = \"30m\", ZooKeeperElectionEpochRegression = \"1h\" }\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.windows.get(&Kind::MasterFlapping),
            Some(&Duration::from_secs(1800))
        );
        assert_eq!(
            c.windows.get(&Kind::EpochRegression),
            Some(&Duration::from_secs(3600))
        );
        for (name, value, says) in [
            ("ZooKeeperElectionGhostMaster", "1m", "alerting.holds"),
            (
                "ZooKeeperElectionFlapping",
                "1m",
                "ZooKeeperElectionMasterFlapping",
            ),
            ("ZooKeeperElectionMasterFlapping", "0s", "at least"),
            ("ZooKeeperElectionEpochRegression", "400d", "366"),
        ] {
            let e = parse(&format!(
                "alertmanagers = [\"http://am\"]\nwindows = {{ {name} = \"{value}\" }}\n"
            ))
            .unwrap_err();
            assert_eq!(e.key, format!("alerting.windows.{name}"));
            assert!(e.to_string().contains(says), "{name} = {value}: {e}");
        }
    }
}
