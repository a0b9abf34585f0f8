//! How the last configuration reloads went (SIGHUP, `POST /-/reload`), for
//! the two gauges Prometheus keeps for its own configuration.

use std::sync::Mutex;
use std::time::SystemTime;

#[derive(Debug, Clone, Copy)]
pub struct ReloadState {
    /// False when the last reload was refused: the configuration in force
    /// is older than the file.
    pub successful: bool,
    /// When a configuration was last taken up (the start counts).
    pub last_success: SystemTime,
    /// Reloads asked for, and those refused, since start.
    pub reloads: u64,
    pub failures: u64,
}

#[derive(Debug)]
pub struct ReloadStats(Mutex<ReloadState>);

impl ReloadStats {
    /// The configuration read at `start` is in force.
    pub fn new(start: SystemTime) -> Self {
        Self(Mutex::new(ReloadState {
            successful: true,
            last_success: start,
            reloads: 0,
            failures: 0,
        }))
    }

    pub fn succeeded(&self, at: SystemTime) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s.successful = true;
        s.last_success = at;
        s.reloads += 1;
    }

    pub fn failed(&self) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s.successful = false;
        s.reloads += 1;
        s.failures += 1;
    }

    pub fn snapshot(&self) -> ReloadState {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_failure_keeps_the_last_success_time() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let stats = ReloadStats::new(start);
        stats.failed();
        let s = stats.snapshot();
        assert!(!s.successful);
        assert_eq!(s.last_success, start);
        stats.succeeded(start + Duration::from_secs(5));
        let s = stats.snapshot();
        assert!(s.successful);
        assert_eq!(s.last_success, start + Duration::from_secs(5));
        assert_eq!((s.reloads, s.failures), (2, 1));
    }
}
