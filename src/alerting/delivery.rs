//! One Alertmanager's delivery state: whether a send is due, what it owes
//! (resolutions not yet delivered there), and how a finished send changes
//! that (backoff after a failure). No I/O: the pusher starts the sends.

use std::time::{Duration, Instant, SystemTime};

use super::client::SendError;
use crate::model::alerting::{Book, Firing, Key};
use crate::model::backoff::Backoff;

/// Waits between retries to an Alertmanager that fails: 2 s, doubling up
/// to 30 s.
fn retry_backoff() -> Backoff {
    Backoff::new(Duration::from_secs(2), Duration::from_secs(30))
}
/// Resolutions not delivered within this are given up (and counted).
const RESOLVED_KEPT: Duration = Duration::from_secs(600);

#[derive(Debug)]
pub(super) struct Delivery {
    /// Something changed since the last delivery.
    dirty: bool,
    last_ok: Option<Instant>,
    retry_at: Option<Instant>,
    backoff: Backoff,
    in_flight: bool,
    /// Resolved alerts (with when) not yet delivered here, oldest first.
    resolved: Vec<(Key, Firing, SystemTime)>,
    /// Whether the last attempt failed (logged once per outage).
    failing: bool,
}

/// A finished send.
#[derive(Debug)]
pub(super) struct Done {
    /// Resolutions it carried (the oldest owed when it started).
    pub resolved: usize,
    /// Alerts it carried.
    pub alerts: usize,
    pub result: Result<(), SendError>,
}

impl Default for Delivery {
    fn default() -> Self {
        Self {
            dirty: false,
            last_ok: None,
            retry_at: None,
            backoff: retry_backoff(),
            in_flight: false,
            resolved: Vec::new(),
            failing: false,
        }
    }
}

impl Delivery {
    /// Alerts fired or resolved at `wall`: a send is due, and `resolved`
    /// is owed until delivered. Bounded while the Alertmanager is
    /// unreachable: past `cap` the oldest resolutions go (their number is
    /// returned, to be counted); not while a send is in flight, which
    /// counts what it carried.
    pub fn enqueue(&mut self, resolved: &[(Key, Firing)], wall: SystemTime, cap: usize) -> usize {
        self.dirty = true;
        self.resolved
            .extend(resolved.iter().map(|(k, f)| (k.clone(), f.clone(), wall)));
        if self.resolved.len() > cap && !self.in_flight {
            let over = self.resolved.len() - cap;
            self.resolved.drain(..over);
            return over;
        }
        0
    }

    /// Whether a send should start now: something changed, resolutions
    /// are owed, or what fires is due to be resent; never while one is in
    /// flight or before a retry is due. Gives up resolutions owed longer
    /// than [`RESOLVED_KEPT`] (their number is returned).
    pub fn due(
        &mut self,
        book: &Book,
        now: Instant,
        wall: SystemTime,
        resend_interval: Duration,
    ) -> (bool, usize) {
        if self.in_flight {
            return (false, 0);
        }
        let stale_before = wall - RESOLVED_KEPT;
        let before = self.resolved.len();
        self.resolved.retain(|(_, _, at)| *at >= stale_before);
        let dropped = before - self.resolved.len();
        let resend_due = !book.is_empty()
            && self
                .last_ok
                .is_none_or(|t| now.saturating_duration_since(t) >= resend_interval);
        let wanted = self.dirty || resend_due || !self.resolved.is_empty();
        if !wanted || self.retry_at.is_some_and(|t| now < t) {
            return (false, dropped);
        }
        if book.is_empty() && self.resolved.is_empty() {
            self.dirty = false;
            return (false, dropped);
        }
        (true, dropped)
    }

    /// The resolutions owed, oldest first, with when each resolved.
    pub fn resolved(&self) -> impl Iterator<Item = (&Key, &Firing, SystemTime)> {
        self.resolved.iter().map(|(k, f, at)| (k, f, *at))
    }

    /// A send starts with every resolution owed now; returns how many.
    pub fn start(&mut self) -> usize {
        self.in_flight = true;
        self.dirty = false;
        self.resolved.len()
    }

    /// A send finished at `now`. Delivered: the resolutions it carried are
    /// paid (those that arrived meanwhile stay owed). Failed: retried after
    /// a backoff (see [`retry_backoff`]).
    pub fn on_done(&mut self, done: &Done, now: Instant) {
        self.in_flight = false;
        match done.result {
            Ok(()) => {
                let mut resolved = std::mem::take(&mut self.resolved);
                let kept = resolved.split_off(done.resolved.min(resolved.len()));
                *self = Delivery {
                    last_ok: Some(now),
                    resolved: kept,
                    dirty: self.dirty,
                    ..Delivery::default()
                };
            }
            Err(_) => {
                self.failing = true;
                self.retry_at = Some(now + self.backoff.next_delay());
                self.dirty = true;
            }
        }
    }

