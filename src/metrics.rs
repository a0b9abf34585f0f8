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

use std::collections::BTreeMap;

use crate::fourlw::Failure;
use crate::fourlw::mntr::{Kind, Mapped, Summary};
use crate::fourlw::parse::{Conf, Role, Srvr, Wchs};
use crate::model::ensemble::{Ensemble, ServerHealth};
use crate::model::groups::{Group, GroupSpec};
use crate::model::histogram::Histogram;
use crate::model::liveness::{Liveness, SessionTracker};
use crate::model::session::SessionState;
use crate::model::tree::Tree;
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

/// Everything `/metrics` shows: the registry with the collector, and the
/// clusters again for the families `prometheus-client` cannot encode
/// (summaries folded from `mntr`).
#[derive(Debug)]
pub struct Exposition {
    registry: Registry,
    clusters: Vec<SharedCluster>,
    /// The mntr section (samples and summaries) per format, with the
    /// ensemble generations it was written for: rebuilt only after a new
    /// collection, not on every scrape.
    mntr_cache: std::sync::Mutex<[Option<MntrSection>; 2]>,
}

/// Rendered mntr families and the ensemble generations they reflect.
type MntrSection = (Vec<u64>, String);

impl Exposition {
    pub fn new(clusters: Vec<SharedCluster>) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Collector {
            clusters: clusters.clone(),
        }));
        Self {
            registry,
            clusters,
            mntr_cache: std::sync::Mutex::new([None, None]),
        }
    }

    /// Encodes everything in the Prometheus text format, or OpenMetrics.
    pub fn render(&self, openmetrics: bool) -> Result<String, fmt::Error> {
        let mut out = String::with_capacity(1 << 16);
        if openmetrics {
            prometheus_client::encoding::text::encode_registry(&mut out, &self.registry)?;
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
        }
        let guards: Vec<_> = self
            .clusters
            .iter()
            .map(|c| c.read().unwrap_or_else(|p| p.into_inner()))
            .collect();
        let clusters: Vec<&ClusterState> = guards.iter().map(|g| &**g).collect();
        let generations: Vec<u64> = clusters
            .iter()
            .map(|c| c.ensemble.as_ref().map_or(0, |e| e.generation()))
            .collect();
        let mut cache = self.mntr_cache.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut cache[usize::from(openmetrics)];
        match slot {
            Some((g, text)) if *g == generations => out.push_str(text),
            _ => {
                let mut text = String::new();
                encode_mntr_samples(&mut text, &clusters, openmetrics)?;
                encode_mntr_summaries(&mut text, &clusters)?;
                out.push_str(&text);
                *slot = Some((generations, text));
            }
        }
        if openmetrics {
            prometheus_client::encoding::text::encode_eof(&mut out)?;
        }
        Ok(out)
    }
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
        encode_liveness(&mut encoder, &clusters, now)?;
        encode_probe(&mut encoder, &clusters)?;
        encode_trees(&mut encoder, &clusters)?;
        encode_sessions(&mut encoder, &clusters)?;
        encode_ensembles(&mut encoder, &clusters)?;
        encode_discovery(&mut encoder, &clusters)?;
        family(
            &mut encoder,
            "zookeeper_exporter_series_dropped",
            "Elections or groups neither tracked nor exported because max_elections / max_groups was reached (counted at each listing and creation).",
            MetricType::Counter,
            |m| {
                for c in &clusters {
                    for kind in ["election", "group"] {
                        let n = c.dropped.get(kind).copied().unwrap_or(0);
                        counter(m, &[("cluster", c.name.as_str()), ("kind", kind)], n)?;
                    }
                }
                Ok(())
            },
        )?;
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
        for tree in c.trees.iter().filter_map(Tree::as_elections) {
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
    mut f: impl FnMut(&[(&str, &str); 2], &Tree) -> fmt::Result,
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
    type Count = fn(&Tree) -> Option<f64>;
    let gauges: [(&str, &str, Count); 6] = [
        (
            "zookeeper_tree_synced",
            "1 if the tree reflects ZooKeeper now; 0 while disconnected or a listing failed (its values are then the last known ones).",
            |t| Some(f64::from(u8::from(t.synced()))),
        ),
        (
            "zookeeper_tree_elections",
            "Elections (nodes matching the glob) in an election tree.",
            |t| t.as_elections().map(|e| e.parent_count() as f64),
        ),
        (
            "zookeeper_tree_groups",
            "Groups (nodes matching the glob) in a group tree.",
            |t| t.as_groups().map(|g| g.parent_count() as f64),
        ),
        (
            "zookeeper_tree_nodes",
            "Matching nodes plus all their children in the tree.",
            |t| Some(t.node_count() as f64),
        ),
        (
            "zookeeper_tree_ephemeral_nodes",
            "Ephemeral children of the tree's elections or groups.",
            |t| Some(t.ephemeral_count() as f64),
        ),
        (
            "zookeeper_tree_ignored_nodes",
            "Children that are neither candidates (no sequence suffix) nor members (persistent).",
            |t| Some(t.ignored_count() as f64),
        ),
    ];
    for (name, help, value) in gauges {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_tree(clusters, |l, t| value(t).map_or(Ok(()), |v| gauge(m, l, v)))
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
        |m| {
            each_tree(clusters, |l, t| match t.as_elections() {
                Some(e) => histogram(m, l, e.masterless_histogram()),
                None => Ok(()),
            })
        },
    )?;
    encode_groups(enc, clusters)
}

