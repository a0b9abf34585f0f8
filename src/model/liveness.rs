//! Whether the sessions that own watched ephemeral nodes are still alive,
//! from periodic `cons` (connections) and `dump` (expiry times) of every
//! ensemble member.
//!
//! ZooKeeper deletes a dead owner's nodes only when its session expires, so
//! an election can name a master that no longer exists: a *ghost master*.
//! - **disconnected**: the owner holds no connection on any member (its
//!   process crashed, or it was cut off);
//! - **silent**: it holds a connection but has sent nothing (no request, no
//!   ping) for more than 2/3 of its timeout: its `recved` count stopped
//!   moving (a frozen process, a long GC pause, a half-open network).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use super::election::Now;
use crate::fourlw::parse::Connection;

/// What is known about one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Connected,
    /// Connected but quiet since `since` (its last received packet).
    Silent {
        since: Instant,
    },
    /// No connection on any member since `since`.
    Disconnected {
        since: Instant,
    },
}

impl Liveness {
    pub fn is_connected(self) -> bool {
        matches!(self, Liveness::Connected)
    }

    /// When the session was last known to be healthy, if it is not.
    pub fn since(self) -> Option<Instant> {
        match self {
            Liveness::Connected => None,
            Liveness::Silent { since } | Liveness::Disconnected { since } => Some(since),
        }
    }
}

#[derive(Debug, Clone)]
struct Track {
    /// Packets received from the session, as `cons` last reported.
    received: Option<u64>,
    /// When `received` last moved (or the session was first seen).
    changed: Instant,
    timeout: Option<Duration>,
    /// Seen without any connection since.
    missing_since: Option<Instant>,
    expiry: Option<SystemTime>,
    /// Last poll that mentioned it (connections, expiry or as an owner).
    seen: Instant,
}

/// Tracks every session seen in `cons` and every owner asked about.
#[derive(Debug, Clone, Default)]
pub struct SessionTracker {
    sessions: HashMap<i64, Track>,
    polled: bool,
}

/// Sessions not mentioned for this long are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

impl SessionTracker {
    /// Applies one poll: the connections of every member that answered
    /// `cons`, the expiry times from `dump`, and the owners of the watched
    /// ephemeral nodes (so an owner never seen connected counts as
    /// disconnected from its first poll).
    pub fn observe(
        &mut self,
        connections: &[Connection],
        expiries: &[(i64, Option<SystemTime>)],
        owners: impl IntoIterator<Item = i64>,
        now: Now,
    ) {
        let mut connected: HashMap<i64, (u64, Option<Duration>)> = HashMap::new();
        for c in connections {
            if let Some(sid) = c.session.filter(|s| *s != 0) {
                let e = connected.entry(sid).or_insert((0, None));
                e.0 = e.0.max(c.received.unwrap_or(0));
                e.1 = e.1.or(c.timeout_ms.map(Duration::from_millis));
            }
        }
        let new_track = |now: Now| Track {
            received: None,
            changed: now.mono,
            timeout: None,
            missing_since: None,
            expiry: None,
            seen: now.mono,
        };
        for (sid, (received, timeout)) in &connected {
            let t = self.sessions.entry(*sid).or_insert_with(|| new_track(now));
            if t.received != Some(*received) {
                t.received = Some(*received);
                t.changed = now.mono;
            }
            t.timeout = timeout.or(t.timeout);
            t.missing_since = None;
            t.seen = now.mono;
        }
        for (sid, expiry) in expiries {
            let t = self.sessions.entry(*sid).or_insert_with(|| new_track(now));
            t.expiry = *expiry;
            t.seen = now.mono;
        }
        let owners: HashSet<i64> = owners.into_iter().filter(|o| *o != 0).collect();
        for sid in &owners {
            self.sessions
                .entry(*sid)
                .or_insert_with(|| new_track(now))
                .seen = now.mono;
        }
        for (sid, t) in &mut self.sessions {
            if !connected.contains_key(sid) {
                t.missing_since.get_or_insert(now.mono);
            }
        }
        self.sessions.retain(|sid, t| {
            owners.contains(sid) || now.mono.saturating_duration_since(t.seen) < FORGET_AFTER
        });
        self.polled = true;
    }

    /// Whether a poll has been applied; before it nothing is known.
    pub fn polled(&self) -> bool {
        self.polled
    }

    /// The liveness of `session` at `now`, once polled.
    pub fn liveness(&self, session: i64, now: Instant) -> Option<Liveness> {
        let t = self.sessions.get(&session)?;
        if let Some(since) = t.missing_since {
            return Some(Liveness::Disconnected { since });
        }
        let quiet = now.saturating_duration_since(t.changed);
        match t.timeout {
            Some(timeout) if quiet > timeout * 2 / 3 => Some(Liveness::Silent { since: t.changed }),
            _ => Some(Liveness::Connected),
        }
    }

    /// How long until the server expires `session`, from `dump`.
    pub fn expires_in(&self, session: i64, now: SystemTime) -> Option<Duration> {
        let expiry = self.sessions.get(&session)?.expiry?;
        Some(expiry.duration_since(now).unwrap_or(Duration::ZERO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Now {
        Now {
            mono: base + Duration::from_millis(ms),
            wall: SystemTime::UNIX_EPOCH + Duration::from_millis(ms),
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

    #[test]
    fn disconnected_silent_and_back() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        assert!(!t.polled());
        t.observe(&[conn(1, 5), conn(2, 5)], &[], [1, 2, 3], at(t0, 0));
        assert_eq!(t.liveness(1, t0), Some(Liveness::Connected));
        assert_eq!(
            t.liveness(3, t0),
            Some(Liveness::Disconnected { since: t0 }),
            "an owner never seen connected is disconnected from the first poll"
        );
        // Session 1 keeps pinging; session 2 goes quiet; session 1 drops later.
        t.observe(&[conn(1, 6), conn(2, 5)], &[], [1, 2], at(t0, 1000));
        t.observe(&[conn(1, 7), conn(2, 5)], &[], [1, 2], at(t0, 2100));
        assert_eq!(t.liveness(1, at(t0, 2100).mono), Some(Liveness::Connected));
        assert_eq!(
            t.liveness(2, at(t0, 2100).mono),
            Some(Liveness::Silent { since: t0 }),
            "quiet for more than 2/3 of 3 s"
        );
        t.observe(&[conn(2, 9)], &[], [1, 2], at(t0, 2500));
        assert_eq!(
            t.liveness(2, at(t0, 2500).mono),
            Some(Liveness::Connected),
            "it spoke again"
        );
        assert_eq!(
            t.liveness(1, at(t0, 2500).mono),
            Some(Liveness::Disconnected {
                since: at(t0, 2500).mono
            })
        );
        t.observe(&[conn(1, 8), conn(2, 10)], &[], [1, 2], at(t0, 3000));
        assert_eq!(
            t.liveness(1, at(t0, 3000).mono),
            Some(Liveness::Connected),
            "reconnected"
        );
    }

    #[test]
    fn expiry_from_dump() {
        let t0 = Instant::now();
        let mut t = SessionTracker::default();
        let expiry = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        t.observe(&[], &[(7, Some(expiry))], [7], at(t0, 4000));
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
}
