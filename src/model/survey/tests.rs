//! The survey against a walk of every election (the way it was taken
//! before it was kept), and what the cap picks.

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
        let mut per = [0usize; 3];
        for t in &tiers {
            per[*t as usize] += 1;
        }
        let mut quota = quotas(per, cap);
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

/// The survey taken by walking every election at `now`: what the kept
/// survey must always say.
fn walked(c: &ClusterState, now: Instant) -> Survey<'_> {
    let cap = c.limits().max_elections;
    let window = c.limits().attention_window;
    let trees = c.trees();
    let mut survey = Survey {
        counts: vec![[0; State::ALL.len()]; trees.len()],
        masterless: vec![Duration::ZERO; trees.len()],
        leases: vec![[0; Verdict::ALL.len()]; trees.len()],
        nodes: trees
            .iter()
            .map(|t| t.as_elections().map(|_| NodeCounts::default()))
            .collect(),
        total: c.elections_watched(),
        ..Survey::default()
    };
    let rank = survey.total > cap;
    let mut all = Vec::new();
    for (i, tree) in trees.iter().enumerate() {
        let Some(elections) = tree.as_elections() else {
            continue;
        };
        survey.nodes[i] = Some(crate::model::content::TreeContent::node_counts(elections));
        survey.masterless[i] = elections
            .elections()
            .map(|(_, e)| e.masterless_total(now))
            .sum();
        for (path, election) in elections.elections() {
            let state = c.state_of(elections, path, election, now);
            survey.counts[i][state.index()] += 1;
            let verdict = tree.lease_verdict(path, election);
            if let Some(v) = verdict {
                survey.leases[i][v.index()] += 1;
            }
            let tier = if lease_needs_attention(verdict) {
                Tier::Now
            } else {
                c.tier_of(election, state, now, window)
            };
            all.push((tier, tree, path, election));
        }
    }
    if rank {
        let mut per = [0usize; 3];
        for (t, ..) in &all {
            per[*t as usize] += 1;
        }
        let mut quota = quotas(per, cap);
        for (tier, tree, path, election) in all {
            let left = &mut quota[tier as usize];
            if *left > 0 {
                *left -= 1;
                survey.exported.push((tree, path, election));
            }
        }
    } else {
        survey.exported = all.into_iter().map(|(_, t, p, e)| (t, p, e)).collect();
    }
    survey
}

/// The parts of a survey that can be compared.
pub(crate) fn summary(s: &Survey<'_>) -> String {
    let exported: Vec<(String, &str)> = s
        .exported
        .iter()
        .map(|(t, p, _)| (t.pattern().as_str().to_owned(), *p))
        .collect();
    format!(
        "counts {:?} total {} masterless {:?} leases {:?} nodes {:?} exported {:?}",
        s.counts, s.total, s.masterless, s.leases, s.nodes, exported
    )
}

/// What the kept survey of `c` says at `now` against the walk.
pub(crate) fn kept_and_walked(c: &ClusterState, now: Instant) -> (String, String) {
    (summary(&c.survey(now)), summary(&walked(c, now)))
}
