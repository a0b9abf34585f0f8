//! Session lifecycle against a real ZooKeeper: server restarts, the agent
//! cut off while elections change, its own session expiring.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(40);

async fn until(exporter: &Exporter, what: &str, f: impl Fn(&Metrics) -> bool) -> Metrics {
    exporter.until(what, T, f).await
}

fn session(m: &Metrics, name: &str) -> f64 {
    m.get(name, &[("ensemble", "test")]).unwrap_or(f64::NAN)
}

fn state_is(m: &Metrics, state: &str) -> bool {
    m.get(
        "zookeeper_session_state",
        &[("ensemble", "test"), ("state", state)],
    ) == Some(1.0)
}

fn synced(m: &Metrics) -> Option<f64> {
    m.series("zookeeper_tree_synced", &[("ensemble", "test")])
        .first()
        .map(|(_, v)| *v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_resyncs_without_a_spurious_switch() {
    // A session timeout well above a restart's length, even on a loaded
    // machine (a JVM start there took over 15 s): this test is about
    // resuming the same session (expiry has its own test). The server
    // grants up to a minute.
    let mut zk = ZkServer::start_custom(ServerOptions::default(), "maxSessionTimeout=60000\n", "");
    let base = unique_path("restart");
    let election = format!("{base}/e");
    // The candidates' session outlives the restart too.
    let c = abandonable_client(&zk.address(), Duration::from_secs(60)).await;
    mkdir(&c, &election).await;
    let first = candidate(&c, &election, "n_", b"a").await;
    candidate(&c, &election, "n_", b"b").await;
    let config = cluster_config(&zk.address(), &format!("{base}/*"), "")
        .replace("session_timeout = \"4s\"", "session_timeout = \"60s\"");
    let exporter = Exporter::start(&config);
    let m = until(&exporter, "master", |m| {
        master_node(m, &election) == Some(first.clone())
    })
    .await;
    assert_eq!(
        session(&m, "zookeeper_session_timeout_seconds"),
        60.0,
        "the server granted the minute"
    );

    zk.stop();
    let m = until(&exporter, "tree marked stale", |m| synced(m) == Some(0.0)).await;
    assert_eq!(
        master_node(&m, &election),
        Some(first.clone()),
        "last known values stay exported"
    );
    let (status, body) = exporter.ready();
    assert_eq!(status, 503);
    assert!(body.contains("not synced"), "{body}");

    zk.restart();
    let m = until(&exporter, "resynced", |m| {
        synced(m) == Some(1.0) && state_is(m, "connected")
    })
    .await;
    assert_eq!(master_node(&m, &election), Some(first));
    let e = election_labels(&election);
    assert_eq!(
        m.get("zookeeper_election_master_changes_total", &e),
        Some(0.0)
    );
    assert_eq!(m.get("zookeeper_election_candidates", &e), Some(2.0));
    assert!(session(&m, "zookeeper_session_reconnects_total") >= 1.0);
    assert_eq!(session(&m, "zookeeper_session_expirations_total"), 0.0);

    // The new watch works: a change after the restart is seen.
    candidate(&c, &election, "n_", b"c").await;
    until(&exporter, "post-restart join", |m| {
        m.get("zookeeper_election_candidates", &e) == Some(3.0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_while_the_agent_is_cut_off_is_counted_once() {
    let zk = shared_server();
    let proxy = Proxy::start(zk.address()).await;
    let base = unique_path("cut");
    let election = format!("{base}/e");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let master = client(&zk.address()).await;
    let m_node = candidate(&master, &election, "n_", b"old-master").await;
    let s_node = candidate(&admin, &election, "n_", b"standby").await;
    let config = cluster_config(&proxy.address(), &format!("{base}/*"), "")
        .replace("session_timeout = \"4s\"", "session_timeout = \"15s\"");
    let exporter = Exporter::start(&config);
    until(&exporter, "master", |m| {
        master_node(m, &election) == Some(m_node.clone())
    })
    .await;

    proxy.cut();
    until(&exporter, "agent disconnected", |m| {
        state_is(m, "disconnected") && synced(m) == Some(0.0)
    })
    .await;
    drop(master);
    let joined = candidate(&admin, &election, "n_", b"newcomer").await;
    let gone = format!("{election}/{m_node}");
    until_gone(&admin, &gone, T).await;
    proxy.restore();

    let m = until(&exporter, "resync shows the new master", |m| {
        synced(m) == Some(1.0) && master_node(m, &election) == Some(s_node.clone())
    })
    .await;
    let e = election_labels(&election);
    assert_eq!(
        m.get("zookeeper_election_master_changes_total", &e),
        Some(1.0)
    );
    let change = |c: &str| {
        m.get(
            "zookeeper_election_candidate_changes_total",
            &[("election", &*election), ("change", c)],
        )
    };
    assert_eq!(change("leave"), Some(1.0));
    assert_eq!(change("join"), Some(1.0));
    assert_eq!(
        session(&m, "zookeeper_session_expirations_total"),
        0.0,
        "same session resumed"
    );
    assert!(session(&m, "zookeeper_session_reconnects_total") >= 1.0);
    assert!(joined > s_node);

    // Watches are back after the reconnect: the next change arrives live.
    admin
        .delete(&format!("{election}/{s_node}"), None)
        .await
        .unwrap();
    let m = until(&exporter, "live switch after resync", |m| {
        master_node(m, &election) == Some(joined.clone())
    })
    .await;
    assert_eq!(
        m.get("zookeeper_election_master_changes_total", &e),
        Some(2.0)
    );
}

/// Session ids the server tracks, from the `dump` four-letter word.
fn tracked_sessions(port: u16) -> Result<Vec<String>, String> {
    let dump = four_letter(port, "dump").map_err(|e| e.to_string())?;
    let tracker = dump
        .split("ephemeral nodes dump")
        .next()
        .unwrap_or_default();
    Ok(tracker
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("0x"))
        .map(str::to_owned)
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_rebuilds_its_session_after_expiry() {
    // A server of its own, so the agent's session is the only unknown one.
    let zk = ZkServer::start();
    let proxy = Proxy::start(zk.address()).await;
    let base = unique_path("expire");
    let election = format!("{base}/e");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let first = candidate(&admin, &election, "n_", b"a").await;
    let config = cluster_config(&proxy.address(), &format!("{base}/*"), "")
        .replace("session_timeout = \"4s\"", "session_timeout = \"1s\"");
    let exporter = Exporter::start(&config);
    until(&exporter, "master", |m| {
        master_node(m, &election) == Some(first.clone())
    })
    .await;
    assert_eq!(
        exporter
            .metrics()
            .unwrap()
            .get("zookeeper_session_timeout_seconds", &[("ensemble", "test")]),
        Some(1.0)
    );
    let admin_id = admin.session_id().to_string();
    let agent_id = wait_for_async("the agent's session id", T, || {
        let others: Vec<String> = tracked_sessions(zk.port)?
            .into_iter()
            .filter(|s| *s != admin_id)
            .collect();
        match others.as_slice() {
            [one] => Ok(one.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    proxy.cut();
    wait_for_async("agent session expired on the server", T, || {
        let sessions = tracked_sessions(zk.port)?;
        if sessions.contains(&agent_id) {
            Err(format!("{sessions:?}"))
        } else {
            Ok(())
        }
    })
    .await;
    let second = candidate(&admin, &election, "n_", b"b").await;
    proxy.restore();

    let m = until(&exporter, "new session synced", |m| {
        session(m, "zookeeper_session_expirations_total") == 1.0 && synced(m) == Some(1.0)
    })
    .await;
    assert!(state_is(&m, "connected"));
    let e = election_labels(&election);
    assert_eq!(m.get("zookeeper_election_candidates", &e), Some(2.0));
    assert_eq!(
        m.get("zookeeper_election_master_changes_total", &e),
        Some(0.0)
    );

    admin
        .delete(&format!("{election}/{first}"), None)
        .await
        .unwrap();
    let m = until(&exporter, "watch works on the new session", |m| {
        master_node(m, &election) == Some(second.clone())
    })
    .await;
    assert_eq!(
        m.get("zookeeper_election_master_changes_total", &e),
        Some(1.0)
    );
    let (status, body) = exporter.ready();
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_servers_keep_the_agent_serving_and_not_ready() {
    let closed = format!("127.0.0.1:{}", free_port());
    let exporter = Exporter::start(&cluster_config(&closed, "/x/*", ""));
    let body = exporter.until_not_ready("accepted a session", T).await;
    assert!(body.contains(&closed), "{body}");
    let m = until(&exporter, "connect failures counted", |m| {
        session(m, "zookeeper_session_connect_failures_total") >= 2.0
    })
    .await;
    assert!(!state_is(&m, "connected"));
    assert_eq!(http_get(exporter.port, "/healthz").unwrap().0, 200);
    let status = exporter.terminate();
    assert!(status.success(), "SIGTERM exits cleanly: {status:?}");
}
