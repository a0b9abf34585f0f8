//! What the agent costs while nothing changes: `n` elections × 2
//! candidates (EPHEMERAL_SEQUENTIAL children, as kazoo and Curator write
//! them) in a real ZooKeeper, the agent with its defaults (four-letter
//! words and the ghost check on) and `[alerting]` pushing to a real
//! Alertmanager (every election healthy: nothing to push), then a quiet
//! minute in which nothing changes and nothing scrapes.
//!
//! ZooKeeper's CPU is measured alone first, over a quiet minute of the
//! same run with the same candidate sessions connected, so what the agent
//! adds to it is the difference. Also start → `/ready`, RSS after the
//! quiet minute, the next minute with a scrape every 15 s, and SIGTERM →
//! exit.
//!
//! Run: `cargo bench --bench at_rest -- [N ...]` (default 100000 and
//! 1000000; each N on a fresh ZooKeeper with a 6 GiB heap; about 15
//! minutes in all on two cores). Needs Debian's `zookeeper` and
//! `prometheus-alertmanager`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::layout::{layout_client, multi_create};
use common::receiver::{Receiver, hooked_alertmanager};
use common::*;
use zookeeper_client::CreateMode;

/// The window measured at rest.
const QUIET: Duration = Duration::from_secs(60);
/// From `/ready` to the quiet minute: the first ghost-check rounds, the
/// read-back from Alertmanager and the first four-letter words are done.
const SETTLE: Duration = Duration::from_secs(15);
/// Prometheus's usual scrape interval.
const SCRAPE_INTERVAL: Duration = Duration::from_secs(15);

/// The pid of the JVM of `zk` (its command line names its log folder).
fn zk_pid(zk: &ZkServer) -> u32 {
    let pattern = format!("^java .*-Dzookeeper.log.dir={} ", zk.dir.display());
    pid_matching(&pattern)
        .and_then(|p| p.parse().ok())
        .expect("the ZooKeeper JVM runs")
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// CPU seconds each of `pids` spent over `window`, as shares of one core.
async fn cpu_over(pids: &[u32], window: Duration) -> Vec<f64> {
    let before: Vec<f64> = pids.iter().map(|p| cpu_seconds(*p)).collect();
    tokio::time::sleep(window).await;
    pids.iter()
        .zip(before)
        .map(|(p, b)| (cpu_seconds(*p) - b) / window.as_secs_f64())
        .collect()
}

/// `n` elections under `base`, two candidates each: the first held by
/// session `i % 4`, the second by session `(i + 1) % 4`. The sessions are
/// returned: the candidates live as long as they do.
async fn lay_out(zk: &ZkServer, base: &str, n: usize) -> Vec<zookeeper_client::Client> {
    let admin = layout_client(&zk.address()).await;
    mkdir(&admin, base).await;
    let t = Instant::now();
    let parents: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| (format!("{base}/bot_{i}"), Vec::new()))
        .collect();
    multi_create(&admin, &parents, CreateMode::Persistent, 1000, 8).await;
    let mut holders = Vec::new();
    for _ in 0..4 {
        holders.push(layout_client(&zk.address()).await);
    }
    for (second, k) in [(false, 0), (false, 1), (false, 2), (false, 3)]
        .into_iter()
        .chain([(true, 0), (true, 1), (true, 2), (true, 3)])
    {
        let mine: Vec<(String, Vec<u8>)> = (0..n)
            .filter(|i| (i + usize::from(second)) % 4 == k)
            .map(|i| {
                let who = if second { 'b' } else { 'a' };
                (
                    format!("{base}/bot_{i}/n_"),
                    format!("dev-{i}-{who}").into_bytes(),
                )
            })
            .collect();
        multi_create(&holders[k], &mine, CreateMode::EphemeralSequential, 1000, 8).await;
    }
    println!(
        "(r) layout: {n} elections × 2 candidates from 4 sessions in {:.1?}",
        t.elapsed()
    );
    holders
}

