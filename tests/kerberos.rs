//! Kerberos for real: a realm of the test's own on Debian's MIT KDC, a
//! ZooKeeper 3.8 that authenticates with Kerberos and refuses every other
//! session (`enforce.auth.enabled`, `enforce.auth.schemes=sasl`), Kafka's
//! and HBase's layouts written by an application that authenticates with
//! its own ticket (kazoo, SASL GSSAPI) and readable only by `sasl:` ACLs.
//! The agent authenticates from a keytab, reads them and follows a switch;
//! without Kerberos, or as a principal the ACLs do not name, it is refused
//! and says why; each Kerberos failure is one line on /ready and in the
//! log, counted and retried; a reload may not change its Kerberos
//! identity. Tickets over time are in tests/kerberos_tickets.rs.

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::kdc::{KazooWriter, shared_realm};
use common::kerberos_agent::*;
use common::*;

const T: Duration = Duration::from_secs(60);

/// The agent authenticates from its keytab (the servers' principal host
/// taken from the address it dials), reads Kafka's and HBase's trees that
/// only its principal may read, follows a controller switch, and runs the
/// failover probe and the ghost check on the same ensemble.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reads_kafka_and_hbase_behind_sasl_acls_and_follows_a_switch() {
    let (kdc, zk) = shared_realm();
    let app_keytab = kdc.principal("kafka-a", "10h");
    let agent_keytab = kdc.principal("agent-a", "10h");
    let (app, agent) = (principal("kafka-a"), principal("agent-a"));
    let acl = acl(&app, &agent);
    let root = unique_path("krb");
    let (kafka, hbase) = (format!("{root}-kafka"), format!("{root}-hbase"));
    let mut w = KazooWriter::connect(kdc, zk.port, &app_keytab);
    kafka_layout(&mut w, &kafka, &acl);
    hbase_layout(&mut w, &hbase, &acl);
    let extra = format!(
        "{}[clusters.probe]\npath = \"{root}-probe\"\ninterval = \"500ms\"\n",
        systems(&kafka, &hbase)
    );
    let exporter = Exporter::start(&config(
        &format!("localhost:{}", zk.port),
        &keytab_auth(kdc, "agent-a", &agent_keytab),
        &extra,
    ));
    let controller = format!("{kafka}/controller");
    let hmaster = format!("{hbase}/master");
    let m = exporter
        .until("both systems read through Kerberos", T, |m| {
            master(m, &controller).as_deref() == Some("1")
                && master(m, &hmaster).as_deref() == Some("m1.example.com:16000")
                // The brokers are another tree, synced on its own.
                && m.get(
                    "zookeeper_election_candidates",
                    &[("election", &*controller)],
                )
                .is_some()
                && m.get(
                    "zookeeper_probe_failover_seconds_count",
                    &[("ensemble", "secure")],
                )
                .is_some_and(|n| n >= 1.0)
        })
        .await;
    assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 1.0);
    let expiry = get(
        &m,
        "zookeeper_session_kerberos_ticket_expiry_timestamp_seconds",
    );
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        expiry > now + 3600.0 && expiry < now + 10.0 * 3600.0 + 60.0,
        "a ten-hour ticket: {expiry} at {now}"
    );
    assert_eq!(
        m.get(
            "zookeeper_election_candidates",
            &[("election", &*controller)]
        ),
        Some(2.0),
        "both brokers, read under the ACL"
    );
    assert_eq!(get(&m, "zookeeper_probe_errors_total"), 0.0);
    // The ghost check judged the controller's owner from `cons`.
    let _ = exporter
        .until("the ghost check's verdict on the controller", T, |m| {
            m.get(
                "zookeeper_election_master_session_connected",
                &[("election", &*controller)],
            ) == Some(1.0)
        })
        .await;
    // The controller moves to broker 2.
    hand_over(&mut w, &controller, 2, &acl);
    let m = exporter
        .until("the switch to broker 2", T, |m| {
            master(m, &controller).as_deref() == Some("2")
        })
        .await;
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &[("election", &*controller)]
        ),
        Some(1.0)
    );
    for r in ["wrong_keytab", "no_ticket", "clock_skew", "unknown_service"] {
        assert_eq!(kerberos_errors(&m, r), 0.0, "{r}");
    }
    assert_eq!(get(&m, "zookeeper_session_connect_failures_total"), 0.0);
}

