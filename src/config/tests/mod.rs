use super::*;
use crate::model::candidate::IdentityMode;
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
            let path =
                std::env::temp_dir().join(format!("zkee-test-{}-{n}.{ext}", std::process::id()));
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
    assert_eq!(c.web.listen_addresses[0].to_string(), "127.0.0.1:9999");
    let p = &c.clusters[0];
    assert_eq!(p.name, "prod");
    assert_eq!(p.connect_string(), "zk1:2181,zk2:2181,[::1]:2182/apps");
    assert_eq!(p.session_timeout, Duration::from_secs(6));
    assert_eq!(p.elections.len(), 2);
    assert!(matches!(p.elections[1].spec.identity, IdentityMode::Data));
    assert!(
        !format!("{c:?}").contains("s3cret"),
        "secrets never in Debug"
    );
}

#[test]
fn precedence_flags_over_env_over_file() {
    let env = [("ZK_EXPORTER_WEB__LISTEN_ADDRESS", "127.0.0.1:1111")];
    assert_eq!(
        load_file(FULL, &env).unwrap().web.listen_addresses[0].port(),
        1111
    );
    let f = file(FULL);
    let o = Overrides {
        config_file: Some(f.path().to_owned()),
        listen_address: vec!["127.0.0.1:2222".into()],
        zk: Some("other:2181".into()),
        elections: vec!["/x/*".into()],
        ..Default::default()
    };
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let c = load(&o, env).unwrap();
    assert_eq!(c.web.listen_addresses.len(), 1);
    assert_eq!(c.web.listen_addresses[0].port(), 2222);
    assert_eq!(c.clusters[0].servers, vec!["other:2181"]);
    assert_eq!(c.clusters[0].elections[0].pattern.as_str(), "/x/*");
}

#[test]
fn quick_start_without_file() {
    let o = Overrides {
        zk: Some("127.0.0.1:2181".into()),
        elections: vec!["/wechat/bots/*".into()],
        cli_env_vars: crate::cli::Cli::env_vars(),
        ..Default::default()
    };
    // The flags' own variables are the command line's, not configuration keys.
    for var in [
        "ZK_EXPORTER_CONFIG",
        "ZK_EXPORTER_ZK",
        "ZK_EXPORTER_ELECTION",
        "ZK_EXPORTER_LOG",
    ] {
        assert!(o.cli_env_vars.iter().any(|v| v == var), "{var}");
    }
    let c = load(&o, [("ZK_EXPORTER_ZK".to_string(), "ignored".to_string())]).unwrap();
    assert_eq!(c.web.listen_addresses.len(), 1);
    assert_eq!(
        c.web.listen_addresses[0].to_string(),
        DEFAULT_LISTEN_ADDRESS
    );
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
        err("[[clusters]\n").contains("invalid") || err("[[clusters]\n").contains("cannot read")
    );
}

#[test]
fn cons_interval_is_auto_unless_set() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let pace = |extra: &str| {
        load_file(&format!("{base}{extra}"), &[]).map(|c| c.clusters[0].ghost_check.cons_interval)
    };
    assert_eq!(pace("").unwrap(), ConsInterval::Auto);
    assert_eq!(
        pace("[clusters.ghost_check]\ncons_interval=\"auto\"").unwrap(),
        ConsInterval::Auto
    );
    assert_eq!(
        pace("[clusters.ghost_check]\ncons_interval=\"2s\"").unwrap(),
        ConsInterval::Every(Duration::from_secs(2))
    );
    let e = pace("[clusters.ghost_check]\ncons_interval=\"often\"").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("clusters[0].ghost_check.cons_interval: `often` is not a duration")
            && e.to_string().ends_with("or \"auto\""),
        "{e}"
    );
    assert_eq!(
        pace("[clusters.ghost_check]\ncons_interval=\"10ms\"")
            .unwrap_err()
            .to_string(),
        "clusters[0].ghost_check.cons_interval: must be at least 100ms"
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
        err(&format!("{base}timeout=\"0s\"")).starts_with("clusters[0].four_letter_words.timeout")
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
    assert_eq!(c.clusters[0].elections.len(), 1);
    // Its Curator locks are locks: a free one is normal, never masterless.
    assert_eq!(c.clusters[0].locks.len(), 1);
    assert!(
        c.clusters[0].elections[0]
            .pattern
            .excludes("/wechat/bots/bot_orphan")
    );
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
    let Some(Auth::Password(auth)) = &c.clusters[0].auth else {
        panic!("a password: {:?}", c.clusters[0].auth);
    };
    assert_eq!(auth.credentials.expose(), "bob:pw");
}

/// A name like `a[N]` in a top-level key or variable name is a name, never
/// an array index to allocate (a configuration library once read it so):
/// refused as an unknown key, or ignored as an unknown variable.
#[test]
fn index_like_names_are_refused_not_allocated() {
    let ok = "[[clusters]]\nservers = [\"127.0.0.1:1\"]\n";
    let e = load_file(&format!("\"a[4444444444]\" = 1\n{ok}"), &[]).unwrap_err();
    assert!(
        e.to_string().contains("unknown field `a[4444444444]`"),
        "{e}"
    );
    // Not a configuration key: ignored (with a warning), never parsed.
    assert!(load_file(ok, &[("ZK_EXPORTER_A[4444444444]", "1")]).is_ok());
    assert!(super::parse_toml(&format!("\"b[99999999999]\" = 2\n{ok}")).is_err());
}