/// Starts the agent; returns it once `/ready` answers 200, and how long
/// that took from the process start.
/// The agent started, and the port its web server listens on.
struct Agent {
    child: Child,
    port: u16,
}

impl Agent {
    fn id(&self) -> u32 {
        self.child.id()
    }
}

fn start_agent(config: &str) -> (Agent, Duration) {
    let dir = temp_dir("at-rest-agent");
    let port = free_port();
    std::fs::write(
        dir.join("config.toml"),
        format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\n{config}"),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("agent.log")).unwrap();
    let started = Instant::now();
    let agent = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    wait_for(
        "the agent ready",
        Duration::from_secs(300),
        || match http_get(port, "/ready") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    (Agent { child: agent, port }, started.elapsed())
}

/// SIGTERM, then how long until the process has exited.
fn terminate(mut agent: Child) -> Duration {
    let pid = i32::try_from(agent.id()).expect("a pid fits an i32");
    let t = Instant::now();
    // SAFETY: kill only sends a signal to the child this bench started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let _ = agent.wait();
    t.elapsed()
}

async fn at_rest(n: usize) {
    let zk = ZkServer::start_custom(ServerOptions::default(), "snapCount=100000000\n", "");
    let zk_jvm = zk_pid(&zk);
    let base = unique_path("at_rest");
    let holders = lay_out(&zk, &base, n).await;
    // ZooKeeper alone, its candidate sessions pinging.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let alone = cpu_over(&[zk_jvm], QUIET).await[0];

    let receiver = Receiver::start();
    let am = hooked_alertmanager("at-rest-am", &receiver);
    // The wait for /ready blocks: the candidate sessions ping on the
    // runtime's other threads meanwhile.
    let (agent, ready) = tokio::task::block_in_place(|| {
        start_agent(&format!(
            "[[clusters]]\nname = \"rest\"\nservers = [\"{}\"]\n\
         [[clusters.elections]]\npath = \"{base}/*\"\n\
         [alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\n",
            zk.address(),
            am.port
        ))
    });
    tokio::time::sleep(SETTLE).await;
    let both = cpu_over(&[agent.id(), zk_jvm], QUIET).await;
    let rss = rss_mib(agent.id());
    // The next minute as Prometheus would see it: a scrape every 15 s.
    let port = agent.port;
    let scraper = tokio::task::spawn_blocking(move || {
        let mut bytes = 0;
        for _ in 0..QUIET.as_secs() / SCRAPE_INTERVAL.as_secs() {
            if let Ok((200, body)) = http_get(port, "/metrics") {
                bytes = body.len();
            }
            std::thread::sleep(SCRAPE_INTERVAL);
        }
        bytes
    });
    let scraped = cpu_over(&[agent.id(), zk_jvm], QUIET).await;
    let body = scraper.await.unwrap_or(0);
    let term = terminate(agent.child);
    println!(
        "(r) {n} elections × 2 candidates, the agent's defaults and [alerting], a quiet minute: \
         agent {:.2} % of a core (target 1 %); ZooKeeper {:.2} % of a core with it, {:.2} % alone: \
         +{:.2} % (target 1 %); start → /ready {ready:.1?} (target 20 s); RSS {rss:.0} MiB \
         (target 1,041 MiB); SIGTERM → exit {term:.2?}; notifications {}",
        both[0] * 100.0,
        both[1] * 100.0,
        alone * 100.0,
        (both[1] - alone) * 100.0,
        receiver.all().len(),
    );
    println!(
        "(r) {n} elections, the next minute scraped every {SCRAPE_INTERVAL:?} ({:.1} MiB a body): \
         agent {:.2} % of a core; ZooKeeper +{:.2} %",
        body as f64 / 1048576.0,
        scraped[0] * 100.0,
        (scraped[1] - alone) * 100.0,
    );
    drop(holders);
    drop(am);
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.replace('_', "").parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    };
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("ZKEE_ZK_HEAP", "6g") };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for n in sizes {
        runtime.block_on(at_rest(n));
    }
}
