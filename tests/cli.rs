//! The binary as a user runs it: configuration errors, quick-start flags,
//! environment overrides, and the `simulate` load generator.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_zk-election-exporter");

/// Runs the binary on a config file; returns exit code and stderr.
fn run_with_config(toml: &str) -> (Option<i32>, String) {
    let dir = temp_dir("cli");
    let file = dir.join("bad.toml");
    std::fs::write(&file, toml).unwrap();
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&file)
        .env_remove("ZK_EXPORTER_LOG")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What a build without the `kerberos` feature says of any GSSAPI cluster,
/// before the settings a Kerberos build would check.
const KERBEROS_MISSING: &str =
    "clusters[0].auth.mechanism: this build has no Kerberos (GSSAPI) support";

#[test]
fn invalid_configuration_exits_2_with_one_line_naming_the_key() {
    let ok = "[[clusters]]\nservers = [\"127.0.0.1:1\"]\n";
    let cases = [
        (
            "[[clusters]]\nservers = [\"a:1\"]\nsesion_timeout = \"1s\"\n",
            "unknown field `sesion_timeout`",
        ),
        (
            &format!("{ok}session_timeout = \"ten seconds\"\n"),
            "clusters[0].session_timeout",
        ),
        (
            "[[clusters]]\nservers = []\n",
            "clusters[0].servers: is empty",
        ),
        (
            &format!("{ok}[[clusters.elections]]\npath = \"/bots/**\"\n"),
            "clusters[0].elections[0].path",
        ),
        (
            &format!("{ok}[[clusters.elections]]\npath = \"/b/*\"\nidentity = \"regex:([a-z\"\n"),
            "clusters[0].elections[0].identity: invalid regex",
        ),
        (
            &format!("{ok}auth = {{ credentials_file = \"/nonexistent/secret\" }}\n"),
            "clusters[0].auth.credentials_file: cannot read /nonexistent/secret",
        ),
        (
            "[web]\nlisten_address = \"localhost\"\n",
            "web.listen_address",
        ),
        ("", "clusters: no ZooKeeper cluster configured"),
        ("[[clusters]\n", "invalid"),
        (
            &format!("[web]\nconfig_file = \"/nonexistent/web.yml\"\n{ok}"),
            "web.config_file: web config /nonexistent/web.yml: cannot read",
        ),
        (
            &format!("[web]\nidle_timeout = \"never\"\n{ok}"),
            "web.idle_timeout",
        ),
        (
            &format!("[web]\nmax_connections = 1\n{ok}"),
            "web.max_connections: must be at least 2",
        ),
        (
            &format!("{ok}tls = {{ cert_file = \"/a\" }}\n"),
            "clusters[0].tls.ca_file: is required",
        ),
        (
            &format!("{ok}tls = {{ ca_file = \"/nonexistent/ca.pem\" }}\n"),
            "clusters[0].tls.ca_file: cannot read /nonexistent/ca.pem",
        ),
        (
            &format!(
                "{ok}auth = {{ scheme = \"sasl\", mechanism = \"GSSAPI\", credentials = \"a:b\" }}\n"
            ),
            if cfg!(feature = "kerberos") {
                "clusters[0].auth: GSSAPI takes no password"
            } else {
                KERBEROS_MISSING
            },
        ),
        (
            &format!(
                "{ok}auth = {{ scheme = \"sasl\", mechanism = \"GSSAPI\", keytab = \"/nonexistent/agent.keytab\", principal = \"a@R\" }}\n"
            ),
            if cfg!(feature = "kerberos") {
                "clusters[0].auth.keytab: cannot read /nonexistent/agent.keytab"
            } else {
                KERBEROS_MISSING
            },
        ),
        (
            &format!("{ok}auth = {{ scheme = \"sasl\", mechanism = \"PLAIN\" }}\n"),
            "clusters[0].auth.mechanism: `PLAIN` is not supported",
        ),
        (
            &format!("{ok}auth = {{ credentials = \"a:b\", principal = \"a@R\" }}\n"),
            "clusters[0].auth.principal: applies to mechanism = \"GSSAPI\" only",
        ),
        (
            &format!(
                "{ok}four_letter_words = {{ admin_url = \"https://{{host}}:8080/commands\" }}\n"
            ),
            "clusters[0].four_letter_words.admin_url: an https:// AdminServer needs [clusters.tls]",
        ),
    ];
    for (toml, expected) in cases {
        let (code, stderr) = run_with_config(toml);
        assert_eq!(code, Some(2), "exit code for {toml:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{toml:?} should say {expected:?}, said {stderr:?}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr:?}");
    }
}

