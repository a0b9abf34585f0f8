//! Which elections the latest scrape gave series, kept for the lookup.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use super::tree::TreeId;

/// The elections a scrape gave series while the cluster was past its cap,
/// kept for the lookup. A survey takes every election's state (hundreds of
/// milliseconds at a million, under the read lock that the watch's writes
/// wait for); a lookup asking whether one election has series should not
/// repeat it. Under the cap every election has series at every scrape, so
/// only the past-the-cap choice is remembered. Written by the scrape under
/// the cluster's read lock, hence the mutex of its own.
#[derive(Debug, Default)]
pub struct ExportRecord(Mutex<Option<Chosen>>);

/// Paths given series, per tree.
type Chosen = HashMap<TreeId, HashSet<Box<str>>>;

impl ExportRecord {
    fn lock(&self) -> MutexGuard<'_, Option<Chosen>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The elections (tree, path) a scrape past the cap gave series.
    pub fn remember<'a>(&self, chosen: impl Iterator<Item = (TreeId, &'a str)>) {
        let mut set = Chosen::new();
        for (tree, path) in chosen {
            set.entry(tree).or_default().insert(Box::from(path));
        }
        *self.lock() = Some(set);
    }

    /// Whether the latest scrape that chose gave election `path` of
    /// `tree` series; `None` before one did.
    pub fn chose(&self, tree: TreeId, path: &str) -> Option<bool> {
        let chosen = self.lock();
        chosen
            .as_ref()
            .map(|c| c.get(&tree).is_some_and(|paths| paths.contains(path)))
    }
}
