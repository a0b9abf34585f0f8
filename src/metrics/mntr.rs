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
mod tests;

/// The mntr-key → metric table of docs/metrics.md, generated from the
/// fixtures of every ZooKeeper version in tests/fixtures.
#[cfg(test)]
mod doc_table;
