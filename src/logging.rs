//! Log output: text for people (the default), or one `logfmt` or JSON
//! object per line for log shippers (`--log.format`, as Prometheus's own
//! programs take it). Timeline events are logged under a target per class
//! (`zk_election_exporter::events::elections`, …) with their fields.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the global subscriber writing to stderr.
pub fn init(filter: tracing_subscriber::EnvFilter, format: &str) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        "json" => builder.json().flatten_event(true).init(),
        "logfmt" => builder.with_ansi(false).event_format(Logfmt).init(),
        _ => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
}

/// `ts=… level=info target=… msg="…" key=value …`
struct Logfmt;

/// Quotes a logfmt value when it needs it.
fn value(out: &mut String, v: &str) {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '=')
    {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Fields(String);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, v: &str) {
        self.0.push(' ');
        self.0.push_str(if field.name() == "message" {
            "msg"
        } else {
            field.name()
        });
        self.0.push('=');
        value(&mut self.0, v);
    }
    fn record_debug(&mut self, field: &Field, v: &dyn fmt::Debug) {
        self.record_str(field, &format!("{v:?}"));
    }
}

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        writeln!(
            w,
            "ts={} level={} target={}{}",
            humantime::format_rfc3339_millis(std::time::SystemTime::now()),
            meta.level().as_str().to_ascii_lowercase(),
            meta.target(),
            fields.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_when_they_must_be() {
        let q = |v: &str| {
            let mut s = String::new();
            value(&mut s, v);
            s
        };
        assert_eq!(q("bot_1"), "bot_1");
        assert_eq!(q("two words"), "\"two words\"");
        assert_eq!(q("a\"b\nc"), "\"a\\\"b\\nc\"");
        assert_eq!(q(""), "\"\"");
    }
}
