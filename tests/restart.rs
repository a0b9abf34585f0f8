//! A page means trouble, with the real programs: a 3-server ZooKeeper
//! ensemble restarted member by member (each back and serving before the
//! next), the agent watching elections, a registry and a free lock and
//! pushing its own alerts, Debian's Prometheus evaluating the shipped rules
//! and Debian's Alertmanager with the shipped inhibit rules. The rolling
//! restart raises no critical alert, from the rules or from the agent; a
//! member then stopped for good pages as down, and a lost quorum pages
//! once, holding back the member page it implies. Beside the shipped rules,
//! the migration records under rules written for the old exporters: two
//! leaders never recorded through the leader changes, no leader recorded
//! while the quorum is lost, and a leader again after the recovery.
//!
//! The rules are the mixin's expressions on a shorter time scale (every
//! `for` 15 s, the member window 45 s instead of 1 m and 2 m): a restart
//! here must be quicker than the window, as in production it must be
//! quicker than 2 minutes, and what stays quiet at this scale stays quiet
//! at the shipped one.

mod common;

use std::time::{Duration, Instant};

use common::program::{
    alertmanager_with, alerts_at, alerts_seen, compat_rules, mixin_rules, prometheus_with, query,
};
use common::*;

const T: Duration = Duration::from_secs(120);
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Waits until every member answers `srvr` with a role (the ensemble has
/// its quorum and each has joined it).
fn until_all_serving(ensemble: &ZkEnsemble) {
    wait_for("every member serving", T, || {
        let modes: Vec<Option<String>> = ensemble.servers.iter().map(ZkServer::mode).collect();
        if modes.iter().all(|m| {
            m.as_deref()
                .is_some_and(|m| m == "leader" || m == "follower")
        }) {
            Ok(())
        } else {
            Err(format!("{modes:?}"))
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_pages_nothing_and_a_real_outage_pages_once() {
    let mut ensemble = ZkEnsemble::start(3);
    let connect = ensemble.connect_string();
    let base = unique_path("restart");
    let admin = client(&connect).await;
    // Three elections of two candidates, each candidate its own session
    // (they move to another member when theirs restarts), a registry and a
    // lock nobody holds.
    let mut sessions = Vec::new();
    for bot in ["bot_1", "bot_2", "bot_3"] {
        let e = format!("{base}/bots/{bot}");
        mkdir(&admin, &e).await;
        for phone in ["phone-a", "phone-b"] {
            let s = client(&connect).await;
            candidate(&s, &e, "instance_", phone.as_bytes()).await;
            sessions.push(s);
        }
    }
    let group = format!("{base}/services/api");
    mkdir(&admin, &group).await;
    for member in ["10.0.0.1:8080", "10.0.0.2:8080"] {
        let s = client(&connect).await;
        s.create(
            &format!("{group}/{member}"),
            b"",
            &zookeeper_client::CreateMode::Ephemeral
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
        sessions.push(s);
    }
    mkdir(&admin, &format!("{base}/locks/nightly")).await;

    let inhibit = std::fs::read_to_string(format!("{ROOT}/alerts/inhibit_rules.yml")).unwrap();
    let am = alertmanager_with("restart-am", &inhibit);
    let servers: Vec<String> = ensemble
        .servers
        .iter()
        .map(|s| format!("\"{}\"", s.address()))
        .collect();
    let config = format!(
        "[[clusters]]\nname = \"test\"\nservers = [{}]\nsession_timeout = \"10s\"\n\
         [clusters.four_letter_words]\ntimeout = \"1s\"\n\
         [[clusters.elections]]\npath = \"{base}/bots/*\"\nmin_candidates = 2\n\
         [[clusters.groups]]\npath = \"{base}/services/*\"\nmin_members = 1\n\
         [[clusters.locks]]\npath = \"{base}/locks/*\"\n\
         [alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nresend_interval = \"2s\"\n",
        servers.join(", "),
        am.port
    );
    // Two replicas, as the shipped Deployment runs: each polls the members
    // at its own moments.
    let exporter = Exporter::start(&config);
    let replica = Exporter::start(&config);
    let bot = |b: &str| format!("{base}/bots/{b}");
    exporter
        .until_values(
            "the trees and members read",
            T,
            &[
                (
                    "zookeeper_election_candidates",
                    &election_labels(&bot("bot_1")),
                    Some(2.0),
                ),
                (
                    "zookeeper_election_candidates",
                    &election_labels(&bot("bot_3")),
                    Some(2.0),
                ),
                ("zookeeper_group_members", &[("group", &group)], Some(2.0)),
                (
                    "zookeeper_ensemble_servers_up",
                    &[("ensemble", "test")],
                    Some(3.0),
                ),
            ],
        )
        .await;
    let rules = mixin_rules("memberWindow: '45s'", "15s");
    // Beside them, the migration records and rules written for the old
    // exporters (`sum(zk_server_leader) > 1` and `== 0`, no `for`).
    let legacy = std::fs::read_to_string(format!("{ROOT}/alerts/tests/legacy-alerts.yml")).unwrap();
    let prom = prometheus_with(
        "restart-prom",
        &[&rules, &compat_rules(), &legacy],
        "1s",
        am.port,
        &[exporter.port, replica.port],
    );
    let began = Instant::now();
    wait_for("10 s of scrapes", T, || {
        let r = query(
            &prom,
            "count_over_time(up{job=\"zk-election-exporter\"}[1m])",
        )?;
        match r.first().and_then(|s| s["value"][1].as_str()) {
            Some(n) if n.parse::<f64>().unwrap_or(0.0) >= 10.0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    // The rolling restart: each member stopped, started, and back in the
    // quorum (and read by the agent) before the next.
    for i in 0..3 {
        ensemble.servers[i].stop();
        std::thread::sleep(Duration::from_secs(2));
        ensemble.servers[i].restart();
        until_all_serving(&ensemble);
        exporter
            .until_values(
                &format!("member {i} read again"),
                T,
                &[(
                    "zookeeper_ensemble_servers_up",
                    &[("ensemble", "test")],
                    Some(3.0),
                )],
            )
            .await;
    }

    // Negative control 1: member 0 stopped for good pages as down. The
    // wait (window and `for`, 60 s) also gives every rule the time to
    // fire for the restarts.
    let gone = ensemble.servers[0].address();
    ensemble.servers[0].stop();
    let down = format!("alertname=\"ZooKeeperServerDown\",alertstate=\"firing\",server=\"{gone}\"");
    wait_for("ZooKeeperServerDown for the stopped member", T, || {
        let firing = alerts_seen(&prom, &down, "5s")?;
        if firing.is_empty() {
            Err("not firing yet".into())
        } else {
            Ok(())
        }
    });
    let range = format!("{}s", began.elapsed().as_secs() + 5);
    let critical: Vec<String> =
        alerts_seen(&prom, "severity=\"critical\",alertstate=\"firing\"", &range)
            .unwrap()
            .into_iter()
            .filter(|a| {
                !(a.starts_with("ZooKeeperServerDown{") && a.contains(&format!("server={gone}")))
            })
            // The old rules page on a single reading (zk_up == 0 at every
            // restart, no leader during an election): their way, checked
            // below for what they must never do.
            .filter(|a| !a.starts_with("Zookeeper"))
            .collect();
    assert!(
        critical.is_empty(),
        "critical alerts through the rolling restart: {critical:?}"
    );
    let not_serving = alerts_seen(&prom, "alertname=\"ZooKeeperNotServing\"", &range).unwrap();
    assert!(
        not_serving.is_empty(),
        "the stopped member pages once, as down: {not_serving:?}"
    );
    // The leader was restarted too, so the ensemble changed leader while
    // two replicas read it at different moments: the old rules for two
    // leaders (dabealu's zk_server_leader, carlpett's zk_server_state)
    // never fired from the records.
    let too_many = alerts_seen(
        &prom,
        "alertname=~\"Zookeeper(State)?TooManyLeaders\"",
        &range,
    )
    .unwrap();
    assert!(
        too_many.is_empty(),
        "two leaders recorded: {too_many:?}; what each replica read: {:?}",
        query(
            &prom,
            &format!(
                "{{__name__=~\"zookeeper_server_state|zookeeper_zxid_epoch\",state=~\"leader|\"}}[{range}]"
            )
        )
    );
    let missing = || {
        alerts_seen(
            &prom,
            "alertname=\"ZookeeperMissingLeader\",alertstate=\"firing\"",
            "2s",
        )
    };
    assert_eq!(missing(), Ok(vec![]), "a leader while one member is down");
    // Nor did the agent push a critical alert of its own.
    let pushed = query(
        &prom,
        &format!("max_over_time(zookeeper_exporter_alerts_active{{alertname=~\"ZooKeeperElectionNoMaster|ZooKeeperElectionEpochRegression|ZooKeeperExporterSessionDown\"}}[{range}]) > 0"),
    )
    .unwrap();
    assert!(pushed.is_empty(), "pushed critical alerts: {pushed:?}");
    assert_eq!(
        alerts_at(am.port, "ZooKeeperServerDown").unwrap().len(),
        1,
        "the page reached Alertmanager"
    );

    // Negative control 2: a second member stopped loses the quorum, which
    // pages and holds back the member page it implies.
    ensemble.servers[1].stop();
    wait_for("ZooKeeperQuorumLost in Alertmanager", T, || {
        let lost = alerts_at(am.port, "ZooKeeperQuorumLost")?;
        let down = alerts_at(am.port, "ZooKeeperServerDown")?;
        if lost.len() == 1 && down.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "quorum lost {lost:?}, server down (not inhibited) {down:?}"
            ))
        }
    });
    // While no member leads, the old missing-leader rule fires from the
    // records; the quorum back, it ends.
    wait_for("the old missing-leader rule firing", T, || {
        match missing()?.len() {
            1 => Ok(()),
            n => Err(format!("{n} firing")),
        }
    });
    ensemble.servers[0].restart();
    ensemble.servers[1].restart();
    until_all_serving(&ensemble);
    wait_for(
        "the old missing-leader rule resolved",
        T,
        || match missing()?.len() {
            0 => Ok(()),
            n => Err(format!("{n} firing")),
        },
    );
    let range = format!("{}s", began.elapsed().as_secs() + 5);
    let too_many = alerts_seen(
        &prom,
        "alertname=~\"Zookeeper(State)?TooManyLeaders\"",
        &range,
    )
    .unwrap();
    assert!(
        too_many.is_empty(),
        "two leaders recorded through the recovery: {too_many:?}"
    );
    drop(replica);
    drop(sessions);
}
