//! The list of things running now (clusters, their pollers), swapped whole
//! by a configuration reload. Readers take a snapshot and keep it for what
//! they are doing (one scrape, one tick), so a reload never shows them half
//! a list.

use std::sync::Arc;

use tokio::sync::watch;

/// One watch channel holds the list: a snapshot is a clone of its `Arc`,
/// a replacement wakes whoever follows the list.
#[derive(Debug)]
pub struct Roster<T> {
    list: Arc<watch::Sender<Arc<Vec<T>>>>,
}

impl<T> Clone for Roster<T> {
    fn clone(&self) -> Self {
        Self {
            list: self.list.clone(),
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
            list: Arc::new(watch::channel(Arc::new(items)).0),
        }
    }

    /// The list as it is now.
    pub fn now(&self) -> Arc<Vec<T>> {
        self.list.borrow().clone()
    }

    /// Replaces the list; snapshots already taken keep the old one.
    pub fn replace(&self, items: Vec<T>) {
        self.list.send_replace(Arc::new(items));
    }

    /// Sees every replacement from now on (`changed()`).
    pub fn replacements(&self) -> watch::Receiver<Arc<Vec<T>>> {
        self.list.subscribe()
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
