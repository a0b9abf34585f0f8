//! `check-config`'s account of the effective configuration: everything a
//! start would run with, defaults filled in and every `--system` expanded
//! into the trees it watches, as TOML a configuration file could hold
//! (loading it gives the same configuration, a test holds it to that).
//! Secrets are masked: inline credentials print as `<redacted>`, files are
//! named, never read out.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::alerting::{AlertingConfig, AlertmanagerTarget};
use super::kerberos::TicketSource;
use super::{
    Auth, AuthScheme, ClusterConfig, Config, ConsInterval, DiscoveryConfig, ElectionConfig,
    FourLetterWordsConfig, GhostCheckConfig, GroupConfig, LockConfig, WatchMode, WebConfig,
};
use crate::model::election_tree::Style;

fn d(t: Duration) -> String {
    q(&humantime::format_duration(t).to_string())
}

/// `s` as a TOML basic string.
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn p(path: &Path) -> String {
    q(&path.display().to_string())
}

/// A TOML array of strings.
fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.into_iter().map(q).collect();
    format!("[{}]", quoted.join(", "))
}

/// The effective configuration as TOML.
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

/// One address as a string, several as a list: as the file takes them.
fn listen(addrs: &[super::listen::ListenAddress]) -> String {
    let quoted: Vec<String> = addrs.iter().map(|a| q(&a.to_string())).collect();
    match quoted.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn web(o: &mut String, w: &WebConfig) {
    let l = &w.limits;
    let _ = writeln!(
        o,
        "[web]\nlisten_address = {}\ntelemetry_path = {}\nenable_lifecycle = {}",
        listen(&w.listen_addresses),
        q(&w.telemetry_path),
        w.enable_lifecycle
    );
    if let Some((path, loaded)) = &w.config_file {
        let _ = writeln!(
            o,
            "config_file = {}  # tls = {}, basic_auth_users = {}, headers = {}",
            p(path),
            loaded.config.tls.is_some(),
            loaded.config.users.len(),
            loaded.config.headers.len()
        );
    }
    let _ = writeln!(
        o,
        "header_timeout = {}\nidle_timeout = {}\nwrite_timeout = {}\nmax_connections = {}",
        d(l.header_timeout),
        d(l.idle_timeout),
        d(l.write_timeout),
        l.max_connections
    );
}

fn cluster(o: &mut String, cl: &ClusterConfig) {
    let _ = writeln!(
        o,
        "\n[[clusters]]\nname = {}\nservers = {}\nchroot = {}",
        q(&cl.name),
        list(cl.servers.iter().map(String::as_str)),
        q(cl.chroot.as_deref().unwrap_or("/"))
    );
    let mode = match cl.watch_mode {
        WatchMode::Auto => "auto",
        WatchMode::Persistent => "persistent",
        WatchMode::Oneshot => "oneshot",
    };
    let l = &cl.limits;
    let _ = writeln!(
        o,
        "session_timeout = {}\nlatency_read_interval = {}\nwatch_mode = {}\n\
         max_elections = {}\nmax_tracked_elections = {}\nattention_window = {}\n\
         max_groups = {}\nmax_locks = {}\ntimeline_size = {}",
        d(cl.session_timeout),
        d(cl.latency_read_interval),
        q(mode),
        l.max_elections,
        l.max_tracked_elections,
        d(l.attention_window),
        l.max_groups,
        l.max_locks,
        cl.timeline_size
    );
    connection(o, cl);
    words(o, &cl.four_letter_words);
    discovery(o, &cl.discovery);
    ghost_check(o, &cl.ghost_check);
    if let Some(probe) = &cl.probe {
        let _ = writeln!(
            o,
            "probe = {{ enabled = true, path = {}, interval = {}, write = {} }}",
            q(&probe.path),
            d(probe.interval),
            probe.write
        );
    }
    for e in &cl.elections {
        election(o, e);
    }
    for g in &cl.groups {
        group(o, g);
    }
    for l in &cl.locks {
        lock(o, l);
    }
}

/// Credentials and TLS: files named, inline secrets masked.
fn connection(o: &mut String, cl: &ClusterConfig) {
    match &cl.auth {
        Some(Auth::Password(a)) => {
            let scheme = match a.scheme {
                AuthScheme::Digest => "digest",
                AuthScheme::SaslDigestMd5 => "sasl",
            };
            let credentials = if a.origin == "credentials" {
                "credentials = \"<redacted>\"".to_owned()
            } else {
                format!("credentials_file = {}", q(&a.origin))
            };
            let _ = writeln!(o, "auth = {{ scheme = {}, {credentials} }}", q(scheme));
        }
        Some(Auth::Kerberos(k)) => {
            let mut parts = vec!["scheme = \"sasl\", mechanism = \"GSSAPI\"".to_owned()];
            let id = &k.identity;
            if let Some(p) = &id.principal {
                parts.push(format!("principal = {}", q(p)));
            }
            match &id.source {
                TicketSource::Keytab(p) => {
                    parts.push(format!("keytab = {}", q(&p.display().to_string())));
                }
                TicketSource::Cache(c) => parts.push(format!("credential_cache = {}", q(c))),
                TicketSource::Environment => {}
            }
            if let Some(p) = &id.krb5_conf {
                parts.push(format!("krb5_conf = {}", q(&p.display().to_string())));
            }
            parts.push(format!("service_name = {}", q(&k.service_name)));
            if let Some(s) = &k.server_name {
                parts.push(format!("server_name = {}", q(s)));
            }
            let _ = writeln!(o, "auth = {{ {} }}", parts.join(", "));
        }
        None => {}
    }
    if let Some(t) = &cl.tls {
        let mut fields = vec![format!("ca_file = {}", p(&t.ca_file))];
        if let Some((cert, key)) = &t.identity_files {
            fields.push(format!("cert_file = {}, key_file = {}", p(cert), p(key)));
        }
        if let Some(name) = &t.server_name {
            fields.push(format!("server_name = {}", q(name)));
        }
        let _ = writeln!(o, "tls = {{ {} }}", fields.join(", "));
    }
}

fn words(o: &mut String, f: &FourLetterWordsConfig) {
    let _ = write!(
        o,
        "four_letter_words = {{ enabled = {}, servers = {}, commands = {}, timeout = {}, min_interval = {}",
        f.enabled,
        list(f.servers.iter().map(String::as_str)),
        list(f.commands.iter().map(|c| c.name())),
        d(f.timeout),
        d(f.min_interval)
    );
    if let Some(url) = &f.admin_url {
        let _ = write!(o, ", admin_url = {}", q(url));
    }
    o.push_str(" }\n");
}

fn discovery(o: &mut String, dc: &DiscoveryConfig) {
    let _ = writeln!(
        o,
        "discovery = {{ enabled = {}, root = {}, exclude = {}, max_nodes = {}, interval = {}, settle = {} }}",
        dc.enabled,
        q(&dc.root),
        list(dc.exclude.iter().map(String::as_str)),
        dc.max_nodes,
        d(dc.interval),
        d(dc.settle)
    );
}

fn ghost_check(o: &mut String, g: &GhostCheckConfig) {
    let pace = match g.cons_interval {
        ConsInterval::Auto => q("auto"),
        ConsInterval::Every(t) => d(t),
    };
    let _ = writeln!(
        o,
        "ghost_check = {{ enabled = {}, cons_interval = {pace}, watches = {} }}",
        g.enabled, g.watches
    );
}

/// `path` without its last segment.
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "",
        Some(cut) => &path[..cut],
    }
}

