//! The per-election families written by hand, in both text formats.
//!
//! They are nearly all of a large body (about twelve series per election),
//! and through `prometheus-client` every series re-escapes the same two
//! labels (`ensemble`, `election`) through several dynamic writer calls:
//! about a quarter of a large render. Here an election's two labels are
//! escaped once and copied into each of its series. The output is the
//! library's, byte for byte, in either format (a property test holds it
//! to the library for any label values; `promtool` reads it in
//! tests/exposition.rs); [`Sink`] lets the same family code drive the
//! library in that test.

use std::fmt;

use super::body::Body;
use super::encode::escape;

/// A family's type, as both formats name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Gauge,
    Counter,
}

/// A sample's value: counts are written as integers, the rest as floats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value {
    F64(f64),
    U64(u64),
}

/// The labels one election gives each of its series.
#[derive(Debug, Clone, Copy)]
pub(super) struct Election<'a> {
    // The label values themselves, for the library in the reference test.
    #[cfg_attr(not(test), allow(dead_code))]
    pub cluster: &'a str,
    #[cfg_attr(not(test), allow(dead_code))]
    pub path: &'a str,
    /// `ensemble="…",election="…"`, escaped: written once per election.
    pub escaped: &'a str,
}

/// Where the families go: text written here, or (in tests) the library.
pub(super) trait Sink {
    /// Starts a family: its HELP and TYPE lines.
    fn family(&mut self, name: &'static str, help: &'static str, kind: Kind) -> fmt::Result;
    /// One series of the family begun last: the election's labels, then
    /// `extra` pairs, and its value.
    fn sample(&mut self, e: &Election, extra: &[(&str, &str)], value: Value) -> fmt::Result;
}

/// `ensemble="…",election="…"` of an election, appended to `out`.
pub(super) fn election_labels(cluster: &str, path: &str, out: &mut String) {
    out.push_str("ensemble=\"");
    escape(cluster, out);
    out.push_str("\",election=\"");
    escape(path, out);
    out.push('"');
}

/// HELP text: the Prometheus text format escapes `\` and line feeds; the
/// library's OpenMetrics writer leaves HELP as given (ours never need it).
fn escape_help(help: &str, openmetrics: bool, out: &mut String) {
    match openmetrics {
        true => out.push_str(help),
        false => super::encode::escape_help(help, out),
    }
}

/// A value as both formats write it: integers in decimal, finite floats
/// in the shortest form that reads back exactly (`1.0`, `0.25`, `1e20`),
/// as the library does. No family here has a non-finite value; if one
/// did, it would be written as both specs spell it (`NaN`, `+Inf`), where
/// the library's OpenMetrics writer would write `inf`.
fn write_value(value: Value, out: &mut String) {
    match value {
        Value::U64(v) => out.push_str(itoa::Buffer::new().format(v)),
        Value::F64(v) if v.is_finite() => out.push_str(dtoa::Buffer::new().format_finite(v)),
        Value::F64(v) if v.is_nan() => out.push_str("NaN"),
        Value::F64(v) if v > 0.0 => out.push_str("+Inf"),
        Value::F64(_) => out.push_str("-Inf"),
    }
}

/// The families written as text into `out`.
pub(super) struct Text<'o> {
    out: &'o mut Body,
    openmetrics: bool,
    name: &'static str,
    counter: bool,
}

impl<'o> Text<'o> {
    pub fn new(out: &'o mut Body, openmetrics: bool) -> Self {
        Self {
            out,
            openmetrics,
            name: "",
            counter: false,
        }
    }
}

impl Sink for Text<'_> {
    fn family(&mut self, name: &'static str, help: &'static str, kind: Kind) -> fmt::Result {
        self.name = name;
        self.counter = kind == Kind::Counter;
        // OpenMetrics names a counter family without `_total`, the
        // Prometheus text format with it; samples carry it in both.
        let suffix = if self.counter && !self.openmetrics {
            "_total"
        } else {
            ""
        };
        let out = self.out.text();
        out.push_str("# HELP ");
        out.push_str(name);
        out.push_str(suffix);
        out.push(' ');
        escape_help(help, self.openmetrics, out);
        out.push_str("\n# TYPE ");
        out.push_str(name);
        out.push_str(suffix);
        out.push_str(match kind {
            Kind::Gauge => " gauge\n",
            Kind::Counter => " counter\n",
        });
        Ok(())
    }

    fn sample(&mut self, e: &Election, extra: &[(&str, &str)], value: Value) -> fmt::Result {
        let out = self.out.text();
        out.push_str(self.name);
        if self.counter {
            out.push_str("_total");
        }
        out.push('{');
        out.push_str(e.escaped);
        for (k, v) in extra {
            out.push(',');
            out.push_str(k);
            out.push_str("=\"");
            escape(v, out);
            out.push('"');
        }
        out.push_str("} ");
        write_value(value, out);
        out.push('\n');
        // A large body asked for gzip is compressed as it is written.
        self.out.written()
    }
}

/// The same families through `prometheus-client`: the reference the
/// hand-written text is held to.
#[cfg(test)]
pub(super) mod reference {
    use super::*;
    use prometheus_client::encoding::DescriptorEncoder;
    use prometheus_client::metrics::MetricType;

    type Series = (Vec<(String, String)>, Value);

    /// Collects each family, then writes it through the library.
    pub struct Library<'e, 'a> {
        encoder: &'e mut DescriptorEncoder<'a>,
        pending: Option<(&'static str, &'static str, Kind, Vec<Series>)>,
    }

    impl<'e, 'a> Library<'e, 'a> {
        pub fn new(encoder: &'e mut DescriptorEncoder<'a>) -> Self {
            Self {
                encoder,
                pending: None,
            }
        }

        pub fn finish(&mut self) -> fmt::Result {
            let Some((name, help, kind, series)) = self.pending.take() else {
                return Ok(());
            };
            let metric_type = match kind {
                Kind::Gauge => MetricType::Gauge,
                Kind::Counter => MetricType::Counter,
            };
            let mut m = self
                .encoder
                .encode_descriptor(name, help, None, metric_type)?;
            for (labels, value) in series {
                let pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (&**k, &**v)).collect();
                let pairs = pairs.as_slice();
                match (kind, value) {
                    (Kind::Gauge, Value::F64(v)) => m.encode_family(&pairs)?.encode_gauge(&v)?,
                    (Kind::Gauge, Value::U64(v)) => m.encode_family(&pairs)?.encode_gauge(&v)?,
                    (Kind::Counter, Value::F64(v)) => {
                        super::super::encode::counter(&mut m, &pairs, v)?
                    }
                    (Kind::Counter, Value::U64(v)) => {
                        super::super::encode::counter(&mut m, &pairs, v)?
                    }
                }
            }
            Ok(())
        }
    }

    impl Sink for Library<'_, '_> {
        fn family(&mut self, name: &'static str, help: &'static str, kind: Kind) -> fmt::Result {
            self.finish()?;
            self.pending = Some((name, help, kind, Vec::new()));
            Ok(())
        }

        fn sample(&mut self, e: &Election, extra: &[(&str, &str)], value: Value) -> fmt::Result {
            let mut labels = vec![
                ("ensemble".to_owned(), e.cluster.to_owned()),
                ("election".to_owned(), e.path.to_owned()),
            ];
            labels.extend(
                extra
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
            if let Some((_, _, _, series)) = &mut self.pending {
                series.push((labels, value));
            }
            Ok(())
        }
    }
}
