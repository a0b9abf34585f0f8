//! What the HTTP side counts about itself: connections, why they were
//! closed, refused credentials and web-config reloads. Plain counters the
//! server bumps and `/metrics` reads; no I/O here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Why the server closed a connection on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Closed {
    /// No request for the idle timeout.
    #[default]
    Idle,
    /// A request's headers (or the TLS handshake) took longer than the
    /// header timeout.
    Header,
    /// The client stopped reading a response for the write timeout.
    Write,
    /// Closed while idle to make room under the connection cap.
    Evicted,
    /// The TLS handshake failed (wrong or missing client certificate,
    /// plain HTTP on a TLS port, unsupported version).
    Handshake,
}

impl Closed {
    pub const ALL: [Closed; 5] = [
        Closed::Idle,
        Closed::Header,
        Closed::Write,
        Closed::Evicted,
        Closed::Handshake,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Closed::Idle => "idle_timeout",
            Closed::Header => "header_timeout",
            Closed::Write => "write_timeout",
            Closed::Evicted => "evicted",
            Closed::Handshake => "tls_handshake_failed",
        }
    }
}

/// Counters of the HTTP server, shared between it and the exposition.
#[derive(Debug, Default)]
pub struct WebStats {
    open: AtomicU64,
    limit: AtomicU64,
    accepted: AtomicU64,
    accept_errors: AtomicU64,
    closed: [AtomicU64; 5],
    unauthorized: AtomicU64,
    panics: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    last_reload_ok: AtomicBool,
    tls: AtomicBool,
}

/// A copy of the counters, read once per scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebSnapshot {
    pub open: u64,
    pub limit: u64,
    pub accepted: u64,
    pub accept_errors: u64,
    pub closed: [(Closed, u64); 5],
    pub unauthorized: u64,
    /// Requests whose handler panicked (a bug), answered 500.
    pub panics: u64,
    pub reloads_ok: u64,
    pub reloads_failed: u64,
    pub last_reload_ok: bool,
    pub tls: bool,
}

impl WebStats {
    pub fn new(limit: u64) -> Self {
        let s = Self::default();
        s.limit.store(limit, Ordering::Relaxed);
        s.last_reload_ok.store(true, Ordering::Relaxed);
        s
    }
    pub fn opened(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
    }
    pub fn ended(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
    pub fn closed(&self, why: Closed) {
        let i = Closed::ALL.iter().position(|c| *c == why).unwrap_or(0);
        self.closed[i].fetch_add(1, Ordering::Relaxed);
    }
    pub fn accept_failed(&self) {
        self.accept_errors.fetch_add(1, Ordering::Relaxed);
    }
    pub fn refused_credentials(&self) {
        self.unauthorized.fetch_add(1, Ordering::Relaxed);
    }
    /// A handler panicked; the request was answered 500.
    pub fn panicked(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }
    /// A web-config (re)load: `ok` false keeps the previous config.
    pub fn reloaded(&self, ok: bool, tls: bool) {
        if ok {
            self.reloads_ok.fetch_add(1, Ordering::Relaxed);
            self.tls.store(tls, Ordering::Relaxed);
        } else {
            self.reloads_failed.fetch_add(1, Ordering::Relaxed);
        }
        self.last_reload_ok.store(ok, Ordering::Relaxed);
    }
    pub fn set_tls(&self, tls: bool) {
        self.tls.store(tls, Ordering::Relaxed);
    }
    pub fn snapshot(&self) -> WebSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WebSnapshot {
            open: get(&self.open),
            limit: get(&self.limit),
            accepted: get(&self.accepted),
            accept_errors: get(&self.accept_errors),
            closed: std::array::from_fn(|i| (Closed::ALL[i], get(&self.closed[i]))),
            unauthorized: get(&self.unauthorized),
            panics: get(&self.panics),
            reloads_ok: get(&self.reloads_ok),
            reloads_failed: get(&self.reloads_failed),
            last_reload_ok: self.last_reload_ok.load(Ordering::Relaxed),
            tls: self.tls.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_reload_is_counted_and_keeps_the_tls_state() {
        let s = WebStats::new(10);
        s.reloaded(true, true);
        s.reloaded(false, false);
        let snap = s.snapshot();
        assert_eq!((snap.reloads_ok, snap.reloads_failed), (1, 1));
        assert!(!snap.last_reload_ok);
        assert!(snap.tls, "a broken edit does not turn TLS off");
        s.opened();
        s.closed(Closed::Write);
        s.ended();
        let snap = s.snapshot();
        assert_eq!((snap.open, snap.accepted), (0, 1));
        assert_eq!(snap.closed[2], (Closed::Write, 1));
    }
}