fn election(o: &mut String, e: &ElectionConfig) {
    let path = e.pattern.as_str();
    let s = &e.spec;
    let _ = writeln!(
        o,
        "[[clusters.elections]]\npath = {}\nidentity = {}",
        q(path),
        q(&s.identity.spec())
    );
    // A sequential election's record sits beside the election node; a
    // node election's siblings beside its node.
    let siblings_of = match &s.style {
        Style::Sequential => {
            let _ = writeln!(o, "style = \"sequential\"");
            parent_of(path)
        }
        Style::Node(n) => {
            let _ = writeln!(o, "style = \"node\"");
            let parent = parent_of(path);
            if let Some(epoch) = &n.epoch {
                let _ = writeln!(o, "epoch = {}", q(&format!("{parent}/{epoch}")));
            }
            if let Some(standbys) = &n.standbys {
                let _ = writeln!(o, "standbys = {}", q(&standbys.registry_of(path)));
            }
            parent
        }
    };
    if let Some(min) = s.min_candidates {
        let _ = writeln!(o, "min_candidates = {min}");
    }
    if let Some((name, identity)) = &s.record {
        let _ = writeln!(
            o,
            "record = {{ path = {}, identity = {} }}",
            q(&format!("{siblings_of}/{name}")),
            q(&identity.spec())
        );
    }
    if let Some(hold) = s.no_master_for {
        let _ = writeln!(o, "no_master_for = {}", d(hold));
    }
    if let Some(slo) = &s.slo {
        let _ = writeln!(
            o,
            "slo = {{ availability = {}, window = {} }}",
            slo.availability,
            d(slo.window)
        );
    }
    if let (Some(l), Some(spec)) = (&e.lease, &s.lease) {
        // Files named, never their content (the DSN may hold a password).
        let key_from = match spec.key {
            crate::model::lease::LeaseKey::Name => "name",
            crate::model::lease::LeaseKey::Path => "path",
            crate::model::lease::LeaseKey::Capture(_) => "capture",
        };
        let _ = writeln!(
            o,
            "lease = {{ dsn_file = {}{}, table = {}, key = {}, holder = {}, lease_until = {}, last_seen = {}, key_from = {}, interval = {}, timeout = {}, max_rows = {}{}, split_brain_for = {}, expired_for = {} }}",
            q(&l.dsn_file.display().to_string()),
            l.password_file
                .as_ref()
                .map(|p| format!(", password_file = {}", q(&p.display().to_string())))
                .unwrap_or_default(),
            q(&l.table),
            q(&l.key),
            q(&l.holder),
            q(&l.lease_until),
            q(&l.last_seen),
            q(key_from),
            d(l.interval),
            d(l.timeout),
            l.max_rows,
            l.time_zone
                .as_ref()
                .map(|t| format!(", time_zone = {}", q(t)))
                .unwrap_or_default(),
            d(spec.split_brain_for),
            d(spec.expired_for),
        );
    }
    exclusions(o, e.pattern.exclusions());
}

