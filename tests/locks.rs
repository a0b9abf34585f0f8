//! Locks against a real ZooKeeper, laid out as kazoo and Curator lay them
//! out: who holds, who waits, hand-over when a holder's session closes, a
//! free lock that raises nothing, and a read/write lock.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(30);

fn lock(path: &str) -> [(&str, &str); 2] {
    [("ensemble", "test"), ("lock", path)]
}

fn config(servers: &str, glob: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{servers}\"]\nsession_timeout = \"4s\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.locks]]\npath = \"{glob}\"\nmax_hold = \"1m\"\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_is_held_handed_over_and_released() {
    let zk = shared_server();
    let base = unique_path("locks");
    let orders = format!("{base}/orders");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &orders).await;
    // kazoo's Lock: `<uuid>__lock__<seq>`; each contender its own session.
    let first = client(&zk.address()).await;
    candidate(&first, &orders, "4a1f9c2e__lock__", b"worker-1").await;
    let second = client(&zk.address()).await;
    let waiting = candidate(&second, &orders, "8b3d7e10__lock__", b"worker-2").await;
    let exporter = Exporter::start(&config(&zk.address(), &format!("{base}/*")));
    let m = exporter
        .until("the lock held with one waiter", T, |m| {
            m.get("zookeeper_lock_held", &lock(&orders)) == Some(1.0)
                && m.get("zookeeper_lock_waiters", &lock(&orders)) == Some(1.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lock_holders", &lock(&orders)), Some(1.0));
    assert_eq!(
        m.get("zookeeper_lock_max_hold_seconds", &lock(&orders)),
        Some(60.0)
    );
    assert!(
        m.get("zookeeper_lock_hold_seconds", &lock(&orders))
            .is_some_and(|s| s >= 0.0)
    );
    assert_eq!(
        m.get("zookeeper_lock_acquisitions_total", &lock(&orders)),
        Some(0.0),
        "the hold found at start is not an acquisition"
    );
    assert!(
        m.series("zookeeper_election_has_master", &[]).is_empty(),
        "a lock is no election"
    );

    // The holder's session closes: the waiter acquires.
    drop(first);
    let m = exporter
        .until("the hand-over", T, |m| {
            m.get("zookeeper_lock_acquisitions_total", &lock(&orders)) == Some(1.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lock_waiters", &lock(&orders)), Some(0.0));
    assert_eq!(m.get("zookeeper_lock_held", &lock(&orders)), Some(1.0));

    // Released: free, and that is all.
    second
        .delete(&format!("{orders}/{waiting}"), None)
        .await
        .unwrap();
    let m = exporter
        .until("the lock released", T, |m| {
            m.get("zookeeper_lock_held", &lock(&orders)) == Some(0.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lock_hold_seconds", &lock(&orders)), None);
    let tree = [("ensemble", "test"), ("tree", &*format!("{base}/*"))];
    assert_eq!(
        m.get("zookeeper_tree_lock_hold_duration_seconds_count", &tree),
        Some(1.0),
        "the hold that started while watched ended once"
    );
    assert_eq!(m.get("zookeeper_tree_locks", &tree), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_ahead_of_a_writer_hold_a_read_write_lock_together() {
    let zk = shared_server();
    let base = unique_path("rwlock");
    let table = format!("{base}/table");
    let c = client(&zk.address()).await;
    mkdir(&c, &table).await;
    // Curator's InterProcessReadWriteLock: `_c_<guid>-__READ__<seq>`.
    candidate(&c, &table, "_c_0f1e2d3c-__READ__", b"").await;
    candidate(&c, &table, "_c_4b5a6978-__READ__", b"").await;
    candidate(&c, &table, "_c_8c9dab0e-__WRIT__", b"").await;
    candidate(&c, &table, "_c_f1e2d3c4-__READ__", b"").await;
    let exporter = Exporter::start(&config(&zk.address(), &format!("{base}/*")));
    let m = exporter
        .until("two readers hold, the writer and a reader wait", T, |m| {
            m.get("zookeeper_lock_holders", &lock(&table)) == Some(2.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lock_waiters", &lock(&table)), Some(2.0));
}

/// `simulate --style lock` builds kazoo-style locks for real: holders hand
/// them over, and the exporter counts the hand-overs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_locks_are_handed_over() {
    let zk = shared_server();
    let base = unique_path("simlock");
    let exporter = Exporter::start(&config(&zk.address(), &format!("{base}/*")));
    let mut sim = simulate(zk, &base)
        .args(["--style", "lock"])
        .args(["--elections", "2", "--candidates", "3", "--duration", "20s"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let m = exporter
        .until("hand-overs counted", T, |m| {
            let total: f64 = m
                .series("zookeeper_lock_acquisitions_total", &[])
                .iter()
                .map(|(_, v)| v)
                .sum();
            total >= 4.0
        })
        .await;
    for (labels, held) in m.series("zookeeper_lock_held", &[]) {
        assert_eq!(held, 1.0, "three contenders keep {labels:?} busy");
    }
    assert!(
        m.series("zookeeper_election_has_master", &[]).is_empty(),
        "locks are no elections"
    );
    let _ = sim.kill();
    let _ = sim.wait();
}
