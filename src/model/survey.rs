//! Every election of a cluster surveyed at a scrape: the tree aggregates
//! (elections by state and by lease verdict, nodes, time without a master)
//! and which elections get series under the export cap.
//!
//! The survey is kept between scrapes ([`SurveyCache`]), never taken by
//! walking every election: each tree keeps its nodes and time without a
//! master summed as its elections change (see the election tree's tally),
//! and the survey keeps, per tree, only the elections that are not in the
//! plain state (`ok`, calm, the tree's usual lease verdict), brought up to
//! date from the tree's journal of changed elections and from deadlines
//! (a flapping election calms down, an election leaves the attention
//! window). Past the cap, the elections needing attention are those kept;
//! the calm ones that fill the rest are the first in path order. So a
//! scrape of a million elections costs the elections it exports, and a
//! switch costs one election.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::attention::{State, Tier};
use super::cluster::ClusterState;
use super::content::{NodeCounts, TreeContent};
use super::election::Election;
use super::election_tree::{ElectionTree, Style};
use super::journal::{Cursor, Since};
use super::lease::Verdict;
use super::tree::{Tree, TreeId};

/// One election with per-election series: its tree and path.
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
    pub masterless: Vec<Duration>,
    /// Elections by lease verdict, per tree (zeros for trees without a
    /// lease, or whose lease source gives no reading now).
    pub leases: Vec<[usize; Verdict::ALL.len()]>,
    /// Nodes of each election tree (`None` for trees of other kinds).
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
fn quotas(per: [usize; 3], cap: usize) -> [usize; 3] {
    let mut left = cap;
    per.map(|count| {
        let take = count.min(left);
        left -= take;
        take
    })
}

/// What one election shows the survey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Judged {
    state: State,
    tier: Tier,
    verdict: Option<Verdict>,
    /// When time alone may change it (a flapping election calms down, an
    /// election leaves the attention window).
    until: Option<Instant>,
}

/// What a tree's elections were judged against, besides themselves: any
/// change of it judges the tree again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Against {
    ghost: u64,
    window: Duration,
    /// The stamps of the group trees a node election reads its standbys
    /// from (0 for sequential trees).
    registries: u64,
    /// The plain verdict: `Agrees` where the lease source reads, else none.
    verdict: Option<Verdict>,
}

/// What the survey keeps of one election tree.
#[derive(Debug)]
struct KeptTree {
    cursor: Option<Cursor>,
    against: Against,
    /// The elections not in the plain state (`ok`, calm, the plain
    /// verdict).
    unusual: HashMap<Box<str>, Judged>,
    /// Of those, how many are in each state and have each verdict.
    states: [usize; State::ALL.len()],
    verdicts: [usize; Verdict::ALL.len()],
    /// Of those, the ones in the first two tiers, in path order (the cap
    /// takes them first).
    tiers: [BTreeSet<Box<str>>; 2],
    /// When time alone may change an election, soonest first.
    deadlines: BTreeSet<(Instant, Box<str>)>,
}

impl KeptTree {
    fn new(against: Against) -> Self {
        Self {
            cursor: None,
            against,
            unusual: HashMap::new(),
            states: [0; State::ALL.len()],
            verdicts: [0; Verdict::ALL.len()],
            tiers: [BTreeSet::new(), BTreeSet::new()],
            deadlines: BTreeSet::new(),
        }
    }

    /// Election `key` shows `judged` now (`None`: it is gone).
    fn keep(&mut self, key: &str, judged: Option<Judged>) {
        if let Some((key, old)) = self.unusual.remove_entry(key) {
            self.states[old.state.index()] -= 1;
            if let Some(v) = old.verdict {
                self.verdicts[v.index()] -= 1;
            }
            if old.tier != Tier::Calm {
                self.tiers[old.tier as usize].remove(&key);
            }
            if let Some(until) = old.until {
                self.deadlines.remove(&(until, key));
            }
        }
        let Some(j) = judged else {
            return;
        };
        let plain = j.state == State::Ok
            && j.tier == Tier::Calm
            && j.verdict == self.against.verdict
            && j.until.is_none();
        if plain {
            return;
        }
        let key: Box<str> = Box::from(key);
        self.states[j.state.index()] += 1;
        if let Some(v) = j.verdict {
            self.verdicts[v.index()] += 1;
        }
        if j.tier != Tier::Calm {
            self.tiers[j.tier as usize].insert(key.clone());
        }
        if let Some(until) = j.until {
            self.deadlines.insert((until, key.clone()));
        }
        self.unusual.insert(key, j);
    }

