//! What the ensemble's members said and who they are, published by the
//! sources that ask (the four-letter-word poller, the ghost check, the
//! session reading `/zookeeper/config`): they write without taking the
//! cluster's lock, and a scrape reads one snapshot of it.

use std::sync::Arc;

use tokio::sync::watch;

use crate::model::ensemble::{Ensemble, ServerPoll};

/// The ensemble as last asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnsembleReadings {
    /// The members' four-letter-word replies; `None` while no collection
    /// or ghost-check round has been applied with polling off.
    pub replies: Option<Ensemble>,
    /// Client addresses the ensemble publishes in `/zookeeper/config`.
    pub members: Vec<String>,
    /// Servers listed in `/zookeeper/config` (0 for a standalone server);
    /// `None` where it cannot be read (3.4). Whether the members polled
    /// cover the ensemble, so that a session none lists is disconnected.
    pub size: Option<usize>,
}

impl EnsembleReadings {
    /// The servers whose four-letter words to ask: `configured`, then the
    /// published members not among them.
    pub fn servers_to_poll(&self, configured: &[String]) -> Vec<String> {
        let mut servers = configured.to_vec();
        for m in &self.members {
            if !servers.contains(m) {
                servers.push(m.clone());
            }
        }
        servers
    }

    /// Collections applied so far (0 before any): what outputs key their
    /// caches on.
    pub fn generation(&self) -> u64 {
        self.replies.as_ref().map_or(0, Ensemble::generation)
    }
}

/// The readings as one snapshot channel: writers replace or amend them,
/// readers take the latest as a shared snapshot and hold no lock while
/// they render it. Cloning gives another handle on the same readings.
#[derive(Debug, Clone)]
pub struct EnsembleFeed(Arc<watch::Sender<Arc<EnsembleReadings>>>);

impl EnsembleFeed {
    /// Readings before anything was asked; with `polling` the replies
    /// start empty rather than absent (the members are polled on scrape).
    pub fn new(polling: bool) -> Self {
        let readings = EnsembleReadings {
            replies: polling.then(Ensemble::default),
            ..Default::default()
        };
        Self(Arc::new(watch::channel(Arc::new(readings)).0))
    }

    /// Changes the readings in place; copies them first only while a
    /// reader still holds the snapshot being replaced.
    fn amend(&self, f: impl FnOnce(&mut EnsembleReadings)) {
        self.0.send_modify(|r| f(Arc::make_mut(r)));
    }

    /// A scrape's collection of four-letter words: replaces every polled
    /// command's reply (see [`Ensemble::apply`]).
    pub fn collected(&self, polls: Vec<ServerPoll>) {
        self.amend(|r| r.replies.get_or_insert_with(Default::default).apply(polls));
    }

    /// A ghost-check round's replies join the others (see
    /// [`Ensemble::merge`]).
    pub fn merged(&self, polls: Vec<ServerPoll>) {
        self.amend(|r| r.replies.get_or_insert_with(Default::default).merge(polls));
    }

    /// What `/zookeeper/config` lists: client addresses, and how many
    /// servers there are (`None` where it cannot be read).
    pub fn members_published(&self, addresses: Vec<String>, size: Option<usize>) {
        self.amend(|r| {
            r.members = addresses;
            r.size = size;
        });
    }

    /// Counts on from the readings a reload replaced, so that nothing an
    /// output cached for those matches these (see [`Ensemble::follow`]).
    pub fn follow(&self, earlier: &EnsembleFeed) {
        let before = earlier.now().generation();
        self.amend(|r| {
            if let Some(replies) = &mut r.replies {
                replies.follow(before);
            }
        });
    }

    /// The readings now, as a snapshot no writer waits for.
    pub fn now(&self) -> Arc<EnsembleReadings> {
        self.0.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_held_by_a_reader_stays_as_it_was_while_writers_go_on() {
        let feed = EnsembleFeed::new(true);
        let poller = feed.clone();
        poller.members_published(vec!["a:2181".into()], Some(3));
        let held = feed.now();
        poller.collected(Vec::new());
        poller.members_published(vec!["b:2181".into()], Some(1));
        assert_eq!((held.generation(), held.size), (0, Some(3)));
        assert_eq!(held.members, ["a:2181"]);
        let now = feed.now();
        assert_eq!((now.generation(), now.size), (1, Some(1)));
        assert_eq!(
            now.servers_to_poll(&["b:2181".into(), "c:2181".into()]),
            ["b:2181", "c:2181"]
        );
    }

    #[test]
    fn replies_appear_with_the_first_round_when_polling_is_off() {
        let feed = EnsembleFeed::new(false);
        assert_eq!(feed.now().replies, None);
        feed.merged(Vec::new());
        assert_eq!(feed.now().generation(), 1);
    }

    #[test]
    fn a_reload_counts_on_from_the_readings_it_replaced() {
        let old = EnsembleFeed::new(true);
        for _ in 0..3 {
            old.collected(Vec::new());
        }
        let new = EnsembleFeed::new(true);
        new.follow(&old);
        assert_eq!(new.now().generation(), 4);
    }
}
