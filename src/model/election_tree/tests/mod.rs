use super::*;
use crate::model::candidate::IdentityMode;
use std::time::Instant;

fn child(name: &str, ephemeral: bool) -> ChildNode {
    ChildNode {
        name: name.into(),
        data: name.as_bytes().to_vec(),
        ephemeral_owner: i64::from(ephemeral),
        ctime_ms: 1_700_000_000_000,
    }
}

fn now(base: Instant, s: u64) -> Now {
    Now {
        mono: base + Duration::from_secs(s),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(s),
    }
}

fn node(name: &str, owner: i64, ctime_ms: i64) -> ChildNode {
    ChildNode {
        name: name.into(),
        data: format!(r#"{{"brokerid":{owner}}}"#).into_bytes(),
        ephemeral_owner: owner,
        ctime_ms,
    }
}

fn controller() -> ElectionTree {
    ElectionTree::new(ElectionSpec {
        identity: IdentityMode::parse("json:/brokerid").unwrap(),
        style: Style::Node(NodeSpec {
            name: "controller".into(),
            epoch: Some("controller_epoch".into()),
            standbys: None,
        }),
        min_candidates: None,
        record: None,
        no_master_for: None,
        slo: None,
        lease: None,
    })
}

#[test]
fn a_node_election_is_its_one_ephemeral_node() {
    let t = Instant::now();
    let mut tree = controller();
    // Kafka's root: /controller beside persistent siblings.
    tree.apply_listing(
        vec![(
            "/".into(),
            vec![
                node("controller", 7, 1),
                node("brokers", 0, 0),
                node("controller_epoch", 0, 0),
            ],
        )],
        now(t, 0),
        false,
    );
    assert_eq!(tree.parent_count(), 1);
    let e = tree.election("/controller").unwrap();
    let master = e.master().unwrap();
    assert_eq!(
        (master.node, master.identity, master.owner),
        ("controller", "7", 7)
    );
    assert_eq!(
        tree.node_counts().ignored,
        0,
        "siblings are no business of the election"
    );
    // The broker dies: masterless, then another broker re-creates it.
    tree.child_deleted("/", "controller", now(t, 1));
    assert!(tree.election("/controller").unwrap().master().is_none());
    tree.child_deleted("/", "brokers", now(t, 1));
    tree.child_upserted("/", node("controller", 9, 2), now(t, 3));
    let e = tree.election("/controller").unwrap();
    assert_eq!((e.changes(), e.master().unwrap().identity), (1, "9"));
    assert_eq!(e.masterless_total(now(t, 3).mono), Duration::from_secs(2));
    // A data change of the same node is no switch; another session
    // re-creating it during an outage is one, counted at the resync.
    tree.child_upserted("/", node("controller", 9, 2), now(t, 4));
    tree.apply_listing(
        vec![("/".into(), vec![node("controller", 11, 5)])],
        now(t, 6),
        true,
    );
    assert_eq!(tree.election("/controller").unwrap().changes(), 2);
    // A persistent node of that name is no master.
    tree.child_deleted("/", "controller", now(t, 7));
    tree.child_upserted("/", node("controller", 0, 7), now(t, 7));
    assert!(tree.election("/controller").unwrap().master().is_none());
}

#[test]
fn epoch_regressions_and_records_are_read_from_siblings() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(ElectionSpec {
        identity: IdentityMode::parse("hdfs").unwrap(),
        style: Style::Node(NodeSpec {
            name: "lock".into(),
            epoch: Some("epoch".into()),
            standbys: None,
        }),
        min_candidates: None,
        record: Some(("crumb".into(), IdentityMode::Data)),
        no_master_for: None,
        slo: None,
        lease: None,
    });
    let data = |name: &str, text: &str, owner| ChildNode {
        name: name.into(),
        data: text.as_bytes().to_vec(),
        ephemeral_owner: owner,
        ctime_ms: 0,
    };
    tree.apply_listing(
        vec![(
            "/ns1".into(),
            vec![data("epoch", "5", 0), data("crumb", "nn1", 0)],
        )],
        now(t, 0),
        false,
    );
    let facts = tree.facts("/ns1/lock").unwrap();
    assert_eq!(
        (facts.epoch, facts.record.as_deref()),
        (Some(5), Some("nn1"))
    );
    tree.child_upserted("/ns1", data("epoch", "6", 0), now(t, 1));
    tree.child_upserted("/ns1", data("epoch", "4", 0), now(t, 2));
    tree.child_upserted("/ns1", data("epoch", "7", 0), now(t, 3));
    let facts = tree.facts("/ns1/lock").unwrap();
    assert_eq!((facts.epoch, facts.epoch_regressions), (Some(7), 1));
    tree.child_deleted("/ns1", "crumb", now(t, 4));
    assert_eq!(tree.facts("/ns1/lock").unwrap().record, None);
    assert_eq!(tree.record("/ns1/lock"), None);
    assert_eq!(tree.parent_count(), 1, "siblings are facts, not elections");
}

