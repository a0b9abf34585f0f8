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
//! and the handover histogram against a scripted takeover with a known
//! delay. Garbage rows and TLS are in tests/lease_rows.rs.

mod common;

use std::time::{Duration, Instant};

use common::database::{AGENT_PASSWORD, Database, Engine, Renewer, lease};
use common::lease_agent::*;
use common::program::{alertmanager, alerts_in_alertmanager};
use common::*;

const T: Duration = Duration::from_secs(60);

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
