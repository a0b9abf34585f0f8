//! Zero-config discovery and the cardinality guard against a real ZooKeeper.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client::{Acls, Client, CreateMode};

const T: Duration = Duration::from_secs(40);

async fn create(c: &Client, path: &str, mode: CreateMode, data: &[u8]) -> String {
    let (_, seq) = c
        .create(path, data, &mode.with_acls(Acls::anyone_all()))
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    match mode {
        CreateMode::EphemeralSequential | CreateMode::PersistentSequential => {
            format!("{path}{seq}")
        }
        _ => path.to_owned(),
    }
}

/// A namespace with one of each: elections, a kazoo and a Curator lock,
/// HBase region servers and a backup master (13-digit startcodes that end
/// in ten digits), a registry, a persistent sequential queue and plain
/// configuration nodes.
async fn populate(c: &Client, base: &str) {
    for e in [
        "bots/bot_1",
        "bots/bot_2",
        "locks/resource_a",
        "locks/resource_b",
        "hbase/rs",
        "hbase/backup-masters",
        "services/api",
        "services/web",
        "queue",
        "config",
    ] {
        mkdir(c, &format!("{base}/{e}")).await;
    }
    candidate(c, &format!("{base}/bots/bot_1"), "instance_", b"phone-1").await;
    candidate(c, &format!("{base}/bots/bot_1"), "instance_", b"phone-2").await;
    candidate(c, &format!("{base}/bots/bot_2"), "instance_", b"phone-3").await;
    candidate(
        c,
        &format!("{base}/locks/resource_a"),
        "7c2e1f3a-9b1d-4c55-8e0f-1a2b3c4d5e6f__lock__",
        b"",
    )
    .await;
    candidate(
        c,
        &format!("{base}/locks/resource_b"),
        "_c_2f1e0d9c-8b7a-4c5d-9e8f-0a1b2c3d4e5f-lock-",
        b"10.0.0.9",
    )
    .await;
    for rs in [
        "rs1.example.com,16020,1700000000123",
        "rs2.example.com,16020,1700000004567",
    ] {
        create(
            c,
            &format!("{base}/hbase/rs/{rs}"),
            CreateMode::Ephemeral,
            b"",
        )
        .await;
    }
    create(
        c,
        &format!("{base}/hbase/backup-masters/m2.example.com,16000,1700000009999"),
        CreateMode::Ephemeral,
        b"",
    )
    .await;
    create(
        c,
        &format!("{base}/services/api/10.0.0.1:8080"),
        CreateMode::Ephemeral,
        b"",
    )
    .await;
    create(
        c,
        &format!("{base}/services/web/10.0.0.2:8080"),
        CreateMode::Ephemeral,
        b"",
    )
    .await;
    for _ in 0..3 {
        create(
            c,
            &format!("{base}/queue/item-"),
            CreateMode::PersistentSequential,
            b"job",
        )
        .await;
    }
    create(
        c,
        &format!("{base}/config/db"),
        CreateMode::Persistent,
        b"url=...",
    )
    .await;
    create(
        c,
        &format!("{base}/config/app"),
        CreateMode::Persistent,
        b"x=1",
    )
    .await;
}