fn group(o: &mut String, g: &GroupConfig) {
    let s = &g.spec;
    let _ = writeln!(
        o,
        "[[clusters.groups]]\npath = {}\nmember = {}\nexport_members = {}",
        q(g.pattern.as_str()),
        q(&s.member.spec()),
        s.export_members
    );
    if let Some(min) = s.min_members {
        let _ = writeln!(o, "min_members = {min}");
    }
    if let Some(alive) = &s.alive {
        let _ = writeln!(o, "alive = {}", q(alive));
    }
    exclusions(o, g.pattern.exclusions());
}

fn lock(o: &mut String, l: &LockConfig) {
    let _ = writeln!(o, "[[clusters.locks]]\npath = {}", q(l.pattern.as_str()));
    if let Some(hold) = l.spec.max_hold {
        let _ = writeln!(o, "max_hold = {}", d(hold));
    }
    exclusions(o, l.pattern.exclusions());
}

fn exclusions<'a>(o: &mut String, exclude: impl Iterator<Item = &'a str>) {
    let exclude: Vec<&str> = exclude.collect();
    if !exclude.is_empty() {
        let _ = writeln!(o, "exclude = {}", list(exclude));
    }
}

fn alerting(o: &mut String, a: &AlertingConfig) {
    let targets: Vec<String> = a.alertmanagers.iter().map(target).collect();
    let labels: Vec<String> = a
        .external_labels
        .iter()
        .map(|(k, v)| format!("{} = {}", q(k), q(v)))
        .collect();
    let _ = writeln!(
        o,
        "\n[alerting]\nalertmanagers = [{}]\nresend_interval = {}\nno_master_for = {}\n\
         session_lost_for = {}\nexternal_labels = {{ {} }}\nrunbook_url = {}\nmax_alerts = {}",
        targets.join(", "),
        d(a.resend_interval),
        d(a.no_master_for),
        d(a.session_lost_for),
        labels.join(", "),
        q(&a.runbook_url),
        a.max_alerts
    );
    if let Some(url) = &a.generator_url {
        let _ = writeln!(o, "generator_url = {}", q(url));
    }
    if !a.holds.is_empty() {
        let holds: Vec<String> = a
            .holds
            .iter()
            .map(|(k, h)| format!("{} = {}", k.alertname(), d(*h)))
            .collect();
        let _ = writeln!(o, "holds = {{ {} }}", holds.join(", "));
    }
    if !a.windows.is_empty() {
        let windows: Vec<String> = a
            .windows
            .iter()
            .map(|(k, w)| format!("{} = {}", k.alertname(), d(*w)))
            .collect();
        let _ = writeln!(o, "windows = {{ {} }}", windows.join(", "));
    }
}

fn target(t: &AlertmanagerTarget) -> String {
    let mut fields = vec![
        format!("url = {}", q(&t.url)),
        format!("timeout = {}", d(t.timeout)),
    ];
    if let Some((user, file)) = &t.basic_auth {
        fields.push(format!(
            "basic_auth = {{ username = {}, password_file = {} }}",
            q(user),
            p(file)
        ));
    }
    if let Some(file) = &t.bearer_token_file {
        fields.push(format!("bearer_token_file = {}", p(file)));
    }
    if let Some(file) = &t.ca_file {
        fields.push(format!("ca_file = {}", p(file)));
    }
    format!("{{ {} }}", fields.join(", "))
}
