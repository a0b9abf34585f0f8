//! Kerberos tickets over time, on a realm of the test's own (Debian's MIT
//! KDC) and a ZooKeeper that refuses every session without one: a
//! credential cache filled by kinit, a ticket read again and again that is
//! no renewal, the expiring-ticket alert for a cache nobody renews (and
//! never for a keytab), and a ticket that lives a minute renewed without
//! the session or its watches dropping, across a reconnect that needs the
//! new ticket.

mod common;

use std::time::{Duration, SystemTime};

use common::kdc::{KazooWriter, shared_realm};
use common::kerberos_agent::*;
use common::program::{alertmanager, alerts_in_alertmanager, alerts_seen, mixin_rules, prometheus};
use common::*;

const T: Duration = Duration::from_secs(60);

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