/// Waits until the exporter watches at least `n` trees; returns them.
async fn until_trees(exporter: &Exporter, n: usize) -> Vec<(String, String, String)> {
    wait_for_async("discovered trees", T, || {
        let t = watched_trees(exporter)?;
        if t.len() >= n {
            Ok(t)
        } else {
            Err(format!("{t:?}"))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_classifies_every_kind_of_tree() {
    let zk = shared_server();
    let base = unique_path("discover");
    let c = client(&zk.address()).await;
    populate(&c, &base).await;
    let extra = format!("[clusters.discovery]\nroot = \"{base}\"\ninterval = \"1s\"");
    let exporter = Exporter::start(&discovery_config(&zk.address(), &extra));
    let d = |k: &str, v: &str| (format!("{base}/{k}"), v.to_owned(), "discovered".to_owned());
    let expected = vec![
        d("bots/*", "election"),
        d("hbase/*", "group"),
        d("locks/*", "lock"),
        d("services/*", "group"),
    ];
    let found = until_trees(&exporter, 4).await;
    assert_eq!(
        found, expected,
        "locks are locks, region servers a group, the queue and the config nodes no trees"
    );

    let bot_1 = format!("{base}/bots/bot_1");
    let lock = format!("{base}/locks/resource_a");
    let lock_labels = [("ensemble", "test"), ("lock", lock.as_str())];
    let (resource_b, rs, api) = (
        format!("{base}/locks/resource_b"),
        format!("{base}/hbase/rs"),
        format!("{base}/services/api"),
    );
    let kinds = |kind| [("ensemble", "test"), ("kind", kind)];
    let (election, group, lock_kind) = (kinds("election"), kinds("group"), kinds("lock"));
    // Every value below comes from trees listed one after another: wait
    // for all of them in one scrape.
    let m = exporter
        .until_values(
            "every discovered tree exported",
            T,
            &[
                (
                    "zookeeper_election_candidates",
                    &election_labels(&bot_1),
                    Some(2.0),
                ),
                ("zookeeper_lock_held", &lock_labels, Some(1.0)),
                (
                    "zookeeper_lock_holders",
                    &[("lock", &resource_b)],
                    Some(1.0),
                ),
                ("zookeeper_group_members", &[("group", &rs)], Some(2.0)),
                ("zookeeper_group_members", &[("group", &api)], Some(1.0)),
                ("zookeeper_discovery_trees", &election, Some(1.0)),
                ("zookeeper_discovery_trees", &group, Some(2.0)),
                ("zookeeper_discovery_trees", &lock_kind, Some(1.0)),
                (
                    "zookeeper_discovery_truncated",
                    &[("ensemble", "test")],
                    Some(0.0),
                ),
            ],
        )
        .await;
    assert_eq!(master_identity(&m, &bot_1).as_deref(), Some("phone-1"));
    assert_eq!(
        m.series("zookeeper_election_has_master", &[])
            .iter()
            .filter(|(l, _)| !l["election"].starts_with(&format!("{base}/bots/")))
            .count(),
        0,
        "no election but the bots"
    );
    assert!(
        m.get("zookeeper_discovery_nodes_walked", &[("ensemble", "test")])
            .unwrap()
            >= 10.0
    );
    assert!(
        m.get(
            "zookeeper_discovery_last_run_timestamp_seconds",
            &[("ensemble", "test")]
        )
        .is_some()
    );

    // The kazoo lock is released: free, which is normal, and still no
    // election anywhere to go masterless.
    for child in c.list_children(&lock).await.unwrap() {
        c.delete(&format!("{lock}/{child}"), None).await.unwrap();
    }
    let m = exporter
        .until("the released lock", T, |m| {
            m.get("zookeeper_lock_held", &lock_labels) == Some(0.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lock_waiters", &lock_labels), Some(0.0));
    assert_eq!(
        m.get("zookeeper_election_has_master", &election_labels(&lock)),
        None
    );

    // A tree created after start-up is found by the next walk.
    let late = format!("{base}/late/leader");
    mkdir(&c, &late).await;
    candidate(&c, &late, "n_", b"late-one").await;
    exporter
        .until("the late tree", T, |m| {
            m.get("zookeeper_election_has_master", &election_labels(&late)) == Some(1.0)
        })
        .await;
    let t = watched_trees(&exporter).unwrap();
    assert!(
        t.contains(&(late.clone(), "election".into(), "discovered".into())),
        "{t:?}"
    );
    assert_eq!(exporter.ready().0, 200);
    let info = [
        ("tree", late.as_str()),
        ("kind", "election"),
        ("source", "discovered"),
    ];
    assert_eq!(
        exporter
            .metrics()
            .unwrap()
            .get("zookeeper_tree_info", &info),
        Some(1.0)
    );

    // The late tree is removed: the next walk drops it with its series.
    for child in c.list_children(&late).await.unwrap() {
        c.delete(&format!("{late}/{child}"), None).await.unwrap();
    }
    c.delete(&late, None).await.unwrap();
    c.delete(&format!("{base}/late"), None).await.unwrap();
    exporter
        .until("the vanished tree dropped", T, |m| {
            m.get("zookeeper_tree_info", &info).is_none()
        })
        .await;
    let t = watched_trees(&exporter).unwrap();
    assert!(!t.iter().any(|(p, _, _)| *p == late), "{t:?}");
    // Watches were placed again for the trees that moved: changes still arrive.
    let bot_2 = format!("{base}/bots/bot_2");
    candidate(&c, &bot_2, "instance_", b"phone-9").await;
    let m = exporter
        .until("the other trees still followed", T, |m| {
            m.get("zookeeper_election_candidates", &election_labels(&bot_2)) == Some(2.0)
        })
        .await;
    assert_eq!(
        m.get("zookeeper_election_has_master", &election_labels(&late)),
        None
    );
    assert_eq!(exporter.ready().0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_trees_win_over_discovered_ones() {
    let zk = shared_server();
    let base = unique_path("precedence");
    let c = client(&zk.address()).await;
    populate(&c, &base).await;
    let extra = format!(
        "[[clusters.elections]]\npath = \"{base}/bots/*\"\nidentity = \"node\"\n[clusters.discovery]\nenabled = true\nroot = \"{base}\"\ninterval = \"1s\""
    );
    let exporter = Exporter::start(&discovery_config(&zk.address(), &extra));
    let found = until_trees(&exporter, 3).await;
    let bots: Vec<_> = found
        .iter()
        .filter(|(p, _, _)| p.contains("/bots"))
        .collect();
    assert_eq!(
        bots,
        vec![&(
            format!("{base}/bots/*"),
            "election".to_owned(),
            "configured".to_owned()
        )]
    );
    let bot_1 = format!("{base}/bots/bot_1");
    let m = exporter
        .until("the configured election listed", T, |m| {
            m.get("zookeeper_election_has_master", &election_labels(&bot_1)) == Some(1.0)
        })
        .await;
    assert_eq!(
        m.series("zookeeper_election_master", &election_labels(&bot_1))
            .len(),
        1,
        "exported once"
    );
    assert!(
        master_identity(&m, &bot_1)
            .unwrap()
            .starts_with("instance_"),
        "the configured identity mode wins"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_cut_short_by_max_nodes_says_so_and_the_agent_stays_healthy() {
    let zk = shared_server();
    let base = unique_path("truncate");
    let c = client(&zk.address()).await;
    populate(&c, &base).await;
    let extra =
        format!("[clusters.discovery]\nroot = \"{base}\"\nmax_nodes = 3\ninterval = \"1s\"");
    let exporter = Exporter::start(&discovery_config(&zk.address(), &extra));
    let m = exporter
        .until("truncated walk", T, |m| {
            m.get("zookeeper_discovery_truncated", &[("ensemble", "test")]) == Some(1.0)
        })
        .await;
    assert_eq!(
        m.get("zookeeper_discovery_nodes_walked", &[("ensemble", "test")]),
        Some(3.0)
    );
    assert_eq!(http_get(exporter.port, "/healthz").unwrap().0, 200);
    assert_eq!(exporter.ready().0, 200, "a truncated walk is not a failure");
    assert!(exporter.log().contains("discovery stopped after max_nodes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_guard_caps_watched_elections() {
    let zk = shared_server();
    let base = unique_path("guard");
    let c = client(&zk.address()).await;
    for i in 0..5 {
        let e = format!("{base}/e{i}");
        mkdir(&c, &e).await;
        candidate(&c, &e, "n_", b"x").await;
    }
    let extra = format!("max_tracked_elections = 3\n[[clusters.elections]]\npath = \"{base}/*\"");
    let exporter = Exporter::start(&discovery_config(&zk.address(), &extra));
    let m = exporter
        .until("guard applied", T, |m| {
            m.get(
                "zookeeper_exporter_series_dropped_total",
                &[("ensemble", "test"), ("kind", "election")],
            ) == Some(2.0)
        })
        .await;
    assert_eq!(
        m.series("zookeeper_election_candidates", &[("ensemble", "test")])
            .len(),
        3
    );
    // A new election beyond the cap is declined and counted, the agent serves on.
    let e = format!("{base}/e9");
    mkdir(&c, &e).await;
    exporter
        .until("new election declined", T, |m| {
            m.get(
                "zookeeper_exporter_series_dropped_total",
                &[("ensemble", "test"), ("kind", "election")],
            ) == Some(3.0)
        })
        .await;
    assert_eq!(
        exporter.log().matches("memory guards").count(),
        1,
        "warned once"
    );
}

/// Discovery recognises known systems wherever they live: a Kafka and an
/// HDFS layout under a walk root become their systems' trees (node
/// elections with epoch, standbys and record), marked `recognised`, and
/// their registries are not found again as generic groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_recognises_known_systems_at_any_root() {
    let zk = shared_server();
    let base = unique_path("recognise");
    let c = client(&zk.address()).await;
    let kafka = format!("{base}/kafka");
    let ns1 = format!("{base}/hadoop-ha/ns1");
    mkdir(&c, &format!("{kafka}/brokers/ids")).await;
    mkdir(&c, &format!("{kafka}/brokers/topics")).await;
    mkdir(&c, &ns1).await;
    create(
        &c,
        &format!("{kafka}/controller_epoch"),
        CreateMode::Persistent,
        &payloads::kafka_controller_epoch(7),
    )
    .await;
    for id in ["1", "2", "3"] {
        create(
            &c,
            &format!("{kafka}/brokers/ids/{id}"),
            CreateMode::Ephemeral,
            &payloads::kafka_broker(&format!("b{id}.example.com"), 9092, 1_700_000_000_000),
        )
        .await;
    }
    create(
        &c,
        &format!("{kafka}/controller"),
        CreateMode::Ephemeral,
        &payloads::kafka_controller(3, 1_700_000_000_000),
    )
    .await;
    create(
        &c,
        &format!("{ns1}/ActiveStandbyElectorLock"),
        CreateMode::Ephemeral,
        &payloads::hdfs_active("ns1", "nn1", "nn1.example.com", 8020, 8019),
    )
    .await;
    create(
        &c,
        &format!("{ns1}/ActiveBreadCrumb"),
        CreateMode::Persistent,
        &payloads::hdfs_active("ns1", "nn1", "nn1.example.com", 8020, 8019),
    )
    .await;
    let extra = format!("[clusters.discovery]\nroot = \"{base}\"\ninterval = \"1s\"");
    let exporter = Exporter::start(&discovery_config(&zk.address(), &extra));
    let found = until_trees(&exporter, 3).await;
    let r = |k: &str, v: &str| (format!("{base}/{k}"), v.to_owned(), "recognised".to_owned());
    for tree in [
        r("kafka/controller", "election"),
        r("kafka/brokers/ids", "group"),
        r("hadoop-ha/*/ActiveStandbyElectorLock", "election"),
    ] {
        assert!(found.contains(&tree), "{tree:?} in {found:?}");
    }
    assert_eq!(
        found
            .iter()
            .filter(|(p, _, _)| p.ends_with("/brokers/ids"))
            .count(),
        1,
        "the registry is the system's, not a second generic group: {found:?}"
    );
    let controller = format!("{kafka}/controller");
    let e = election_labels(&controller);
    // The epoch and the candidates (the broker registry) are read with
    // other trees than the controller: wait for all of them.
    let m = exporter
        .until_values(
            "the recognised controller with its epoch and brokers",
            T,
            &[
                ("zookeeper_election_has_master", &e, Some(1.0)),
                ("zookeeper_election_epoch", &e, Some(7.0)),
                ("zookeeper_election_candidates", &e, Some(3.0)),
            ],
        )
        .await;
    assert_eq!(master_identity(&m, &controller).as_deref(), Some("3"));
    let lock = format!("{ns1}/ActiveStandbyElectorLock");
    let m = exporter
        .until("the recognised nameservice's active namenode", T, |m| {
            master_identity(m, &lock).is_some()
        })
        .await;
    assert_eq!(master_identity(&m, &lock).as_deref(), Some("nn1"));
    assert_eq!(
        m.get("zookeeper_election_discovered", &e),
        None,
        "a recognised system pages like a configured one"
    );
}
