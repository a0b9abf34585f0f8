//! Typing of `mntr` keys: which are counters, which fold into summaries,
//! and what each is called. Pure; the collector renders the result.
//!
//! - `zk_X` becomes `zookeeper_X`: a counter (exported with `_total`) when
//!   ZooKeeper counts events with it, otherwise a gauge. Unknown keys from
//!   newer versions are gauges.
//! - `zk_{avg,min,max,cnt,sum,p50,p95,p99,p999}_X` fold into one family
//!   `X`: a summary `zookeeper_X` (quantiles, `_sum`, `_count`) when both
//!   `cnt` and `sum` are there, plus `zookeeper_X_min` / `_max` gauges, and
//!   `zookeeper_X_avg` only where no summary carries it (3.4/3.5 latency).
//!   A prefix seen alone (`zk_max_file_descriptor_count`) stays a plain key.
//! - ZooKeeper's summary sets (`zk_avg_1_learner_handler_qp_size`,
//!   `zk_avg_zookeeper_write_per_namespace`) get their key as a `key` label.
//! - A name in one of the exporter's own name spaces ([`names::owned`],
//!   matched by whole words) is prefixed `zookeeper_mntr_`; any remaining
//!   duplicate is dropped and counted.
//! - A name 0.1 prefixed by letters alone (`zookeeper_mntr_uptime`,
//!   `zookeeper_mntr_updatelatency`) is also exported under that old name,
//!   a deprecated alias kept for one release.

use std::collections::{BTreeMap, BTreeSet};

use super::names;
use crate::fourlw::parse::Mntr;

/// Keys ZooKeeper increments (`Counter` in ServerMetrics, and ServerStats'
/// packet and failure counts).
const COUNTERS: &[&str] = &[
    "packets_received",
    "packets_sent",
    "auth_failed_count",
    "fsync_threshold_exceed_count",
    "looking_count",
    "diff_count",
    "snap_count",
    "commit_count",
    "connection_request_count",
    "connection_rejected",
    "bytes_received_count",
    "unrecoverable_error_count",
    "add_dead_watcher_stall_time",
    "dead_watchers_queued",
    "dead_watchers_cleared",
    "response_packet_cache_hits",
    "response_packet_cache_misses",
    "response_packet_get_children_cache_hits",
    "response_packet_get_children_cache_misses",
    "ensemble_auth_success",
    "ensemble_auth_fail",
    "ensemble_auth_skip",
    "prep_processor_request_queued",
    "outstanding_changes_queued",
    "outstanding_changes_removed",
    "revalidate_count",
    "connection_drop_count",
    "connection_revalidate_count",
    "sessionless_connections_expired",
    "stale_sessions_expired",
    "request_commit_queued",
    "learner_proposal_received_count",
    "learner_commit_received_count",
    "sync_processor_request_queued",
    "proposal_count",
    "quit_leading_due_to_disloyal_voter",
    "digest_mismatches_count",
    "stale_requests",
    "stale_requests_dropped",
    "stale_replies",
    "large_requests_rejected",
    "throttled_ops",
    "insecure_admin_count",
    "cnxn_closed_without_zk_server_running",
    "tls_handshake_exceeded",
    "unsuccessful_handshake",
    "requests_not_forwarded_to_commit_processor",
    "skip_learner_request_to_next_processor_count",
    "request_throttle_wait_count",
];

/// Summary sets whose key is a server id.
const ID_SETS: &[&str] = &[
    "learner_handler_qp_size",
    "learner_handler_qp_time_ms",
    "ack_latency",
];
/// Summary sets whose key is a top-level namespace.
const NAMESPACE_SETS: &[&str] = &["write_per_namespace", "read_per_namespace"];

const PARTS: &[&str] = &[
    "avg", "min", "max", "cnt", "sum", "p50", "p95", "p99", "p999",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Gauge,
    Counter,
}

/// One plain sample.
/// One exported sample of a typed reply: its value is the reply's value at
/// index `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub kind: Kind,
    pub source: String,
    pub set_key: Option<String>,
    pub value: usize,
}

/// A summary folded from a key family; the numbers are indices of the
/// reply's values.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub name: String,
    pub source: String,
    pub set_key: Option<String>,
    pub quantiles: Vec<(f64, usize)>,
    pub sum: usize,
    pub count: usize,
}

