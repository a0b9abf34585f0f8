//! The failover probe against a real ZooKeeper.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};

const T: Duration = Duration::from_secs(60);

fn probe_config(zk: &ZkServer, path: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nsession_timeout = \"1s\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [clusters.probe]\npath = \"{path}\"\ninterval = \"300ms\"\n",
        zk.address()
    )
}

fn cluster(name: &str) -> [(&str, &str); 1] {
    [("ensemble", name)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_measures_failover_expiry_and_writes_then_cleans_up() {
    let zk = shared_server();
    let path = unique_path("probe");
    let exporter = Exporter::start(&probe_config(zk, &path));
    let m = exporter
        .until("failover rounds", T, |m| {
            m.get("zookeeper_probe_failover_seconds_count", &cluster("test"))
                .is_some_and(|n| n >= 3.0)
        })
        .await;
    let (sum, count) = (
        m.get("zookeeper_probe_failover_seconds_sum", &cluster("test"))
            .unwrap(),
        m.get("zookeeper_probe_failover_seconds_count", &cluster("test"))
            .unwrap(),
    );
    assert!(
        sum / count < 1.0,
        "a closed master is replaced well within the 1 s session timeout: {}",
        sum / count
    );
    let writes = m.get(
        "zookeeper_session_request_duration_seconds_count",
        &[("op", "write")],
    );
    assert!(
        writes.is_some_and(|n| n >= 2.0),
        "create and delete are timed"
    );
    assert_eq!(
        m.get("zookeeper_probe_errors_total", &cluster("test")),
        Some(0.0)
    );

    // The first abandoned master comes at least 10 session timeouts in.
    let m = exporter
        .until("an expiry round", T, |m| {
            m.get(
                "zookeeper_probe_ephemeral_expiry_seconds_count",
                &cluster("test"),
            )
            .is_some_and(|n| n >= 1.0)
        })
        .await;
    let expiry = m
        .get(
            "zookeeper_probe_ephemeral_expiry_seconds_sum",
            &cluster("test"),
        )
        .unwrap()
        / m.get(
            "zookeeper_probe_ephemeral_expiry_seconds_count",
            &cluster("test"),
        )
        .unwrap();
    assert!(
        (0.8..4.0).contains(&expiry),
        "an abandoned master stays about one session timeout (1 s): {expiry}"
    );

    let status = exporter.terminate();
    assert!(status.success());
    let c = client(&zk.address()).await;
    let left = c.list_children(&path).await.unwrap();
    assert!(
        left.is_empty(),
        "probe nodes are removed on shutdown: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_without_rights_is_a_counted_error_not_a_crash() {
    let zk = shared_server();
    let path = unique_path("probe_denied");
    let c = client(&zk.address()).await;
    let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    c.create(
        &path,
        b"",
        &CreateMode::Persistent.with_acls(Acls::new(&read_only)),
    )
    .await
    .unwrap();
    let exporter = Exporter::start(&probe_config(zk, &path));
    let m = exporter
        .until("probe errors counted", T, |m| {
            m.get("zookeeper_probe_errors_total", &cluster("test"))
                .is_some_and(|n| n >= 2.0)
        })
        .await;
    assert_eq!(
        m.get("zookeeper_probe_failover_seconds_count", &cluster("test")),
        Some(0.0)
    );
    assert_eq!(
        m.get("zookeeper_session_state", &[("state", "connected")]),
        Some(1.0)
    );
    let (status, body) = exporter.ready();
    assert_eq!(status, 200, "{body}");
    let log = exporter.log();
    assert_eq!(
        log.matches("not authorized").count(),
        1,
        "logged once: {log}"
    );
    assert!(log.contains("grant create and delete"));
}
