//! Node-style elections against a real ZooKeeper, laid out as Kafka lays
//! out its controller: one EPHEMERAL `/controller` (under the cluster's
//! chroot) holding `{"version":1,"brokerid":N,"timestamp":"…"}`, re-created
//! by the next broker on failover. One failover by a closed session, one by
//! an abandoned session (its node stays until expiry), and one while the
//! agent is cut off: each counted exactly once.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(40);

fn config(servers: &str, chroot: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{servers}\"]\nchroot = \"{chroot}\"\n\
         session_timeout = \"15s\"\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"/controller\"\nstyle = \"node\"\nidentity = \"json:/brokerid\"\n\
         standbys = \"/brokers/ids\"\nepoch = \"/controller_epoch\"\n"
    )
}

/// The quick start: `--zk` and one `--system KIND:ROOT` per entry, no
/// configuration file (the cluster is named `default`).
fn with_systems(zk: &ZkServer, systems: &[String]) -> Exporter {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut list = vec![
        "--zk".to_owned(),
        zk.address(),
        "--no-four-letter-words".into(),
    ];
    for s in systems {
        list.extend(["--system".to_owned(), s.clone()]);
    }
    list.extend(["--web.listen-address".to_owned(), listen]);
    Exporter::spawn(&list, &[], port)
}

fn labels() -> [(&'static str, &'static str); 2] {
    [("ensemble", "test"), ("election", "/controller")]
}

