//! Kerberos for real: a realm of the test's own on Debian's MIT KDC, a
//! ZooKeeper 3.8 that authenticates with Kerberos and refuses every other
//! session (`enforce.auth.enabled`, `enforce.auth.schemes=sasl`), Kafka's
//! and HBase's layouts written by an application that authenticates with
//! its own ticket (kazoo, SASL GSSAPI) and readable only by `sasl:` ACLs.
//! The agent authenticates from a keytab or a credential cache, reads them
//! and follows a switch; without Kerberos, or as a principal the ACLs do
//! not name, it is refused and says why; each Kerberos failure is one line
//! on /ready and in the log, counted and retried; and a ticket that lives
//! a minute expires and is renewed without the session or its watches
//! dropping, across a reconnect that needs the new ticket.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::kdc::{KazooWriter, Kdc, REALM, shared_realm};
use common::program::{alertmanager, alerts_in_alertmanager, alerts_seen, mixin_rules, prometheus};
use common::*;

const T: Duration = Duration::from_secs(60);

fn principal(name: &str) -> String {
    format!("{name}@{REALM}")
}

/// Read for the agent, everything for the application, nothing for anyone
/// else.
fn acl<'a>(app: &'a str, agent: &'a str) -> [[&'a str; 3]; 2] {
    [["sasl", app, "rwcda"], ["sasl", agent, "r"]]
}

/// A cluster of the agent's with `auth` (the inside of `[clusters.auth]`).
fn config(servers: &str, auth: &str, extra: &str) -> String {
    format!(
        "[[clusters]]\nname = \"secure\"\nservers = [\"{servers}\"]\nsession_timeout = \"6s\"\n{extra}\n\
         [clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\n{auth}\n"
    )
}

fn keytab_auth(kdc: &Kdc, name: &str, keytab: &Path) -> String {
    format!(
        "principal = \"{}\"\nkeytab = \"{}\"\nkrb5_conf = \"{}\"\n",
        principal(name),
        keytab.display(),
        kdc.krb5_conf.display()
    )
}

/// Kafka's controller, brokers and epoch, as a secured Kafka writes them.
fn kafka_layout(w: &mut KazooWriter, kafka: &str, acl: &[[&str; 3]]) {
    for dir in ["", "/brokers", "/brokers/ids"] {
        w.create(&format!("{kafka}{dir}"), b"", false, acl);
    }
    w.create(
        &format!("{kafka}/controller_epoch"),
        &payloads::kafka_controller_epoch(7),
        false,
        acl,
    );
    for id in [1, 2] {
        w.create(
            &format!("{kafka}/brokers/ids/{id}"),
            &payloads::kafka_broker(&format!("b{id}.example.com"), 9093, 1_700_000_000_000),
            true,
            acl,
        );
    }
    w.create(
        &format!("{kafka}/controller"),
        &payloads::kafka_controller(1, 1_700_000_000_000),
        true,
        acl,
    );
}

/// HBase's active and backup masters and a region server.
fn hbase_layout(w: &mut KazooWriter, hbase: &str, acl: &[[&str; 3]]) {
    for dir in ["", "/backup-masters", "/rs"] {
        w.create(&format!("{hbase}{dir}"), b"", false, acl);
    }
    w.create(
        &format!("{hbase}/master"),
        &payloads::hbase_master("m1.example.com", 16000, 1_700_000_000_001, 16010),
        true,
        acl,
    );
    w.create(
        &format!("{hbase}/backup-masters/m2.example.com,16000,1700000009999"),
        &payloads::hbase_master("m2.example.com", 16000, 1_700_000_009_999, 16010),
        true,
        acl,
    );
    w.create(
        &format!("{hbase}/rs/rs1.example.com,16020,1700000000123"),
        &payloads::hbase_region_server(16020, 16030),
        true,
        acl,
    );
}

/// Kafka's controller moves to `broker`: the old controller's node goes,
/// the new one's is created (as a controller election does).
fn hand_over(w: &mut KazooWriter, controller: &str, broker: u32, acl: &[[&str; 3]]) {
    w.delete(controller);
    w.create(
        controller,
        &payloads::kafka_controller(broker, 1_700_000_000_000 + u64::from(broker)),
        true,
        acl,
    );
}

fn systems(kafka: &str, hbase: &str) -> String {
    format!(
        "[[clusters.systems]]\nkind = \"kafka\"\nroot = \"{kafka}\"\n\
         [[clusters.systems]]\nkind = \"hbase\"\nroot = \"{hbase}\"\n"
    )
}

