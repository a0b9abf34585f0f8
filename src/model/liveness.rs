//! Whether the sessions that own watched ephemeral nodes are still alive,
//! judged from rounds of `cons` (connections) and `dump` (expiry times) of
//! every ensemble member.
//!
//! ZooKeeper deletes a dead owner's nodes only when its session expires, so
//! an election can name a master that no longer exists: a *ghost master*.
//! - **disconnected**: a *complete* round (every member answered `cons`, and
//!   the members polled cover the whole ensemble) lists no connection of
//!   the session, which owned a watched node before the round began (its
//!   process crashed, or it was cut off);
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

use super::election::Now;
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
}

impl Unknown {
    pub fn reason(self) -> &'static str {
        match self {
            Unknown::Unlisted => {
                "no member lists its session, but not every member answered cons (or the members polled do not cover the ensemble)"
            }
            Unknown::NoTimeout => "cons gave no session timeout to judge silence by",
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
    /// The last round did not list it and was incomplete.
    unlisted: bool,
    expiry: Option<SystemTime>,
    /// Last round that mentioned it (connections, expiry or as an owner).
    seen: Instant,
}

impl Track {
    fn new(at: Instant) -> Self {
        Self {
            received: None,
            count_seen: at,
            count_still: at,
            timeout: None,
            missing_since: None,
            unlisted: false,
            expiry: None,
            seen: at,
        }
    }