#[test]
fn secrets_never_appear_in_errors() {
    let (code, stderr) = run_with_config(
        "[[clusters]]\nservers = [\"a:1\"]\nauth = { credentials = \"hunter2-no-colon\" }\n",
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("user:password"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn a_missing_config_file_is_a_config_error() {
    let out = Command::new(BIN)
        .args(["--config", "/nonexistent/zk.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/zk.toml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_start_flags_watch_an_election_without_a_file() {
    let zk = shared_server();
    let base = unique_path("quick");
    let election = format!("{base}/bot_1");
    let c = client(&zk.address()).await;
    mkdir(&c, &election).await;
    let node = candidate(&c, &election, "instance_", b"phone-1").await;
    let port = free_port();
    let args = args(&[
        "--zk",
        &zk.address(),
        "--election",
        &format!("{base}/*"),
        "--web.listen-address",
        &format!("127.0.0.1:{port}"),
    ]);
    let exporter = Exporter::spawn(&args, &[], port);
    let labels = [
        ("ensemble", "default"),
        ("election", &*election),
        ("znode", &*node),
        ("identity", "phone-1"),
    ];
    wait_for_async("master via quick start", Duration::from_secs(30), || {
        let m = exporter.metrics()?;
        m.get("zookeeper_election_master", &labels)
            .ok_or(format!("{:?}", m.samples.get("zookeeper_election_master")))
    })
    .await;
    let page = http_get(port, "/").unwrap().1;
    assert!(page.contains("/metrics") && page.contains("/ready"));
    let build = exporter.metrics().unwrap();
    assert_eq!(
        build.get(
            "zookeeper_exporter_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    every_family_is_documented(&exporter.raw_metrics());
}

/// docs/metrics.md names exactly the families the exporter defines itself;
/// families derived from mntr keys (HELP starting `mntr zk_`) are covered by
/// the mntr table, checked by a unit test against the fixtures.
fn every_family_is_documented(exposition: &str) {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
    let from_mntr = mntr_families(exposition);
    let emitted: std::collections::BTreeSet<&str> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| {
            !from_mntr.contains(name) && !from_mntr.contains(name.trim_end_matches("_total"))
        })
        .collect();
    assert!(emitted.len() >= 40, "{emitted:?}");
    for name in &emitted {
        assert!(
            docs.contains(&format!("| `{name}` |")),
            "{name} is missing from docs/metrics.md"
        );
    }
    for row in docs.lines().filter_map(|l| l.strip_prefix("| `zookeeper_")) {
        let name = format!("zookeeper_{}", row.split('`').next().unwrap());
        // Emitted only with [alerting] (tests/alerting.rs checks them), or
        // only where their condition holds (Kerberos: tests/kerberos.rs and tests/kerberos_tickets.rs;
        // tests/metrics_docs.rs checks that some test scraped each).
        if name.starts_with("zookeeper_exporter_alerts_") || row.contains("Conditional:") {
            continue;
        }
        assert!(
            emitted.contains(name.as_str()),
            "docs/metrics.md documents {name}, which is not emitted"
        );
    }
}

#[test]
fn flags_win_over_environment_which_wins_over_the_file() {
    let closed = format!("127.0.0.1:{}", free_port());
    let (file_port, env_port, flag_port) = (free_port(), free_port(), free_port());
    let dir = temp_dir("precedence");
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        format!("[web]\nlisten_address = \"127.0.0.1:{file_port}\"\n[[clusters]]\nservers = [\"{closed}\"]\n"),
    )
    .unwrap();
    let env_addr = format!("127.0.0.1:{env_port}");
    let env = [("ZK_EXPORTER_WEB__LISTEN_ADDRESS", env_addr.as_str())];
    let base = vec!["--config".to_owned(), file.display().to_string()];

    let from_env = Exporter::spawn(&base, &env, env_port);
    assert!(
        http_get(file_port, "/healthz").is_err(),
        "environment beats the file"
    );
    drop(from_env);

    let mut with_flag = base.clone();
    with_flag.extend([
        "--web.listen-address".to_owned(),
        format!("127.0.0.1:{flag_port}"),
    ]);
    let from_flag = Exporter::spawn(&with_flag, &env, flag_port);
    assert!(
        http_get(env_port, "/healthz").is_err(),
        "the flag beats the environment"
    );
    drop(from_flag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_runs_real_elections_and_kills_masters() {
    let zk = shared_server();
    let base = unique_path("simulate");
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let sim = simulate(zk, &base)
        .args([
            "--elections",
            "4",
            "--candidates",
            "3",
            "--kill-rate",
            "4",
            "--duration",
            "120s",
        ])
        .args(["--abandon-ratio", "0", "--session-timeout", "2s"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_async(
        "switches and simulated identities",
        Duration::from_secs(60),
        || {
            let m = exporter.metrics()?;
            let switches: f64 = m
                .series("zookeeper_election_master_changes_total", &[])
                .iter()
                .map(|(_, v)| v)
                .sum();
            let elections = m.series("zookeeper_election_candidates", &[]).len();
            let simulated = m
                .series("zookeeper_election_master", &[])
                .iter()
                .any(|(l, _)| {
                    l.get("identity")
                        .is_some_and(|i| i.starts_with("sim-process-"))
                });
            if switches >= 1.0 && elections == 4 && simulated {
                Ok(())
            } else {
                Err(format!(
                    "{switches} switches, {elections} elections, simulated identity: {simulated}"
                ))
            }
        },
    )
    .await;
    // Ctrl-C (SIGINT) stops the simulation cleanly.
    Command::new("kill")
        .args(["-INT", &sim.id().to_string()])
        .status()
        .unwrap();
    let out = sim.wait_with_output().unwrap();
    assert!(out.status.success(), "simulate exits 0 on SIGINT: {out:?}");
    // The summary tells sessions killed from masterships lost: a killed
    // session was master of at least the election it was picked from.
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = log
        .lines()
        .find(|l| l.starts_with("simulate: stopping;"))
        .unwrap_or_else(|| panic!("no summary in {log}"));
    let numbers: Vec<u64> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (killed, masterships) = (numbers[0], numbers[3]);
    assert!(killed >= 1 && masterships >= killed, "{summary}");
}

#[test]
fn no_four_letter_words_turns_polling_off() {
    let zk = shared_server();
    let port = free_port();
    let args = args(&[
        "--zk",
        &zk.address(),
        "--no-four-letter-words",
        "--web.listen-address",
        &format!("127.0.0.1:{port}"),
    ]);
    let exporter = Exporter::spawn(&args, &[], port);
    wait_for("session connected", Duration::from_secs(30), || {
        let m = exporter.metrics()?;
        let connected = m.get("zookeeper_session_state", &[("state", "connected")]) == Some(1.0);
        if connected {
            Ok(())
        } else {
            Err("not yet".into())
        }
    });
    let m = exporter.metrics().unwrap();
    assert!(m.series("zookeeper_up", &[]).is_empty(), "no member polled");
    assert!(m.series("zookeeper_ensemble_servers", &[]).is_empty());
}

#[test]
fn simulate_rejects_nonsense() {
    let out = Command::new(BIN)
        .args(["simulate", "--zk", "127.0.0.1:1", "--elections", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `simulate --style exclusive`: only the master keeps a node, so every
/// election shows one candidate, and killed masters are replaced by
/// standbys registering again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_exclusive_elections_keep_only_the_master() {
    let zk = shared_server();
    let base = unique_path("exclusive");
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let mut sim = simulate(zk, &base)
        .args([
            "--style",
            "exclusive",
            "--elections",
            "2",
            "--candidates",
            "3",
        ])
        .args([
            "--kill-rate",
            "2",
            "--abandon-ratio",
            "0",
            "--duration",
            "60s",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    exporter
        .until(
            "one candidate each, and switches",
            Duration::from_secs(40),
            |m| {
                let candidates = m.series("zookeeper_election_candidates", &[]);
                let switches: f64 = m
                    .series("zookeeper_election_master_changes_total", &[])
                    .iter()
                    .map(|(_, v)| v)
                    .sum();
                candidates.len() == 2
                    && candidates.iter().all(|(_, v)| *v == 1.0)
                    && switches >= 2.0
            },
        )
        .await;
    let _ = sim.kill();
    let _ = sim.wait();
}

#[test]
fn service_link_variables_cannot_stop_the_agent() {
    let exporter = Exporter::start_with(
        "[[clusters]]\nservers = [\"127.0.0.1:1\"]\n",
        &[],
        &[
            ("ZK_EXPORTER_SERVICE_HOST", "10.0.0.1"),
            ("ZK_EXPORTER_SERVICE_PORT", "9141"),
            ("ZK_EXPORTER_PORT", "tcp://10.0.0.1:9141"),
            ("ZK_EXPORTER_PORT_9141_TCP_ADDR", "10.0.0.1"),
            ("ZK_EXPORTER_PORT_9141_TCP_PROTO", "tcp"),
        ],
    );
    let (status, _) = http_get(exporter.port, "/healthz").unwrap();
    assert_eq!(status, 200, "running");
    let log = exporter.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("ignoring ZK_EXPORTER_"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {log}");
    assert!(
        warnings[0].contains("ZK_EXPORTER_SERVICE_HOST")
            && warnings[0].contains("ZK_EXPORTER_PORT_9141_TCP_ADDR")
    );
    assert!(!log.contains("10.0.0.1"), "values are never logged: {log}");
}

/// `check-config` with `args`; exit code, stdout, stderr.
fn check_config(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .arg("check-config")
        .args(args)
        .env_remove("ZK_EXPORTER_LOG")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn check_config_validates_what_a_start_would_and_masks_secrets() {
    let dir = temp_dir("check-config");
    let credentials = dir.join("zk-credentials");
    std::fs::write(&credentials, "agent:hunter2-secret\n").unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        format!(
            "[[clusters]]\nname = \"prod\"\nservers = [\"zk1:2181\"]\nauth = {{ credentials_file = \"{}\" }}\n[[clusters.elections]]\npath = \"/bots/*\"\n",
            credentials.display()
        ),
    )
    .unwrap();
    let (code, out, err) = check_config(&["--config", good.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("name = \"prod\"") && out.contains("path = \"/bots/*\""),
        "{out}"
    );
    assert!(out.contains("configuration is valid"));
    assert!(
        !out.contains("hunter2") && !err.contains("hunter2"),
        "secrets masked: {out}"
    );
    // Flags are checked with the file, as at a start.
    let (code, _, err) = check_config(&[
        "--config",
        good.to_str().unwrap(),
        "--web.listen-address",
        "nowhere",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("web.listen_address"), "{err}");
    // A file naming a missing credentials file.
    let missing = dir.join("missing.toml");
    std::fs::write(
        &missing,
        "[[clusters]]\nservers = [\"zk1:2181\"]\nauth = { credentials_file = \"/nonexistent/zk\" }\n",
    )
    .unwrap();
    let (code, out, err) = check_config(&["--config", missing.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("clusters[0].auth.credentials_file: cannot read /nonexistent/zk"),
        "{err}"
    );
    // A broken file.
    let broken = dir.join("broken.toml");
    std::fs::write(&broken, "[[clusters]\n").unwrap();
    assert_eq!(
        check_config(&["--config", broken.to_str().unwrap()]).0,
        Some(2)
    );
}

/// Prometheus-convention flags: `--web.telemetry-path` moves the metrics
/// (and the status page's link), `--version` prints what
/// `zookeeper_exporter_build_info` carries.
#[test]
fn telemetry_path_and_version_follow_prometheus_conventions() {
    let port = free_port();
    let exporter = Exporter::spawn(
        &offline_args(port, &["--web.telemetry-path", "/zk/metrics"]),
        &[],
        port,
    );
    let (status, body) = http_get(port, "/zk/metrics").unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(http_get(port, "/metrics").unwrap().0, 404);
    assert!(
        http_get(port, "/")
            .unwrap()
            .1
            .contains("href=\"/zk/metrics\"")
    );
    let info = body
        .lines()
        .find(|l| l.starts_with("zookeeper_exporter_build_info{"))
        .unwrap_or_else(|| panic!("no build_info in {body}"));
    let label = |name: &str| -> String {
        let start = info
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("{name}: {info}"));
        let rest = &info[start + name.len() + 2..];
        rest[..rest.find('"').unwrap()].to_owned()
    };
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let version = String::from_utf8(out.stdout).unwrap();
    assert!(
        version.starts_with(&format!(
            "zk-election-exporter, version {} (revision: {})\n",
            env!("CARGO_PKG_VERSION"),
            label("revision")
        )),
        "{version}\n{info}"
    );
    let date = label("build_date");
    assert!(
        version.contains(&format!("build date: {date}\n")),
        "{version}"
    );
    assert!(
        date.len() == 20 && date.ends_with('Z') && date.as_bytes()[10] == b'T',
        "{date}"
    );
    assert!(version.contains(&format!("rustc version: {}", label("rustc_version"))));
    drop(exporter);

    let (code, _, err) = check_config(&["--zk", "a:1", "--web.telemetry-path", "/healthz"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("web.telemetry_path") && err.contains("/healthz"),
        "{err}"
    );
}
