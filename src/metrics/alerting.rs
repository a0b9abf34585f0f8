//! Families about the alert pusher: alerts firing, deliveries per
//! Alertmanager, failures by reason, alerts never sent.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::names;
use crate::model::alerting::PushStats;

/// Always registered; silent while no `[alerting]` is configured (a
/// reload may add or remove it).
#[derive(Debug)]
pub(super) struct PushCollector {
    pub stats: Arc<PushStats>,
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
            "Alerts the agent is pushing now, by alertname and cluster.",
            MetricType::Gauge,
            |m| {
                for ((name, cluster), n) in &s.active {
                    gauge(
                        m,
                        &Labels::new("cluster", cluster).with("alertname", name),
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
        )
    }
}
