//! Families of the ensemble model from four-letter words: one series per
//! member, and the figures derived across members.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::fourlw::parse::{Conf, Role, Srvr, Wchs};
use crate::model::ClusterState;
use crate::model::cluster::EnsembleReadings;
use crate::model::ensemble::{Ensemble, ServerHealth};

/// One cluster's name and its ensemble's readings, taken once per scrape
/// so that every family of it shows the same collection.
pub(crate) struct Polled<'a> {
    pub name: &'a str,
    pub readings: std::sync::Arc<EnsembleReadings>,
}

impl<'a> Polled<'a> {
    pub fn of(clusters: &[&'a ClusterState]) -> Vec<Self> {
        clusters
            .iter()
            .map(|c| Polled {
                name: c.name(),
                readings: c.ensemble().now(),
            })
            .collect()
    }

    fn replies(&self) -> Option<&Ensemble> {
        self.readings.replies.as_ref()
    }
}

/// Calls `f` with the labels and health of every polled server.
pub(super) fn each_server(
    polled: &[Polled],
    mut f: impl FnMut(&Labels, &ServerHealth) -> fmt::Result,
) -> fmt::Result {
    for p in polled {
        if let Some(ensemble) = p.replies() {
            for (server, health) in ensemble.servers() {
                f(
                    &Labels::new("ensemble", p.name).with("server", server),
                    health,
                )?;
            }
        }
    }
    Ok(())
}

pub(super) fn encode_ensembles(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let polled = &s.polled;
    family(
        enc,
        names::UP,
        "1 if the server answered mntr or srvr (four-letter words) in the last collection, 0 if it refused, timed out or failed otherwise; absent while only TLS handshakes failed (nothing verified: see zookeeper_fourlw_errors_total{reason=\"tls\"}).",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                if h.unverified() {
                    return Ok(());
                }
                gauge(m, l, f64::from(u8::from(h.up())))
            })
        },
    )?;
    family(
        enc,
        names::RUOK,
        "1 if the server answered ruok with imok; absent when ruok is not polled.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                h.ruok()
                    .map_or(Ok(()), |ok| gauge(m, l, f64::from(u8::from(ok))))
            })
        },
    )?;
    family(
        enc,
        names::SERVER_NOT_SERVING,
        "1 if the server answered but refused clients as not currently serving requests (starting, syncing or without quorum), 0 while it serves; absent when it answered nothing.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                h.not_serving()
                    .map_or(Ok(()), |n| gauge(m, l, f64::from(u8::from(n))))
            })
        },
    )?;
    family(
        enc,
        names::SERVER_STATE,
        "Role of the server (mntr zk_server_state or srvr Mode): 1 for the current state.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| match h.role().filter(|_| h.up()) {
                Some(role) => {
                    for state in Role::ALL {
                        let v = f64::from(u8::from(state == role));
                        gauge(m, &l.with("state", state.label()), v)?;
                    }
                    Ok(())
                }
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::SERVER_LEADER,
        "1 if the server is the ensemble leader, else 0.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| match h.role().filter(|_| h.up()) {
                Some(role) => gauge(m, l, f64::from(u8::from(role == Role::Leader))),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::SERVER_INFO,
        "ZooKeeper version of the server; always 1.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                h.version()
                    .map_or(Ok(()), |v| gauge(m, &l.with("version", v), 1.0))
            })
        },
    )?;
    type SrvrValue = fn(&Srvr) -> Option<u64>;
    let srvr: [(&str, &str, SrvrValue); 3] = [
        (
            names::ZXID_EPOCH,
            "Epoch of the last processed zxid (its high 32 bits), from srvr; it grows with every leader election.",
            Srvr::zxid_epoch,
        ),
        (
            names::ZXID_COUNTER,
            "Transaction counter of the last processed zxid (its low 32 bits), from srvr; near 2^32 (4294967296) the ensemble forces a leader election.",
            Srvr::zxid_counter,
        ),
        (
            names::NODE_COUNT,
            "Znodes in the server's data tree, from srvr.",
            |s| s.node_count,
        ),
    ];
    for (name, help, value) in srvr {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(polled, |l, h| match h.srvr().and_then(value) {
                Some(v) => gauge(m, l, v as f64),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        names::READ_ONLY,
        "1 if the server is in read-only mode (isro answered ro), 0 for rw; absent when it cannot say.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                h.read_only()
                    .map_or(Ok(()), |ro| gauge(m, l, f64::from(u8::from(ro))))
            })
        },
    )?;
    type ConfValue = fn(&Conf) -> Option<f64>;
    let conf: [(&str, &str, ConfValue); 3] = [
        (
            names::CONFIG_TICK_TIME_SECONDS,
            "tickTime from conf, in seconds.",
            Conf::tick_time_ms,
        ),
        (
            names::CONFIG_MIN_SESSION_TIMEOUT_SECONDS,
            "minSessionTimeout from conf, in seconds: the shortest session timeout the server grants.",
            Conf::min_session_timeout_ms,
        ),
        (
            names::CONFIG_MAX_SESSION_TIMEOUT_SECONDS,
            "maxSessionTimeout from conf, in seconds: the longest session timeout the server grants.",
            Conf::max_session_timeout_ms,
        ),
    ];
    for (name, help, value) in conf {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(polled, |l, h| match h.conf().and_then(value) {
                Some(ms) => gauge(m, l, ms / 1000.0),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        names::CONFIG_INFO,
        "The server's id (serverId from conf); always 1.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| match h.conf().and_then(Conf::server_id) {
                Some(id) => gauge(m, &l.with("server_id", id), 1.0),
                None => Ok(()),
            })
        },
    )
}

