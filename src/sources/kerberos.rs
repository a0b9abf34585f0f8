//! The agent's Kerberos ticket, as the edge that talks to GSSAPI and the
//! KDC.
//!
//! The client library authenticates each connection with GSSAPI's
//! *default* credential, which MIT krb5 finds per process: the cache named
//! by `KRB5CCNAME` and, when that holds no valid ticket, the client keytab
//! named by `KRB5_CLIENT_KTNAME`, from which it gets a new ticket by itself
//! (and again once half of a ticket's life has passed). So
//! [`prepare_process`] sets those up once, before any thread runs; a keytab
//! gets a private in-memory cache so that the agent neither reads nor
//! overwrites anybody's `/tmp/krb5cc_*`, and works on a read-only root.
//!
//! [`check`] then does what a connection will do, up front and with the
//! configured principal: acquire the credential and ask a service ticket
//! for each server. It runs before every connect (a failure is explained
//! instead of the library's "no hosts") and every minute or so while a
//! session runs, which both reports the ticket's expiry and makes MIT renew
//! it from the keytab before a reconnect needs it. The session itself does
//! not depend on the ticket once authenticated: ZooKeeper checks it at
//! connect only, so a renewal never drops the session or its watches.

use std::time::{Duration, SystemTime};

use tracing::{debug, info, warn};

use crate::model::backoff::Backoff;

use crate::config::ClusterConfig;
use crate::config::kerberos::{Kerberos, KerberosIdentity, TicketSource};
use crate::model::SharedCluster;
use crate::model::kerberos::{Failure, Mode, Reason, Subject, classify, explain};

/// The in-memory cache a keytab's tickets live in (per process).
pub const MEMORY_CACHE: &str = "MEMORY:zk-election-exporter";

/// How long one check may take: MIT's own KDC timeouts are shorter, so
/// this bounds only a hung resolver or KDC.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment GSSAPI reads for `identity`, as (name, value).
pub fn environment(identity: &KerberosIdentity) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    if let Some(conf) = &identity.krb5_conf {
        env.push(("KRB5_CONFIG", conf.display().to_string()));
    }
    match &identity.source {
        TicketSource::Keytab(keytab) => {
            env.push(("KRB5_CLIENT_KTNAME", keytab.display().to_string()));
            env.push(("KRB5CCNAME", MEMORY_CACHE.to_owned()));
        }
        TicketSource::Cache(cache) => env.push(("KRB5CCNAME", cache.clone())),
        TicketSource::Environment => {}
    }
    env
}

/// Points GSSAPI at `identity`'s krb5.conf, keytab or cache.
///
/// # Safety
/// Changes the process environment: call it while the process has a
/// single thread (before the async runtime starts), as `main` does.
pub unsafe fn prepare_process(identity: &KerberosIdentity) -> Vec<(&'static str, String)> {
    let env = environment(identity);
    for (name, value) in &env {
        // SAFETY: the caller guarantees no other thread reads or writes
        // the environment meanwhile.
        unsafe { std::env::set_var(name, value) };
    }
    env
}

/// What the messages about `k`'s ticket name.
pub fn subject(k: &KerberosIdentity) -> Subject {
    Subject {
        principal: k.principal_label(),
        source: k.source_label(),
        mode: match k.source {
            TicketSource::Keytab(_) => Mode::Keytab,
            TicketSource::Cache(_) | TicketSource::Environment => Mode::Cache,
        },
        krb5_conf: k
            .krb5_conf
            .as_ref()
            .map(|p| p.display().to_string())
            .or_else(|| std::env::var("KRB5_CONFIG").ok())
            .unwrap_or_else(|| "/etc/krb5.conf".to_owned()),
    }
}

/// A check that got a ticket.
#[derive(Debug, Clone)]
pub struct Checked {
    /// When the ticket-granting ticket expires.
    pub expires: SystemTime,
    /// Servers whose service ticket could not be had, explained (the
    /// others can still be connected to).
    pub unusable: Vec<Failure>,
}

/// What GSSAPI said: its minor status and its words.
#[derive(Debug, Clone)]
struct GssError {
    minor: u32,
    text: String,
}

