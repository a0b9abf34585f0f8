//! Ensemble health from four-letter words: the last replies of every
//! member, cumulative error counts, and the figures derived across members
//! (servers up, leaders, zxid spread).
//!
//! Each collection replaces a server's replies entirely, so a server that
//! stops answering loses its per-key series at once (no stale values);
//! only the error counters accumulate.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fourlw::parse::{Conf, Connection, Mntr, Role, Srvr, Wchs};
use crate::fourlw::{Command, Failure, Reply};

/// One command's exchange with one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    pub command: Command,
    /// Wall time of the exchange (connect, write, read).
    pub duration: Duration,
    pub result: Result<Reply, Failure>,
}

/// Every exchange with one server in one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPoll {
    /// `host:port` as polled; the `server` label.
    pub server: String,
    pub exchanges: Vec<Exchange>,
}

/// What is known about one member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerHealth {
    pub last: BTreeMap<Command, Exchange>,
    pub errors: BTreeMap<(Command, Failure), u64>,
    /// `mntr` lines skipped as unreadable, across collections.
    pub skipped_lines: u64,
}

impl ServerHealth {
    fn reply(&self, command: Command) -> Option<&Reply> {
        self.last.get(&command).and_then(|e| e.result.as_ref().ok())
    }

    pub fn mntr(&self) -> Option<&Mntr> {
        match self.reply(Command::Mntr) {
            Some(Reply::Mntr(m)) => Some(m),
            _ => None,
        }
    }

    /// `srvr`, or `stat` when only that was polled.
    pub fn srvr(&self) -> Option<&Srvr> {
        [Command::Srvr, Command::Stat]
            .into_iter()
            .find_map(|c| match self.reply(c) {
                Some(Reply::Srvr(s)) => Some(s),
                _ => None,
            })
    }

    pub fn wchs(&self) -> Option<&Wchs> {
        match self.reply(Command::Wchs) {
            Some(Reply::Wchs(w)) => Some(w),
            _ => None,
        }
    }

    pub fn cons(&self) -> Option<&[Connection]> {
        match self.reply(Command::Cons) {
            Some(Reply::Cons(c)) => Some(c),
            _ => None,
        }
    }

    pub fn envi(&self) -> Option<&BTreeMap<String, String>> {
        match self.reply(Command::Envi) {
            Some(Reply::Envi(e)) => Some(e),
            _ => None,
        }
    }

    pub fn conf(&self) -> Option<&Conf> {
        match self.reply(Command::Conf) {
            Some(Reply::Conf(c)) => Some(c),
            _ => None,
        }
    }

    /// `Some(true)` when `ruok` answered `imok`, or was not asked because
    /// `mntr` gave a server state (it answers only while serving); `None`
    /// when neither tells.
    pub fn ruok(&self) -> Option<bool> {
        match self.last.get(&Command::Ruok) {
            Some(exchange) => Some(matches!(exchange.result, Ok(Reply::Ruok(true)))),
            None => self.mntr().and_then(Mntr::role).map(|_| true),
        }
    }

    /// What `isro` answered, or else what `mntr`'s server state says.
    pub fn read_only(&self) -> Option<bool> {
        match self.reply(Command::Isro) {
            Some(Reply::Isro(ro)) => *ro,
            _ if self.last.contains_key(&Command::Isro) => None,
            _ => self
                .mntr()
                .and_then(Mntr::role)
                .map(|r| r == crate::fourlw::parse::Role::ReadOnly),
        }
    }

    /// Answered `mntr` or `srvr`/`stat`; with neither polled, any command.
    pub fn up(&self) -> bool {
        let core = [Command::Mntr, Command::Srvr, Command::Stat];
        if self.last.keys().any(|c| core.contains(c)) {
            self.mntr().is_some() || self.srvr().is_some()
        } else {
            self.last.values().any(|e| e.result.is_ok())
        }
    }

