//! The alerts judged over a window (flapping, epoch regressions): what
//! holds them, and what ends them.

use super::*;

#[test]
fn an_epoch_regression_fires_for_ten_minutes_after_the_count_grows() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    let regressed = |n| Condition {
        kind: Kind::EpochRegression,
        election: "/kafka/controller".into(),
        since: None,
        value: n,
        hold: None,
    };
    let (changes, _) = book.update("c", reading(vec![regressed(1)]), None, t0);
    assert_eq!(changes.fired.len(), 1);
    let (changes, _) = book.update("c", reading(vec![regressed(1)]), None, at(t0, 601));
    assert_eq!(changes.resolved.len(), 1, "no growth for 10 minutes");
    // The count the election keeps is no new regression.
    for secs in [602, 650, 1300] {
        let (changes, _) = book.update("c", reading(vec![regressed(1)]), None, at(t0, secs));
        assert!(changes.fired.is_empty(), "the same count at {secs} s");
    }
    let (changes, _) = book.update("c", reading(vec![regressed(2)]), None, at(t0, 1400));
    assert_eq!(changes.fired.len(), 1, "grew again");
}

#[test]
fn an_adopted_window_alert_holds_until_the_agent_has_watched_a_whole_window() {
    // Firing for an hour when the agent restarted: the regressions and
    // switches behind it were counted by the previous process, and the new
    // one counts none of them, so only a whole window watched shows it over.
    for kind in [Kind::EpochRegression, Kind::MasterFlapping] {
        let t0 = Instant::now() + Duration::from_secs(3600);
        let mut book = Book::new(T);
        let window = kind.window();
        book.adopt([(
            key(kind, "/kafka/controller"),
            t0 - Duration::from_secs(3600),
        )]);
        let (changes, _) = book.update("c", reading(vec![]), None, t0);
        assert_eq!(
            changes.fired,
            vec![key(kind, "/kafka/controller")],
            "{kind:?}"
        );
        assert_eq!(changes.carried, changes.fired, "{kind:?}");
        let (changes, _) = book.update(
            "c",
            reading(vec![]),
            None,
            t0 + window - Duration::from_secs(1),
        );
        assert_eq!(changes, Changes::default(), "{kind:?}: within its window");
        let (changes, _) = book.update("c", reading(vec![]), None, t0 + window);
        assert_eq!(changes.resolved.len(), 1, "{kind:?}: a window watched");
        assert_eq!(book.adopted(), 0);
    }
}

#[test]
fn an_adopted_flapping_alert_the_new_process_sees_flap_goes_on_as_its_own() {
    let t0 = Instant::now() + Duration::from_secs(3600);
    let mut book = Book::new(T);
    let flapping = Condition {
        kind: Kind::MasterFlapping,
        election: "/e".into(),
        since: None,
        value: 0,
        hold: None,
    };
    book.adopt([(
        key(Kind::MasterFlapping, "/e"),
        t0 - Duration::from_secs(3600),
    )]);
    book.update("c", reading(vec![]), None, t0);
    let (changes, _) = book.update("c", reading(vec![flapping.clone()]), None, at(t0, 60));
    assert_eq!(changes, Changes::default(), "one alert, carried on");
    assert_eq!(book.adopted(), 0);
    assert_eq!(
        book.firing().next().unwrap().1.since,
        t0 - Duration::from_secs(3600)
    );
    // Judged by the new process from now on: it resolves when it stops,
    // once a whole window is watched.
    let window = Kind::MasterFlapping.window();
    let (changes, _) = book.update("c", reading(vec![]), None, at(t0, 61));
    assert_eq!(changes, Changes::default());
    let (changes, _) = book.update("c", reading(vec![]), None, t0 + window);
    assert_eq!(changes.resolved.len(), 1);
}

#[test]
fn a_configured_window_replaces_the_catalogues() {
    let t0 = Instant::now();
    let mut windows = [None; Kind::ALL.len()];
    windows[Kind::EpochRegression as usize] = Some(Duration::from_secs(40));
    let mut book = Book::new(Thresholds { windows, ..T });
    let regressed = Condition {
        kind: Kind::EpochRegression,
        election: "/kafka/controller".into(),
        since: None,
        value: 1,
        hold: None,
    };
    let (changes, _) = book.update("c", reading(vec![regressed.clone()]), None, t0);
    assert_eq!(changes.fired.len(), 1);
    let (changes, _) = book.update("c", reading(vec![regressed.clone()]), None, at(t0, 40));
    assert_eq!(changes, Changes::default());
    let (changes, _) = book.update("c", reading(vec![regressed]), None, at(t0, 41));
    assert_eq!(changes.resolved.len(), 1, "no growth for 40 s");
}

#[test]
fn a_window_alert_holds_through_a_lost_session_until_a_window_is_watched_again() {
    // The new session lists the trees again: the switches and regressions
    // seen before are not all in the models any more.
    for kind in [Kind::EpochRegression, Kind::MasterFlapping] {
        let t0 = Instant::now();
        let mut book = Book::new(T);
        let window = kind.window();
        let trouble = Condition {
            kind,
            election: "/e".into(),
            since: None,
            value: 1,
            hold: None,
        };
        let (changes, _) = book.update("c", reading(vec![trouble.clone()]), None, t0);
        assert_eq!(changes.fired.len(), 1, "{kind:?}");
        book.update("c", reading(vec![trouble]), None, t0 + window);
        let (changes, _) = book.update("c", Reading::default(), None, at(t0 + window, 5));
        assert_eq!(changes, Changes::default(), "{kind:?}: no reading");
        let back = at(t0 + window, 10);
        let (changes, _) = book.update("c", reading(vec![]), None, back);
        assert_eq!(
            changes,
            Changes::default(),
            "{kind:?}: back, not yet a window"
        );
        let (changes, _) = book.update("c", reading(vec![]), None, back + window);
        assert_eq!(changes.resolved.len(), 1, "{kind:?}: a window watched");
    }
}

#[test]
fn a_cluster_removed_and_added_again_has_watched_no_window_yet() {
    let t0 = Instant::now();
    let mut book = Book::new(T);
    let window = Kind::MasterFlapping.window();
    book.update("c", reading(vec![]), None, t0);
    book.update("c", reading(vec![]), None, t0 + window);
    // A reload removes the cluster, a later one adds it again, and a
    // restarted agent's read-back finds its flapping alert firing.
    book.forget_others(&Default::default());
    let back = at(t0 + window, 60);
    let flapping = key(Kind::MasterFlapping, "/e");
    book.adopt([(flapping.clone(), t0)]);
    let (changes, _) = book.update("c", reading(vec![]), None, back);
    assert!(
        changes.fired.contains(&flapping),
        "held: the window before the removal is no look at it now"
    );
}
