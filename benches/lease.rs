//! The lease source at scale against a real ZooKeeper and Debian's
//! PostgreSQL: N elections (x 3 candidates) and an N-row lease table.
//! Two agents watch the same elections, one reading the table every
//! second, one not, both scraped alike (every 5 s); over R readings:
//! - the query's time (`zookeeper_lease_query_duration_seconds` at each
//!   scrape: median and max);
//! - the agent's CPU per round, less the lease-less agent's over the same
//!   time, and its memory (RSS) beside the lease-less agent's;
//! - from a real split brain (one row taken over by another identity,
//!   renewed) to the alert the agent pushed reaching a real Alertmanager,
//!   with `split_brain_for = "0s"`.
//!
//! Run: cargo bench --bench lease [-- N R]   (default 100000 and 30; needs
//! Debian's `zookeeper` and `postgresql` and `prometheus-alertmanager`;
//! minutes, and a 3 GiB ZooKeeper heap)

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::database::{Database, Engine};
use common::program::{alertmanager, alerts_in_alertmanager};
use common::*;

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    // SAFETY: set before any thread reads the environment.
    unsafe { std::env::set_var("ZKEE_ZK_HEAP", "3g") };
    let zk = ZkServer::start();
    let db = Database::start(Engine::Postgres).await;
    db.create_lease_table("master_lease").await;
    // Every row held an hour by "sim", written an hour ago: before any
    // master took over, so `handing_over`, judged in full every round.
    db.exec(&format!(
        "INSERT INTO master_lease SELECT 'bot_' || lpad(i::text, 5, '0'), 'sim', now() - interval '1 hour', now() + interval '1 hour' FROM generate_series(0, {}) AS i",
        n - 1
    ))
    .await;
    let base = "/bench_lease";
    let mut sim = simulated_elections(&zk, base, n);
    let am = alertmanager("am-bench-lease");
    let cluster = |lease: &str| {
        format!(
            "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nresend_interval = \"1s\"\n\
             [[clusters]]\nname = \"bench\"\nservers = [\"{}\"]\nmax_elections = {}\n\
             [clusters.four_letter_words]\nenabled = false\n\
             [[clusters.elections]]\npath = \"{base}/*\"\n{lease}\n",
            am.port,
            zk.address(),
            n + 10
        )
    };
    let leased = Exporter::start(&cluster(&format!(
        "lease = {{ dsn_file = \"{}\", password_file = \"{}\", interval = \"1s\", timeout = \"10s\", split_brain_for = \"0s\" }}",
        db.dsn_file.display(),
        db.password_file.display()
    )));
    let plain = Exporter::start(&cluster(""));
    let all = n as f64;
    for agent in [&leased, &plain] {
        agent
            .until("every election watched", Duration::from_secs(900), |m| {
                m.sum("zookeeper_tree_elections", &[]) == Some(all)
            })
            .await;
    }
    leased
        .until("every election judged", Duration::from_secs(300), |m| {
            m.get(
                "zookeeper_tree_lease_elections",
                &[("state", "handing_over")],
            ) == Some(all)
        })
        .await;
    let readings = |a: &Exporter| {
        a.metrics()
            .ok()
            .and_then(|m| m.get("zookeeper_lease_readings_total", &[]))
            .unwrap_or(0.0)
    };
    let (cpu_leased, cpu_plain) = (cpu_seconds(leased.pid()), cpu_seconds(plain.pid()));
    let first = readings(&leased);
    let started = Instant::now();
    let mut query = Vec::new();
    let mut last = first;
    while last < first + rounds as f64 {
        // Both agents scraped alike, every 5 s, so the difference is the
        // lease's: its queries, its judging and its series in each scrape.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let _ = plain.metrics();
        let m = leased.metrics().ok();
        if let Some(m) = m {
            if let Some(q) = m.get("zookeeper_lease_query_duration_seconds", &[]) {
                query.push(q);
            }
            last = m.get("zookeeper_lease_readings_total", &[]).unwrap_or(last);
        }
    }
    let took = started.elapsed();
    let done = last - first;
    let cpu = (cpu_seconds(leased.pid()) - cpu_leased) - (cpu_seconds(plain.pid()) - cpu_plain);
    let (rss_leased, rss_plain) = (rss_mib(leased.pid()), rss_mib(plain.pid()));

    // One election's master writes its own lease: the set has shown that
    // its holders are named as its candidates (split brain needs that).
    let (_, body) = http_get(leased.port, &format!("/api/v1/elections{base}/bot_00007")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let master = v["elections"][0]["master"]["identity"]
        .as_str()
        .unwrap()
        .to_owned();
    db.exec(&db.lease_write("master_lease", "bot_00007", &master, 3600.0))
        .await;
    leased
        .until("an election agrees", Duration::from_secs(60), |m| {
            m.get("zookeeper_tree_lease_elections", &[("state", "agrees")]) == Some(1.0)
        })
        .await;
    // A real split brain: another identity takes bot_00042's row and
    // renews it; the agent pushes at its first reading after.
    let key = "bot_00042";
    let election = format!("{base}/{key}");
    let taken = Instant::now();
    db.exec(&db.lease_write("master_lease", key, "rogue", 3600.0))
        .await;
    wait_for_async(
        "the split brain in Alertmanager",
        Duration::from_secs(60),
        || {
            let n = alerts_in_alertmanager(&am, "ZooKeeperElectionSplitBrain")?
                .iter()
                .filter(|a| a["election"] == election.as_str())
                .count();
            if n == 1 { Ok(()) } else { Err(format!("{n}")) }
        },
    )
    .await;
    let pushed = taken.elapsed();

    println!(
        "lease source, {n} elections x 3 candidates, a {n}-row table (PostgreSQL), interval 1s"
    );
    println!(
        "  query: median {:.3} s, max {:.3} s over {} scrapes",
        median(query.clone()),
        query.iter().copied().fold(0.0, f64::max),
        query.len()
    );
    println!(
        "  agent CPU per reading: {:.3} s (less the lease-less agent's), {done} readings in {took:.1?}",
        cpu / done.max(1.0)
    );
    println!("  RSS: {rss_leased:.0} MiB with the lease, {rss_plain:.0} MiB without");
    println!("  split brain written -> pushed alert active in Alertmanager: {pushed:.2?}");
    let _ = sim.kill();
    let _ = sim.wait();
}
