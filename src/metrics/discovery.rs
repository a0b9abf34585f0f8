//! Families of zero-config discovery.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::content::ContentKind;

pub(super) fn encode_discovery(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    let discovering = || {
        clusters
            .iter()
            .filter_map(|c| c.discovery.as_ref().map(|d| (c.name.as_str(), d)))
    };
    family(
        enc,
        names::DISCOVERY_TREES,
        "Trees added by discovery since start, by kind.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                for kind in ContentKind::ALL {
                    let n = d.trees.get(&kind).copied().unwrap_or(0);
                    gauge(
                        m,
                        &Labels::new("cluster", cluster).with("kind", kind.label()),
                        n as f64,
                    )?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::DISCOVERY_NODES_WALKED,
        "Nodes listed by the last discovery walk.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                gauge(m, &Labels::new("cluster", cluster), d.nodes_walked as f64)?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::DISCOVERY_TRUNCATED,
        "1 if the last discovery walk stopped at max_nodes with nodes left unvisited.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                gauge(
                    m,
                    &Labels::new("cluster", cluster),
                    f64::from(u8::from(d.truncated)),
                )?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::DISCOVERY_LAST_RUN_TIMESTAMP_SECONDS,
        "Unix time the last discovery walk finished; absent before the first.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                if let Some(t) = d.last_run {
                    gauge(m, &Labels::new("cluster", cluster), unix_seconds(t))?;
                }
            }
            Ok(())
        },
    )
}
