//! Health of the four-letter-word exchanges themselves.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::ensemble::{Polled, each_server};
use super::{Scrape, names};
use crate::fourlw::Failure;
use crate::model::ensemble::Exchange;

/// Calls `f` with the labels (with `command`) and the last exchange of
/// every command of every polled server.
fn each_exchange(
    polled: &[Polled],
    mut f: impl FnMut(&Labels, &Exchange) -> fmt::Result,
) -> fmt::Result {
    each_server(polled, |l, h| {
        h.last
            .iter()
            .try_for_each(|(command, e)| f(&l.with("command", command.name()), e))
    })
}

pub(super) fn encode_fourlw_health(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let polled = &s.polled;
    family(
        enc,
        names::FOURLW_UP,
        "1 if the command got a usable reply in the last collection.",
        MetricType::Gauge,
        |m| {
            each_exchange(polled, |l, e| {
                gauge(m, l, f64::from(u8::from(e.result.is_ok())))
            })
        },
    )?;
    family(
        enc,
        names::FOURLW_DURATION_SECONDS,
        "Duration of the command's last exchange (connect, write, read), bounded by the timeout.",
        MetricType::Gauge,
        |m| each_exchange(polled, |l, e| gauge(m, l, e.duration.as_secs_f64())),
    )?;
    family(
        enc,
        names::FOURLW_ERRORS,
        "Failed exchanges by reason: timeout, connect, not_allowed (whitelist), not_serving (no quorum), parse, tls (handshake failed: untrusted or misnamed certificate, client certificate refused).",
        MetricType::Counter,
        |m| {
            each_server(polled, |l, h| {
                for command in h.last.keys() {
                    for reason in Failure::ALL {
                        let n = h.errors.get(&(*command, reason)).copied().unwrap_or(0);
                        counter(
                            m,
                            &l.with("command", command.name())
                                .with("reason", reason.label()),
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
        names::FOURLW_SKIPPED_LINES,
        "Lines of mntr replies skipped because their key or value cannot be exported (labels, odd characters).",
        MetricType::Counter,
        |m| each_server(polled, |l, h| counter(m, l, h.skipped_lines)),
    )
}
