//! Node-style elections against a real ZooKeeper, laid out as Kafka lays
//! out its controller: one EPHEMERAL `/controller` (under the cluster's
//! chroot) holding `{"version":1,"brokerid":N,"timestamp":"…"}`, re-created
//! by the next broker on failover. One failover by a closed session, one by
//! an abandoned session (its node stays until expiry), and one while the
//! agent is cut off: each counted exactly once. Known systems' payloads
//! and layouts are in tests/known_systems.rs.

mod common;

use std::time::Duration;

use common::node_agent::*;
use common::*;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(40);

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
    assert_eq!(controller_switches(&m), Some(0.0));
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
            controller(m).as_deref() == Some("2") && controller_switches(m) == Some(1.0)
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
            controller(m).as_deref() == Some("3") && controller_switches(m) == Some(2.0)
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
        controller_switches(&m),
        Some(3.0),
        "the switch during the outage counts once"
    );
    assert_eq!(m.get("zookeeper_election_has_master", &labels()), Some(1.0));
    drop(broker4);
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
    let counted = |m: &Metrics| -> f64 {
        m.series("zookeeper_election_master_changes_total", &[])
            .iter()
            .map(|(_, v)| v)
            .sum()
    };
    exporter
        .until("switches of simulated node elections", T, |m| {
            counted(m) >= 1.0
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
        counted(&m) >= 1.0 && counted(&m) <= lost,
        "{} switches, {summary}",
        counted(&m)
    );
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