    /// Elections by state, of `total`.
    fn states(&self, total: usize) -> [usize; State::ALL.len()] {
        let mut counts = self.states;
        counts[State::Ok.index()] += total.saturating_sub(self.unusual.len());
        counts
    }

    /// Elections by verdict, of `total`.
    fn verdicts(&self, total: usize) -> [usize; Verdict::ALL.len()] {
        let mut counts = self.verdicts;
        if let Some(v) = self.against.verdict {
            counts[v.index()] += total.saturating_sub(self.unusual.len());
        }
        counts
    }

    fn tier_of(&self, key: &str) -> Tier {
        self.unusual.get(key).map_or(Tier::Calm, |j| j.tier)
    }
}

/// The survey's parts kept between scrapes, by tree (see the module
/// doc). Written by a scrape under the cluster's read lock, hence the
/// mutex of its own; concurrent scrapes take turns.
#[derive(Debug, Default)]
pub struct SurveyCache(Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    trees: HashMap<TreeId, KeptTree>,
    /// Elections judged so far (what the cache saves shows here).
    judged: u64,
}

impl SurveyCache {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Elections judged since the cache was made.
    #[cfg(test)]
    pub fn judged(&self) -> u64 {
        self.lock().judged
    }
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

    /// What election `path` of `elections` shows the survey at `now`.
    fn judge_for_survey(
        &self,
        tree: &Tree,
        elections: &ElectionTree,
        path: &str,
        election: &Election,
        now: Instant,
    ) -> Judged {
        let window = self.limits().attention_window;
        let state = self.state_of(elections, path, election, now);
        let verdict = tree.lease_verdict(path, election);
        let tier = if lease_needs_attention(verdict) {
            Tier::Now
        } else {
            self.tier_of(election, state, now, window)
        };
        // Time alone ends flapping (the state) and, past the window, what
        // the tier remembers; nothing else.
        let flapping = (state == State::Flapping)
            .then(|| election.flapping_until())
            .flatten();
        let recent = (tier == Tier::Recent)
            .then(|| {
                let owner = election.master().map_or(0, |m| m.owner);
                let ghost = self.ghost().and_then(|t| t.ghost_seen(owner));
                [election.noticed(), election.flapping_until(), ghost]
                    .into_iter()
                    .flatten()
                    .max()
                    .and_then(|t| t.checked_add(window))
            })
            .flatten();
        Judged {
            state,
            tier,
            verdict,
            until: [flapping, recent].into_iter().flatten().min(),
        }
    }

    /// What `tree`'s elections are judged against now.
    fn against(&self, tree: &Tree, elections: &ElectionTree) -> Against {
        let registries = match &elections.spec().style {
            Style::Node(n) if n.standbys.is_some() => self
                .trees()
                .iter()
                .filter(|t| t.as_groups().is_some())
                .fold(0u64, |h, t| h.rotate_left(7) ^ t.stamp()),
            _ => 0,
        };
        let reads = elections.lease_book().is_some_and(|b| b.fresh()) && tree.synced();
        Against {
            ghost: self.ghost().map_or(0, |g| g.stamp()),
            window: self.limits().attention_window,
            registries,
            verdict: reads.then_some(Verdict::Agrees),
        }
    }

    /// Brings `kept` (tree `tree`'s part) up to date at `now`; returns how
    /// many elections that judged.
    fn bring_up_to_date(&self, tree: &Tree, kept: &mut KeptTree, now: Instant) -> u64 {
        let Some(elections) = tree.as_elections() else {
            return 0;
        };
        let against = self.against(tree, elections);
        let changed = match elections.journal().since(kept.cursor) {
            Since::Changed(keys) if kept.against == against => Some(keys),
            _ => None,
        };
        let mut judged = 0;
        match changed {
            Some(keys) => {
                let mut keys: Vec<Box<str>> = keys.into_iter().map(Box::from).collect();
                while let Some((until, _)) = kept.deadlines.first()
                    && *until < now
                {
                    if let Some((_, key)) = kept.deadlines.pop_first() {
                        keys.push(key);
                    }
                }
                keys.sort_unstable();
                keys.dedup();
                for key in keys {
                    judged += 1;
                    let j = elections
                        .election(&key)
                        .map(|e| self.judge_for_survey(tree, elections, &key, e, now));
                    kept.keep(&key, j);
                }
            }
            None => {
                *kept = KeptTree::new(against);
                for (path, election) in elections.elections() {
                    judged += 1;
                    let j = self.judge_for_survey(tree, elections, path, election, now);
                    kept.keep(path, Some(j));
                }
            }
        }
        kept.cursor = Some(elections.journal().cursor());
        judged
    }

