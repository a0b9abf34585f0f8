//! The ghost-master check (`[clusters.ghost_check]`): every `cons_interval`, `cons` and `dump` from
//! every member feed the session tracker, so an election whose master's
//! session is gone (or silent) is visible long before ZooKeeper expires it.
//!
//! This runs on its own schedule, not on scrape: "silent" means a
//! connection's received-packet count did not move between two rounds far
//! enough apart, which needs rounds at a known pace. With `cons_interval =
//! "auto"` the pace follows the shortest session timeout among watched
//! owners ([`auto_interval`]). `cons` lists every connection of a server
//! and can be large on a busy one; it is read with the same bounded client
//! as every four-letter word (at most 16 MiB, within `timeout`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::watch;
use tracing::warn;

use super::ask;
use super::client::{self, Flow};
use crate::config::ConsInterval;
use crate::fourlw::parse::{self, Refusal};
use crate::fourlw::{Command, Failure, Reply};
use crate::model::Now;
use crate::model::SharedCluster;
use crate::model::ensemble::Exchange;
use crate::model::ensemble::ServerPoll;
use crate::model::ghost::{Round, auto_interval, round_complete};

/// What the ghost check polls, and how.
#[derive(Debug, Clone)]
pub struct GhostCheck {
    pub cluster: String,
    pub servers: Vec<String>,
    pub pace: ConsInterval,
    pub timeout: Duration,
    /// Poll `wchp` too (herd effect); expensive on large servers.
    pub watches: bool,
    /// TLS to `secureClientPort`, as the session.
    pub tls: Option<crate::config::zktls::ZkTls>,
}

