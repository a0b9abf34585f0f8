//! Election monitoring against a real ZooKeeper: the exporter binary watches
//! trees that real sessions create, kill and abandon.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client::{Acls, AuthId, CreateMode, Permission};

const T: Duration = Duration::from_secs(30);

fn labels(election: &str) -> [(&str, &str); 2] {
    election_labels(election)
}

async fn until(exporter: &Exporter, what: &str, f: impl Fn(&Metrics) -> bool) -> Metrics {
    exporter.until(what, T, f).await
}

fn value(m: &Metrics, name: &str, election: &str) -> f64 {
    m.get(name, &labels(election)).unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_join_and_the_master_is_exported() {
    let zk = shared_server();
    let base = unique_path("join");
    let c = client(&zk.address()).await;
    let (e1, e2) = (format!("{base}/bot_1"), format!("{base}/bot_2"));
    mkdir(&c, &e1).await;
    mkdir(&c, &e2).await;
    let a = candidate(&c, &e1, "instance_", b"device-a").await;
    let (_, stat) = c.get_data(&format!("{e1}/{a}")).await.unwrap();

    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let m = until(&exporter, "first master", |m| {
        master_node(m, &e1).as_deref() == Some(a.as_str())
    })
    .await;
    assert_eq!(master_identity(&m, &e1).as_deref(), Some("device-a"));
    assert_eq!(value(&m, "zookeeper_election_candidates", &e1), 1.0);
    assert_eq!(value(&m, "zookeeper_election_has_master", &e1), 1.0);
    assert_eq!(value(&m, "zookeeper_election_has_master", &e2), 0.0);
    assert_eq!(value(&m, "zookeeper_election_master_sequence", &e1), 0.0);
    assert_eq!(
        value(&m, "zookeeper_election_master_since_timestamp_seconds", &e1),
        stat.ctime as f64 / 1000.0,
        "at start-up `since` is the master node's ctime"
    );
    let tree = [("ensemble", "test"), ("tree", &*format!("{base}/*"))];
    assert_eq!(m.get("zookeeper_tree_synced", &tree), Some(1.0));
    assert_eq!(m.sum("zookeeper_tree_elections", &tree), Some(2.0));

    let b = candidate(&c, &e1, "instance_", b"device-b").await;
    candidate(&c, &e1, "instance_", b"device-b").await;
    mkdir(&c, &format!("{e1}/config")).await;
    let m = until(&exporter, "three candidates", |m| {
        value(m, "zookeeper_election_candidates", &e1) == 3.0
    })
    .await;
    assert_eq!(
        master_node(&m, &e1).as_deref(),
        Some(a.as_str()),
        "joining standbys do not move mastership"
    );
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &e1),
        0.0
    );
    let joins = m.get(
        "zookeeper_election_candidate_changes_total",
        &[("election", &*e1), ("change", "join")],
    );
    assert_eq!(joins, Some(2.0));
    assert_eq!(
        value(&m, "zookeeper_election_duplicate_identities", &e1),
        2.0
    );
    let m = until(&exporter, "ignored child counted", |m| {
        m.get("zookeeper_tree_ignored_nodes", &tree) == Some(1.0)
    })
    .await;
    assert_eq!(
        m.get("zookeeper_tree_nodes", &tree),
        Some(6.0),
        "2 elections + 3 candidates + config"
    );
    assert_eq!(m.get("zookeeper_tree_ephemeral_nodes", &tree), Some(3.0));
    assert!(value(&m, "zookeeper_election_masterless_seconds_total", &e2) > 0.0);

    // The election without candidates gets one: its masterless period ends.
    candidate(&c, &e2, "instance_", b"x").await;
    let m = until(&exporter, "masterless period observed", |m| {
        m.get("zookeeper_tree_masterless_duration_seconds_count", &tree) == Some(1.0)
    })
    .await;
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &e2),
        0.0,
        "a first master is no switch"
    );
    drop(b);
    let (status, body) = exporter.ready();
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_master_session_counts_one_switch() {
    let zk = shared_server();
    let base = unique_path("close");
    let election = format!("{base}/e");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let master = client(&zk.address()).await;
    let standby = client(&zk.address()).await;
    let m_node = candidate(&master, &election, "n_", b"host-m").await;
    let s_node = candidate(&standby, &election, "n_", b"host-s").await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    until(&exporter, "master", |m| {
        master_node(m, &election) == Some(m_node.clone())
    })
    .await;

    drop(master); // closes the session: its node vanishes at once
    let m = until(&exporter, "standby takes over", |m| {
        master_node(m, &election) == Some(s_node.clone())
    })
    .await;
    assert_eq!(master_identity(&m, &election).as_deref(), Some("host-s"));
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &election),
        1.0
    );

    // Sequence a later change behind the switch, then check it stayed one.
    let late = candidate(&admin, &election, "n_", b"late").await;
    let m = until(&exporter, "late joiner", |m| {
        value(m, "zookeeper_election_candidates", &election) == 2.0
    })
    .await;
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &election),
        1.0
    );
    assert!(late > s_node);
    let leaves = m.get(
        "zookeeper_election_candidate_changes_total",
        &[("election", &*election), ("change", "leave")],
    );
    assert_eq!(leaves, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_without_closing_moves_after_session_expiry() {
    let zk = shared_server();
    let base = unique_path("abandon");
    let election = format!("{base}/e");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let crashed = abandonable_client(&zk.address(), Duration::from_millis(1500)).await;
    let m_node = candidate(&crashed, &election, "n_", b"crashy").await;
    let s_node = candidate(&admin, &election, "n_", b"steady").await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    until(&exporter, "master", |m| {
        master_node(m, &election) == Some(m_node.clone())
    })
    .await;
    drop(crashed); // connection gone, session left to expire
    let m = until(&exporter, "switch after expiry", |m| {
        master_node(m, &election) == Some(s_node.clone())
    })
    .await;
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &election),
        1.0
    );
    assert_eq!(value(&m, "zookeeper_election_has_master", &election), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_prefix_candidates_are_ordered_by_sequence() {
    let zk = shared_server();
    let base = unique_path("mixed");
    let election = format!("{base}/lock");
    let c = client(&zk.address()).await;
    mkdir(&c, &election).await;
    // Name order would pick `_c_...` (0x5f sorts first); sequence order picks zzzz.
    let first = candidate(&c, &election, "zzzz-9f1c__lock__", b"z").await;
    candidate(&c, &election, "aaaa-0b2e__lock__", b"a").await;
    candidate(&c, &election, "_c_4a7e-latch-", b"c").await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let m = until(&exporter, "three candidates", |m| {
        value(m, "zookeeper_election_candidates", &election) == 3.0
    })
    .await;
    assert_eq!(master_node(&m, &election), Some(first));
    assert_eq!(master_identity(&m, &election).as_deref(), Some("z"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_appear_and_disappear_with_their_nodes() {
    let zk = shared_server();
    let base = unique_path("appear");
    let c = client(&zk.address()).await;
    mkdir(&c, &base).await;
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{base}/*/members/*"),
        "",
    ));
    let tree = [
        ("ensemble", "test"),
        ("tree", &*format!("{base}/*/members/*")),
    ];
    until(&exporter, "synced empty tree", |m| {
        m.sum("zookeeper_tree_elections", &tree) == Some(0.0)
    })
    .await;
    let election = format!("{base}/team/members/alpha");
    mkdir(&c, &election).await;
    let node = candidate(&c, &election, "m_", b"alpha-1").await;
    until(&exporter, "new election seen", |m| {
        master_node(m, &election) == Some(node.clone())
    })
    .await;
    c.delete(&format!("{election}/{node}"), None).await.unwrap();
    c.delete(&election, None).await.unwrap();
    let m = until(&exporter, "election gone", |m| {
        m.sum("zookeeper_tree_elections", &tree) == Some(0.0)
    })
    .await;
    assert!(
        m.series("zookeeper_election_candidates", &labels(&election))
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_node_data_keeps_the_exposition_valid() {
    let zk = shared_server();
    let base = unique_path("hostile");
    let c = client(&zk.address()).await;
    let nasty = "  quo\"te \\ back\\\\slash\nnew}line{ ,x=\"y\"  ";
    let cases: Vec<(String, Vec<u8>)> = vec![
        ("text".into(), nasty.as_bytes().to_vec()),
        ("binary".into(), (0..=255u8).collect()),
        ("huge".into(), vec![b'x'; 1024 * 1000]),
    ];
    for (name, data) in &cases {
        let e = format!("{base}/{name}");
        mkdir(&c, &e).await;
        candidate(&c, &e, "n_", data).await;
    }
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let m = until(&exporter, "all three masters", |m| {
        cases
            .iter()
            .all(|(n, _)| master_node(m, &format!("{base}/{n}")).is_some())
    })
    .await;
    assert_eq!(
        master_identity(&m, &format!("{base}/text")),
        Some(nasty.trim().replace('\n', "\u{fffd}")),
        "quotes, backslashes and braces survive; control characters become U+FFFD"
    );
    let binary = master_identity(&m, &format!("{base}/binary")).unwrap();
    assert_eq!(
        Some(binary),
        master_node(&m, &format!("{base}/binary")),
        "binary data is never a label: the node name stands in"
    );
    assert_eq!(
        master_identity(&m, &format!("{base}/huge")).unwrap(),
        "x".repeat(128)
    );

    let text = exporter.raw_metrics();
    if let Err(problems) = promtool_check(&text) {
        panic!("promtool check metrics: {problems}");
    }

    let (status, om) = http_get_with(
        exporter.port,
        "/metrics",
        &[("Accept", "application/openmetrics-text;version=1.0.0")],
    )
    .unwrap();
    assert_eq!(status, 200);
    assert!(
        om.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    assert!(om.contains("# TYPE zookeeper_election_master_changes counter"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chroot_paths_are_relative() {
    let zk = shared_server();
    let root = unique_path("chroot");
    let c = client(&zk.address()).await;
    let election = format!("{root}/bots/b1");
    mkdir(&c, &election).await;
    let node = candidate(&c, &election, "n_", b"in-chroot").await;
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        "/bots/*",
        &format!("chroot = \"{root}\""),
    ));
    let m = until(&exporter, "master under chroot", |m| {
        master_node(m, "/bots/b1") == Some(node.clone())
    })
    .await;
    assert_eq!(
        master_identity(&m, "/bots/b1").as_deref(),
        Some("in-chroot")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_auth_reads_protected_trees_and_wrong_credentials_are_explained() {
    let zk = shared_server();
    let base = unique_path("acl");
    let election = format!("{base}/e");
    let owner = client(&zk.address()).await;
    owner.auth("digest", b"bot:right-password").await.unwrap();
    mkdir(&owner, &base).await;
    let acl = [zookeeper_client::Acl::new(
        Permission::ALL,
        AuthId::authed(),
    )];
    let protected = CreateMode::Persistent.with_acls(Acls::new(&acl));
    owner.create(&election, b"", &protected).await.unwrap();
    let (_, seq) = owner
        .create(
            &format!("{election}/n_"),
            b"secured",
            &CreateMode::EphemeralSequential.with_acls(Acls::new(&acl)),
        )
        .await
        .unwrap();
    let node = format!("n_{seq}");
    // The parent of the election is readable, the election itself is not.
    let glob = format!("{base}/*");

    let good = Exporter::start(&cluster_config(
        &zk.address(),
        &glob,
        "auth = { scheme = \"digest\", credentials = \"bot:right-password\" }",
    ));
    until(&good, "protected master", |m| {
        master_node(m, &election) == Some(node.clone())
    })
    .await;

    let bad = Exporter::start(&cluster_config(
        &zk.address(),
        &glob,
        "auth = { credentials = \"bot:wrong-password\" }",
    ));
    let body = bad.until_not_ready("not authorized", T).await;
    assert!(body.contains("check the digest credentials"), "{body}");
    let m = bad.metrics().unwrap();
    assert_eq!(
        m.get("zookeeper_tree_synced", &[("tree", &*glob)]),
        Some(0.0)
    );
    assert!(
        !bad.log().contains("wrong-password"),
        "secrets never reach the log"
    );
    assert!(!body.contains("wrong-password"));
}

/// The fallback for ZooKeeper 3.4/3.5 (one-shot child watches, plain reads),
/// forced on this 3.8 server so its code path runs for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneshot_watch_mode_follows_joins_switches_and_new_elections() {
    let zk = shared_server();
    let base = unique_path("oneshot");
    let e1 = format!("{base}/a/members/e1");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &e1).await;
    let master = client(&zk.address()).await;
    let m_node = candidate(&master, &e1, "n_", b"first").await;
    let glob = format!("{base}/*/members/*");
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &glob,
        "watch_mode = \"oneshot\"",
    ));
    until(&exporter, "master", |m| {
        master_node(m, &e1) == Some(m_node.clone())
    })
    .await;

    let s_node = candidate(&admin, &e1, "n_", b"second").await;
    until(&exporter, "join", |m| {
        value(m, "zookeeper_election_candidates", &e1) == 2.0
    })
    .await;
    drop(master);
    let m = until(&exporter, "switch", |m| {
        master_node(m, &e1) == Some(s_node.clone())
    })
    .await;
    assert_eq!(
        value(&m, "zookeeper_election_master_changes_total", &e1),
        1.0
    );
    assert_eq!(master_identity(&m, &e1).as_deref(), Some("second"));

    // A whole new branch under a wildcard, created after start-up.
    let e2 = format!("{base}/b/members/e2");
    mkdir(&admin, &e2).await;
    let n2 = candidate(&admin, &e2, "n_", b"b-one").await;
    let m = until(&exporter, "new branch", |m| {
        master_node(m, &e2) == Some(n2.clone())
    })
    .await;
    let tree = [("ensemble", "test"), ("tree", &*glob)];
    assert_eq!(m.sum("zookeeper_tree_elections", &tree), Some(2.0));
    let joins = m.get(
        "zookeeper_election_candidate_changes_total",
        &[("election", &*e2), ("change", "join")],
    );
    assert_eq!(joins, Some(1.0));

    admin.delete(&format!("{e2}/{n2}"), None).await.unwrap();
    admin.delete(&e2, None).await.unwrap();
    until(&exporter, "election removed", |m| {
        m.sum("zookeeper_tree_elections", &tree) == Some(1.0)
    })
    .await;
    // The re-armed watch still works after all that.
    let late = candidate(&admin, &e1, "n_", b"late").await;
    let m = until(&exporter, "late join", |m| {
        value(m, "zookeeper_election_candidates", &e1) == 2.0
    })
    .await;
    assert_eq!(master_node(&m, &e1), Some(s_node));
    assert!(late.starts_with("n_"));
    let ops = |op: &str| {
        m.series(
            "zookeeper_session_request_duration_seconds_count",
            &[("op", op)],
        )
    };
    assert!(
        !ops("list").is_empty(),
        "one-shot mode lists with child watches"
    );
    assert!(
        ops("multi_read").is_empty(),
        "one-shot mode never uses multi-reads"
    );
}
