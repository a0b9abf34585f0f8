//! One election: its candidates, who is master, and the history operators ask
//! about (switches, joins and leaves, time without a master).
//!
//! Every rule of the product lives here and nowhere else:
//! - the master is the candidate with the lowest parsed sequence number;
//! - a *switch* is a different node becoming master than the last one seen
//!   (a different name, or the same name re-created: another owner session
//!   or creation time, as when a node-style election's node is re-created);
//!   the first master of an election (at start-up or when the election first
//!   appears) is not a switch, and a gap without master does not reset it;
//! - *masterless* time runs from the moment the election is seen without
//!   candidates until a candidate appears.
//!
//! Time is passed in ([`Now`]); nothing here reads a clock or does I/O.

use super::candidate::Candidate;
use super::now::Now;

use std::time::{Duration, Instant, SystemTime};

/// One candidate as held: compact, because a single-active deployment watches one
/// election per bot account (hundreds of thousands, each with a few
/// candidates). The identity is usually the node name or a short string;
/// it is stored only where it differs from the name.
#[derive(Debug, Clone)]
struct Slot {
    sequence: i32,
    name: Box<str>,
    /// `None`: the identity is the node name.
    identity: Option<Box<str>>,
    owner: i64,
    /// Creation time in milliseconds since the epoch, as ZooKeeper keeps it.
    ctime_ms: i64,
}

impl Slot {
    fn of(c: Candidate) -> Self {
        let identity = (c.identity != c.name).then(|| c.identity.into_boxed_str());
        let ctime_ms = c
            .ctime
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self {
            sequence: c.sequence,
            name: c.name.into_boxed_str(),
            identity,
            owner: c.owner,
            ctime_ms,
        }
    }

    fn identity(&self) -> &str {
        self.identity.as_deref().unwrap_or(&self.name)
    }

    fn ctime(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(self.ctime_ms).unwrap_or(0))
    }

    fn key(&self) -> (i32, &str) {
        (self.sequence, &self.name)
    }
}

/// The current master of an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MasterView<'a> {
    pub node: &'a str,
    pub sequence: i32,
    pub identity: &'a str,
    /// Session owning the master's node (0 if persistent).
    pub owner: i64,
    /// When it took over: its node's ctime when first seen at start-up, the
    /// moment the switch was observed afterwards.
    pub since: SystemTime,
}

/// An election *flaps* when it switched at least [`FLAP_SWITCHES`] times
/// within [`FLAP_WINDOW`]: the `ZooKeeperElectionMasterFlapping` rule's
/// threshold and window, from the alert catalogue the mixin generates
/// (more than 3 in 10 minutes). The last that many switch moments are kept,
/// once an election has switched at all.
pub const FLAP_SWITCHES: usize = crate::model::alerting::Kind::MasterFlapping.switches();
pub const FLAP_WINDOW: Duration = crate::model::alerting::Kind::MasterFlapping.window();

/// State of one election. Build it with [`Election::new`] and feed it joins,
/// leaves, data updates or full snapshots.
#[derive(Debug, Clone)]
pub struct Election {
    /// Ordered by (sequence, name): the first entry is the master. Ties only
    /// happen after the 32-bit counter wrapped; the name breaks them. A
    /// sorted vector: elections have a few candidates, and a vector costs
    /// one allocation where a map costs a node of eleven.
    candidates: Vec<Slot>,
    /// The last master seen, kept through masterless gaps so the next
    /// master counts as a switch.
    last_master: Option<LastMaster>,
    master_since: Option<SystemTime>,
    changes: u64,
    joins: u64,
    leaves: u64,
    masterless_since: Option<Instant>,
    masterless_total: Duration,
    duplicates: u32,
    /// Candidates are named by their owner session's address (`owner-*`
    /// identities): a duplicate is a session holding two nodes, since two
    /// processes on one host share its name without being one zombie.
    named_by_owner: bool,
    /// The latest switches, newest last (flapping).
    recent_switches: Option<Box<[Instant; FLAP_SWITCHES]>>,
    /// The last moment it was seen in a state that needs attention
    /// (masterless, duplicate identities, flapping, or what the caller
    /// notices), including the moment such a state ended.
    noticed: Option<Instant>,
}

