//! Whether the agent as a whole can still be believed: set once when one of
//! its own background tasks died (a panic, or a return while it should
//! run). From then on what the models show is no longer kept current, so
//! `/ready` says why until the process exits. No I/O here.

use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct Health {
    failed: Mutex<Option<String>>,
}

impl Health {
    /// Records the first failure; later ones are the same stop.
    pub fn fail(&self, why: String) {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert(why);
    }

    /// The failure that stops the agent, if any.
    pub fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_kept() {
        let h = Health::default();
        assert_eq!(h.failure(), None);
        h.fail("a".into());
        h.fail("b".into());
        assert_eq!(h.failure().as_deref(), Some("a"));
    }
}
