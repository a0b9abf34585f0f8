//! Elections, locks, groups, known systems and exclusions: what each tree
//! kind takes and refuses.

use super::*;

#[test]
fn locks_and_min_candidates() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let c = load_file(
        &format!(
            "{base}[[clusters.elections]]\npath=\"/bots/*\"\nmin_candidates=2\n\
             [[clusters.locks]]\npath=\"/locks/*\"\nmax_hold=\"5m\"\n[[clusters.locks]]\npath=\"/l2\"\n"
        ),
        &[],
    )
    .unwrap();
    let cluster = &c.clusters[0];
    assert_eq!(cluster.elections[0].spec.min_candidates, Some(2));
    assert_eq!(
        cluster.locks[0].spec.max_hold,
        Some(Duration::from_secs(300))
    );
    assert_eq!(cluster.locks[1].spec.max_hold, None);
    assert!(
        !cluster.discovery.enabled,
        "locks count as configured trees"
    );
    assert_eq!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/b/*\"\nmin_candidates=0"
        )),
        "clusters[0].elections[0].min_candidates: must be at least 1 (leave it out for no standby alert)"
    );
    assert_eq!(
        err(&format!(
            "{base}[[clusters.locks]]\npath=\"/l/*\"\nmax_hold=\"10ms\""
        )),
        "clusters[0].locks[0].max_hold: must be at least 1s"
    );
    assert!(
        err(&format!("{base}[[clusters.locks]]\npath=\"/l/**\""))
            .starts_with("clusters[0].locks[0].path:")
    );
}

#[test]
fn election_styles() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let c = load_file(
        &format!(
            "{base}[[clusters.elections]]\npath=\"/hadoop-ha/*/ActiveStandbyElectorLock\"\nstyle=\"node\"\n"
        ),
        &[],
    )
    .unwrap();
    let e = &c.clusters[0].elections[0];
    assert_eq!(e.pattern.root(), "/hadoop-ha");
    assert!(matches!(
        &e.spec.style,
        crate::model::election_tree::Style::Node(n) if n.name == "ActiveStandbyElectorLock"
    ));
    assert!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/a/*\"\nstyle=\"node\""
        ))
        .starts_with(
            "clusters[0].elections[0].path: `/a/*`: the last segment names the election node"
        )
    );
    assert!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/a\"\nstyle=\"lock\""
        ))
        .starts_with("clusters[0].elections[0].style: `lock` is not an election style")
    );
}

#[test]
fn node_election_extras() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let c = load_file(
        &format!(
            "{base}[[clusters.elections]]\npath=\"/controller\"\nstyle=\"node\"\n\
             standbys=\"/brokers/ids\"\nepoch=\"/controller_epoch\"\n\
             record={{ path=\"/leader_record\", identity=\"node\" }}\n"
        ),
        &[],
    )
    .unwrap();
    let cluster = &c.clusters[0];
    assert_eq!(
        cluster.groups[0].pattern.as_str(),
        "/brokers/ids",
        "standbys are watched"
    );
    let crate::model::election_tree::Style::Node(n) = &cluster.elections[0].spec.style else {
        panic!("node style");
    };
    assert_eq!(n.epoch.as_deref(), Some("controller_epoch"));
    assert_eq!(
        cluster.elections[0]
            .spec
            .record
            .as_ref()
            .map(|(r, _)| r.as_str()),
        Some("leader_record")
    );
    assert_eq!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/controller\"\nstyle=\"node\"\nepoch=\"/x/epoch\""
        )),
        "clusters[0].elections[0].epoch: `/x/epoch` must be a sibling of the election node `/controller`"
    );
    assert!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/b/*\"\nepoch=\"/b/e\""
        ))
        .starts_with("clusters[0].elections[0].epoch: only applies to style = \"node\"")
    );
    assert!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/ha/*/lock\"\nstyle=\"node\"\nstandbys=\"/ha/standbys\""
        ))
        .starts_with("clusters[0].elections[0].standbys: names a sibling of the election node")
    );
}

