//! The ghost-master check (`[clusters.ghost_check]`): every `cons_interval`,
//! `cons` from every member (and `dump`, while a master's session looks
//! gone, for its expiry) feed the session tracker, so an election whose
//! master's session is gone (or silent) is visible long before ZooKeeper
//! expires it. The first round waits for the initial listing, which at a
//! million elections keeps the ensemble busy enough.
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

/// How long the first round waits for the initial listing at most: a
/// listing that hangs must not keep ghosts unseen.
const FIRST_ROUND_WAIT: Duration = Duration::from_secs(30);

/// Polls until `shutdown` flips to true.
pub async fn run(d: GhostCheck, state: SharedCluster, mut shutdown: watch::Receiver<bool>) {
    let mut refused: HashSet<(String, Command)> = HashSet::new();
    // Until then there is no master to judge but those listed so far.
    let mut written = state.changes();
    let listed = async {
        while !state.view(|s| s.first_listing_done()) {
            if written.changed().await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        _ = tokio::time::timeout(FIRST_ROUND_WAIT, listed) => {}
        _ = shutdown.changed() => return,
    }
    loop {
        let started = Instant::now();
        let asked = poll_once(&d, &state, &mut refused).await;
        let interval = match d.pace {
            ConsInterval::Every(interval) => interval,
            ConsInterval::Auto => auto_interval(state.shortest_timeout_of(&asked)),
        };
        tokio::select! {
            _ = tokio::time::sleep_until((started + interval).into()) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// A reply read line by line as it arrives, never held whole.
trait LineReply {
    /// Takes one line; [`Flow::Enough`] once nothing more is needed.
    fn line(&mut self, line: &str) -> Flow;
    /// The reply, once the server has closed (or enough was read).
    fn finish(self) -> Result<Reply, Failure>;
}

/// `cons`: only the connections are kept (about 200 bytes each in the
/// reply). ZooKeeper ends the reply with an empty line; without it the
/// list is a part (the connection closed early, or the reply passed the
/// size cap), and a session missing from a part is no evidence of a
/// ghost: the reply counts as failed and the round as incomplete.
#[derive(Default)]
struct ConsReply {
    connections: Vec<parse::Connection>,
    ended: bool,
}

impl LineReply for ConsReply {
    fn line(&mut self, line: &str) -> Flow {
        self.ended = line.trim().is_empty();
        if let Some(c) = parse::parse_cons_line(line) {
            self.connections.push(c);
        }
        Flow::More
    }

    fn finish(self) -> Result<Reply, Failure> {
        match self.ended {
            true => Ok(Reply::Cons(self.connections)),
            false => Err(Failure::Truncated),
        }
    }
}

/// `dump`, up to the end of its session section (see
/// [`parse::DumpReader`]): nothing past the sessions is parsed or kept, so
/// an ensemble with millions of ephemerals still gives every session's
/// expiry, without a size cap.
struct DumpReply<'a> {
    reader: parse::DumpReader,
    server: &'a str,
}

impl LineReply for DumpReply<'_> {
    fn line(&mut self, line: &str) -> Flow {
        match self.reader.line(line) {
            true => Flow::More,
            false => Flow::Enough,
        }
    }

    fn finish(self) -> Result<Reply, Failure> {
        self.reader.finish().map(Reply::Dump).map_err(|e| {
            super::log_unreadable(self.server, Command::Dump, &e.0);
            Failure::Parse
        })
    }
}

/// Asks `command` and reads the reply with `reply`, up to `limit` bytes;
/// a refusal (the whole reply, its first line) is the failure it names.
async fn ask_lines(
    server: &str,
    command: Command,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
    limit: u64,
    mut reply: impl LineReply,
) -> Exchange {
    let started = Instant::now();
    let mut refusal = None;
    let mut first = true;
    let word = command.name();
    let result = client::exchange_lines(server, word, timeout, tls, limit, |line| {
        if first {
            first = false;
            refusal = parse::refusal(line);
        }
        match refusal {
            Some(_) => Flow::Enough,
            None => reply.line(line),
        }
    })
    .await;
    let result = match (result, refusal) {
        (Err(f), _) => Err(f),
        (Ok(()), Some(Refusal::NotAllowed)) => Err(Failure::NotAllowed),
        (Ok(()), Some(Refusal::NotServing)) => Err(Failure::NotServing),
        (Ok(()), None) => reply.finish(),
    };
    Exchange {
        command,
        duration: started.elapsed(),
        result,
    }
}

async fn ask_cons(
    server: &str,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
) -> Exchange {
    let limit = client::MAX_REPLY_BYTES;
    ask_lines(
        server,
        Command::Cons,
        timeout,
        tls,
        limit,
        ConsReply::default(),
    )
    .await
}

async fn ask_dump(
    server: &str,
    timeout: Duration,
    tls: Option<&crate::config::zktls::ZkTls>,
) -> Exchange {
    let reader = parse::DumpReader::default();
    ask_lines(
        server,
        Command::Dump,
        timeout,
        tls,
        u64::MAX,
        DumpReply { reader, server },
    )
    .await
}

/// One round: `cons` of every member (and `dump` while an owner is a
/// ghost, see [`SharedCluster::wants_expiries`]), then the tracker. The
/// distinct owners asked about are returned.
pub async fn poll_once(
    d: &GhostCheck,
    state: &SharedCluster,
    refused: &mut HashSet<(String, Command)>,
) -> Vec<i64> {
    let started = Instant::now();
    let ensemble = state.ensemble_feed();
    let readings = ensemble.now();
    let servers = readings.servers_to_poll(&d.servers);
    let owners = state.distinct_owners();
    let dump = state.wants_expiries();
    let polls: Vec<ServerPoll> =
        join_all(servers.iter().map(|server| ask_member(d, server, dump))).await;
    let mut seen = Seen::default();
    for poll in &polls {
        for e in &poll.exchanges {
            seen.take(d, poll, e, refused);
        }
    }
    let complete = round_complete(servers.len(), seen.answered_cons, readings.size);
    let round = Round {
        started,
        finished: Now::current(),
        complete,
        connections: &seen.connections,
        expiries: &seen.expiries,
        dumped: dump,
        dump_complete: dump && complete && seen.answered_dump == servers.len(),
    };
    ensemble.merged(polls);
    state.ghost_round(round, owners.clone(), seen.watchers);
    owners
}

/// `cons` of one member, with `dump` at once when `dump` (and `wchp` when
/// asked).
async fn ask_member(d: &GhostCheck, server: &str, dump: bool) -> ServerPoll {
    let mut exchanges = if dump {
        let (cons, dump) = tokio::join!(
            ask_cons(server, d.timeout, d.tls.as_ref()),
            ask_dump(server, d.timeout, d.tls.as_ref())
        );
        vec![cons, dump]
    } else {
        vec![ask_cons(server, d.timeout, d.tls.as_ref()).await]
    };
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
    answered_dump: usize,
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
            Ok(Reply::Dump(dump)) => {
                self.answered_dump += 1;
                self.expiries.extend(dump.sessions.iter().copied());
            }
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

    #[tokio::test]
    async fn a_dump_is_its_sessions_a_refusal_or_unreadable() {
        let two = Duration::from_secs(2);
        let reply = b"SessionTracker dump:\nSession Sets (1)/(1):\n1 expire at Mon Nov 30 09:30:14 UTC 2026:\n\t0x100\nephemeral nodes dump:\nSessions with Ephemerals (1):\n0x100:\n\t/a\n";
        match ask_dump(&answer_once(reply).await, two, None).await.result {
            Ok(Reply::Dump(d)) => assert_eq!(d.sessions.len(), 1),
            other => panic!("{other:?}"),
        }
        let refused = b"dump is not executed because it is not in the whitelist.\n";
        assert_eq!(
            ask_dump(&answer_once(refused).await, two, None)
                .await
                .result,
            Err(Failure::NotAllowed)
        );
        assert_eq!(
            ask_dump(&answer_once(b"what\n").await, two, None)
                .await
                .result,
            Err(Failure::Parse)
        );
    }
}
