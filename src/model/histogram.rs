//! A plain-data histogram, so models can record distributions without any
//! metrics library and the collector renders them at scrape time.

/// Fixed buckets with per-bucket (non-cumulative) counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Buckets for masterless periods and failovers: sub-second to an hour.
pub const PERIOD_BUCKETS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// Buckets for ZooKeeper request round trips: 100 µs to 10 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            self.counts[i] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// `(upper bound, observations in this bucket)` pairs ending with `+Inf`,
    /// the shape `prometheus-client` encodes (it accumulates them itself).
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        let finite: u64 = self.counts.iter().sum();
        self.bounds
            .iter()
            .copied()
            .zip(self.counts.iter().copied())
            .chain(std::iter::once((f64::INFINITY, self.count - finite)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let mut h = Histogram::new(&[1.0, 5.0]);
        for v in [0.5, 1.0, 3.0, 99.0] {
            h.observe(v);
        }
        assert_eq!(h.buckets(), vec![(1.0, 2), (5.0, 1), (f64::INFINITY, 1)]);
        assert_eq!(h.count(), 4);
        assert_eq!(h.sum(), 103.5);
    }
}
