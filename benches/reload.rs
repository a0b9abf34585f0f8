//! Configuration reload at scale against a real ZooKeeper: N elections x 3
//! candidates in one tree, then
//! (a) a reload adding a small tree (the session stays, every tree of the
//!     cluster is listed again),
//! (b) a reload changing a session setting (a new session for the cluster),
//! (c) for comparison, a restart: process start to `/ready`.
//! For (a) and (b): the reload's answer, the time until `/ready` is 200
//! again, and scrapes meanwhile (latency; whether every election kept its
//! series the whole time: `zookeeper_tree_elections` summed).
//! Run: cargo bench --bench reload [-- N]   (default 100000; needs Debian's
//! `zookeeper` package; minutes, and a 3 GiB ZooKeeper heap)

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;

/// Elections every tree holds, from one scrape.
fn elections_watched(body: &str) -> f64 {
    body.lines()
        .filter(|l| l.starts_with("zookeeper_tree_elections{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn wait_ready(port: u16) {
    wait_for("/ready 200", Duration::from_secs(300), || {
        match http_get(port, "/ready") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
}

/// Scrapes every `pace` (back to back when zero) until stopped: each
/// scrape's time and the elections it showed.
fn scraper(
    port: u16,
    pace: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(Duration, f64)>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            if let Ok((200, body)) = http_get(port, "/metrics") {
                seen.push((t.elapsed(), elections_watched(&body)));
            }
            std::thread::sleep(pace.saturating_sub(t.elapsed()));
        }
        seen
    })
}

fn reload(what: &str, port: u16, file: &std::path::Path, config: &str, n: usize, pace: Duration) {
    std::fs::write(file, config).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let scrapes = scraper(port, pace, stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let (status, answer) = http_request(port, "POST", "/-/reload", &[]).unwrap();
    let answer = answer.trim().to_owned();
    let answered = t.elapsed();
    assert_eq!(status, 200, "{answer}");
    // /ready can be 200 for a moment before the session marks the trees
    // stale: wait until it was not ready once, or 2 s passed.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && matches!(http_get(port, "/ready"), Ok((200, _))) {
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_ready(port);
    let synced = t.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let mut seen = scrapes.join().unwrap();
    let fewest = seen.iter().map(|(_, e)| *e).fold(f64::INFINITY, f64::min);
    let most = seen.iter().map(|(_, e)| *e).fold(0.0, f64::max);
    seen.sort_by_key(|(d, _)| *d);
    let durations: Vec<Duration> = seen.iter().map(|(d, _)| *d).collect();
    println!(
        "({what}) {n} elections, a scrape every {pace:?} (0: back to back): reload answered in {answered:.1?} ({answer}); /ready 200 again after {synced:.2?}; \
         {} scrapes meanwhile: median {:.1?}, max {:.1?}; elections in a scrape: {fewest} to {most}",
        durations.len(),
        durations[durations.len() / 2],
        durations[durations.len() - 1],
    );
}

fn main() {
    let n: usize = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(100_000);
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("ZKEE_ZK_HEAP", "3g") };
    let zk = ZkServer::start();
    let base = unique_path("bench_reload");
    let mut sim = simulated_elections(&zk, &format!("{base}/big"), n);
    let mut small = simulated_elections(&zk, &format!("{base}/small"), 1);

    let dir = temp_dir("bench-reload");
    let file = dir.join("c.toml");
    let port = free_port();
    let cluster = |trees: &[&str], extra: &str| {
        let mut s = format!(
            "[web]\nlisten_address = \"127.0.0.1:{port}\"\nenable_lifecycle = true\n[[clusters]]\nname = \"bench\"\nservers = [\"{}\"]\n{extra}",
            zk.address()
        );
        for t in trees {
            s.push_str(&format!(
                "[[clusters.elections]]\npath = \"{base}/{t}/*\"\n"
            ));
        }
        s
    };
    std::fs::write(&file, cluster(&["big"], "")).unwrap();
    let started = Instant::now();
    let mut exporter = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
        .arg("--config")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port);
    println!(
        "(c) {n} elections: process start to /ready 200 in {:.2?} (what a restart costs, counters and history lost)",
        started.elapsed()
    );
    // Each change twice: with a scrape a second (a busy Prometheus), and
    // with scrapes back to back (two cores shared by the listing, the
    // renders and ZooKeeper).
    let start = cluster(&["big"], "");
    let grown = cluster(&["big", "small"], "");
    let renewed = cluster(&["big", "small"], "session_timeout = \"12s\"\n");
    for pace in [Duration::from_secs(1), Duration::ZERO] {
        reload("a: a tree added", port, &file, &grown, n, pace);
        reload("b: a session setting", port, &file, &renewed, n, pace);
        reload("r: back to the start", port, &file, &start, n, pace);
    }
    let _ = exporter.kill();
    let _ = exporter.wait();
    for p in [&mut sim, &mut small] {
        let _ = p.kill();
        let _ = p.wait();
    }
}
