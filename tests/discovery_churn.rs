//! Discovery beside ClickHouse's insert churn: EPHEMERAL_SEQUENTIAL nodes
//! that live milliseconds during every INSERT (`temp/abandonable_lock-N`,
//! `block_numbers/*/block-N`) are never taken for elections, switches or
//! timeline entries, by an agent running through the churn or one started
//! in the middle of it.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(40);

/// ClickHouse-like insert churn: EPHEMERAL_SEQUENTIAL nodes created and
/// deleted as fast as six sessions can, each held a few milliseconds
/// (`temp/abandonable_lock-N`, `block_numbers/<partition>/block-N`) while
/// discovery walks every second,
/// beside one real election. An agent running through the churn and one
/// started during it each discover exactly the real election: no tree, no
/// switch and no event from the churn, which they met and counted as
/// fleeting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_churn_never_makes_an_election_a_switch_or_an_event() {
    let zk = shared_server();
    let base = unique_path("churn");
    let c = client(&zk.address()).await;
    let table = format!("{base}/clickhouse/tables/01/events");
    let dirs = [
        format!("{table}/temp"),
        format!("{table}/block_numbers/202401"),
        format!("{table}/block_numbers/202402"),
    ];
    for d in &dirs {
        mkdir(&c, d).await;
    }
    // Persistent replica metadata beside them, as ClickHouse keeps it.
    mkdir(&c, &format!("{table}/replicas/r1/log")).await;
    let real = format!("{base}/app/leader");
    mkdir(&c, &real).await;
    candidate(&c, &real, "n_", b"node-1").await;
    candidate(&c, &real, "n_", b"node-2").await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut churners = Vec::new();
    // Three inserts at a time, each holding its nodes for a few
    // milliseconds, as overlapping INSERTs do: some are always there.
    for (i, prefix) in ["abandonable_lock-", "block-"]
        .repeat(3)
        .into_iter()
        .enumerate()
    {
        let (stop, address) = (stop.clone(), zk.address());
        let parents: Vec<String> = if i % 2 == 0 {
            vec![dirs[0].clone()]
        } else {
            vec![dirs[1].clone(), dirs[2].clone()]
        };
        churners.push(tokio::spawn(async move {
            let c = client(&address).await;
            let mut made = 0u64;
            // Bounded: the test stops it, and so does this count.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && made < 2_000_000 {
                let mut nodes = Vec::new();
                for parent in &parents {
                    nodes.push(format!(
                        "{parent}/{}",
                        candidate(&c, parent, prefix, b"").await
                    ));
                    made += 1;
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
                for node in nodes {
                    c.delete(&node, None).await.unwrap();
                }
            }
            made
        }));
    }
    let extra = format!("[clusters.discovery]\nroot = \"{base}\"\ninterval = \"1s\"");
    let running = Exporter::start(&discovery_config(&zk.address(), &extra));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Exporter::start(&discovery_config(&zk.address(), &extra));
    let cluster = [("ensemble", "test")];
    for (who, agent) in [
        ("running", &running),
        ("started during the churn", &started),
    ] {
        // Walks met the churn and confirmed the real election.
        wait_for_async(&format!("{who}: churn met"), T, || {
            let m = agent.metrics()?;
            let fleeting = m.get("zookeeper_discovery_fleeting_total", &cluster);
            let real = m.get("zookeeper_election_has_master", &election_labels(&real));
            if fleeting.is_some_and(|f| f >= 2.0) && real == Some(1.0) {
                Ok(())
            } else {
                Err(format!("fleeting {fleeting:?}, real election {real:?}"))
            }
        })
        .await;
    }
    // Churn on for several more walks, then judge while it still runs.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for (who, agent) in [
        ("running", &running),
        ("started during the churn", &started),
    ] {
        let found = watched_trees(agent).unwrap();
        assert_eq!(
            found,
            vec![(real.clone(), "election".to_owned(), "discovered".to_owned())],
            "{who}: exactly the real election"
        );
        let m = agent.metrics().unwrap();
        assert_eq!(
            m.series("zookeeper_election_has_master", &cluster).len(),
            1,
            "{who}"
        );
        assert_eq!(
            m.sum("zookeeper_election_master_changes_total", &cluster),
            Some(0.0),
            "{who}: no switch"
        );
        for kind in ["lock", "group"] {
            assert_eq!(
                m.get(
                    "zookeeper_discovery_trees",
                    &[("ensemble", "test"), ("kind", kind)]
                ),
                Some(0.0),
                "{who}: no {kind}"
            );
        }
        let (status, body) = http_get(agent.port, "/api/v1/events?cluster=test").unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(
            !body.contains("/clickhouse/"),
            "{who}: events from the churn: {body}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for churner in churners {
        assert!(churner.await.unwrap() > 100, "the churn ran");
    }
}
