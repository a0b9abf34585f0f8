//! Whether the sessions that own watched ephemeral nodes are still alive,
//! judged from rounds of `cons` (connections) and `dump` (expiry times) of
//! every ensemble member.
//!
//! ZooKeeper deletes a dead owner's nodes only when its session expires, so
//! an election can name a master that no longer exists: a *ghost master*.
//! - **disconnected**: a *complete* round (every member answered `cons`, and
//!   the members polled cover the whole ensemble) lists no connection of
//!   the session, which owned a watched node before the round began (its
//!   process crashed, or it was cut off), *and the session is still alive*:
//!   the next round's `dump` (asked of every member because of it) still
//!   holds the session. A session its client closed has no connection
//!   either, but ZooKeeper ends it and deletes its nodes at once: it is
//!   gone from `dump`, and the nodes the agent still shows are deletions
//!   on their way (a million of them take seconds to arrive), not ghosts.
//!   Where `dump` cannot be asked of every member, a second complete round
//!   that still misses the session, still an owner when it began, stands
//!   for that evidence;
//! - **silent**: two readings of its connection's `recved` count, at least
//!   2/3 of its timeout apart, saw the same count: it sent nothing (no
//!   request, no ping) in between (a frozen process, a long GC pause, a
//!   half-open network).
//!
//! Both follow from evidence only. A round's replies were produced somewhere
//! between its start and its end, so the quiet span that proves silence runs
//! from the *end* of the first round that saw the current count to the
//! *start* of the latest round that still sees it: a client that pings every
//! third of its timeout (as every ZooKeeper client does when idle) can never
//! be judged silent, whatever the rounds' timing. Time since the last round
//! proves nothing and is never used. A session no member lists in an
//! incomplete round, or first seen as an owner after the round began, is
//! *unknown*: no series is exported for it.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use super::now::Now;
use crate::fourlw::parse::Connection;

/// What is known about one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Connected,
    /// Connected but quiet since `since` (the end of the first round that
    /// saw its current packet count).
    Silent {
        since: Instant,
    },
    /// No connection on any member since `since` (the end of the first
    /// complete round that missed it).
    Disconnected {
        since: Instant,
    },
    /// The rounds cannot tell; nothing is reported for it.
    Unknown(Unknown),
}

/// Why a session's liveness cannot be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// No member listed it, but the last round was incomplete: a member did
    /// not answer `cons`, or the members polled do not cover the ensemble.
    Unlisted,
    /// Listed, but `cons` gave no session timeout to judge silence by.
    NoTimeout,
    /// A complete round lists no connection of it, and nothing shows yet
    /// whether it lives on (lost) or ended (its client closed it): the
    /// next round tells.
    Unconfirmed,
    /// No member lists a connection of it and no member's `dump` holds
    /// it: it ended, and its nodes are deleted or on their way.
    Ended,
}

impl Unknown {
    pub fn reason(self) -> &'static str {
        match self {
            Unknown::Unlisted => {
                "no member lists its session, but not every member answered cons (or the members polled do not cover the ensemble)"
            }
            Unknown::NoTimeout => "cons gave no session timeout to judge silence by",
            Unknown::Unconfirmed => {
                "no member lists a connection of it; the next round's dump tells a lost session from one its client closed"
            }
            Unknown::Ended => "no member lists it or holds it in dump: its session ended",
        }
    }
}

impl Liveness {
    pub fn is_connected(self) -> bool {
        matches!(self, Liveness::Connected)
    }

    /// A ghost: disconnected or silent, shown by the rounds.
    pub fn is_ghost(self) -> bool {
        matches!(
            self,
            Liveness::Silent { .. } | Liveness::Disconnected { .. }
        )
    }

    /// When the session was last known to be healthy, if it is a ghost.
    pub fn since(self) -> Option<Instant> {
        match self {
            Liveness::Silent { since } | Liveness::Disconnected { since } => Some(since),
            Liveness::Connected | Liveness::Unknown(_) => None,
        }
    }
}

/// One round of `cons` and `dump` over the members, as the tracker needs it.
#[derive(Debug, Clone, Copy)]
pub struct Round<'a> {
    /// When the first request was sent: no reply describes an earlier moment.
    pub started: Instant,
    /// When the last reply arrived: no reply describes a later moment.
    pub finished: Now,
    /// Every member of the ensemble answered `cons`: a session none of them
    /// lists holds no connection.
    pub complete: bool,
    /// Connections from every member that answered `cons`.
    pub connections: &'a [Connection],
    /// Expiry times from `dump`.
    pub expiries: &'a [(i64, Option<SystemTime>)],
    /// Whether the round asked `dump`: without it the expiry times known
    /// are forgotten (a later ghost must not show an old one).
    pub dumped: bool,
    /// Every member polled answered `dump` (in a complete round): a
    /// session none of them holds has ended.
    pub dump_complete: bool,
}

