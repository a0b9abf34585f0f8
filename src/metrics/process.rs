//! The standard process families every Prometheus client library exports
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, …), read
//! from /proc at each scrape, so generic exporter-health dashboards and
//! alerts show this agent too. Where /proc cannot be read they are left
//! out, never made up.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::names;

/// Reads the process's figures: `None` where they cannot be read.
pub type Reader = fn() -> Option<crate::os::ProcessStats>;

/// Registered beside the cluster collector in the agent's own exposition.
#[derive(Debug)]
pub(super) struct ProcessCollector {
    pub read: Reader,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let Some(p) = (self.read)() else {
            return Ok(());
        };
        let none: [(&str, &str); 0] = [];
        family(
            &mut enc,
            names::PROCESS_CPU_SECONDS,
            "Total user and system CPU time spent in seconds.",
            MetricType::Counter,
            |m| counter(m, &none, p.cpu_seconds),
        )?;
        let mut gauges = vec![
            (
                names::PROCESS_RESIDENT_MEMORY_BYTES,
                "Resident memory size in bytes.",
                p.resident_bytes as f64,
            ),
            (
                names::PROCESS_VIRTUAL_MEMORY_BYTES,
                "Virtual memory size in bytes.",
                p.virtual_bytes as f64,
            ),
            (
                names::PROCESS_OPEN_FDS,
                "Number of open file descriptors.",
                p.open_fds as f64,
            ),
            (
                names::PROCESS_START_TIME_SECONDS,
                "Start time of the process since unix epoch in seconds.",
                p.start_time_seconds,
            ),
            (
                names::PROCESS_THREADS,
                "Number of OS threads in the process.",
                p.threads as f64,
            ),
        ];
        // Unlimited has no number: the family is left out, as Go's.
        if let Some(max) = p.max_fds {
            gauges.insert(
                3,
                (
                    names::PROCESS_MAX_FDS,
                    "Maximum number of open file descriptors.",
                    max as f64,
                ),
            );
        }
        for (name, help, value) in gauges {
            family(&mut enc, name, help, MetricType::Gauge, |m| {
                gauge(m, &none, value)
            })?;
        }
        Ok(())
    }
}
