use super::*;

const T: Thresholds = Thresholds {
    no_master_for: Duration::from_secs(5),
    session_lost_for: Duration::from_secs(30),
    holds: [None; Kind::ALL.len()],
    windows: [None; Kind::ALL.len()],
    max_alerts: 10,
};

fn at(t0: Instant, secs: u64) -> Instant {
    t0 + Duration::from_secs(secs)
}

fn reading(conditions: Vec<Condition>) -> Reading {
    Reading {
        fresh: true,
        conditions,
        frozen: Default::default(),
        lease_frozen: Default::default(),
        unjudged: Default::default(),
        parts: Vec::new(),
    }
}

fn masterless(election: &str, since: Instant) -> Condition {
    Condition {
        kind: Kind::NoMaster,
        election: election.into(),
        since: Some(since),
        value: 0,
        hold: None,
    }
}

fn key(kind: Kind, election: &str) -> Key {
    (kind, "c".into(), election.into())
}

#[test]
fn masterless_fires_after_its_hold_and_resolves_when_a_master_returns() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    assert!(book.at_rest());
    let (changes, _) = book.update("c", reading(vec![masterless("/e", t0)]), None, at(t0, 4));
    assert!(changes.fired.is_empty(), "4 s < no_master_for");
    assert!(!book.at_rest(), "a hold is being waited out");
    let (changes, _) = book.update("c", reading(vec![masterless("/e", t0)]), None, at(t0, 5));
    assert_eq!(changes.fired, vec![key(Kind::NoMaster, "/e")]);
    assert_eq!(
        book.firing().next().unwrap().1.since,
        t0,
        "since the master left"
    );
    assert!(!book.at_rest(), "it fires: resends are due");
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 9));
    assert_eq!(changes.resolved.len(), 1);
    assert!(book.is_empty());
    assert!(book.at_rest());
}

#[test]
fn a_stale_reading_neither_fires_nor_resolves() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.update("c", reading(vec![masterless("/e", t0)]), None, at(t0, 6));
    assert_eq!(book.firing().count(), 1);
    // The session is lost: nothing is known, nothing changes but the
    // session alert after its own hold.
    let stale = Reading::default();
    let (changes, _) = book.update("c", stale.clone(), Some(at(t0, 7)), at(t0, 8));
    assert_eq!(changes, Changes::default());
    let (changes, _) = book.update("c", stale, Some(at(t0, 7)), at(t0, 37));
    assert_eq!(changes.fired, vec![key(Kind::SessionDown, "")]);
    assert_eq!(book.firing().count(), 2, "the masterless alert is kept");
    // Back: the session alert resolves, and the fresh reading decides.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 40));
    assert_eq!(changes.resolved.len(), 2);
}

#[test]
fn an_unsynced_tree_keeps_its_alerts() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.update("c", reading(vec![masterless("/e", t0)]), None, at(t0, 6));
    let mut r = reading(vec![]);
    r.frozen.insert("/e".into());
    let (changes, _) = book.update("c", r, None, at(t0, 7));
    assert!(changes.resolved.is_empty());
}

#[test]
fn holds_without_a_known_start_count_from_first_sight() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    let ghost = || Condition {
        kind: Kind::GhostMaster,
        election: "/e".into(),
        since: None,
        value: 0,
        hold: None,
    };
    assert!(
        book.update("c", reading(vec![ghost()]), None, t0)
            .0
            .fired
            .is_empty()
    );
    assert!(
        book.update("c", reading(vec![ghost()]), None, at(t0, 29))
            .0
            .fired
            .is_empty()
    );
    let (changes, _) = book.update("c", reading(vec![ghost()]), None, at(t0, 30));
    assert_eq!(changes.fired, vec![key(Kind::GhostMaster, "/e")]);
    // Gone before its hold: forgotten, so a new one waits again.
    let mut other = Book::new(T);
    other.update("c", reading(vec![ghost()]), None, t0);
    other.update("c", reading(vec![]), None, at(t0, 10));
    assert!(
        other
            .update("c", reading(vec![ghost()]), None, at(t0, 35))
            .0
            .fired
            .is_empty()
    );
}

