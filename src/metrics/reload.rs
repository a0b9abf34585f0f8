//! Families about configuration reloads, named as Prometheus names its own
//! (`prometheus_config_last_reload_successful`, ...).

use std::fmt;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::names;
use crate::model::reload::ReloadStats;

#[derive(Debug)]
pub(super) struct ReloadCollector {
    pub stats: Arc<ReloadStats>,
}

impl Collector for ReloadCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = self.stats.snapshot();
        let none: [(&str, &str); 0] = [];
        let since_epoch = s
            .last_success
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        family(
            &mut enc,
            names::CONFIG_LAST_RELOAD_SUCCESSFUL,
            "0 when the last configuration reload (SIGHUP, POST /-/reload) was refused: the configuration in force is older than the file. 1 at start.",
            MetricType::Gauge,
            |m| gauge(m, &none, f64::from(u8::from(s.successful))),
        )?;
        family(
            &mut enc,
            names::CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP,
            "When a configuration was last taken up (the start counts), seconds since 1970.",
            MetricType::Gauge,
            |m| gauge(m, &none, since_epoch),
        )?;
        family(
            &mut enc,
            names::CONFIG_RELOADS,
            "Configuration reloads asked for since start, by result.",
            MetricType::Counter,
            |m| {
                counter(m, &Labels::new("result", "success"), s.reloads - s.failures)?;
                counter(m, &Labels::new("result", "failure"), s.failures)
            },
        )
    }
}