/// Gets (or renews) the ticket and a service ticket for each of
/// `servers`; fails when the ticket or every service ticket cannot be had.
pub async fn check(k: &Kerberos, servers: &[String]) -> Result<Checked, Failure> {
    let mut services: Vec<String> = servers.iter().map(|s| k.service_for(s)).collect();
    services.sort();
    services.dedup();
    let principal = k.identity.principal.clone();
    let subject = subject(&k.identity);
    let fail = |reason, service: &str, detail: &str| Failure {
        reason,
        message: explain(reason, &subject, service, detail),
    };
    let wanted = services.clone();
    let run = tokio::task::spawn_blocking(move || gss::check(principal.as_deref(), &wanted));
    let first = services.first().cloned().unwrap_or_default();
    let (expires, failed) = match tokio::time::timeout(CHECK_TIMEOUT, run).await {
        Err(_) => {
            return Err(fail(
                Reason::KdcUnreachable,
                &first,
                &format!("no answer within {}s", CHECK_TIMEOUT.as_secs()),
            ));
        }
        Ok(Err(e)) => return Err(fail(Reason::Other, &first, &e.to_string())),
        Ok(Ok(Err((service, e)))) => {
            return Err(fail(classify(e.minor, subject.mode), &service, &e.text));
        }
        Ok(Ok(Ok(done))) => done,
    };
    Ok(Checked {
        expires,
        unusable: failed
            .into_iter()
            .map(|(service, e)| fail(classify(e.minor, subject.mode), &service, &e.text))
            .collect(),
    })
}

/// Checks the ticket before a connect and records the outcome; `Err` is
/// the one line to report instead of connecting.
pub async fn before_connect(cfg: &ClusterConfig, state: &SharedCluster) -> Result<(), String> {
    let Some(k) = cfg.auth.as_ref().and_then(crate::config::Auth::kerberos) else {
        return Ok(());
    };
    record(cfg, state, check(k, &cfg.servers).await)
        .map(drop)
        .map_err(|f| f.message)
}

/// While a session runs: checks the ticket again and again (renewing it
/// through MIT's keytab refresh before a reconnect needs it), every quarter
/// of its remaining life, at least every minute and at most every 5 s;
/// after a failure, with capped backoff. Never returns.
pub async fn keep(cfg: &ClusterConfig, state: &SharedCluster) {
    let Some(k) = cfg.auth.as_ref().and_then(crate::config::Auth::kerberos) else {
        return std::future::pending().await;
    };
    let mut retry = Backoff::new(RETRY_START, RECHECK_MAX);
    let expires = state.kerberos_feed().and_then(|k| k.now().expires);
    let mut next = expires
        .and_then(|e| e.duration_since(SystemTime::now()).ok())
        .map_or(RECHECK_MIN, |remaining| {
            (remaining / 4).clamp(RECHECK_MIN, RECHECK_MAX)
        });
    loop {
        tokio::time::sleep(next).await;
        next = match record(cfg, state, check(k, &cfg.servers).await) {
            Ok(remaining) => {
                retry.reset();
                (remaining / 4).clamp(RECHECK_MIN, RECHECK_MAX)
            }
            Err(_) => retry.next_delay(),
        };
    }
}

const RECHECK_MIN: Duration = Duration::from_secs(5);
const RECHECK_MAX: Duration = Duration::from_secs(60);
const RETRY_START: Duration = Duration::from_secs(5);

/// Records a check in the cluster's model and logs what begins or ends;
/// on success, the ticket's remaining life.
fn record(
    cfg: &ClusterConfig,
    state: &SharedCluster,
    checked: Result<Checked, Failure>,
) -> Result<Duration, Failure> {
    let now = SystemTime::now();
    // Made with the cluster's models when its auth is Kerberos.
    let feed = state.kerberos_feed().unwrap_or_default();
    let was_failing = feed.now().failing.is_some();
    match checked {
        Ok(c) => {
            let unusable = !c.unusable.is_empty();
            for f in feed.succeeded(c.expires, c.unusable, now) {
                warn!(cluster = %cfg.name, reason = f.reason.label(), "{}", f.message);
            }
            if was_failing && !unusable {
                info!(cluster = %cfg.name, "Kerberos: the agent has a ticket again");
            }
            Ok(c.expires.duration_since(now).unwrap_or_default())
        }
        Err(f) => {
            if feed.failed(f.clone(), now) {
                warn!(cluster = %cfg.name, reason = f.reason.label(), "{}; retrying with backoff", f.message);
            } else {
                debug!(cluster = %cfg.name, reason = f.reason.label(), "{}", f.message);
            }
            Err(f)
        }
    }
}

/// GSSAPI's words without its generic major-status preamble.
#[cfg_attr(not(feature = "kerberos"), allow(dead_code))]
fn minor_text(display: &str) -> String {
    match (display.find(" ("), display.strip_suffix(')')) {
        (Some(i), Some(_)) => display[i + 2..display.len() - 1].to_owned(),
        _ => display.to_owned(),
    }
}