/// Kubernetes service links for a service named `zk-exporter`: ignored; a
/// variable that is a key and invalid is still an error naming it.
#[test]
fn service_link_variables_are_ignored_and_real_keys_still_checked() {
    let ok = "[[clusters]]\nservers = [\"127.0.0.1:1\"]\n";
    let links = [
        ("ZK_EXPORTER_SERVICE_HOST", "10.0.0.1"),
        ("ZK_EXPORTER_SERVICE_PORT", "9141"),
        ("ZK_EXPORTER_PORT", "tcp://10.0.0.1:9141"),
        ("ZK_EXPORTER_PORT_9141_TCP_ADDR", "10.0.0.1"),
        ("ZK_EXPORTER_CLUSTERS__0__NAME", "x"),
    ];
    assert!(load_file(ok, &links).is_ok());
    let c = load_file(ok, &[("ZK_EXPORTER_WEB__IDLE_TIMEOUT", "5s")]).unwrap();
    assert_eq!(c.web.limits.idle_timeout, std::time::Duration::from_secs(5));
    let e = load_file(ok, &[("ZK_EXPORTER_WEB__IDLE_TIMEOUT", "soon")]).unwrap_err();
    assert_eq!(e.key, "web.idle_timeout", "{e}");
}

#[test]
fn telemetry_path_defaults_to_metrics_and_must_be_a_free_plain_path() {
    let base = "[[clusters]]\nservers=[\"a:1\"]\n";
    let c = load_file(base, &[]).unwrap();
    assert_eq!(c.web.telemetry_path, "/metrics");
    let with = |p: &str| load_file(&format!("[web]\ntelemetry_path = \"{p}\"\n{base}"), &[]);
    assert_eq!(
        with("/zk/metrics").unwrap().web.telemetry_path,
        "/zk/metrics"
    );
    for bad in [
        "metrics",
        "/",
        "/ready",
        "/healthz",
        "/-/reload",
        "/api/v1/x",
        "/a b",
        "/m/",
        "//m",
        "/a/../m",
    ] {
        let e = with(bad).unwrap_err().to_string();
        assert!(e.starts_with("web.telemetry_path:"), "{bad}: {e}");
    }
    let env = load_file(base, &[("ZK_EXPORTER_WEB__TELEMETRY_PATH", "/x")]).unwrap();
    assert_eq!(env.web.telemetry_path, "/x");
}

/// A duration the clock arithmetic cannot take is refused at load, naming
/// the key, instead of overflowing at the first connection.
#[test]
fn durations_past_a_year_are_refused() {
    let base = "[[clusters]]\nservers=[\"a:1\"]\n";
    for (section, key) in [
        ("web", "idle_timeout"),
        ("web", "header_timeout"),
        ("web", "write_timeout"),
    ] {
        let e = load_file(
            &format!("[{section}]\n{key} = \"500000000000years\"\n{base}"),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with(&format!("{section}.{key}:")), "{e}");
        assert!(e.contains("at most 366 days"), "{e}");
    }
    let e = load_file(
        "[[clusters]]\nservers=[\"a:1\"]\n[clusters.four_letter_words]\ntimeout = \"99999years\"\n",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("four_letter_words.timeout"), "{e}");
    let ok = load_file(&format!("[web]\nidle_timeout = \"365d\"\n{base}"), &[]).unwrap();
    assert_eq!(
        ok.web.limits.idle_timeout,
        std::time::Duration::from_secs(365 * 86400)
    );
}

