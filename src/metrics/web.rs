//! Families about the HTTP server: connections against the cap, why it
//! closed some, refused credentials and web-config reloads.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::names;
use crate::model::web::WebStats;

/// Registered beside the cluster collector when the agent serves HTTP.
#[derive(Debug)]
pub(super) struct WebCollector {
    pub stats: Arc<WebStats>,
}

impl Collector for WebCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = self.stats.snapshot();
        let none: [(&str, &str); 0] = [];
        let gauges: [(&str, &str, f64); 4] = [
            (
                names::HTTP_CONNECTIONS,
                "HTTP connections open now (TLS handshakes included).",
                s.open as f64,
            ),
            (
                names::HTTP_CONNECTION_LIMIT,
                "Open HTTP connections at most: web.max_connections, lowered to fit the open-files limit. At the limit the longest-idle connection is closed for a new one.",
                s.limit as f64,
            ),
            (
                names::HTTP_TLS_ENABLED,
                "1 when the web config in force serves TLS.",
                f64::from(u8::from(s.tls)),
            ),
            (
                names::WEB_CONFIG_LAST_RELOAD_SUCCESSFUL,
                "0 when the last change to --web.config.file (or a file it names) could not be loaded; the previous config stays in force.",
                f64::from(u8::from(s.last_reload_ok)),
            ),
        ];
        for (name, help, value) in gauges {
            family(&mut enc, name, help, MetricType::Gauge, |m| {
                gauge(m, &none, value)
            })?;
        }
        let counters: [(&str, &str, u64); 4] = [
            (
                names::HTTP_CONNECTIONS_ACCEPTED,
                "HTTP connections accepted.",
                s.accepted,
            ),
            (
                names::HTTP_ACCEPT_ERRORS,
                "Failed accepts (out of file descriptors, mostly); idle connections are closed to make room.",
                s.accept_errors,
            ),
            (
                names::HTTP_UNAUTHORIZED,
                "Requests refused with 401: no or wrong basic-auth credentials.",
                s.unauthorized,
            ),
            (
                names::HTTP_PANICS,
                "Requests whose handler panicked (a bug in the agent): answered 500, logged with the place, the connection released.",
                s.panics,
            ),
        ];
        for (name, help, value) in counters {
            family(&mut enc, name, help, MetricType::Counter, |m| {
                counter(m, &none, value)
            })?;
        }
        family(
            &mut enc,
            names::HTTP_CONNECTIONS_CLOSED,
            "HTTP connections the server closed, by reason: idle_timeout, header_timeout (slow request or handshake), write_timeout (client stopped reading), evicted (idle, to make room under the cap), tls_handshake_failed.",
            MetricType::Counter,
            |m| {
                for (why, n) in s.closed {
                    counter(m, &Labels::new("reason", why.label()), n)?;
                }
                Ok(())
            },
        )?;
        family(
            &mut enc,
            names::WEB_CONFIG_RELOADS,
            "Reloads of --web.config.file after it or a file it names changed, by result (success, failure).",
            MetricType::Counter,
            |m| {
                counter(m, &Labels::new("result", "success"), s.reloads_ok)?;
                counter(m, &Labels::new("result", "failure"), s.reloads_failed)
            },
        )
    }
}
