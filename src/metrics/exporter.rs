//! Families about the exporter itself.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::content::ContentKind;

pub(super) fn encode_series_dropped(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    family(
        enc,
        names::EXPORTER_SERIES_DROPPED,
        "Elections, groups or locks not watched at all because max_tracked_elections (the memory guard) / max_groups / max_locks was reached (counted at each listing and creation).",
        MetricType::Counter,
        |m| {
            for c in s.clusters {
                for kind in ContentKind::ALL {
                    let n = c.dropped().get(&kind).copied().unwrap_or(0);
                    counter(
                        m,
                        &Labels::new("ensemble", c.name()).with("kind", kind.label()),
                        n,
                    )?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::EXPORTER_ELECTIONS_EXPORTED,
        "Elections with per-election series now: all watched ones up to max_elections, past it those needing attention first (zookeeper_tree_elections counts every one).",
        MetricType::Gauge,
        |m| {
            for (c, survey) in s.clusters.iter().zip(&s.surveys) {
                let l = Labels::new("ensemble", c.name());
                gauge(m, &l, survey.exported.len() as f64)?;
            }
            Ok(())
        },
    )
}

/// How far back each cluster's timeline reaches, per ring: whether
/// `/api/v1/events` can still answer "who was master at 03:12".
pub(super) fn encode_timeline(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    use crate::model::timeline::Class;
    family(
        enc,
        names::EXPORTER_TIMELINE_ENTRIES,
        "Timeline entries kept, per class of entries (elections, locks, members, session), each a ring of timeline_size.",
        MetricType::Gauge,
        |m| {
            for c in s.clusters {
                for class in Class::ALL {
                    let l = Labels::new("ensemble", c.name()).with("class", class.label());
                    gauge(m, &l, c.timeline().reach(class).0 as f64)?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::EXPORTER_TIMELINE_OLDEST,
        "When the oldest entry kept of each class happened (Unix seconds): the history of that class reaches back to here. Absent for an empty ring.",
        MetricType::Gauge,
        |m| {
            for c in s.clusters {
                for class in Class::ALL {
                    let Some(at) = c.timeline().reach(class).1 else {
                        continue;
                    };
                    let secs = at
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64());
                    let l = Labels::new("ensemble", c.name()).with("class", class.label());
                    gauge(m, &l, secs)?;
                }
            }
            Ok(())
        },
    )
}

pub(super) fn encode_build_info(enc: &mut DescriptorEncoder, _: &Scrape) -> fmt::Result {
    family(
        enc,
        names::EXPORTER_BUILD_INFO,
        "Version, git revision, build date and compiler of zk-election-exporter (as --version prints them); always 1.",
        MetricType::Gauge,
        |m| {
            gauge(
                m,
                &Labels::new("version", crate::VERSION)
                    .with("revision", crate::REVISION)
                    .with("build_date", crate::BUILD_DATE)
                    .with("rustc_version", crate::RUSTC_VERSION),
                1.0,
            )
        },
    )
}
