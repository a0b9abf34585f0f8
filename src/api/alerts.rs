//! The body of one pushed alert: Alertmanager API v2's `postableAlert`.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use serde::Serialize;

use super::rfc3339_millis;
use crate::model::alerting::{Firing, Key, fill};

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
        let mut labels = cx.external_labels.clone();
        labels.insert("alertname".into(), kind.alertname().into());
        labels.insert("severity".into(), kind.severity().into());
        labels.insert("cluster".into(), cluster.clone());
        if !election.is_empty() {
            labels.insert("election".into(), election.clone());
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alerting::Kind;
    use std::time::Duration;

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
                "cluster": "prod",
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
}