/// Families of the opt-in commands: wchs, cons and envi.
pub(super) fn encode_optional_commands(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let polled = &s.polled;
    type WchsValue = fn(&Wchs) -> u64;
    let wchs: [(&str, &str, WchsValue); 3] = [
        (
            names::WCHS_CONNECTIONS,
            "Connections holding watches, from wchs.",
            |w| w.connections,
        ),
        (names::WCHS_PATHS, "Paths being watched, from wchs.", |w| {
            w.paths
        }),
        (
            names::WCHS_WATCHES,
            "Watches set on the server, from wchs.",
            |w| w.watches,
        ),
    ];
    for (name, help, value) in wchs {
        family(enc, name, help, MetricType::Gauge, |m| {
            each_server(polled, |l, h| match h.wchs() {
                Some(w) => gauge(m, l, value(w) as f64),
                None => Ok(()),
            })
        })?;
    }
    family(
        enc,
        names::CONS_CONNECTIONS,
        "Client connections listed by cons.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| {
                h.cons().map_or(Ok(()), |c| gauge(m, l, c.len() as f64))
            })
        },
    )?;
    family(
        enc,
        names::SERVER_JAVA_INFO,
        "Java runtime of the server, from envi; always 1.",
        MetricType::Gauge,
        |m| {
            each_server(polled, |l, h| match h.envi() {
                Some(env) => {
                    let get = |k: &str| env.get(k).map_or("", String::as_str);
                    gauge(
                        m,
                        &l.with("java_version", get("java.version"))
                            .with("java_vendor", get("java.vendor")),
                        1.0,
                    )
                }
                None => Ok(()),
            })
        },
    )
}

pub(super) fn encode_ensemble_totals(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let polled = &s.polled;
    type Total = fn(&Ensemble) -> Option<f64>;
    let totals: [(&str, &str, Total); 5] = [
        (
            names::ENSEMBLE_SERVERS,
            "Members polled: configured servers plus members published in /zookeeper/config.",
            |e| Some(e.len() as f64),
        ),
        (
            names::ENSEMBLE_SERVERS_UP,
            "Members that answered mntr or srvr.",
            |e| Some(e.up_count() as f64),
        ),
        (
            names::ENSEMBLE_SERVERS_UNVERIFIED,
            "Members whose TLS handshake failed: neither up nor down as far as the agent can tell. Quorum rules count them as possibly up.",
            |e| Some(e.unverified_count() as f64),
        ),
        (
            names::ENSEMBLE_LEADERS,
            "Members reporting themselves leader; a quorum ensemble must have exactly 1.",
            |e| Some(e.leaders() as f64),
        ),
        (
            names::ENSEMBLE_ZXID_SPREAD,
            "Largest minus smallest zxid counter among members in the newest epoch: how many transactions the slowest member lags.",
            |e| e.zxid_spread().map(|s| s as f64),
        ),
    ];
    for (name, help, value) in totals {
        family(enc, name, help, MetricType::Gauge, |m| {
            for p in polled {
                if let Some(v) = p.replies().and_then(value) {
                    gauge(m, &Labels::new("ensemble", p.name), v)?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}
