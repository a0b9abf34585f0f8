//! What the failover probe measured: published by the probe task, which
//! writes its figures without taking the cluster's lock, and read by the
//! scrape as they are at that moment.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::model::histogram;

/// What the failover probe measured.
#[derive(Debug, Clone)]
pub struct ProbeStats {
    /// Master session closed → standby sees itself master.
    pub failover: histogram::Histogram,
    /// Master session abandoned → standby sees itself master (expiry).
    pub expiry: histogram::Histogram,
    /// Rounds that failed (no rights, timeouts, connection trouble).
    pub errors: u64,
}

impl Default for ProbeStats {
    fn default() -> Self {
        Self {
            failover: histogram::Histogram::new(histogram::LATENCY_BUCKETS),
            expiry: histogram::Histogram::new(histogram::PERIOD_BUCKETS),
            errors: 0,
        }
    }
}

/// The probe's figures as one snapshot channel: the probe task writes
/// (one handle, taken when it starts), outputs read the latest. Cloning
/// gives another handle on the same figures.
#[derive(Debug, Clone, Default)]
pub struct ProbeFeed(Arc<watch::Sender<ProbeStats>>);

impl ProbeFeed {
    /// The standby took over this long after its master's session was
    /// closed.
    pub fn failover(&self, took: Duration) {
        self.0
            .send_modify(|s| s.failover.observe(took.as_secs_f64()));
    }

    /// The standby took over this long after its master's session was
    /// abandoned (expiry).
    pub fn expiry(&self, took: Duration) {
        self.0.send_modify(|s| s.expiry.observe(took.as_secs_f64()));
    }

    /// A round failed.
    pub fn failed(&self) {
        self.0.send_modify(|s| s.errors += 1);
    }

    /// The figures now; held only while they are read (writes wait).
    pub fn now(&self) -> watch::Ref<'_, ProbeStats> {
        self.0.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handle_writes_and_reads_the_same_figures() {
        let feed = ProbeFeed::default();
        let writer = feed.clone();
        writer.failover(Duration::from_millis(30));
        writer.expiry(Duration::from_secs(4));
        writer.failed();
        let now = feed.now();
        assert_eq!(now.errors, 1);
        assert_eq!(now.failover.count(), 1);
        assert_eq!(now.expiry.count(), 1);
    }
}