#[test]
fn a_sequential_election_reads_its_record_from_beside_the_election_node() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(ElectionSpec {
        record: Some(("leader".into(), IdentityMode::parse("json:/id").unwrap())),
        no_master_for: None,
        ..ElectionSpec::from(IdentityMode::Node)
    });
    let election = "/overseer_elect/election";
    // Read before the election is listed: kept, not an election.
    tree.outer_record_read(
        election,
        Some((br#"{"id":"72-host:8983_solr-n_0000000001"}"#, 0)),
        now(t, 0),
    );
    assert_eq!(tree.parent_count(), 0);
    tree.apply_listing(
        vec![(
            election.into(),
            vec![node("72-host:8983_solr-n_0000000001", 72, 1)],
        )],
        now(t, 0),
        false,
    );
    assert_eq!(
        tree.record(election),
        Some("72-host:8983_solr-n_0000000001")
    );
    // A record that is no JSON names nothing it could agree with.
    tree.outer_record_read(election, Some((b"garbage", 0)), now(t, 1));
    assert_ne!(
        tree.record(election),
        Some("72-host:8983_solr-n_0000000001")
    );
    tree.outer_record_read(election, None, now(t, 2));
    assert_eq!(tree.record(election), None);
    // Other sequential trees without a record ignore it.
    let mut plain = ElectionTree::new(IdentityMode::Node);
    plain.outer_record_read(election, Some((b"x", 0)), now(t, 3));
    assert_eq!(plain.record(election), None);
}

proptest::proptest! {
    /// Whatever the interleaving of creations (by any session) and
    /// deletions of a node election's node, switches are exactly the
    /// creations by another session than the last master's (or the same
    /// session at another time), after the first master.
    #[test]
    fn node_switches_equal_owner_changes(
        ops in proptest::collection::vec(proptest::option::of(1i64..4), 1..60),
    ) {
        let t = Instant::now();
        let mut tree = controller();
        tree.apply_listing(vec![("/".into(), vec![])], now(t, 0), false);
        let (mut present, mut last, mut switches) = (false, None::<(i64, i64)>, 0u64);
        for (i, op) in ops.into_iter().enumerate() {
            let at = now(t, i as u64 + 1);
            match op {
                Some(owner) if !present => {
                    let incarnation = (owner, i64::try_from(i).unwrap());
                    tree.child_upserted("/", node("controller", owner, i64::try_from(i).unwrap()), at);
                    if last.is_some_and(|l| l != incarnation) {
                        switches += 1;
                    }
                    last = Some(incarnation);
                    present = true;
                }
                Some(_) => {} // ZooKeeper refuses a second create
                None => {
                    tree.child_deleted("/", "controller", at);
                    present = false;
                }
            }
            proptest::prop_assert_eq!(tree.election("/controller").unwrap().changes(), switches);
        }
    }
}

#[test]
fn counts_and_ignored_children() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(IdentityMode::Data);
    tree.apply_listing(
        vec![
            (
                "/bots/b1".into(),
                vec![
                    child("i_0000000001", true),
                    child("i_0000000002", true),
                    child("config", false),
                ],
            ),
            ("/bots/b2".into(), vec![]),
        ],
        now(t, 0),
        false,
    );
    assert_eq!(tree.parent_count(), 2);
    assert_eq!(
        tree.node_counts(),
        NodeCounts {
            nodes: 5,
            ephemeral: 2,
            ignored: 1
        }
    );
    tree.child_upserted("/bots/b2", child("i_0000000001", true), now(t, 3));
    assert_eq!(tree.masterless_histogram().count(), 1);
    assert_eq!(tree.masterless_histogram().sum(), 3.0);
    tree.child_deleted("/bots/b1", "config", now(t, 4));
    assert_eq!(tree.node_counts().ignored, 0);
    tree.child_deleted("/bots/b2", "i_0000000001", now(t, 5));
    tree.parent_deleted("/bots/b2", now(t, 5));
    assert_eq!(tree.parent_count(), 1);
}

