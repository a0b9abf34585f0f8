//! What a ghost-check round changes in a cluster: the ghost check's view of
//! every owner session, and the timeline's ghost flags of masters that stay
//! in place (a master that left is told by its switch).

use std::collections::{BTreeMap, BTreeSet};

use super::ClusterState;
use crate::model::election::MasterView;
use crate::model::ghost::{Liveness, Round, SessionTracker};
use crate::model::timeline::{Master, What};

impl ClusterState {
    /// Masters whose session the ghost check show as a ghost, by election,
    /// with how (`disconnected`, `silent`).
    pub fn ghost_masters(&self) -> BTreeMap<String, (Master, &'static str)> {
        let mut out = BTreeMap::new();
        let Some(tracker) = &self.ghost else {
            return out;
        };
        for (path, m) in self.synced_masters() {
            let how = match tracker.liveness(m.owner) {
                Some(Liveness::Disconnected { .. }) => "disconnected",
                Some(Liveness::Silent { .. }) => "silent",
                _ => continue,
            };
            out.insert(path.to_owned(), (Master::of(&m), how));
        }
        out
    }

    /// Every master of the synced election trees, with an owner session.
    /// A tree not synced shows masters that may be long gone: no flags
    /// from it (a stale view is not a reading).
    fn synced_masters(&self) -> impl Iterator<Item = (&str, MasterView<'_>)> {
        self.trees
            .iter()
            .filter(|t| t.synced())
            .filter_map(|t| t.as_elections())
            .flat_map(|tree| tree.elections())
            .filter_map(|(path, e)| Some((path, e.master().filter(|m| m.owner != 0)?)))
    }

    /// A ghost-check round: the session tracker judges what it shows
    /// about `owners` (the owners when the round began). `watchers`, when
    /// `wchp` was asked, are the sessions watching each path.
    pub fn ghost_round(
        &mut self,
        round: Round<'_>,
        owners: Vec<i64>,
        watchers: Option<BTreeMap<String, BTreeSet<i64>>>,
    ) {
        let at = round.finished.wall;
        // Which masters are ghosts changes only with which owners are:
        // while that set stays, no flag is raised or cleared and no
        // election is walked. When it changes, one walk finds the masters
        // of the sessions that became ghosts or stopped being ones (a
        // round changes no election, so their masters are the same).
        let before = self.ghost.as_ref().map(SessionTracker::ghost_owners);
        self.ghost
            .get_or_insert_with(SessionTracker::default)
            .observe(round, owners);
        let after = self.ghost.as_ref().map(SessionTracker::ghost_owners);
        let unchanged = before.is_some() && before == after;
        if let Some(tracker) = &self.ghost {
            for tree in &mut self.trees {
                tree.name_owners(|owner| tracker.address(owner));
            }
        }
        self.take_events(round.finished);
        let (before, after) = (before.unwrap_or_default(), after.unwrap_or_default());
        let any_ghost = !(before.is_empty() && after.is_empty());
        if !unchanged && any_ghost {
            let mut flags = Vec::new();
            if let Some(tracker) = &self.ghost {
                for (path, m) in self.synced_masters() {
                    let (was, is) = (before.contains(&m.owner), after.contains(&m.owner));
                    if is && !was {
                        let liveness = match tracker.liveness(m.owner) {
                            Some(Liveness::Silent { .. }) => "silent",
                            _ => "disconnected",
                        };
                        let what = What::GhostFlagged {
                            master: Master::of(&m),
                            liveness,
                        };
                        flags.push((path.to_owned(), what));
                    } else if was && !is {
                        let what = What::GhostCleared {
                            master: Master::of(&m),
                        };
                        flags.push((path.to_owned(), what));
                    }
                }
            }
            for (election, what) in flags {
                self.timeline.push(at, election, what);
            }
        }
        if let Some(watchers) = watchers {
            self.watchers_seen(&watchers);
        }
    }
}
