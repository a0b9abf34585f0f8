//! The one backoff of the agent's retries: a wait that doubles after each
//! failure from `start` up to `max`, and starts over after a success. The
//! ZooKeeper connect, the Kerberos checks and the Alertmanager deliveries
//! each keep one. Pure: a caller that wants jitter passes it in.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    start: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Waits `start`, then twice as long after each failure, at most `max`.
    pub const fn new(start: Duration, max: Duration) -> Self {
        Self {
            start,
            max,
            next: start,
        }
    }

    /// After a success: the next failure waits `start` again.
    pub fn reset(&mut self) {
        self.next = self.start;
    }

    /// The wait after this failure; the next one is twice as long, up to
    /// `max`.
    pub fn next_delay(&mut self) -> Duration {
        self.next_delay_jittered(0)
    }

    /// [`Backoff::next_delay`] lengthened by `permille` thousandths (at
    /// most 1000), so that several agents failing together do not retry in
    /// lockstep.
    pub fn next_delay_jittered(&mut self, permille: u32) -> Duration {
        let delay = self.next + self.next * permille.min(1000) / 1000;
        self.next = (self.next * 2).min(self.max);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_starts_over_after_a_success() {
        let mut b = Backoff::new(Duration::from_secs(2), Duration::from_secs(30));
        let waits: Vec<u64> = (0..7).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 30, 30, 30]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_secs(2));
    }

    #[test]
    fn jitter_lengthens_a_wait_by_thousandths_and_no_more_than_double() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
        assert_eq!(b.next_delay_jittered(99), Duration::from_micros(274_750));
        assert_eq!(b.next_delay_jittered(5000), Duration::from_secs(1));
    }
}
