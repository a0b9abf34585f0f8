//! The lease source against Debian's PostgreSQL and MariaDB (the
//! application's own database, `master_lease` as the single-active design
//! writes it), a real ZooKeeper and a real Alertmanager:
//! (a) the master writes its lease: agrees;
//! (b) ZooKeeper loses the old master's session (its connection cut, as a
//!     partition does) while the old master keeps renewing: split brain,
//!     pushed to Alertmanager, resolved once it stops;
//! (c) a master's heartbeat stops behind a live session: lease expired;
//!     and a lease written for an election without candidates;
//! (d) the database slow (its table locked) and down: no reading, no alert
//!     fires or resolves, the failure counted and named;
//! (e) garbage rows: counted, never a panic, never a label over the cap;
//! and the handover histogram against a scripted takeover with a known
//! delay.

mod common;

use std::time::{Duration, Instant};

use common::database::{AGENT_PASSWORD, Database, Engine, Renewer, lease};
use common::program::{alertmanager, alerts_in_alertmanager};
use common::*;

const T: Duration = Duration::from_secs(60);

/// Active alerts of `name` for `election`.
fn alerted(am: &common::program::Program, name: &str, election: &str) -> Result<usize, String> {
    Ok(alerts_in_alertmanager(am, name)?
        .iter()
        .filter(|a| a["election"] == election)
        .count())
}

async fn until_alerted(am: &common::program::Program, name: &str, election: &str, want: usize) {
    wait_for_async(
        &format!("{want} {name} for {election} in Alertmanager"),
        T,
        || match alerted(am, name, election)? {
            n if n == want => Ok(()),
            n => Err(format!("{n} active")),
        },
    )
    .await;
}

async fn until_state(agent: &Exporter, election: &str, state: &str) {
    agent
        .until_values(
            &format!("{election}: lease {state}"),
            T,
            &[(
                "zookeeper_election_lease_state",
                &[("election", election), ("state", state)],
                Some(1.0),
            )],
        )
        .await;
}

