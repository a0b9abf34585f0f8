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
use super::content::{NodeCounts, TreeContent};
use super::election::Election;
#[cfg(doc)]
use super::election::FLAP_SWITCHES;
use super::election_tree::{ElectionTree, Style};
use super::lease::Verdict;
use super::tree::{Tree, TreeId};

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

/// One election with per-election series: its tree (index) and path.
pub type Exported<'a> = (&'a Tree, &'a str, &'a Election);

/// Every election of a cluster surveyed at one instant.
#[derive(Debug, Default)]
pub struct Survey<'a> {
    /// Elections by state, per tree (zeros for trees of other kinds).
    pub counts: Vec<[usize; State::ALL.len()]>,
    /// Elections with per-election series, in tree and path order: all of
    /// them up to the cap; past it, those in a non-ok state now first,
    /// then those that left one within the window, then the rest.
    pub exported: Vec<Exported<'a>>,
    /// Elections watched.
    pub total: usize,
    /// Time without a master of every watched election, per tree
    /// (including a period still running; zero for other kinds).
    pub masterless: Vec<std::time::Duration>,
    /// Elections by lease verdict, per tree (zeros for trees without a
    /// lease, or whose lease source gives no reading now).
    pub leases: Vec<[usize; Verdict::ALL.len()]>,
    /// Nodes of each election tree, counted in the same walk (`None` for
    /// trees of other kinds).
    pub nodes: Vec<Option<NodeCounts>>,
}

/// Lease verdicts that need attention: exported first past the cap.
fn lease_needs_attention(verdict: Option<Verdict>) -> bool {
    matches!(
        verdict,
        Some(Verdict::SplitBrain | Verdict::Expired | Verdict::NoCandidates)
    )
}

/// How many elections of each tier get series under `cap`: every one of a
/// tier before any of the next, as a stable sort by tier truncated to
/// `cap` would keep.
fn quotas(tiers: &[Tier], cap: usize) -> [usize; 3] {
    let mut per = [0usize; 3];
    for t in tiers {
        per[*t as usize] += 1;
    }
    let mut left = cap;
    per.map(|count| {
        let take = count.min(left);
        left -= take;
        take
    })
}

impl ClusterState {
    /// Elections watched, over every election tree.
    pub fn elections_watched(&self) -> usize {
        self.trees()
            .iter()
            .filter_map(|t| t.as_elections())
            .map(|e| e.parent_count())
            .sum()
    }

    /// Remembers which elections `survey` gave series, when it chose (past
    /// the cap), for [`ClusterState::has_series`].
    pub fn remember_export(&self, survey: &Survey<'_>) {
        if survey.total <= self.limits().max_elections {
            return;
        }
        let chosen = survey.exported.iter().map(|(t, p, _)| (t.id(), *p));
        self.export().remember(chosen);
    }

    /// Whether election `path` of tree `tree` has per-election series:
    /// always under the cap, never with a cap of 0; past the cap, whether
    /// the latest scrape gave it series, `None` before any scrape chose.
    pub fn has_series(&self, tree: TreeId, path: &str) -> Option<bool> {
        let cap = self.limits().max_elections;
        if cap == 0 {
            return Some(false);
        }
        if self.elections_watched() <= cap {
            return Some(true);
        }
        self.export().chose(tree, path)
    }

