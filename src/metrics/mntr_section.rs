//! The families typed from `mntr`, written by hand so that the whole
//! section can be cached per collection.

use std::collections::BTreeMap;
use std::fmt;

use super::encode::*;
use std::sync::Arc;

use super::mntr::{Kind, Mapped, Summary, Typings};
use super::names;
use crate::model::ClusterState;

/// `cluster` and `server` labels of one polled server.
type ServerLabels<'a> = Labels<'a>;

/// One mntr family across all servers: kind, HELP, and series (with the
/// summary-set `key` label where there is one).
struct MntrFamily<'a> {
    kind: Kind,
    source: &'a str,
    series: Vec<(ServerLabels<'a>, Option<&'a str>, f64)>,
}

/// One server's reply: its labels, the typing of its key set, its values.
type Typed<'a> = (ServerLabels<'a>, Arc<Mapped>, &'a [f64]);

const MNTR_UNITS: &str = "as ZooKeeper reports it: times in milliseconds, sizes in bytes";

/// Types every server's last `mntr` reply (once per collection: the
/// section is cached until the next one) and writes its families, then
/// how many keys each server had dropped as name collisions.
pub(super) fn encode_mntr_section(
    out: &mut String,
    clusters: &[&ClusterState],
    openmetrics: bool,
    typings: &mut Typings,
) -> fmt::Result {
    let mut mapped: Vec<Typed> = Vec::new();
    for c in clusters {
        let Some(e) = c.ensemble.as_ref() else {
            continue;
        };
        for (server, h) in e.servers() {
            if let Some(m) = h.mntr() {
                let labels = Labels::new("cluster", c.name.as_str()).with("server", server);
                mapped.push((labels, typings.of(m), m.values()));
            }
        }
    }
    encode_samples(out, &mapped, openmetrics)?;
    encode_summaries(out, &mapped)?;
    encode_dropped(out, &mapped)
}

/// Writes the families typed from mntr keys.
fn encode_samples(out: &mut String, mapped: &[Typed], openmetrics: bool) -> fmt::Result {
    let mut families: BTreeMap<&str, MntrFamily> = BTreeMap::new();
    for (labels, m, values) in mapped {
        for s in &m.samples {
            let f = families
                .entry(s.name.as_str())
                .or_insert_with(|| MntrFamily {
                    kind: s.kind,
                    source: &s.source,
                    series: Vec::new(),
                });
            // A name typed differently by another server version is dropped
            // rather than mixing types in one family.
            if f.kind == s.kind {
                f.series
                    .push((*labels, s.set_key.as_deref(), values[s.value]));
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
        let help = format!("mntr {} ({MNTR_UNITS}).", f.source);
        write_header(out, &family_name, &help, kind)?;
        for (l, key, value) in &f.series {
            out.push_str(&sample_name);
            match key {
                Some(k) => write_labels(out, l.with("key", k).pairs()),
                None => write_labels(out, l.pairs()),
            }
            write_sample_value(out, *value);
        }
    }
    Ok(())
}

/// Source keys and the series of one summary family across servers.
type SummaryFamily<'a> = (&'a str, Vec<(ServerLabels<'a>, &'a Summary, &'a [f64])>);

/// Writes the summaries folded from mntr; `prometheus-client` has no
/// summary type, and the text of a summary is the same in both formats.
fn encode_summaries(out: &mut String, mapped: &[Typed]) -> fmt::Result {
    let mut families: BTreeMap<&str, SummaryFamily> = BTreeMap::new();
    for (labels, m, values) in mapped {
        for s in &m.summaries {
            let f = families
                .entry(s.name.as_str())
                .or_insert_with(|| (s.source.as_str(), Vec::new()));
            f.1.push((*labels, s, values));
        }
    }
    for (name, (source, series)) in families {
        write_header(
            out,
            name,
            &format!("mntr {source} ({MNTR_UNITS})."),
            "summary",
        )?;
        for (l, s, values) in series {
            let labels = match &s.set_key {
                Some(k) => l.with("key", k),
                None => l,
            };
            for (q, i) in &s.quantiles {
                let v = values[*i];
                let q = q.to_string();
                let with_q = labels.with("quantile", &q);
                out.push_str(name);
                write_labels(out, with_q.pairs());
                write_sample_value(out, v);
            }
            out.push_str(name);
            out.push_str("_sum");
            write_labels(out, labels.pairs());
            write_sample_value(out, values[s.sum]);
            out.push_str(name);
            out.push_str("_count");
            write_labels(out, labels.pairs());
            write_sample_value(out, values[s.count]);
        }
    }
    Ok(())
}

/// Keys of each server's last `mntr` reply left out because an earlier key
/// already took their metric name.
fn encode_dropped(out: &mut String, mapped: &[Typed]) -> fmt::Result {
    use std::fmt::Write;
    write_header(
        out,
        names::FOURLW_MNTR_DROPPED_KEYS,
        "Keys of the server's last mntr reply not exported because another key already took their metric name.",
        "gauge",
    )?;
    for (labels, m, _) in mapped {
        out.push_str(names::FOURLW_MNTR_DROPPED_KEYS);
        write_labels(out, labels.pairs());
        writeln!(out, " {}", m.dropped)?;
    }
    Ok(())
}