#[derive(Debug, Clone)]
struct Track {
    /// Packets received from the session, as the last listing reported.
    received: Option<u64>,
    /// End of the first round that saw `received` at its value.
    count_seen: Instant,
    /// Start of the latest round that saw `received` unchanged.
    count_still: Instant,
    timeout: Option<Duration>,
    /// End of the first complete round that listed no connection of it.
    missing_since: Option<Instant>,
    /// Complete rounds since then that missed it while it owned a watched
    /// node when they began.
    missing_rounds: u32,
    /// Whether a complete `dump` since it went missing held the session
    /// (alive) or not (ended).
    in_dump: Option<bool>,
    /// The last round did not list it and was incomplete.
    unlisted: bool,
    expiry: Option<SystemTime>,
    /// Last round that mentioned it (connections, expiry or as an owner).
    seen: Instant,
    /// The client address of its connection, as the last round that
    /// listed it printed it: what an `owner-*` identity names.
    address: Option<Box<str>>,
    /// End of the last round after which it was a ghost: elections whose
    /// master it is stay exported for a while after it recovers.
    ghost_seen: Option<Instant>,
}

impl Track {
    fn new(at: Instant) -> Self {
        Self {
            received: None,
            count_seen: at,
            count_still: at,
            timeout: None,
            missing_since: None,
            missing_rounds: 0,
            in_dump: None,
            unlisted: false,
            expiry: None,
            seen: at,
            address: None,
            ghost_seen: None,
        }
    }

    fn liveness(&self) -> Liveness {
        if let Some(since) = self.missing_since {
            return match (self.in_dump, self.missing_rounds) {
                (Some(true), _) => Liveness::Disconnected { since },
                (Some(false), _) => Liveness::Unknown(Unknown::Ended),
                (None, n) if n >= 2 => Liveness::Disconnected { since },
                (None, _) => Liveness::Unknown(Unknown::Unconfirmed),
            };
        }
        if self.unlisted || self.received.is_none() {
            return Liveness::Unknown(Unknown::Unlisted);
        }
        let Some(timeout) = self.timeout else {
            return Liveness::Unknown(Unknown::NoTimeout);
        };
        let quiet = self.count_still.saturating_duration_since(self.count_seen);
        if quiet > timeout * 2 / 3 {
            Liveness::Silent {
                since: self.count_seen,
            }
        } else {
            Liveness::Connected
        }
    }
}

/// Tracks every session seen in `cons` and every owner asked about.
#[derive(Debug, Clone)]
pub struct SessionTracker {
    sessions: HashMap<i64, Track>,
    /// Starts of the last two rounds: the pace the rounds actually keep.
    starts: (Option<Instant>, Option<Instant>),
    /// Changes whenever a session's verdict changes (see
    /// [`SessionTracker::stamp`]).
    stamp: u64,
    /// The owners the last round was asked about.
    owners: HashSet<i64>,
}

impl Default for SessionTracker {
    fn default() -> Self {
        Self {
            sessions: HashMap::new(),
            starts: (None, None),
            stamp: crate::model::journal::new_stamp(),
            owners: HashSet::new(),
        }
    }
}

/// What a session's liveness says to the outputs that judge masters:
/// not judged, live, or a ghost (disconnected or silent alike).
fn verdict(l: Liveness) -> u8 {
    match l {
        Liveness::Unknown(_) => 0,
        Liveness::Connected => 1,
        Liveness::Silent { .. } | Liveness::Disconnected { .. } => 2,
    }
}

/// Sessions not mentioned for this long are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

impl SessionTracker {
    /// Applies one round. `owners` are the sessions owning watched
    /// ephemeral nodes *when the round started*: an owner that appeared
    /// later may simply not have been connected yet when a member answered.
    pub fn observe(&mut self, round: Round<'_>, owners: impl IntoIterator<Item = i64>) {
        let before: HashMap<i64, u8> = self
            .sessions
            .iter()
            .map(|(sid, t)| (*sid, verdict(t.liveness())))
            .collect();
        self.observe_round(round, owners);
        let changed = self.sessions.len() != before.len()
            || self
                .sessions
                .iter()
                .any(|(sid, t)| before.get(sid) != Some(&verdict(t.liveness())));
        if changed {
            self.stamp = crate::model::journal::new_stamp();
        }
    }