/// Calls `f` with the labels, spec and model of every group.
fn each_group(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 2], &GroupSpec, &Group) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        for tree in c.trees.iter().filter_map(Tree::as_groups) {
            for (path, group) in tree.groups() {
                f(
                    &[("cluster", c.name.as_str()), ("group", path)],
                    tree.spec(),
                    group,
                )?;
            }
        }
    }
    Ok(())
}

fn encode_groups(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    family(
        enc,
        "zookeeper_group_members",
        "Live members (ephemeral children) of the group.",
        MetricType::Gauge,
        |m| each_group(clusters, |l, _, g| gauge(m, l, g.len() as f64)),
    )?;
    family(
        enc,
        "zookeeper_group_member_changes",
        "Members that joined or left the group since the agent started watching (a restart under the same name is both).",
        MetricType::Counter,
        |m| {
            each_group(clusters, |l, _, g| {
                counter(m, &[l[0], l[1], ("change", "join")], g.joins())?;
                counter(m, &[l[0], l[1], ("change", "leave")], g.leaves())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_group_min_members",
        "Configured minimum of live members for the group (only where configured).",
        MetricType::Gauge,
        |m| {
            each_group(clusters, |l, spec, _| match spec.min_members {
                Some(min) => gauge(m, l, f64::from(min)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_group_member",
        "One live member of the group; always 1 (only with export_members = true).",
        MetricType::Gauge,
        |m| {
            each_group(clusters, |l, spec, g| {
                if spec.export_members {
                    for member in g.member_names() {
                        gauge(m, &[l[0], l[1], ("member", member)], 1.0)?;
                    }
                }
                Ok(())
            })
        },
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

/// Calls `f` with the labels and health of every polled server.
fn each_server(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 2], &ServerHealth) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        if let Some(ensemble) = &c.ensemble {
            for (server, health) in ensemble.servers() {
                f(&[("cluster", c.name.as_str()), ("server", server)], health)?;
            }
        }
    }
    Ok(())
}

fn encode_ensembles(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    family(
        enc,
        "zookeeper_up",
        "1 if the server answered mntr or srvr (four-letter words) in the last collection.",
        MetricType::Gauge,
        |m| each_server(clusters, |l, h| gauge(m, l, f64::from(u8::from(h.up())))),
    )?;
    family(
        enc,
        "zookeeper_ruok",
        "1 if the server answered ruok with imok; absent when ruok is not polled.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                h.ruok()
                    .map_or(Ok(()), |ok| gauge(m, l, f64::from(u8::from(ok))))
            })
        },
    )?;
    family(
        enc,
        "zookeeper_server_state",
        "Role of the server (mntr zk_server_state or srvr Mode): 1 for the current state.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| match h.role().filter(|_| h.up()) {
                Some(role) => {
                    for state in Role::ALL {
                        let v = f64::from(u8::from(state == role));
                        gauge(m, &[l[0], l[1], ("state", state.label())], v)?;
                    }
                    Ok(())
                }
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_server_leader",
        "1 if the server is the ensemble leader, else 0.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| match h.role().filter(|_| h.up()) {
                Some(role) => gauge(m, l, f64::from(u8::from(role == Role::Leader))),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_server_info",
        "ZooKeeper version of the server; always 1.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                h.version()
                    .map_or(Ok(()), |v| gauge(m, &[l[0], l[1], ("version", v)], 1.0))
            })
        },
    )?;
    type SrvrValue = fn(&Srvr) -> Option<u64>;
    let srvr: [(&str, &str, SrvrValue); 3] = [
        (
            "zookeeper_zxid_epoch",
            "Epoch of the last processed zxid (its high 32 bits), from srvr; it grows with every leader election.",
            Srvr::zxid_epoch,
        ),
        (
            "zookeeper_zxid_counter",
            "Transaction counter of the last processed zxid (its low 32 bits), from srvr; near 2^32 (4294967296) the ensemble forces a leader election.",
            Srvr::zxid_counter,
        ),
        (
            "zookeeper_node_count",
            "Znodes in the server's data tree, from srvr.",
            |s| s.node_count,
        ),
    ];
    for (name, help, value) in srvr {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(clusters, |l, h| match h.srvr().and_then(value) {
                Some(v) => gauge(m, l, v as f64),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        "zookeeper_read_only",
        "1 if the server is in read-only mode (isro answered ro), 0 for rw; absent when it cannot say.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                h.read_only()
                    .map_or(Ok(()), |ro| gauge(m, l, f64::from(u8::from(ro))))
            })
        },
    )?;
    type ConfValue = fn(&Conf) -> Option<f64>;
    let conf: [(&str, &str, ConfValue); 3] = [
        (
            "zookeeper_config_tick_time_seconds",
            "tickTime from conf, in seconds.",
            Conf::tick_time_ms,
        ),
        (
            "zookeeper_config_min_session_timeout_seconds",
            "minSessionTimeout from conf, in seconds: the shortest session timeout the server grants.",
            Conf::min_session_timeout_ms,
        ),
        (
            "zookeeper_config_max_session_timeout_seconds",
            "maxSessionTimeout from conf, in seconds: the longest session timeout the server grants.",
            Conf::max_session_timeout_ms,
        ),
    ];
    for (name, help, value) in conf {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(clusters, |l, h| match h.conf().and_then(value) {
                Some(ms) => gauge(m, l, ms / 1000.0),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        "zookeeper_config_info",
        "The server's id (serverId from conf); always 1.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| match h.conf().and_then(Conf::server_id) {
                Some(id) => gauge(m, &[l[0], l[1], ("server_id", id)], 1.0),
                None => Ok(()),
            })
        },
    )?;
    encode_optional_commands(enc, clusters)?;
    encode_fourlw_health(enc, clusters)?;
    encode_ensemble_totals(enc, clusters)
}

