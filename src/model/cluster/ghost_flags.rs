//! What a ghost-check round changes in a cluster: the ghost check's view of
//! every owner session, and the timeline's ghost flags of masters that stay
//! in place (a master that left is told by its switch).

use std::collections::{BTreeMap, BTreeSet};

use super::ClusterState;
use crate::model::ghost::{Liveness, Round, SessionTracker};
use crate::model::timeline::{Master, What};

impl ClusterState {
    /// [`ghost_masters`](Self::ghost_masters) when `walk`, else none (no
    /// session is a ghost, so no master is).
    fn ghost_masters_if(&self, walk: bool) -> BTreeMap<String, (Master, &'static str)> {
        if walk {
            self.ghost_masters()
        } else {
            BTreeMap::new()
        }
    }

    /// Masters whose session the ghost check show as a ghost, by election,
    /// with how (`disconnected`, `silent`).
    pub fn ghost_masters(&self) -> BTreeMap<String, (Master, &'static str)> {
        let mut out = BTreeMap::new();
        let Some(tracker) = &self.ghost else {
            return out;
        };
        // A tree not synced shows masters that may be long gone: no flags
        // from it (a stale view is not a reading).
        let synced = self.trees.iter().filter(|t| t.synced());
        for tree in synced.filter_map(|t| t.as_elections()) {
            for (path, election) in tree.elections() {
                let Some(m) = election.master().filter(|m| m.owner != 0) else {
                    continue;
                };
                let how = match tracker.liveness(m.owner) {
                    Some(Liveness::Disconnected { .. }) => "disconnected",
                    Some(Liveness::Silent { .. }) => "silent",
                    _ => continue,
                };
                out.insert(path.to_owned(), (Master::of(&m), how));
            }
        }
        out
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
        // while that set stays, no flag is raised or cleared, and the two
        // walks over every election are spared.
        let ghosts_before = self.ghost.as_ref().map(SessionTracker::ghost_owners);
        let before = self.ghost_masters_if(ghosts_before.as_ref().is_none_or(|g| !g.is_empty()));
        self.ghost
            .get_or_insert_with(SessionTracker::default)
            .observe(round, owners);
        let ghosts_after = self.ghost.as_ref().map(SessionTracker::ghost_owners);
        let unchanged = ghosts_before.is_some() && ghosts_before == ghosts_after;
        if let Some(tracker) = &self.ghost {
            for tree in &mut self.trees {
                tree.name_owners(|owner| tracker.address(owner));
            }
        }
        self.take_events(round.finished);
        if unchanged {
            if let Some(watchers) = watchers {
                self.watchers_seen(&watchers);
            }
            return;
        }
        let after = self.ghost_masters();
        for (election, (master, liveness)) in &after {
            if !before.contains_key(election) {
                let what = What::GhostFlagged {
                    master: master.clone(),
                    liveness,
                };
                self.timeline.push(at, election.clone(), what);
            }
        }
        for (election, (master, _)) in before {
            let still = self.trees.iter().filter_map(|t| t.as_elections()).any(|t| {
                t.election(&election)
                    .and_then(|e| e.master())
                    .is_some_and(|m| m.node == master.node && m.owner == master.owner)
            });
            if still && !after.contains_key(&election) {
                self.timeline
                    .push(at, election, What::GhostCleared { master });
            }
        }
        if let Some(watchers) = watchers {
            self.watchers_seen(&watchers);
        }
    }
}