#[test]
fn a_sequential_election_takes_a_record_beside_its_node() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let c = load_file(
        &format!(
            "{base}[[clusters.elections]]\npath=\"/overseer_elect/election\"\n\
             record={{ path=\"/overseer_elect/leader\", identity=\"json:/id\" }}\n"
        ),
        &[],
    )
    .unwrap();
    let spec = &c.clusters[0].elections[0].spec;
    assert!(spec.style.is_sequential());
    assert_eq!(
        spec.record.as_ref().map(|(r, _)| r.as_str()),
        Some("leader")
    );
    assert_eq!(
        err(&format!(
            "{base}[[clusters.elections]]\npath=\"/overseer_elect/election\"\n\
             record={{ path=\"/elsewhere/leader\" }}\n"
        )),
        "clusters[0].elections[0].record.path: `/elsewhere/leader` must be beside the election node `/overseer_elect/election` or below a sibling of it (under `/overseer_elect/`, without `*`)"
    );
    let glob_err = err(&format!(
        "{base}[[clusters.elections]]\npath=\"/bots/*\"\nrecord={{ path=\"/bots/leader\" }}\n"
    ));
    assert!(
        glob_err.starts_with("clusters[0].elections[0].record.path: a record of every election a glob matches needs the election node named"),
        "{glob_err}"
    );
    // Every election of a glob with its record below a sibling (Flink).
    let c = load_file(
        &format!(
            "{base}[[clusters.elections]]\npath=\"/flink/*/leader/latch\"\nidentity=\"owner-record\"\n\
             record={{ path=\"/flink/*/leader/rest_server/connection_info\", identity=\"flink\" }}\n"
        ),
        &[],
    )
    .unwrap();
    let spec = &c.clusters[0].elections[0].spec;
    assert_eq!(
        spec.record.as_ref().map(|(r, m)| (r.as_str(), m.spec())),
        Some(("rest_server/connection_info", "flink".to_owned()))
    );
    for bad in [
        "/flink/*/leader/*/connection_info",
        "/flink/*/leader",
        "/flink/x/leader/info",
    ] {
        let e = err(&format!(
            "{base}[[clusters.elections]]\npath=\"/flink/*/leader/latch\"\nrecord={{ path=\"{bad}\" }}\n"
        ));
        assert!(
            e.starts_with("clusters[0].elections[0].record.path: "),
            "{bad}: {e}"
        );
    }
    let no_record = err(&format!(
        "{base}[[clusters.elections]]\npath=\"/e\"\nidentity=\"owner-record\"\n"
    ));
    assert!(
        no_record.starts_with("clusters[0].elections[0].identity: "),
        "{no_record}"
    );
}

#[test]
fn known_systems_expand_to_their_layouts() {
    let c = load_file(
        "[[clusters]]\nservers=[\"a\"]\n\
         [[clusters.systems]]\nkind=\"kafka\"\nroot=\"/kafka\"\n\
         [[clusters.systems]]\nkind=\"hbase\"\n\
         [[clusters.systems]]\nkind=\"hdfs\"\n\
         [[clusters.systems]]\nkind=\"solr\"\n",
        &[],
    )
    .unwrap();
    let cluster = &c.clusters[0];
    let elections: Vec<&str> = cluster
        .elections
        .iter()
        .map(|e| e.pattern.as_str())
        .collect();
    assert_eq!(
        elections,
        [
            "/kafka/controller",
            "/hbase/master",
            "/hadoop-ha/*/ActiveStandbyElectorLock",
            "/overseer_elect/election",
            "/collections/*/leader_elect/*/election"
        ]
    );
    let records: Vec<Option<&str>> = cluster
        .elections
        .iter()
        .map(|e| e.spec.record.as_ref().map(|(r, _)| r.as_str()))
        .collect();
    assert_eq!(
        records,
        [None, None, Some("ActiveBreadCrumb"), Some("leader"), None],
        "the HDFS breadcrumb and the Solr overseer's leader record"
    );
    let groups: Vec<&str> = cluster.groups.iter().map(|g| g.pattern.as_str()).collect();
    assert_eq!(
        groups,
        ["/hbase/rs", "/kafka/brokers/ids", "/hbase/backup-masters"]
    );
    assert!(!cluster.discovery.enabled);
    assert_eq!(
        err("[[clusters]]\nservers=[\"a\"]\n[[clusters.systems]]\nkind=\"mongo\"\n"),
        "clusters[0].systems[0].kind: `mongo` is not a known system; choose from clickhouse, flink, hbase, hdfs, kafka, patroni, solr, spark, test-only"
    );
    let o = Overrides {
        zk: Some("a:1".into()),
        systems: vec!["kafka:/k".into(), "hdfs".into()],
        ..Default::default()
    };
    let c = load(&o, std::iter::empty()).unwrap();
    assert_eq!(c.clusters[0].elections[0].pattern.as_str(), "/k/controller");
    assert_eq!(c.clusters[0].elections.len(), 2);
}