#[cfg(feature = "kerberos")]
mod gss {
    use std::time::SystemTime;

    use libgssapi::context::{ClientCtx, CtxFlags};
    use libgssapi::credential::{Cred, CredUsage};
    use libgssapi::name::Name;
    use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL, OidSet};

    use super::{GssError, minor_text};
    use crate::model::kerberos::expiry;

    fn error(e: libgssapi::error::Error) -> GssError {
        GssError {
            minor: e.minor,
            text: minor_text(&e.to_string()),
        }
    }

    fn acquire(principal: Option<&str>) -> Result<Cred, GssError> {
        let name = principal
            .map(|p| Name::new(p.as_bytes(), Some(&GSS_NT_KRB5_PRINCIPAL)))
            .transpose()
            .map_err(error)?;
        let mut krb5 = OidSet::new().map_err(error)?;
        krb5.add(&GSS_MECH_KRB5).map_err(error)?;
        Cred::acquire(name.as_ref(), None, CredUsage::Initiate, Some(&krb5)).map_err(error)
    }

    /// The first token of a context with `service`: it needs the ticket
    /// (got from the keytab now if the cache has none) and a service
    /// ticket from the KDC, as the session's handshake will.
    fn service_ticket(principal: Option<&str>, service: &str) -> Result<(), GssError> {
        let cred = acquire(principal)?;
        let target =
            Name::new(service.as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE)).map_err(error)?;
        let mut ctx = ClientCtx::new(
            Some(cred),
            target,
            CtxFlags::GSS_C_MUTUAL_FLAG,
            Some(&GSS_MECH_KRB5),
        );
        ctx.step(None, None).map(drop).map_err(error)
    }

    /// When the ticket expires, and the services whose ticket failed; an
    /// error when none could be had (with the service it names).
    #[allow(clippy::type_complexity)]
    pub(super) fn check(
        principal: Option<&str>,
        services: &[String],
    ) -> Result<(SystemTime, Vec<(String, GssError)>), (String, GssError)> {
        let mut failed = Vec::new();
        for service in services {
            if let Err(e) = service_ticket(principal, service) {
                failed.push((service.clone(), e));
            }
        }
        if failed.len() == services.len() && !failed.is_empty() {
            return Err(failed.swap_remove(0));
        }
        let lifetime = acquire(principal)
            .and_then(|c| c.lifetime().map_err(error))
            .map_err(|e| (services.first().cloned().unwrap_or_default(), e))?;
        // Read at once: the life is whole seconds from the second krb5
        // just read (see `expiry`).
        Ok((expiry(SystemTime::now(), lifetime), failed))
    }
}

#[cfg(not(feature = "kerberos"))]
mod gss {
    use std::time::SystemTime;

    use super::GssError;

    /// Never reached: configuration refuses GSSAPI in such a build.
    #[allow(clippy::type_complexity)]
    pub(super) fn check(
        _principal: Option<&str>,
        services: &[String],
    ) -> Result<(SystemTime, Vec<(String, GssError)>), (String, GssError)> {
        Err((
            services.first().cloned().unwrap_or_default(),
            GssError {
                minor: 0,
                text: "this build has no Kerberos support".to_owned(),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gssapi_words_lose_the_major_preamble() {
        assert_eq!(
            minor_text(
                "Unspecified GSS failure.  Minor code may provide more information (Ticket expired)"
            ),
            "Ticket expired"
        );
        assert_eq!(
            minor_text(
                "No credentials were supplied (Can't find client principal a@R in cache collection)"
            ),
            "Can't find client principal a@R in cache collection"
        );
        assert_eq!(minor_text("plain"), "plain");
    }

    #[test]
    fn a_keytab_gets_a_private_memory_cache() {
        let id = KerberosIdentity {
            principal: Some("agent@R".into()),
            source: TicketSource::Keytab("/etc/agent.keytab".into()),
            krb5_conf: Some("/etc/zk/krb5.conf".into()),
        };
        assert_eq!(
            environment(&id),
            vec![
                ("KRB5_CONFIG", "/etc/zk/krb5.conf".to_owned()),
                ("KRB5_CLIENT_KTNAME", "/etc/agent.keytab".to_owned()),
                ("KRB5CCNAME", MEMORY_CACHE.to_owned()),
            ]
        );
        let cache = KerberosIdentity {
            principal: None,
            source: TicketSource::Cache("FILE:/run/cc".into()),
            krb5_conf: None,
        };
        assert_eq!(
            environment(&cache),
            vec![("KRB5CCNAME", "FILE:/run/cc".to_owned())]
        );
    }
}
