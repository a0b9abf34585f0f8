//! End to end with the real programs: a 3-server ZooKeeper ensemble, the
//! exporter, Debian's Prometheus (scraping every 1 s, loading the shipped
//! alert rules, evaluating every 1 s) and Debian's Alertmanager.
//!
//! The test's copy of the rules (rendered from the mixin) shortens every
//! `for:` to 2 s and the member window to 5 s; the shipped thresholds stay
//! production values.

mod common;

use std::time::Duration;

use common::program::{alertmanager, alerts_in_alertmanager, mixin_rules, prometheus, query};
use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(90);
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every PromQL expression of every dashboard panel, variables filled in.
fn dashboard_queries() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for name in ["elections", "ensemble", "registry"] {
        let text =
            std::fs::read_to_string(format!("{ROOT}/dashboards/zookeeper-{name}.json")).unwrap();
        let d: Value = serde_json::from_str(&text).unwrap();
        for p in d["panels"].as_array().unwrap() {
            for t in p["targets"].as_array().into_iter().flatten() {
                let expr = t["expr"]
                    .as_str()
                    .unwrap()
                    .replace("$__range", "1h")
                    // Grafana's: at least four scrape intervals (1 s here).
                    .replace("$__rate_interval", "15s")
                    .replace("$job", ".*")
                    .replace("$ensemble", ".*")
                    .replace("$election", ".*")
                    .replace("$server", ".*")
                    .replace("$group", ".*")
                    .replace("$lock", ".*");
                out.push((
                    name.to_owned(),
                    p["title"].as_str().unwrap().to_owned(),
                    expr,
                ));
            }
        }
    }
    out
}