    /// A value that changes whenever a session appears, goes, or its
    /// verdict (not judged, live, ghost) changes, and that no tracker ever
    /// had before: a reading of the masters taken at one stamp still holds
    /// while it is the same. Packet counts and addresses leave it.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    fn observe_round(&mut self, round: Round<'_>, owners: impl IntoIterator<Item = i64>) {
        let end = round.finished.mono;
        let mut listed: HashMap<i64, (u64, Option<Duration>, &str)> = HashMap::new();
        for c in round.connections {
            if let Some(sid) = c.session.filter(|s| *s != 0) {
                let e = listed.entry(sid).or_insert((0, None, &c.address));
                // A session listed twice (a member not yet aware that the
                // client moved): the connection that carried more is live.
                if c.received.unwrap_or(0) > e.0 {
                    e.2 = &c.address;
                }
                e.0 = e.0.max(c.received.unwrap_or(0));
                e.1 = e.1.or(c.timeout_ms.map(Duration::from_millis));
            }
        }
        for (sid, (received, timeout, address)) in &listed {
            let t = self.sessions.entry(*sid).or_insert_with(|| Track::new(end));
            // After a round that showed it without any connection, this is
            // a new connection whose count starts afresh.
            if t.missing_since.take().is_some() || t.received != Some(*received) {
                t.received = Some(*received);
                t.count_seen = end;
            }
            (t.missing_rounds, t.in_dump) = (0, None);
            t.count_still = round.started.max(t.count_seen);
            t.timeout = timeout.or(t.timeout);
            if t.address.as_deref() != Some(*address) && !address.is_empty() {
                t.address = Some((*address).into());
            }
            t.unlisted = false;
            t.seen = end;
        }
        if !round.dumped {
            for t in self.sessions.values_mut() {
                t.expiry = None;
            }
        }
        for (sid, expiry) in round.expiries {
            let t = self.sessions.entry(*sid).or_insert_with(|| Track::new(end));
            t.expiry = *expiry;
            t.seen = end;
        }
        let owners: HashSet<i64> = owners.into_iter().filter(|o| *o != 0).collect();
        for sid in &owners {
            self.sessions
                .entry(*sid)
                .or_insert_with(|| Track::new(end))
                .seen = end;
        }
        let in_dump: HashSet<i64> = round.expiries.iter().map(|(sid, _)| *sid).collect();
        for (sid, t) in &mut self.sessions {
            if listed.contains_key(sid) {
                continue;
            }
            if round.complete && (t.received.is_some() || owners.contains(sid)) {
                // Asked after it went missing: a dump of this round tells.
                if t.missing_since.is_some() && round.dump_complete {
                    t.in_dump = Some(in_dump.contains(sid));
                }
                t.missing_since.get_or_insert(end);
                if owners.contains(sid) {
                    t.missing_rounds += 1;
                }
                t.unlisted = false;
            } else if !round.complete {
                t.unlisted = true;
            }
        }
        self.sessions.retain(|sid, t| {
            owners.contains(sid) || end.saturating_duration_since(t.seen) < FORGET_AFTER
        });
        for t in self.sessions.values_mut() {
            if t.liveness().is_ghost() {
                t.ghost_seen = Some(end);
            }
        }
        self.owners = owners;
        self.starts = (self.starts.1, Some(round.started));
    }

    /// Whether an owner of a watched node was a ghost at the last round:
    /// only then does the next round need `dump`, whose expiry times are
    /// shown for ghost masters alone. `dump` lists every ephemeral node of
    /// every session, a cost to the server that grows with the tree, while
    /// `cons` lists connections only.
    pub fn wants_expiries(&self) -> bool {
        self.owners.iter().any(|sid| {
            self.sessions.get(sid).is_some_and(|t| {
                let l = t.liveness();
                l.is_ghost() || l == Liveness::Unknown(Unknown::Unconfirmed)
            })
        })
    }

    /// The owners of the last round judged ghosts now. Any ghost master is
    /// one of them; other sessions that left (a client closed, a tool
    /// that came and went) are not.
    pub fn ghost_owners(&self) -> std::collections::BTreeSet<i64> {
        self.owners
            .iter()
            .filter(|sid| {
                self.sessions
                    .get(sid)
                    .is_some_and(|t| t.liveness().is_ghost())
            })
            .copied()
            .collect()
    }

    /// Whether a round has been applied; before it nothing is known.
    pub fn polled(&self) -> bool {
        self.starts.1.is_some()
    }

    /// The liveness of `session` as the rounds so far show it; `None` for a
    /// session no round has mentioned.
    pub fn liveness(&self, session: i64) -> Option<Liveness> {
        self.sessions.get(&session).map(Track::liveness)
    }

    /// When `session` was last judged a ghost (the end of that round).
    pub fn ghost_seen(&self, session: i64) -> Option<Instant> {
        self.sessions.get(&session)?.ghost_seen
    }

    /// The client address (`host:port`) of `session`'s connection as the
    /// last round that listed it printed it; `None` while no round has.
    /// Kept while it is unlisted: a session is one client, and its host
    /// does not change (a reconnection shows the new port).
    pub fn address(&self, session: i64) -> Option<&str> {
        self.sessions.get(&session)?.address.as_deref()
    }

    /// The session timeout `cons` reported for `session`.
    pub fn timeout(&self, session: i64) -> Option<Duration> {
        self.sessions.get(&session)?.timeout
    }

    /// Time between the starts of the last two rounds.
    pub fn pace(&self) -> Option<Duration> {
        match self.starts {
            (Some(a), Some(b)) => Some(b.saturating_duration_since(a)),
            _ => None,
        }
    }

    /// Whether rounds at the current pace can show `session` silent before
    /// ZooKeeper expires it. In the worst case silence is shown two rounds
    /// after 2/3 of the timeout has passed since its last packet.
    pub fn can_show_silence_in_time(&self, session: i64) -> Option<bool> {
        let timeout = self.timeout(session)?;
        let pace = self.pace()?;
        Some(timeout * 2 / 3 + pace * 2 < timeout)
    }

    /// Why the rounds cannot (fully) judge `session`, if they cannot: it is
    /// unknown, or the pace is too slow to show a freeze before expiry.
    pub fn cannot_judge(&self, session: i64) -> Option<String> {
        match self.liveness(session)? {
            Liveness::Unknown(why) => Some(why.reason().to_owned()),
            _ if self.can_show_silence_in_time(session) == Some(false) => Some(format!(
                "rounds every {:.1}s cannot show a freeze of its session before its {:.1}s timeout expires it (a freeze shows as the switch after expiry); a fixed ghost_check.cons_interval under a sixth of the timeout can",
                self.pace().unwrap_or_default().as_secs_f64(),
                self.timeout(session).unwrap_or_default().as_secs_f64(),
            )),
            _ => None,
        }
    }

    /// The shortest session timeout among `sessions`.
    pub fn shortest_timeout(&self, sessions: impl IntoIterator<Item = i64>) -> Option<Duration> {
        sessions.into_iter().filter_map(|s| self.timeout(s)).min()
    }

    /// How long until the server expires `session`, from `dump`.
    pub fn expires_in(&self, session: i64, now: SystemTime) -> Option<Duration> {
        let expiry = self.sessions.get(&session)?.expiry?;
        Some(expiry.duration_since(now).unwrap_or(Duration::ZERO))
    }
}

/// Whether a round shows every connection of the ensemble: every one of
/// the `polled` servers answered `cons`, and they are at least as many as
/// the servers `/zookeeper/config` lists (`Some(0)` for a standalone
/// server; `None` where it cannot be read, as on 3.4).
pub fn round_complete(polled: usize, answered: usize, ensemble_size: Option<usize>) -> bool {
    polled > 0 && answered == polled && ensemble_size.is_some_and(|n| polled >= n)
}

/// The `cons_interval = "auto"` pace: an eighth of the shortest session
/// timeout among watched owners, within 1 s and 5 s. At an eighth, silence
/// is shown within 2/3 + 2/8 of the timeout after the last packet, before
/// ZooKeeper expires the session; below a 8 s timeout the 1 s floor wins.
pub fn auto_interval(shortest_timeout: Option<Duration>) -> Duration {
    const FLOOR: Duration = Duration::from_secs(1);
    const CEILING: Duration = Duration::from_secs(5);
    shortest_timeout.map_or(FLOOR, |t| (t / 8).clamp(FLOOR, CEILING))
}

#[cfg(test)]
mod tests;
