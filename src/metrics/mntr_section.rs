//! The families typed from `mntr`, written by hand so that the whole
//! section can be cached per collection.
//!
//! A collection changes values, not keys: the key set of a server's reply
//! is fixed by its version and role. So the section's text is laid out
//! once per set of typed replies ([`Layout`]: every HELP, TYPE, name and
//! escaped label set, with the places of the values), and a collection
//! only writes its values into it. Naming, ordering and escaping some 1,500
//! series per collection had been a third of the agent's CPU per fresh
//! scrape of a 3-server ensemble (docs/benchmarks.md).

use std::collections::BTreeMap;
use std::fmt;

use super::encode::*;
use std::sync::Arc;

use super::ensemble::Polled;
use super::mntr::{Kind, Mapped, Summary, Typings};
use super::names;

/// `ensemble` and `server` labels of one polled server.
type ServerLabels<'a> = Labels<'a>;

/// One mntr family across all servers: kind, HELP, and series (with the
/// summary-set `key` label where there is one), each with the reply and
/// the index of its value.
struct MntrFamily<'a> {
    kind: Kind,
    source: &'a str,
    series: Vec<(ServerLabels<'a>, Option<&'a str>, usize, usize)>,
}

/// One server's reply: whose it is and the typing of its key set.
struct Typed<'a> {
    cluster: &'a str,
    server: &'a str,
    typing: Arc<Mapped>,
}

impl<'a> Typed<'a> {
    fn labels(&self) -> ServerLabels<'a> {
        Labels::new("ensemble", self.cluster).with("server", self.server)
    }
}

const MNTR_UNITS: &str = "as ZooKeeper reports it: times in milliseconds, sizes in bytes";

/// The section's text for one set of typed replies, values left out.
#[derive(Debug, Default)]
pub(super) struct Layout {
    /// What it was laid out for: each reply's cluster, server and typing,
    /// in section order. Typings are compared by identity: [`Typings`]
    /// hands out one `Arc` per key set for as long as it keeps it.
    made_for: Vec<(String, String, Arc<Mapped>)>,
    text: String,
    slots: Vec<Slot>,
}

/// A value's place: the text before it ends at `end`, and it is value
/// `index` of reply `reply`.
#[derive(Debug, Clone, Copy)]
struct Slot {
    end: usize,
    reply: usize,
    index: usize,
}

impl Layout {
    fn fits(&self, mapped: &[Typed]) -> bool {
        self.made_for.len() == mapped.len()
            && self
                .made_for
                .iter()
                .zip(mapped)
                .all(|((cluster, server, typing), t)| {
                    cluster == t.cluster && server == t.server && Arc::ptr_eq(typing, &t.typing)
                })
    }

    /// Appends the section with these values (one slice per reply, in the
    /// order it was laid out for).
    fn fill(&self, out: &mut String, values: &[&[f64]]) {
        out.reserve(self.text.len() + self.slots.len() * 8);
        let mut at = 0;
        for slot in &self.slots {
            out.push_str(&self.text[at..slot.end]);
            write_sample_value(out, values[slot.reply][slot.index]);
            at = slot.end;
        }
        out.push_str(&self.text[at..]);
    }

