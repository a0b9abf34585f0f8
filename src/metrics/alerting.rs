//! Families about the alert pusher: alerts firing, deliveries per
//! Alertmanager, failures by reason, alerts never sent.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::names;
use crate::model::alerting::{Kind, PushStats};

/// Always registered; silent while no `[alerting]` is configured (a
/// reload may add or remove it).
#[derive(Debug)]
pub(super) struct PushCollector {
    pub stats: Arc<PushStats>,
    /// Every watched cluster: `zookeeper_exporter_alerts_active` has a
    /// series for each from the first scrape on, because the rules of the
    /// pushed alerts stay silent exactly while it is there (one voice), and
    /// a scrape without it would let them speak up.
    pub clusters: Vec<String>,
}

impl Collector for PushCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = self.stats.snapshot();
        if !s.enabled {
            return Ok(());
        }
        family(
            &mut enc,
            names::ALERTS_ACTIVE,
            "Alerts the agent is pushing now, by alertname and ensemble.",
            MetricType::Gauge,
            |m| {
                let mut active = s.active.clone();
                for cluster in &self.clusters {
                    for kind in Kind::ALL {
                        active
                            .entry((kind.alertname(), cluster.clone()))
                            .or_default();
                    }
                }
                for ((name, cluster), n) in &active {
                    gauge(
                        m,
                        &Labels::new("ensemble", cluster).with("alertname", name),
                        *n as f64,
                    )?;
                }
                Ok(())
            },
        )?;
        family(
            &mut enc,
            names::ALERTS_SENT,
            "Alerts accepted by each Alertmanager (every active alert is sent again each resend_interval, resolved ones once).",
            MetricType::Counter,
            |m| {
                for (url, n) in &s.sent {
                    counter(m, &Labels::new("alertmanager", url), *n)?;
                }
                Ok(())
            },
        )?;
        family(
            &mut enc,
            names::ALERTS_SEND_ERRORS,
            "Failed deliveries by Alertmanager and reason: connect, tls, timeout, io, protocol, credentials, status_4xx, status_5xx. Retried with backoff.",
            MetricType::Counter,
            |m| {
                for ((url, reason), n) in &s.errors {
                    counter(
                        m,
                        &Labels::new("alertmanager", url).with("reason", reason),
                        *n,
                    )?;
                }
                Ok(())
            },
        )?;
        let none: [(&str, &str); 0] = [];
        family(
            &mut enc,
            names::ALERTS_DROPPED,
            "Alerts never pushed: past alerting.max_alerts per cluster, or resolutions not delivered within 10 minutes or beyond 4 x max_alerts waiting.",
            MetricType::Counter,
            |m| counter(m, &none, s.dropped),
        )?;
        family(
            &mut enc,
            names::ALERTS_READ_BACK_ERRORS,
            "Failed read-backs at start, by Alertmanager and reason: connect, tls, timeout, io, protocol, credentials, status_4xx, status_5xx. What only that Alertmanager had firing waits out its hold again.",
            MetricType::Counter,
            |m| {
                for ((url, reason), n) in &s.read_back_errors {
                    counter(
                        m,
                        &Labels::new("alertmanager", url).with("reason", reason),
                        *n,
                    )?;
                }
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(collector: PushCollector) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(collector));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn every_cluster_has_its_active_alerts_before_the_pusher_counted_any() {
        let stats = Arc::new(PushStats::default());
        stats.with(|s| s.enabled = true);
        let out = render(PushCollector {
            stats: stats.clone(),
            clusters: vec!["prod".into(), "stage".into()],
        });
        for cluster in ["prod", "stage"] {
            for kind in Kind::ALL {
                let series = format!(
                    "zookeeper_exporter_alerts_active{{ensemble=\"{cluster}\",alertname=\"{}\"}} 0",
                    kind.alertname()
                );
                assert!(out.contains(&series), "{series} missing from\n{out}");
            }
        }
        // Without [alerting], nothing: the rules decide.
        stats.with(|s| s.enabled = false);
        let out = render(PushCollector {
            stats,
            clusters: vec!["prod".into()],
        });
        assert!(!out.contains("zookeeper_exporter_alerts_active"), "{out}");
    }
}
