//! Families of the agent's Kerberos ticket (clusters using SASL GSSAPI).

use std::fmt;
use std::time::SystemTime;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ClusterState;
use crate::model::kerberos::{Credentials, Reason};

/// Calls `f` with the labels and ticket of every cluster using GSSAPI.
fn each(
    clusters: &[&ClusterState],
    mut f: impl FnMut(&Labels, &Credentials) -> fmt::Result,
) -> fmt::Result {
    for c in clusters {
        if let Some(k) = c.kerberos() {
            f(&Labels::new("ensemble", c.name()), &k.now())?;
        }
    }
    Ok(())
}

/// A gauge family of one moment per cluster, absent where there is none.
fn timestamp(
    enc: &mut DescriptorEncoder,
    clusters: &[&ClusterState],
    name: &str,
    help: &str,
    at: impl Fn(&Credentials) -> Option<SystemTime>,
) -> fmt::Result {
    family(enc, name, help, MetricType::Gauge, |m| {
        each(clusters, |l, k| match at(k) {
            Some(t) => gauge(m, l, unix_seconds(t)),
            None => Ok(()),
        })
    })
}

pub(super) fn encode_kerberos(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    // Only agents that use Kerberos show its families.
    if clusters.iter().all(|c| c.kerberos().is_none()) {
        return Ok(());
    }
    family(
        enc,
        names::KERBEROS_TICKET_OK,
        "1 when the agent's last Kerberos check got its ticket and a service ticket for every server; 0 when it failed (the reason is on /ready and in zookeeper_session_kerberos_errors_total). Absent before the first check.",
        MetricType::Gauge,
        |m| {
            each(clusters, |l, k| {
                if k.last_success.is_none() && k.failing.is_none() {
                    return Ok(());
                }
                gauge(m, l, f64::from(u8::from(k.failing.is_none())))
            })
        },
    )?;
    timestamp(
        enc,
        clusters,
        names::KERBEROS_TICKET_EXPIRY,
        "When the agent's Kerberos ticket (its ticket-granting ticket) expires, as of the last successful check; a keytab's ticket is renewed before then.",
        |k| k.expires,
    )?;
    timestamp(
        enc,
        clusters,
        names::KERBEROS_TICKET_FIRST_SEEN,
        "When a check first saw the agent's current ticket (its expiry): about when it was issued after a renewal, the agent's first check otherwise. The expiry minus this is the part of the ticket's life the agent has seen.",
        |k| k.first_seen,
    )?;
    timestamp(
        enc,
        clusters,
        names::KERBEROS_LAST_CHECK_SUCCESS,
        "When a Kerberos check last got the agent's ticket.",
        |k| k.last_success,
    )?;
    family(
        enc,
        names::KERBEROS_RENEWALS,
        "Times a check found a later ticket expiry than the check before (by more than 2 s): the ticket was renewed.",
        MetricType::Counter,
        |m| each(clusters, |l, k| counter(m, l, k.renewals)),
    )?;
    family(
        enc,
        names::KERBEROS_ERRORS,
        "Failed Kerberos checks by reason (no_ticket, ticket_expired, wrong_keytab, no_key_in_keytab, clock_skew, unknown_principal, unknown_service, kdc_unreachable, other); each is retried with backoff.",
        MetricType::Counter,
        |m| {
            each(clusters, |l, k| {
                for r in Reason::ALL {
                    let v = k.errors.get(&r).copied().unwrap_or(0);
                    counter(m, &(*l).with("reason", r.label()), v)?;
                }
                Ok(())
            })
        },
    )
}