#[test]
fn past_the_cap_alerts_are_left_out_and_counted() {
    let t0 = Instant::now();
    let mut book = Book::new(Thresholds { max_alerts: 3, ..T });
    let many: Vec<Condition> = (0..5).map(|i| masterless(&format!("/e{i}"), t0)).collect();
    let (changes, left_out) = book.update("c", reading(many), None, at(t0, 6));
    assert_eq!((changes.fired.len(), left_out), (3, 2));
}

#[test]
fn every_kind_says_what_its_rule_says_and_has_a_runbook() {
    let rules = include_str!("../../../../alerts/zookeeper.rules.yml");
    let runbooks = include_str!("../../../../docs/runbooks.md");
    for kind in Kind::ALL {
        let name = kind.alertname();
        let rule = rules
            .split("- alert: ")
            .find(|r| r.starts_with(&format!("{name}\n")))
            .unwrap_or_else(|| panic!("no rule {name}"));
        assert!(
            rule.contains(&format!("severity: {}", kind.severity())),
            "{name}: severity differs from the rule"
        );
        let (summary, description) = kind.texts();
        let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\\\""));
        assert!(rule.contains(&quoted(summary)), "{name}: summary differs");
        assert!(
            rule.contains(&quoted(description)),
            "{name}: description differs"
        );
        for text in [summary, description] {
            let filled = fill(text, "prod", "/bots/bot_1", 2);
            assert!(
                !filled.contains("{{"),
                "{name}: unfilled template in {filled}"
            );
        }
        assert!(runbooks.contains(&format!("\n## {name}\n")));
        assert!(rule.contains(&format!("docs/runbooks.md#{}", kind.anchor())));
    }
}

#[test]
fn an_election_set_may_hold_masterless_alerts_longer_or_shorter() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    let mut slow = masterless("/slow", t0);
    slow.hold = Some(Duration::from_secs(60));
    let (changes, _) = book.update(
        "c",
        reading(vec![slow.clone(), masterless("/e", t0)]),
        None,
        at(t0, 6),
    );
    assert_eq!(
        changes.fired,
        vec![key(Kind::NoMaster, "/e")],
        "/slow waits its own minute"
    );
    let (changes, _) = book.update(
        "c",
        reading(vec![slow, masterless("/e", t0)]),
        None,
        at(t0, 60),
    );
    assert_eq!(changes.fired, vec![key(Kind::NoMaster, "/slow")]);
}

fn split_brain(election: &str) -> Condition {
    Condition {
        kind: Kind::SplitBrain,
        election: election.into(),
        since: None,
        value: 0,
        hold: Some(Duration::from_secs(3)),
    }
}

#[test]
fn a_lease_source_without_a_reading_keeps_the_lease_alerts_alone() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.update("c", reading(vec![split_brain("/e")]), None, at(t0, 0));
    let (changes, _) = book.update("c", reading(vec![split_brain("/e")]), None, at(t0, 3));
    assert_eq!(changes.fired, vec![key(Kind::SplitBrain, "/e")]);
    // The lease query fails: split brain stays, while a ZooKeeper alert of
    // the same election still fires and resolves on the session's reading.
    let mut blind = reading(vec![masterless("/e", at(t0, 3))]);
    blind.lease_frozen.insert("/e".into());
    let (changes, _) = book.update("c", blind.clone(), None, at(t0, 9));
    assert!(changes.resolved.is_empty(), "no reading resolves nothing");
    assert_eq!(changes.fired, vec![key(Kind::NoMaster, "/e")]);
    blind.conditions.clear();
    let (changes, _) = book.update("c", blind, None, at(t0, 10));
    assert_eq!(
        changes
            .resolved
            .iter()
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>(),
        vec![key(Kind::NoMaster, "/e")]
    );
    // A reading again, without split brain: it resolves.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 11));
    assert_eq!(changes.resolved[0].0, key(Kind::SplitBrain, "/e"));
    assert!(book.is_empty());
}

#[test]
fn a_lease_source_without_a_reading_fires_nothing_new() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.update("c", reading(vec![split_brain("/e")]), None, at(t0, 0));
    let mut blind = reading(vec![]);
    blind.lease_frozen.insert("/e".into());
    let (changes, _) = book.update("c", blind, None, at(t0, 30));
    assert!(changes.fired.is_empty(), "the hold passed without evidence");
}