/// Panels that stay empty in this scenario, and why.
const EMPTY_BY_DESIGN: &[(&str, &str)] = &[
    (
        "Ghost masters: time disconnected",
        "no master is a ghost in this scenario; the series exists only for ghost masters",
    ),
    (
        "Duplicate identities",
        "filters > 0 and no identity is duplicated",
    ),
    (
        "Masterless periods (p50, p90)",
        "histogram_quantile over a 30 m rate of a counter that starts during the test",
    ),
    (
        "Herd: watchers of the election node",
        "needs ghost_check.watches, off here",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_reach_alertmanager_and_dashboards_have_data() {
    let mut ensemble = ZkEnsemble::start(3);
    let addresses: Vec<String> = ensemble.servers.iter().map(ZkServer::address).collect();
    let base = unique_path("e2e");
    let (bot_1, bot_2, api) = (
        format!("{base}/bots/bot_1"),
        format!("{base}/bots/bot_2"),
        format!("{base}/services/api"),
    );
    let orders = format!("{base}/locks/orders");
    let admin = client(&addresses[2]).await;
    for p in [&bot_1, &bot_2, &api, &orders] {
        mkdir(&admin, p).await;
    }
    candidate(&admin, &orders, "4a1f9c2e__lock__", b"worker-1").await;
    let (c1, c2) = (client(&addresses[0]).await, client(&addresses[1]).await);
    candidate(&c1, &bot_1, "instance_", b"phone-1").await;
    candidate(&c2, &bot_1, "instance_", b"phone-2").await;
    candidate(&admin, &bot_2, "instance_", b"phone-3").await;
    admin
        .create(
            &format!("{api}/10.0.0.1:8080"),
            b"",
            &zookeeper_client::CreateMode::Ephemeral
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();

    let quoted: Vec<String> = addresses.iter().map(|a| format!("\"{a}\"")).collect();
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"e2e\"\nservers = [{}]\nsession_timeout = \"6s\"\n\
         [clusters.four_letter_words]\ntimeout = \"1s\"\n\
         [clusters.ghost_check]\ncons_interval = \"1s\"\n\
         [clusters.probe]\npath = \"{base}/probe\"\ninterval = \"1s\"\n\
         [[clusters.elections]]\npath = \"{base}/bots/*\"\nslo = {{ availability = 0.999 }}\n\
         [[clusters.groups]]\npath = \"{base}/services/*\"\nmin_members = 1\nexport_members = true\n\
         [[clusters.locks]]\npath = \"{base}/locks/*\"\nmax_hold = \"1h\"\n",
        quoted.join(", ")
    ));

    let am = alertmanager("alertmanager");
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/zookeeper.rules.yml")).unwrap();
    // The mixin's expressions on the test's time scale: every `for` 2 s,
    // the member window 5 s.
    // A scrape gap ridden out for 5 s: a resolution shows within the wait.
    let fast = mixin_rules("memberWindow: '5s', agentGap: '5s'", "2s");
    let (am_port, exporter_port) = (am.port, exporter.port);
    let prometheus = prometheus("prometheus", &fast, "1s", am_port, &[exporter_port]);

    // Every alert expression and every dashboard query parses in this Prometheus.
    for line in rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
    {
        let expr: String = serde_json::from_str(line).unwrap();
        query(&prometheus, &expr)
            .unwrap_or_else(|e| panic!("alert expression rejected: {expr}: {e}"));
    }
    let queries = dashboard_queries();
    for (dash, panel, expr) in &queries {
        query(&prometheus, expr)
            .unwrap_or_else(|e| panic!("{dash} / {panel}: query rejected: {e}"));
    }
    wait_for("the exporter scraped", T, || {
        let r = query(&prometheus, "up{job=\"zk-election-exporter\"} == 1")?;
        if r.is_empty() {
            Err("target not up".into())
        } else {
            Ok(())
        }
    });

    // All candidates of bot_1 die: ElectionNoMaster reaches Alertmanager.
    drop(c1);
    drop(c2);
    let labels = wait_for("ZooKeeperElectionNoMaster in Alertmanager", T, || {
        let a = alerts_in_alertmanager(&am, "ZooKeeperElectionNoMaster")?;
        a.into_iter().next().ok_or_else(|| {
            format!(
                "none yet; prometheus log: {}",
                prometheus.log().lines().last().unwrap_or("")
            )
        })
    });
    assert_eq!(labels["ensemble"], "e2e");
    assert_eq!(labels["election"], bot_1.as_str());
    assert_eq!(labels["severity"], "critical");
    // A candidate returns: the alert resolves.
    candidate(&admin, &bot_1, "instance_", b"phone-4").await;
    wait_for("ZooKeeperElectionNoMaster resolved", T, || {
        let a = alerts_in_alertmanager(&am, "ZooKeeperElectionNoMaster")?;
        if a.is_empty() {
            Ok(())
        } else {
            Err(format!("{a:?}"))
        }
    });

    // Dashboards return data now that the scenario has run for a while.
    let empty: Vec<String> = queries
        .iter()
        .filter(|(_, panel, _)| !EMPTY_BY_DESIGN.iter().any(|(p, _)| p == panel))
        .filter(|(_, _, expr)| {
            query(&prometheus, expr)
                .map(|r| r.is_empty())
                .unwrap_or(true)
        })
        .map(|(dash, panel, expr)| format!("{dash} / {panel}: {expr}"))
        .collect();
    assert!(
        empty.is_empty(),
        "panels without data:\n{}",
        empty.join("\n")
    );

    // One member of three stops: ServerDown and QuorumAtRisk.
    ensemble.servers[0].stop();
    let down = wait_for("ZooKeeperServerDown in Alertmanager", T, || {
        let a = alerts_in_alertmanager(&am, "ZooKeeperServerDown")?;
        a.into_iter().next().ok_or("none yet".to_owned())
    });
    assert_eq!(down["server"], addresses[0].as_str());
    assert_eq!(down["ensemble"], "e2e");
    let risk = wait_for("ZooKeeperQuorumAtRisk in Alertmanager", T, || {
        let a = alerts_in_alertmanager(&am, "ZooKeeperQuorumAtRisk")?;
        a.into_iter().next().ok_or("none yet".to_owned())
    });
    assert_eq!(risk["ensemble"], "e2e");
    drop(admin);
}