/// HBase's layout written by `hbase-{n}` and readable by `agent-{n}`,
/// whose tickets live `life`: the tree's root and the agent's keytab.
fn hbase_for(kdc: &Kdc, zk: &ZkServer, n: &str, life: &str) -> (String, PathBuf) {
    let app_keytab = kdc.principal(&format!("hbase-{n}"), "10h");
    let agent_keytab = kdc.principal(&format!("agent-{n}"), life);
    let (app, agent) = (
        principal(&format!("hbase-{n}")),
        principal(&format!("agent-{n}")),
    );
    let hbase = format!("{}-hbase", unique_path(&format!("krb{n}")));
    let mut w = KazooWriter::connect(kdc, zk.port, &app_keytab);
    hbase_layout(&mut w, &hbase, &acl(&app, &agent));
    (hbase, agent_keytab)
}

/// A cluster of only that HBase, without four-letter words.
fn hbase_only(hbase: &str) -> String {
    format!(
        "four_letter_words = {{ enabled = false }}\n[[clusters.systems]]\nkind = \"hbase\"\nroot = \"{hbase}\"\n"
    )
}

/// An agent for `agent-{n}` on a credential cache `kinit` filled from its
/// keytab (as k5start or a sidecar would) and nobody renews, with no
/// principal configured (the cache's own is taken) and the servers'
/// principal host from `server_name`.
fn cache_agent(kdc: &Kdc, zk: &ZkServer, n: &str, keytab: &Path, hbase: &str) -> Exporter {
    let cache = format!("FILE:{}/agent-{n}.ccache", kdc.dir.display());
    kdc.kinit(&principal(&format!("agent-{n}")), keytab, &cache);
    Exporter::start(&config(
        &zk.address(),
        &format!(
            "credential_cache = \"{cache}\"\nkrb5_conf = \"{}\"\nserver_name = \"localhost\"\n",
            kdc.krb5_conf.display()
        ),
        &hbase_only(hbase),
    ))
}

fn master(m: &Metrics, election: &str) -> Option<String> {
    m.series("zookeeper_election_master", &[("election", election)])
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

/// The agent's session id for the cluster, from `/api/v1/status`.
fn session_id(exporter: &Exporter) -> String {
    let body = http_get(exporter.port, "/api/v1/status").unwrap().1;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["clusters"][0]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn get(m: &Metrics, name: &str) -> f64 {
    m.get(name, &[("ensemble", "secure")]).unwrap_or(-1.0)
}

fn kerberos_errors(m: &Metrics, reason: &str) -> f64 {
    m.get(
        "zookeeper_session_kerberos_errors_total",
        &[("ensemble", "secure"), ("reason", reason)],
    )
    .unwrap_or(0.0)
}

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

/// A credential cache that `kinit` filled (as k5start or a sidecar would),
/// with no principal configured: the cache's own is taken, and the
/// servers' principal host comes from `server_name`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_cache_filled_by_kinit_is_used() {
    let (kdc, zk) = shared_realm();
    let (hbase, keytab) = hbase_for(kdc, zk, "b", "10h");
    let exporter = cache_agent(kdc, zk, "b", &keytab, &hbase);
    exporter
        .until("HBase's master read with the cache's ticket", T, |m| {
            master(m, &format!("{hbase}/master")).as_deref() == Some("m1.example.com:16000")
        })
        .await;
}

/// A ticket nobody renews, read by check after check: krb5 gives its life
/// in whole seconds, so each read used to land somewhere in the second
/// after the true expiry and about every other check counted a renewal
/// that never happened. Now every check sees the ticket's own expiry,
/// to the second, and no renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_read_again_and_again_is_not_taken_for_a_renewal() {
    let (kdc, zk) = shared_realm();
    let (hbase, keytab) = hbase_for(kdc, zk, "r", "2 minutes");
    // A cache kinit filled and nobody renews: only the agent reads it.
    let exporter = cache_agent(kdc, zk, "r", &keytab, &hbase);
    // The agent checks again every quarter of the remaining life (30 s,
    // 22 s, 17 s ... of a two-minute ticket): wait for three rechecks,
    // reading the ticket's figures after each.
    let (mut checks, mut expiries, mut first_seen) = (Vec::new(), Vec::new(), Vec::new());
    wait_for_async(
        "the first check and three rechecks",
        Duration::from_secs(105),
        || {
            let m = exporter.metrics()?;
            let at = m.get(
                "zookeeper_session_kerberos_last_success_timestamp_seconds",
                &[],
            );
            if let Some(at) = at.filter(|at| checks.last() != Some(at)) {
                checks.push(at);
                expiries.push(get(
                    &m,
                    "zookeeper_session_kerberos_ticket_expiry_timestamp_seconds",
                ));
                first_seen.push(get(
                    &m,
                    "zookeeper_session_kerberos_ticket_first_seen_timestamp_seconds",
                ));
                assert_eq!(
                    get(&m, "zookeeper_session_kerberos_ticket_renewals_total"),
                    0.0,
                    "no renewal happened; checks at {checks:?} saw expiries {expiries:?}"
                );
                assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 1.0);
            }
            if checks.len() < 4 {
                return Err(format!("checks at {checks:?}"));
            }
            Ok(())
        },
    )
    .await;
    assert_eq!(
        checks.len(),
        4,
        "the first check and three rechecks within 105 s: {checks:?}"
    );
    assert!(
        expiries
            .iter()
            .all(|e| *e == expiries[0] && e.fract() == 0.0),
        "one expiry, in whole seconds, as the ticket holds it: {expiries:?}"
    );
    assert!(
        first_seen.iter().all(|f| *f == first_seen[0]),
        "first seen at the first check: {first_seen:?}"
    );
}