fn controller(m: &Metrics) -> Option<String> {
    m.series("zookeeper_election_master", &labels())
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

fn switches(m: &Metrics) -> Option<f64> {
    m.get("zookeeper_election_master_changes_total", &labels())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_controller_failovers_are_counted_once_each() {
    let zk = shared_server();
    let proxy = Proxy::start(zk.address()).await;
    let root = unique_path("kafka");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &format!("{root}/brokers/ids")).await;
    admin
        .create(
            &format!("{root}/controller_epoch"),
            &payloads::kafka_controller_epoch(5),
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    // Every broker registers under brokers/ids, the controller too.
    for id in ["1", "2", "3", "4"] {
        admin
            .create(
                &format!("{root}/brokers/ids/{id}"),
                &payloads::kafka_broker(
                    &format!("broker{id}.example.com"),
                    9092,
                    1_700_000_000_000,
                ),
                &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
            )
            .await
            .unwrap();
    }
    let broker1 = client(&zk.address()).await;
    become_controller(&broker1, &root, 1).await;
    let exporter = Exporter::start(&config(&proxy.address(), &root));
    // The standbys come from another tree (brokers/ids), which may sync a
    // scrape after the controller's: wait for both, assert what was waited.
    let m = exporter
        .until("broker 1 is controller, its standbys read", T, |m| {
            controller(m).as_deref() == Some("1")
                && m.get("zookeeper_election_candidates", &labels()).is_some()
                && m.get("zookeeper_group_members", &[("group", "/brokers/ids")])
                    .is_some()
        })
        .await;
    assert_eq!(m.get("zookeeper_election_has_master", &labels()), Some(1.0));
    assert_eq!(switches(&m), Some(0.0));
    assert_eq!(
        m.get("zookeeper_election_candidates", &labels()),
        Some(4.0),
        "the controller and three standby brokers; broker 1 is counted once"
    );
    assert_eq!(m.get("zookeeper_election_epoch", &labels()), Some(5.0));
    assert_eq!(
        m.get("zookeeper_group_members", &[("group", "/brokers/ids")]),
        Some(4.0),
        "the standby registry is a group too"
    );
    // A stale controller writes an older epoch: a fencing failure.
    let epoch = format!("{root}/controller_epoch");
    let write = |n| payloads::kafka_controller_epoch(n);
    admin.set_data(&epoch, &write(6), None).await.unwrap();
    admin.set_data(&epoch, &write(4), None).await.unwrap();
    exporter
        .until("the epoch regression", T, |m| {
            m.get("zookeeper_election_epoch_regressions_total", &labels()) == Some(1.0)
        })
        .await;

    // Broker 1 shuts down cleanly: masterless until broker 2 takes over.
    drop(broker1);
    exporter
        .until("masterless", T, |m| {
            m.get("zookeeper_election_has_master", &labels()) == Some(0.0)
        })
        .await;
    let broker2 = abandonable_client(&zk.address(), Duration::from_secs(2)).await;
    become_controller(&broker2, &root, 2).await;
    exporter
        .until("broker 2 is controller", T, |m| {
            controller(m).as_deref() == Some("2") && switches(m) == Some(1.0)
        })
        .await;

    // Broker 2 crashes (session abandoned): its node stays until expiry,
    // then broker 3 takes over.
    drop(broker2);
    let broker3 = client(&zk.address()).await;
    eventually(
        "broker 2 to expire and broker 3 to take over",
        T,
        || async {
            let data = payloads::kafka_controller(3, 1_700_000_000_001);
            match broker3
                .create(
                    &format!("{root}/controller"),
                    &data,
                    &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
                )
                .await
            {
                Ok(_) => Ok(()),
                Err(zookeeper_client::Error::NodeExists) => Err("broker 2's node stays".to_owned()),
                Err(e) => panic!("broker 3: {e}"),
            }
        },
    )
    .await;
    exporter
        .until("broker 3 is controller", T, |m| {
            controller(m).as_deref() == Some("3") && switches(m) == Some(2.0)
        })
        .await;

    // The agent is cut off while broker 3 dies and broker 4 takes over:
    // found at the resync, counted once.
    proxy.cut();
    exporter
        .until("agent disconnected", T, |m| {
            m.get(
                "zookeeper_tree_synced",
                &[("ensemble", "test"), ("tree", "/controller")],
            ) == Some(0.0)
        })
        .await;
    drop(broker3);
    let broker4 = client(&zk.address()).await;
    until_gone(&admin, &format!("{root}/controller"), T).await;
    become_controller(&broker4, &root, 4).await;
    proxy.restore();
    let m = exporter
        .until("broker 4 is controller after the resync", T, |m| {
            controller(m).as_deref() == Some("4")
        })
        .await;
    assert_eq!(
        switches(&m),
        Some(3.0),
        "the switch during the outage counts once"
    );
    assert_eq!(m.get("zookeeper_election_has_master", &labels()), Some(1.0));
    drop(broker4);
}

/// Hex to bytes, for the byte-exact payloads below.
fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// HBase's `/hbase/master` as HBase 2.6 writes it: `0xFF`, the length 20
/// of `master:16000` and an 8-byte salt, `PBUF`, then `Master{ServerName{
/// m1.example.com, 16000, 1700000000123}, rpc_version 0, info_port 16010}`.
const HBASE_MASTER: &str = "ff000000146d61737465723a31363030305a17c0ffee010203504255460a1a0a0e6d312e6578616d706c652e636f6d10807d18fbd095ffbc311000188a7d";
/// Hadoop 3.4 ZKFC's `ActiveNodeInfo{ns1, nn2, nn2.example.com, 8020, 8019}`.
const HDFS_ACTIVE: &str = "0a036e733112036e6e321a0f6e6e322e6578616d706c652e636f6d20d43e28d33e";

/// The literal bytes above are what the systems' encoders make of them.
#[test]
fn the_payloads_are_the_systems_own_bytes() {
    assert_eq!(
        payloads::hex(&payloads::hbase_master(
            "m1.example.com",
            16000,
            1_700_000_000_123,
            16010
        )),
        HBASE_MASTER
    );
    assert_eq!(
        payloads::hex(&payloads::hdfs_active(
            "ns1",
            "nn2",
            "nn2.example.com",
            8020,
            8019
        )),
        HDFS_ACTIVE
    );
    assert_eq!(
        String::from_utf8(payloads::kafka_controller(3, 1_700_000_000_001)).unwrap(),
        r#"{"version":2,"brokerid":3,"timestamp":"1700000000001","kraftControllerEpoch":-1}"#
    );
}

/// HBase's master and HDFS's active namenode, with their binary payloads:
/// the identity comes out as `host:port` and the namenode id, and the
/// persistent HDFS breadcrumb beside the lock is no master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hbase_and_hdfs_masters_are_named_from_their_protobuf_payloads() {
    let zk = shared_server();
    let root = unique_path("hadoop");
    let admin = client(&zk.address()).await;
    let (hbase, ns1) = (format!("{root}/hbase"), format!("{root}/hadoop-ha/ns1"));
    mkdir(&admin, &hbase).await;
    mkdir(&admin, &ns1).await;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let master = client(&zk.address()).await;
    master
        .create(&format!("{hbase}/master"), &unhex(HBASE_MASTER), &ephemeral)
        .await
        .unwrap();
    let zkfc = client(&zk.address()).await;
    zkfc.create(
        &format!("{ns1}/ActiveStandbyElectorLock"),
        &unhex(HDFS_ACTIVE),
        &ephemeral,
    )
    .await
    .unwrap();
    admin
        .create(
            &format!("{ns1}/ActiveBreadCrumb"),
            &unhex(HDFS_ACTIVE),
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{hbase}/master\"\nstyle = \"node\"\nidentity = \"hbase\"\n\
         [[clusters.elections]]\npath = \"{root}/hadoop-ha/*/ActiveStandbyElectorLock\"\nstyle = \"node\"\nidentity = \"hdfs\"\n\
         record = {{ path = \"{root}/hadoop-ha/*/ActiveBreadCrumb\", identity = \"hdfs\" }}\n",
        zk.address()
    ));
    let identity = |m: &Metrics, e: &str| master_identity(m, e);
    let (hbase_master, hdfs_lock) = (
        format!("{hbase}/master"),
        format!("{ns1}/ActiveStandbyElectorLock"),
    );
    let hdfs = election_labels(&hdfs_lock);
    // The breadcrumb is read after the lock's listing is applied: wait for
    // it too, so the agreement below is a value, not a race.
    let m = exporter
        .until("both masters named, the breadcrumb read", T, |m| {
            identity(m, &hbase_master).is_some()
                && identity(m, &hdfs_lock).is_some()
                && m.get("zookeeper_election_record_agrees", &hdfs).is_some()
        })
        .await;
    assert_eq!(
        identity(&m, &hbase_master).as_deref(),
        Some("m1.example.com:16000")
    );
    assert_eq!(identity(&m, &hdfs_lock).as_deref(), Some("nn2"));
    assert_eq!(
        m.series("zookeeper_election_has_master", &[]).len(),
        2,
        "the breadcrumb is no election"
    );
    assert_eq!(m.get("zookeeper_election_record_agrees", &hdfs), Some(1.0));
    // The breadcrumb names another namenode than the lock's owner.
    let other: Vec<u8> = unhex(HDFS_ACTIVE)
        .into_iter()
        .map(|b| if b == b'2' { b'1' } else { b })
        .collect();
    admin
        .set_data(&format!("{ns1}/ActiveBreadCrumb"), &other, None)
        .await
        .unwrap();
    exporter
        .until("the record disagrees", T, |m| {
            m.get("zookeeper_election_record_agrees", &hdfs) == Some(0.0)
        })
        .await;
    // The active namenode fails over: the lock is gone, the nameservice
    // masterless until the standby's ZKFC takes it.
    drop(zkfc);
    exporter
        .until("ns1 masterless", T, |m| {
            m.get(
                "zookeeper_election_has_master",
                &election_labels(&hdfs_lock),
            ) == Some(0.0)
        })
        .await;
    drop(master);
}