/// How every numeric key of a reply is exported: names, types and where
/// each value is. It depends only on the key set, which is stable between
/// polls of one server version, so it is computed once per key set and
/// reused (see [`Typings`]); a poll only brings new values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapped {
    /// The keys it was made for, as [`Mntr::keys`] gives them.
    pub keys: String,
    pub samples: Vec<Sample>,
    pub summaries: Vec<Summary>,
    pub dropped: usize,
}

/// Typings by key set, most recent last; servers of one or two versions
/// and roles give a handful.
#[derive(Debug, Default)]
pub struct Typings(Vec<std::sync::Arc<Mapped>>);

/// Key sets remembered at once.
const TYPINGS: usize = 16;

impl Typings {
    /// The typing of `mntr`'s key set: cached, or made now.
    pub fn of(&mut self, mntr: &Mntr) -> std::sync::Arc<Mapped> {
        if let Some(t) = self.0.iter().find(|t| t.keys == mntr.keys()) {
            return t.clone();
        }
        let typed = std::sync::Arc::new(map_mntr(mntr));
        if self.0.len() == TYPINGS {
            self.0.remove(0);
        }
        self.0.push(typed.clone());
        typed
    }
}

fn metric_name(base: &str) -> String {
    let name = format!("zookeeper_{base}");
    if names::owned(&name) {
        format!("zookeeper_mntr_{base}")
    } else {
        name
    }
}

/// Splits a folded family into (summary-set name, key) where it is one.
fn summary_set(family: &str) -> (String, Option<String>) {
    for set in ID_SETS {
        if let Some(key) = family.strip_suffix(set).and_then(|k| k.strip_suffix('_'))
            && !key.is_empty()
            && key.chars().all(|c| c.is_ascii_digit())
        {
            return ((*set).to_owned(), Some(key.to_owned()));
        }
    }
    for set in NAMESPACE_SETS {
        if let Some(key) = family.strip_suffix(set).and_then(|k| k.strip_suffix('_'))
            && !key.is_empty()
        {
            return ((*set).to_owned(), Some(key.to_owned()));
        }
    }
    (family.to_owned(), None)
}

/// Types and names every numeric `mntr` value.
pub fn map_mntr(mntr: &Mntr) -> Mapped {
    let mut families: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut plain: Vec<(&str, usize)> = Vec::new();
    for (value, key) in mntr
        .keys()
        .split('\n')
        .take(mntr.values().len())
        .enumerate()
    {
        let bare = key.strip_prefix("zk_").unwrap_or(key);
        let folded = PARTS.iter().find_map(|p| {
            bare.strip_prefix(p)
                .and_then(|rest| rest.strip_prefix('_'))
                .filter(|rest| !rest.is_empty())
                .map(|rest| (*p, rest))
        });
        match folded {
            Some((part, family)) => {
                families.entry(family).or_default().insert(part, value);
            }
            None => plain.push((bare, value)),
        }
    }
    let mut out = Mapped {
        keys: mntr.keys().to_owned(),
        ..Mapped::default()
    };
    let mut taken: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    // Claims every exposed name of one sample at once, or none of them.
    let mut claim = |names: &[String], key: &Option<String>, out: &mut Mapped| -> bool {
        if names
            .iter()
            .any(|n| taken.contains(&(n.clone(), key.clone())))
        {
            out.dropped += 1;
            return false;
        }
        for n in names {
            taken.insert((n.clone(), key.clone()));
        }
        true
    };
    for (family, parts) in &families {
        if parts.len() == 1 {
            let (part, value) = parts
                .iter()
                .next()
                .map(|(p, v)| (*p, *v))
                .unwrap_or(("", 0));
            let bare = format!("{part}_{family}");
            let name = metric_name(&bare);
            if claim(std::slice::from_ref(&name), &None, &mut out) {
                out.samples.push(Sample {
                    name,
                    kind: Kind::Gauge,
                    source: format!("zk_{bare}"),
                    set_key: None,
                    value,
                });
            }
            continue;
        }
        let (set, set_key) = summary_set(family);
        let name = metric_name(&set);
        let source = format!("zk_{{avg,min,max,cnt,sum,p50,p95,p99,p999}}_{family}");
        let summary = match (parts.get("cnt"), parts.get("sum")) {
            (Some(count), Some(sum)) => Some(Summary {
                name: name.clone(),
                source: source.clone(),
                set_key: set_key.clone(),
                quantiles: [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)]
                    .iter()
                    .filter_map(|(p, q)| parts.get(p).map(|v| (*q, *v)))
                    .collect(),
                sum: *sum,
                count: *count,
            }),
            _ => None,
        };
        let has_summary = summary.is_some();
        if let Some(s) = summary {
            let exposed = [name.clone(), format!("{name}_sum"), format!("{name}_count")];
            if claim(&exposed, &set_key, &mut out) {
                out.summaries.push(s);
            }
        }
        for (part, suffix) in [("min", "_min"), ("max", "_max"), ("avg", "_avg")] {
            if part == "avg" && has_summary {
                continue;
            }
            if let Some(value) = parts.get(part) {
                let gauge = format!("{name}{suffix}");
                if claim(std::slice::from_ref(&gauge), &set_key, &mut out) {
                    out.samples.push(Sample {
                        name: gauge,
                        kind: Kind::Gauge,
                        source: source.clone(),
                        set_key: set_key.clone(),
                        value: *value,
                    });
                }
            }
        }
    }
    for (bare, value) in plain {
        let name = metric_name(bare);
        let kind = if COUNTERS.contains(&bare) {
            Kind::Counter
        } else {
            Kind::Gauge
        };
        // A counter is exposed as NAME_total: claim that too.
        let exposed = match kind {
            Kind::Counter => vec![name.clone(), format!("{name}_total")],
            Kind::Gauge => vec![name.clone()],
        };
        if claim(&exposed, &None, &mut out) {
            out.samples.push(Sample {
                name,
                kind,
                source: format!("zk_{bare}"),
                set_key: None,
                value,
            });
        }
    }
    aliases(&mut out, &mut claim);
    out
}