    fn liveness(&self) -> Liveness {
        if let Some(since) = self.missing_since {
            return Liveness::Disconnected { since };
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
#[derive(Debug, Clone, Default)]
pub struct SessionTracker {
    sessions: HashMap<i64, Track>,
    /// Starts of the last two rounds: the pace the rounds actually keep.
    starts: (Option<Instant>, Option<Instant>),
}

/// Sessions not mentioned for this long are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

impl SessionTracker {
    /// Applies one round. `owners` are the sessions owning watched
    /// ephemeral nodes *when the round started*: an owner that appeared
    /// later may simply not have been connected yet when a member answered.
    pub fn observe(&mut self, round: Round<'_>, owners: impl IntoIterator<Item = i64>) {
        let end = round.finished.mono;
        let mut listed: HashMap<i64, (u64, Option<Duration>)> = HashMap::new();
        for c in round.connections {
            if let Some(sid) = c.session.filter(|s| *s != 0) {
                let e = listed.entry(sid).or_insert((0, None));
                e.0 = e.0.max(c.received.unwrap_or(0));
                e.1 = e.1.or(c.timeout_ms.map(Duration::from_millis));
            }
        }
        for (sid, (received, timeout)) in &listed {
            let t = self.sessions.entry(*sid).or_insert_with(|| Track::new(end));
            // After a round that showed it without any connection, this is
            // a new connection whose count starts afresh.
            if t.missing_since.take().is_some() || t.received != Some(*received) {
                t.received = Some(*received);
                t.count_seen = end;
            }
            t.count_still = round.started.max(t.count_seen);
            t.timeout = timeout.or(t.timeout);
            t.unlisted = false;
            t.seen = end;
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
        for (sid, t) in &mut self.sessions {
            if listed.contains_key(sid) {
                continue;
            }
            if round.complete && (t.received.is_some() || owners.contains(sid)) {
                t.missing_since.get_or_insert(end);
                t.unlisted = false;
            } else if !round.complete {
                t.unlisted = true;
            }
        }
        self.sessions.retain(|sid, t| {
            owners.contains(sid) || end.saturating_duration_since(t.seen) < FORGET_AFTER
        });
        self.starts = (self.starts.1, Some(round.started));
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
                "rounds every {:.1}s cannot show a freeze of its session before its {:.1}s timeout expires it (a freeze shows as the switch after expiry); a fixed diagnostics.cons_interval under a sixth of the timeout can",
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    fn at(base: Instant, t: u64) -> Now {
        Now {
            mono: ms(base, t),
            wall: SystemTime::UNIX_EPOCH + Duration::from_millis(t),
        }
    }

    fn conn(sid: i64, received: u64) -> Connection {
        Connection {
            address: "127.0.0.1:1".into(),
            session: Some(sid),
            received: Some(received),
            timeout_ms: Some(3000),
        }
    }

    /// A round of `connections` from `start` to `end` milliseconds.
    fn observe(
        t: &mut SessionTracker,
        base: Instant,
        (start, end): (u64, u64),
        complete: bool,
        connections: &[Connection],
        owners: &[i64],
    ) {
        t.observe(
            Round {
                started: ms(base, start),
                finished: at(base, end),
                complete,
                connections,
                expiries: &[],
            },
            owners.iter().copied(),
        );
    }

    #[test]
    fn disconnected_silent_and_back() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        assert!(!t.polled());
        observe(
            &mut t,
            t0,
            (0, 10),
            true,
            &[conn(1, 5), conn(2, 5)],
            &[1, 2, 3],
        );
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
        assert_eq!(
            t.liveness(3),
            Some(Liveness::Disconnected { since: ms(t0, 10) }),
            "an owner no member lists in a complete round is disconnected"
        );
        // Session 1 keeps pinging; session 2 goes quiet; session 1 drops later.
        observe(
            &mut t,
            t0,
            (1000, 1010),
            true,
            &[conn(1, 6), conn(2, 5)],
            &[1, 2],
        );
        assert_eq!(
            t.liveness(2),
            Some(Liveness::Connected),
            "quiet for under 2/3 of 3 s between the readings"
        );
        observe(
            &mut t,
            t0,
            (2020, 2030),
            true,
            &[conn(1, 7), conn(2, 5)],
            &[1, 2],
        );
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
        assert_eq!(
            t.liveness(2),
            Some(Liveness::Silent { since: ms(t0, 10) }),
            "the same count 2,010 ms apart: more than 2/3 of 3 s"
        );
        observe(&mut t, t0, (2500, 2510), true, &[conn(2, 9)], &[1, 2]);
        assert_eq!(t.liveness(2), Some(Liveness::Connected), "it spoke again");
        assert_eq!(
            t.liveness(1),
            Some(Liveness::Disconnected {
                since: ms(t0, 2510)
            })
        );
        observe(
            &mut t,
            t0,
            (3000, 3010),
            true,
            &[conn(1, 8), conn(2, 10)],
            &[1, 2],
        );
        assert_eq!(t.liveness(1), Some(Liveness::Connected), "reconnected");
    }

    #[test]
    fn time_since_the_last_round_proves_nothing() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        observe(&mut t, t0, (0, 10), true, &[conn(1, 5)], &[1]);
        // Rounds 5 s apart; the session's timeout is 3 s. Whatever the time
        // of asking, one reading is no evidence of silence.
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
        observe(&mut t, t0, (5000, 5010), true, &[conn(1, 9)], &[1]);
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
        // Only a span between a round's end and a later round's start counts:
        // 2,000 ms of it is not over 2/3 of 3 s, although the rounds'
        // ends are 2,100 ms apart.
        observe(&mut t, t0, (7010, 7110), true, &[conn(1, 9)], &[1]);
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
    }

    #[test]
    fn incomplete_rounds_leave_unlisted_sessions_unknown() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        observe(&mut t, t0, (0, 10), false, &[conn(1, 5)], &[1, 2]);
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
        assert_eq!(t.liveness(2), Some(Liveness::Unknown(Unknown::Unlisted)));
        // Session 1 moves to the member that does not answer.
        observe(&mut t, t0, (1000, 1010), false, &[], &[1, 2]);
        assert_eq!(t.liveness(1), Some(Liveness::Unknown(Unknown::Unlisted)));
        // An owner that appeared after the round began is not judged.
        observe(&mut t, t0, (2000, 2010), true, &[conn(1, 7)], &[1]);
        assert_eq!(t.liveness(4), None);
        assert_eq!(t.liveness(1), Some(Liveness::Connected));
    }

    #[test]
    fn a_session_without_timeout_is_not_judged() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        let quiet = Connection {
            timeout_ms: None,
            ..conn(1, 5)
        };
        observe(
            &mut t,
            t0,
            (0, 10),
            true,
            std::slice::from_ref(&quiet),
            &[1],
        );
        observe(&mut t, t0, (60_000, 60_010), true, &[quiet], &[1]);
        assert_eq!(t.liveness(1), Some(Liveness::Unknown(Unknown::NoTimeout)));
    }

    #[test]
    fn expiry_from_dump() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        let expiry = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        t.observe(
            Round {
                started: t0,
                finished: at(t0, 4000),
                complete: true,
                connections: &[],
                expiries: &[(7, Some(expiry))],
            },
            [7],
        );
        assert_eq!(
            t.expires_in(7, SystemTime::UNIX_EPOCH + Duration::from_secs(4)),
            Some(Duration::from_secs(6))
        );
        assert_eq!(
            t.expires_in(7, SystemTime::UNIX_EPOCH + Duration::from_secs(40)),
            Some(Duration::ZERO)
        );
        assert_eq!(t.expires_in(8, SystemTime::UNIX_EPOCH), None);
    }

