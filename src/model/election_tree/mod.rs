//! The elections of one tree, plus the tree-wide masterless histogram.
//!
//! Two styles exist in the wild:
//! - **sequential** (kazoo, Curator, Solr, the `/wechat/bots` layout): every node the
//!   glob matches is an election and its EPHEMERAL_SEQUENTIAL children are
//!   the candidates; the lowest sequence is master.
//! - **node** (Kafka `/controller`, HBase `/hbase/master`, HDFS
//!   `ActiveStandbyElectorLock`, most home-grown leaders): the election is
//!   one EPHEMERAL node whose owner is master. The tree watches the nodes
//!   that hold it (the glob without its last segment), and the election is
//!   keyed by the node's own path; it is masterless while the node is
//!   absent, and a re-created node is a switch.

use super::timeline::{Cause, Master, What, election_events};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

use super::candidate::Candidate;
use super::candidate::parse_sequence;
use super::child::ChildNode;
use super::content::{ContentKind, NodeCounts, TreeContent};
use super::election::Election;
use super::histogram::{Histogram, PERIOD_BUCKETS};
use super::journal::Journal;
use super::lease::LeaseBook;
use super::now::Now;
use super::pattern::join;

/// Children of one election that carry no sequence suffix; not candidates,
/// but counted so a misconfigured glob is visible.
#[derive(Debug, Clone, Default)]
struct Others {
    ephemeral: BTreeSet<String>,
    persistent: BTreeSet<String>,
}

impl Others {
    fn len(&self) -> usize {
        self.ephemeral.len() + self.persistent.len()
    }

    fn remove(&mut self, name: &str) {
        self.ephemeral.remove(name);
        self.persistent.remove(name);
    }
}

/// One election as held. Boxed in the tree's map and with its rarely
/// used parts boxed again, so a plain election costs what it holds (the
/// a single-active deployment watches hundreds of thousands).
#[derive(Debug, Clone)]
struct Entry {
    election: Election,
    /// Children without a sequence suffix; `None` while there are none.
    others: Option<Box<Others>>,
    /// What the node style's siblings say; `None` until one was read.
    facts: Option<Box<Facts>>,
    /// The last handover (see [`handover`]); `None` before the first, and
    /// always in trees without a record.
    handover: Option<Box<Handover>>,
}

impl Entry {
    fn new(election: Election, others: Others, facts: Facts) -> Box<Self> {
        Box::new(Self {
            election,
            others: (others.len() > 0).then(|| Box::new(others)),
            facts: (facts != Facts::default()).then(|| Box::new(facts)),
            handover: None,
        })
    }

    fn others_mut(&mut self) -> &mut Others {
        self.others.get_or_insert_with(Box::default)
    }

    fn others_len(&self) -> usize {
        self.others.as_ref().map_or(0, |o| o.len())
    }

    /// The election node, its children, the ephemeral ones among them,
    /// and those that are no candidates.
    fn node_counts(&self) -> NodeCounts {
        let others = self.others_len();
        NodeCounts {
            nodes: 1 + self.election.candidate_count() + others,
            ephemeral: self.election.ephemeral_count()
                + self.others.as_ref().map_or(0, |o| o.ephemeral.len()),
            ignored: others,
        }
    }
}

/// What a node election's siblings say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The fencing epoch as last read.
    pub epoch: Option<i64>,
    /// Times the epoch was seen to go backwards: a fencing failure.
    pub epoch_regressions: u64,
    /// Who the record names.
    pub record: Option<String>,
}

/// The node (parent) that holds election `key`: itself (sequential), or
/// the node election's parent.
fn parent_of<'a>(style: &Style, key: &'a str) -> &'a str {
    match style {
        Style::Sequential => key,
        Style::Node(_) => match key.rfind('/') {
            Some(0) | None => "/",
            Some(cut) => &key[..cut],
        },
    }
}

/// A sequential election below its `min_candidates`, before or after a
/// change, needs attention (node elections count their standbys in another
/// tree; their shortfall is judged when exported).
fn notice_shortfall(spec: &ElectionSpec, election: &mut Election, before: usize, now: Now) {
    if let (Style::Sequential, Some(min)) = (&spec.style, spec.min_candidates) {
        let min = min as usize;
        if before < min || election.candidate_count() < min {
            election.notice(now.mono);
        }
    }
}

