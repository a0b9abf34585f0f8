//! Families of each watched tree: sync state and counts.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
use crate::model::attention::State;
use crate::model::content::{NodeCounts, TreeContent};
use crate::model::election_tree::Style;
use crate::model::tree::Tree;

/// Calls `f` with the labels and model of every tree of every cluster.
pub(super) fn each_tree(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&Labels, &Tree) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in c.trees() {
            f(
                &Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str()),
                tree,
            )?;
        }
    }
    Ok(())
}

pub(super) fn encode_trees(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    type Count = fn(&Tree) -> Option<f64>;
    let gauges: [(&str, &str, Count); 3] = [
        (
            names::TREE_SYNCED,
            "1 if the tree reflects ZooKeeper now; 0 while disconnected or a listing failed (its values are then the last known ones).",
            |t| Some(f64::from(u8::from(t.synced()))),
        ),
        (
            names::TREE_GROUPS,
            "Groups (nodes matching the glob) in a group tree.",
            |t| t.as_groups().map(|g| g.parent_count() as f64),
        ),
        (
            names::TREE_LOCKS,
            "Locks (nodes matching the glob) in a lock tree.",
            |t| t.as_locks().map(|l| l.parent_count() as f64),
        ),
    ];
    for (name, help, value) in gauges {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_tree(clusters, |l, t| value(t).map_or(Ok(()), |v| gauge(m, l, v)))
        })?;
    }
    // Election trees were counted in the survey's walk; the others walk
    // once here for their three counts.
    let counts: Vec<NodeCounts> = clusters
        .iter()
        .zip(&s.surveys)
        .flat_map(|(c, survey)| {
            c.trees()
                .iter()
                .zip(&survey.nodes)
                .map(|(t, counted)| counted.unwrap_or_else(|| t.node_counts()))
        })
        .collect();
    type Counted = fn(&NodeCounts) -> usize;
    let counted: [(&str, &str, Counted); 3] = [
        (
            names::TREE_NODES,
            "Matching nodes plus all their children in the tree.",
            |n| n.nodes,
        ),
        (
            names::TREE_EPHEMERAL_NODES,
            "Ephemeral children of the tree's elections or groups.",
            |n| n.ephemeral,
        ),
        (
            names::TREE_IGNORED_NODES,
            "Children that are neither candidates (no sequence suffix) nor members (persistent).",
            |n| n.ignored,
        ),
    ];
    for (name, help, value) in counted {
        family(enc, name, help, MetricType::Gauge, |m| {
            let mut counts = counts.iter();
            each_tree(clusters, |l, _| match counts.next() {
                Some(n) => gauge(m, l, value(n) as f64),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        names::TREE_ELECTIONS,
        "Elections (nodes matching the glob) of an election tree by state, each in the most urgent that applies (masterless, ghost, duplicate, flapping, no_standby, else ok); they add up to the tree's elections, every one watched whether it has series of its own or not.",
        MetricType::Gauge,
        |m| {
            for (c, survey) in clusters.iter().zip(&s.surveys) {
                for (tree, counts) in c.trees().iter().zip(&survey.counts) {
                    if tree.as_elections().is_none() {
                        continue;
                    }
                    let l = Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str());
                    for state in State::ALL {
                        gauge(
                            m,
                            &l.with("state", state.label()),
                            counts[state.index()] as f64,
                        )?;
                    }
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::TREE_MASTER_CHANGES,
        "Master switches of all the tree's elections since the agent started watching (elections deleted since included).",
        MetricType::Counter,
        |m| {
            each_tree(clusters, |l, t| match t.as_elections() {
                Some(e) => counter(m, l, e.switches()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::TREE_MASTERLESS_SECONDS,
        "Accumulated seconds without a master of all the tree's elections (every one watched, with series of its own or not; elections deleted since included, up to their deletion). Its rate over the tree's elections is the share of time without a master: the SLO's error ratio.",
        MetricType::Counter,
        |m| {
            for (c, survey) in clusters.iter().zip(&s.surveys) {
                for (tree, lost) in c.trees().iter().zip(&survey.masterless) {
                    let Some(e) = tree.as_elections() else {
                        continue;
                    };
                    let l = Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str());
                    counter(m, &l, (*lost + e.masterless_gone()).as_secs_f64())?;
                }
            }
            Ok(())
        },
    )?;
    type Objective = fn(&crate::model::election_tree::Slo) -> f64;
    let objectives: [(&str, &str, Objective); 2] = [
        (
            names::TREE_SLO_OBJECTIVE,
            "The election set's availability objective (`slo.availability`): the share of time each of its elections should have a master. Absent without one.",
            |o| o.availability,
        ),
        (
            names::TREE_SLO_WINDOW_SECONDS,
            "The window of the election set's objective (`slo.window`), for dashboards; the mixin's burn-rate rules assume _config.slo.window.",
            |o| o.window.as_secs_f64(),
        ),
    ];
    for (name, help, value) in objectives {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_tree(clusters, |l, t| {
                match t.as_elections().and_then(|e| e.spec().slo.as_ref()) {
                    Some(o) => gauge(m, l, value(o)),
                    None => Ok(()),
                }
            })
        })?;
    }
    family(
        enc,
        names::TREE_INFO,
        "What each watched tree is: kind, election style and whether it was configured or discovered; always 1.",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                let style = t.as_elections().map_or("", |e| match &e.spec().style {
                    Style::Sequential => "sequential",
                    Style::Node(_) => "node",
                });
                let labels = l
                    .with("kind", t.content_kind().label())
                    .with("style", style);
                gauge(m, &labels.with("source", t.source().label()), 1.0)
            })
        },
    )?;
    family(
        enc,
        names::TREE_SYNC_FAILURES,
        "Failed attempts to watch and list the tree (no rights, connection loss).",
        MetricType::Counter,
        |m| each_tree(clusters, |l, t| counter(m, l, t.sync_failures())),
    )?;
    family(
        enc,
        names::TREE_WATCH_EVENTS,
        "Node events the tree's persistent watches delivered, whether they changed anything: what following the tree costs. A recursive watch on a busy subtree delivers every event in it.",
        MetricType::Counter,
        |m| each_tree(clusters, |l, t| counter(m, l, t.watch_events())),
    )?;
    family(
        enc,
        names::TREE_MASTERLESS_DURATION_SECONDS,
        "Durations of ended masterless periods of the tree's elections.",
        MetricType::Histogram,
        |m| {
            each_tree(clusters, |l, t| match t.as_elections() {
                Some(e) => histogram(m, l, e.masterless_histogram()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::TREE_HANDOVER_SECONDS,
        "Handover times of the tree's elections: from the old master's node going (deleted, or expired with its session) to the election's record naming the new master (the first evidence that it took over). Only trees with a record; buckets around 200 ms.",
        MetricType::Histogram,
        |m| {
            each_tree(clusters, |l, t| {
                match t.as_elections().and_then(|e| e.handover_histogram()) {
                    Some(h) => histogram(m, l, h),
                    None => Ok(()),
                }
            })
        },
    )
}
