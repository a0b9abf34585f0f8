//! Known systems' elections named from the systems' own bytes, against a
//! real ZooKeeper: HBase's and HDFS's protobuf payloads, the trees
//! `--system` expands to from the command line, and Solr's overseer record
//! read beside its sequential election.

mod common;

use std::time::Duration;

use common::node_agent::*;
use common::*;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(40);

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
