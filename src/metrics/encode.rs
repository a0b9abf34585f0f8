//! Helpers every encoder shares: one family header, typed samples, label
//! escaping for the hand-written sections.

use std::fmt;
use std::time::SystemTime;

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabelSet, LabelSetEncoder, MetricEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::MetricType;

use crate::model::histogram::Histogram;

pub(super) fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes one family: its HELP/TYPE line, then `series` writes the samples.
pub(super) fn family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: impl FnOnce(&mut MetricEncoder) -> fmt::Result,
) -> fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    series(&mut metric)
}

pub(super) fn gauge(
    m: &mut MetricEncoder,
    labels: &impl EncodeLabelSet,
    value: f64,
) -> fmt::Result {
    m.encode_family(labels)?.encode_gauge(&value)
}

pub(super) fn counter<V: EncodeCounterValue>(
    m: &mut MetricEncoder,
    labels: &impl EncodeLabelSet,
    value: V,
) -> fmt::Result {
    m.encode_family(labels)?
        .encode_counter::<NoLabelSet, V, f64>(&value, None)
}

pub(super) fn histogram(
    m: &mut MetricEncoder,
    labels: &impl EncodeLabelSet,
    h: &Histogram,
) -> fmt::Result {
    m.encode_family(labels)?
        .encode_histogram::<NoLabelSet>(h.sum(), h.count(), &h.buckets(), None)
}

/// Escapes a label value or HELP text for both text formats.
pub(super) fn escape(s: &str, out: &mut String) {
    escape_some(s, out, true);
}

/// Escapes HELP text as the Prometheus text format wants it: backslashes
/// and line feeds, quotes left as they are.
pub(super) fn escape_help(s: &str, out: &mut String) {
    escape_some(s, out, false);
}

fn escape_some(s: &str, out: &mut String, quotes: bool) {
    // Almost every value needs nothing escaped: copy runs between the three
    // bytes that do (all ASCII, so byte positions are char boundaries).
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'\\' => "\\\\",
            b'"' if quotes => "\\\"",
            b'\n' => "\\n",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        out.push_str(escaped);
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// Appends ` {v}` and a line feed, exactly as `Display` writes `v`, with
/// whole numbers (nearly every `mntr` value) through `itoa`: the shortest
/// float formatting was a visible share of a fresh collection's CPU.
pub(super) fn write_sample_value(out: &mut String, v: f64) {
    out.push(' ');
    // Below 2^53 a whole f64 is an exact i64; -0.0 prints as "-0".
    if v.fract() == 0.0 && v.abs() < 9.0e15 && !(v == 0.0 && v.is_sign_negative()) {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "whole and below 2^53 in magnitude: exact in an i64"
        )]
        let whole = v as i64;
        out.push_str(itoa::Buffer::new().format(whole));
    } else {
        use std::fmt::Write;
        let _ = write!(out, "{v}");
    }
    out.push('\n');
}

pub(super) fn write_labels(out: &mut String, labels: &[(&str, &str)]) {
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        escape(v, out);
        out.push('"');
    }
    out.push('}');
}

/// HELP and TYPE lines of a family written by hand (the `mntr` section).
pub(super) fn write_header(out: &mut String, name: &str, help: &str, kind: &str) -> fmt::Result {
    use std::fmt::Write;
    out.push_str("# HELP ");
    out.push_str(name);
    out.push(' ');
    escape(help, out);
    out.push('\n');
    writeln!(out, "# TYPE {name} {kind}")
}

/// The most labels one series carries (cluster, tree, kind, style, source).
const MAX_LABELS: usize = 5;

/// A series' labels: the pairs that identify its model (cluster and
/// election, group, server or tree) plus the few a family adds with
/// [`Labels::with`]. Kept inline: a scrape builds one per series.
#[derive(Debug, Clone, Copy)]
pub(super) struct Labels<'a> {
    pairs: [(&'a str, &'a str); MAX_LABELS],
    len: usize,
}

impl<'a> Labels<'a> {
    pub fn new(key: &'a str, value: &'a str) -> Self {
        Self {
            pairs: [(key, value); MAX_LABELS],
            len: 1,
        }
    }

    /// These labels plus one more pair.
    pub fn with(mut self, key: &'a str, value: &'a str) -> Self {
        assert!(self.len < MAX_LABELS, "raise MAX_LABELS for `{key}`");
        self.pairs[self.len] = (key, value);
        self.len += 1;
        self
    }

    pub fn pairs(&self) -> &[(&'a str, &'a str)] {
        &self.pairs[..self.len]
    }
}

impl EncodeLabelSet for Labels<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        self.pairs().encode(encoder)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The fast path writes what `Display` writes, for any f64.
        #[test]
        fn sample_values_are_what_display_writes(
            v in prop_oneof![
                any::<f64>(),
                any::<i64>().prop_map(|i| i as f64),
                (-1e6f64..1e6).prop_map(f64::round),
                Just(-0.0),
                Just(9.0e15),
                Just(-9.0e15 + 1.0),
            ],
        ) {
            let mut out = String::new();
            super::write_sample_value(&mut out, v);
            prop_assert_eq!(out, format!(" {v}\n"));
        }
    }
}
