//! Families of the election model: master, candidates, switches,
//! masterless time.

use std::fmt;

use super::body::Body;
use super::encode::unix_seconds;
use super::text::{self, Election, Kind, Sink, Text, Value};
use super::{Scrape, names};
use crate::model::election::MasterView;
use crate::model::election_tree::{NodeSpec, Style};
#[cfg(doc)]
use crate::model::survey::Survey;
use crate::model::tree::TreeSource;

/// One exported election as every family reads it, gathered in one pass
/// over the model: the families then walk this array instead of following
/// pointers into a model far larger than the CPU's caches (at 100,000
/// elections that walk, twelve times over, was half the render). Plain
/// values only, so that a test can make any row.
#[derive(Debug, Clone)]
pub(super) struct Seen<'a> {
    pub cluster: &'a str,
    pub path: &'a str,
    /// `ensemble="…",election="…"` escaped, in the scrape's label buffer.
    pub escaped: std::ops::Range<usize>,
    pub sequential: bool,
    pub min_candidates: Option<u32>,
    pub discovered: bool,
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
/// [`Survey`]), with its labels escaped into `labels`.
fn rows<'a>(s: &Scrape<'a>, labels: &mut String) -> Vec<Seen<'a>> {
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
            let start = labels.len();
            text::election_labels(c.name(), path, labels);
            rows.push(Seen {
                cluster: c.name(),
                path,
                escaped: start..labels.len(),
                sequential: matches!(spec.style, Style::Sequential),
                min_candidates: spec.min_candidates,
                discovered: matches!(tree.source(), TreeSource::Discovered),
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

/// Writes the per-election families of a scrape as text into `out`, in
/// the format the scraper asked for.
pub(super) fn write_elections(out: &mut Body, s: &Scrape, openmetrics: bool) -> fmt::Result {
    let mut labels = String::new();
    let rows = rows(s, &mut labels);
    write_families(&mut Text::new(out, openmetrics), &rows, &labels)
}

/// Calls `f` with the labels and row of every exported election.
fn each<S: Sink>(
    sink: &mut S,
    rows: &[Seen],
    labels: &str,
    mut f: impl FnMut(&mut S, &Election, &Seen) -> fmt::Result,
) -> fmt::Result {
    for row in rows {
        let e = Election {
            cluster: row.cluster,
            path: row.path,
            escaped: &labels[row.escaped.clone()],
        };
        f(sink, &e, row)?;
    }
    Ok(())
}

/// Every per-election family of `rows` (labels escaped in `labels`) into
/// `sink`.
pub(super) fn write_families<S: Sink>(sink: &mut S, rows: &[Seen], labels: &str) -> fmt::Result {
    let g = |n: f64| Value::F64(n);
    sink.family(
        names::ELECTION_CANDIDATES,
        "Candidates (children with a sequence suffix) of the election; absent for node-style elections, whose standbys keep no node.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.candidates {
        Some(n) => sink.sample(e, &[], g(n as f64)),
        None => Ok(()),
    })?;
    sink.family(
        names::ELECTION_HAS_MASTER,
        "1 if the election has a master (at least one candidate), else 0.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        sink.sample(e, &[], g(f64::from(u8::from(r.master.is_some()))))
    })?;
    sink.family(
        names::ELECTION_MASTER,
        "The current master of the election: its node and identity; always 1, absent when masterless.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.master {
        Some(m) => sink.sample(e, &[("znode", m.node), ("identity", m.identity)], g(1.0)),
        None => Ok(()),
    })?;
    sink.family(
        names::ELECTION_MASTER_SEQUENCE,
        "Sequence number of the master's node (sequential elections only).",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        match (r.sequential, r.master) {
            (true, Some(m)) => sink.sample(e, &[], g(f64::from(m.sequence))),
            _ => Ok(()),
        }
    })?;
    sink.family(
        names::ELECTION_MASTER_SINCE_TIMESTAMP_SECONDS,
        "Unix time the current master took over (its node's ctime when first seen at agent start).",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.master {
        Some(m) => sink.sample(e, &[], g(unix_seconds(m.since))),
        None => Ok(()),
    })?;
    sink.family(
        names::ELECTION_MASTER_CHANGES,
        "Master switches (a different node became master) since the agent started watching.",
        Kind::Counter,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        sink.sample(e, &[], Value::U64(r.changes))
    })?;
    sink.family(
        names::ELECTION_MASTERLESS_SECONDS,
        "Accumulated seconds the election had no candidate; 1 - rate() is its availability.",
        Kind::Counter,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        sink.sample(e, &[], g(r.masterless_seconds))
    })?;
    sink.family(
        names::ELECTION_CANDIDATE_CHANGES,
        "Candidates that joined or left the election since the agent started watching.",
        Kind::Counter,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        sink.sample(e, &[("change", "join")], Value::U64(r.joins))?;
        sink.sample(e, &[("change", "leave")], Value::U64(r.leaves))
    })?;
    sink.family(
        names::ELECTION_DUPLICATE_IDENTITIES,
        "Candidates whose identity another candidate of the same election also has (a zombie session).",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        sink.sample(e, &[], g(r.duplicates as f64))
    })?;
    sink.family(
        names::ELECTION_MIN_CANDIDATES,
        "Configured fewest candidates (master plus standbys) of the election; only where min_candidates is set.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.min_candidates {
        Some(min) => sink.sample(e, &[], g(f64::from(min))),
        None => Ok(()),
    })?;
    sink.family(
        names::ELECTION_DISCOVERED,
        "1 for an election found by discovery rather than configured (absent otherwise): its alerts are at most warnings.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.discovered {
        true => sink.sample(e, &[], g(1.0)),
        false => Ok(()),
    })?;
    sink.family(
        names::ELECTION_EPOCH,
        "Fencing epoch of a node election, from its configured epoch node.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.epoch {
        Some((Some(epoch), _)) => sink.sample(e, &[], g(epoch as f64)),
        _ => Ok(()),
    })?;
    sink.family(
        names::ELECTION_EPOCH_REGRESSIONS,
        "Times the fencing epoch was seen to go backwards: a master fenced by an older epoch (only with epoch configured).",
        Kind::Counter,
    )?;
    each(sink, rows, labels, |sink, e, r| match r.epoch {
        Some((_, regressions)) => sink.sample(e, &[], Value::U64(regressions)),
        None => Ok(()),
    })?;
    sink.family(
        names::ELECTION_RECORD_AGREES,
        "1 if the record node names the current master (its identity or node name), 0 if it names another; absent while masterless or without a record.",
        Kind::Gauge,
    )?;
    each(sink, rows, labels, |sink, e, r| {
        match (r.record, r.master) {
            (Some(rec), Some(m)) => {
                let agrees = rec == m.identity || rec == m.node;
                sink.sample(e, &[], g(f64::from(u8::from(agrees))))
            }
            _ => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::body::Encoded;
    use crate::metrics::text::reference::Library;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::DescriptorEncoder;
    use prometheus_client::registry::Registry;
    use proptest::prelude::*;
    use std::time::{Duration, SystemTime};

    /// A row's values, owned (the library's collector must be `'static`).
    #[derive(Debug, Clone)]
    struct Row {
        cluster: String,
        path: String,
        sequential: bool,
        min_candidates: Option<u32>,
        discovered: bool,
        master: Option<(String, i32, String, u64)>,
        candidates: Option<usize>,
        counts: (u64, u64, u64, usize),
        masterless_seconds: f64,
        epoch: Option<(Option<i64>, u64)>,
        record: Option<String>,
    }

    fn seen<'a>(rows: &'a [Row], labels: &mut String) -> Vec<Seen<'a>> {
        rows.iter()
            .map(|r| {
                let start = labels.len();
                text::election_labels(&r.cluster, &r.path, labels);
                Seen {
                    cluster: &r.cluster,
                    path: &r.path,
                    escaped: start..labels.len(),
                    sequential: r.sequential,
                    min_candidates: r.min_candidates,
                    discovered: r.discovered,
                    master: r
                        .master
                        .as_ref()
                        .map(|(node, sequence, identity, ms)| MasterView {
                            node,
                            sequence: *sequence,
                            identity,
                            owner: 1,
                            since: SystemTime::UNIX_EPOCH + Duration::from_millis(*ms),
                        }),
                    candidates: r.candidates,
                    changes: r.counts.0,
                    joins: r.counts.1,
                    leaves: r.counts.2,
                    duplicates: r.counts.3,
                    masterless_seconds: r.masterless_seconds,
                    epoch: r.epoch,
                    record: r.record.as_deref(),
                }
            })
            .collect()
    }

    #[derive(Debug)]
    struct Reference(Vec<Row>);

    impl Collector for Reference {
        fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
            let mut labels = String::new();
            let rows = seen(&self.0, &mut labels);
            let mut library = Library::new(&mut encoder);
            write_families(&mut library, &rows, &labels)?;
            library.finish()
        }
    }

    /// Label values with what needs escaping, and anything else.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_/.-]{0,12}", "[\"\\\\\n a/é]{0,8}", any::<String>(),]
    }

    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            0.0f64..1e7,
            proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL,
        ]
    }

    fn row() -> impl Strategy<Value = Row> {
        (
            (
                value(),
                value(),
                any::<bool>(),
                any::<Option<u32>>(),
                any::<bool>(),
            ),
            proptest::option::of((value(), any::<i32>(), value(), 0u64..4_000_000_000_000)),
            (
                any::<Option<usize>>(),
                any::<(u64, u64, u64, usize)>(),
                float(),
            ),
            (
                any::<Option<(Option<i64>, u64)>>(),
                proptest::option::of(value()),
            ),
        )
            .prop_map(
                |(
                    (cluster, path, sequential, min_candidates, discovered),
                    master,
                    (candidates, counts, masterless_seconds),
                    (epoch, record),
                )| Row {
                    cluster,
                    path,
                    sequential,
                    min_candidates,
                    discovered,
                    master,
                    candidates,
                    counts,
                    masterless_seconds,
                    epoch,
                    record,
                },
            )
    }

    proptest! {
        /// The hand-written families are the library's, byte for byte, in
        /// both formats, for any label values and numbers.
        #[test]
        fn hand_written_families_are_the_librarys_bytes(
            rows in proptest::collection::vec(row(), 0..6),
        ) {
            let mut registry = Registry::default();
            registry.register_collector(Box::new(Reference(rows.clone())));
            let mut labels = String::new();
            let seen = seen(&rows, &mut labels);
            for openmetrics in [false, true] {
                let mut library = String::new();
                if openmetrics {
                    prometheus_client::encoding::text::encode_registry(&mut library, &registry).unwrap();
                } else {
                    prometheus_client::encoding::prometheus_text::encode(&mut library, &registry).unwrap();
                }
                let mut ours = Body::plain(0);
                write_families(&mut Text::new(&mut ours, openmetrics), &seen, &labels).unwrap();
                let ours = match ours.finish().unwrap() {
                    Encoded::Plain(text) => text,
                    Encoded::Gzip { .. } => unreachable!("a plain body"),
                };
                prop_assert_eq!(&ours, &library, "openmetrics: {}", openmetrics);
                // Compressed from the first series on, it is the same text.
                let mut zipped = Body::zipping_past(1, 0);
                write_families(&mut Text::new(&mut zipped, openmetrics), &seen, &labels).unwrap();
                let text = match zipped.finish().unwrap() {
                    Encoded::Plain(text) => text,
                    Encoded::Gzip { zipped, plain_len } => {
                        let text = crate::metrics::body::gunzip(&zipped);
                        prop_assert_eq!(plain_len, text.len());
                        text
                    }
                };
                prop_assert_eq!(&text, &library, "compressed, openmetrics: {}", openmetrics);
            }
        }
    }
}