#[test]
fn owner_identities_come_from_the_rounds_and_are_never_guessed() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(IdentityMode::parse("owner-host").unwrap());
    // Spark's latch nodes: empty data, owned by the masters' sessions.
    let latch = |n: u32, owner| ChildNode {
        name: format!("_c_{owner}-latch-{n:010}"),
        data: Vec::new(),
        ephemeral_owner: owner,
        ctime_ms: 1_700_000_000_000,
    };
    let e = "/spark/leader_election";
    tree.apply_listing(
        vec![(e.into(), vec![latch(1, 7), latch(2, 8)])],
        now(t, 0),
        false,
    );
    let master = |tree: &ElectionTree| {
        tree.election(e)
            .unwrap()
            .master()
            .unwrap()
            .identity
            .to_owned()
    };
    assert_eq!(master(&tree), "", "unnamed until a round lists the session");
    // A round lists the master's session only.
    let round = |o: i64| (o == 7).then_some("10.0.0.5:41000");
    tree.name_owners(round);
    assert_eq!(master(&tree), "10.0.0.5");
    let events = tree.take_events();
    assert!(
        matches!(&events[..], [(p, What::MasterNamed { master })] if p == e && master.identity == "10.0.0.5"),
        "{events:?}"
    );
    let ids: Vec<&str> = tree
        .election(e)
        .unwrap()
        .candidates()
        .map(|c| c.2)
        .collect();
    assert_eq!(ids, ["10.0.0.5", ""], "the standby stays unnamed");
    // A candidate of a session the last round listed is named at once.
    tree.child_upserted(e, latch(3, 7), now(t, 1));
    let ids: Vec<&str> = tree
        .election(e)
        .unwrap()
        .candidates()
        .map(|c| c.2)
        .collect();
    assert_eq!(ids, ["10.0.0.5", "", "10.0.0.5"]);
    assert_eq!(
        tree.election(e).unwrap().duplicate_identities(),
        2,
        "one session, two nodes"
    );
    // The same round again names nothing anew.
    tree.name_owners(round);
    assert!(tree.take_events().is_empty());
    // The master leaves; the standby becomes master unnamed, then named.
    tree.child_deleted(e, &latch(1, 7).name, now(t, 2));
    tree.child_deleted(e, &latch(3, 7).name, now(t, 2));
    assert_eq!(master(&tree), "");
    tree.take_events();
    tree.name_owners(|o| (o == 8).then_some("[::1]:41001"));
    assert_eq!(master(&tree), "::1");
    assert!(matches!(
        &tree.take_events()[..],
        [(_, What::MasterNamed { .. })]
    ));
}