    /// Whether the member refuses clients while it runs: `Some(true)` when it
    /// is not up and one of its last exchanges was answered with "not
    /// currently serving requests" (starting, syncing, or without quorum),
    /// `Some(false)` when it is up, `None` when it answered nothing (down
    /// or unverified). The rules tell a member that is alive but outside
    /// the quorum from one that is gone by this, so the two never page
    /// together.
    pub fn not_serving(&self) -> Option<bool> {
        if self.up() {
            return Some(false);
        }
        self.last
            .values()
            .any(|e| matches!(e.result, Err(crate::fourlw::Failure::NotServing)))
            .then_some(true)
    }

    /// Not up, and every failed exchange failed its TLS handshake: the
    /// server accepted a connection, so it is not shown down, but nothing
    /// about it could be verified (a certificate problem, said apart).
    pub fn unverified(&self) -> bool {
        !self.up()
            && !self.last.is_empty()
            && self
                .last
                .values()
                .all(|e| matches!(e.result, Err(crate::fourlw::Failure::Tls)))
    }

    pub fn role(&self) -> Option<Role> {
        self.mntr()
            .and_then(Mntr::role)
            .or_else(|| self.srvr().and_then(|s| s.role))
    }

    pub fn version(&self) -> Option<&str> {
        self.mntr()
            .and_then(Mntr::version)
            .or_else(|| self.srvr().and_then(|s| s.version.as_deref()))
    }

    pub fn zxid(&self) -> Option<u64> {
        self.srvr().and_then(|s| s.zxid)
    }
}

/// The members of one cluster as last polled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ensemble {
    servers: BTreeMap<String, ServerHealth>,
    /// Collections applied so far; lets outputs cache what they derive.
    generation: u64,
}

impl Ensemble {
    /// Applies one collection. Servers absent from it are forgotten (they
    /// left the configuration or the dynamic membership).
    /// Replies of commands a collection did not poll (the ghost check's
    /// `cons` and `dump`) are kept, except `ruok` and `isro`; every polled
    /// command is replaced.
    pub fn apply(&mut self, polls: Vec<ServerPoll>) {
        let mut next = BTreeMap::new();
        for poll in polls {
            let mut health = self.servers.remove(&poll.server).unwrap_or_default();
            // `ruok` and `isro` are skipped while `mntr` gives the server
            // state (the facts follow from it): an old reply must not
            // outlive the collection that stopped asking.
            for skippable in [Command::Ruok, Command::Isro] {
                if !poll.exchanges.iter().any(|e| e.command == skippable) {
                    health.last.remove(&skippable);
                }
            }
            Self::record(&mut health, poll.exchanges);
            next.insert(poll.server, health);
        }
        self.servers = next;
        self.generation += 1;
    }

    /// Applies exchanges of some commands (the ghost check's `cons` and
    /// `dump`) without forgetting servers absent from them.
    pub fn merge(&mut self, polls: Vec<ServerPoll>) {
        for poll in polls {
            let health = self.servers.entry(poll.server).or_default();
            Self::record(health, poll.exchanges);
        }
        self.generation += 1;
    }

    fn record(health: &mut ServerHealth, exchanges: Vec<Exchange>) {
        {
            for exchange in exchanges {
                if let Err(failure) = exchange.result {
                    *health
                        .errors
                        .entry((exchange.command, failure))
                        .or_insert(0) += 1;
                }
                if let Ok(Reply::Mntr(m)) = &exchange.result {
                    health.skipped_lines += m.skipped as u64;
                }
                health.last.insert(exchange.command, exchange);
            }
        }
    }

    /// Number of collections applied; changes whenever the replies do.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Counts on from an earlier ensemble of the same cluster (one a reload
    /// replaced), so nothing cached for the earlier one matches this one.
    pub fn follow(&mut self, earlier: u64) {
        self.generation = self.generation.max(earlier + 1);
    }

