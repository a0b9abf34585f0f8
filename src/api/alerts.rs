//! The body of one pushed alert: Alertmanager API v2's `postableAlert`.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::{parse_rfc3339, rfc3339_millis};
use crate::model::alerting::{Firing, Key, Kind, fill};

#[derive(Debug, Clone, Serialize)]
pub struct PostableAlert {
    pub annotations: Annotations,
    #[serde(rename = "endsAt")]
    pub ends_at: String,
    /// Where the alert's subject is looked up (`[alerting] generator_url`).
    #[serde(rename = "generatorURL", skip_serializing_if = "Option::is_none")]
    pub generator_url: Option<String>,
    /// The identifying labels: the same as the rule's alert carries, or
    /// Alertmanager would page twice.
    pub labels: BTreeMap<String, String>,
    #[serde(rename = "startsAt")]
    pub starts_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Annotations {
    pub description: String,
    pub runbook_url: String,
    pub summary: String,
}

/// What every alert of one pusher shares.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub external_labels: &'a BTreeMap<String, String>,
    pub generator_url: Option<&'a str>,
    /// Where `docs/runbooks.md` is published.
    pub runbook_url: &'a str,
}

impl PostableAlert {
    /// Alert `key` firing since `firing.since`, ending at `ends` (in the
    /// future while it fires, when it resolved otherwise).
    pub fn of(
        cx: Context<'_>,
        key: &Key,
        firing: &Firing,
        now: Instant,
        wall: SystemTime,
        ends: SystemTime,
    ) -> Self {
        let (kind, cluster, election) = key;
        let labels = labels_of(cx.external_labels, key);
        let (summary, description) = kind.texts();
        let starts = wall - now.saturating_duration_since(firing.since);
        let generator_url = cx.generator_url.map(|base| {
            let path = if election.is_empty() {
                String::from("/")
            } else {
                format!("/api/v1/elections{election}?cluster={cluster}")
            };
            format!("{}{path}", base.trim_end_matches('/'))
        });
        Self {
            annotations: Annotations {
                description: fill(description, cluster, election, firing.value),
                runbook_url: format!("{}#{}", cx.runbook_url, kind.anchor()),
                summary: fill(summary, cluster, election, firing.value),
            },
            ends_at: rfc3339_millis(ends),
            generator_url,
            labels,
            starts_at: rfc3339_millis(starts),
        }
    }
}

/// The labels of `key`'s alert as the agent pushes it.
fn labels_of(external: &BTreeMap<String, String>, key: &Key) -> BTreeMap<String, String> {
    let (kind, cluster, election) = key;
    let mut labels = external.clone();
    labels.insert("alertname".into(), kind.alertname().into());
    labels.insert("severity".into(), kind.severity().into());
    labels.insert("ensemble".into(), cluster.clone());
    if !election.is_empty() {
        labels.insert("election".into(), election.clone());
    }
    labels
}

/// The fields of Alertmanager's `gettableAlert` read back.
#[derive(Debug, Deserialize)]
struct GettableAlert {
    labels: BTreeMap<String, String>,
    #[serde(rename = "startsAt")]
    starts_at: String,
    status: AlertStatus,
}

#[derive(Debug, Deserialize)]
struct AlertStatus {
    state: String,
}

