//! Ghost masters against a real ZooKeeper: a master process killed with
//! SIGKILL, and one frozen with SIGSTOP, seen through `cons` and `dump`.

mod common;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;
use zookeeper_client::AddWatchMode;

const T: Duration = Duration::from_secs(40);

/// A child process killed and reaped when dropped, also when a test fails.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A separate process holding the first candidate of `base/bot_00000`.
async fn master_process(zk: &ZkServer, base: &str, session_timeout: &str) -> (Process, String) {
    let child = Process(
        simulate(zk, base)
            .args(["--elections", "1", "--candidates", "1", "--sessions", "1"])
            .args(["--abandon-ratio", "0", "--session-timeout", session_timeout])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let admin = client(&zk.address()).await;
    let election = format!("{base}/bot_00000");
    let node = eventually("simulate to create its candidate", T, || async {
        match admin.list_children(&election).await {
            Ok(children) => children
                .into_iter()
                .next()
                .ok_or_else(|| "no child yet".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    (child, node)
}

fn connected(m: &Metrics, election: &str) -> Option<f64> {
    m.get(
        "zookeeper_election_master_session_connected",
        &election_labels(election),
    )
}

fn exporter_for(zk: &ZkServer, base: &str) -> Exporter {
    Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{base}/*"),
        // The table's earlier name, still accepted.
        "[clusters.diagnostics]\ncons_interval = \"300ms\"",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_a_ghost_until_its_session_expires() {
    let zk = shared_server();
    let base = unique_path("ghost");
    let election = format!("{base}/bot_00000");
    let (mut process, master) = master_process(zk, &base, "6s").await;
    let admin = client(&zk.address()).await;
    let standby = candidate(&admin, &election, "instance_", b"standby").await;
    let exporter = exporter_for(zk, &base);
    exporter
        .until("a live master", T, |m| {
            master_node(m, &election) == Some(master.clone())
                && connected(m, &election) == Some(1.0)
        })
        .await;

    signal(&process.0.id().to_string(), "-KILL");
    let _ = process.0.wait();
    let m = exporter
        .until("a ghost master", T, |m| {
            connected(m, &election) == Some(0.0)
        })
        .await;
    assert_eq!(
        master_node(&m, &election),
        Some(master.clone()),
        "its node still names it master"
    );
    let tree = [("ensemble", "test"), ("tree", &*format!("{base}/*"))];
    assert_eq!(
        m.get("zookeeper_tree_disconnected_ephemerals", &tree),
        Some(1.0)
    );
    // Its expiry comes from `dump`, which the check asks from the round
    // after one that showed an owner a ghost.
    let expires_in = |m: &Metrics| {
        m.get(
            "zookeeper_election_master_expires_in_seconds",
            &election_labels(&election),
        )
    };
    let m = exporter
        .until("the ghost's expiry", T, |m| expires_in(m).is_some())
        .await;
    let expires = expires_in(&m);
    assert!(expires.is_some_and(|s| s <= 6.0), "{expires:?}");
    assert_eq!(connected(&m, &election), Some(0.0), "still the ghost");
    exporter
        .until("ghost time accumulates", T, |m| {
            m.get(
                "zookeeper_election_master_disconnected_seconds",
                &election_labels(&election),
            )
            .is_some_and(|s| s > 0.0)
        })
        .await;

    let m = exporter
        .until("the switch after expiry", T, |m| {
            master_node(m, &election) == Some(standby.clone())
        })
        .await;
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &election_labels(&election)
        ),
        Some(1.0)
    );
    let m = exporter
        .until("the new master is live", T, |m| {
            connected(m, &election) == Some(1.0)
        })
        .await;
    assert_eq!(
        m.get("zookeeper_tree_disconnected_ephemerals", &tree),
        Some(0.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_master_is_silent_and_recovers_without_a_switch() {
    let zk = shared_server();
    let base = unique_path("frozen");
    let election = format!("{base}/bot_00000");
    // 9 s: silent after 6 s without a packet, expired only after 9.
    let (mut process, master) = master_process(zk, &base, "9s").await;
    let admin = client(&zk.address()).await;
    candidate(&admin, &election, "instance_", b"standby").await;
    let exporter = exporter_for(zk, &base);
    exporter
        .until("a live master", T, |m| connected(m, &election) == Some(1.0))
        .await;

    signal(&process.0.id().to_string(), "-STOP");
    let m = exporter
        .until("flagged silent", Duration::from_secs(8), |m| {
            connected(m, &election) == Some(0.0)
        })
        .await;
    signal(&process.0.id().to_string(), "-CONT");
    assert_eq!(master_node(&m, &election), Some(master.clone()));
    let m = exporter
        .until("talking again", T, |m| connected(m, &election) == Some(1.0))
        .await;
    assert_eq!(master_node(&m, &election), Some(master), "no switch");
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &election_labels(&election)
        ),
        Some(0.0)
    );
    assert_eq!(
        m.get(
            "zookeeper_election_master_disconnected_seconds",
            &election_labels(&election)
        ),
        None,
        "only ghost masters carry the series"
    );
    signal(&process.0.id().to_string(), "-KILL");
    let _ = process.0.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_watching_the_parent_show_the_herd_effect() {
    let zk = shared_server();
    let base = unique_path("herd");
    let (herd, polite) = (format!("{base}/herd"), format!("{base}/polite"));
    let admin = client(&zk.address()).await;
    mkdir(&admin, &herd).await;
    mkdir(&admin, &polite).await;
    let mut keep = Vec::new();
    let mut previous: Option<String> = None;
    for i in 0..3 {
        // Herd: every candidate watches the election node's children.
        let c = client(&zk.address()).await;
        candidate(&c, &herd, "n_", format!("h{i}").as_bytes()).await;
        keep.push((c, None, None));
        // Polite: each candidate watches only its predecessor.
        let p = client(&zk.address()).await;
        let node = candidate(&p, &polite, "n_", format!("p{i}").as_bytes()).await;
        let watch = match &previous {
            Some(prev) => Some(
                p.check_and_watch_stat(&format!("{polite}/{prev}"))
                    .await
                    .unwrap()
                    .1,
            ),
            None => None,
        };
        previous = Some(node);
        keep.push((p, None, watch));
    }
    // The herd watches the election node itself with persistent watches
    // (as CuratorCache/TreeCache-style clients do): every change wakes all.
    // `wchp` lists data and persistent watches; one-shot child watches are
    // not listed by ZooKeeper (see docs/metrics.md).
    for (c, watcher, _) in keep.iter_mut().step_by(2) {
        *watcher = Some(c.watch(&herd, AddWatchMode::Persistent).await.unwrap());
    }
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{base}/*"),
        "[clusters.ghost_check]\ncons_interval = \"300ms\"\nwatches = true",
    ));
    let m = wait_for_async("parent watchers counted", T, || {
        let m = exporter.metrics()?;
        match m.get(
            "zookeeper_election_parent_watchers",
            &election_labels(&herd),
        ) {
            Some(3.0) => Ok(m),
            _ => Err(format!(
                "{:?}",
                m.series("zookeeper_election_parent_watchers", &[])
            )),
        }
    })
    .await;
    assert_eq!(
        m.get("zookeeper_election_candidates", &election_labels(&herd)),
        Some(3.0)
    );
    assert_eq!(
        m.get(
            "zookeeper_election_parent_watchers",
            &election_labels(&polite)
        ),
        Some(0.0),
        "watching predecessors wakes nobody else, and the agent's own watch is not counted"
    );
    drop(keep);
}

/// Under default settings (`cons_interval = "auto"`), 200 masters whose 4 s
/// sessions ping as every client does are never reported as ghosts; one
/// master frozen with SIGSTOP is flagged once two rounds can show it, and
/// clears after SIGCONT without a switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_false_ghosts_under_default_settings_and_a_frozen_master_is_flagged() {
    const ELECTIONS: usize = 200;
    let zk = shared_server();
    let root = unique_path("noghost");
    let many = format!("{root}/many");
    let _masters = Process(
        simulate(zk, &many)
            .args(["--elections", &ELECTIONS.to_string(), "--candidates", "1"])
            .args(["--sessions", &ELECTIONS.to_string()])
            .args(["--abandon-ratio", "0", "--session-timeout", "4s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // 15 s: a freeze can be shown (2/3 of it plus two 1 s rounds) before
    // ZooKeeper expires the session, even if its last ping was 5 s earlier.
    let frozen_base = format!("{root}/frozen");
    let frozen_election = format!("{frozen_base}/bot_00000");
    let (mut frozen, master) = master_process(zk, &frozen_base, "15s").await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{root}/*/*"), ""));
    let ghosts = |m: &Metrics| -> Vec<(String, f64)> {
        m.series("zookeeper_election_master_session_connected", &[])
            .into_iter()
            .filter(|(_, v)| *v != 1.0)
            .map(|(labels, v)| (format!("{labels:?}"), v))
            .collect()
    };
    exporter
        .until("every master live and judged", T, |m| {
            m.series("zookeeper_election_master_session_connected", &[])
                .iter()
                .filter(|(_, v)| *v == 1.0)
                .count()
                == ELECTIONS + 1
        })
        .await;

    // 60 s of scrapes: not one ghost.
    let soak = std::time::Instant::now();
    let mut scrapes = 0;
    while soak.elapsed() < Duration::from_secs(60) {
        let m = tokio::task::block_in_place(|| exporter.metrics()).unwrap();
        assert_eq!(
            ghosts(&m),
            vec![],
            "a pinging master was reported as a ghost"
        );
        assert_eq!(
            m.series("zookeeper_election_master_session_connected", &[])
                .len(),
            ELECTIONS + 1,
            "every master stays judged"
        );
        scrapes += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(scrapes > 100, "only {scrapes} scrapes in 60 s");

    signal(&frozen.0.id().to_string(), "-STOP");
    let stopped = std::time::Instant::now();
    // Worst case from the freeze: 2/3 of 15 s, two 1 s rounds, and slack
    // for the rounds' own duration and the scrape.
    exporter
        .until("the frozen master flagged", Duration::from_secs(14), |m| {
            connected(m, &frozen_election) == Some(0.0)
        })
        .await;
    let flagged = stopped.elapsed();
    signal(&frozen.0.id().to_string(), "-CONT");
    let m = exporter
        .until("talking again", T, |m| {
            connected(m, &frozen_election) == Some(1.0)
        })
        .await;
    assert_eq!(master_node(&m, &frozen_election), Some(master), "no switch");
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &election_labels(&frozen_election)
        ),
        Some(0.0)
    );
    assert_eq!(
        ghosts(&m),
        vec![],
        "only the frozen master was ever flagged"
    );
    eprintln!("frozen master flagged {flagged:?} after SIGSTOP");
    signal(&frozen.0.id().to_string(), "-KILL");
    let _ = frozen.0.wait();
}