/// `POST /-/reload` is off unless the flag, the file or the environment
/// turns it on.
#[test]
fn lifecycle_is_off_unless_asked_for() {
    let base = "[[clusters]]\nservers=[\"a:1\"]\n";
    assert!(!load_file(base, &[]).unwrap().web.enable_lifecycle);
    let on = format!("[web]\nenable_lifecycle = true\n{base}");
    assert!(load_file(&on, &[]).unwrap().web.enable_lifecycle);
    let env = [("ZK_EXPORTER_WEB__ENABLE_LIFECYCLE", "true")];
    assert!(load_file(base, &env).unwrap().web.enable_lifecycle);
    let f = file(base);
    let flag = Overrides {
        config_file: Some(f.path().to_owned()),
        enable_lifecycle: true,
        ..Default::default()
    };
    assert!(
        load(&flag, std::iter::empty())
            .unwrap()
            .web
            .enable_lifecycle
    );
    let e = load_file(&format!("[web]\nenable_lifecycle = \"maybe\"\n{base}"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("enable_lifecycle"), "{e}");
    for reserved in ["/-/healthy", "/-/ready"] {
        let e = load_file(
            &format!("[web]\ntelemetry_path = \"{reserved}\"\n{base}"),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("web.telemetry_path:"), "{reserved}: {e}");
    }
}

/// A reload keeps what did not change and rebuilds what did, secrets
/// included (their `Debug` hides them).
#[test]
fn fingerprints_see_every_change_and_only_changes() {
    let creds = file("");
    let write_creds = |text: &str| std::fs::write(creds.path(), text).unwrap();
    write_creds("bob:pw\n");
    let toml = |trees: &str| {
        format!(
            "[[clusters]]\nservers=[\"a:1\"]\nauth={{credentials_file=\"{}\"}}\n{trees}",
            creds.path().display()
        )
    };
    let one = "[[clusters.elections]]\npath=\"/a/*\"\n";
    let two = "[[clusters.elections]]\npath=\"/a/*\"\n[[clusters.elections]]\npath=\"/b/*\"\nstyle=\"sequential\"\n";
    let first = load_file(&toml(one), &[]).unwrap().clusters.remove(0);
    let again = load_file(&toml(one), &[]).unwrap().clusters.remove(0);
    assert_eq!(
        first.fingerprint(),
        again.fingerprint(),
        "same file, same fingerprint"
    );
    let grown = load_file(&toml(two), &[]).unwrap().clusters.remove(0);
    assert_ne!(first.fingerprint(), grown.fingerprint());
    // The unchanged tree is recognised in the grown cluster.
    assert_eq!(first.tree_ids()[0], grown.tree_ids()[0]);
    assert_ne!(grown.tree_ids()[0], grown.tree_ids()[1]);
    // A rotated password is a change, though nothing visible differs.
    write_creds("bob:new\n");
    let rotated = load_file(&toml(one), &[]).unwrap().clusters.remove(0);
    assert_eq!(format!("{first:?}"), format!("{rotated:?}"));
    assert_ne!(first.fingerprint(), rotated.fingerprint());
}

use super::webfile::tests::pki;

/// A renewed certificate rebuilds the session that uses it on reload, though
/// the configuration text is the same.
#[test]
fn a_renewed_certificate_changes_the_fingerprint() {
    let dir = std::env::temp_dir().join(format!("zkee-fp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (old_ca, new_ca) = (pki::Ca::new(&dir, "old"), pki::Ca::new(&dir, "new"));
    let ca_file = dir.join("ca.pem");
    std::fs::copy(&old_ca.cert_file, &ca_file).unwrap();
    let toml = format!(
        "[[clusters]]\nservers=[\"127.0.0.1:2281\"]\n[clusters.tls]\nca_file=\"{}\"\nserver_name=\"zk\"\n",
        ca_file.display()
    );
    let before = load_file(&toml, &[]).unwrap().clusters.remove(0);
    let same = load_file(&toml, &[]).unwrap().clusters.remove(0);
    assert_eq!(before.fingerprint(), same.fingerprint());
    std::fs::copy(&new_ca.cert_file, &ca_file).unwrap();
    let renewed = load_file(&toml, &[]).unwrap().clusters.remove(0);
    std::fs::remove_dir_all(&dir).ok();
    assert_ne!(before.fingerprint(), renewed.fingerprint());
}

#[test]
fn discovery_settle_defaults_to_ten_seconds_or_the_interval_and_never_exceeds_it() {
    let settle = |extra: &str| {
        let text = format!("[[clusters]]\nservers=[\"a:2181\"]\n[clusters.discovery]\n{extra}");
        load_file(&text, &[]).map(|c| c.clusters[0].discovery.settle)
    };
    assert_eq!(settle("").unwrap(), std::time::Duration::from_secs(10));
    assert_eq!(
        settle("interval = \"1s\"").unwrap(),
        std::time::Duration::from_secs(1)
    );
    assert_eq!(
        settle("settle = \"250ms\"").unwrap(),
        std::time::Duration::from_millis(250)
    );
    let e = settle("interval = \"2s\"\nsettle = \"3s\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("discovery.settle") && e.contains("interval"),
        "{e}"
    );
    let e = settle("settle = \"10ms\"").unwrap_err().to_string();
    assert!(e.contains("at least 100ms"), "{e}");
}

mod listen;
mod trees;

#[test]
fn earlier_key_names_are_still_accepted() {
    let base = "[[clusters]]\nservers=[\"a:1\"]\n";
    let now = load_file(
        &format!(
            "{base}latency_read_interval=\"2s\"\n[clusters.ghost_check]\ncons_interval=\"3s\"\n"
        ),
        &[],
    )
    .unwrap();
    let before = load_file(
        &format!(
            "{base}latency_probe_interval=\"2s\"\n[clusters.diagnostics]\ncons_interval=\"3s\"\n"
        ),
        &[],
    )
    .unwrap();
    assert_eq!(format!("{now:?}"), format!("{before:?}"));
    assert_eq!(
        now.clusters[0].latency_read_interval,
        Duration::from_secs(2)
    );
    let both = format!("{base}latency_read_interval=\"2s\"\nlatency_probe_interval=\"2s\"\n");
    assert!(
        load_file(&both, &[]).is_err(),
        "a key and its earlier name together"
    );
}

mod summary;