#[test]
fn an_alert_alertmanager_had_firing_carries_on_at_the_first_fresh_reading_that_shows_it() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    // The previous process fired it at t0; this one starts at t0 + 60 s
    // and sees the election masterless since its own first listing.
    book.adopt([(key(Kind::NoMaster, "/e"), t0)]);
    assert_eq!(book.adopted(), 1);
    assert!(!book.at_rest(), "waiting for the first reading");
    // Not connected yet: nothing is decided.
    let (changes, _) = book.update("c", Reading::default(), Some(at(t0, 60)), at(t0, 60));
    assert_eq!(changes, Changes::default());
    assert_eq!(book.adopted(), 1, "still waiting for a reading");
    // The first fresh reading still shows it: it fires at once, from
    // its old start, although this process saw it for no time at all.
    let (changes, _) = book.update(
        "c",
        reading(vec![masterless("/e", at(t0, 61))]),
        None,
        at(t0, 61),
    );
    assert_eq!(changes.fired, vec![key(Kind::NoMaster, "/e")]);
    assert_eq!(changes.carried, changes.fired, "carried on, not new");
    assert_eq!(book.firing().next().unwrap().1.since, t0);
    assert_eq!(book.adopted(), 0);
    // And resolves as usual.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 62));
    assert_eq!(changes.resolved.len(), 1);
    // A trouble this process sees start fires as new.
    let since = at(t0, 63);
    book.update("c", reading(vec![masterless("/e", since)]), None, since);
    let (changes, _) = book.update(
        "c",
        reading(vec![masterless("/e", since)]),
        None,
        at(t0, 200),
    );
    assert_eq!(changes.fired, vec![key(Kind::NoMaster, "/e")]);
    assert!(changes.carried.is_empty(), "{changes:?}");
}

#[test]
fn an_adopted_alert_the_first_fresh_reading_does_not_show_is_forgotten() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.adopt([
        (key(Kind::NoMaster, "/e"), t0),
        (key(Kind::SessionDown, ""), t0),
    ]);
    // Connected, and a master: neither fires, and a later masterless
    // spell waits out its hold like any other.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 60));
    assert_eq!(changes, Changes::default());
    assert_eq!(book.adopted(), 0);
    let (changes, _) = book.update(
        "c",
        reading(vec![masterless("/e", at(t0, 61))]),
        None,
        at(t0, 62),
    );
    assert!(changes.fired.is_empty(), "a new spell holds");
    // Another cluster's adoption is left for that cluster.
    let mut book = Book::new(T);
    book.adopt([(key(Kind::NoMaster, "/e"), t0)]);
    book.update("other", reading(vec![]), None, at(t0, 60));
    assert_eq!(book.adopted(), 1);
}

#[test]
fn an_adopted_alert_that_cannot_be_judged_yet_stays_firing() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.adopt([
        (key(Kind::NoMaster, "/e"), t0),
        (key(Kind::LeaseExpired, "/l"), t0),
    ]);
    // The tree is not listed yet; the lease source is down.
    let mut r = reading(vec![]);
    r.frozen.insert("/e".into());
    r.lease_frozen.insert("/l".into());
    let (mut changes, _) = book.update("c", r, None, at(t0, 60));
    changes.fired.sort();
    assert_eq!(changes.fired.len(), 2, "{changes:?}");
    assert!(changes.resolved.is_empty());
    // Judged later: what no longer holds resolves.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 70));
    assert_eq!(changes.resolved.len(), 2);
}

#[test]
fn an_adopted_session_alert_carries_on_while_the_session_is_still_lost() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    book.adopt([(key(Kind::SessionDown, ""), t0)]);
    let (changes, _) = book.update("c", Reading::default(), Some(at(t0, 60)), at(t0, 60));
    assert_eq!(changes.fired, vec![key(Kind::SessionDown, "")]);
    assert_eq!(book.firing().next().unwrap().1.since, t0);
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 61));
    assert_eq!(changes.resolved.len(), 1);
}