    /// Whether nothing is owed, in flight or waiting for a retry: no send
    /// can come due with time alone.
    pub fn idle(&self) -> bool {
        !self.dirty && !self.in_flight && self.resolved.is_empty() && self.retry_at.is_none()
    }

    /// Whether the last attempt failed.
    pub fn failing(&self) -> bool {
        self.failing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::alerting::{Kind, Thresholds};

    fn book() -> Book {
        Book::new(Thresholds {
            no_master_for: Duration::from_secs(5),
            session_lost_for: Duration::from_secs(30),
            holds: [None; Kind::ALL.len()],
            windows: [None; Kind::ALL.len()],
            max_alerts: 10,
        })
    }

    fn resolution(election: &str) -> (Key, Firing) {
        let key = (Kind::NoMaster, "c".to_owned(), election.to_owned());
        let firing = Firing {
            since: Instant::now(),
            value: 0,
        };
        (key, firing)
    }

    fn done(resolved: usize, ok: bool) -> Done {
        let result = if ok {
            Ok(())
        } else {
            Err(SendError {
                reason: "connect",
                detail: "refused".into(),
            })
        };
        Done {
            resolved,
            alerts: resolved,
            result,
        }
    }

    #[test]
    fn resolutions_arriving_during_a_send_stay_owed() {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let mut d = Delivery::default();
        d.enqueue(&[resolution("/a")], wall, 40);
        assert_eq!(
            d.due(&book(), now, wall, Duration::from_secs(60)),
            (true, 0)
        );
        assert_eq!(d.start(), 1);
        assert!(
            !d.due(&book(), now, wall, Duration::from_secs(60)).0,
            "in flight"
        );
        d.enqueue(&[resolution("/b")], wall, 40);
        d.on_done(&done(1, true), now);
        let owed: Vec<&str> = d.resolved().map(|(k, _, _)| k.2.as_str()).collect();
        assert_eq!(owed, ["/b"]);
        assert!(d.due(&book(), now, wall, Duration::from_secs(60)).0);
    }

    #[test]
    fn it_is_idle_only_with_nothing_owed_in_flight_or_to_retry() {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let mut d = Delivery::default();
        assert!(d.idle());
        d.enqueue(&[resolution("/a")], wall, 40);
        assert!(!d.idle(), "owed");
        d.start();
        assert!(!d.idle(), "in flight");
        d.on_done(&done(1, false), now);
        assert!(!d.idle(), "a retry is due");
        d.start();
        d.on_done(&done(1, true), now);
        assert!(d.idle(), "delivered");
        // A change with nothing left to say is dropped at the next look.
        d.enqueue(&[], wall, 40);
        assert!(!d.idle());
        assert!(!d.due(&book(), now, wall, Duration::from_secs(60)).0);
        assert!(d.idle());
    }

    #[test]
    fn a_failed_send_backs_off_doubling_up_to_the_cap() {
        let (t0, wall) = (Instant::now(), SystemTime::now());
        let mut d = Delivery::default();
        d.enqueue(&[resolution("/a")], wall, 40);
        let mut waits = Vec::new();
        let mut now = t0;
        for _ in 0..6 {
            assert!(d.due(&book(), now, wall, Duration::from_secs(60)).0);
            d.start();
            d.on_done(&done(1, false), now);
            assert!(d.failing());
            let retry = d.retry_at.unwrap();
            assert!(
                !d.due(
                    &book(),
                    retry - Duration::from_millis(1),
                    wall,
                    Duration::from_secs(60)
                )
                .0
            );
            waits.push((retry - now).as_secs());
            now = retry;
        }
        assert_eq!(waits, [2, 4, 8, 16, 30, 30]);
        d.start();
        d.on_done(&done(1, true), now);
        assert!(!d.failing() && d.resolved().next().is_none());
    }

    #[test]
    fn owed_resolutions_are_bounded_and_given_up_after_ten_minutes() {
        let wall = SystemTime::now();
        let mut d = Delivery::default();
        let many: Vec<_> = (0..5).map(|i| resolution(&format!("/e{i}"))).collect();
        assert_eq!(d.enqueue(&many, wall, 3), 2, "the two oldest go");
        let later = wall + RESOLVED_KEPT + Duration::from_secs(1);
        assert_eq!(
            d.due(&book(), Instant::now(), later, Duration::from_secs(60)),
            (false, 3)
        );
    }
}