/// The shipped expiring-ticket alert, on a real Prometheus scraping two
/// agents with one-minute tickets, always within its 20 minutes: the one
/// reading a credential cache nobody renews warns before its ticket ends
/// (or from the failed checks after) and Alertmanager has it; the one with
/// a keytab, renewed at half its life from its first minute on, is never
/// even pending. A rule that waited for a renewal to be seen warned at
/// every start of the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expiring_ticket_alert_warns_for_a_cache_nobody_renews_and_never_for_a_keytab() {
    let (kdc, zk) = shared_realm();
    let (stale_tree, stale_keytab) = hbase_for(kdc, zk, "x", "1 minute");
    let (renewed_tree, renewed_keytab) = hbase_for(kdc, zk, "y", "1 minute");
    let stale = cache_agent(kdc, zk, "x", &stale_keytab, &stale_tree);
    let renewed = Exporter::start(&config(
        &zk.address(),
        &format!(
            "{}server_name = \"localhost\"\n",
            keytab_auth(kdc, "agent-y", &renewed_keytab)
        ),
        &hbase_only(&renewed_tree),
    ));
    let am = alertmanager("krb-am");
    // The shipped rules with `for` at 10 s: `before` (20 minutes) holds all
    // along, so the quarter of the seen life decides.
    let prom = prometheus(
        "krb-prom",
        &mixin_rules("", "10s"),
        "1s",
        am.port,
        &[stale.port, renewed.port],
    );
    let name = "ZooKeeperExporterKerberosTicketExpiring";
    let (stale_at, renewed_at) = (
        format!("127.0.0.1:{}", stale.port),
        format!("127.0.0.1:{}", renewed.port),
    );
    // The cache's ticket ends a minute after kinit; the warning comes in
    // its last quarter (or from the failed checks after it). By then the
    // keytab's ticket has been renewed (every half minute): wait for both,
    // so what follows judges a renewal's whole cycle.
    let fired = wait_for_async(
        "the warning for the unrenewed cache and a renewal of the keytab's ticket",
        Duration::from_secs(120),
        || {
            let a = alerts_in_alertmanager(&am, name)?;
            let m = renewed.metrics()?;
            let renewals = get(&m, "zookeeper_session_kerberos_ticket_renewals_total");
            if a.iter().any(|l| l["instance"] == *stale_at) && renewals >= 1.0 {
                Ok(a)
            } else {
                Err(format!("alerts {a:?}, keytab renewals {renewals}"))
            }
        },
    )
    .await;
    assert!(
        fired
            .iter()
            .all(|l| l["instance"] == *stale_at && l["ensemble"] == "secure"),
        "only the unrenewed replica's: {fired:?}"
    );
    // The keytab's ticket never reached the rule: not firing, not even
    // pending, at any evaluation since Prometheus began.
    let m = renewed.metrics().unwrap();
    assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 1.0);
    let seen = tokio::task::block_in_place(|| {
        alerts_seen(
            &prom,
            &format!("alertname=\"{name}\",instance=\"{renewed_at}\""),
            "10m",
        )
    })
    .unwrap();
    assert!(seen.is_empty(), "the renewed ticket alerted: {seen:?}");
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

