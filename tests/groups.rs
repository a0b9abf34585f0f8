//! Service registries and membership trees against a real ZooKeeper.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(30);

fn group(g: &str) -> [(&str, &str); 2] {
    [("ensemble", "test"), ("group", g)]
}

fn members(m: &Metrics, g: &str) -> Option<f64> {
    m.get("zookeeper_group_members", &group(g))
}

fn changes(m: &Metrics, g: &str, change: &str) -> Option<f64> {
    m.get(
        "zookeeper_group_member_changes_total",
        &[("group", g), ("change", change)],
    )
}

fn member_names(m: &Metrics, g: &str) -> Vec<String> {
    let mut names: Vec<String> = m
        .series("zookeeper_group_member", &group(g))
        .into_iter()
        .filter_map(|(l, _)| l.get("member").cloned())
        .collect();
    names.sort();
    names
}

/// Registers `name` under `service` with an ephemeral node.
async fn register(c: &zookeeper_client::Client, service: &str, name: &str, data: &[u8]) {
    c.create(
        &format!("{service}/{name}"),
        data,
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap_or_else(|e| panic!("register {service}/{name}: {e}"));
}

fn config(servers: &str, groups: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{servers}\"]\n[clusters.four_letter_words]\nenabled = false\n{groups}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_join_leave_and_restart() {
    let zk = shared_server();
    let base = unique_path("registry");
    let (api, web) = (
        format!("{base}/services/api"),
        format!("{base}/services/web"),
    );
    let admin = client(&zk.address()).await;
    mkdir(&admin, &api).await;
    mkdir(&admin, &web).await;
    let instance_1 = client(&zk.address()).await;
    register(&instance_1, &api, "10.0.0.1:8080", b"").await;
    let groups = format!(
        "[[clusters.groups]]\npath = \"{base}/services/*\"\nmin_members = 2\nexport_members = true\n"
    );
    let exporter = Exporter::start(&config(&zk.address(), &groups));
    let m = exporter
        .until("api has one member", T, |m| members(m, &api) == Some(1.0))
        .await;
    assert_eq!(
        m.get("zookeeper_group_min_members", &group(&api)),
        Some(2.0)
    );
    assert_eq!(members(&m, &web), Some(0.0));
    assert_eq!(member_names(&m, &api), vec!["10.0.0.1:8080"]);
    assert_eq!(
        changes(&m, &api, "join"),
        Some(0.0),
        "start-up counts nothing"
    );
    let tree = [
        ("ensemble", "test"),
        ("tree", &*format!("{base}/services/*")),
    ];
    assert_eq!(m.get("zookeeper_tree_groups", &tree), Some(2.0));
    assert_eq!(m.get("zookeeper_tree_synced", &tree), Some(1.0));

    // A second instance joins, the first leaves.
    let instance_2 = client(&zk.address()).await;
    register(&instance_2, &api, "10.0.0.2:8080", b"").await;
    drop(instance_1);
    let m = exporter
        .until("join then leave", T, |m| {
            changes(m, &api, "leave") == Some(1.0)
        })
        .await;
    assert_eq!(members(&m, &api), Some(1.0));
    assert_eq!(changes(&m, &api, "join"), Some(1.0));
    assert_eq!(member_names(&m, &api), vec!["10.0.0.2:8080"]);

    // The instance restarts under the same name: a leave and a join.
    drop(instance_2);
    let restarted = client(&zk.address()).await;
    let path = format!("{api}/10.0.0.2:8080");
    until_gone(&admin, &path, T).await;
    register(&restarted, &api, "10.0.0.2:8080", b"").await;
    let m = exporter
        .until("restart counted", T, |m| {
            changes(m, &api, "join") == Some(2.0) && changes(m, &api, "leave") == Some(2.0)
        })
        .await;
    assert_eq!(members(&m, &api), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_names_from_json_data_and_the_group_flag() {
    let zk = shared_server();
    let base = unique_path("agents");
    let online = format!("{base}/online");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &online).await;
    let agent = client(&zk.address()).await;
    register(&agent, &online, "a1", br#"{"host":"web-7","pid":41}"#).await;
    let groups = format!(
        "[[clusters.groups]]\npath = \"{base}/*\"\nmember = \"json:/host\"\nexport_members = true\n"
    );
    let exporter = Exporter::start(&config(&zk.address(), &groups));
    let m = exporter
        .until("json member name", T, |m| members(m, &online) == Some(1.0))
        .await;
    assert_eq!(member_names(&m, &online), vec!["web-7"]);
    assert!(
        m.series("zookeeper_group_min_members", &group(&online))
            .is_empty(),
        "only where configured"
    );

    // Quick start: --group, default member names from the node, no per-member series.
    let port = free_port();
    let args = args(&[
        "--zk",
        &zk.address(),
        "--group",
        &format!("{base}/*"),
        "--web.listen-address",
        &format!("127.0.0.1:{port}"),
    ]);
    let quick = Exporter::spawn(&args, &[], port);
    let m = wait_for_async("quick-start group", T, || {
        let m = quick.metrics()?;
        match m.get(
            "zookeeper_group_members",
            &[("ensemble", "default"), ("group", &*online)],
        ) {
            Some(1.0) => Ok(m),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        m.series("zookeeper_group_member", &[]).is_empty(),
        "export_members is off by default"
    );
}
