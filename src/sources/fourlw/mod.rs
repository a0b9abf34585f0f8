//! Four-letter-word sources: the bounded TCP exchange ([`client`]), the
//! AdminServer fallback ([`admin`]), the per-cluster [`poller`] that
//! collects every member on scrape, and the [`ghost`] rounds of `cons` and
//! `dump` that feed ghost-master detection. Replies enter the models here.

pub(crate) mod admin;
pub(crate) mod client;
pub(crate) mod ghost;
pub(crate) mod poller;

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing::warn;

use crate::fourlw::{Command, interpret_detailed};
use crate::model::ensemble::Exchange;

/// Unreadable replies already logged, by server, command and parser message.
static UNREADABLE_LOGGED: Mutex<Option<HashSet<(String, Command, String)>>> = Mutex::new(None);
/// Distinct unreadable replies logged at most, so a server sending ever new
/// garbage cannot grow the set (they are counted all the same).
const UNREADABLE_LOG_LIMIT: usize = 1000;

/// Logs a reply the parser could not read, once per server, command and
/// reason; the `parse` error counter counts every one.
fn log_unreadable(server: &str, command: Command, detail: &str) {
    let mut logged = UNREADABLE_LOGGED.lock().unwrap_or_else(|p| p.into_inner());
    let logged = logged.get_or_insert_with(HashSet::new);
    if logged.len() < UNREADABLE_LOG_LIMIT
        && logged.insert((server.to_owned(), command, detail.to_owned()))
    {
        warn!(
            server,
            "cannot read the `{}` reply: {detail}; counted in zookeeper_fourlw_errors_total{{reason=\"parse\"}}",
            command.name()
        );
    }
}

/// One bounded exchange of `command` with `server`, parsed.
pub async fn ask(
    server: &str,
    command: Command,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
) -> Exchange {
    let started = Instant::now();
    let result = match client::exchange(server, command.name(), timeout, tls).await {
        Ok(raw) => interpret_detailed(command, &raw).map_err(|(failure, detail)| {
            if let Some(detail) = detail {
                log_unreadable(server, command, &detail.0);
            }
            failure
        }),
        Err(failure) => Err(failure),
    };
    Exchange {
        command,
        duration: started.elapsed(),
        result,
    }
}