/// Families of the opt-in commands: wchs, cons and envi.
fn encode_optional_commands(
    enc: &mut DescriptorEncoder,
    clusters: &[&ClusterState],
) -> fmt::Result {
    type WchsValue = fn(&Wchs) -> u64;
    let wchs: [(&str, &str, WchsValue); 3] = [
        (
            "zookeeper_wchs_connections",
            "Connections holding watches, from wchs.",
            |w| w.connections,
        ),
        (
            "zookeeper_wchs_paths",
            "Paths being watched, from wchs.",
            |w| w.paths,
        ),
        (
            "zookeeper_wchs_watches",
            "Watches set on the server, from wchs.",
            |w| w.watches,
        ),
    ];
    for (name, help, value) in wchs {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(clusters, |l, h| match h.wchs() {
                Some(w) => gauge(m, l, value(w) as f64),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        "zookeeper_cons_connections",
        "Client connections listed by cons.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                h.cons().map_or(Ok(()), |c| gauge(m, l, c.len() as f64))
            })
        },
    )?;
    family(
        enc,
        "zookeeper_server_java_info",
        "Java runtime of the server, from envi; always 1.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| match h.envi() {
                Some(env) => {
                    let get = |k: &str| env.get(k).map_or("", String::as_str);
                    gauge(
                        m,
                        &[
                            l[0],
                            l[1],
                            ("java_version", get("java.version")),
                            ("java_vendor", get("java.vendor")),
                        ],
                        1.0,
                    )
                }
                None => Ok(()),
            })
        },
    )
}

