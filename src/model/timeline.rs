//! The timeline: every master switch, masterless period and session loss,
//! with who was master, who became master and how the old one went, kept
//! in bounded rings per cluster and served newest first. A counter sampled
//! every 15 s cannot say who was master at 03:12 or that a flap A→B→A
//! happened between two scrapes; this can.
//!
//! Each [`Class`] of entries has a ring of its own: a busy lock hands over
//! several times a second and a registry churns with every deploy, and in
//! one shared ring they evicted the switches within the hour.

use std::collections::{HashMap, VecDeque};
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
    /// Mastership moved. After a masterless period `from` and `cause` are
    /// those of the master whose going started it, and `masterless` how
    /// long it lasted; `from` is `None` only when the timeline no longer
    /// knows who that was (an election first seen masterless).
    Switch {
        from: Option<Master>,
        to: Master,
        cause: Option<Cause>,
        masterless: Option<Duration>,
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

/// Which ring an entry is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Switches, masterless periods, ghosts, naming, lease verdicts.
    Elections,
    /// Lock hand-overs and long holds.
    Locks,
    /// Group members joining and leaving.
    Members,
    /// The agent's own session.
    Session,
}

impl Class {
    pub const ALL: [Class; 4] = [
        Class::Elections,
        Class::Locks,
        Class::Members,
        Class::Session,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Class::Elections => "elections",
            Class::Locks => "locks",
            Class::Members => "members",
            Class::Session => "session",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Every [`What::kind`], for validating a filter.
pub const KINDS: &[&str] = &[
    "switch",
    "masterless_started",
    "masterless_ended",
    "ghost_flagged",
    "ghost_cleared",
    "master_named",
    "lock_acquired",
    "lock_held_long",
    "lease_verdict",
    "member_joined",
    "member_left",
    "session_lost",
    "session_restored",
];

impl What {
    pub fn class(&self) -> Class {
        match self {
            What::Switch { .. }
            | What::MasterlessStarted { .. }
            | What::MasterlessEnded { .. }
            | What::GhostFlagged { .. }
            | What::GhostCleared { .. }
            | What::MasterNamed { .. }
            | What::LeaseVerdict { .. } => Class::Elections,
            What::LockAcquired { .. } | What::LockHeldLong { .. } => Class::Locks,
            What::MemberJoined { .. } | What::MemberLeft { .. } => Class::Members,
            What::SessionLost { .. } | What::SessionRestored => Class::Session,
        }
    }

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

/// Bounded rings of events, one per [`Class`], oldest dropped first; one
/// numbering across them.
#[derive(Debug, Clone)]
pub struct Timeline {
    cap: usize,
    rings: [VecDeque<Event>; 4],
    next: u64,
    /// Per masterless election, the master whose going made it so, how it
    /// went and the number of that entry: the switch that ends the period
    /// names them. At most `2 * cap` (elections deleted while masterless
    /// would otherwise stay forever).
    departed: HashMap<String, (Master, Cause, u64)>,
}

/// Entries per class a timeline keeps unless configured otherwise.
pub const DEFAULT_CAP: usize = 10_000;

impl Default for Timeline {
    fn default() -> Self {
        Self::new(DEFAULT_CAP)
    }
}

impl Timeline {
    /// `cap` entries per class.
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            rings: Default::default(),
            next: 1,
            departed: HashMap::new(),
        }
    }

    pub fn push(&mut self, at: SystemTime, election: String, mut what: What) {
        let seq = self.next;
        match &mut what {
            What::MasterlessStarted { last, cause } => {
                self.departed
                    .insert(election.clone(), (last.clone(), *cause, seq));
                if self.departed.len() > 2 * self.cap {
                    let cut = seq.saturating_sub(self.cap as u64);
                    self.departed.retain(|_, d| d.2 > cut);
                }
            }
            What::Switch { from, cause, .. } => {
                let departed = self.departed.remove(&election);
                if from.is_none()
                    && let Some((last, how, _)) = departed
                {
                    *from = Some(last);
                    *cause = Some(how);
                }
            }
            _ => {}
        }
        let ring = &mut self.rings[what.class().index()];
        if ring.len() == self.cap {
            ring.pop_front();
        }
        ring.push_back(Event {
            seq,
            at,
            election,
            what,
        });
        self.next += 1;
    }

    /// Newest first, every class.
    pub fn newest_first(&self) -> NewestFirst<'_> {
        NewestFirst(self.rings.each_ref().map(|r| r.iter().rev().peekable()))
    }

    /// Newest first, one class.
    pub fn newest_of(&self, class: Class) -> impl Iterator<Item = &Event> {
        self.rings[class.index()].iter().rev()
    }

    /// Events numbered after `seq`, oldest first (for logging them once).
    pub fn after(&self, seq: u64) -> Vec<&Event> {
        let mut new: Vec<&Event> = self
            .rings
            .iter()
            .flat_map(|r| r.range(r.partition_point(|e| e.seq <= seq)..))
            .collect();
        new.sort_unstable_by_key(|e| e.seq);
        new
    }

    /// The number the last event got (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.next - 1
    }

    pub fn len(&self) -> usize {
        self.rings.iter().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries of `class` kept, and when the oldest of them happened: how
    /// far back its history reaches.
    pub fn reach(&self, class: Class) -> (usize, Option<SystemTime>) {
        let ring = &self.rings[class.index()];
        (ring.len(), ring.front().map(|e| e.at))
    }
}

