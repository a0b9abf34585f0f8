//! The split-brain guard at scale against a real ZooKeeper and Debian's
//! MariaDB (or PostgreSQL with `LEASE_DB=postgres`): N elections × 2
//! candidates (the bot fleet of benches/in_motion.rs) and the
//! `master_lease` table of docs/split-brain.md with one row per election,
//! each held by its master, and an index on `last_seen` as the docs
//! recommend. The application's heartbeats renew 2,000 rows a second. Two
//! agents watch the fleet, one reading the table with the lease defaults
//! (`interval` 5 s, `timeout` 2 s, `full_every` 1 m; `LEASE_FULL_EVERY`
//! overrides the last), one without a lease, both scraped alike every 5 s.
//! Over R readings:
//! - the query's time (`zookeeper_lease_query_duration_seconds` at each
//!   scrape: median and max) and rows returned, failed readings;
//! - the agent's CPU, less the lease-less agent's over the same time, and
//!   the database server's CPU; both agents' memory;
//! - three planted split brains (another identity takes a row and renews
//!   it): until `/api/v1/elections/PATH` shows `split_brain`, and until the
//!   alert the agent pushed (`split_brain_for = "0s"`) is active in a real
//!   Alertmanager.
//!
//! Run: cargo bench --bench lease [-- N R]   (default 100000 and 24; minutes)

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::database::{Database, Engine};
use common::fleet::{AgentProcess, Fleet, status_mib};
use common::program::{alertmanager, alerts_in_alertmanager};
use common::*;

/// Rows the application's heartbeats renew per second.
const HEARTBEATS: u64 = 2_000;

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One scrape of `/metrics`.
fn scrape(port: u16) -> Option<String> {
    match http_get(port, "/metrics") {
        Ok((200, body)) => Some(body),
        _ => None,
    }
}

/// The sum of the series of `name` (its labels' opening included, if
/// given) in one scrape.
fn value(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

/// The heartbeats: `HEARTBEATS` rows a second, each renewed by its master
/// (`dev-I-a`) for an hour, in batches of 100 every 50 ms, round the table.
fn heartbeats(db: &Database, n: usize, stop: Arc<AtomicBool>, written: Arc<AtomicU64>) {
    let dsn = db.app_dsn();
    let engine = db.engine;
    tokio::spawn(async move {
        use sqlx::Connection;
        let mut conn = sqlx::AnyConnection::connect(&dsn).await.unwrap();
        let mut next = 0usize;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let batch = (HEARTBEATS / 20) as usize;
            let keys: Vec<String> = (0..batch)
                .map(|k| format!("'bot_{}'", (next + k) % n))
                .collect();
            next = (next + batch) % n;
            let sql = match engine {
                Engine::MariaDb => format!(
                    "UPDATE master_lease SET last_seen = NOW(3), lease_until = NOW(3) + INTERVAL 1 HOUR WHERE bot_id IN ({})",
                    keys.join(",")
                ),
                Engine::Postgres => format!(
                    "UPDATE master_lease SET last_seen = now(), lease_until = now() + interval '1 hour' WHERE bot_id IN ({})",
                    keys.join(",")
                ),
            };
            if sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await
                .is_ok()
            {
                written.fetch_add(batch as u64, Ordering::Relaxed);
            }
        }
    });
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.replace('_', "").parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(100_000);
    let rounds = args.get(1).copied().unwrap_or(24);
    let engine = match std::env::var("LEASE_DB").as_deref() {
        Ok("postgres") => Engine::Postgres,
        _ => Engine::MariaDb,
    };
    let full_every = std::env::var("LEASE_FULL_EVERY").unwrap_or_else(|_| "1m".into());
    common::fleet::runtime().block_on(run(n, rounds, engine, full_every));
}

