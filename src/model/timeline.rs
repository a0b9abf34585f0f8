//! The timeline: every master switch, masterless period and session loss,
//! with who was master, who became master and how the old one went, kept
//! in a bounded ring per cluster and served newest first. A counter sampled
//! every 15 s cannot say who was master at 03:12 or that a flap A→B→A
//! happened between two scrapes; this can.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use super::election::{MasterView, Outcome};

/// A master as the timeline names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Master {
    pub node: String,
    pub identity: String,
    /// Owner session (0: a persistent node).
    pub owner: i64,
}

impl Master {
    pub fn of(view: &MasterView<'_>) -> Self {
        Self {
            node: view.node.to_owned(),
            identity: view.identity.to_owned(),
            owner: view.owner,
        }
    }
}

/// How a master stopped being master, as far as the evidence goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Its node was deleted: the session closed, or the node was removed.
    NodeDeleted,
    /// Its node was deleted after the ghost check had seen its session
    /// disconnected or silent: the session expired.
    SessionExpired,
    /// Found at a re-listing after the agent's own outage: how it went is
    /// not known.
    DuringOutage,
    /// A candidate with a lower sequence joined and took over.
    Preempted,
}

impl Cause {
    pub fn label(self) -> &'static str {
        match self {
            Cause::NodeDeleted => "node_deleted",
            Cause::SessionExpired => "session_expired",
            Cause::DuringOutage => "unknown_during_outage",
            Cause::Preempted => "preempted",
        }
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// Mastership moved. `from` is `None` after a masterless period (its
    /// start names the last master).
    Switch {
        from: Option<Master>,
        to: Master,
        cause: Option<Cause>,
    },
    /// The last candidate went.
    MasterlessStarted { last: Master, cause: Cause },
    /// A candidate arrived after `lasted` without a master.
    MasterlessEnded { lasted: Duration, to: Master },
    /// The ghost check showed the master's session disconnected or
    /// silent (`liveness`): it holds mastership it may not exercise.
    GhostFlagged {
        master: Master,
        liveness: &'static str,
    },
    /// The same master's session is healthy again.
    GhostCleared { master: Master },
    /// The master of an election named by its owner session (`owner-*`
    /// identities) got its name, or a new one: a ghost-check round listed
    /// its session (anew, or from another address). Not a switch.
    MasterNamed { master: Master },
    /// A lock's holder changed: `holder` holds it now (node, owner).
    LockAcquired { holder: Master },
    /// A hold passed the lock tree's `max_hold`.
    LockHeldLong { holder: Master, held: Duration },
    /// What the application's lease table says of the election changed
    /// (see [`crate::model::lease::Verdict`]): ZooKeeper's master and the
    /// lease's holder as the reading found them.
    LeaseVerdict {
        verdict: super::lease::Verdict,
        master: Option<String>,
        holder: Option<String>,
    },
    /// A member registered in a group that exports its members.
    MemberJoined { member: Master },
    /// A member of such a group went.
    MemberLeft { member: Master },
    /// The agent's own session stopped reflecting ZooKeeper.
    SessionLost { state: &'static str, reason: String },
    /// The agent's session is connected again.
    SessionRestored,
}

impl What {
    pub fn kind(&self) -> &'static str {
        match self {
            What::Switch { .. } => "switch",
            What::MasterlessStarted { .. } => "masterless_started",
            What::MasterlessEnded { .. } => "masterless_ended",
            What::GhostFlagged { .. } => "ghost_flagged",
            What::GhostCleared { .. } => "ghost_cleared",
            What::MasterNamed { .. } => "master_named",
            What::LockAcquired { .. } => "lock_acquired",
            What::LockHeldLong { .. } => "lock_held_long",
            What::LeaseVerdict { .. } => "lease_verdict",
            What::MemberJoined { .. } => "member_joined",
            What::MemberLeft { .. } => "member_left",
            What::SessionLost { .. } => "session_lost",
            What::SessionRestored => "session_restored",
        }
    }
}

/// One entry of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Numbered from 1 per cluster; a gap in what a reader saw means the
    /// ring overwrote entries.
    pub seq: u64,
    pub at: SystemTime,
    /// The election (empty for session events).
    pub election: String,
    pub what: What,
}

/// A bounded ring of events, oldest dropped first.
#[derive(Debug, Clone)]
pub struct Timeline {
    cap: usize,
    ring: VecDeque<Event>,
    next: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new(10_000)
    }
}

impl Timeline {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            ring: VecDeque::new(),
            next: 1,
        }
    }

    pub fn push(&mut self, at: SystemTime, election: String, what: What) {
        if self.ring.len() == self.cap {
            self.ring.pop_front();
        }
        self.ring.push_back(Event {
            seq: self.next,
            at,
            election,
            what,
        });
        self.next += 1;
    }

    /// Newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Event> {
        self.ring.iter().rev()
    }

    /// Events numbered after `seq`, oldest first (for logging them once).
    pub fn after(&self, seq: u64) -> impl Iterator<Item = &Event> {
        self.ring.iter().filter(move |e| e.seq > seq)
    }

    /// The number the last event got (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.next - 1
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}

/// The events of one change to an election: `before` was master before
/// it, `after` is now; `cause` says how a departing master went.
pub fn election_events(
    before: Option<Master>,
    after: Option<MasterView<'_>>,
    outcome: &Outcome,
    cause: Cause,
) -> Vec<What> {
    let after = after.as_ref().map(Master::of);
    let mut events = Vec::new();
    if let (Some(lasted), Some(to)) = (outcome.masterless_ended, &after) {
        events.push(What::MasterlessEnded {
            lasted,
            to: to.clone(),
        });
    }
    match (before, after) {
        (Some(last), None) => events.push(What::MasterlessStarted { last, cause }),
        (from, Some(to)) if outcome.switched => {
            let cause = from.as_ref().map(|_| cause);
            events.push(What::Switch { from, to, cause });
        }
        _ => {}
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(name: &str) -> Master {
        Master {
            node: name.into(),
            identity: format!("id-{name}"),
            owner: 7,
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_and_numbers_every_event() {
        let mut log = Timeline::new(3);
        let t = SystemTime::UNIX_EPOCH;
        for i in 0..5 {
            log.push(t, format!("/e{i}"), What::SessionRestored);
        }
        assert_eq!(log.len(), 3, "never past its size");
        let seqs: Vec<u64> = log.newest_first().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![5, 4, 3]);
        assert_eq!(log.after(3).count(), 2);
        assert_eq!(log.last_seq(), 5);
    }

    #[test]
    fn a_departure_starts_a_masterless_period_and_an_arrival_ends_it() {
        let gone = election_events(
            Some(master("a")),
            None,
            &Outcome::default(),
            Cause::NodeDeleted,
        );
        assert_eq!(
            gone,
            vec![What::MasterlessStarted {
                last: master("a"),
                cause: Cause::NodeDeleted
            }]
        );
    }
}