#[test]
fn owner_record_names_the_candidate_whose_session_wrote_the_record() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(ElectionSpec {
        record: Some((
            "rest_server/connection_info".into(),
            IdentityMode::parse("flink").unwrap(),
        )),
        ..ElectionSpec::from(IdentityMode::OwnerRecord)
    });
    let e = "/flink/default/leader/latch";
    let latch = |n: u32, owner| ChildNode {
        name: format!("_c_{owner}-latch-{n:010}"),
        data: Vec::new(),
        ephemeral_owner: owner,
        ctime_ms: 1_700_000_000_000,
    };
    // Flink's leader information: writeUTF(address), then the session UUID.
    let info = |address: &str| {
        let mut d = vec![
            0xAC,
            0xED,
            0x00,
            0x05,
            0x77,
            u8::try_from(address.len() + 2).unwrap(),
            0,
        ];
        d.push(u8::try_from(address.len()).unwrap());
        d.extend_from_slice(address.as_bytes());
        d.extend_from_slice(b"sr\x00\x0ejava.util.UUID");
        d
    };
    tree.apply_listing(
        vec![(e.into(), vec![latch(0, 7), latch(1, 8)])],
        now(t, 0),
        false,
    );
    let ids = |tree: &ElectionTree| -> Vec<String> {
        tree.election(e)
            .unwrap()
            .candidates()
            .map(|c| c.2.to_owned())
            .collect()
    };
    assert_eq!(ids(&tree), ["", ""], "unnamed until the record is read");
    tree.outer_record_read(e, Some((&info("http://10.0.0.5:8081"), 7)), now(t, 0));
    assert_eq!(ids(&tree), ["http://10.0.0.5:8081", ""]);
    assert_eq!(tree.record(e), Some("http://10.0.0.5:8081"));
    assert!(matches!(
        &tree.take_events()[..],
        [(_, What::MasterNamed { .. })]
    ));
    // The leader goes: its latch node and (with its session) its record.
    tree.child_deleted(e, &latch(0, 7).name, now(t, 1));
    tree.outer_record_read(e, None, now(t, 1));
    assert_eq!(ids(&tree), [""], "the new leader has not published yet");
    // A record of another session than the master's names only that one.
    tree.child_upserted(e, latch(2, 9), now(t, 2));
    tree.outer_record_read(e, Some((&info("http://10.0.0.9:8081"), 9)), now(t, 2));
    assert_eq!(ids(&tree), ["", "http://10.0.0.9:8081"]);
    // The new leader publishes.
    tree.outer_record_read(e, Some((&info("http://10.0.0.6:8081"), 8)), now(t, 2));
    assert_eq!(ids(&tree)[0], "http://10.0.0.6:8081");
    // A candidate joining after its session wrote the record is named at once.
    let mut late = ElectionTree::new(tree.spec().clone());
    late.outer_record_read(e, Some((&info("http://h:1"), 5)), now(t, 3));
    late.apply_listing(vec![(e.into(), vec![latch(4, 5)])], now(t, 3), false);
    assert_eq!(ids(&late), ["http://h:1"]);
}

/// The tree's time without a master as `zookeeper_tree_masterless_seconds_total`
/// exports it: the watched elections' plus the deleted ones'.
fn masterless_of(tree: &ElectionTree, at: Instant) -> Duration {
    tree.elections()
        .map(|(_, e)| e.masterless_total(at))
        .sum::<Duration>()
        + tree.masterless_gone()
}

proptest::proptest! {
    /// Whatever happens to a tree's elections (created, deleted, emptied,
    /// re-listed without some of them), its time without a master never
    /// goes down: a drop would read as a counter reset, and a rate over it
    /// as a burst of downtime (a false burn-rate page).
    #[test]
    fn the_trees_masterless_time_never_goes_down(
        ops in proptest::collection::vec((0u8..5, 0usize..3), 1..60),
    ) {
        let t = Instant::now();
        let mut tree = ElectionTree::new(IdentityMode::Node);
        let mut last = Duration::ZERO;
        for (i, (op, e)) in ops.into_iter().enumerate() {
            let at = now(t, i as u64 + 1);
            let path = format!("/e/{e}");
            match op {
                0 => tree.parent_created(&path, at),
                1 => tree.parent_deleted(&path, at),
                2 => tree.child_upserted(&path, child(&format!("c_{:010}", i), true), at),
                3 => {
                    let names: Vec<String> = tree.child_names(&path).into_iter().collect();
                    if let Some(name) = names.first() {
                        tree.child_deleted(&path, name, at);
                    }
                }
                _ => {
                    let kept = format!("/e/{}", (e + 1) % 3);
                    tree.retain_parents(&|p| p == kept, at);
                }
            }
            let total = masterless_of(&tree, at.mono);
            proptest::prop_assert!(total >= last, "{total:?} after {last:?} at step {i}");
            last = total;
        }
    }
}