/// The rings merged by number, newest first.
pub struct NewestFirst<'a>(
    [std::iter::Peekable<std::iter::Rev<std::collections::vec_deque::Iter<'a, Event>>>; 4],
);

impl<'a> Iterator for NewestFirst<'a> {
    type Item = &'a Event;

    fn next(&mut self) -> Option<&'a Event> {
        let newest = self
            .0
            .iter_mut()
            .enumerate()
            .filter_map(|(i, it)| it.peek().map(|e| (e.seq, i)))
            .max()?
            .1;
        self.0[newest].next()
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
            events.push(What::Switch {
                from,
                to,
                cause,
                masterless: outcome.masterless_ended,
            });
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
        assert_eq!(log.after(3).len(), 2);
        assert_eq!(log.last_seq(), 5);
    }

    fn switch(from: Option<Master>, to: &str) -> What {
        What::Switch {
            cause: from.as_ref().map(|_| Cause::Preempted),
            from,
            to: master(to),
            masterless: None,
        }
    }

    #[test]
    fn lock_hand_overs_cannot_evict_switches() {
        let mut log = Timeline::new(3);
        let t = SystemTime::UNIX_EPOCH;
        log.push(t, "/e".into(), switch(Some(master("a")), "b"));
        for _ in 0..100 {
            log.push(
                t,
                "/l".into(),
                What::LockAcquired {
                    holder: master("w"),
                },
            );
        }
        log.push(t, String::new(), What::SessionRestored);
        assert_eq!(
            log.len(),
            3 + 1 + 1,
            "3 lock entries, the switch, the session"
        );
        let kinds: Vec<(&str, u64)> = log.newest_first().map(|e| (e.what.kind(), e.seq)).collect();
        assert_eq!(
            kinds,
            [
                ("session_restored", 102),
                ("lock_acquired", 101),
                ("lock_acquired", 100),
                ("lock_acquired", 99),
                ("switch", 1)
            ],
            "merged by number, newest first"
        );
        let after: Vec<u64> = log.after(99).iter().map(|e| e.seq).collect();
        assert_eq!(after, [100, 101, 102]);
        assert_eq!(log.reach(Class::Elections).0, 1);
        assert_eq!(log.newest_of(Class::Locks).count(), 3);
    }

    #[test]
    fn a_switch_after_a_masterless_period_names_the_master_that_went_and_how() {
        let mut log = Timeline::new(10);
        let t = SystemTime::UNIX_EPOCH;
        log.push(
            t,
            "/e".into(),
            What::MasterlessStarted {
                last: master("a"),
                cause: Cause::SessionExpired,
            },
        );
        log.push(
            t,
            "/e".into(),
            What::Switch {
                from: None,
                to: master("b"),
                cause: None,
                masterless: Some(Duration::from_secs(3)),
            },
        );
        let What::Switch {
            from,
            cause,
            masterless,
            ..
        } = &log.newest_first().next().unwrap().what
        else {
            panic!("not a switch");
        };
        assert_eq!(
            (from.as_ref(), *cause, *masterless),
            (
                Some(&master("a")),
                Some(Cause::SessionExpired),
                Some(Duration::from_secs(3))
            )
        );
        // Used once: a later switch from nobody stays unknown.
        log.push(t, "/e".into(), switch(None, "c"));
        assert!(matches!(
            &log.newest_first().next().unwrap().what,
            What::Switch {
                from: None,
                cause: None,
                ..
            }
        ));
    }

    #[test]
    fn masterless_elections_are_remembered_boundedly() {
        let mut log = Timeline::new(5);
        let t = SystemTime::UNIX_EPOCH;
        for i in 0..1000 {
            log.push(
                t,
                format!("/e{i}"),
                What::MasterlessStarted {
                    last: master("a"),
                    cause: Cause::NodeDeleted,
                },
            );
            assert!(log.departed.len() <= 10);
        }
        // The newest are still known.
        log.push(t, "/e999".into(), switch(None, "b"));
        assert!(matches!(
            &log.newest_first().next().unwrap().what,
            What::Switch { from: Some(_), .. }
        ));
    }

    #[test]
    fn every_kind_is_listed() {
        let m = master("a");
        let all = [
            switch(None, "a"),
            What::MasterlessStarted {
                last: m.clone(),
                cause: Cause::NodeDeleted,
            },
            What::MasterlessEnded {
                lasted: Duration::ZERO,
                to: m.clone(),
            },
            What::GhostFlagged {
                master: m.clone(),
                liveness: "silent",
            },
            What::GhostCleared { master: m.clone() },
            What::MasterNamed { master: m.clone() },
            What::LockAcquired { holder: m.clone() },
            What::LockHeldLong {
                holder: m.clone(),
                held: Duration::ZERO,
            },
            What::LeaseVerdict {
                verdict: crate::model::lease::Verdict::Agrees,
                master: None,
                holder: None,
            },
            What::MemberJoined { member: m.clone() },
            What::MemberLeft { member: m.clone() },
            What::SessionLost {
                state: "expired",
                reason: String::new(),
            },
            What::SessionRestored,
        ];
        let kinds: Vec<&str> = all.iter().map(What::kind).collect();
        assert_eq!(kinds, KINDS);
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