    pub fn servers(&self) -> impl Iterator<Item = (&str, &ServerHealth)> {
        self.servers.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn server(&self, name: &str) -> Option<&ServerHealth> {
        self.servers.get(name)
    }

    pub fn len(&self) -> usize {
        self.servers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    pub fn up_count(&self) -> usize {
        self.servers.values().filter(|s| s.up()).count()
    }

    /// Members whose state could not be verified (TLS handshakes failed).
    pub fn unverified_count(&self) -> usize {
        self.servers.values().filter(|s| s.unverified()).count()
    }

    /// Members reporting themselves leader; anything but 1 in a quorum
    /// ensemble is trouble.
    pub fn leaders(&self) -> usize {
        self.servers
            .values()
            .filter(|s| s.up() && s.role() == Some(Role::Leader))
            .count()
    }

    /// Largest minus smallest zxid counter among members in the newest
    /// epoch: how far the slowest current member lags, in transactions.
    pub fn zxid_spread(&self) -> Option<u64> {
        let zxids: Vec<u64> = self
            .servers
            .values()
            .filter(|s| s.up())
            .filter_map(ServerHealth::zxid)
            .collect();
        let epoch = zxids.iter().map(|z| z >> 32).max()?;
        let counters = zxids
            .iter()
            .filter(|z| *z >> 32 == epoch)
            .map(|z| z & 0xffff_ffff);
        let (min, max) = counters.fold((u64::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
        Some(max - min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fourlw::interpret;

    fn ex(command: Command, raw: &str) -> Exchange {
        Exchange {
            command,
            duration: Duration::from_millis(1),
            result: interpret(command, raw),
        }
    }

    fn failed(command: Command, failure: Failure) -> Exchange {
        Exchange {
            command,
            duration: Duration::from_secs(2),
            result: Err(failure),
        }
    }

    fn poll(server: &str, exchanges: Vec<Exchange>) -> ServerPoll {
        ServerPoll {
            server: server.into(),
            exchanges,
        }
    }

    #[test]
    fn a_server_whose_tls_handshakes_fail_is_unverified_not_down() {
        let mut e = Ensemble::default();
        e.apply(vec![
            poll("tls", vec![failed(Command::Mntr, Failure::Tls)]),
            poll("down", vec![failed(Command::Mntr, Failure::Connect)]),
            poll(
                "mixed",
                vec![
                    failed(Command::Mntr, Failure::Tls),
                    failed(Command::Srvr, Failure::Timeout),
                ],
            ),
            poll("up", vec![ex(Command::Mntr, "zk_server_state\tleader\n")]),
        ]);
        let state = |s: &str| {
            let h = e.server(s).unwrap();
            (h.up(), h.unverified())
        };
        assert_eq!(state("tls"), (false, true));
        assert_eq!(state("down"), (false, false));
        assert_eq!(state("mixed"), (false, false), "a timeout is evidence");
        assert_eq!(state("up"), (true, false));
        assert_eq!((e.up_count(), e.unverified_count()), (1, 1));
    }

    #[test]
    fn ruok_and_isro_follow_from_a_mntr_state_when_not_asked() {
        let mut e = Ensemble::default();
        e.apply(vec![
            poll(
                "rw",
                vec![ex(
                    Command::Mntr,
                    "zk_server_state\tleader\nzk_znode_count\t5\n",
                )],
            ),
            poll(
                "ro",
                vec![ex(
                    Command::Mntr,
                    "zk_server_state\tread-only\nzk_znode_count\t5\n",
                )],
            ),
            // Asked (mntr gave no state): the answers themselves count.
            poll(
                "asked",
                vec![
                    ex(Command::Mntr, "zk_znode_count\t5\n"),
                    ex(Command::Ruok, ""),
                    ex(Command::Isro, "null"),
                ],
            ),
        ]);
        let facts = |s: &str| {
            let h = e.server(s).unwrap();
            (h.ruok(), h.read_only())
        };
        assert_eq!(facts("rw"), (Some(true), Some(false)));
        assert_eq!(facts("ro"), (Some(true), Some(true)));
        assert_eq!(facts("asked"), (Some(false), None));
    }

    #[test]
    fn roles_leaders_and_spread() {
        let mut e = Ensemble::default();
        e.apply(vec![
            poll(
                "a",
                vec![
                    ex(Command::Srvr, "Mode: leader\nZxid: 0x200000010\n"),
                    ex(Command::Ruok, "imok"),
                ],
            ),
            poll(
                "b",
                vec![ex(Command::Srvr, "Mode: follower\nZxid: 0x20000000a\n")],
            ),
            poll(
                "c",
                vec![ex(Command::Srvr, "Mode: follower\nZxid: 0x1000000ff\n")],
            ),
            poll("d", vec![failed(Command::Srvr, Failure::Timeout)]),
        ]);
        assert_eq!((e.len(), e.up_count(), e.leaders()), (4, 3, 1));
        assert_eq!(
            e.zxid_spread(),
            Some(6),
            "only members in the newest epoch count"
        );
        assert_eq!(e.server("a").unwrap().ruok(), Some(true));
        assert_eq!(e.server("b").unwrap().ruok(), None);
        assert!(!e.server("d").unwrap().up());
    }

    #[test]
    fn errors_accumulate_and_replies_do_not_linger() {
        let mut e = Ensemble::default();
        e.apply(vec![poll(
            "a",
            vec![ex(
                Command::Mntr,
                "zk_server_state\tleader\nzk_znode_count\t5\n",
            )],
        )]);
        assert!(e.server("a").unwrap().mntr().is_some());
        for _ in 0..2 {
            e.apply(vec![poll(
                "a",
                vec![failed(Command::Mntr, Failure::Connect)],
            )]);
        }
        let a = e.server("a").unwrap();
        assert!(a.mntr().is_none(), "a failed poll removes the last values");
        assert!(!a.up());
        assert_eq!(a.errors.get(&(Command::Mntr, Failure::Connect)), Some(&2));
        e.apply(vec![]);
        assert!(e.is_empty(), "servers that left are forgotten");
    }

    #[test]
    fn refusals_are_typed() {
        let mut e = Ensemble::default();
        e.apply(vec![poll(
            "a",
            vec![
                ex(
                    Command::Mntr,
                    "mntr is not executed because it is not in the whitelist.\n",
                ),
                ex(
                    Command::Srvr,
                    "This ZooKeeper instance is not currently serving requests\n",
                ),
                ex(Command::Isro, "null"),
            ],
        )]);
        let a = e.server("a").unwrap();
        assert_eq!(
            a.errors.get(&(Command::Mntr, Failure::NotAllowed)),
            Some(&1)
        );
        assert_eq!(
            a.errors.get(&(Command::Srvr, Failure::NotServing)),
            Some(&1)
        );
        assert_eq!(a.read_only(), None);
        assert!(!a.up());
    }

    #[test]
    fn a_member_that_refuses_as_not_serving_is_told_from_one_that_is_gone() {
        let mut e = Ensemble::default();
        let not_serving = "This ZooKeeper instance is not currently serving requests\n";
        e.apply(vec![
            poll(
                "syncing",
                vec![
                    ex(Command::Mntr, not_serving),
                    ex(Command::Srvr, not_serving),
                ],
            ),
            poll("gone", vec![failed(Command::Mntr, Failure::Connect)]),
            poll("hung", vec![failed(Command::Mntr, Failure::Timeout)]),
            poll("tls", vec![failed(Command::Mntr, Failure::Tls)]),
            poll(
                "serving",
                vec![ex(Command::Mntr, "zk_server_state\tleader\n")],
            ),
        ]);
        let state = |s: &str| e.server(s).unwrap().not_serving();
        assert_eq!(state("syncing"), Some(true));
        assert_eq!(
            state("gone"),
            None,
            "no answer is no evidence of a live member"
        );
        assert_eq!(state("hung"), None);
        assert_eq!(state("tls"), None);
        assert_eq!(state("serving"), Some(false));
    }
}
