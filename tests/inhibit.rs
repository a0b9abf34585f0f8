//! The shipped Alertmanager inhibit rules (alerts/inhibit_rules.yml,
//! generated from the mixin) in Debian's Alertmanager: each cause silences
//! the pages it causes in its own cluster, and nothing else.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::program::alertmanager_with;
use common::*;
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// (alertname, cluster, what else tells it apart) of an alert.
type Alert = (&'static str, &'static str, &'static str);

/// Every alert Alertmanager holds, split into (active, suppressed).
fn states(port: u16) -> Result<(BTreeSet<String>, BTreeSet<String>), String> {
    let (status, body) = http_get(port, "/api/v2/alerts")?;
    if status != 200 {
        return Err(format!("/api/v2/alerts: {status} {body}"));
    }
    let all: Vec<Value> = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let (mut active, mut suppressed) = (BTreeSet::new(), BTreeSet::new());
    for a in all {
        let l = &a["labels"];
        let ensemble = match (l["ensemble"].as_str(), l["cluster"].as_str()) {
            (Some(e), Some(k8s)) => format!("{e}@{k8s}"),
            (e, _) => e.unwrap_or_default().to_owned(),
        };
        let key = format!(
            "{} {ensemble} {}",
            l["alertname"].as_str().unwrap_or_default(),
            l["server"]
                .as_str()
                .or(l["election"].as_str())
                .or(l["lock"].as_str())
                .unwrap_or_default()
        );
        match a["status"]["state"].as_str() {
            Some("suppressed") if !a["status"]["inhibitedBy"].as_array().unwrap().is_empty() => {
                suppressed.insert(key)
            }
            Some("active") => active.insert(key),
            other => return Err(format!("{key} is {other:?}")),
        };
    }
    Ok((active, suppressed))
}

fn key((name, cluster, other): &Alert) -> String {
    format!("{name} {cluster} {other}")
}

#[test]
fn each_cause_silences_its_effects_in_its_own_cluster_only() {
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/inhibit_rules.yml")).unwrap();
    let am = alertmanager_with("inhibit", &rules);
    let label = |(name, cluster, other): &Alert| {
        // `ensemble@cluster`: the ensemble in a Kubernetes cluster, whose
        // name Prometheus adds as the `cluster` external label.
        let mut l = match cluster.split_once('@') {
            Some((ensemble, k8s)) => {
                json!({ "alertname": name, "ensemble": ensemble, "cluster": k8s, "severity": "critical" })
            }
            None => json!({ "alertname": name, "ensemble": cluster, "severity": "critical" }),
        };
        let field = match *name {
            "ZooKeeperServerDown" | "ZooKeeperNotServing" => Some("server"),
            "ZooKeeperLockHeldTooLong" => Some("lock"),
            n if n.starts_with("ZooKeeperElection") => Some("election"),
            _ => None,
        };
        if let Some(f) = field {
            l[f] = json!(other);
        }
        json!({ "labels": l })
    };
    let silenced: Vec<Alert> = vec![
        // A lost quorum: every member, the leader, the agent's session and
        // the elections follow from it.
        ("ZooKeeperServerDown", "prod", "zk1:2181"),
        ("ZooKeeperNotServing", "prod", "zk2:2181"),
        ("ZooKeeperNoLeader", "prod", ""),
        ("ZooKeeperExporterSessionDown", "prod", ""),
        ("ZooKeeperElectionNoMaster", "prod", "/bots/a"),
        ("ZooKeeperElectionErrorBudgetBurn", "prod", "/bots/*"),
        // A leader election that does not finish: members not serving.
        ("ZooKeeperNotServing", "elect", "zk1:2181"),
        // A lost quorum of `prod` in one Kubernetes cluster silences that
        // cluster's pages of it.
        ("ZooKeeperServerDown", "prod@k8s-a", "zk1:2181"),
        // The agent without a session: its elections and locks.
        ("ZooKeeperElectionNoMaster", "blind", "/bots/b"),
        ("ZooKeeperElectionErrorBudgetBurnSlow", "blind", "/bots/*"),
        ("ZooKeeperLockHeldTooLong", "blind", "/locks/l"),
    ];
    let heard: Vec<Alert> = vec![
        ("ZooKeeperQuorumLost", "prod", ""),
        ("ZooKeeperQuorumLost", "prod@k8s-a", ""),
        // An ensemble of the same name in another Kubernetes cluster is
        // another ensemble: neither quorum silences it.
        ("ZooKeeperServerDown", "prod@k8s-b", "zk1:2181"),
        // Fencing is its own trouble, whatever else happens.
        ("ZooKeeperElectionEpochRegression", "prod", "/bots/a"),
        // The same alerts in other clusters, or with causes that are not theirs.
        ("ZooKeeperServerDown", "stage", "zk1:2181"),
        ("ZooKeeperElectionErrorBudgetBurn", "stage", "/bots/*"),
        ("ZooKeeperNoLeader", "elect", ""),
        ("ZooKeeperServerDown", "elect", "zk2:2181"),
        ("ZooKeeperExporterSessionDown", "blind", ""),
        ("ZooKeeperServerDown", "blind", "zk3:2181"),
    ];
    let body: Vec<Value> = silenced.iter().chain(&heard).map(label).collect();
    let (status, answer) =
        http_post_json(am.port, "/api/v2/alerts", &Value::Array(body).to_string()).unwrap();
    assert_eq!(status, 200, "{answer}");
    let want_active: BTreeSet<String> = heard.iter().map(key).collect();
    let want_suppressed: BTreeSet<String> = silenced.iter().map(key).collect();
    wait_for("the inhibitions in force", Duration::from_secs(30), || {
        let (active, suppressed) = states(am.port)?;
        if active == want_active && suppressed == want_suppressed {
            Ok(())
        } else {
            Err(format!(
                "active {active:?}, suppressed {suppressed:?}: {}",
                am.log()
            ))
        }
    });
}