    /// Surveys every election at `now`: the per-tree state counts and
    /// which elections get series, at most `limits.max_elections`.
    pub fn survey(&self, now: Instant) -> Survey<'_> {
        let cap = self.limits().max_elections;
        let window = self.limits().attention_window;
        let mut survey = Survey {
            counts: vec![[0; State::ALL.len()]; self.trees().len()],
            masterless: vec![std::time::Duration::ZERO; self.trees().len()],
            leases: vec![[0; Verdict::ALL.len()]; self.trees().len()],
            nodes: self
                .trees()
                .iter()
                .map(|t| t.as_elections().map(|_| NodeCounts::default()))
                .collect(),
            ..Survey::default()
        };
        let elections = || {
            self.trees().iter().enumerate().filter_map(|(i, t)| {
                t.as_elections()
                    .map(|e| e.elections().map(move |(p, el)| (i, t, e, p, el)))
            })
        };
        let counted = self.trees().iter().enumerate().filter_map(|(i, t)| {
            t.as_elections().map(|e| {
                e.elections_counted()
                    .map(move |(p, el, n)| (i, t, e, p, el, n))
            })
        });
        survey.total = self.elections_watched();
        let rank = survey.total > cap;
        // One pass over the model (at a million elections the walk itself
        // is the cost): states, and every election with its tier and rank
        // when they compete for the cap.
        // Past the cap, each election's tier, in walk order (one byte each:
        // at a million elections a list of the elections themselves, then
        // sorted, cost tens of MiB and a sort per scrape).
        let mut tiers: Vec<Tier> = Vec::with_capacity(if rank { survey.total } else { 0 });
        survey.exported.reserve(survey.total.min(cap));
        for (i, tree, elections, path, election, nodes) in counted.flatten() {
            if let Some(n) = &mut survey.nodes[i] {
                *n = *n + nodes;
            }
            let state = self.state_of(elections, path, election, now);
            survey.counts[i][state.index()] += 1;
            survey.masterless[i] += election.masterless_total(now);
            let verdict = tree.lease_verdict(path, election);
            if let Some(v) = verdict {
                survey.leases[i][v.index()] += 1;
            }
            if rank {
                let tier = if lease_needs_attention(verdict) {
                    Tier::Now
                } else {
                    self.tier_of(election, state, now, window)
                };
                tiers.push(tier);
            } else {
                survey.exported.push((tree, path, election));
            }
        }
        if rank {
            // The first `cap` by tier, path order within a tier, listed in
            // tree and path order: a second walk takes them by quota.
            let mut quota = quotas(&tiers, cap);
            for (n, (_, tree, _, path, election)) in elections().flatten().enumerate() {
                let left = &mut quota[tiers[n] as usize];
                if *left > 0 {
                    *left -= 1;
                    survey.exported.push((tree, path, election));
                }
            }
        }
        survey
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The quotas pick exactly what a stable sort by tier, truncated to
        /// the cap and put back in walk order, picked before them.
        #[test]
        fn quotas_pick_what_the_stable_sort_picked(
            raw in proptest::collection::vec(0u8..3, 0..400),
            cap in 0usize..450,
        ) {
            let tiers: Vec<Tier> = raw
                .iter()
                .map(|t| [Tier::Now, Tier::Recent, Tier::Calm][*t as usize])
                .collect();
            let mut sorted: Vec<(Tier, usize)> = tiers.iter().copied().zip(0..).collect();
            sorted.sort_by_key(|(t, _)| *t);
            sorted.truncate(cap);
            let mut want: Vec<usize> = sorted.into_iter().map(|(_, n)| n).collect();
            want.sort_unstable();
            let mut quota = quotas(&tiers, cap);
            let got: Vec<usize> = tiers
                .iter()
                .enumerate()
                .filter_map(|(n, t)| {
                    let left = &mut quota[*t as usize];
                    (*left > 0).then(|| {
                        *left -= 1;
                        n
                    })
                })
                .collect();
            prop_assert_eq!(got, want);
        }
    }

    use super::*;
    use crate::model::Limits;
    use crate::model::Now;
    use crate::model::candidate::IdentityMode;
    use crate::model::cluster::Setup;
    use crate::model::tree::{ChildNode, Tree, TreePattern};
    use std::time::SystemTime;

    fn at(base: Instant, secs: u64) -> Now {
        Now {
            mono: base + Duration::from_secs(secs),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    fn child(name: &str, owner: i64) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: Vec::new(),
            ephemeral_owner: owner,
            ctime_ms: 0,
        }
    }

    /// 1,000 elections with one candidate each, the export cap at 100.
    fn thousand(t: Instant) -> ClusterState {
        let mut tree = Tree::elections(TreePattern::parse("/bots/*").unwrap(), IdentityMode::Node);
        tree.apply_listing(
            (0..1000)
                .map(|i| {
                    (
                        format!("/bots/bot_{i:04}"),
                        vec![child("n_0000000001", i + 1)],
                    )
                })
                .collect(),
            at(t, 0),
        );
        capped(ClusterState::new("c".into(), vec![tree], false), 100)
    }

    /// `c` with per-election series for at most `cap` elections.
    fn capped(c: ClusterState, cap: usize) -> ClusterState {
        c.set_up(Setup {
            limits: Limits {
                max_elections: cap,
                ..Limits::default()
            },
            ..Setup::default()
        })
    }

    #[test]
    fn past_the_cap_elections_needing_attention_come_first() {
        let t = Instant::now();
        let mut c = thousand(t);
        let s = c.survey(at(t, 1).mono);
        assert_eq!((s.total, s.exported.len()), (1000, 100));
        assert_eq!(s.counts[0][State::Ok.index()], 1000);
        assert_eq!(
            s.exported[0].1, "/bots/bot_0000",
            "path order when all are calm"
        );
        // bot_0900 loses its master; bot_0800 lost and regained one.
        let id = c.trees()[0].id();
        c.child_deleted(id, "/bots/bot_0900", "n_0000000001", at(t, 2));
        c.child_deleted(id, "/bots/bot_0800", "n_0000000001", at(t, 2));
        c.child_upserted(id, "/bots/bot_0800", child("n_0000000002", 5000), at(t, 3));
        let s = c.survey(at(t, 4).mono);
        assert_eq!(s.counts[0][State::Masterless.index()], 1);
        assert_eq!(s.counts[0][State::Ok.index()], 999);
        let paths: Vec<&str> = s.exported.iter().map(|e| e.1).collect();
        assert_eq!(paths.len(), 100);
        assert!(paths.contains(&"/bots/bot_0900") && paths.contains(&"/bots/bot_0800"));
        assert!(
            !paths.contains(&"/bots/bot_0098"),
            "two calm ones make room"
        );
        // Past the window bot_0800 is calm again; bot_0900 is still masterless.
        let later = at(t, 3 + 16 * 60).mono;
        let paths: Vec<&str> = c.survey(later).exported.iter().map(|e| e.1).collect();
        assert!(paths.contains(&"/bots/bot_0900") && !paths.contains(&"/bots/bot_0800"));
    }

    #[test]
    fn the_lookup_answers_from_the_latest_scrapes_choice() {
        let t = Instant::now();
        let mut c = thousand(t);
        let id = c.trees()[0].id();
        assert_eq!(
            c.has_series(id, "/bots/bot_0000"),
            None,
            "past the cap, nothing is known before a scrape chose"
        );
        c.child_deleted(id, "/bots/bot_0900", "n_0000000001", at(t, 2));
        let s = c.survey(at(t, 3).mono);
        c.remember_export(&s);
        let chosen: Vec<&str> = s.exported.iter().map(|e| e.1).collect();
        for i in [0, 97, 98, 99, 500, 900, 999] {
            let path = format!("/bots/bot_{i:04}");
            assert_eq!(
                c.has_series(id, &path),
                Some(chosen.contains(&path.as_str())),
                "{path}"
            );
        }
        assert_eq!(c.has_series(id, "/bots/bot_0900"), Some(true));
        assert_eq!(c.has_series(id, "/bots/bot_0099"), Some(false));
        // Under the cap every election has series at every scrape.
        let c = capped(c, 1000);
        assert_eq!(c.has_series(id, "/bots/bot_0999"), Some(true));
        let c = capped(c, 0);
        assert_eq!(c.has_series(id, "/bots/bot_0000"), Some(false));
    }

    #[test]
    fn the_surveys_node_counts_are_the_trees() {
        let t = Instant::now();
        let mut c = thousand(t);
        let id = c.trees()[0].id();
        // A child that is no candidate (persistent, no suffix) and an
        // ephemeral one, beside the candidates.
        c.child_upserted(id, "/bots/bot_0001", child("config", 0), at(t, 1));
        c.child_upserted(id, "/bots/bot_0002", child("lock", 77), at(t, 1));
        c.child_deleted(id, "/bots/bot_0003", "n_0000000001", at(t, 1));
        let s = c.survey(at(t, 2).mono);
        let walked =
            crate::model::content::TreeContent::node_counts(c.trees()[0].as_elections().unwrap());
        assert_eq!(s.nodes, vec![Some(walked)]);
        assert_eq!(
            (walked.nodes, walked.ephemeral, walked.ignored),
            (1000 + 999 + 2, 999 + 1, 2)
        );
    }

    #[test]
    fn under_the_cap_every_election_is_exported() {
        let t = Instant::now();
        let c = capped(thousand(t), 1000);
        let s = c.survey(at(t, 1).mono);
        assert_eq!(s.exported.len(), 1000);
        let c = capped(c, 0);
        assert!(c.survey(at(t, 1).mono).exported.is_empty());
    }

    #[test]
    fn states_are_exclusive_and_most_urgent_first() {
        let t = Instant::now();
        let mut tree = Tree::elections(TreePattern::parse("/e/*").unwrap(), IdentityMode::Data);
        let dup = |name: &str, owner| ChildNode {
            data: b"same".to_vec(),
            ..child(name, owner)
        };
        tree.apply_listing(
            vec![
                (
                    "/e/dup".into(),
                    vec![dup("n_0000000001", 1), dup("n_0000000002", 2)],
                ),
                ("/e/empty".into(), vec![]),
                ("/e/flap".into(), vec![child("n_0000000001", 3)]),
            ],
            at(t, 0),
        );
        let id = tree.id();
        let mut c = ClusterState::new("c".into(), vec![tree], false);
        for k in 2..6 {
            c.child_upserted(
                id,
                "/e/flap",
                child(
                    &format!("n_000000000{k}"),
                    10 + i64::try_from(k).unwrap_or(i64::MAX),
                ),
                at(t, k),
            );
            c.child_deleted(id, "/e/flap", &format!("n_000000000{}", k - 1), at(t, k));
        }
        let s = c.survey(at(t, 10).mono);
        let count = |st: State| s.counts[0][st.index()];
        assert_eq!(
            (
                count(State::Duplicate),
                count(State::Masterless),
                count(State::Flapping)
            ),
            (1, 1, 1)
        );
        assert_eq!(s.counts[0].iter().sum::<usize>(), 3);
        // Ten minutes after its fourth switch it no longer flaps.
        let s = c.survey(at(t, 2 + 601).mono);
        assert_eq!(s.counts[0][State::Flapping.index()], 0);
    }
}
