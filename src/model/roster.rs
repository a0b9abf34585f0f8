//! The list of things running now (clusters, their pollers), swapped whole
//! by a configuration reload. Readers take a snapshot and keep it for what
//! they are doing (one scrape, one tick), so a reload never shows them half
//! a list.

use std::sync::{Arc, RwLock};

use tokio::sync::watch;

#[derive(Debug)]
pub struct Roster<T> {
    list: Arc<RwLock<Arc<Vec<T>>>>,
    /// Counts the replacements: who follows the list waits on it.
    replaced: Arc<watch::Sender<u64>>,
}

impl<T> Clone for Roster<T> {
    fn clone(&self) -> Self {
        Self {
            list: self.list.clone(),
            replaced: self.replaced.clone(),
        }
    }
}

impl<T> Default for Roster<T> {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl<T> Roster<T> {
    pub fn new(items: Vec<T>) -> Self {
        Self {
            list: Arc::new(RwLock::new(Arc::new(items))),
            replaced: Arc::new(watch::channel(0).0),
        }
    }

    /// The list as it is now.
    pub fn now(&self) -> Arc<Vec<T>> {
        self.list.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the list; snapshots already taken keep the old one.
    pub fn replace(&self, items: Vec<T>) {
        *self.list.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(items);
        self.replaced.send_modify(|n| *n += 1);
    }

    /// Sees every replacement from now on (`changed()`).
    pub fn replacements(&self) -> watch::Receiver<u64> {
        self.replaced.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::Roster;

    #[test]
    fn a_snapshot_outlives_a_replacement() {
        let roster = Roster::new(vec![1, 2]);
        let shared = roster.clone();
        let before = roster.now();
        shared.replace(vec![3]);
        assert_eq!(*before, vec![1, 2]);
        assert_eq!(*roster.now(), vec![3]);
    }
}
