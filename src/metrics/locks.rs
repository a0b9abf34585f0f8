//! Families of the lock model: who holds each lock, for how long, who
//! waits. A lock nobody holds is normal; alerts look at holds and waiters.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
use crate::model::locks::{Lock, LockSpec};
use crate::model::tree::Tree;

/// Calls `f` with the labels, spec and model of every lock.
fn each_lock(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&Labels, &LockSpec, &Lock) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in c.trees().iter().filter_map(Tree::as_locks) {
            for (path, lock) in tree.locks() {
                f(
                    &Labels::new("ensemble", c.name()).with("lock", path),
                    tree.spec(),
                    lock,
                )?;
            }
        }
    }
    Ok(())
}

pub(super) fn encode_locks(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let (clusters, now) = (s.clusters, s.now);
    family(
        enc,
        names::LOCK_HELD,
        "1 if a contender holds the lock, 0 if it is free (normal for a lock).",
        MetricType::Gauge,
        |m| {
            each_lock(clusters, |l, _, k| {
                gauge(m, l, f64::from(u8::from(k.held())))
            })
        },
    )?;
    family(
        enc,
        names::LOCK_HOLDERS,
        "Contenders holding the lock: the lowest, or every reader ahead of the first writer.",
        MetricType::Gauge,
        |m| each_lock(clusters, |l, _, k| gauge(m, l, k.holders() as f64)),
    )?;
    family(
        enc,
        names::LOCK_WAITERS,
        "Contenders waiting for the lock.",
        MetricType::Gauge,
        |m| each_lock(clusters, |l, _, k| gauge(m, l, k.waiters() as f64)),
    )?;
    family(
        enc,
        names::LOCK_HOLD_SECONDS,
        "How long the current (longest) hold has lasted, timed from when the agent saw it start; only while held.",
        MetricType::Gauge,
        |m| {
            each_lock(clusters, |l, _, k| match k.hold(now) {
                Some(d) => gauge(m, l, d.as_secs_f64()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::LOCK_ACQUISITIONS,
        "Holds that started while the agent watched.",
        MetricType::Counter,
        |m| each_lock(clusters, |l, _, k| counter(m, l, k.acquisitions())),
    )?;
    family(
        enc,
        names::LOCK_MAX_HOLD_SECONDS,
        "Configured longest expected hold of the lock (only where max_hold is set).",
        MetricType::Gauge,
        |m| {
            each_lock(clusters, |l, spec, _| match spec.max_hold {
                Some(max) => gauge(m, l, max.as_secs_f64()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::TREE_LOCK_HOLD_DURATION_SECONDS,
        "Durations of the ended holds of the tree's locks whose start the agent saw as it happened.",
        MetricType::Histogram,
        |m| {
            for c in clusters {
                for tree in c.trees() {
                    if let Some(locks) = tree.as_locks() {
                        let l =
                            Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str());
                        histogram(m, &l, locks.hold_histogram())?;
                    }
                }
            }
            Ok(())
        },
    )
}
