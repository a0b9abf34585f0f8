//! A 3-server ensemble: the agent's session moves between members as they
//! fail, and survives a loss of quorum, without inventing switches.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

fn synced(m: &Metrics) -> bool {
    m.series("zookeeper_tree_synced", &[("ensemble", "test")])
        .first()
        .is_some_and(|(_, v)| *v == 1.0)
}

fn count(m: &Metrics, election: &str) -> f64 {
    m.get("zookeeper_election_candidates", &election_labels(election))
        .unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_follows_member_failures_and_quorum_loss_without_spurious_switches() {
    let mut ensemble = ZkEnsemble::start(3);
    let leaders = ensemble
        .servers
        .iter()
        .filter(|s| s.mode().as_deref() == Some("leader"))
        .count();
    assert_eq!(leaders, 1, "one leader in a healthy ensemble");

    let base = unique_path("ensemble");
    let election = format!("{base}/e");
    // Candidates talk to member 3 only; the agent to members 1 and 2, so
    // stopping those moves only the agent's session.
    let admin = client(&ensemble.servers[2].address()).await;
    mkdir(&admin, &election).await;
    let first = candidate(&admin, &election, "n_", b"primary").await;
    let agent_servers = format!(
        "{},{}",
        ensemble.servers[0].address(),
        ensemble.servers[1].address()
    );
    let config = cluster_config(&agent_servers, &format!("{base}/*"), "")
        .replace("session_timeout = \"4s\"", "session_timeout = \"10s\"");
    let exporter = Exporter::start(&config);
    exporter
        .until("master", T, |m| {
            master_node(m, &election) == Some(first.clone())
        })
        .await;

    // One member down at a time: whichever carried the session, the agent
    // ends up on the other, re-lists, and sees changes made meanwhile.
    for i in 0..2 {
        ensemble.servers[i].stop();
        candidate(
            &admin,
            &election,
            "n_",
            format!("joined-while-{i}-down").as_bytes(),
        )
        .await;
        let want = 2.0 + i as f64;
        exporter
            .until("synced on a surviving member", T, |m| {
                synced(m) && count(m, &election) == want
            })
            .await;
        ensemble.servers[i].restart();
    }

    // Quorum lost: with members 1 and 2 down, member 3 stops serving too.
    ensemble.servers[0].stop();
    ensemble.servers[1].stop();
    exporter
        .until("stale without quorum", T, |m| !synced(m))
        .await;
    let body = exporter.until_not_ready("not synced", T).await;
    assert!(body.contains("cluster test"), "{body}");
    // The surviving member is up but refuses to serve without quorum: its
    // four-letter words say so (it was found in /zookeeper/config).
    let survivor = ensemble.servers[2].address();
    let m = exporter
        .until("the survivor reported as not serving", T, |m| {
            m.get(
                "zookeeper_fourlw_errors_total",
                &[
                    ("server", &*survivor),
                    ("command", "mntr"),
                    ("reason", "not_serving"),
                ],
            )
            .is_some_and(|n| n >= 1.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_up", &[("server", &*survivor)]), Some(0.0));
    assert_eq!(
        m.get("zookeeper_ensemble_leaders", &[("ensemble", "test")]),
        Some(0.0)
    );

    ensemble.servers[0].restart();
    let m = exporter
        .until("back with quorum", T, |m| {
            synced(m) && count(m, &election) == 3.0
        })
        .await;
    assert_eq!(master_node(&m, &election), Some(first));
    assert_eq!(
        m.get(
            "zookeeper_election_master_changes_total",
            &election_labels(&election)
        ),
        Some(0.0),
        "member failures and quorum loss are no master switches"
    );
    let joins = m.get(
        "zookeeper_election_candidate_changes_total",
        &[("election", &*election), ("change", "join")],
    );
    assert_eq!(joins, Some(2.0));
    let (status, body) = exporter.ready();
    assert_eq!(status, 200, "{body}");
}