/// Tickets that live one minute: the first one expires while the session
/// runs (ZooKeeper checks a ticket at connect only), the agent renews it
/// from its keytab, follows a switch on its watches, and when its
/// connection is cut after the first ticket expired it reconnects with
/// the new one: the same session, its watches placed again, the next
/// switch followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_minute_ticket_is_renewed_without_dropping_the_session_or_its_watches() {
    let (kdc, zk) = shared_realm();
    let app_keytab = kdc.principal("kafka-e", "10h");
    let agent_keytab = kdc.principal("agent-e", "1 minute");
    let (app, agent) = (principal("kafka-e"), principal("agent-e"));
    let acl = acl(&app, &agent);
    let kafka = format!("{}-kafka", unique_path("krbrenew"));
    let mut w = KazooWriter::connect(kdc, zk.port, &app_keytab);
    kafka_layout(&mut w, &kafka, &acl);
    // Through a proxy that can cut the agent's connection; the servers'
    // principal names localhost, the address dialled is the proxy's.
    let proxy = Proxy::start(zk.address()).await;
    let exporter = Exporter::start(&config(
        &proxy.address(),
        &format!(
            "{}server_name = \"localhost\"\n",
            keytab_auth(kdc, "agent-e", &agent_keytab)
        ),
        &format!(
            "four_letter_words = {{ enabled = false }}\n{}",
            systems(&kafka, &format!("{kafka}-none"))
        ),
    ));
    let controller = format!("{kafka}/controller");
    let m = exporter
        .until("the controller read with a one-minute ticket", T, |m| {
            master(m, &controller).as_deref() == Some("1")
        })
        .await;
    let session = session_id(&exporter);
    assert!(session.starts_with("0x"), "{session}");
    let first = get(
        &m,
        "zookeeper_session_kerberos_ticket_expiry_timestamp_seconds",
    );
    let left = first
        - SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
    assert!(
        left > 0.0 && left <= 61.0,
        "a one-minute ticket: {left}s left"
    );
    // The first ticket expires; a renewed one replaces it.
    let m = exporter
        .until(
            "the first ticket expired and renewed",
            Duration::from_secs(150),
            |m| {
                let now = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_secs_f64();
                now > first + 2.0
                    && get(
                        m,
                        "zookeeper_session_kerberos_ticket_expiry_timestamp_seconds",
                    ) > first
                    && get(m, "zookeeper_session_kerberos_ticket_renewals_total") >= 1.0
            },
        )
        .await;
    assert_eq!(get(&m, "zookeeper_session_reconnects_total"), 0.0);
    assert_eq!(get(&m, "zookeeper_session_expirations_total"), 0.0);
    // The watch placed with the first ticket still follows.
    hand_over(&mut w, &controller, 2, &acl);
    exporter
        .until("the switch to broker 2", T, |m| {
            master(m, &controller).as_deref() == Some("2")
        })
        .await;
    // A reconnect authenticates again: only the renewed ticket can.
    proxy.cut();
    proxy.restore();
    let m = exporter
        .until("the same session back through the proxy", T, |m| {
            get(m, "zookeeper_session_reconnects_total") == 1.0
                && m.get(
                    "zookeeper_session_state",
                    &[("ensemble", "secure"), ("state", "connected")],
                ) == Some(1.0)
        })
        .await;
    assert_eq!(get(&m, "zookeeper_session_expirations_total"), 0.0);
    hand_over(&mut w, &controller, 1, &acl);
    let m = exporter
        .until(
            "the switch back to broker 1 on the watch placed again",
            T,
            |m| master(m, &controller).as_deref() == Some("1"),
        )
        .await;
    // The session of the start, re-authenticated, never rebuilt: a server
    // enforcing authentication closes a session whose reconnect sends a
    // request before the SASL handshake completes (the patched client).
    assert_eq!(session_id(&exporter), session, "{}", exporter.log());
    assert!(
        !exporter.log().contains("authentication failed"),
        "{}",
        exporter.log()
    );
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &[("election", &*controller)]
        ),
        Some(2.0)
    );
    assert_eq!(get(&m, "zookeeper_session_expirations_total"), 0.0);
    assert_eq!(get(&m, "zookeeper_session_connect_failures_total"), 0.0);
    assert_eq!(get(&m, "zookeeper_session_kerberos_ticket_ok"), 1.0);
    for r in ["clock_skew", "ticket_expired", "no_ticket", "other"] {
        assert_eq!(kerberos_errors(&m, r), 0.0, "{r}");
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
