//! Families of the group (registry) model.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
use crate::model::groups::{Group, GroupSpec};
use crate::model::tree::{Tree, TreeSource};

/// Calls `f` with the labels, spec and model of every group.
pub(super) fn each_group(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&Labels, &Tree, &GroupSpec, &Group) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in c.trees() {
            let Some(groups) = tree.as_groups() else {
                continue;
            };
            for (path, group) in groups.groups() {
                f(
                    &Labels::new("ensemble", c.name()).with("group", path),
                    tree,
                    groups.spec(),
                    group,
                )?;
            }
        }
    }
    Ok(())
}

pub(super) fn encode_groups(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    family(
        enc,
        names::GROUP_MEMBERS,
        "Live members (ephemeral children) of the group.",
        MetricType::Gauge,
        |m| each_group(clusters, |l, _, _, g| gauge(m, l, g.len() as f64)),
    )?;
    family(
        enc,
        names::GROUP_MEMBER_CHANGES,
        "Members that joined or left the group since the agent started watching (a restart under the same name is both).",
        MetricType::Counter,
        |m| {
            each_group(clusters, |l, _, _, g| {
                counter(m, &l.with("change", "join"), g.joins())?;
                counter(m, &l.with("change", "leave"), g.leaves())
            })
        },
    )?;
    family(
        enc,
        names::GROUP_MIN_MEMBERS,
        "Configured minimum of live members for the group (only where configured).",
        MetricType::Gauge,
        |m| {
            each_group(clusters, |l, _, spec, _| match spec.min_members {
                Some(min) => gauge(m, l, f64::from(min)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::GROUP_MEMBER,
        "One live member of the group; always 1 (only with export_members = true).",
        MetricType::Gauge,
        |m| {
            each_group(clusters, |l, _, spec, g| {
                if spec.export_members {
                    for member in g.member_names() {
                        gauge(m, &l.with("member", member), 1.0)?;
                    }
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        names::GROUP_DISCOVERED,
        "1 for a group found by discovery rather than configured (absent otherwise): its alerts are at most warnings.",
        MetricType::Gauge,
        |m| {
            each_group(clusters, |l, tree, _, _| match tree.source() {
                TreeSource::Discovered => gauge(m, l, 1.0),
                TreeSource::Configured | TreeSource::Recognised => Ok(()),
            })
        },
    )
}