/// One master node as created: the same name re-created by another session
/// (or at another time) is another master. The name is kept as a hash: it
/// is only ever compared, and a copy would double the master's name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastMaster {
    name_hash: u64,
    owner: i64,
    ctime_ms: i64,
}

impl LastMaster {
    fn of(slot: &Slot) -> Self {
        Self {
            name_hash: name_hash(&slot.name),
            owner: slot.owner,
            ctime_ms: slot.ctime_ms,
        }
    }

    fn is(&self, slot: &Slot) -> bool {
        self.owner == slot.owner
            && self.ctime_ms == slot.ctime_ms
            && self.name_hash == name_hash(&slot.name)
    }
}

fn name_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// What a change did that the caller must record outside the election.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// A masterless period ended and lasted this long.
    pub masterless_ended: Option<Duration>,
    /// The master changed (counted as a switch).
    pub switched: bool,
}

impl Election {
    /// An election first seen with these candidates. Nothing is counted: no
    /// joins and no switch; the master's `since` is its node's ctime.
    pub fn new(candidates: impl IntoIterator<Item = Candidate>, now: Now) -> Self {
        let mut election = Self {
            candidates: Vec::new(),
            last_master: None,
            master_since: None,
            changes: 0,
            joins: 0,
            leaves: 0,
            masterless_since: None,
            masterless_total: Duration::ZERO,
            duplicates: 0,
            named_by_owner: false,
            recent_switches: None,
            noticed: None,
        };
        for candidate in candidates {
            election.insert(candidate);
        }
        election.candidates.shrink_to_fit();
        election.count_duplicates();
        if let Some(slot) = election.candidates.first() {
            election.last_master = Some(LastMaster::of(slot));
            election.master_since = Some(slot.ctime());
        } else {
            election.masterless_since = Some(now.mono);
        }
        election
    }

    /// The same election with its candidates named by their owner
    /// session's address (see the field): built unnamed, then named by
    /// [`name_owners`](Self::name_owners).
    pub fn named_by_owner(mut self) -> Self {
        self.named_by_owner = true;
        self.count_duplicates();
        self
    }

