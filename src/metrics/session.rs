//! Families of the agent's own ZooKeeper session.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
use crate::model::session::SessionState;

pub(super) fn encode_sessions(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    family(
        enc,
        names::SESSION_STATE,
        "State of the agent's ZooKeeper session: 1 for the current state.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                for s in SessionState::ALL {
                    let v = f64::from(u8::from(c.session().state == s));
                    gauge(
                        m,
                        &Labels::new("ensemble", c.name()).with("state", s.label()),
                        v,
                    )?;
                }
            }
            Ok(())
        },
    )?;
    type Count = fn(&ClusterState) -> u64;
    let counters: [(&str, &str, Count); 3] = [
        (
            names::SESSION_RECONNECTS,
            "Times the agent's session reconnected after a disconnect.",
            |c| c.session().reconnects,
        ),
        (
            names::SESSION_EXPIRATIONS,
            "Times the agent's session expired (a new one is then built).",
            |c| c.session().expirations,
        ),
        (
            names::SESSION_CONNECT_FAILURES,
            "Failed attempts to establish a session (servers unreachable, auth failed).",
            |c| c.session().connect_failures,
        ),
    ];
    for (name, help, value) in counters {
        family(enc, name, help, MetricType::Counter, |m| {
            for c in clusters {
                counter(m, &Labels::new("ensemble", c.name()), value(c))?;
            }
            Ok(())
        })?;
    }
    family(
        enc,
        names::SESSION_TIMEOUT_SECONDS,
        "Session timeout negotiated with the server.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                if let Some(t) = c.session().timeout {
                    gauge(m, &Labels::new("ensemble", c.name()), t.as_secs_f64())?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::SESSION_REQUEST_DURATION_SECONDS,
        "Round trips of the agent's own requests: op=read is a periodic probe, op=multi_read the batched tree reads.",
        MetricType::Histogram,
        |m| {
            for c in clusters {
                for (op, h) in c.session().latency() {
                    histogram(m, &Labels::new("ensemble", c.name()).with("op", op), h)?;
                }
            }
            Ok(())
        },
    )
}
