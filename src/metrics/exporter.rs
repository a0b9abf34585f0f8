//! Families about the exporter itself.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::Scrape;
use super::encode::*;

pub(super) fn encode_series_dropped(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    family(
        enc,
        "zookeeper_exporter_series_dropped",
        "Elections or groups neither tracked nor exported because max_elections / max_groups was reached (counted at each listing and creation).",
        MetricType::Counter,
        |m| {
            for c in s.clusters {
                for kind in ["election", "group"] {
                    let n = c.dropped.get(kind).copied().unwrap_or(0);
                    counter(m, &[("cluster", c.name.as_str()), ("kind", kind)], n)?;
                }
            }
            Ok(())
        },
    )
}

pub(super) fn encode_build_info(enc: &mut DescriptorEncoder, _: &Scrape) -> fmt::Result {
    family(
        enc,
        "zookeeper_exporter_build_info",
        "Version and git revision of zk-election-exporter; always 1.",
        MetricType::Gauge,
        |m| {
            gauge(
                m,
                &[("version", crate::VERSION), ("revision", crate::REVISION)],
                1.0,
            )
        },
    )
}
