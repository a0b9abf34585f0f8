//! The vocabulary of ZooKeeper's four-letter words, pure and without I/O:
//! the commands, the reasons an exchange yields nothing ([`Failure`]), the
//! parsed replies ([`Reply`]) and their parsers ([`parse`]). The exchanges
//! themselves are sources (`crate::sources::fourlw`).

pub mod parse;

use std::collections::BTreeMap;

use parse::{Conf, Connection, Dump, Mntr, ParseError, Refusal, Srvr, Wchs};

/// The commands the exporter understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Command {
    Mntr,
    Srvr,
    Stat,
    Ruok,
    Isro,
    Conf,
    Cons,
    Wchs,
    Envi,
    Dump,
    Wchp,
}

impl Command {
    pub const ALL: [Command; 11] = [
        Self::Mntr,
        Self::Srvr,
        Self::Stat,
        Self::Ruok,
        Self::Isro,
        Self::Conf,
        Self::Cons,
        Self::Wchs,
        Self::Envi,
        Self::Dump,
        Self::Wchp,
    ];
    /// Polled when `commands` is not configured.
    pub const DEFAULT: [Command; 5] = [Self::Mntr, Self::Srvr, Self::Ruok, Self::Isro, Self::Conf];

    pub fn name(self) -> &'static str {
        match self {
            Self::Mntr => "mntr",
            Self::Srvr => "srvr",
            Self::Stat => "stat",
            Self::Ruok => "ruok",
            Self::Isro => "isro",
            Self::Conf => "conf",
            Self::Cons => "cons",
            Self::Wchs => "wchs",
            Self::Envi => "envi",
            Self::Dump => "dump",
            Self::Wchp => "wchp",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Why an exchange produced no usable reply; the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// No complete reply within `timeout` (a hung or overloaded server).
    Timeout,
    /// Connection refused, reset, or host unknown.
    Connect,
    /// The command is not in `4lw.commands.whitelist`.
    NotAllowed,
    /// The server is up but not part of a quorum.
    NotServing,
    /// A reply the parser could not read.
    Parse,
    /// The TLS handshake failed (untrusted or misnamed server certificate,
    /// client certificate refused, plain port).
    Tls,
    /// The reply stopped before its end marker (the connection closed
    /// early, or the reply passed the size cap): a part is not a reading.
    Truncated,
}

impl Failure {
    pub const ALL: [Failure; 7] = [
        Self::Timeout,
        Self::Connect,
        Self::NotAllowed,
        Self::NotServing,
        Self::Parse,
        Self::Tls,
        Self::Truncated,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::NotAllowed => "not_allowed",
            Self::NotServing => "not_serving",
            Self::Parse => "parse",
            Self::Tls => "tls",
            Self::Truncated => "truncated",
        }
    }
}

/// A parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Mntr(Mntr),
    /// `srvr` or `stat`.
    Srvr(Srvr),
    Ruok(bool),
    Isro(Option<bool>),
    Conf(Conf),
    Cons(Vec<Connection>),
    Wchs(Wchs),
    Envi(BTreeMap<String, String>),
    Dump(Dump),
    Wchp(BTreeMap<String, Vec<i64>>),
}

/// Turns raw reply text into a [`Reply`] or the reason it is none.
pub fn interpret(command: Command, raw: &str) -> Result<Reply, Failure> {
    interpret_detailed(command, raw).map_err(|(failure, _)| failure)
}

/// [`interpret`], keeping what the parser said when it could not read the
/// reply (for a log line; the `reason` label stays `parse`).
pub fn interpret_detailed(
    command: Command,
    raw: &str,
) -> Result<Reply, (Failure, Option<ParseError>)> {
    match parse::refusal(raw) {
        Some(Refusal::NotAllowed) => return Err((Failure::NotAllowed, None)),
        // `ruok` still says imok and `isro` says null on a member without
        // quorum; only a literal refusal is "not serving".
        Some(Refusal::NotServing) => return Err((Failure::NotServing, None)),
        None => {}
    }
    let parsed: Result<Reply, ParseError> = match command {
        Command::Mntr => parse::parse_mntr(raw).map(Reply::Mntr),
        Command::Srvr | Command::Stat => parse::parse_srvr(raw).map(Reply::Srvr),
        Command::Ruok => Ok(Reply::Ruok(parse::parse_ruok(raw))),
        Command::Isro => parse::parse_isro(raw).map(Reply::Isro),
        Command::Conf => parse::parse_conf(raw).map(Reply::Conf),
        Command::Cons => Ok(Reply::Cons(parse::parse_cons(raw))),
        Command::Wchs => parse::parse_wchs(raw).map(Reply::Wchs),
        Command::Envi => parse::parse_envi(raw).map(Reply::Envi),
        Command::Dump => parse::parse_dump(raw).map(Reply::Dump),
        Command::Wchp => parse::parse_wchp(raw).map(Reply::Wchp),
    };
    parsed.map_err(|e| (Failure::Parse, Some(e)))
}