    #[test]
    fn a_round_is_complete_only_when_it_covers_the_ensemble() {
        assert!(round_complete(1, 1, Some(0)), "standalone");
        assert!(round_complete(3, 3, Some(3)));
        assert!(!round_complete(3, 2, Some(3)), "a member did not answer");
        assert!(
            !round_complete(1, 1, Some(3)),
            "one member of three polled: others' sessions are not listed"
        );
        assert!(!round_complete(1, 1, None), "membership unknown");
        assert!(!round_complete(0, 0, Some(0)));
    }

    #[test]
    fn the_auto_pace_follows_the_shortest_timeout_within_bounds() {
        let s = Duration::from_secs;
        assert_eq!(auto_interval(None), s(1));
        assert_eq!(auto_interval(Some(s(4))), s(1));
        assert_eq!(auto_interval(Some(s(18))), Duration::from_millis(2250));
        assert_eq!(auto_interval(Some(s(90))), s(5));
    }

    /// Rounds as (gap before start, duration, where in the round the
    /// session's member answered, in 0..=1000 of its length), in ms.
    /// Short gaps and slow rounds are where a careless rule misfires.
    fn schedule() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
        let gap = prop_oneof![0u64..50, 0u64..5_000];
        let len = prop_oneof![0u64..20, 0u64..3_000];
        let pos = prop_oneof![Just(0u64), Just(1_000u64), 0u64..=1_000];
        prop::collection::vec((gap, len, pos), 1..40)
    }

    /// The `recved` count a member reports at `t`: packets up to then.
    fn count_at(pings: &[u64], t: u64) -> u64 {
        pings.iter().take_while(|p| **p <= t).count() as u64
    }

    proptest! {
        /// A session that sends something at least every third of its
        /// timeout is never judged silent, whatever the rounds' timing.
        #[test]
        fn a_pinging_session_is_never_silent(
            timeout_ms in 1_000u64..30_000,
            gaps in prop::collection::vec(1u64..=1_000, 1..2_000),
            rounds in schedule(),
        ) {
            // Ping gaps are a fraction (in thousandths) of a third of the timeout.
            let mut pings = Vec::new();
            let mut p = 0;
            for g in &gaps {
                p += (timeout_ms / 3 * g / 1_000).max(1);
                pings.push(p);
            }
            let base = Instant::now();
            let mut tracker = SessionTracker::default();
            let mut start = 0;
            for (gap, len, pos) in rounds {
                start += gap;
                let end = start + len;
                if end > *pings.last().unwrap() {
                    break; // the pings (and so the premise) end here
                }
                let c = Connection {
                    timeout_ms: Some(timeout_ms),
                    ..conn(1, count_at(&pings, start + len * pos / 1_000))
                };
                observe(&mut tracker, base, (start, end), true, &[c], &[1]);
                let live = tracker.liveness(1).unwrap();
                prop_assert_eq!(live, Liveness::Connected);
                start = end;
            }
        }

        /// A session that stops sending is flagged by the first round whose
        /// start lies more than 2/3 of its timeout after the end of the
        /// first round that saw its final count, and not before.
        #[test]
        fn a_frozen_session_is_flagged_by_the_first_pair_that_can_show_it(
            timeout_ms in 1_000u64..30_000,
            frozen_at in 0u64..20_000,
            rounds in schedule(),
        ) {
            // Pings every third of the timeout until it freezes.
            let pings: Vec<u64> = (1..)
                .map(|i| i * (timeout_ms / 3))
                .take_while(|p| *p <= frozen_at)
                .collect();
            let base = Instant::now();
            let mut tracker = SessionTracker::default();
            let mut start = 0;
            let mut final_seen: Option<u64> = None;
            for (gap, len, pos) in rounds {
                start += gap;
                let end = start + len;
                let read = start + len * pos / 1_000;
                let c = Connection {
                    timeout_ms: Some(timeout_ms),
                    ..conn(1, count_at(&pings, read))
                };
                observe(&mut tracker, base, (start, end), true, &[c], &[1]);
                let at_final = count_at(&pings, read) == pings.len() as u64;
                if at_final && final_seen.is_none() {
                    final_seen = Some(end);
                }
                let expected = final_seen.is_some_and(|seen| start > seen
                    && Duration::from_millis(start - seen) > Duration::from_millis(timeout_ms) * 2 / 3);
                let live = tracker.liveness(1).unwrap();
                prop_assert_eq!(
                    matches!(live, Liveness::Silent { .. }),
                    expected,
                    "round {}..{} read at {}: {:?}", start, end, read, live
                );
                start = end;
            }
        }
    }
}
