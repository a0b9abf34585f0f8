//! The open connections and their bookkeeping: when each was last active,
//! whether a request is in flight or half-arrived, which one to evict
//! under the cap; and the guards that give a connection's slot and a
//! request's in-flight mark back on drop, so that no way out of a task, a
//! panic included, leaves a slot taken for good.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::config::HttpLimits;
use crate::model::web::{Closed, WebStats};

/// One connection's state, shared by its I/O, its requests and the
/// accept loop (which may evict it).
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) born: Instant,
    /// Milliseconds since `born` of the last byte read or written, or of
    /// the last response.
    pub(super) active: AtomicU64,
    /// Milliseconds since `born` (+1; 0: none) of the first byte of a
    /// request not yet handed to a handler.
    pub(super) partial: AtomicU64,
    pub(super) in_flight: AtomicUsize,
    /// HTTP/2 (negotiated by ALPN): frames arrive between requests
    /// (acknowledgements, window updates, pings), so bytes while idle are
    /// not the start of a request and only the idle timeout applies.
    pub(super) h2: AtomicBool,
    pub(super) evicted: AtomicBool,
    pub(super) evict: Notify,
}

impl Conn {
    pub(super) fn new() -> Self {
        Self {
            born: Instant::now(),
            active: AtomicU64::new(0),
            partial: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            h2: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
        }
    }
    pub(super) fn now_ms(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
    pub(super) fn at(&self, ms: u64) -> Instant {
        self.born + Duration::from_millis(ms)
    }
    pub(super) fn touched(&self) {
        self.active.store(self.now_ms(), Ordering::Relaxed);
    }
    pub(super) fn received(&self) {
        self.touched();
        if self.in_flight.load(Ordering::Relaxed) == 0 && !self.h2.load(Ordering::Relaxed) {
            let _ = self.partial.compare_exchange(
                0,
                self.now_ms() + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
    pub(super) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.partial.store(0, Ordering::Relaxed);
    }
    pub(super) fn end(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.touched();
    }
    /// When reading should give up, and why: never while a request is
    /// being handled; a header timeout once a request has begun to
    /// arrive; else the idle timeout.
    pub(super) fn read_deadline(&self, limits: &HttpLimits) -> Option<(Instant, Closed)> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        match self.partial.load(Ordering::Relaxed) {
            0 => Some((
                self.at(self.active.load(Ordering::Relaxed)) + limits.idle_timeout,
                Closed::Idle,
            )),
            p => Some((self.at(p - 1) + limits.header_timeout, Closed::Header)),
        }
    }
}

/// The open connections.
#[derive(Debug, Default)]
pub(super) struct Conns {
    pub(super) open: Mutex<HashMap<u64, Arc<Conn>>>,
    pub(super) next: AtomicU64,
    /// One permit per connection that ended.
    pub(super) ended: Notify,
}

impl Conns {
    pub(super) fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
    pub(super) fn add(&self) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new());
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, conn.clone());
        (id, conn)
    }
    pub(super) fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        self.ended.notify_one();
    }
    /// Asks the connection idle the longest (no request in flight) to
    /// close; false when every connection is busy.
    pub(super) fn evict_idlest(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let idlest = open
            .values()
            .filter(|c| {
                c.in_flight.load(Ordering::Relaxed) == 0 && !c.evicted.load(Ordering::Relaxed)
            })
            .min_by_key(|c| c.at(c.active.load(Ordering::Relaxed)));
        match idlest {
            Some(c) => {
                c.evicted.store(true, Ordering::Relaxed);
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's place among the open ones and in the open-connections
/// gauge, given back on drop: on every way out of its task.
pub(super) struct Slot {
    pub(super) id: u64,
    pub(super) conns: Arc<Conns>,
    pub(super) stats: Arc<WebStats>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.ended();
        self.conns.remove(self.id);
    }
}

/// A request being handled: the connection counts it busy (never evicted,
/// no read deadline) until this is dropped, however the handler ended.
pub(super) struct InFlight(Arc<Conn>);

impl InFlight {
    pub(super) fn begin(conn: Arc<Conn>) -> Self {
        conn.begin();
        Self(conn)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_waits_for_the_idle_then_the_header_timeout_and_never_during_a_request() {
        let limits = HttpLimits::default();
        let c = Conn::new();
        let (_, why) = c.read_deadline(&limits).unwrap();
        assert_eq!(why, Closed::Idle);
        c.received();
        let (_, why) = c.read_deadline(&limits).unwrap();
        assert_eq!(why, Closed::Header, "a request has begun to arrive");
        c.begin();
        assert_eq!(c.read_deadline(&limits), None);
        c.end();
        assert_eq!(c.read_deadline(&limits).unwrap().1, Closed::Idle);
        // HTTP/2 frames between requests are not a request arriving.
        let h2 = Conn::new();
        h2.h2.store(true, Ordering::Relaxed);
        h2.received();
        assert_eq!(h2.read_deadline(&limits).unwrap().1, Closed::Idle);
    }

    #[test]
    fn eviction_picks_an_idle_connection_never_a_busy_one() {
        let conns = Conns::default();
        let (_, busy) = conns.add();
        busy.begin();
        assert!(!conns.evict_idlest(), "nothing idle");
        let (_, idle) = conns.add();
        assert!(conns.evict_idlest());
        assert!(idle.evicted.load(Ordering::Relaxed));
        assert!(!busy.evicted.load(Ordering::Relaxed));
        assert!(!conns.evict_idlest(), "an evicted one is not asked twice");
    }
}