/// `simulate --style node` builds node elections for real: its kills show
/// as switches, never more than the masterships it says it took away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_node_elections_switch_as_simulate_reports() {
    let zk = shared_server();
    let base = unique_path("simnode");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/*/leader\"\nstyle = \"node\"\n",
        zk.address()
    ));
    let sim = simulate(zk, &base)
        .args(["--style", "node"])
        .args(["--elections", "3", "--candidates", "2", "--kill-rate", "4"])
        .args(["--abandon-ratio", "0", "--duration", "4s"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let switches = |m: &Metrics| -> f64 {
        m.series("zookeeper_election_master_changes_total", &[])
            .iter()
            .map(|(_, v)| v)
            .sum()
    };
    exporter
        .until("switches of simulated node elections", T, |m| {
            switches(m) >= 1.0
                && m.series("zookeeper_election_master", &[])
                    .iter()
                    .any(|(l, _)| l["identity"].starts_with("sim-process-"))
        })
        .await;
    let out = tokio::task::block_in_place(|| sim.wait_with_output()).unwrap();
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = log
        .lines()
        .find(|l| l.starts_with("simulate: stopping;"))
        .unwrap_or_else(|| panic!("no summary in {log}"));
    let lost: f64 = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse::<f64>().ok())
        .nth(3)
        .unwrap();
    // All sessions closed: every election masterless, and no standby took
    // over at the end, so the switches are the re-claims after kills.
    let m = exporter
        .until("all masterless after simulate stopped", T, |m| {
            let has: Vec<(Labels, f64)> = m.series("zookeeper_election_has_master", &[]);
            has.len() == 3 && has.iter().all(|(_, v)| *v == 0.0)
        })
        .await;
    assert!(
        switches(&m) >= 1.0 && switches(&m) <= lost,
        "{} switches, {summary}",
        switches(&m)
    );
}

/// `--system kafka:ROOT --system hbase:ROOT` on the command line: the
/// controller with its brokers and epoch, HBase's master with its backup
/// and its region servers (13-digit startcodes), all as the systems write
/// them, from two flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_systems_from_the_command_line() {
    let zk = shared_server();
    let root = unique_path("systems");
    let (kafka, hbase) = (format!("{root}/kafka"), format!("{root}/hbase"));
    let admin = client(&zk.address()).await;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    mkdir(&admin, &format!("{kafka}/brokers/ids")).await;
    mkdir(&admin, &format!("{hbase}/backup-masters")).await;
    mkdir(&admin, &format!("{hbase}/rs")).await;
    admin
        .create(
            &format!("{kafka}/controller_epoch"),
            &payloads::kafka_controller_epoch(3),
            &persistent,
        )
        .await
        .unwrap();
    for id in ["1", "2"] {
        let registration =
            payloads::kafka_broker(&format!("b{id}.example.com"), 9092, 1_700_000_000_000);
        admin
            .create(
                &format!("{kafka}/brokers/ids/{id}"),
                &registration,
                &ephemeral,
            )
            .await
            .unwrap();
    }
    become_controller(&admin, &kafka, 2).await;
    admin
        .create(&format!("{hbase}/master"), &unhex(HBASE_MASTER), &ephemeral)
        .await
        .unwrap();
    for backup in ["m2.example.com,16000,1700000009999"] {
        let data = payloads::hbase_master("m2.example.com", 16000, 1_700_000_009_999, 16010);
        admin
            .create(
                &format!("{hbase}/backup-masters/{backup}"),
                &data,
                &ephemeral,
            )
            .await
            .unwrap();
    }
    for rs in [
        "rs1.example.com,16020,1700000000123",
        "rs2.example.com,16020,1700000004567",
    ] {
        admin
            .create(
                &format!("{hbase}/rs/{rs}"),
                &payloads::hbase_region_server(16020, 16030),
                &ephemeral,
            )
            .await
            .unwrap();
    }
    let exporter = with_systems(zk, &[format!("kafka:{kafka}"), format!("hbase:{hbase}")]);
    let controller = format!("{kafka}/controller");
    let master = format!("{hbase}/master");
    // The quick start names its cluster `default`.
    let identity = |m: &Metrics, e: &str| {
        m.series(
            "zookeeper_election_master",
            &[("ensemble", "default"), ("election", e)],
        )
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
    };
    let get = |m: &Metrics, name: &str, e: &str| m.get(name, &[("election", e)]);
    let rs = format!("{hbase}/rs");
    // The elections, their standby registries and the region servers are
    // separate trees, synced independently: wait for every one of them, so
    // what follows asserts values, never which tree happened to come first.
    let m = exporter
        .until("both systems and their registries read", T, |m| {
            identity(m, &controller).is_some()
                && identity(m, &master).is_some()
                && get(m, "zookeeper_election_candidates", &controller).is_some()
                && get(m, "zookeeper_election_candidates", &master).is_some()
                && get(m, "zookeeper_election_epoch", &controller).is_some()
                && m.get("zookeeper_group_members", &[("group", &*rs)])
                    .is_some()
        })
        .await;
    assert_eq!(identity(&m, &controller).as_deref(), Some("2"));
    assert_eq!(
        get(&m, "zookeeper_election_candidates", &controller),
        Some(2.0)
    );
    assert_eq!(get(&m, "zookeeper_election_epoch", &controller), Some(3.0));
    assert_eq!(
        identity(&m, &master).as_deref(),
        Some("m1.example.com:16000")
    );
    assert_eq!(
        get(&m, "zookeeper_election_candidates", &master),
        Some(2.0),
        "the active master and one backup"
    );
    assert_eq!(
        m.get("zookeeper_group_members", &[("group", &*rs)]),
        Some(2.0),
        "region servers are a group, never an election"
    );
    assert_eq!(m.series("zookeeper_election_has_master", &[]).len(), 2);
}

/// Solr's overseer: a sequential election (`overseer_elect/election`,
/// candidates `<session>-<node>-n_<seq>`) whose winner writes
/// `overseer_elect/leader` = `{"id": "<its candidate node name>"}` as an
/// ephemeral node of its own session. `--system solr` follows both: the
/// record agrees, disagrees when it names another node, is absent while
/// the winner's record is gone, and agrees again once the next overseer
/// writes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solr_overseer_record_is_read_beside_its_sequential_election() {
    let zk = shared_server();
    let solr = format!("{}/solr", unique_path("solr"));
    let election = format!("{solr}/overseer_elect/election");
    let leader = format!("{solr}/overseer_elect/leader");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    mkdir(&admin, &format!("{solr}/collections")).await;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    // Two Solr nodes stand; the first one's candidate is the lowest.
    let mut nodes = Vec::new();
    for host in ["10.0.0.1:8983_solr", "10.0.0.2:8983_solr"] {
        let c = client(&zk.address()).await;
        let prefix = format!("{}-{host}-n_", c.session_id().0);
        let (_, seq) = c
            .create(
                &format!("{election}/{prefix}"),
                b"",
                &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()),
            )
            .await
            .unwrap();
        nodes.push((c, format!("{prefix}{seq}")));
    }
    let record = |id: &str| format!(r#"{{"id":"{id}"}}"#).into_bytes();
    nodes[0]
        .0
        .create(&leader, &record(&nodes[0].1), &ephemeral)
        .await
        .unwrap();
    let exporter = with_systems(zk, &[format!("solr:{solr}")]);
    let labels = [("ensemble", "default"), ("election", election.as_str())];
    let agrees = |m: &Metrics| m.get("zookeeper_election_record_agrees", &labels);
    let m = exporter
        .until("the overseer's record read", T, |m| agrees(m).is_some())
        .await;
    assert_eq!(agrees(&m), Some(1.0));
    assert_eq!(
        m.series("zookeeper_election_has_master", &[]).len(),
        1,
        "the leader record is no election"
    );
    // The record names another node than the lowest candidate.
    admin
        .set_data(&leader, &record("someone-else"), None)
        .await
        .unwrap();
    exporter
        .until("the record disagrees", T, |m| agrees(m) == Some(0.0))
        .await;
    // The overseer leaves: its candidate and its record go with its session.
    let (first, _) = nodes.remove(0);
    drop(first);
    let m = exporter
        .until("the record gone with its writer", T, |m| {
            agrees(m).is_none()
        })
        .await;
    assert_eq!(
        m.get("zookeeper_election_has_master", &labels),
        Some(1.0),
        "the second node is master"
    );
    // The next overseer writes its record.
    nodes[0]
        .0
        .create(&leader, &record(&nodes[0].1), &ephemeral)
        .await
        .unwrap();
    exporter
        .until("the new overseer's record agrees", T, |m| {
            agrees(m) == Some(1.0)
        })
        .await;
}

/// A node election with no `*` is watched node by node (its parent, its
/// node, its epoch), not by a recursive watch on its parent: writes
/// elsewhere in the chroot never reach it, and its parent deleted and
/// created again around its node, step by step or in one transaction,
/// ends where ZooKeeper is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_election_sees_only_its_own_nodes() {
    let zk = shared_server();
    let root = unique_path("nodes");
    let admin = client(&zk.address()).await;
    let elsewhere = format!("{root}/brokers/topics/t/state");
    mkdir(&admin, &elsewhere).await;
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nchroot = \"{root}\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"/app/leader\"\nstyle = \"node\"\nepoch = \"/app/epoch\"\n",
        zk.address()
    ));
    let tree = [("ensemble", "test"), ("tree", "/app/leader")];
    let election = [("ensemble", "test"), ("election", "/app/leader")];
    let master = |m: &Metrics| {
        m.series("zookeeper_election_master", &election)
            .first()
            .and_then(|(l, _)| l.get("identity").cloned())
    };
    let epoch = |m: &Metrics| m.get("zookeeper_election_epoch", &election);
    let has_master = |m: &Metrics| m.get("zookeeper_election_has_master", &election);
    let m = exporter
        .until("the tree synced", T, |m| {
            m.get("zookeeper_tree_synced", &tree) == Some(1.0)
        })
        .await;
    assert_eq!(has_master(&m), None, "no parent, no election");

    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let (app, leader, epoch_node) = (
        format!("{root}/app"),
        format!("{root}/app/leader"),
        format!("{root}/app/epoch"),
    );
    admin.create(&app, b"", &persistent).await.unwrap();
    admin.create(&epoch_node, b"3", &persistent).await.unwrap();
    let holder = client(&zk.address()).await;
    holder.create(&leader, b"a", &ephemeral).await.unwrap();
    // Five events so far: the parent created, then the epoch and the node
    // created, each with the parent's children changed. They come on three
    // watches, so the parent's may arrive after the node's: wait for all.
    let events = |m: &Metrics| m.get("zookeeper_tree_watch_events_total", &tree);
    exporter
        .until("a is master at epoch 3, five events in", T, |m| {
            master(m).as_deref() == Some("a") && epoch(m) == Some(3.0) && events(m) == Some(5.0)
        })
        .await;
    // 200 writes elsewhere in the chroot, then one the tree does see: it
    // is seen with no event but its own (a recursive watch on the chroot
    // would have delivered all 201, in order, by then).
    for i in 0..200 {
        admin
            .set_data(&elsewhere, i.to_string().as_bytes(), None)
            .await
            .unwrap();
    }
    admin.set_data(&epoch_node, b"4", None).await.unwrap();
    let m = exporter
        .until("epoch 4", T, |m| epoch(m) == Some(4.0))
        .await;
    assert_eq!(events(&m), Some(6.0), "only the epoch's own event arrived");

    // The parent goes and comes back, one step at a time.
    admin.delete(&leader, None).await.unwrap();
    exporter
        .until("masterless", T, |m| has_master(m) == Some(0.0))
        .await;
    admin.delete(&epoch_node, None).await.unwrap();
    admin.delete(&app, None).await.unwrap();
    exporter
        .until("the election gone with its parent", T, |m| {
            has_master(m).is_none()
        })
        .await;
    admin.create(&app, b"", &persistent).await.unwrap();
    let m = exporter
        .until("the election back, masterless", T, |m| {
            has_master(m) == Some(0.0)
        })
        .await;
    assert_eq!(epoch(&m), None, "no epoch node yet");
    admin.create(&epoch_node, b"5", &persistent).await.unwrap();
    holder.create(&leader, b"b", &ephemeral).await.unwrap();
    exporter
        .until("b is master at epoch 5", T, |m| {
            master(m).as_deref() == Some("b") && epoch(m) == Some(5.0)
        })
        .await;

    // In one transaction: the master's node, the epoch and the parent
    // deleted and created again. Nobody can see the parent absent, and
    // the watches' events may be applied in any order across watches:
    // each time the agent must end with the new master and epoch.
    for i in 0..10u8 {
        let (who, next) = (format!("c{i}"), (6 + i).to_string());
        let mut multi = admin.new_multi_writer();
        multi.add_delete(&leader, None).unwrap();
        multi.add_delete(&epoch_node, None).unwrap();
        multi.add_delete(&app, None).unwrap();
        multi.add_create(&app, b"", &persistent).unwrap();
        multi
            .add_create(&epoch_node, next.as_bytes(), &persistent)
            .unwrap();
        multi
            .add_create(&leader, who.as_bytes(), &ephemeral)
            .unwrap();
        multi.commit().await.unwrap();
        let m = exporter
            .until(&format!("{who} is master at epoch {next}"), T, |m| {
                master(m).as_deref() == Some(who.as_str()) && epoch(m) == Some(f64::from(6 + i))
            })
            .await;
        assert_eq!(has_master(&m), Some(1.0));
    }
}