/// All elections under one glob.
#[derive(Debug, Clone)]
pub struct ElectionTree {
    spec: ElectionSpec,
    elections: BTreeMap<Box<str>, Box<Entry>>,
    /// A sequential election's record lives outside what the tree lists
    /// (see [`OuterRecord`](super::outer_record::OuterRecord)): who it
    /// names and the session owning it, by election.
    outer_records: BTreeMap<String, (String, i64)>,
    masterless: Histogram,
    /// Handover times of its elections (see [`handover`]).
    handovers: Histogram,
    /// Switches of every election, deleted ones included.
    switches: u64,
    /// Time without a master of the elections deleted so far (up to their
    /// deletion): the tree's total must never go down, or a rate over it
    /// would read the drop as a counter reset and a burst of downtime.
    masterless_gone: Duration,
    /// Timeline entries not yet taken by the cluster (election, what).
    events: Vec<(String, What)>,
    /// With an `owner-*` identity: the client address of each candidate's
    /// owner session, as the latest ghost-check round gave it; empty
    /// otherwise.
    owner_addresses: HashMap<i64, Box<str>>,
    /// The lease source's readings, when the spec has a lease.
    lease: Option<Box<LeaseBook>>,
    /// Which elections changed (see [`Journal`]).
    journal: Journal,
    /// Owners, nodes and time without a master of all its elections.
    tally: tally::Tally,
}

impl ElectionTree {
    pub fn new(spec: impl Into<ElectionSpec>) -> Self {
        let spec: ElectionSpec = spec.into();
        Self {
            lease: spec.lease.as_ref().map(|_| Box::default()),
            spec,
            elections: BTreeMap::new(),
            outer_records: BTreeMap::new(),
            switches: 0,
            masterless_gone: Duration::ZERO,
            masterless: Histogram::new(PERIOD_BUCKETS),
            handovers: Histogram::new(HANDOVER_BUCKETS),
            events: Vec::new(),
            owner_addresses: HashMap::new(),
            journal: Journal::default(),
            tally: tally::Tally::default(),
        }
    }

    pub fn spec(&self) -> &ElectionSpec {
        &self.spec
    }

    /// The election a parent node holds: itself (sequential), or its child
    /// named by the style (node).
    fn key(&self, parent: &str) -> String {
        match &self.spec.style {
            Style::Sequential => parent.to_owned(),
            Style::Node(n) => join(parent, &n.name),
        }
    }

    /// A new election `key` without candidates (its keeper keeps the
    /// tally and the journal).
    fn insert_fresh(&mut self, key: &str, now: Now) {
        let election = self.fresh(Vec::new(), now);
        let entry = Entry::new(election, Others::default(), Facts::default());
        self.elections.insert(Box::from(key), entry);
    }

    /// Whether a child of a parent node belongs to its election at all: a
    /// node election looks at its one node, not at the node's siblings.
    fn concerns(&self, child: &str) -> bool {
        match &self.spec.style {
            Style::Sequential => true,
            Style::Node(n) => child == n.name,
        }
    }

    /// The sequence of a candidate node; a node election's one node has
    /// none (0) and is a candidate only while ephemeral.
    fn sequence(&self, name: &str, ephemeral: bool) -> Option<i32> {
        match self.spec.style {
            Style::Sequential => parse_sequence(name),
            Style::Node(_) => ephemeral.then_some(0),
        }
    }

    fn candidate(&self, election: &str, child: &ChildNode) -> Option<Candidate> {
        let sequence = self.sequence(&child.name, child.ephemeral_owner != 0)?;
        let identity = self
            .owner_identity(election, child.ephemeral_owner)
            .unwrap_or_else(|| self.spec.identity.extract(&child.name, &child.data));
        Some(Candidate {
            identity,
            name: child.name.clone(),
            sequence,
            owner: child.ephemeral_owner,
            ctime: SystemTime::UNIX_EPOCH
                + Duration::from_millis(u64::try_from(child.ctime_ms).unwrap_or(0)),
        })
    }

    fn split(&self, election: &str, children: Vec<ChildNode>) -> (Vec<Candidate>, Others) {
        let mut candidates = Vec::with_capacity(children.len());
        let mut others = Others::default();
        for child in children.into_iter().filter(|c| self.concerns(&c.name)) {
            match self.candidate(election, &child) {
                Some(c) => candidates.push(c),
                None if child.ephemeral_owner != 0 => {
                    others.ephemeral.insert(child.name);
                }
                None => {
                    others.persistent.insert(child.name);
                }
            }
        }
        (candidates, others)
    }