async fn run(n: usize, rounds: usize, engine: Engine, full_every: String) {
    let zk = ZkServer::start();
    let fleet = Fleet::lay_out(&zk, "/wechat/bots", n).await;
    let db = Database::start(engine).await;
    db.create_lease_table("master_lease").await;
    let t = Instant::now();
    let fill = match engine {
        Engine::MariaDb => format!(
            "INSERT INTO master_lease SELECT CONCAT('bot_', seq), CONCAT('dev-', seq, '-a'), NOW(3), NOW(3) + INTERVAL 1 HOUR FROM seq_0_to_{}",
            n - 1
        ),
        Engine::Postgres => format!(
            "INSERT INTO master_lease SELECT 'bot_' || i, 'dev-' || i || '-a', now(), now() + interval '1 hour' FROM generate_series(0, {}) AS i",
            n - 1
        ),
    };
    db.exec(&fill).await;
    println!("(r) {n} lease rows written in {:.1?}", t.elapsed());
    let db_pid: u32 = db.server_pid();
    let am = alertmanager("am-bench-lease");
    let config = |lease: &str| {
        format!(
            "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nresend_interval = \"1s\"\n\
             [[clusters]]\nname = \"bench\"\nservers = [\"{}\"]\nmax_elections = {}\n\
             [clusters.four_letter_words]\nenabled = false\n\
             [[clusters.elections]]\npath = \"/wechat/bots/*\"\n{lease}\n",
            am.port,
            zk.address(),
            n + 10
        )
    };
    let leased_config = config(&format!(
        "lease = {{ dsn_file = \"{}\", password_file = \"{}\", full_every = \"{full_every}\", split_brain_for = \"0s\" }}",
        db.dsn_file.display(),
        db.password_file.display()
    ));
    let plain_config = config("");
    let (leased, _) =
        tokio::task::spawn_blocking(move || AgentProcess::start("bench-lease", &leased_config))
            .await
            .unwrap();
    let (plain, _) =
        tokio::task::spawn_blocking(move || AgentProcess::start("bench-plain", &plain_config))
            .await
            .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    heartbeats(&db, n, stop.clone(), written.clone());
    let all = n as f64;
    let port = leased.port;
    const AGREES: &str = "zookeeper_tree_lease_elections{ensemble=\"bench\",tree=\"/wechat/bots/*\",state=\"agrees\"}";
    wait_for_async("every election agrees", Duration::from_secs(900), || {
        let agree = scrape(port).and_then(|b| value(&b, AGREES));
        if agree == Some(all) {
            Ok(())
        } else {
            Err(format!("{agree:?}"))
        }
    })
    .await;
    let readings = |body: &str| value(body, "zookeeper_lease_readings_total").unwrap_or(0.0);
    let failures = |body: &str| value(body, "zookeeper_lease_failures_total").unwrap_or(0.0);
    let body = scrape(port).unwrap_or_default();
    let (cpu_leased, cpu_plain, cpu_db) = (
        cpu_seconds(leased.id()),
        cpu_seconds(plain.id()),
        cpu_seconds(db_pid),
    );
    let (first, failed_before, wrote_before) = (
        readings(&body),
        failures(&body),
        written.load(Ordering::Relaxed),
    );
    let started = Instant::now();
    let (mut query, mut rows) = (Vec::new(), Vec::new());
    let (mut last, mut failed, mut agrees) = (first, failed_before, None);
    // Both agents scraped alike, once every 5 s, so that the difference
    // is the lease's: its queries, its judging and its series.
    while last < first + rounds as f64 {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let _ = scrape(plain.port);
        let Some(body) = scrape(port) else {
            continue;
        };
        query.extend(value(&body, "zookeeper_lease_query_duration_seconds"));
        rows.extend(value(&body, "zookeeper_lease_query_rows"));
        last = readings(&body).max(last);
        failed = failures(&body).max(failed);
        agrees = value(&body, AGREES);
    }
    let took = started.elapsed().as_secs_f64();
    let done = last - first;
    let failed = failed - failed_before;
    let heartbeat_rate = (written.load(Ordering::Relaxed) - wrote_before) as f64 / took;
    let agent = (cpu_seconds(leased.id()) - cpu_leased) / took;
    let lease_share = agent - (cpu_seconds(plain.id()) - cpu_plain) / took;
    let db_share = (cpu_seconds(db_pid) - cpu_db) / took;
    let (rss_leased, rss_plain) = (
        status_mib(leased.id(), "VmRSS:"),
        status_mib(plain.id(), "VmRSS:"),
    );

    // Planted split brains: another identity takes a row after its master
    // took over and renews it (as a partitioned old master would).
    let mut shown = Vec::new();
    let mut pushed = Vec::new();
    for (k, i) in [42usize, n / 2 + 7, n - 3].into_iter().enumerate() {
        let key = format!("bot_{i}");
        let election = fleet.election(i);
        tokio::time::sleep(Duration::from_millis(1700 * k as u64)).await;
        let planted = Instant::now();
        let renew = common::database::Renewer::start(&db, &key, "rogue", 3600.0);
        let path = format!("/api/v1/elections{election}");
        wait_for_async(
            "the split brain in the API",
            Duration::from_secs(60),
            || {
                let (_, body) = http_get(port, &path)?;
                let v: serde_json::Value =
                    serde_json::from_str(&body).map_err(|e| e.to_string())?;
                match v["elections"][0]["lease"]["verdict"].as_str() {
                    Some("split_brain") => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        shown.push(planted.elapsed().as_secs_f64());
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
        pushed.push(planted.elapsed().as_secs_f64());
        renew.stop().await;
    }
    stop.store(true, Ordering::Relaxed);

    println!(
        "lease guard: {n} elections x 2 candidates, a {n}-row table on {}, heartbeats {heartbeat_rate:.0} rows/s, interval 5s, timeout 2s, full_every {full_every}",
        engine.tag()
    );
    println!(
        "  {done} readings in {took:.0} s, {failed} failed; query median {:.3} s, max {:.3} s; rows returned median {:.0}",
        median(query.clone()),
        query.iter().copied().fold(0.0, f64::max),
        median(rows)
    );
    println!(
        "  CPU: agent {:.1} % of a core ({:.1} % for the lease, less the lease-less agent's), database server {:.1} %",
        agent * 100.0,
        lease_share * 100.0,
        db_share * 100.0
    );
    println!("  every election agrees: {}", agrees == Some(all));
    println!("  RSS: {rss_leased:.0} MiB with the lease, {rss_plain:.0} MiB without");
    println!(
        "  split brain planted -> shown in the API: {}; -> pushed alert active in Alertmanager: {}",
        shown
            .iter()
            .map(|s| format!("{s:.1} s"))
            .collect::<Vec<_>>()
            .join(", "),
        pushed
            .iter()
            .map(|s| format!("{s:.1} s"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
