//! Families of the failover probe.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;

/// Calls `f` with the labels and figures of every cluster running the probe.
pub(super) fn each_probe(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&Labels, &crate::model::ProbeStats) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        if let Some(p) = c.probe() {
            f(&Labels::new("ensemble", c.name()), &p.now())?;
        }
    }
    Ok(())
}

/// The failover probe's families.
pub(super) fn encode_probe(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    family(
        enc,
        names::PROBE_FAILOVER_SECONDS,
        "Failover probe: from closing the probe master's session until the standby is notified and sees itself master. The best-case switch time of any election on this ensemble.",
        MetricType::Histogram,
        |m| each_probe(clusters, |l, p| histogram(m, l, &p.failover)),
    )?;
    family(
        enc,
        names::PROBE_EPHEMERAL_EXPIRY_SECONDS,
        "Failover probe: from abandoning the probe master's session (as a crash would) until the standby sees itself master: how long a crashed master stays in place.",
        MetricType::Histogram,
        |m| each_probe(clusters, |l, p| histogram(m, l, &p.expiry)),
    )?;
    family(
        enc,
        names::PROBE_ERRORS,
        "Failover probe rounds that failed (no rights under the probe path, timeouts, connection trouble); logged once per distinct error.",
        MetricType::Counter,
        |m| each_probe(clusters, |l, p| counter(m, l, p.errors)),
    )
}