async fn split_brain_and_outages(engine: Engine) {
    let zk = shared_server();
    let mut db = Database::start(engine).await;
    db.create_lease_table("master_lease").await;
    let am = alertmanager(&format!("am-lease-{}", engine.tag()));
    let base = unique_path(&format!("lease_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    for bot in ["bot_1", "bot_2", "bot_3"] {
        mkdir(&admin, &format!("{base}/bots/{bot}")).await;
    }
    let agent = Exporter::start(&format!(
        "[alerting]\nalertmanagers = [\"http://127.0.0.1:{am}\"]\nresend_interval = \"1s\"\n\
         [[clusters]]\nname = \"lease\"\nservers = [\"{zk}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.elections]]\npath = \"{base}/bots/*\"\n{}\n",
        lease(
            &db,
            "master_lease",
            ", split_brain_for = \"3s\", expired_for = \"3s\""
        ),
        am = am.port,
        zk = zk.address(),
    ));
    let (bot_1, bot_2, bot_3) = (
        format!("{base}/bots/bot_1"),
        format!("{base}/bots/bot_2"),
        format!("{base}/bots/bot_3"),
    );

    // (a) inst-a is master (through a proxy that can be cut) and renews.
    let proxy = Proxy::start(zk.address()).await;
    let a = abandonable_client(&proxy.address(), Duration::from_secs(4)).await;
    candidate(&a, &bot_1, "n_", b"inst-a").await;
    let renew_a = Renewer::start(&db, "bot_1", "inst-a", 3.0);
    agent
        .until_values(
            "bot_1 agrees",
            T,
            &[
                (
                    "zookeeper_election_lease_agrees",
                    &[("election", &bot_1)],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_holder_info",
                    &[("election", &bot_1), ("holder", "inst-a")],
                    Some(1.0),
                ),
                ("zookeeper_lease_up", &[], Some(1.0)),
            ],
        )
        .await;

    // The handover: inst-c leads bot_2 with inst-d standing by; inst-c's
    // session closes, inst-d writes its lease 2 s later.
    let c = client(&zk.address()).await;
    candidate(&c, &bot_2, "n_", b"inst-c").await;
    let d = client(&zk.address()).await;
    candidate(&d, &bot_2, "n_", b"inst-d").await;
    db.exec(&db.lease_write("master_lease", "bot_2", "inst-c", 60.0))
        .await;
    until_state(&agent, &bot_2, "agrees").await;
    const DELAY: Duration = Duration::from_secs(2);
    let closed = Instant::now();
    drop(c);
    tokio::time::sleep(DELAY).await;
    db.exec(&db.lease_write("master_lease", "bot_2", "inst-d", 60.0))
        .await;
    let written = closed.elapsed();
    let handover = wait_for_async("bot_2's handover", T, || {
        let path = format!("/api/v1/elections{bot_2}");
        let (status, body) = http_get(agent.port, &path)?;
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        match v["elections"][0]["last_handover"]["seconds"].as_f64() {
            Some(s) if status == 200 => Ok(s),
            _ => Err(body),
        }
    })
    .await;
    // No later than the write's end after the close began; not earlier
    // than the scripted delay less the watch's and query's latency.
    assert!(
        handover <= written.as_secs_f64() + 0.05 && handover >= DELAY.as_secs_f64() / 4.0,
        "handover {handover:.3} s against a takeover {written:?} after the close"
    );
    let m = agent
        .until("the handover counted", T, |m| {
            m.get("zookeeper_tree_handover_seconds_count", &[]) == Some(1.0)
        })
        .await;
    assert_eq!(
        m.get("zookeeper_tree_handover_seconds_count", &[]),
        Some(1.0)
    );

    // (b) inst-b joins bot_1; inst-a's connection is cut, ZooKeeper expires
    // its session and elects inst-b, and inst-a keeps renewing its lease.
    let b = client(&zk.address()).await;
    candidate(&b, &bot_1, "n_", b"inst-b").await;
    let cut = Instant::now();
    proxy.cut();
    agent
        .until_values(
            "inst-b master of bot_1, inst-a still leasing",
            T,
            &[
                (
                    "zookeeper_election_master",
                    &[("election", &bot_1), ("identity", "inst-b")],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_state",
                    &[("election", &bot_1), ("state", "split_brain")],
                    Some(1.0),
                ),
            ],
        )
        .await;
    until_alerted(&am, "ZooKeeperElectionSplitBrain", &bot_1, 1).await;
    eprintln!(
        "{}: split brain pushed {:?} after the old master's connection was cut (session 4s, split_brain_for 3s)",
        engine.tag(),
        cut.elapsed()
    );
    let pushed = alerts_in_alertmanager(&am, "ZooKeeperElectionSplitBrain").unwrap();
    assert_eq!(pushed[0]["ensemble"], "lease");
    assert_eq!(pushed[0]["severity"], "critical");
    let entry = timeline(&agent, &bot_1)
        .into_iter()
        .find(|e| e["kind"] == "lease_verdict" && e["state"] == "split_brain")
        .expect("a split_brain entry");
    assert_eq!(
        (entry["master"].as_str(), entry["holder"].as_str()),
        (Some("inst-b"), Some("inst-a")),
        "both identities: {entry}"
    );
    // inst-a stops: its lease runs out, the alert resolves; inst-b takes it.
    renew_a.stop().await;
    until_state(&agent, &bot_1, "not_taken").await;
    until_alerted(&am, "ZooKeeperElectionSplitBrain", &bot_1, 0).await;
    db.exec(&db.lease_write("master_lease", "bot_1", "inst-b", 60.0))
        .await;
    until_state(&agent, &bot_1, "agrees").await;
    drop(a);

    // (c) inst-e leads bot_3, writes one short lease and stops: expired.
    let e = client(&zk.address()).await;
    candidate(&e, &bot_3, "n_", b"inst-e").await;
    db.exec(&db.lease_write("master_lease", "bot_3", "inst-e", 1.0))
        .await;
    until_state(&agent, &bot_3, "expired").await;
    until_alerted(&am, "ZooKeeperElectionLeaseExpired", &bot_3, 1).await;

    // (d) slow: the application locks the table; the agent's query times
    // out. Meanwhile inst-e's session closes, which would end the expired
    // lease's alert if a reading showed it: none does, so it stays.
    let mut locker = db.app().await;
    let lock = match engine {
        Engine::Postgres => "BEGIN; LOCK TABLE master_lease IN ACCESS EXCLUSIVE MODE",
        Engine::MariaDb => "LOCK TABLES master_lease WRITE",
    };
    sqlx::raw_sql(lock).execute(&mut locker).await.unwrap();
    agent
        .until("lease queries time out", T, |m| {
            m.get("zookeeper_lease_failures_total", &[("reason", "timeout")])
                .is_some_and(|n| n >= 1.0)
                && m.get("zookeeper_lease_up", &[]) == Some(0.0)
                && m.series("zookeeper_election_lease_state", &[]).is_empty()
        })
        .await;
    drop(e);
    agent
        .until("bot_3 masterless", T, |m| {
            m.get("zookeeper_election_has_master", &[("election", &bot_3)]) == Some(0.0)
        })
        .await;
    let m = agent
        .until("more timeouts", T, |m| {
            m.get("zookeeper_lease_failures_total", &[("reason", "timeout")])
                .is_some_and(|n| n >= 4.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_lease_up", &[]), Some(0.0));
    assert_eq!(
        alerted(&am, "ZooKeeperElectionLeaseExpired", &bot_3),
        Ok(1),
        "no reading resolves nothing"
    );
    let (status, ready) = agent.ready();
    assert_eq!(
        status, 200,
        "a blind lease source leaves the agent ready: {ready}"
    );
    assert!(
        ready.contains("degraded") && ready.contains("(timeout)"),
        "{ready}"
    );
    // The lock goes: the next reading judges bot_3 (no master, an expired
    // lease: nothing to say) and the alert resolves.
    drop(locker);
    agent
        .until_values(
            "the lease read again",
            T,
            &[("zookeeper_lease_up", &[], Some(1.0))],
        )
        .await;
    until_alerted(&am, "ZooKeeperElectionLeaseExpired", &bot_3, 0).await;

    // Down: the database stops; refused connections are counted.
    db.kill();
    agent
        .until("lease connections refused", T, |m| {
            m.get("zookeeper_lease_failures_total", &[("reason", "connect")])
                .is_some_and(|n| n >= 1.0)
                && m.get("zookeeper_lease_up", &[]) == Some(0.0)
        })
        .await;
    let (status, body) = http_get(agent.port, "/api/v1/status").unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let source = &v["clusters"][0]["leases"][0];
    assert_eq!(source["reason"], "connect", "{source}");
    assert!(
        source["error"]
            .as_str()
            .unwrap()
            .contains(&format!("127.0.0.1:{}", db.port)),
        "names the database: {source}"
    );
    db.restart().await;
    agent
        .until_values(
            "the database back",
            T,
            &[("zookeeper_lease_up", &[], Some(1.0))],
        )
        .await;
    until_state(&agent, &bot_1, "agrees").await;
    // An instance acts for bot_3, which has had no candidate since inst-e
    // left: a lease written without candidates, reported as what it is.
    db.exec(&db.lease_write("master_lease", "bot_3", "inst-x", 60.0))
        .await;
    agent
        .until_values(
            "bot_3 leased without candidates",
            T,
            &[
                (
                    "zookeeper_election_lease_state",
                    &[("election", &bot_3), ("state", "no_candidates")],
                    Some(1.0),
                ),
                (
                    "zookeeper_tree_lease_elections",
                    &[("state", "no_candidates")],
                    Some(1.0),
                ),
            ],
        )
        .await;
    let log = agent.log();
    assert!(
        !log.contains(AGENT_PASSWORD) && !body.contains(AGENT_PASSWORD),
        "the password reached a log or the API"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_split_brain_and_outages() {
    split_brain_and_outages(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_split_brain_and_outages() {
    split_brain_and_outages(Engine::MariaDb).await;
}

/// (e): NULLs, keys no election has, a duplicated key, a huge key and a
/// huge holder, a `last_seen` in the future, a timestamp column of the
/// wrong type.
async fn garbage(engine: Engine) {
    let zk = shared_server();
    let db = Database::start(engine).await;
    db.exec(
        "CREATE TABLE junk (bot_id TEXT NULL, instance_id TEXT NULL, last_seen TIMESTAMP(3) NULL, lease_until TIMESTAMP(3) NULL)",
    )
    .await;
    db.grant_read("junk").await;
    db.exec(
        "CREATE TABLE typed (bot_id VARCHAR(64), instance_id VARCHAR(64), last_seen VARCHAR(64), lease_until VARCHAR(64))",
    )
    .await;
    db.grant_read("typed").await;
    let huge = "x".repeat(10_000);
    let (now, hour, future) = (db.now_plus(0.0), db.now_plus(3600.0), db.now_plus(7200.0));
    let long_key = "k".repeat(1000);
    for row in [
        format!("('g1', NULL, {now}, {hour})"),
        format!("('g2', 'x', {now}, NULL)"),
        format!("(NULL, 'x', {now}, {hour})"),
        format!("('g3', '{huge}', {now}, {hour})"),
        format!("('g4', 'a', {now}, {hour})"),
        format!("('g4', 'b', {now}, {hour})"),
        format!("('{long_key}', 'a', {now}, {hour})"),
        format!("('nobody', 'a', {now}, {hour})"),
        format!("('g6', 'a', {hour}, {future})"),
    ] {
        db.exec(&format!("INSERT INTO junk VALUES {row}")).await;
    }
    db.exec("INSERT INTO typed VALUES ('t1', 'a', 'yesterday', 'soon')")
        .await;
    let base = unique_path(&format!("garbage_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    let owner = client(&zk.address()).await;
    for (g, data) in [
        ("g3", huge.as_bytes()),
        ("g4", b"a"),
        ("g5", b"inst-5"),
        ("g6", b"a"),
    ] {
        mkdir(&admin, &format!("{base}/junk/{g}")).await;
        candidate(&owner, &format!("{base}/junk/{g}"), "n_", data).await;
    }
    mkdir(&admin, &format!("{base}/typed/t1")).await;
    candidate(&owner, &format!("{base}/typed/t1"), "n_", b"a").await;
    let agent = Exporter::start(&format!(
        "[[clusters]]\nname = \"garbage\"\nservers = [\"{zk}\"]\n\
         [[clusters.elections]]\npath = \"{base}/junk/*\"\n{}\n\
         [[clusters.elections]]\npath = \"{base}/typed/*\"\n{}\n",
        lease(&db, "junk", ""),
        lease(&db, "typed", ""),
        zk = zk.address(),
    ));
    let junk = format!("{base}/junk/*");
    let m = agent
        .until_values(
            "the junk table judged",
            T,
            &[
                ("zookeeper_lease_rows", &[("tree", &junk)], Some(2.0)),
                (
                    "zookeeper_lease_rows_unmatched",
                    &[("tree", &junk)],
                    Some(1.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "null")],
                    Some(3.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "duplicate")],
                    Some(2.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "too_long")],
                    Some(1.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "future")],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_state",
                    &[
                        ("election", &format!("{base}/junk/g3")),
                        ("state", "agrees"),
                    ],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_state",
                    &[
                        ("election", &format!("{base}/junk/g5")),
                        ("state", "no_row"),
                    ],
                    Some(1.0),
                ),
            ],
        )
        .await;
    // The duplicated key is not judged, nor is the row from the future.
    for g in ["g4", "g6"] {
        let election = format!("{base}/junk/{g}");
        assert!(
            m.series("zookeeper_election_lease_state", &[("election", &election)])
                .is_empty(),
            "{g} judged"
        );
    }
    for (labels, _) in m.series("zookeeper_election_lease_holder_info", &[]) {
        assert!(labels["holder"].chars().count() <= 128, "{labels:?}");
    }
    // The wrong column type: PostgreSQL refuses the query (no reading);
    // MariaDB converts the text to NULL (a rejected row).
    let typed = format!("{base}/typed/*");
    match engine {
        Engine::Postgres => {
            agent
                .until("the typed table refused", T, |m| {
                    m.get(
                        "zookeeper_lease_failures_total",
                        &[("tree", &typed), ("reason", "query")],
                    )
                    .is_some_and(|n| n >= 1.0)
                        && m.get("zookeeper_lease_up", &[("tree", &typed)]) == Some(0.0)
                })
                .await;
            let (status, ready) = agent.ready();
            assert!(
                status == 200 && ready.contains("(query)"),
                "{status} {ready}"
            );
        }
        Engine::MariaDb => {
            agent
                .until_values(
                    "the typed table's row rejected",
                    T,
                    &[
                        ("zookeeper_lease_up", &[("tree", &typed)], Some(1.0)),
                        (
                            "zookeeper_lease_rows_rejected",
                            &[("tree", &typed), ("reason", "null")],
                            Some(1.0),
                        ),
                    ],
                )
                .await;
        }
    }
    // Still serving, still watching.
    let (status, _) = http_get(agent.port, "/api/v1/status").unwrap();
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_garbage_rows() {
    garbage(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_garbage_rows() {
    garbage(Engine::MariaDb).await;
}

/// TLS to the database: the agent verifies the server's certificate
/// against the CA its DSN names, and the server takes the agent over TLS
/// only. A DSN trusting another CA, or asking for no TLS, gets no reading.
async fn over_tls(engine: Engine) {
    let zk = shared_server();
    let db = Database::start_tls(engine).await;
    db.create_lease_table("master_lease").await;
    db.exec(&db.lease_write("master_lease", "bot_1", "inst-a", 3600.0))
        .await;
    let base = unique_path(&format!("tls_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    let owner = client(&zk.address()).await;
    for set in ["verified", "other_ca", "plain"] {
        mkdir(&admin, &format!("{base}/{set}/bot_1")).await;
        candidate(&owner, &format!("{base}/{set}/bot_1"), "n_", b"inst-a").await;
    }
    let verified = std::fs::read_to_string(&db.dsn_file).unwrap();
    let other = common::pki::Ca::new(&db.dir, "other");
    let other_dsn = db.dir.join("other-ca.dsn");
    std::fs::write(
        &other_dsn,
        verified.replace(
            "db-ca.pem",
            &other.cert_file.file_name().unwrap().to_string_lossy(),
        ),
    )
    .unwrap();
    let plain_dsn = db.dir.join("plain.dsn");
    let keep = verified.split_once('?').unwrap().0;
    let no_tls = match engine {
        Engine::Postgres => "sslmode=disable",
        Engine::MariaDb => "ssl-mode=DISABLED",
    };
    std::fs::write(&plain_dsn, format!("{keep}?{no_tls}\n")).unwrap();
    let set = |name: &str, dsn: &std::path::Path| {
        format!(
            "[[clusters.elections]]\npath = \"{base}/{name}/*\"\nlease = {{ dsn_file = \"{}\", password_file = \"{}\", interval = \"250ms\", timeout = \"2s\" }}\n",
            dsn.display(),
            db.password_file.display()
        )
    };
    let agent = Exporter::start(&format!(
        "[[clusters]]\nname = \"tls\"\nservers = [\"{}\"]\n{}{}{}",
        zk.address(),
        set("verified", &db.dsn_file),
        set("other_ca", &other_dsn),
        set("plain", &plain_dsn),
    ));
    let (verified, other_ca, plain) = (
        format!("{base}/verified/*"),
        format!("{base}/other_ca/*"),
        format!("{base}/plain/*"),
    );
    agent
        .until("TLS verified, the others refused", T, |m| {
            m.get("zookeeper_lease_up", &[("tree", &verified)]) == Some(1.0)
                && [&other_ca, &plain].iter().all(|t| {
                    m.get(
                        "zookeeper_lease_failures_total",
                        &[("tree", t), ("reason", "connect")],
                    )
                    .is_some_and(|n| n >= 1.0)
                        && m.get("zookeeper_lease_readings_total", &[("tree", t)]) == Some(0.0)
                })
        })
        .await;
    until_state(&agent, &format!("{base}/verified/bot_1"), "agrees").await;
    let (_, body) = http_get(agent.port, "/api/v1/status").unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let error = |tree: &str| {
        v["clusters"][0]["leases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["tree"] == tree)
            .and_then(|l| l["error"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    eprintln!("other CA: {}\nno TLS: {}", error(&other_ca), error(&plain));
    assert!(
        error(&other_ca).to_lowercase().contains("certificate"),
        "{}",
        error(&other_ca)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls() {
    over_tls(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_over_tls() {
    over_tls(Engine::MariaDb).await;
}

/// With a real Prometheus evaluating the shipped rules (every `for` 2 s)
/// over two agent replicas, Prometheus alone deciding (no `[alerting]`;
/// the agents' own pushes are `tests/voices.rs`'): a routine handover (the
/// old master stops renewing and closes its session, the new one takes the
/// lease once the old one ran out) raises split brain nowhere, not even
/// pending; a real one fires once in Prometheus for the two replicas and
/// once in Alertmanager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_brain_with_prometheus_and_two_replicas() {
    use common::program::{mixin_rules, prometheus, query};
    let zk = shared_server();
    let db = Database::start(Engine::Postgres).await;
    db.create_lease_table("master_lease").await;
    let am = alertmanager("am-lease-prometheus");
    let base = unique_path("lease_prometheus");
    let bot = format!("{base}/bots/bot_1");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &bot).await;
    let config = format!(
        "[[clusters]]\nname = \"lease\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.elections]]\npath = \"{base}/bots/*\"\n{}\n",
        zk.address(),
        lease(&db, "master_lease", ", split_brain_for = \"2s\""),
    );
    let replicas = [Exporter::start(&config), Exporter::start(&config)];
    let rules = mixin_rules("", "2s");
    let prom = prometheus(
        "prometheus-lease",
        &rules,
        "1s",
        am.port,
        &[replicas[0].port, replicas[1].port],
    );
    let in_prometheus = |expr: &str| query(&prom, expr).map(|r| r.len());

    // The routine handover: inst-a leads and renews, then shuts down
    // (heartbeat first, then its session); inst-b, elected, waits for
    // inst-a's lease to run out and takes it.
    let a = client(&zk.address()).await;
    candidate(&a, &bot, "n_", b"inst-a").await;
    let b_proxy = Proxy::start(zk.address()).await;
    let b = abandonable_client(&b_proxy.address(), Duration::from_secs(4)).await;
    candidate(&b, &bot, "n_", b"inst-b").await;
    // A 10 s lease: the handover stays in progress over several scrapes
    // however loaded the machine.
    let renew_a = Renewer::start(&db, "bot_1", "inst-a", 10.0);
    wait_for_async(
        "Prometheus sees inst-a agree on both replicas",
        T,
        || match in_prometheus(&format!(
            "zookeeper_election_lease_agrees{{election=\"{bot}\"}} == 1"
        ))? {
            2 => Ok(()),
            n => Err(format!("{n} replicas")),
        },
    )
    .await;
    renew_a.stop().await;
    drop(a);
    wait_for_async("Prometheus saw the handover in progress", T, || {
        match in_prometheus(&format!(
            "max_over_time(zookeeper_election_lease_state{{election=\"{bot}\",state=\"handing_over\"}}[5m]) == 1"
        ))? {
            0 => Err(format!(
                "not yet; timeline {:?}",
                timeline(&replicas[0], &bot)
                    .iter()
                    .map(|e| format!("{} {} {}", e["kind"], e["state"], e["to"]["identity"]))
                    .collect::<Vec<_>>()
            )),
            _ => Ok(()),
        }
    })
    .await;
    agent_until_not(&replicas[0], &bot, "handing_over").await;
    let renew_b = Renewer::start(&db, "bot_1", "inst-b", 3.0);
    wait_for_async("Prometheus saw inst-b agree", T, || {
        match in_prometheus(&format!(
            "zookeeper_election_lease_agrees{{election=\"{bot}\"}} == 1"
        ))? {
            2 => Ok(()),
            n => Err(format!("{n} replicas")),
        }
    })
    .await;
    assert_eq!(
        in_prometheus("max_over_time(ALERTS{alertname=\"ZooKeeperElectionSplitBrain\"}[5m])"),
        Ok(0),
        "a routine handover raised split brain, pending or firing"
    );
    assert_eq!(alerted(&am, "ZooKeeperElectionSplitBrain", &bot), Ok(0));

    // A real one: inst-c joins, inst-b's connection is cut (ZooKeeper
    // expires it and elects inst-c), inst-b keeps renewing.
    let c = client(&zk.address()).await;
    candidate(&c, &bot, "n_", b"inst-c").await;
    b_proxy.cut();
    wait_for_async(
        "split brain firing in Prometheus",
        T,
        || match in_prometheus(
            "ALERTS{alertname=\"ZooKeeperElectionSplitBrain\",alertstate=\"firing\"}",
        )? {
            1 => Ok(()),
            n => Err(format!("{n} firing")),
        },
    )
    .await;
    until_alerted(&am, "ZooKeeperElectionSplitBrain", &bot, 1).await;
    renew_b.stop().await;
    drop(b);
}

/// Waits until `agent` no longer shows `state` for `election`.
async fn agent_until_not(agent: &Exporter, election: &str, state: &str) {
    agent
        .until(&format!("{election}: no longer {state}"), T, |m| {
            m.get(
                "zookeeper_election_lease_state",
                &[("election", election), ("state", state)],
            )
            .is_none()
                && !m
                    .series("zookeeper_election_lease_state", &[("election", election)])
                    .is_empty()
        })
        .await;
}