    /// Names the candidates whose owner session `name_of` knows; the
    /// others keep their name (or stay unnamed). Returns whether the
    /// master's identity changed. Not a switch: the same node, now named.
    pub fn name_owners<'a>(&mut self, name_of: impl Fn(i64) -> Option<&'a str>) -> bool {
        let mut master_renamed = false;
        for (i, slot) in self.candidates.iter_mut().enumerate() {
            let Some(name) = name_of(slot.owner) else {
                continue;
            };
            if slot.identity() != name {
                slot.identity = (name != &*slot.name).then(|| name.into());
                master_renamed |= i == 0;
            }
        }
        self.count_duplicates();
        master_renamed
    }

    /// A candidate appeared. Idempotent: a node already known only has its
    /// identity refreshed, so replaying an event after a listing is harmless.
    pub fn join(&mut self, candidate: Candidate, now: Now) -> Outcome {
        if self.insert(candidate) {
            self.joins += 1;
        }
        self.recount(now);
        self.settle(now)
    }

    /// A candidate's node disappeared. Unknown names are ignored.
    pub fn leave(&mut self, name: &str, sequence: i32, now: Now) -> Outcome {
        if let Ok(i) = self.find((sequence, name)) {
            self.candidates.remove(i);
            self.leaves += 1;
            self.recount(now);
        }
        self.settle(now)
    }

    /// Replaces the candidates with a full listing (after a reconnect), counting
    /// what changed during the outage: each join and leave once, and a switch
    /// once if the master differs from the last one seen.
    pub fn resync(&mut self, candidates: impl IntoIterator<Item = Candidate>, now: Now) -> Outcome {
        let mut fresh: Vec<Slot> = candidates.into_iter().map(Slot::of).collect();
        fresh.sort_by(|a, b| a.key().cmp(&b.key()));
        fresh.dedup_by(|a, b| a.key() == b.key());
        let known =
            |slots: &[Slot], s: &Slot| slots.binary_search_by(|x| x.key().cmp(&s.key())).is_ok();
        let left = self.candidates.iter().filter(|s| !known(&fresh, s)).count();
        let joined = fresh.iter().filter(|s| !known(&self.candidates, s)).count();
        self.leaves += left as u64;
        self.joins += joined as u64;
        fresh.shrink_to_fit();
        self.candidates = fresh;
        self.recount(now);
        self.settle(now)
    }

    fn find(&self, key: (i32, &str)) -> Result<usize, usize> {
        self.candidates.binary_search_by(|s| s.key().cmp(&key))
    }

    /// Inserts or refreshes; returns whether the node is new.
    fn insert(&mut self, c: Candidate) -> bool {
        let slot = Slot::of(c);
        match self.find(slot.key()) {
            Ok(i) => {
                self.candidates[i] = slot;
                false
            }
            Err(i) => {
                self.candidates.insert(i, slot);
                true
            }
        }
    }

    /// Recounts duplicates after a change; while there are any, and when
    /// the last one goes, the election is noticed.
    fn recount(&mut self, now: Now) {
        let had = self.duplicates > 0;
        self.count_duplicates();
        if had || self.duplicates > 0 {
            self.noticed = Some(now.mono);
        }
    }

    /// Recounts the candidates sharing their identity with another: without
    /// a map per election (a few candidates compare pairwise; large
    /// elections sort their identities).
    fn count_duplicates(&mut self) {
        if self.named_by_owner {
            self.duplicates = self.owners_held_twice();
            return;
        }
        let n = self.candidates.len();
        let duplicates = if n <= 16 {
            (0..n)
                .filter(|&i| {
                    let id = self.candidates[i].identity();
                    (0..n).any(|j| j != i && self.candidates[j].identity() == id)
                })
                .count()
        } else {
            let mut ids: Vec<&str> = self.candidates.iter().map(Slot::identity).collect();
            ids.sort_unstable();
            let mut count = 0;
            let mut i = 0;
            while i < ids.len() {
                let run = ids[i..].iter().take_while(|x| **x == ids[i]).count();
                if run > 1 {
                    count += run;
                }
                i += run;
            }
            count
        };
        self.duplicates = u32::try_from(duplicates).unwrap_or(u32::MAX);
    }

    /// Candidates whose owner session holds another candidate too.
    fn owners_held_twice(&self) -> u32 {
        let mut owners: Vec<i64> = self.owners().collect();
        owners.sort_unstable();
        let twice = owners
            .chunk_by(|a, b| a == b)
            .filter(|run| run.len() > 1)
            .map(<[i64]>::len)
            .sum::<usize>();
        u32::try_from(twice).unwrap_or(u32::MAX)
    }

    /// Derives master change and masterless time from the candidate set.
    fn settle(&mut self, now: Now) -> Outcome {
        let mut outcome = Outcome::default();
        match self.candidates.first() {
            Some(slot) => {
                if !self.last_master.as_ref().is_some_and(|m| m.is(slot)) {
                    if self.last_master.is_some() {
                        self.changes += 1;
                        outcome.switched = true;
                        let ring = self
                            .recent_switches
                            .get_or_insert_with(|| Box::new([now.mono; FLAP_SWITCHES]));
                        ring.rotate_left(1);
                        ring[FLAP_SWITCHES - 1] = now.mono;
                        if self.is_flapping(now.mono) {
                            self.noticed = Some(now.mono);
                        }
                    }
                    self.last_master = Some(LastMaster::of(slot));
                    self.master_since = Some(now.wall);
                }
                if let Some(start) = self.masterless_since.take() {
                    let lasted = now.mono.saturating_duration_since(start);
                    self.masterless_total += lasted;
                    outcome.masterless_ended = Some(lasted);
                    self.noticed = Some(now.mono);
                }
            }
            None => {
                self.master_since = None;
                self.masterless_since.get_or_insert(now.mono);
                self.noticed = Some(now.mono);
            }
        }
        outcome
    }

    /// The current master, if any.
    pub fn master(&self) -> Option<MasterView<'_>> {
        let slot = self.candidates.first()?;
        Some(MasterView {
            node: &slot.name,
            sequence: slot.sequence,
            identity: slot.identity(),
            owner: slot.owner,
            since: self.master_since.unwrap_or_else(|| slot.ctime()),
        })
    }

    pub fn candidate_count(&self) -> usize {
        self.candidates.len()
    }

    pub fn ephemeral_count(&self) -> usize {
        self.candidates.iter().filter(|s| s.owner != 0).count()
    }

    /// Master switches since the agent started watching.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Switches seen within `window` before `now`, up to [`FLAP_SWITCHES`]:
    /// enough to tell flapping without a history per election.
    pub fn switches_within(&self, window: Duration, now: Instant) -> usize {
        let Some(ring) = &self.recent_switches else {
            return 0;
        };
        let recorded = usize::try_from(self.changes.min(FLAP_SWITCHES as u64)).unwrap_or(0);
        ring[FLAP_SWITCHES - recorded..]
            .iter()
            .filter(|t| now.saturating_duration_since(**t) <= window)
            .count()
    }

    /// Whether it switched [`FLAP_SWITCHES`] times within [`FLAP_WINDOW`].
    pub fn is_flapping(&self, now: Instant) -> bool {
        self.switches_within(FLAP_WINDOW, now) >= FLAP_SWITCHES
    }

    /// Until when it counts as flapping: the moment its oldest remembered
    /// switch leaves the window (`None` with fewer switches remembered).
    pub fn flapping_until(&self) -> Option<Instant> {
        let ring = self.recent_switches.as_ref()?;
        (self.changes >= FLAP_SWITCHES as u64).then(|| ring[0] + FLAP_WINDOW)
    }

    /// When it stops switching [`FLAP_SWITCHES`] times within `window`
    /// unless it switches again: the moment its oldest remembered switch
    /// leaves `window` (`None` with fewer switches remembered, or a window
    /// past what an `Instant` holds).
    pub fn flapping_ends(&self, window: Duration) -> Option<Instant> {
        let ring = self.recent_switches.as_ref()?;
        if self.changes < FLAP_SWITCHES as u64 {
            return None;
        }
        ring[0].checked_add(window)
    }

    /// The last moment it needed attention (see the field).
    pub fn noticed(&self) -> Option<Instant> {
        self.noticed
    }

    /// Marks it as needing attention at `now`, for a state only the caller
    /// can judge (fewer candidates than configured).
    pub fn notice(&mut self, now: Instant) {
        self.noticed = Some(now);
    }

    pub fn joins(&self) -> u64 {
        self.joins
    }

    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// Candidates whose identity another candidate also has.
    pub fn duplicate_identities(&self) -> usize {
        self.duplicates as usize
    }

    /// Since when it has had no master (`None` while it has one).
    pub fn masterless_since(&self) -> Option<Instant> {
        self.masterless_since
    }

    /// Time without a master of the periods that ended.
    pub fn masterless_closed(&self) -> Duration {
        self.masterless_total
    }

    /// Accumulated time without a master, including a period still running.
    pub fn masterless_total(&self, now: Instant) -> Duration {
        self.masterless_total
            + self
                .masterless_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }

    /// Owner sessions of the ephemeral candidates.
    pub fn owners(&self) -> impl Iterator<Item = i64> + '_ {
        self.candidates.iter().map(|s| s.owner).filter(|o| *o != 0)
    }

    /// Candidates in master order (lowest sequence first).
    pub fn candidates(&self) -> impl Iterator<Item = (i32, &str, &str)> {
        self.candidates
            .iter()
            .map(|s| (s.sequence, &*s.name, s.identity()))
    }
}

#[cfg(test)]
mod tests;
