//! Which elections need attention. Past the export cap only some elections
//! get per-election series; these rules pick them, and the tree aggregates
//! count every election by the state it is in.
//!
//! An election is in exactly one state, the most urgent that applies, so
//! the aggregates of a tree add up to its elections: `masterless` (no
//! candidate), `ghost` (its master's session is disconnected or silent, as
//! the ghost check showed), `duplicate` (candidates sharing an identity),
//! `flapping` (see [`FLAP_SWITCHES`]), `no_standby` (fewer candidates than
//! `min_candidates`), else `ok`. Each follows from evidence the agent holds;
//! a master whose session the ghost check cannot judge is `ok`.

use std::time::{Duration, Instant};

use super::cluster::ClusterState;
use super::election::Election;
#[cfg(doc)]
use super::election::FLAP_SWITCHES;
use super::election_tree::{ElectionTree, Style};

/// The state of one election; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    Masterless,
    Ghost,
    Duplicate,
    Flapping,
    NoStandby,
    Ok,
}

impl State {
    /// Most urgent first.
    pub const ALL: [State; 6] = [
        Self::Masterless,
        Self::Ghost,
        Self::Duplicate,
        Self::Flapping,
        Self::NoStandby,
        Self::Ok,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Masterless => "masterless",
            Self::Ghost => "ghost",
            Self::Duplicate => "duplicate",
            Self::Flapping => "flapping",
            Self::NoStandby => "no_standby",
            Self::Ok => "ok",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// How much an election needs attention, the order in which elections are
/// exported past the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// In a state other than `ok` now.
    Now,
    /// `ok` now, but not within the attention window.
    Recent,
    Calm,
}

impl ClusterState {
    /// Master plus standbys of an election: its candidates (sequential), or
    /// the master plus the distinct members of its standby registry (node
    /// style; a registry that lists the master too, as Kafka's
    /// `brokers/ids` does, counts it once). `None` for a node election
    /// without a registry: its standbys keep no node.
    pub fn candidates_of(
        &self,
        tree: &ElectionTree,
        path: &str,
        election: &Election,
    ) -> Option<usize> {
        match &tree.spec().style {
            Style::Sequential => Some(election.candidate_count()),
            Style::Node(spec) => {
                let registry = self.group(&spec.standbys.as_ref()?.registry_of(path))?;
                let master = election.master().map(|m| m.identity);
                let standbys = registry
                    .member_names()
                    .filter(|name| Some(*name) != master)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                Some(usize::from(master.is_some()) + standbys)
            }
        }
    }

    /// Whether the ghost check showed the master's session to be a ghost.
    fn ghost_master(&self, election: &Election) -> bool {
        let (Some(tracker), Some(master)) = (self.ghost(), election.master()) else {
            return false;
        };
        master.owner != 0 && tracker.liveness(master.owner).is_some_and(|l| l.is_ghost())
    }

    /// Whether the ghost check runs but cannot tell yet whether the
    /// master's session is a ghost: no round has listed it since the agent
    /// started (or since it became master), or the rounds cannot judge it.
    pub fn ghost_unjudged(&self, election: &Election) -> bool {
        let (Some(tracker), Some(master)) = (self.ghost(), election.master()) else {
            return false;
        };
        master.owner != 0
            && matches!(
                tracker.liveness(master.owner),
                None | Some(crate::model::ghost::Liveness::Unknown(_))
            )
    }

    /// The state election `election` (at `path`) of `tree` is in at `now`.
    pub fn state_of(
        &self,
        tree: &ElectionTree,
        path: &str,
        election: &Election,
        now: Instant,
    ) -> State {
        if election.master().is_none() {
            return State::Masterless;
        }
        if self.ghost_master(election) {
            return State::Ghost;
        }
        if election.duplicate_identities() > 0 {
            return State::Duplicate;
        }
        if election.is_flapping(now) {
            return State::Flapping;
        }
        let short = tree.spec().min_candidates.is_some_and(|min| {
            self.candidates_of(tree, path, election)
                .is_some_and(|n| n < min as usize)
        });
        if short {
            return State::NoStandby;
        }
        State::Ok
    }

    /// How much the election needs attention: its `state` (from
    /// [`state_of`](Self::state_of)) now, or whether it left another state
    /// within `window` (the election noticed it, its flapping ended, or
    /// its master's session was a ghost).
    pub fn tier_of(
        &self,
        election: &Election,
        state: State,
        now: Instant,
        window: Duration,
    ) -> Tier {
        if state != State::Ok {
            return Tier::Now;
        }
        let within = |t: Instant| now.saturating_duration_since(t) <= window;
        let ghost_recently = || {
            let owner = election.master().map_or(0, |m| m.owner);
            self.ghost()
                .as_ref()
                .and_then(|t| t.ghost_seen(owner))
                .is_some_and(within)
        };
        if election.noticed().is_some_and(within)
            || election.flapping_until().is_some_and(within)
            || ghost_recently()
        {
            Tier::Recent
        } else {
            Tier::Calm
        }
    }
}