/// Polls until `shutdown` flips to true.
pub async fn run(d: GhostCheck, state: SharedCluster, mut shutdown: watch::Receiver<bool>) {
    let mut refused: HashSet<(String, Command)> = HashSet::new();
    loop {
        let started = Instant::now();
        poll_once(&d, &state, &mut refused).await;
        let interval = match d.pace {
            ConsInterval::Every(interval) => interval,
            ConsInterval::Auto => auto_interval(state.shortest_owner_timeout()),
        };
        tokio::select! {
            _ = tokio::time::sleep_until((started + interval).into()) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// `cons`, parsed line by line as it arrives: a busy server's reply (about
/// 200 bytes per connection) is never held whole, only the connections.
/// ZooKeeper ends the reply with an empty line; without it the list is a
/// part (the connection closed early, or the reply passed the size cap),
/// and a session missing from a part is no evidence of a ghost: the reply
/// counts as failed and the round as incomplete.
async fn ask_cons(
    server: &str,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
) -> Exchange {
    let started = Instant::now();
    let mut connections = Vec::new();
    let mut refusal = None;
    let mut first = true;
    let mut ended = false;
    let limit = client::MAX_REPLY_BYTES;
    let word = Command::Cons.name();
    let result = client::exchange_lines(server, word, timeout, tls, limit, |line| {
        if first {
            first = false;
            refusal = parse::refusal(line);
        }
        ended = line.trim().is_empty();
        if let Some(c) = parse::parse_cons_line(line) {
            connections.push(c);
        }
        Flow::More
    })
    .await;
    let result = match (result, refusal) {
        (Err(f), _) => Err(f),
        (Ok(()), Some(Refusal::NotAllowed)) => Err(Failure::NotAllowed),
        (Ok(()), Some(Refusal::NotServing)) => Err(Failure::NotServing),
        (Ok(()), None) if !ended => Err(Failure::Truncated),
        (Ok(()), None) => Ok(Reply::Cons(connections)),
    };
    Exchange {
        command: Command::Cons,
        duration: started.elapsed(),
        result,
    }
}

/// `dump`, read line by line up to the end of its session section (see
/// [`parse::DumpReader`]): no size cap, since nothing past the sessions is
/// parsed or kept, so an ensemble with millions of ephemerals still gives
/// every session's expiry.
async fn ask_dump(
    server: &str,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
) -> Exchange {
    let started = Instant::now();
    let mut reader = parse::DumpReader::default();
    let mut refusal = None;
    let mut first = true;
    let word = Command::Dump.name();
    let result = client::exchange_lines(server, word, timeout, tls, u64::MAX, |line| {
        if first {
            first = false;
            refusal = parse::refusal(line);
        }
        match refusal.is_none() && reader.line(line) {
            true => Flow::More,
            false => Flow::Enough,
        }
    })
    .await;
    let result = match (result, refusal) {
        (Err(f), _) => Err(f),
        (Ok(()), Some(Refusal::NotAllowed)) => Err(Failure::NotAllowed),
        (Ok(()), Some(Refusal::NotServing)) => Err(Failure::NotServing),
        (Ok(()), None) => reader.finish().map(Reply::Dump).map_err(|e| {
            super::log_unreadable(server, Command::Dump, &e.0);
            Failure::Parse
        }),
    };
    Exchange {
        command: Command::Dump,
        duration: started.elapsed(),
        result,
    }
}

/// One round: `cons` and `dump` of every member, then the tracker.
pub async fn poll_once(
    d: &GhostCheck,
    state: &SharedCluster,
    refused: &mut HashSet<(String, Command)>,
) {
    let started = Instant::now();
    let servers = state.servers_to_poll(&d.servers);
    let (owners, ensemble_size) = (state.owners(), state.ensemble_size());
    let polls: Vec<ServerPoll> = join_all(servers.iter().map(|server| ask_member(d, server))).await;
    let mut seen = Seen::default();
    for poll in &polls {
        for e in &poll.exchanges {
            seen.take(d, poll, e, refused);
        }
    }
    let round = Round {
        started,
        finished: Now::current(),
        complete: round_complete(servers.len(), seen.answered_cons, ensemble_size),
        connections: &seen.connections,
        expiries: &seen.expiries,
    };
    state.ghost_round(polls, round, owners, seen.watchers);
}

/// `cons` and `dump` of one member at once (and `wchp` when asked).
async fn ask_member(d: &GhostCheck, server: &str) -> ServerPoll {
    let (cons, dump) = tokio::join!(
        ask_cons(server, d.timeout, d.tls.as_ref()),
        ask_dump(server, d.timeout, d.tls.as_ref())
    );
    let mut exchanges = vec![cons, dump];
    if d.watches {
        exchanges.push(ask(server, Command::Wchp, d.timeout, d.tls.as_ref()).await);
    }
    ServerPoll {
        server: server.to_owned(),
        exchanges,
    }
}

/// What a round's replies show, gathered across members.
#[derive(Default)]
struct Seen {
    connections: Vec<parse::Connection>,
    expiries: Vec<(i64, Option<std::time::SystemTime>)>,
    answered_cons: usize,
    watchers: Option<BTreeMap<String, BTreeSet<i64>>>,
}

impl Seen {
    /// Takes in one exchange; a refused or cut-short word is logged once
    /// per member (it is counted in the metrics at every round).
    fn take(
        &mut self,
        d: &GhostCheck,
        poll: &ServerPoll,
        e: &Exchange,
        refused: &mut HashSet<(String, Command)>,
    ) {
        match &e.result {
            Ok(Reply::Cons(c)) => {
                self.answered_cons += 1;
                self.connections.extend(c.iter().cloned());
            }
            Ok(Reply::Dump(dump)) => self.expiries.extend(dump.sessions.iter().copied()),
            Ok(Reply::Wchp(paths)) => {
                let all = self.watchers.get_or_insert_with(BTreeMap::new);
                for (path, sessions) in paths {
                    all.entry(path.clone())
                        .or_default()
                        .extend(sessions.iter().copied());
                }
            }
            Err(Failure::NotAllowed) if refused.insert((poll.server.clone(), e.command)) => {
                warn!(
                    cluster = %d.cluster,
                    server = %poll.server,
                    "four-letter word `{}` is not allowed, so ghost masters cannot be detected there; \
                     add it to 4lw.commands.whitelist in zoo.cfg",
                    e.command.name()
                );
            }
            Err(Failure::Truncated) if refused.insert((poll.server.clone(), e.command)) => {
                warn!(
                    cluster = %d.cluster,
                    server = %poll.server,
                    "`cons` ended before its end marker (the connection closed early, or the reply passed 16 MiB); \
                     no session is judged from a part of the list; zookeeper_fourlw_errors_total{{reason=\"truncated\"}} counts each (logged once)"
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fourlw::client::tests::answer_once;

    const LINE: &[u8] =
        b" /127.0.0.1:5000[1](queued=0,recved=9,sent=9,sid=0x100,lop=PING,to=4000)\n";

    #[tokio::test]
    async fn a_cons_reply_counts_only_with_its_end_marker() {
        let whole: &'static [u8] = [LINE, b"\n"].concat().leak();
        let addr = answer_once(whole).await;
        match ask_cons(&addr, Duration::from_secs(2), None).await.result {
            Ok(Reply::Cons(c)) => assert_eq!(c[0].session, Some(0x100)),
            other => panic!("{other:?}"),
        }
        // Closed after a whole line but before the empty line, or mid-line:
        // a part, whose missing sessions prove nothing.
        for part in [LINE, &LINE[..40]] {
            let addr = answer_once(part).await;
            assert_eq!(
                ask_cons(&addr, Duration::from_secs(2), None).await.result,
                Err(Failure::Truncated)
            );
        }
    }
}
