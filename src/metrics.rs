//! The one place that names metrics: a `prometheus-client` collector that
//! encodes the models at scrape time.
//!
//! Nothing here is updated by event handlers; each scrape takes a read lock
//! on each cluster, reads the models and writes the exposition, in the
//! Prometheus text format or OpenMetrics as the scraper asks.

use std::fmt;
use std::time::{Instant, SystemTime};

use prometheus_client::collector::Collector as PromCollector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabelSet, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::model::histogram::Histogram;
use crate::model::session::SessionState;
use crate::model::{ClusterState, SharedCluster};

/// Content type of the Prometheus text format.
pub const TEXT_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// Content type of OpenMetrics text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Renders every cluster's models; registered once, encoded on each scrape.
#[derive(Debug)]
pub struct Collector {
    clusters: Vec<SharedCluster>,
}

/// Builds the registry holding the collector.
pub fn registry(clusters: Vec<SharedCluster>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Collector { clusters }));
    registry
}

/// Encodes the registry in the Prometheus text format, or OpenMetrics.
pub fn render(registry: &Registry, openmetrics: bool) -> Result<String, fmt::Error> {
    let mut out = String::with_capacity(1 << 16);
    if openmetrics {
        prometheus_client::encoding::text::encode(&mut out, registry)?;
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?;
    }
    Ok(out)
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes one family: its HELP/TYPE line, then `series` writes the samples.
fn family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: impl FnOnce(&mut MetricEncoder) -> fmt::Result,
) -> fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    series(&mut metric)
}

fn gauge(m: &mut MetricEncoder, labels: &impl EncodeLabelSet, value: f64) -> fmt::Result {
    m.encode_family(labels)?.encode_gauge(&value)
}

fn counter<V: EncodeCounterValue>(
    m: &mut MetricEncoder,
    labels: &impl EncodeLabelSet,
    value: V,
) -> fmt::Result {
    m.encode_family(labels)?
        .encode_counter::<NoLabelSet, V, f64>(&value, None)
}

fn histogram(m: &mut MetricEncoder, labels: &impl EncodeLabelSet, h: &Histogram) -> fmt::Result {
    m.encode_family(labels)?
        .encode_histogram::<NoLabelSet>(h.sum(), h.count(), &h.buckets(), None)
}

impl PromCollector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let now = Instant::now();
        let guards: Vec<_> = self
            .clusters
            .iter()
            .map(|c| c.read().unwrap_or_else(|p| p.into_inner()))
            .collect();
        let clusters: Vec<&ClusterState> = guards.iter().map(|g| &**g).collect();
        encode_elections(&mut encoder, &clusters, now)?;
        encode_trees(&mut encoder, &clusters)?;
        encode_sessions(&mut encoder, &clusters)?;
        family(
            &mut encoder,
            "zookeeper_exporter_build_info",
            "Version and git revision of zk-election-exporter; always 1.",
            MetricType::Gauge,
            |m| {
                gauge(
                    m,
                    &[("version", crate::VERSION), ("revision", crate::REVISION)],
                    1.0,
                )
            },
        )
    }
}

/// Calls `f` with the labels and model of every election of every cluster.
fn each_election(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 2], &crate::model::election::Election) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in &c.trees {
            for (path, election) in tree.elections() {
                f(
                    &[("cluster", c.name.as_str()), ("election", path)],
                    election,
                )?;
            }
        }
    }
    Ok(())
}

