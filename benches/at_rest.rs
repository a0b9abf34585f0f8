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

use std::time::Duration;

use common::fleet::{self, AgentProcess, Fleet, cpu_over, status_mib, zk_pid};
use common::receiver::{Receiver, hooked_alertmanager};
use common::*;

/// The window measured at rest.
const QUIET: Duration = Duration::from_secs(60);
/// From `/ready` to the quiet minute: the first ghost-check rounds, the
/// read-back from Alertmanager and the first four-letter words are done.
const SETTLE: Duration = Duration::from_secs(15);
/// Prometheus's usual scrape interval.
const SCRAPE_INTERVAL: Duration = Duration::from_secs(15);

async fn at_rest(n: usize) {
    let zk = ZkServer::start_custom(ServerOptions::default(), "snapCount=100000000\n", "");
    let zk_jvm = zk_pid(&zk);
    let base = unique_path("at_rest");
    let fleet = Fleet::lay_out(&zk, &base, n).await;
    // ZooKeeper alone, its candidate sessions pinging.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let alone = cpu_over(&[zk_jvm], QUIET).await[0];

    let receiver = Receiver::start();
    let am = hooked_alertmanager("at-rest-am", &receiver);
    // The wait for /ready blocks: the candidate sessions ping on the
    // runtime's other threads meanwhile.
    let (agent, ready) = tokio::task::block_in_place(|| {
        AgentProcess::start(
            "at-rest-agent",
            &format!(
                "[[clusters]]\nname = \"rest\"\nservers = [\"{}\"]\n\
         [[clusters.elections]]\npath = \"{base}/*\"\n\
         [alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\n",
                zk.address(),
                am.port
            ),
        )
    });
    tokio::time::sleep(SETTLE).await;
    let both = cpu_over(&[agent.id(), zk_jvm], QUIET).await;
    let rss = status_mib(agent.id(), "VmRSS:");
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
    let term = agent.terminate();
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
    drop(fleet);
    drop(am);
}

fn main() {
    let runtime = fleet::runtime();
    for n in fleet::sizes() {
        runtime.block_on(at_rest(n));
    }
}