    /// Reads a sibling the node style names (epoch, record) into `facts`;
    /// false when `name` is none of them. `None` data: the sibling is gone.
    fn sibling(spec: &ElectionSpec, facts: &mut Facts, name: &str, data: Option<&[u8]>) -> bool {
        let Style::Node(n) = &spec.style else {
            return false;
        };
        if n.epoch.as_deref() == Some(name) {
            let epoch = data.and_then(|d| std::str::from_utf8(d).ok()?.trim().parse::<i64>().ok());
            if let (Some(old), Some(new)) = (facts.epoch, epoch)
                && new < old
            {
                facts.epoch_regressions += 1;
            }
            facts.epoch = epoch;
            return true;
        }
        if let Some((record, mode)) = &spec.record
            && record == name
        {
            facts.record = data.map(|d| mode.extract(name, d));
            return true;
        }
        false
    }

    /// What the siblings of election `path` say.
    pub fn facts(&self, path: &str) -> Option<&Facts> {
        static NONE: Facts = Facts {
            epoch: None,
            epoch_regressions: 0,
            record: None,
        };
        self.elections
            .get(path)
            .map(|e| e.facts.as_deref().unwrap_or(&NONE))
    }

    /// Who the record of election `path` names, if it has one and it was read.
    pub fn record(&self, path: &str) -> Option<&str> {
        match self.spec.style {
            Style::Sequential => self.outer_records.get(path).map(|(named, _)| named),
            Style::Node(_) => self.elections.get(path)?.facts.as_ref()?.record.as_ref(),
        }
        .map(String::as_str)
    }

    /// Timeline entries since the last call, by election.
    pub fn take_events(&mut self) -> Vec<(String, What)> {
        std::mem::take(&mut self.events)
    }

    fn happened(&mut self, election: &str, what: Vec<What>) {
        self.events
            .extend(what.into_iter().map(|w| (election.to_owned(), w)));
    }

    fn outcome(&mut self, outcome: super::election::Outcome) {
        self.switches += u64::from(outcome.switched);
        if let Some(lasted) = outcome.masterless_ended {
            self.masterless.observe(lasted.as_secs_f64());
        }
    }

    /// Elections by path, in path order.
    pub fn elections(&self) -> impl Iterator<Item = (&str, &Election)> {
        self.elections.iter().map(|(p, e)| (&**p, &e.election))
    }

    /// Every election with its nodes counted (see
    /// [`TreeContent::node_counts`]): the survey's one walk gives the
    /// tree's counts too, rather than a second walk per scrape.
    pub fn elections_counted(&self) -> impl Iterator<Item = (&str, &Election, NodeCounts)> {
        self.elections
            .iter()
            .map(|(p, e)| (&**p, &e.election, e.node_counts()))
    }

    pub fn election(&self, path: &str) -> Option<&Election> {
        self.elections.get(path).map(|e| &e.election)
    }

    /// Election `path` with its path as the tree keeps it.
    pub fn election_entry(&self, path: &str) -> Option<(&str, &Election)> {
        self.elections
            .get_key_value(path)
            .map(|(p, e)| (&**p, &e.election))
    }

    /// Switches of all its elections so far, deleted ones included.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Time without a master of the elections deleted so far; the
    /// survey adds the watched ones' (see `zookeeper_tree_masterless_seconds_total`).
    pub fn masterless_gone(&self) -> Duration {
        self.masterless_gone
    }

    pub fn masterless_histogram(&self) -> &Histogram {
        &self.masterless
    }

    /// Handover times, for trees with a record (the evidence); `None`
    /// for the others, which have no figure to show.
    pub fn handover_histogram(&self) -> Option<&Histogram> {
        self.has_takeover_evidence().then_some(&self.handovers)
    }

    /// Whether anything can show a new master taking over: a record, or
    /// the lease table.
    fn has_takeover_evidence(&self) -> bool {
        self.spec.record.is_some() || self.spec.lease.is_some()
    }
}

impl TreeContent for ElectionTree {
    fn kind(&self) -> ContentKind {
        ContentKind::Election
    }