fn encode_fourlw_health(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    family(
        enc,
        "zookeeper_fourlw_up",
        "1 if the command got a usable reply in the last collection.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                for (command, e) in &h.last {
                    gauge(
                        m,
                        &[l[0], l[1], ("command", command.name())],
                        f64::from(u8::from(e.result.is_ok())),
                    )?;
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_fourlw_duration_seconds",
        "Duration of the command's last exchange (connect, write, read), bounded by the timeout.",
        MetricType::Gauge,
        |m| {
            each_server(clusters, |l, h| {
                for (command, e) in &h.last {
                    gauge(
                        m,
                        &[l[0], l[1], ("command", command.name())],
                        e.duration.as_secs_f64(),
                    )?;
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_fourlw_errors",
        "Failed exchanges by reason: timeout, connect, not_allowed (whitelist), not_serving (no quorum), parse.",
        MetricType::Counter,
        |m| {
            each_server(clusters, |l, h| {
                for command in h.last.keys() {
                    for reason in Failure::ALL {
                        let n = h.errors.get(&(*command, reason)).copied().unwrap_or(0);
                        counter(
                            m,
                            &[
                                l[0],
                                l[1],
                                ("command", command.name()),
                                ("reason", reason.label()),
                            ],
                            n,
                        )?;
                    }
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        "zookeeper_fourlw_skipped_lines",
        "Lines of mntr replies skipped because their key or value cannot be exported (labels, odd characters).",
        MetricType::Counter,
        |m| each_server(clusters, |l, h| counter(m, l, h.skipped_lines)),
    )
}

fn encode_ensemble_totals(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    type Total = fn(&Ensemble) -> Option<f64>;
    let totals: [(&str, &str, Total); 4] = [
        (
            "zookeeper_ensemble_servers",
            "Members polled: configured servers plus members published in /zookeeper/config.",
            |e| Some(e.len() as f64),
        ),
        (
            "zookeeper_ensemble_servers_up",
            "Members that answered mntr or srvr.",
            |e| Some(e.up_count() as f64),
        ),
        (
            "zookeeper_ensemble_leaders",
            "Members reporting themselves leader; a quorum ensemble must have exactly 1.",
            |e| Some(e.leaders() as f64),
        ),
        (
            "zookeeper_ensemble_zxid_spread",
            "Largest minus smallest zxid counter among members in the newest epoch: how many transactions the slowest member lags.",
            |e| e.zxid_spread().map(|s| s as f64),
        ),
    ];
    for (name, help, value) in totals {
        family(enc, name, help, MetricType::Gauge, |m| {
            for c in clusters {
                if let Some(v) = c.ensemble.as_ref().and_then(value) {
                    gauge(m, &[("cluster", c.name.as_str())], v)?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// `cluster` and `server` labels of one polled server.
type ServerLabels<'a> = [(&'a str, &'a str); 2];

/// One mntr family across all servers: kind, HELP, and series (with the
/// summary-set `key` label where there is one).
struct MntrFamily<'a> {
    kind: Kind,
    help: String,
    series: Vec<(ServerLabels<'a>, Option<String>, f64)>,
}

const MNTR_UNITS: &str = "as ZooKeeper reports it: times in milliseconds, sizes in bytes";

/// Writes the families typed from mntr keys. They are written by hand,
/// like the summaries, so that the whole mntr section can be cached per
/// collection instead of re-encoded on every scrape.
fn encode_mntr_samples(
    out: &mut String,
    clusters: &[&ClusterState],
    openmetrics: bool,
) -> fmt::Result {
    use std::fmt::Write;
    let mapped: Vec<(ServerLabels, &Mapped)> = clusters
        .iter()
        .filter_map(|c| c.ensemble.as_ref().map(|e| (c, e)))
        .flat_map(|(c, e)| {
            e.servers().filter_map(move |(server, h)| {
                let labels = [("cluster", c.name.as_str()), ("server", server)];
                h.mapped.as_ref().map(|m| (labels, m))
            })
        })
        .collect();
    let mut families: BTreeMap<&str, MntrFamily> = BTreeMap::new();
    for (labels, m) in &mapped {
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
        out.push_str("# HELP ");
        out.push_str(&family_name);
        out.push(' ');
        escape(&f.help, out);
        out.push('\n');
        writeln!(out, "# TYPE {family_name} {kind}")?;
        for (l, key, value) in &f.series {
            out.push_str(&sample_name);
            match key {
                Some(k) => write_labels(out, &[l[0], l[1], ("key", k)]),
                None => write_labels(out, l),
            }
            writeln!(out, " {value}")?;
        }
    }
    Ok(())
}

/// Escapes a label value or HELP text for both text formats.
fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn write_labels(out: &mut String, labels: &[(&str, &str)]) {
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

/// HELP text and the series of one summary family across servers.
type SummaryFamily<'a> = (String, Vec<(ServerLabels<'a>, &'a Summary)>);

/// Writes the summaries folded from mntr; `prometheus-client` has no
/// summary type, and the text of a summary is the same in both formats.
fn encode_mntr_summaries(out: &mut String, clusters: &[&ClusterState]) -> fmt::Result {
    use std::fmt::Write;
    let mut families: BTreeMap<&str, SummaryFamily> = BTreeMap::new();
    for c in clusters {
        let Some(ensemble) = &c.ensemble else {
            continue;
        };
        for (server, h) in ensemble.servers() {
            let Some(m) = &h.mapped else { continue };
            for s in &m.summaries {
                let f = families
                    .entry(s.name.as_str())
                    .or_insert_with(|| (format!("mntr {} ({MNTR_UNITS}).", s.source), Vec::new()));
                f.1.push(([("cluster", c.name.as_str()), ("server", server)], s));
            }
        }
    }
    for (name, (help, series)) in families {
        out.push_str("# HELP ");
        out.push_str(name);
        out.push(' ');
        escape(&help, out);
        out.push('\n');
        writeln!(out, "# TYPE {name} summary")?;
        for (l, s) in series {
            let mut labels: Vec<(&str, &str)> = l.to_vec();
            if let Some(k) = &s.set_key {
                labels.push(("key", k));
            }
            for (q, v) in &s.quantiles {
                let q = q.to_string();
                let mut with_q = labels.clone();
                with_q.push(("quantile", &q));
                out.push_str(name);
                write_labels(out, &with_q);
                writeln!(out, " {v}")?;
            }
            out.push_str(name);
            out.push_str("_sum");
            write_labels(out, &labels);
            writeln!(out, " {}", s.sum)?;
            out.push_str(name);
            out.push_str("_count");
            write_labels(out, &labels);
            writeln!(out, " {}", s.count)?;
        }
    }
    Ok(())
}

fn encode_discovery(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    let discovering = || {
        clusters
            .iter()
            .filter_map(|c| c.discovery.as_ref().map(|d| (c.name.as_str(), d)))
    };
    family(
        enc,
        "zookeeper_discovery_trees",
        "Trees added by discovery since start, by kind.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                gauge(
                    m,
                    &[("cluster", cluster), ("kind", "election")],
                    d.election_trees as f64,
                )?;
                gauge(
                    m,
                    &[("cluster", cluster), ("kind", "group")],
                    d.group_trees as f64,
                )?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "zookeeper_discovery_nodes_walked",
        "Nodes listed by the last discovery walk.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                gauge(m, &[("cluster", cluster)], d.nodes_walked as f64)?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "zookeeper_discovery_truncated",
        "1 if the last discovery walk stopped at max_nodes with nodes left unvisited.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                gauge(m, &[("cluster", cluster)], f64::from(u8::from(d.truncated)))?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "zookeeper_discovery_last_run_timestamp_seconds",
        "Unix time the last discovery walk finished; absent before the first.",
        MetricType::Gauge,
        |m| {
            for (cluster, d) in discovering() {
                if let Some(t) = d.last_run {
                    gauge(m, &[("cluster", cluster)], unix_seconds(t))?;
                }
            }
            Ok(())
        },
    )
}

/// Calls `f` for the master of every election whose owner session the
/// diagnostics track.
fn each_tracked_master(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 2], Liveness, &SessionTracker, i64) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        let Some(tracker) = c.liveness.as_ref().filter(|t| t.polled()) else {
            continue;
        };
        for tree in c.trees.iter().filter_map(Tree::as_elections) {
            for (path, e) in tree.elections() {
                let Some(master) = e.master().filter(|m| m.owner != 0) else {
                    continue;
                };
                // Unknown sessions get no series: no value without evidence.
                if let Some(liveness) = tracker
                    .liveness(master.owner)
                    .filter(|l| !matches!(l, Liveness::Unknown(_)))
                {
                    f(
                        &[("cluster", c.name.as_str()), ("election", path)],
                        liveness,
                        tracker,
                        master.owner,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Ghost masters: families from the diagnostics' session tracker.
fn encode_liveness(
    enc: &mut DescriptorEncoder,
    clusters: &[&ClusterState],
    now: Instant,
) -> fmt::Result {
    let wall = SystemTime::now();
    family(
        enc,
        "zookeeper_election_master_session_connected",
        "1 if the master's session holds a connection and talks; 0 for a ghost master (a complete cons round found no connection, or two rounds over 2/3 of its timeout apart saw no packet) whose node lives until the session expires; absent while unknown.",
        MetricType::Gauge,
        |m| {
            each_tracked_master(clusters, |l, live, _, _| {
                gauge(m, l, f64::from(u8::from(live.is_connected())))
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master_disconnected_seconds",
        "How long the master's session has been disconnected or silent so far; only for ghost masters.",
        MetricType::Gauge,
        |m| {
            each_tracked_master(clusters, |l, live, _, _| match live.since() {
                Some(s) => gauge(m, l, now.saturating_duration_since(s).as_secs_f64()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_master_expires_in_seconds",
        "Seconds until ZooKeeper expires a ghost master's session (from dump on the leader; only for ghost masters, absent where dump is not allowed or prints local times).",
        MetricType::Gauge,
        |m| {
            each_tracked_master(clusters, |l, live, tracker, owner| {
                match tracker
                    .expires_in(owner, wall)
                    .filter(|_| !live.is_connected())
                {
                    Some(d) => gauge(m, l, d.as_secs_f64()),
                    None => Ok(()),
                }
            })
        },
    )?;
    family(
        enc,
        "zookeeper_election_parent_watchers",
        "Sessions (other than the agent) watching the election node itself, from wchp: when it equals the candidates, every candidate watches the parent instead of its predecessor and each change wakes them all (herd effect).",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                if let Some(watchers) = &c.parent_watchers {
                    for (election, n) in watchers {
                        gauge(
                            m,
                            &[
                                ("cluster", c.name.as_str()),
                                ("election", election.as_str()),
                            ],
                            *n as f64,
                        )?;
                    }
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "zookeeper_tree_disconnected_ephemerals",
        "Ephemeral candidates or members of the tree whose owner session is disconnected or silent.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                let Some(tracker) = c.liveness.as_ref().filter(|t| t.polled()) else {
                    continue;
                };
                for tree in &c.trees {
                    let n = tree
                        .owners()
                        .into_iter()
                        .filter(|o| tracker.liveness(*o).is_some_and(Liveness::is_ghost))
                        .count();
                    gauge(
                        m,
                        &[
                            ("cluster", c.name.as_str()),
                            ("tree", tree.pattern().as_str()),
                        ],
                        n as f64,
                    )?;
                }
            }
            Ok(())
        },
    )
}

/// Calls `f` with the labels and figures of every cluster running the canary.
fn each_probe(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&[(&str, &str); 1], &crate::model::ProbeStats) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        if let Some(p) = &c.probe {
            f(&[("cluster", c.name.as_str())], p)?;
        }
    }
    Ok(())
}

/// The failover canary's families.
fn encode_probe(enc: &mut DescriptorEncoder, clusters: &[&ClusterState]) -> fmt::Result {
    family(
        enc,
        "zookeeper_probe_failover_seconds",
        "Failover canary: from closing the probe master's session until the standby is notified and sees itself master. The best-case switch time of any election on this ensemble.",
        MetricType::Histogram,
        |m| each_probe(clusters, |l, p| histogram(m, l, &p.failover)),
    )?;
    family(
        enc,
        "zookeeper_probe_ephemeral_expiry_seconds",
        "Failover canary: from abandoning the probe master's session (as a crash would) until the standby sees itself master: how long a crashed master stays in place.",
        MetricType::Histogram,
        |m| each_probe(clusters, |l, p| histogram(m, l, &p.expiry)),
    )?;
    family(
        enc,
        "zookeeper_probe_errors",
        "Failover canary rounds that failed (no rights under the probe path, timeouts, connection trouble); logged once per distinct error.",
        MetricType::Counter,
        |m| each_probe(clusters, |l, p| counter(m, l, p.errors)),
    )
}
