//! `check-config`'s account of the effective configuration: what a start
//! would run with, TOML-shaped, secrets masked (credentials are named by
//! where they came from, never shown).

use std::fmt::Write as _;
use std::time::Duration;

use super::alerting::AlertingConfig;
use super::{AuthScheme, ClusterConfig, Config, WatchMode, WebConfig};

fn d(t: Duration) -> String {
    humantime::format_duration(t).to_string()
}

/// The effective configuration as text.
pub fn summary(c: &Config) -> String {
    let mut o = String::new();
    web(&mut o, &c.web);
    for cl in &c.clusters {
        cluster(&mut o, cl);
    }
    if let Some(a) = &c.alerting {
        alerting(&mut o, a);
    }
    o
}

fn web(o: &mut String, w: &WebConfig) {
    let _ = writeln!(
        o,
        "[web]\nlisten_address = \"{}\"\ntelemetry_path = \"{}\"",
        w.listen_address, w.telemetry_path
    );
    if let Some((path, loaded)) = &w.config_file {
        let _ = writeln!(
            o,
            "config_file = \"{}\"  # tls = {}, basic_auth_users = {}, headers = {}",
            path.display(),
            loaded.config.tls.is_some(),
            loaded.config.users.len(),
            loaded.config.headers.len()
        );
    }
    let l = &w.limits;
    let _ = writeln!(
        o,
        "header_timeout = \"{}\"\nidle_timeout = \"{}\"\nwrite_timeout = \"{}\"\nmax_connections = {}",
        d(l.header_timeout),
        d(l.idle_timeout),
        d(l.write_timeout),
        l.max_connections
    );
}

fn cluster(o: &mut String, cl: &ClusterConfig) {
    let _ = writeln!(
        o,
        "\n[[clusters]]\nname = \"{}\"\nservers = {:?}",
        cl.name, cl.servers
    );
    if let Some(chroot) = &cl.chroot {
        let _ = writeln!(o, "chroot = \"{chroot}\"");
    }
    let mode = match cl.watch_mode {
        WatchMode::Auto => "auto",
        WatchMode::Persistent => "persistent",
        WatchMode::Oneshot => "oneshot",
    };
    let _ = writeln!(
        o,
        "session_timeout = \"{}\"\nwatch_mode = \"{mode}\"",
        d(cl.session_timeout)
    );
    if let Some(a) = &cl.auth {
        let scheme = match a.scheme {
            AuthScheme::Digest => "digest",
            AuthScheme::SaslDigestMd5 => "sasl",
        };
        let _ = writeln!(
            o,
            "auth = {{ scheme = \"{scheme}\", credentials = \"<redacted>\" }}  # from {}",
            a.origin
        );
    }
    if let Some(t) = &cl.tls {
        let _ = writeln!(
            o,
            "tls = {{ ca_file = \"{}\", server_name = {:?} }}  # {t:?}",
            t.ca_file.display(),
            t.server_name
        );
    }
    let f = &cl.four_letter_words;
    let words: Vec<&str> = f.commands.iter().map(|c| c.name()).collect();
    let _ = writeln!(
        o,
        "four_letter_words = {{ enabled = {}, commands = {words:?}, timeout = \"{}\" }}",
        f.enabled,
        d(f.timeout)
    );
    let _ = writeln!(
        o,
        "max_elections = {}\ntimeline_size = {}",
        cl.limits.max_elections, cl.timeline_size
    );
    let trees = cl
        .elections
        .iter()
        .map(|e| ("elections", &e.pattern))
        .chain(cl.groups.iter().map(|g| ("groups", &g.pattern)))
        .chain(cl.locks.iter().map(|l| ("locks", &l.pattern)));
    for (table, pattern) in trees {
        let _ = writeln!(o, "[[clusters.{table}]]\npath = \"{}\"", pattern.as_str());
        let exclude: Vec<&str> = pattern.exclusions().collect();
        if !exclude.is_empty() {
            let _ = writeln!(o, "exclude = {exclude:?}");
        }
    }
}

fn alerting(o: &mut String, a: &AlertingConfig) {
    let urls: Vec<&str> = a.alertmanagers.iter().map(|t| t.url.as_str()).collect();
    let _ = writeln!(
        o,
        "\n[alerting]\nalertmanagers = {urls:?}\nno_master_for = \"{}\"\nresend_interval = \"{}\"\nsession_lost_for = \"{}\"\nexternal_labels = {:?}\nrunbook_url = \"{}\"",
        d(a.no_master_for),
        d(a.resend_interval),
        d(a.session_lost_for),
        a.external_labels,
        a.runbook_url
    );
}