fn encode_elections(
    enc: &mut DescriptorEncoder,
    clusters: &[&ClusterState],
    now: Instant,
) -> fmt::Result {
    family(
        enc,
        "zookeeper_election_candidates",
        "Candidates (children with a sequence suffix) of the election.",
        MetricType::Gauge,
        |m| each_election(clusters, |l, e| gauge(m, l, e.candidate_count() as f64)),
    )?;
    family(
        enc,
        "zookeeper_election_has_master",
        "1 if the election has a master (at least one candidate), else 0.",
        MetricType::Gauge,
        |m| {
            each_election(clusters, |l, e| {
                gauge(m, l, f64::from(u8::from(e.master().is_some())))
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master",
        "The current master of the election: its node and identity; always 1, absent when masterless.",
        MetricType::Gauge,
        |m| {
            each_election(clusters, |l, e| match e.master() {
                Some(master) => gauge(
                    m,
                    &[
                        l[0],
                        l[1],
                        ("node", master.node),
                        ("identity", master.identity),
                    ],
                    1.0,
                ),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master_sequence",
        "Sequence number of the master's node.",
        MetricType::Gauge,
        |m| {
            each_election(clusters, |l, e| match e.master() {
                Some(master) => gauge(m, l, f64::from(master.sequence)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master_since_timestamp_seconds",
        "Unix time the current master took over (its node's ctime when first seen at agent start).",
        MetricType::Gauge,
        |m| {
            each_election(clusters, |l, e| match e.master() {
                Some(master) => gauge(m, l, unix_seconds(master.since)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master_changes",
        "Master switches (a different node became master) since the agent started watching.",
        MetricType::Counter,
        |m| each_election(clusters, |l, e| counter(m, l, e.changes())),
    )?;
    family(
        enc,
        "zookeeper_election_masterless_seconds",
        "Accumulated seconds the election had no candidate; 1 - rate() is its availability.",
        MetricType::Counter,
        |m| {
            each_election(clusters, |l, e| {
                counter(m, l, e.masterless_total(now).as_secs_f64())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_candidate_changes",
        "Candidates that joined or left the election since the agent started watching.",
        MetricType::Counter,
        |m| {
            each_election(clusters, |l, e| {
                counter(m, &[l[0], l[1], ("change", "join")], e.joins())?;
                counter(m, &[l[0], l[1], ("change", "leave")], e.leaves())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_duplicate_identities",
        "Candidates whose identity another candidate of the same election also has (a zombie session).",
        MetricType::Gauge,
        |m| {
            each_election(clusters, |l, e| {
                gauge(m, l, e.duplicate_identities() as f64)
            })
        },
    )
}

/// Calls `f` with the labels and model of every tree of every cluster.
fn each_tree(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 2], &crate::model::tree::ElectionTree) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in &c.trees {
            f(
                &[
                    ("cluster", c.name.as_str()),
                    ("tree", tree.pattern().as_str()),
                ],
                tree,
            )?;
        }
    }
    Ok(())
}

fn encode_trees(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    type Count = fn(&crate::model::tree::ElectionTree) -> f64;
    let gauges: [(&str, &str, Count); 5] = [
        (
            "zookeeper_tree_synced",
            "1 if the tree reflects ZooKeeper now; 0 while disconnected or a listing failed (its election values are then the last known ones).",
            |t| f64::from(u8::from(t.synced())),
        ),
        (
            "zookeeper_tree_elections",
            "Elections (nodes matching the glob) in the tree.",
            |t| t.election_count() as f64,
        ),
        (
            "zookeeper_tree_nodes",
            "Election nodes plus all their children in the tree.",
            |t| t.node_count() as f64,
        ),
        (
            "zookeeper_tree_ephemeral_nodes",
            "Ephemeral children of the tree's elections.",
            |t| t.ephemeral_count() as f64,
        ),
        (
            "zookeeper_tree_ignored_nodes",
            "Children of elections without a sequence suffix; not candidates.",
            |t| t.ignored_count() as f64,
        ),
    ];
    for (name, help, value) in gauges {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_tree(clusters, |l, t| gauge(m, l, value(t)))
        })?;
    }
    family(
        enc,
        "zookeeper_tree_sync_failures",
        "Failed attempts to watch and list the tree (no rights, connection loss).",
        MetricType::Counter,
        |m| each_tree(clusters, |l, t| counter(m, l, t.sync_failures())),
    )?;
    family(
        enc,
        "zookeeper_tree_masterless_duration_seconds",
        "Durations of ended masterless periods of the tree's elections.",
        MetricType::Histogram,
        |m| each_tree(clusters, |l, t| histogram(m, l, t.masterless_histogram())),
    )
}

fn encode_sessions(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    family(
        enc,
        "zookeeper_session_state",
        "State of the agent's ZooKeeper session: 1 for the current state.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                for s in SessionState::ALL {
                    let v = f64::from(u8::from(c.session.state == s));
                    gauge(m, &[("cluster", c.name.as_str()), ("state", s.label())], v)?;
                }
            }
            Ok(())
        },
    )?;
    type Count = fn(&ClusterState) -> u64;
    let counters: [(&str, &str, Count); 3] = [
        (
            "zookeeper_session_reconnects",
            "Times the agent's session reconnected after a disconnect.",
            |c| c.session.reconnects,
        ),
        (
            "zookeeper_session_expirations",
            "Times the agent's session expired (a new one is then built).",
            |c| c.session.expirations,
        ),
        (
            "zookeeper_session_connect_failures",
            "Failed attempts to establish a session (servers unreachable, auth failed).",
            |c| c.session.connect_failures,
        ),
    ];
    for (name, help, value) in counters {
        family(enc, name, help, MetricType::Counter, |m| {
            for c in clusters {
                counter(m, &[("cluster", c.name.as_str())], value(c))?;
            }
            Ok(())
        })?;
    }
    family(
        enc,
        "zookeeper_session_timeout_seconds",
        "Session timeout negotiated with the server.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                if let Some(t) = c.session.timeout {
                    gauge(m, &[("cluster", c.name.as_str())], t.as_secs_f64())?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "zookeeper_session_request_duration_seconds",
        "Round trips of the agent's own requests: op=read is a periodic probe, op=multi_read the batched tree reads.",
        MetricType::Histogram,
        |m| {
            for c in clusters {
                for (op, h) in c.session.latency() {
                    histogram(m, &[("cluster", c.name.as_str()), ("op", op)], h)?;
                }
            }
            Ok(())
        },
    )
}