/// The deprecated 0.1 names of the samples and summaries [`names::owned`]
/// no longer prefixes: copies pointing at the same values, their source
/// saying what replaces them.
fn aliases(
    out: &mut Mapped,
    claim: &mut impl FnMut(&[String], &Option<String>, &mut Mapped) -> bool,
) {
    let old = |name: &str| {
        (!names::owned(name) && names::owned_in_0_1(name))
            .then(|| name.replacen("zookeeper_", "zookeeper_mntr_", 1))
    };
    let samples: Vec<Sample> = out
        .samples
        .iter()
        .filter_map(|s| {
            old(&s.name).map(|name| Sample {
                source: format!("{}, deprecated name of {}", s.source, s.name),
                name,
                ..s.clone()
            })
        })
        .collect();
    for s in samples {
        let exposed = match s.kind {
            Kind::Counter => vec![s.name.clone(), format!("{}_total", s.name)],
            Kind::Gauge => vec![s.name.clone()],
        };
        if claim(&exposed, &s.set_key, out) {
            out.samples.push(s);
        }
    }
    let summaries: Vec<Summary> = out
        .summaries
        .iter()
        .filter_map(|s| {
            old(&s.name).map(|name| Summary {
                source: format!("{}, deprecated name of {}", s.source, s.name),
                name,
                ..s.clone()
            })
        })
        .collect();
    for s in summaries {
        let exposed = [
            s.name.clone(),
            format!("{}_sum", s.name),
            format!("{}_count", s.name),
        ];
        if claim(&exposed, &s.set_key, out) {
            out.summaries.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fourlw::parse::parse_mntr;

    /// A reply's typing with its values.
    struct Typed(Mapped, Vec<f64>);

    impl std::ops::Deref for Typed {
        type Target = Mapped;
        fn deref(&self) -> &Mapped {
            &self.0
        }
    }

    fn mapped(text: &str) -> Typed {
        let mntr = parse_mntr(text).unwrap();
        Typed(map_mntr(&mntr), mntr.values().to_vec())
    }

    /// A sample with its value in place of its index.
    fn sample(m: &Typed, name: &str) -> Option<Sample> {
        m.samples
            .iter()
            .find(|s| s.name == name && s.set_key.is_none())
            .cloned()
            .map(|s| Sample {
                value: s.value,
                ..s
            })
    }

    fn value(m: &Typed, name: &str) -> f64 {
        m.1[sample(m, name).unwrap().value]
    }

    #[test]
    fn names_are_prefixed_by_whole_words_with_the_old_names_as_aliases() {
        let m = mapped(
            "zk_uptime\t649\nzk_avg_updatelatency\t2\nzk_min_updatelatency\t1\nzk_max_updatelatency\t3\n\
             zk_cnt_updatelatency\t4\nzk_sum_updatelatency\t8\nzk_avg_election_time\t1\nzk_min_election_time\t1\n\
             zk_max_election_time\t1\nzk_cnt_election_time\t1\nzk_sum_election_time\t1\n",
        );
        assert_eq!(value(&m, "zookeeper_uptime"), 649.0);
        assert_eq!(value(&m, "zookeeper_mntr_uptime"), 649.0, "alias kept");
        assert_eq!(value(&m, "zookeeper_updatelatency_max"), 3.0);
        assert_eq!(value(&m, "zookeeper_mntr_updatelatency_max"), 3.0);
        let summaries: Vec<&str> = m.summaries.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            summaries,
            [
                "zookeeper_mntr_election_time",
                "zookeeper_updatelatency",
                "zookeeper_mntr_updatelatency"
            ],
            "election_time lies in zookeeper_election_: prefixed, no alias"
        );
        assert!(
            sample(&m, "zookeeper_mntr_uptime")
                .unwrap()
                .source
                .contains("deprecated name of zookeeper_uptime")
        );
        assert_eq!(m.dropped, 0);
    }

    #[test]
    fn a_typing_is_reused_for_the_same_key_set_only() {
        let mut typings = Typings::default();
        let a = parse_mntr("zk_znode_count\t5\nzk_packets_sent\t1\n").unwrap();
        let b = parse_mntr("zk_znode_count\t9\nzk_packets_sent\t4\n").unwrap();
        let c = parse_mntr("zk_znode_count\t9\n").unwrap();
        let (ta, tb, tc) = (typings.of(&a), typings.of(&b), typings.of(&c));
        assert!(std::sync::Arc::ptr_eq(&ta, &tb), "same keys, new values");
        assert!(!std::sync::Arc::ptr_eq(&ta, &tc));
        assert_eq!(tc.samples.len(), 1);
        assert_eq!(b.values()[tb.samples[0].value], 9.0);
    }

    #[test]
    fn counters_gauges_and_legacy_latency() {
        let m = mapped(
            "zk_packets_received\t10\nzk_znode_count\t5\nzk_avg_latency\t0.5\nzk_min_latency\t0\nzk_max_latency\t7\nzk_max_file_descriptor_count\t1024\nzk_brand_new_key\t3\n",
        );
        assert_eq!(
            sample(&m, "zookeeper_packets_received").unwrap().kind,
            Kind::Counter
        );
        assert_eq!(
            sample(&m, "zookeeper_znode_count").unwrap().kind,
            Kind::Gauge
        );
        assert_eq!(value(&m, "zookeeper_latency_avg"), 0.5);
        assert_eq!(value(&m, "zookeeper_latency_max"), 7.0);
        assert_eq!(value(&m, "zookeeper_max_file_descriptor_count"), 1024.0);
        assert_eq!(
            sample(&m, "zookeeper_brand_new_key").unwrap().kind,
            Kind::Gauge
        );
        assert!(m.summaries.is_empty());
    }

    #[test]
    fn summaries_fold_with_quantiles_and_sets_get_a_key() {
        let m = mapped(
            "zk_avg_readlatency\t1.5\nzk_min_readlatency\t1\nzk_max_readlatency\t9\nzk_cnt_readlatency\t4\nzk_sum_readlatency\t6\nzk_p50_readlatency\t1\nzk_p99_readlatency\t9\n\
             zk_avg_1_learner_handler_qp_size\t0.3\nzk_cnt_1_learner_handler_qp_size\t8\nzk_sum_1_learner_handler_qp_size\t3\n\
             zk_cnt_quorum_ack_latency\t2\nzk_sum_quorum_ack_latency\t2\n\
             zk_cnt_zookeeper_write_per_namespace\t1\nzk_sum_zookeeper_write_per_namespace\t155\n",
        );
        let read = m
            .summaries
            .iter()
            .find(|s| s.name == "zookeeper_readlatency")
            .unwrap();
        assert_eq!((m.1[read.count], m.1[read.sum]), (4.0, 6.0));
        let quantiles: Vec<(f64, f64)> =
            read.quantiles.iter().map(|(q, i)| (*q, m.1[*i])).collect();
        assert_eq!(quantiles, vec![(0.5, 1.0), (0.99, 9.0)]);
        assert!(
            sample(&m, "zookeeper_readlatency_avg").is_none(),
            "avg is sum/count of the summary"
        );
        assert_eq!(value(&m, "zookeeper_readlatency_max"), 9.0);
        let qp = m
            .summaries
            .iter()
            .find(|s| s.name == "zookeeper_learner_handler_qp_size")
            .unwrap();
        assert_eq!(qp.set_key.as_deref(), Some("1"));
        assert!(
            m.summaries
                .iter()
                .any(|s| s.name == "zookeeper_quorum_ack_latency" && s.set_key.is_none())
        );
        let ns = m
            .summaries
            .iter()
            .find(|s| s.name == "zookeeper_write_per_namespace")
            .unwrap();
        assert_eq!(ns.set_key.as_deref(), Some("zookeeper"));
    }

    #[test]
    fn reserved_names_and_duplicates() {
        let m =
            mapped("zk_up\t1\nzk_server_leader\t1\nzk_packets_sent\t1\nzk_packets_sent_total\t2\n");
        assert!(sample(&m, "zookeeper_mntr_up").is_some());
        assert!(sample(&m, "zookeeper_mntr_server_leader").is_some());
        assert!(sample(&m, "zookeeper_packets_sent").is_some());
        assert_eq!(
            m.dropped, 1,
            "zk_packets_sent_total would expose the same name as the counter"
        );
    }

    #[test]
    fn every_real_key_is_mapped_once() {
        for role in ["leader", "follower", "standalone"] {
            let text = std::fs::read_to_string(format!(
                "{}/tests/fixtures/3.8.0/{role}/mntr.txt",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let m = mapped(&text);
            assert_eq!(m.dropped, 0, "{role}");
            assert!(m.summaries.len() > 20, "{role}");
            let names: BTreeSet<_> = m.samples.iter().map(|s| (&s.name, &s.set_key)).collect();
            assert_eq!(names.len(), m.samples.len(), "{role}: unique names");
        }
    }
}

/// The mntr-key → metric table of docs/metrics.md, generated from the
/// fixtures of every ZooKeeper version in tests/fixtures.
#[cfg(test)]
mod doc_table {
    use super::*;
    use crate::fourlw::parse::parse_mntr;
    use std::path::Path;

    const BEGIN: &str =
        "<!-- mntr-table:begin (generated: ZKEE_BLESS=1 cargo test --lib mntr_table) -->";
    const END: &str = "<!-- mntr-table:end -->";
    /// Keys the hand-written 3.9 fixture adds to test what an unknown key
    /// becomes (tests/fixtures/README.md): no ZooKeeper sends them, so the
    /// table of real keys leaves them out.
    const SYNTHETIC: &[&str] = &["zk_brand_new_gauge_in_3_9"];
    /// The fixtures captured from real servers (the rest are hand-written).
    const REAL: &str = "3.8.0";

    /// The key a sample's row is for, and what follows its name there.
    fn row_of(s: &Sample) -> (&str, &'static str) {
        let (source, alias) = match s.source.split_once(", deprecated name of ") {
            Some((source, _)) => (source, true),
            None => (s.source.as_str(), false),
        };
        let label = match (s.set_key.is_some(), alias) {
            (true, _) => " (`key` label)",
            (false, true) => " (deprecated 0.1 name)",
            (false, false) => "",
        };
        (source, label)
    }

    fn table() -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut rows: BTreeMap<String, (String, String, BTreeSet<String>)> = BTreeMap::new();
        let mut versions: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        versions.sort();
        for version in versions {
            for role in std::fs::read_dir(&version).unwrap().flatten() {
                let Ok(text) = std::fs::read_to_string(role.path().join("mntr.txt")) else {
                    continue;
                };
                let Ok(mntr) = parse_mntr(&text) else {
                    continue;
                };
                let v = version.file_name().unwrap().to_string_lossy().into_owned();
                let m = map_mntr(&mntr);
                for s in m
                    .samples
                    .iter()
                    .filter(|s| !SYNTHETIC.contains(&s.source.as_str()))
                {
                    let (name, kind) = match s.kind {
                        Kind::Counter => (format!("{}_total", s.name), "counter"),
                        Kind::Gauge => (s.name.clone(), "gauge"),
                    };
                    let (source, label) = row_of(s);
                    let e = rows
                        .entry(source.to_owned())
                        .or_insert_with(|| (String::new(), kind.to_owned(), BTreeSet::new()));
                    if !e.0.contains(&name) {
                        if !e.0.is_empty() {
                            e.0.push_str(", ");
                        }
                        e.0.push_str(&format!("`{name}`{label}"));
                    }
                    e.2.insert(v.clone());
                }
                for s in &m.summaries {
                    let as_sample = Sample {
                        name: s.name.clone(),
                        kind: Kind::Gauge,
                        source: s.source.clone(),
                        set_key: s.set_key.clone(),
                        value: 0,
                    };
                    let (source, label) = row_of(&as_sample);
                    let e = rows
                        .entry(source.to_owned())
                        .or_insert_with(|| (String::new(), "summary".to_owned(), BTreeSet::new()));
                    e.1 = "summary + gauges".to_owned();
                    if !e.0.contains(&format!("`{}`", s.name)) {
                        let text = format!("`{}`{label} (quantiles, `_sum`, `_count`)", s.name);
                        e.0 = match (e.0.is_empty(), !label.contains("deprecated")) {
                            (true, _) => text,
                            (false, true) => format!("{text}, {}", e.0),
                            (false, false) => format!("{}, {text}", e.0),
                        };
                    }
                    e.2.insert(v.clone());
                }
            }
        }
        let mut out =
            format!("{BEGIN}\n| mntr key | metric | type | seen in |\n| --- | --- | --- | --- |\n");
        // The summary sets a real server sends once it has such traffic
        // (reads per namespace, a learner's queue), which no fixture shows.
        for set in ID_SETS.iter().chain(NAMESPACE_SETS) {
            let source = format!("zk_{{avg,min,max,cnt,sum,p50,p95,p99,p999}}_<key>_{set}");
            if !rows
                .values()
                .any(|r| r.0.contains(&format!("`zookeeper_{set}`")))
            {
                rows.insert(
                    source,
                    (
                        format!("`zookeeper_{set}` (`key` label) (quantiles, `_sum`, `_count`), `zookeeper_{set}_min` (`key` label), `zookeeper_{set}_max` (`key` label)"),
                        "summary + gauges".to_owned(),
                        BTreeSet::new(),
                    ),
                );
            }
        }
        for (source, (names, kind, seen)) in rows {
            let seen: Vec<String> = seen.into_iter().collect();
            // Keys only the hand-written fixtures of older versions carry:
            // the servers the tests run (3.8) never send them.
            let note = if seen.is_empty() {
                "Conditional: sent once the server has such traffic; not in the fixtures"
            } else if !seen.iter().any(|v| v == REAL) {
                " (Conditional: not sent by 3.8)"
            } else {
                ""
            };
            out.push_str(&format!(
                "| `{source}` | {names} | {kind} | {}{note} |\n",
                seen.join(", ")
            ));
        }
        out.push_str(END);
        out
    }

    #[test]
    fn mntr_table_in_docs_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md");
        let docs = std::fs::read_to_string(&path).unwrap();
        let (Some(b), Some(e)) = (docs.find(BEGIN), docs.find(END)) else {
            panic!("docs/metrics.md lacks the mntr-table markers");
        };
        let current = &docs[b..e + END.len()];
        let fresh = table();
        if std::env::var_os("ZKEE_BLESS").is_some() {
            std::fs::write(&path, docs.replace(current, &fresh)).unwrap();
            return;
        }
        assert!(
            current == fresh,
            "the mntr table in docs/metrics.md is stale; run ZKEE_BLESS=1 cargo test --lib mntr_table"
        );
    }
}
