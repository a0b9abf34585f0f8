//! Four-letter-word sources: the bounded TCP exchange ([`client`]), the
//! AdminServer fallback ([`admin`]), the per-cluster [`poller`] that
//! collects every member on scrape, and the [`ghost`] rounds of `cons` and
//! `dump` that feed ghost-master detection. Replies enter the models here.

pub mod admin;
pub mod client;
pub mod ghost;
pub mod poller;

use std::time::{Duration, Instant};

use crate::fourlw::{Command, interpret};
use crate::model::ensemble::Exchange;

/// One bounded exchange of `command` with `server`, parsed.
pub async fn ask(server: &str, command: Command, timeout: Duration) -> Exchange {
    let started = Instant::now();
    let result = match client::exchange(server, command.name(), timeout).await {
        Ok(raw) => interpret(command, &raw),
        Err(failure) => Err(failure),
    };
    Exchange {
        command,
        duration: started.elapsed(),
        result,
    }
}
