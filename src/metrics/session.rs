//! Families of the agent's own ZooKeeper session.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::Scrape;
use super::encode::*;
use crate::model::ClusterState;
use crate::model::session::SessionState;

pub(super) fn encode_sessions(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
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