/// The alerts in `body` (`GET /api/v2/alerts`) that are this agent's own:
/// active (suppressed or not yet processed too), with exactly the labels it would push for one of
/// `clusters` under `external` labels, and since when. An alert of the
/// same name but other labels (another deployment's, the rule's copy
/// under Prometheus's external labels) is not.
pub fn own_alerts(
    body: &[u8],
    external: &BTreeMap<String, String>,
    clusters: &[String],
) -> Result<Vec<(Key, SystemTime)>, String> {
    let list: Vec<GettableAlert> = serde_json::from_slice(body)
        .map_err(|e| format!("the alert list is not Alertmanager's JSON: {e}"))?;
    let mut own = Vec::new();
    for alert in list {
        if !matches!(
            alert.status.state.as_str(),
            "active" | "suppressed" | "unprocessed"
        ) {
            continue;
        }
        let label = |name: &str| alert.labels.get(name).cloned().unwrap_or_default();
        let Some(kind) = Kind::ALL
            .iter()
            .copied()
            .find(|k| k.alertname() == label("alertname"))
        else {
            continue;
        };
        let key = (kind, label("ensemble"), label("election"));
        if !clusters.contains(&key.1) || labels_of(external, &key) != alert.labels {
            continue;
        }
        let Some(since) = parse_rfc3339(&alert.starts_at) else {
            continue;
        };
        own.push((key, since));
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alerting::Kind;
    use std::time::Duration;

    /// Every pushed alert carries its own labels and the external ones,
    /// and nothing else: no label the ecosystem reserves (`cluster` among
    /// them) unless configured as an external label, which then reaches
    /// Alertmanager as it is.
    #[test]
    fn a_pushed_alert_carries_only_its_own_labels_and_the_external_ones() {
        let external = BTreeMap::from([("cluster".to_owned(), "k8s-a".to_owned())]);
        for kind in Kind::ALL {
            let labels = labels_of(&external, &(kind, "prod".into(), "/e".into()));
            let names: Vec<&str> = labels.keys().map(String::as_str).collect();
            assert_eq!(
                names,
                ["alertname", "cluster", "election", "ensemble", "severity"],
                "{kind:?}"
            );
            assert_eq!(labels["cluster"], "k8s-a");
            assert_eq!(labels["ensemble"], "prod");
        }
    }

    #[test]
    fn a_pushed_alert_carries_the_rule_labels_and_alertmanager_field_names() {
        let external = BTreeMap::from([
            ("region".to_owned(), "eu".to_owned()),
            ("severity".to_owned(), "overridden".to_owned()),
        ]);
        let cx = Context {
            external_labels: &external,
            generator_url: Some("http://agent:9141/"),
            runbook_url: "https://runbooks.example/zk.md",
        };
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let firing = Firing {
            since: now - Duration::from_secs(60),
            value: 0,
        };
        let key = (Kind::NoMaster, "prod".to_owned(), "/bots/bot_1".to_owned());
        let ends = wall + Duration::from_secs(240);
        let alert = PostableAlert::of(cx, &key, &firing, now, wall, ends);
        let json = serde_json::to_value(&alert).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "annotations",
                "endsAt",
                "generatorURL",
                "labels",
                "startsAt"
            ]
        );
        assert_eq!(
            json["labels"],
            serde_json::json!({
                "alertname": "ZooKeeperElectionNoMaster",
                "ensemble": "prod",
                "election": "/bots/bot_1",
                "region": "eu",
                "severity": "critical",
            }),
            "the agent's own labels win over external ones"
        );
        assert_eq!(json["startsAt"], "2026-11-30T00:52:20.000Z");
        assert_eq!(json["endsAt"], "2026-11-30T00:57:20.000Z");
        assert_eq!(
            json["generatorURL"],
            "http://agent:9141/api/v1/elections/bots/bot_1?cluster=prod"
        );
        assert_eq!(
            json["annotations"]["runbook_url"],
            "https://runbooks.example/zk.md#zookeeperelectionnomaster"
        );
        let session = (Kind::SessionDown, "prod".to_owned(), String::new());
        let cx = Context {
            generator_url: None,
            ..cx
        };
        let json = serde_json::to_value(PostableAlert::of(cx, &session, &firing, now, wall, ends))
            .unwrap();
        assert!(json.get("generatorURL").is_none() && json["labels"].get("election").is_none());
    }

    #[test]
    fn the_alerts_read_back_are_only_this_agents_own() {
        let external = BTreeMap::from([("region".to_owned(), "eu".to_owned())]);
        let clusters = vec!["prod".to_owned()];
        let body = br#"[
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b1", "region": "eu"},
           "startsAt": "2026-12-04T13:00:00.250Z", "status": {"state": "active"}},
          {"labels": {"alertname": "ZooKeeperExporterSessionDown", "severity": "critical", "ensemble": "prod", "region": "eu"},
           "startsAt": "2026-12-04T14:00:00.000+01:00", "status": {"state": "suppressed"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b2", "region": "eu", "prometheus": "p1"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "active"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "staging", "election": "/bots/b1", "region": "eu"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "active"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b3"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "active"}},
          {"labels": {"alertname": "SomethingElse", "ensemble": "prod", "region": "eu"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "active"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b4", "region": "eu"},
           "startsAt": "not a time", "status": {"state": "active"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b5", "region": "eu"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "unprocessed"}},
          {"labels": {"alertname": "ZooKeeperElectionNoMaster", "severity": "critical", "ensemble": "prod", "election": "/bots/b6", "region": "eu"},
           "startsAt": "2026-12-04T13:00:00Z", "status": {"state": "resolved"}}
        ]"#;
        let own = own_alerts(body, &external, &clusters).unwrap();
        let at = |t| humantime::parse_rfc3339(t).unwrap();
        assert_eq!(
            own,
            vec![
                (
                    (Kind::NoMaster, "prod".to_owned(), "/bots/b1".to_owned()),
                    at("2026-12-04T13:00:00.250Z")
                ),
                (
                    (Kind::SessionDown, "prod".to_owned(), String::new()),
                    at("2026-12-04T13:00:00Z")
                ),
                (
                    (Kind::NoMaster, "prod".to_owned(), "/bots/b5".to_owned()),
                    at("2026-12-04T13:00:00Z")
                ),
            ],
            "other labels, another cluster, a wrong time or a state not active are not the agent's"
        );
        assert!(own_alerts(b"<html>", &external, &clusters).is_err());
        assert!(own_alerts(b"[]", &external, &clusters).unwrap().is_empty());
    }
}
