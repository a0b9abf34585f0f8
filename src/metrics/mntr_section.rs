//! The families typed from `mntr`, written by hand so that the whole
//! section can be cached per collection.

use std::collections::BTreeMap;
use std::fmt;

use super::encode::*;
use super::mntr::{Kind, Mapped, Summary, map_mntr};
use super::names;
use crate::model::ClusterState;

/// `cluster` and `server` labels of one polled server.
type ServerLabels<'a> = Labels<'a>;

/// One mntr family across all servers: kind, HELP, and series (with the
/// summary-set `key` label where there is one).
struct MntrFamily<'a> {
    kind: Kind,
    help: String,
    series: Vec<(ServerLabels<'a>, Option<String>, f64)>,
}

const MNTR_UNITS: &str = "as ZooKeeper reports it: times in milliseconds, sizes in bytes";

/// Types every server's last `mntr` reply (once per collection: the
/// section is cached until the next one) and writes its families, then
/// how many keys each server had dropped as name collisions.
pub(super) fn encode_mntr_section(
    out: &mut String,
    clusters: &[&ClusterState],
    openmetrics: bool,
) -> fmt::Result {
    let mapped: Vec<(ServerLabels, Mapped)> = clusters
        .iter()
        .filter_map(|c| c.ensemble.as_ref().map(|e| (c, e)))
        .flat_map(|(c, e)| {
            e.servers().filter_map(move |(server, h)| {
                let labels = Labels::new("cluster", c.name.as_str()).with("server", server);
                h.mntr().map(|m| (labels, map_mntr(m)))
            })
        })
        .collect();
    encode_samples(out, &mapped, openmetrics)?;
    encode_summaries(out, &mapped)?;
    encode_dropped(out, &mapped)
}

/// Writes the families typed from mntr keys.
fn encode_samples(
    out: &mut String,
    mapped: &[(ServerLabels, Mapped)],
    openmetrics: bool,
) -> fmt::Result {
    use std::fmt::Write;
    let mut families: BTreeMap<&str, MntrFamily> = BTreeMap::new();
    for (labels, m) in mapped {
        for s in &m.samples {
            let f = families
                .entry(s.name.as_str())
                .or_insert_with(|| MntrFamily {
                    kind: s.kind,
                    help: format!("mntr {} ({MNTR_UNITS}).", s.source),
                    series: Vec::new(),
                });
            // A name typed differently by another server version is dropped
            // rather than mixing types in one family.
            if f.kind == s.kind {
                f.series.push((*labels, s.set_key.clone(), s.value));
            }
        }
    }
    for (name, f) in families {
        // Counters: OpenMetrics names the family without `_total`, the
        // Prometheus text format with it; samples carry `_total` in both.
        let (family_name, sample_name, kind) = match f.kind {
            Kind::Gauge => (name.to_owned(), name.to_owned(), "gauge"),
            Kind::Counter if openmetrics => (name.to_owned(), format!("{name}_total"), "counter"),
            Kind::Counter => (format!("{name}_total"), format!("{name}_total"), "counter"),
        };
        write_header(out, &family_name, &f.help, kind)?;
        for (l, key, value) in &f.series {
            out.push_str(&sample_name);
            match key {
                Some(k) => write_labels(out, l.with("key", k).pairs()),
                None => write_labels(out, l.pairs()),
            }
            writeln!(out, " {value}")?;
        }
    }
    Ok(())
}

/// HELP text and the series of one summary family across servers.
type SummaryFamily<'a> = (String, Vec<(ServerLabels<'a>, &'a Summary)>);

/// Writes the summaries folded from mntr; `prometheus-client` has no
/// summary type, and the text of a summary is the same in both formats.
fn encode_summaries(out: &mut String, mapped: &[(ServerLabels, Mapped)]) -> fmt::Result {
    use std::fmt::Write;
    let mut families: BTreeMap<&str, SummaryFamily> = BTreeMap::new();
    for (labels, m) in mapped {
        for s in &m.summaries {
            let f = families
                .entry(s.name.as_str())
                .or_insert_with(|| (format!("mntr {} ({MNTR_UNITS}).", s.source), Vec::new()));
            f.1.push((*labels, s));
        }
    }
    for (name, (help, series)) in families {
        write_header(out, name, &help, "summary")?;
        for (l, s) in series {
            let labels = match &s.set_key {
                Some(k) => l.with("key", k),
                None => l,
            };
            for (q, v) in &s.quantiles {
                let q = q.to_string();
                let with_q = labels.with("quantile", &q);
                out.push_str(name);
                write_labels(out, with_q.pairs());
                writeln!(out, " {v}")?;
            }
            out.push_str(name);
            out.push_str("_sum");
            write_labels(out, labels.pairs());
            writeln!(out, " {}", s.sum)?;
            out.push_str(name);
            out.push_str("_count");
            write_labels(out, labels.pairs());
            writeln!(out, " {}", s.count)?;
        }
    }
    Ok(())
}

/// Keys of each server's last `mntr` reply left out because an earlier key
/// already took their metric name.
fn encode_dropped(out: &mut String, mapped: &[(ServerLabels, Mapped)]) -> fmt::Result {
    use std::fmt::Write;
    write_header(
        out,
        names::FOURLW_MNTR_DROPPED_KEYS,
        "Keys of the server's last mntr reply not exported because another key already took their metric name.",
        "gauge",
    )?;
    for (labels, m) in mapped {
        out.push_str(names::FOURLW_MNTR_DROPPED_KEYS);
        write_labels(out, labels.pairs());
        writeln!(out, " {}", m.dropped)?;
    }
    Ok(())
}
