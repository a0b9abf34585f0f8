//! What the failover probe measured, kept with the cluster.

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
