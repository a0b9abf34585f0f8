//! The one time type of the models: every event is applied at a [`Now`]
//! the caller passes in, so no rule reads a clock and every rule can be
//! tested at any moment.

use std::time::{Instant, SystemTime};

/// The moment an event is applied: monotonic for durations, wall clock for
/// the timestamps that are exported.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    pub mono: Instant,
    pub wall: SystemTime,
}

impl Now {
    /// The current time; only sources and outputs call this, models never do.
    pub fn current() -> Self {
        Self {
            mono: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}