/// Without credentials the server refuses the session, and a principal
/// the ACLs do not name is connected but may not read: both explained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kerberos_or_outside_the_acl_the_agent_says_why() {
    let (kdc, zk) = shared_realm();
    let app_keytab = kdc.principal("kafka-c", "10h");
    let stranger_keytab = kdc.principal("stranger-c", "10h");
    let (app, agent) = (principal("kafka-c"), principal("agent-c"));
    let kafka = format!("{}-kafka", unique_path("krbacl"));
    let mut w = KazooWriter::connect(kdc, zk.port, &app_keytab);
    kafka_layout(&mut w, &kafka, &acl(&app, &agent));
    let plain = Exporter::start(&format!(
        "[[clusters]]\nname = \"secure\"\nservers = [\"{}\"]\nfour_letter_words = {{ enabled = false }}\n{}",
        zk.address(),
        systems(&kafka, &format!("{kafka}-none"))
    ));
    let reason = plain.until_not_ready("requires authentication", T).await;
    assert!(
        reason.contains("enforce.auth.enabled") && reason.contains("[clusters.auth]"),
        "{reason}"
    );
    let stranger = Exporter::start(&config(
        &format!("localhost:{}", zk.port),
        &keytab_auth(kdc, "stranger-c", &stranger_keytab),
        &format!(
            "four_letter_words = {{ enabled = false }}\n{}",
            systems(&kafka, &format!("{kafka}-none"))
        ),
    ));
    let reason = stranger.until_not_ready("not authorized to read", T).await;
    assert!(
        reason.contains(&principal("stranger-c")) && reason.contains("SASL GSSAPI"),
        "{reason}"
    );
    drop(w);
}

/// The path of libfaketime (Debian's faketime), which shifts the agent's
/// clock only.
fn libfaketime() -> String {
    let found = glob::glob("/usr/lib/*/faketime/libfaketime.so.1")
        .unwrap()
        .filter_map(Result::ok)
        .next()
        .expect("libfaketime (Debian's faketime) must be installed");
    found.display().to_string()
}

