//! Families of the election model: master, candidates, switches,
//! masterless time.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
#[cfg(doc)]
use crate::model::attention::Survey;
use crate::model::election::MasterView;
use crate::model::election_tree::{ElectionTree, NodeSpec, Style};
use crate::model::tree::{Tree, TreeSource};

/// One exported election as every family reads it, gathered in one pass
/// over the model: the families then walk this array instead of following
/// pointers into a model far larger than the CPU's caches (at 100,000
/// elections that walk, twelve times over, was half the render).
pub(super) struct Seen<'a> {
    pub cluster: &'a ClusterState,
    pub elections: &'a ElectionTree,
    pub tree: &'a Tree,
    pub path: &'a str,
    pub master: Option<MasterView<'a>>,
    pub candidates: Option<usize>,
    pub changes: u64,
    pub joins: u64,
    pub leaves: u64,
    pub duplicates: usize,
    pub masterless_seconds: f64,
    /// Epoch and its regressions, only where an epoch is configured.
    pub epoch: Option<(Option<i64>, u64)>,
    pub record: Option<&'a str>,
}

/// Every exported election of every cluster (all up to the cap; see
/// [`Survey`]), with its labels' values.
fn rows<'a>(s: &Scrape<'a>) -> Vec<Seen<'a>> {
    let mut rows = Vec::new();
    for (c, survey) in s.clusters.iter().zip(&s.surveys) {
        rows.reserve(survey.exported.len());
        for &(tree, path, election) in &survey.exported {
            let Some(elections) = tree.as_elections() else {
                continue;
            };
            let spec = elections.spec();
            let epoch = match &spec.style {
                Style::Node(NodeSpec { epoch: Some(_), .. }) => {
                    let facts = elections.facts(path);
                    Some((
                        facts.and_then(|f| f.epoch),
                        facts.map_or(0, |f| f.epoch_regressions),
                    ))
                }
                _ => None,
            };
            rows.push(Seen {
                cluster: c,
                elections,
                tree,
                path,
                master: election.master(),
                candidates: c.candidates_of(elections, path, election),
                changes: election.changes(),
                joins: election.joins(),
                leaves: election.leaves(),
                duplicates: election.duplicate_identities(),
                masterless_seconds: election.masterless_total(s.now).as_secs_f64(),
                epoch,
                record: spec.record.as_ref().and_then(|_| elections.record(path)),
            });
        }
    }
    rows
}

/// Calls `f` with the labels and row of every exported election.
fn each_election(rows: &[Seen], mut f: impl FnMut(&Labels, &Seen) -> fmt::Result) -> fmt::Result {
    for row in rows {
        f(
            &Labels::new("cluster", row.cluster.name.as_str()).with("election", row.path),
            row,
        )?;
    }
    Ok(())
}

pub(super) fn encode_elections(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let rows = rows(s);
    let rows = rows.as_slice();
    family(
        enc,
        names::ELECTION_CANDIDATES,
        "Candidates (children with a sequence suffix) of the election; absent for node-style elections, whose standbys keep no node.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| match seen.candidates {
                Some(n) => gauge(m, l, n as f64),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_HAS_MASTER,
        "1 if the election has a master (at least one candidate), else 0.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, e| {
                gauge(m, l, f64::from(u8::from(e.master.is_some())))
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER,
        "The current master of the election: its node and identity; always 1, absent when masterless.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, e| match e.master {
                Some(master) => gauge(
                    m,
                    &l.with("node", master.node)
                        .with("identity", master.identity),
                    1.0,
                ),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER_SEQUENCE,
        "Sequence number of the master's node (sequential elections only).",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| {
                match (&seen.elections.spec().style, seen.master) {
                    (Style::Sequential, Some(master)) => gauge(m, l, f64::from(master.sequence)),
                    _ => Ok(()),
                }
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER_SINCE_TIMESTAMP_SECONDS,
        "Unix time the current master took over (its node's ctime when first seen at agent start).",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, e| match e.master {
                Some(master) => gauge(m, l, unix_seconds(master.since)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER_CHANGES,
        "Master switches (a different node became master) since the agent started watching.",
        MetricType::Counter,
        |m| each_election(rows, |l, e| counter(m, l, e.changes)),
    )?;
    family(
        enc,
        names::ELECTION_MASTERLESS_SECONDS,
        "Accumulated seconds the election had no candidate; 1 - rate() is its availability.",
        MetricType::Counter,
        |m| each_election(rows, |l, e| counter(m, l, e.masterless_seconds)),
    )?;
    family(
        enc,
        names::ELECTION_CANDIDATE_CHANGES,
        "Candidates that joined or left the election since the agent started watching.",
        MetricType::Counter,
        |m| {
            each_election(rows, |l, e| {
                counter(m, &l.with("change", "join"), e.joins)?;
                counter(m, &l.with("change", "leave"), e.leaves)
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_DUPLICATE_IDENTITIES,
        "Candidates whose identity another candidate of the same election also has (a zombie session).",
        MetricType::Gauge,
        |m| each_election(rows, |l, e| gauge(m, l, e.duplicates as f64)),
    )?;
    family(
        enc,
        names::ELECTION_MIN_CANDIDATES,
        "Configured fewest candidates (master plus standbys) of the election; only where min_candidates is set.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| match seen.elections.spec().min_candidates {
                Some(min) => gauge(m, l, f64::from(min)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_DISCOVERED,
        "1 for an election found by discovery rather than configured (absent otherwise): its alerts are at most warnings.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| match seen.tree.source() {
                TreeSource::Discovered => gauge(m, l, 1.0),
                TreeSource::Configured | TreeSource::Recognised => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_EPOCH,
        "Fencing epoch of a node election, from its configured epoch node.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| match seen.epoch {
                Some((Some(epoch), _)) => gauge(m, l, epoch as f64),
                _ => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_EPOCH_REGRESSIONS,
        "Times the fencing epoch was seen to go backwards: a master fenced by an older epoch (only with epoch configured).",
        MetricType::Counter,
        |m| {
            each_election(rows, |l, seen| match seen.epoch {
                Some((_, regressions)) => counter(m, l, regressions),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_RECORD_AGREES,
        "1 if the record node names the current master (its identity or node name), 0 if it names another; absent while masterless or without a record.",
        MetricType::Gauge,
        |m| {
            each_election(rows, |l, seen| match (seen.record, seen.master) {
                (Some(r), Some(master)) => {
                    let agrees = r == master.identity || r == master.node;
                    gauge(m, l, f64::from(u8::from(agrees)))
                }
                _ => Ok(()),
            })
        },
    )
}
