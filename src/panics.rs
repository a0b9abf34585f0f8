//! How a panic is reported: through the log, with its source location,
//! once per place and then at most once a minute with how many happened
//! since. A panic is a bug; the HTTP server answers the request 500 and
//! goes on, and a background task that panics stops the agent (see
//! [`crate::agent`]). Either way the log must say where, without ten
//! thousand identical lines when a client repeats the request that hits it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often one place is logged again while it keeps panicking.
const REPEAT: Duration = Duration::from_secs(60);

/// Panics seen per source location, and when each was last logged.
#[derive(Debug, Default)]
pub struct PanicLog {
    places: HashMap<String, Place>,
}

#[derive(Debug)]
struct Place {
    logged: Instant,
    unlogged: u64,
}

impl PanicLog {
    /// Notes a panic at `place`; returns `Some(n)` when it is to be logged
    /// now, `n` the panics there since the last line (the first: 0).
    pub fn note(&mut self, place: &str, now: Instant) -> Option<u64> {
        match self.places.get_mut(place) {
            None => {
                self.places.insert(
                    place.to_owned(),
                    Place {
                        logged: now,
                        unlogged: 0,
                    },
                );
                Some(0)
            }
            Some(p) if now.saturating_duration_since(p.logged) >= REPEAT => {
                let since = p.unlogged;
                p.logged = now;
                p.unlogged = 0;
                Some(since)
            }
            Some(p) => {
                p.unlogged = p.unlogged.saturating_add(1);
                None
            }
        }
    }
}

static LOG: Mutex<Option<PanicLog>> = Mutex::new(None);

/// Replaces the default panic message on stderr with a log line: the
/// thread, the place, the message, under the same format as every other
/// line. Called once at start by the binary.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_else(|| "unknown place".to_owned());
        let message = message(info.payload());
        let log = {
            let mut guard = LOG.lock().unwrap_or_else(|p| p.into_inner());
            guard
                .get_or_insert_with(PanicLog::default)
                .note(&place, Instant::now())
        };
        let Some(since) = log else { return };
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        if since == 0 {
            tracing::error!(%place, thread, "panic (a bug in the agent): {message}");
        } else {
            tracing::error!(
                %place,
                thread,
                more = since,
                "panic (a bug in the agent): {message}; {since} more at this place since it was last logged"
            );
        }
    }));
}

/// The text of a caught panic's payload.
pub fn message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_is_logged_once_then_once_a_minute_with_a_count() {
        let mut log = PanicLog::default();
        let t0 = Instant::now();
        assert_eq!(log.note("a.rs:1:1", t0), Some(0));
        for i in 1..=500 {
            assert_eq!(log.note("a.rs:1:1", t0 + Duration::from_millis(i)), None);
        }
        // Another place is its own first.
        assert_eq!(log.note("b.rs:2:2", t0), Some(0));
        assert_eq!(log.note("a.rs:1:1", t0 + REPEAT), Some(500));
        assert_eq!(log.note("a.rs:1:1", t0 + REPEAT), None);
        assert_eq!(log.note("a.rs:1:1", t0 + REPEAT * 2), Some(1));
    }
}