    /// Applies a full listing: every election that exists with its children.
    ///
    /// The first listing (`resync` false) only loads state. Later ones
    /// (after a reconnect) count what changed during the outage, exactly once.
    fn apply_listing_part(
        &mut self,
        listing: Vec<(String, Vec<ChildNode>)>,
        now: Now,
        resync: bool,
    ) {
        for (parent, children) in listing {
            let path = self.key(&parent);
            let mut facts = self.facts(&path).cloned().unwrap_or_default();
            let mut siblings = BTreeSet::new();
            for c in &children {
                if Self::sibling(&self.spec, &mut facts, &c.name, Some(&c.data)) {
                    siblings.insert(c.name.clone());
                }
            }
            // A sibling the listing no longer has is gone.
            if let Style::Node(n) = &self.spec.style {
                for name in n
                    .epoch
                    .iter()
                    .chain(self.spec.record.iter().map(|(r, _)| r))
                {
                    if !siblings.contains(name) {
                        Self::sibling(&self.spec, &mut facts, name, None);
                    }
                }
            }
            let (candidates, others) = self.split(&path, children);
            match self.elections.get_mut(path.as_str()) {
                Some(entry) => {
                    self.tally.remove(entry);
                    let election = std::mem::replace(&mut entry.election, Election::new([], now));
                    let mut fresh = Entry::new(election, others, facts);
                    let before = fresh.election.candidate_count();
                    let was = fresh.election.master().map(|m| Master::of(&m));
                    let outcome = fresh.election.resync(candidates, now);
                    let is = fresh.election.master();
                    let what = election_events(was, is, &outcome, Cause::DuringOutage);
                    notice_shortfall(&self.spec, &mut fresh.election, before, now);
                    self.tally.add(&fresh);
                    *entry = fresh;
                    self.outcome(outcome);
                    self.happened(&path, what);
                }
                None => {
                    let election = if resync {
                        // Appeared during the outage: its candidates joined then.
                        let mut e = self.fresh(Vec::new(), now);
                        // No masterless period of ours ends here.
                        let _ = e.resync(candidates, now);
                        e
                    } else {
                        self.fresh(candidates, now)
                    };
                    let entry = Entry::new(election, others, facts);
                    self.tally.add(&entry);
                    self.elections.insert(path.clone().into_boxed_str(), entry);
                }
            }
            // A resync costs what it lists: its readers take the listed
            // elections, never the whole tree for each slice.
            if resync {
                self.journal.touched(&path);
            }
        }
        if !resync {
            self.restart_journal();
        }
    }

    fn retain_parents(&mut self, keep: &dyn Fn(&str) -> bool, now: Now) {
        let style = self.spec.style.clone();
        let mut gone = Duration::ZERO;
        let tally = &mut self.tally;
        self.elections.retain(|key, entry| {
            let kept = keep(parent_of(&style, key));
            if !kept {
                gone += entry.election.masterless_total(now.mono);
                tally.remove(entry);
            }
            kept
        });
        self.masterless_gone += gone;
        self.restart_journal();
    }

    /// A node matching the glob was created (or found). No-op if known.
    fn parent_created(&mut self, parent: &str, now: Now) {
        let path = self.key(parent);
        if !self.elections.contains_key(path.as_str()) {
            self.changing(&path, |t| t.insert_fresh(&path, now));
        }
    }

    /// An election node was deleted; its state goes with it, its time
    /// without a master (up to now) stays in the tree's total.
    fn parent_deleted(&mut self, parent: &str, now: Now) {
        let path = self.key(parent);
        if let Some(entry) = self.elections.remove(path.as_str()) {
            self.masterless_gone += entry.election.masterless_total(now.mono);
            self.tally.remove(&entry);
            self.journal.touched(&path);
        }
    }

    /// A child of an election was created or its data changed.
    fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now) {
        let key = self.key(parent);
        self.changing(&key, |t| t.upsert_child(parent, child, now));
    }

    /// A child of an election was deleted.
    fn child_deleted(&mut self, parent: &str, name: &str, now: Now) {
        let key = self.key(parent);
        self.changing(&key, |t| t.delete_child(parent, name, now));
    }

    /// Names of all children of an election (candidates and ignored ones).
    fn child_names(&self, parent: &str) -> BTreeSet<String> {
        self.elections
            .get(self.key(parent).as_str())
            .map(|e| {
                let others = e.others.as_deref();
                e.election
                    .candidates()
                    .map(|(_, name, _)| name.to_owned())
                    .chain(others.into_iter().flat_map(|o| o.ephemeral.iter().cloned()))
                    .chain(
                        others
                            .into_iter()
                            .flat_map(|o| o.persistent.iter().cloned()),
                    )
                    .collect()
            })
            .unwrap_or_default()
    }

    fn has_parent(&self, parent: &str) -> bool {
        self.elections.contains_key(self.key(parent).as_str())
    }

    fn parent_count(&self) -> usize {
        self.elections.len()
    }

    /// Election nodes plus all their children, the ephemeral ones
    /// (candidates or not), and the children that are no candidates.
    fn node_counts(&self) -> NodeCounts {
        self.elections.values().map(|e| e.node_counts()).sum()
    }

    /// Owner sessions of every ephemeral candidate.
    fn owners(&self) -> Vec<i64> {
        self.elections
            .values()
            .flat_map(|e| e.election.owners())
            .collect()
    }
}

mod children;
mod handover;
mod lease;
mod naming;
mod spec;
mod tally;

pub use handover::{HANDOVER_BUCKETS, Handover};

pub use spec::{ElectionSpec, NodeSpec, Slo, Standbys, Style};

#[cfg(test)]
mod tests;
