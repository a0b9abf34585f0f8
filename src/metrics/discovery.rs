//! Families of zero-config discovery.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::content::ContentKind;
use crate::model::tree::TreeSource;

pub(super) fn encode_discovery(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    let discovering = || {
        clusters
            .iter()
            .filter_map(|c| c.discovery().map(|d| (*c, d.now())))
    };
    family(
        enc,
        names::DISCOVERY_TREES,
        "Trees discovery watches now, by kind: discovered and recognised systems' (vanished ones are dropped).",
        MetricType::Gauge,
        |m| {
            for (c, _) in discovering() {
                for kind in ContentKind::ALL {
                    let n = c
                        .trees()
                        .iter()
                        .filter(|t| {
                            t.source() != TreeSource::Configured && t.content_kind() == kind
                        })
                        .count();
                    gauge(
                        m,
                        &Labels::new("ensemble", c.name()).with("kind", kind.label()),
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
            for (c, d) in discovering() {
                let cluster = c.name();
                gauge(m, &Labels::new("ensemble", cluster), d.nodes_walked as f64)?;
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
            for (c, d) in discovering() {
                let cluster = c.name();
                gauge(
                    m,
                    &Labels::new("ensemble", cluster),
                    f64::from(u8::from(d.truncated)),
                )?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::DISCOVERY_FLEETING,
        "Finds of discovery walks (elections, locks, groups) none of whose candidates outlived discovery.settle, so no tree was made of them: insert-time churn such as ClickHouse's block numbers.",
        MetricType::Counter,
        |m| {
            for (c, d) in discovering() {
                counter(m, &Labels::new("ensemble", c.name()), d.fleeting)?;
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
            for (c, d) in discovering() {
                let cluster = c.name();
                if let Some(t) = d.last_run {
                    gauge(m, &Labels::new("ensemble", cluster), unix_seconds(t))?;
                }
            }
            Ok(())
        },
    )
}