    /// Static text.
    fn push_str(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// The place of a value, written as ` {value}` and a line feed.
    fn value(&mut self, reply: usize, index: usize) {
        self.slots.push(Slot {
            end: self.text.len(),
            reply,
            index,
        });
    }
}

/// Types every server's last `mntr` reply (once per collection: the
/// section is cached until the next one) and writes its families, then
/// how many keys each server had dropped as name collisions; laid out
/// anew only when a reply's key set, server or cluster changed.
pub(super) fn encode_mntr_section(
    out: &mut String,
    polled: &[Polled],
    openmetrics: bool,
    typings: &mut Typings,
    layout: &mut Layout,
) -> fmt::Result {
    let mut mapped: Vec<Typed> = Vec::new();
    let mut values: Vec<&[f64]> = Vec::new();
    for p in polled {
        let Some(e) = p.readings.replies.as_ref() else {
            continue;
        };
        for (server, h) in e.servers() {
            if let Some(m) = h.mntr() {
                mapped.push(Typed {
                    cluster: p.name,
                    server,
                    typing: typings.of(m),
                });
                values.push(m.values());
            }
        }
    }
    if !layout.fits(&mapped) {
        *layout = lay_out(&mapped, openmetrics)?;
    }
    layout.fill(out, &values);
    Ok(())
}

/// The section's layout for these replies.
fn lay_out(mapped: &[Typed], openmetrics: bool) -> Result<Layout, fmt::Error> {
    let mut layout = Layout {
        made_for: mapped
            .iter()
            .map(|t| (t.cluster.to_owned(), t.server.to_owned(), t.typing.clone()))
            .collect(),
        ..Layout::default()
    };
    encode_samples(&mut layout, mapped, openmetrics)?;
    encode_summaries(&mut layout, mapped)?;
    encode_dropped(&mut layout, mapped)?;
    Ok(layout)
}

/// Writes the families typed from mntr keys.
fn encode_samples(out: &mut Layout, mapped: &[Typed], openmetrics: bool) -> fmt::Result {
    let mut families: BTreeMap<&str, MntrFamily> = BTreeMap::new();
    for (reply, t) in mapped.iter().enumerate() {
        let labels = t.labels();
        for s in &t.typing.samples {
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
                    .push((labels, s.set_key.as_deref(), reply, s.value));
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
        write_header(&mut out.text, &family_name, &help, kind)?;
        for (l, key, reply, index) in &f.series {
            out.push_str(&sample_name);
            match key {
                Some(k) => write_labels(&mut out.text, l.with("key", k).pairs()),
                None => write_labels(&mut out.text, l.pairs()),
            }
            out.value(*reply, *index);
        }
    }
    Ok(())
}

/// Source keys and the series of one summary family across servers.
type SummaryFamily<'a> = (&'a str, Vec<(ServerLabels<'a>, &'a Summary, usize)>);

/// Writes the summaries folded from mntr; `prometheus-client` has no
/// summary type, and the text of a summary is the same in both formats.
fn encode_summaries(out: &mut Layout, mapped: &[Typed]) -> fmt::Result {
    let mut families: BTreeMap<&str, SummaryFamily> = BTreeMap::new();
    for (reply, t) in mapped.iter().enumerate() {
        let labels = t.labels();
        for s in &t.typing.summaries {
            let f = families
                .entry(s.name.as_str())
                .or_insert_with(|| (s.source.as_str(), Vec::new()));
            f.1.push((labels, s, reply));
        }
    }
    for (name, (source, series)) in families {
        write_header(
            &mut out.text,
            name,
            &format!("mntr {source} ({MNTR_UNITS})."),
            "summary",
        )?;
        for (l, s, reply) in series {
            let labels = match &s.set_key {
                Some(k) => l.with("key", k),
                None => l,
            };
            for (q, i) in &s.quantiles {
                let q = q.to_string();
                let with_q = labels.with("quantile", &q);
                out.push_str(name);
                write_labels(&mut out.text, with_q.pairs());
                out.value(reply, *i);
            }
            out.push_str(name);
            out.push_str("_sum");
            write_labels(&mut out.text, labels.pairs());
            out.value(reply, s.sum);
            out.push_str(name);
            out.push_str("_count");
            write_labels(&mut out.text, labels.pairs());
            out.value(reply, s.count);
        }
    }
    Ok(())
}

/// Keys of each server's last `mntr` reply left out because an earlier key
/// already took their metric name.
fn encode_dropped(out: &mut Layout, mapped: &[Typed]) -> fmt::Result {
    use std::fmt::Write;
    let out = &mut out.text;
    write_header(
        out,
        names::FOURLW_MNTR_DROPPED_KEYS,
        "Keys of the server's last mntr reply not exported because another key already took their metric name.",
        "gauge",
    )?;
    for t in mapped {
        out.push_str(names::FOURLW_MNTR_DROPPED_KEYS);
        write_labels(out, t.labels().pairs());
        writeln!(out, " {}", t.typing.dropped)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fourlw::{Command, interpret};
    use crate::model::ClusterState;
    use crate::model::ensemble::{Exchange, ServerPoll};
    use proptest::prelude::*;
    use std::time::Duration;

    fn fixture(role: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/3.8.0/{role}/mntr.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// `reply` with its numeric values replaced, in order, by `numbers`
    /// (cycled).
    fn with_values(reply: &str, numbers: &[f64]) -> String {
        let mut n = numbers.iter().cycle();
        reply
            .lines()
            .map(|line| match line.split_once('\t') {
                Some((key, value)) if value.trim().parse::<f64>().is_ok() => {
                    format!("{key}\t{}\n", n.next().unwrap())
                }
                _ => format!("{line}\n"),
            })
            .collect()
    }

    fn cluster(servers: &[(&str, String)]) -> ClusterState {
        let c = ClusterState::new("c\"1".into(), vec![], true);
        c.ensemble().collected(
            servers
                .iter()
                .map(|(server, reply)| ServerPoll {
                    server: (*server).to_owned(),
                    exchanges: vec![Exchange {
                        command: Command::Mntr,
                        duration: Duration::from_millis(1),
                        result: interpret(Command::Mntr, reply),
                    }],
                })
                .collect(),
        );
        c
    }

    fn section(c: &ClusterState, typings: &mut Typings, layout: &mut Layout, om: bool) -> String {
        let mut out = String::new();
        let polled = Polled::of(&[c]);
        encode_mntr_section(&mut out, &polled, om, typings, layout).unwrap();
        out
    }

    proptest! {
        /// A collection written into a layout made for an earlier one is
        /// the section laid out for it alone: its own values, and a new
        /// layout whenever a server's key set, or the set of servers,
        /// changed (a follower became leader, a member stopped answering or
        /// was replaced).
        #[test]
        fn a_reused_layout_writes_each_collections_own_section(
            first in prop::collection::vec(-1e12f64..1e12, 1..40),
            second in prop::collection::vec(prop_oneof![
                (-1e6f64..1e6).prop_map(f64::round),
                -1e12f64..1e12,
            ], 1..40),
            roles in prop::sample::select(vec![
                ["leader", "follower"],
                ["follower", "leader"],
                ["follower", "follower"],
                ["leader", "standalone"],
            ]),
            names in prop::sample::select(vec![["a:2181", "b:2181"], ["a:2181", "c:2181"]]),
            servers in 1usize..=2,
            om: bool,
        ) {
            let (leader, follower) = (fixture("leader"), fixture("follower"));
            let earlier = cluster(&[
                ("a:2181", with_values(&leader, &first)),
                ("b:2181", with_values(&follower, &first)),
            ]);
            let now: Vec<(&str, String)> = names
                .into_iter()
                .zip(roles)
                .take(servers)
                .map(|(s, role)| (s, with_values(&fixture(role), &second)))
                .collect();
            let now = cluster(&now);
            let mut typings = Typings::default();
            let mut layout = Layout::default();
            section(&earlier, &mut typings, &mut layout, om);
            let reused = section(&now, &mut typings, &mut layout, om);
            let fresh = section(&now, &mut Typings::default(), &mut Layout::default(), om);
            prop_assert_eq!(reused, fresh);
        }
    }

    /// The values written are the reply's: one known value, read back.
    #[test]
    fn the_layout_writes_the_replys_values() {
        let reply = fixture("leader").replace("zk_znode_count\t5\n", "zk_znode_count\t987654321\n");
        let c = cluster(&[("a:2181", reply)]);
        let mut typings = Typings::default();
        let mut layout = Layout::default();
        let text = section(&c, &mut typings, &mut layout, false);
        assert!(
            text.contains(
                "zookeeper_znode_count{ensemble=\"c\\\"1\",server=\"a:2181\"} 987654321\n"
            ),
            "{text}"
        );
    }
}