#[test]
fn exclusions_are_validated_with_the_key_that_holds_them() {
    let e = err(
        "[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"/bots/*\"\nexclude=[\"/bots/b1\", \"/bots\"]",
    );
    assert!(
        e.contains("elections[0].exclude[1]") && e.contains("never exclude"),
        "{e}"
    );
    let e = err(
        "[[clusters]]\nservers=[\"a\"]\n[[clusters.locks]]\npath=\"/locks/*\"\nexclude=[\"locks/x\"]",
    );
    assert!(
        e.contains("locks[0].exclude[0]") && e.contains("absolute"),
        "{e}"
    );
}

#[test]
fn patroni_is_every_scopes_leader_key_with_its_members_as_standbys() {
    let c = load_file(
        "[[clusters]]\nservers=[\"a\"]\n[[clusters.systems]]\nkind=\"patroni\"\n\
         [[clusters.systems]]\nkind=\"patroni\"\nroot=\"/pg\"\n",
        &[],
    )
    .unwrap();
    let cluster = &c.clusters[0];
    let elections: Vec<&str> = cluster
        .elections
        .iter()
        .map(|e| e.pattern.as_str())
        .collect();
    assert_eq!(elections, ["/service/*/leader", "/pg/*/leader"]);
    let crate::model::election_tree::Style::Node(n) = &cluster.elections[0].spec.style else {
        panic!("a node election");
    };
    assert_eq!(
        n.standbys
            .as_ref()
            .map(|s| s.registry_of("/service/demo/leader")),
        Some("/service/demo/members".to_owned()),
        "each scope's own members"
    );
    assert!(matches!(
        cluster.elections[0].spec.identity,
        IdentityMode::Data
    ));
    let groups: Vec<&str> = cluster.groups.iter().map(|g| g.pattern.as_str()).collect();
    assert_eq!(groups, ["/service/*/members", "/pg/*/members"]);
}

#[test]
fn a_groups_alive_marker_is_one_child_name() {
    let base = "[[clusters]]\nservers=[\"a\"]\n[[clusters.groups]]\npath=\"/t/*/replicas\"\n";
    let c = load_file(&format!("{base}alive=\"is_active\"\n"), &[]).unwrap();
    assert_eq!(
        c.clusters[0].groups[0].spec.alive.as_deref(),
        Some("is_active")
    );
    for bad in ["a/b", "", ".."] {
        let e = err(&format!("{base}alive=\"{bad}\"\n"));
        assert!(e.starts_with("clusters[0].groups[0].alive: "), "{e}");
    }
}

#[test]
fn spark_is_its_leader_latch_named_by_the_owner_sessions_host() {
    let c = load_file(
        "[[clusters]]\nservers=[\"a\"]\n[[clusters.systems]]\nkind=\"spark\"\n\
         [[clusters.systems]]\nkind=\"spark\"\nroot=\"/ha/spark\"\n",
        &[],
    )
    .unwrap();
    let elections: Vec<(&str, String)> = c.clusters[0]
        .elections
        .iter()
        .map(|e| (e.pattern.as_str(), e.spec.identity.spec()))
        .collect();
    assert_eq!(
        elections,
        [
            ("/spark/leader_election", "owner-host".to_owned()),
            ("/ha/spark/leader_election", "owner-host".to_owned())
        ]
    );
}

#[test]
fn owner_identities_need_the_ghost_check_and_name_only_candidates() {
    let base = "[[clusters]]\nservers=[\"a\"]\n";
    let election = "[[clusters.elections]]\npath=\"/e\"\nidentity=\"owner-address\"\n";
    load_file(&format!("{base}{election}"), &[]).unwrap();
    let off = err(&format!(
        "{base}{election}[clusters.ghost_check]\nenabled=false\n"
    ));
    assert!(
        off.starts_with("clusters[0].ghost_check.enabled: the election `/e`")
            && off.contains("owner-address"),
        "{off}"
    );
    let words_off = err(&format!(
        "{base}{election}[clusters.four_letter_words]\nenabled=false\n"
    ));
    assert!(
        words_off.starts_with("clusters[0].ghost_check.enabled: "),
        "{words_off}"
    );
    let group = err(&format!(
        "{base}[[clusters.groups]]\npath=\"/g\"\nmember=\"owner-host\"\n"
    ));
    assert!(
        group.starts_with("clusters[0].groups[0].member: "),
        "{group}"
    );
    let record = err(&format!(
        "{base}[[clusters.elections]]\npath=\"/s\"\nrecord={{path=\"/r\",identity=\"owner-host\"}}\n"
    ));
    assert!(
        record.starts_with("clusters[0].elections[0].record.identity: "),
        "{record}"
    );
}

#[test]
fn flink_is_every_cluster_ids_latch_named_by_its_leader_information() {
    let c = load_file(
        "[[clusters]]\nservers=[\"a\"]\n[[clusters.systems]]\nkind=\"flink\"\n",
        &[],
    )
    .unwrap();
    let e = &c.clusters[0].elections[0];
    assert_eq!(e.pattern.as_str(), "/flink/*/leader/latch");
    assert_eq!(e.spec.identity.spec(), "owner-record");
    assert_eq!(
        e.spec.record.as_ref().map(|(r, m)| (r.as_str(), m.spec())),
        Some(("rest_server/connection_info", "flink".to_owned()))
    );
}

#[test]
fn an_election_sets_slo_is_a_share_over_a_window() {
    let base = "[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"/bots/*\"\n";
    let c = load_file(&format!("{base}slo={{ availability=0.999 }}\n"), &[]).unwrap();
    let slo = c.clusters[0].elections[0].spec.slo.unwrap();
    assert_eq!(slo.availability, 0.999);
    assert_eq!(
        slo.window,
        std::time::Duration::from_secs(30 * 86_400),
        "30d by default"
    );
    for (bad, key) in [
        ("availability=1.0", "availability"),
        ("availability=0", "availability"),
        ("availability=99.9", "availability"),
        ("availability=0.99, window=\"5m\"", "window"),
    ] {
        let e = err(&format!("{base}slo={{ {bad} }}\n"));
        assert!(
            e.starts_with(&format!("clusters[0].elections[0].slo.{key}: ")),
            "{bad}: {e}"
        );
    }
}

#[test]
fn lease_sources() {
    let dir = std::env::temp_dir().join(format!("zkee-lease-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dsn = dir.join("dsn");
    std::fs::write(&dsn, "postgres://agent@db:5432/app\n").unwrap();
    let base = "[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"/bots/*\"\n";
    let with = |lease: &str| {
        format!(
            "{base}lease = {{ dsn_file = \"{}\"{lease} }}",
            dsn.display()
        )
    };
    let c = load_file(&with(", table = \"app.leases\", interval = \"1s\""), &[]).unwrap();
    let e = &c.clusters[0].elections[0];
    let source = e.lease.as_ref().unwrap();
    assert_eq!(
        (
            source.table.as_str(),
            source.key.as_str(),
            source.holder.as_str()
        ),
        ("app.leases", "bot_id", "instance_id")
    );
    assert_eq!(source.interval, Duration::from_secs(1));
    assert_eq!(source.timeout, Duration::from_secs(2));
    let spec = e.spec.lease.as_ref().unwrap();
    assert_eq!(spec.split_brain_for, Duration::from_secs(60));
    assert_eq!(spec.key, crate::model::lease::LeaseKey::Name);
    // Refused, naming the key: anything that would need escaping in SQL,
    // an unknown scheme, a missing file, an unknown key_from.
    assert!(err(&with(", holder = \"id; DROP TABLE x\"")).starts_with(
        "clusters[0].elections[0].lease.holder: `id; DROP TABLE x` is not a plain SQL identifier"
    ));
    assert!(err(&with(", table = \"a.b.c\"")).starts_with("clusters[0].elections[0].lease.table:"));
    assert!(
        err(&with(", key_from = \"glob\"")).starts_with("clusters[0].elections[0].lease.key_from:")
    );
    let capture = |path: &str| {
        format!(
            "[[clusters]]\nservers=[\"a\"]\n[[clusters.elections]]\npath=\"{path}\"\nlease = {{ dsn_file = \"{}\", key_from = \"capture\" }}",
            dsn.display()
        )
    };
    let c = load_file(&capture("/apps/*/bots/*"), &[]).unwrap();
    let key = &c.clusters[0].elections[0].spec.lease.as_ref().unwrap().key;
    assert_eq!(key.of("/apps/app1/bots/bot_7"), "app1/bot_7");
    assert!(err(&capture("/single")).contains("this path has none"));
    assert!(
        err(&with(", time_zone = \"'; --\""))
            .starts_with("clusters[0].elections[0].lease.time_zone:")
    );
    assert!(err(&with(", max_rows = 0")).starts_with("clusters[0].elections[0].lease.max_rows:"));
    assert!(err(&with(", colour = \"red\"")).contains("colour"));
    assert!(
        err(&format!("{base}lease = {{ table = \"t\" }}"))
            .starts_with("clusters[0].elections[0].lease.dsn_file: is required")
    );
    assert!(
        err(&format!(
            "{base}lease = {{ dsn_file = \"/nonexistent/dsn\" }}"
        ))
        .starts_with("clusters[0].elections[0].lease.dsn_file: cannot read /nonexistent/dsn")
    );
    std::fs::write(&dsn, "sqlite:///tmp/x.db").unwrap();
    assert!(err(&with("")).contains("must start with postgres://"));
    // The DSN's content never shows in the printed configuration.
    std::fs::write(&dsn, "postgres://agent:hunter2@db/app").unwrap();
    let c = load_file(&with(""), &[]).unwrap();
    assert!(!format!("{c:?}").contains("hunter2"));
    std::fs::remove_dir_all(&dir).unwrap();
}