#[test]
fn a_deleted_elections_masterless_time_stays_in_the_tree() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(IdentityMode::Node);
    tree.apply_listing(vec![("/e/1".into(), vec![])], now(t, 0), false);
    // Masterless from 0 to 10 s, then deleted.
    tree.parent_deleted("/e/1", now(t, 10));
    assert_eq!(tree.masterless_gone(), Duration::from_secs(10));
    assert_eq!(
        masterless_of(&tree, t + Duration::from_secs(99)),
        Duration::from_secs(10)
    );
}

#[test]
fn a_handover_lasts_from_the_old_masters_node_going_to_the_record_naming_the_new_one() {
    let t = Instant::now();
    let ms = |m: u64| Now {
        mono: t + Duration::from_millis(m),
        wall: SystemTime::UNIX_EPOCH + Duration::from_millis(m),
    };
    // HDFS's ZKFC: the lock's data and the breadcrumb name a namenode.
    let mut tree = ElectionTree::new(ElectionSpec {
        identity: IdentityMode::Data,
        style: Style::node("lock"),
        record: Some(("crumb".into(), IdentityMode::Data)),
        ..ElectionSpec::from(IdentityMode::Data)
    });
    let node = |name: &str, text: &str, owner| ChildNode {
        name: name.into(),
        data: text.as_bytes().to_vec(),
        ephemeral_owner: owner,
        ctime_ms: 0,
    };
    let e = "/ns1/lock";
    tree.apply_listing(
        vec![(
            "/ns1".into(),
            vec![node("lock", "nn1", 1), node("crumb", "nn1", 0)],
        )],
        ms(0),
        false,
    );
    assert!(
        tree.handover(e).is_none(),
        "no handover before a master went"
    );
    // nn1's lock goes at 1.000 s; nn2 takes it at 1.080 s; its breadcrumb
    // comes at 1.150 s: 150 ms.
    tree.child_deleted("/ns1", "lock", ms(1000));
    tree.child_upserted("/ns1", node("lock", "nn2", 2), ms(1080));
    assert_eq!(
        tree.handover(e).unwrap().done(),
        None,
        "the breadcrumb still names nn1"
    );
    tree.child_upserted("/ns1", node("crumb", "nn2", 0), ms(1150));
    let (took, at) = tree.handover(e).unwrap().done().unwrap();
    assert_eq!(took, Duration::from_millis(150));
    assert_eq!(at, SystemTime::UNIX_EPOCH + Duration::from_millis(1150));
    let h = tree.handover_histogram().unwrap();
    assert_eq!((h.count(), h.sum()), (1, 0.15));
    // A later record write changes nothing: the handover is done.
    tree.child_upserted("/ns1", node("crumb", "nn2", 0), ms(5000));
    assert_eq!(tree.handover_histogram().unwrap().count(), 1);

    // A tree without a record has no evidence, so no figure.
    let mut plain = ElectionTree::new(IdentityMode::Data);
    plain.apply_listing(
        vec![("/e".into(), vec![child("c_0000000001", true)])],
        ms(0),
        false,
    );
    plain.child_deleted("/e", "c_0000000001", ms(10));
    assert!(plain.handover_histogram().is_none());
    assert!(plain.handover("/e").is_none());
}

#[test]
fn a_preempting_candidate_starts_no_handover() {
    let t = Instant::now();
    let mut tree = ElectionTree::new(ElectionSpec {
        record: Some(("leader".into(), IdentityMode::Data)),
        ..ElectionSpec::from(IdentityMode::Data)
    });
    let e = "/overseer_elect/election";
    tree.apply_listing(
        vec![(e.into(), vec![child("n_0000000005", true)])],
        now(t, 0),
        false,
    );
    // A lower sequence joins and takes over: the old master's node stays.
    tree.child_upserted(e, child("n_0000000001", true), now(t, 1));
    assert!(tree.handover(e).is_none());
}

mod resync;