#[test]
fn a_configured_hold_replaces_the_catalogues_for_its_alert_only() {
    let t0 = Instant::now();
    let mut holds = [None; Kind::ALL.len()];
    holds[Kind::DuplicateIdentity as usize] = Some(Duration::from_secs(2));
    let mut book = Book::new(Thresholds { holds, ..T });
    let of = |kind| Condition {
        kind,
        election: "/e".into(),
        since: None,
        value: 2,
        hold: None,
    };
    let both = || reading(vec![of(Kind::DuplicateIdentity), of(Kind::GhostMaster)]);
    assert!(book.update("c", both(), None, t0).0.fired.is_empty());
    assert!(book.update("c", both(), None, at(t0, 1)).0.fired.is_empty());
    let (changes, _) = book.update("c", both(), None, at(t0, 2));
    assert_eq!(changes.fired, vec![key(Kind::DuplicateIdentity, "/e")]);
    // The ghost keeps the catalogue's 30 s.
    assert!(
        book.update("c", both(), None, at(t0, 29))
            .0
            .fired
            .is_empty()
    );
    let (changes, _) = book.update("c", both(), None, at(t0, 30));
    assert_eq!(changes.fired, vec![key(Kind::GhostMaster, "/e")]);
}

#[test]
fn an_unconfirmed_split_brain_holds_one_firing_and_starts_none() {
    let t0 = Instant::now();
    let split = |election: &str| Condition {
        kind: Kind::SplitBrain,
        election: election.into(),
        since: None,
        value: 0,
        hold: Some(Duration::from_secs(2)),
    };
    let unconfirmed = |elections: &[&str]| {
        let mut r = reading(vec![]);
        r.unjudged = elections
            .iter()
            .map(|e| (Kind::SplitBrain, e.to_string()))
            .collect();
        r
    };
    // A split brain fires, then the set cannot confirm it any more.
    let mut book = Book::new(T);
    book.update("c", reading(vec![split("/s")]), None, t0);
    let (changes, _) = book.update("c", reading(vec![split("/s")]), None, at(t0, 2));
    assert_eq!(changes.fired, vec![key(Kind::SplitBrain, "/s")]);
    let (changes, _) = book.update("c", unconfirmed(&["/s"]), None, at(t0, 3));
    assert_eq!(changes, Changes::default(), "no evidence that it ended");
    // The lease then agrees: over.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 4));
    assert_eq!(changes.resolved.len(), 1);

    // Carried over a restart: adopted, and held while unconfirmed.
    let mut book = Book::new(T);
    book.adopt([(key(Kind::SplitBrain, "/s"), t0)]);
    let (changes, _) = book.update("c", unconfirmed(&["/s"]), None, at(t0, 60));
    assert_eq!(changes.fired, vec![key(Kind::SplitBrain, "/s")]);
    assert_eq!(book.firing().next().unwrap().1.since, t0);

    // Unconfirmed alone starts nothing, however long.
    let mut book = Book::new(T);
    for s in [0, 10, 100] {
        let (changes, _) = book.update("c", unconfirmed(&["/s"]), None, at(t0, s));
        assert!(changes.fired.is_empty());
    }

    // A lease-expired warning is not held by it: the table now shows
    // another holder, not the master's expired lease.
    let mut book = Book::new(T);
    book.adopt([(key(Kind::LeaseExpired, "/s"), t0)]);
    let (changes, _) = book.update("c", unconfirmed(&["/s"]), None, at(t0, 60));
    assert!(changes.fired.is_empty(), "{changes:?}");
}

#[test]
fn a_ghost_the_check_has_not_judged_yet_holds_one_firing_and_starts_none() {
    let t0 = Instant::now();
    let unjudged = || {
        let mut r = reading(vec![]);
        r.unjudged.insert((Kind::GhostMaster, "/g".into()));
        r
    };
    // Carried over a restart, before the new process's first round.
    let mut book = Book::new(T);
    book.adopt([(key(Kind::GhostMaster, "/g"), t0)]);
    let (changes, _) = book.update("c", unjudged(), None, at(t0, 60));
    assert_eq!(changes.fired, vec![key(Kind::GhostMaster, "/g")]);
    let (changes, _) = book.update("c", unjudged(), None, at(t0, 61));
    assert_eq!(changes, Changes::default());
    // The round shows the session live: over.
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 62));
    assert_eq!(changes.resolved.len(), 1);
    // Unjudged alone never starts one, and holds no other alert.
    let mut book = Book::new(T);
    book.adopt([(key(Kind::NoMaster, "/g"), t0)]);
    for s in [0, 30, 300] {
        let (changes, _) = book.update("c", unjudged(), None, at(t0, s));
        assert!(changes.fired.is_empty(), "{changes:?}");
    }
}

mod windows;