/// Each way a ticket cannot be had: one line on /ready naming what to do,
/// the same line once in the log, counted by reason, retried, and the
/// process serving all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kerberos_failure_is_one_line_counted_and_retried() {
    let (kdc, zk) = shared_realm();
    let stale = kdc.principal("agent-d", "10h");
    let fresh = kdc.keytab("agent-d");
    let gone = kdc.principal("gone-d", "10h");
    kdc.delete("gone-d");
    let other = kdc.principal("other-d", "10h");
    let dead_kdc = kdc.unreachable_conf();
    let no_timesync = kdc.conf_with("no-timesync", " kdc_timesync = 0\n");
    let faketime = libfaketime();
    let conf = kdc.krb5_conf.display().to_string();
    let server = format!("localhost:{}", zk.port);
    let no_cache = format!("FILE:{}/nothing-here.ccache", kdc.dir.display());
    struct Case {
        reason: &'static str,
        auth: String,
        env: Vec<(&'static str, String)>,
        says: &'static str,
    }
    let cases = [
        Case {
            reason: "wrong_keytab",
            auth: keytab_auth(kdc, "agent-d", &stale),
            env: vec![],
            says: "the keytab is stale",
        },
        Case {
            reason: "unknown_principal",
            auth: keytab_auth(kdc, "gone-d", &gone),
            env: vec![],
            says: "the KDC does not know gone-d@ZKEE.TEST",
        },
        Case {
            reason: "no_key_in_keytab",
            auth: keytab_auth(kdc, "agent-d", &other),
            env: vec![],
            says: "holds no key for agent-d@ZKEE.TEST",
        },
        Case {
            reason: "kdc_unreachable",
            auth: format!(
                "principal = \"{}\"\nkeytab = \"{}\"\nkrb5_conf = \"{}\"\n",
                principal("agent-d"),
                fresh.display(),
                dead_kdc.display()
            ),
            env: vec![],
            says: "no KDC answered",
        },
        Case {
            reason: "no_ticket",
            auth: format!("credential_cache = \"{no_cache}\"\nkrb5_conf = \"{conf}\"\n"),
            env: vec![],
            says: "no ticket for the cache's default principal",
        },
        // MIT corrects a client's skew against the KDC by itself
        // (kdc_timesync, on by default); where that is off, as in Java's
        // and Heimdal's clients, the KDC refuses the skewed request.
        Case {
            reason: "clock_skew",
            auth: format!(
                "principal = \"{}\"\nkeytab = \"{}\"\nkrb5_conf = \"{}\"\n",
                principal("agent-d"),
                fresh.display(),
                no_timesync.display()
            ),
            env: vec![
                ("LD_PRELOAD", faketime.clone()),
                ("FAKETIME", "+10m".to_owned()),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
            ],
            says: "synchronise the clocks",
        },
        Case {
            reason: "unknown_service",
            auth: format!(
                "{}service_name = \"kafka-zk\"\n",
                keytab_auth(kdc, "agent-d", &fresh)
            ),
            env: vec![],
            says: "the KDC does not know the servers' principal kafka-zk@localhost",
        },
    ];
    for case in &cases {
        let env: Vec<(&str, &str)> = case.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let exporter = Exporter::start_with(
            &config(
                &server,
                &case.auth,
                "four_letter_words = { enabled = false }\n",
            ),
            &[],
            &env,
        );
        let body = exporter.until_not_ready(case.says, T).await;
        let line = body
            .lines()
            .find(|l| l.contains(case.says))
            .unwrap()
            .to_owned();
        assert!(line.contains("Kerberos: "), "{}: {line}", case.reason);
        // Retried with backoff: counted again, logged once.
        let m = exporter
            .until("a retry", T, |m| kerberos_errors(m, case.reason) >= 2.0)
            .await;
        assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 0.0);
        let log = exporter.log();
        let message = line.split(": Kerberos: ").nth(1).unwrap();
        assert_eq!(
            log.lines()
                .filter(|l| l.contains(message) && l.contains("WARN"))
                .count(),
            1,
            "{}: logged once: {log}",
            case.reason
        );
        let status = exporter.terminate();
        assert!(status.success(), "{}: {status}", case.reason);
    }
}

/// The Kerberos identity is set up for the process at start: a reload
/// that changes it is refused whole and says to restart; the session goes
/// on with the identity it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_changes_the_kerberos_identity_is_refused() {
    let (kdc, zk) = shared_realm();
    let first = kdc.principal("agent-f", "10h");
    let second = kdc.principal("agent-g", "10h");
    let dir = temp_dir("krb-reload");
    let file = dir.join("config.toml");
    let port = free_port();
    let write = |name: &str, keytab: &Path| {
        std::fs::write(
            &file,
            format!(
                "[web]\nlisten_address = \"127.0.0.1:{port}\"\n{}",
                config(
                    &format!("localhost:{}", zk.port),
                    &keytab_auth(kdc, name, keytab),
                    "four_letter_words = { enabled = false }\n",
                )
            ),
        )
        .unwrap();
    };
    write("agent-f", &first);
    let exporter = Exporter::spawn(
        &["--config".to_owned(), file.display().to_string()],
        &[],
        port,
    );
    exporter
        .until("a session as agent-f", T, |m| {
            get(m, "zookeeper_session_kerberos_ticket_ok") == 1.0
                && m.get(
                    "zookeeper_session_state",
                    &[("ensemble", "secure"), ("state", "connected")],
                ) == Some(1.0)
        })
        .await;
    let session = session_id(&exporter);
    write("agent-g", &second);
    signal(&exporter.pid().to_string(), "-HUP");
    let m = exporter
        .until("the reload refused", T, |m| {
            m.get("zookeeper_exporter_config_last_reload_successful", &[]) == Some(0.0)
        })
        .await;
    assert!(
        exporter.log().contains("restart the agent to change it"),
        "{}",
        exporter.log()
    );
    assert_eq!(session_id(&exporter), session);
    assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 1.0);
}