    /// Surveys every election at `now`: the per-tree state counts and
    /// which elections get series, at most `limits.max_elections`.
    pub fn survey(&self, now: Instant) -> Survey<'_> {
        let cap = self.limits().max_elections;
        let trees = self.trees();
        let mut guard = self.survey_cache().lock();
        let cache = &mut *guard;
        cache
            .trees
            .retain(|id, _| trees.iter().any(|t| t.id() == *id));
        let mut survey = Survey {
            counts: vec![[0; State::ALL.len()]; trees.len()],
            masterless: vec![Duration::ZERO; trees.len()],
            leases: vec![[0; Verdict::ALL.len()]; trees.len()],
            nodes: trees
                .iter()
                .map(|t| t.as_elections().map(ElectionTree::node_totals))
                .collect(),
            total: self.elections_watched(),
            ..Survey::default()
        };
        for (i, tree) in trees.iter().enumerate() {
            let Some(elections) = tree.as_elections() else {
                continue;
            };
            let kept = cache.trees.entry(tree.id()).or_insert_with(|| {
                KeptTree::new(Against {
                    ghost: 0,
                    window: Duration::ZERO,
                    registries: 0,
                    verdict: None,
                })
            });
            cache.judged += self.bring_up_to_date(tree, kept, now);
            let total = elections.parent_count();
            survey.counts[i] = kept.states(total);
            survey.leases[i] = kept.verdicts(total);
            survey.masterless[i] = elections.masterless_watched(now);
        }
        survey.exported = if survey.total <= cap {
            trees
                .iter()
                .filter_map(|t| Some((t, t.as_elections()?)))
                .flat_map(|(t, e)| e.elections().map(move |(p, e)| (t, p, e)))
                .collect()
        } else {
            exported_past_cap(trees, &cache.trees, survey.total, cap)
        };
        survey
    }
}

/// Past the cap, the elections given series: every tier before the next,
/// each in tree and path order (the first two tiers are what the survey
/// keeps; calm elections fill the rest from the start of each tree); then
/// listed in tree and path order.
fn exported_past_cap<'a>(
    trees: &'a [Tree],
    kept: &HashMap<TreeId, KeptTree>,
    total: usize,
    cap: usize,
) -> Vec<Exported<'a>> {
    let with_elections = || {
        trees
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i, t, t.as_elections()?, kept.get(&t.id())?)))
    };
    let mut per = [0usize; 3];
    for (.., k) in with_elections() {
        per[Tier::Now as usize] += k.tiers[Tier::Now as usize].len();
        per[Tier::Recent as usize] += k.tiers[Tier::Recent as usize].len();
    }
    per[Tier::Calm as usize] = total.saturating_sub(per[0] + per[1]);
    let mut quota = quotas(per, cap);
    let mut chosen: Vec<Vec<&str>> = vec![Vec::new(); trees.len()];
    for tier in [Tier::Now, Tier::Recent] {
        for (i, _, elections, k) in with_elections() {
            let left = &mut quota[tier as usize];
            for key in k.tiers[tier as usize].iter().take(*left) {
                if let Some((path, _)) = elections.election_entry(key) {
                    chosen[i].push(path);
                    *left -= 1;
                }
            }
        }
    }
    for (i, _, elections, k) in with_elections() {
        let left = &mut quota[Tier::Calm as usize];
        for (path, _) in elections.elections() {
            if *left == 0 {
                break;
            }
            if k.tier_of(path) == Tier::Calm {
                chosen[i].push(path);
                *left -= 1;
            }
        }
    }
    let mut exported = Vec::with_capacity(cap);
    for (tree, mut paths) in trees.iter().zip(chosen) {
        let Some(elections) = tree.as_elections() else {
            continue;
        };
        paths.sort_unstable();
        paths.dedup();
        for path in paths {
            if let Some((path, election)) = elections.election_entry(path) {
                exported.push((tree, path, election));
            }
        }
    }
    exported
}

#[cfg(test)]
pub(crate) mod tests;
