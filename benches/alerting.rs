//! The alerting agent measured with production settings, in one run:
//! (a) last candidate gone → alert visible in Alertmanager, pushed by the
//!     agent (no_master_for 5 s) next to the rule path (Prometheus scraping
//!     every 15 s, evaluating every 15 s, the shipped rule's `for: 1m`),
//!     each to its own Alertmanager so the copies are told apart;
//! (b) timeline entries recorded per second under `simulate` killing
//!     masters fast, with the agent's CPU.
//! Run: cargo bench --bench alerting   (Debian's zookeeper, prometheus,
//! prometheus-alertmanager)

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::program::{Program, alertmanager, prometheus};
use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(180);

fn has_alert(am: &Program, name: &str) -> bool {
    am.get_json("/api/v2/alerts?active=true")
        .ok()
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|a| a.iter().any(|x| x["labels"]["alertname"] == name))
}

async fn push_versus_rule(zk: &ZkServer) {
    let base = unique_path("bench-push");
    let election = format!("{base}/bot_1");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-a").await;
    let (pushed_am, rule_am) = (alertmanager("am-pushed"), alertmanager("am-rule"));
    let exporter = Exporter::start(&format!(
        "{}[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\n",
        cluster_config(
            &zk.address(),
            &format!("{base}/*"),
            "four_letter_words = { enabled = false }"
        ),
        pushed_am.port
    ));
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/alerts/zookeeper.rules.yml"
    ))
    .unwrap();
    let (rule_port, exporter_port) = (rule_am.port, exporter.port);
    let _prometheus = prometheus(
        "prometheus-bench",
        &rules,
        "15s",
        rule_port,
        &[exporter_port],
    );
    exporter
        .until("the master", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    // Let Prometheus see the healthy election for a while first.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let left = Instant::now();
    drop(device);
    let (mut pushed, mut ruled) = (None, None);
    while (pushed.is_none() || ruled.is_none()) && left.elapsed() < T {
        if pushed.is_none() && has_alert(&pushed_am, "ZooKeeperElectionNoMaster") {
            pushed = Some(left.elapsed());
        }
        if ruled.is_none() && has_alert(&rule_am, "ZooKeeperElectionNoMaster") {
            ruled = Some(left.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "last candidate gone -> ZooKeeperElectionNoMaster in Alertmanager: pushed {pushed:.1?} (no_master_for 5s), rule path {ruled:.1?} (scrape 15s, eval 15s, for 1m)"
    );
}

fn events_per_second(zk: &ZkServer) {
    let base = unique_path("bench-events");
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{base}/*"),
        "four_letter_words = { enabled = false }\ntimeline_size = 1000000",
    ));
    let log = temp_dir("bench-events").join("simulate.log");
    let mut sim = simulate(zk, &base)
        .args([
            "--elections",
            "200",
            "--candidates",
            "3",
            "--kill-rate",
            "200",
            "--abandon-ratio",
            "0",
            "--duration",
            "40s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let seq = || -> u64 {
        let (_, body) = http_get(exporter.port, "/api/v1/events?limit=1").unwrap_or_default();
        serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["events"][0]["seq"].as_u64())
            .unwrap_or(0)
    };
    std::thread::sleep(Duration::from_secs(10));
    let (s0, c0, t0) = (seq(), cpu_seconds(exporter.pid()), Instant::now());
    std::thread::sleep(Duration::from_secs(20));
    let (s1, c1, t1) = (seq(), cpu_seconds(exporter.pid()), Instant::now());
    let secs = (t1 - t0).as_secs_f64();
    println!(
        "timeline under simulate (200 elections, kill rate 200/s): {:.0} events/s recorded, agent CPU {:.0} % of one core",
        (s1 - s0) as f64 / secs,
        (c1 - c0) / secs * 100.0
    );
    let _ = sim.kill();
    let _ = sim.wait();
}

fn main() {
    let zk = ZkServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if !std::env::args().any(|a| a == "events") {
        runtime.block_on(push_versus_rule(&zk));
    }
    events_per_second(&zk);
}
