//! Past the export cap against a real ZooKeeper: every election is watched,
//! per-election series go to those needing attention first, the tree
//! aggregates count all of them, and the lookup API answers for any.

mod common;

use std::time::Duration;

use common::*;
use futures::future::join_all;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(60);

fn json(exporter: &Exporter, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = http_get(exporter.port, path).unwrap();
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_elections_needing_attention_are_exported_first() {
    let zk = shared_server();
    let base = unique_path("cap");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &base).await;
    let owner = client(&zk.address()).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    // 1,000 elections of one candidate each, created 100 at a time.
    let bots: Vec<String> = (0..1000).map(|i| format!("{base}/bot_{i:04}")).collect();
    for chunk in bots.chunks(100) {
        let made = join_all(chunk.iter().map(|b| admin.create(b, b"", &persistent))).await;
        made.into_iter().for_each(|r| {
            r.unwrap();
        });
        let nodes: Vec<String> = chunk.iter().map(|b| format!("{b}/n_0000000001")).collect();
        let made = join_all(nodes.iter().map(|n| owner.create(n, b"device", &ephemeral))).await;
        made.into_iter().for_each(|r| {
            r.unwrap();
        });
    }
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nmax_elections = 100\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/*\"\n",
        zk.address()
    ));
    let tree = format!("{base}/*");
    let state = |m: &Metrics, s: &str| {
        m.get(
            "zookeeper_tree_elections",
            &[("tree", tree.as_str()), ("state", s)],
        )
    };
    let m = exporter
        .until("all 1,000 watched", T, |m| state(m, "ok") == Some(1000.0))
        .await;
    assert_eq!(
        m.get(
            "zookeeper_exporter_elections_exported",
            &[("ensemble", "test")]
        ),
        Some(100.0)
    );
    assert_eq!(m.series("zookeeper_election_has_master", &[]).len(), 100);
    let far = format!("{base}/bot_0900");
    let has_master = |m: &Metrics| {
        m.get(
            "zookeeper_election_has_master",
            &[("election", far.as_str())],
        )
    };
    assert_eq!(
        has_master(&m),
        None,
        "calm elections past the cap have no series"
    );
    // The election past the cap loses its master: it takes a calm one's place.
    owner
        .delete(&format!("{far}/n_0000000001"), None)
        .await
        .unwrap();
    let m = exporter
        .until("the masterless election exported", T, |m| {
            has_master(m) == Some(0.0)
        })
        .await;
    assert_eq!(state(&m, "masterless"), Some(1.0));
    assert_eq!(state(&m, "ok"), Some(999.0));
    assert_eq!(m.series("zookeeper_election_has_master", &[]).len(), 100);
    // The lookup answers for it, and for a calm election without series.
    let (status, found) = json(&exporter, &format!("/api/v1/elections{far}"));
    assert_eq!(status, 200);
    let e = &found["elections"][0];
    assert_eq!(
        (
            e["state"].as_str(),
            e["exported"].as_bool(),
            e["master"].is_null()
        ),
        (Some("masterless"), Some(true), true)
    );
    let calm = format!("{base}/bot_0500");
    let (status, found) = json(&exporter, &format!("/api/v1/elections{calm}?cluster=test"));
    assert_eq!(status, 200);
    let e = &found["elections"][0];
    assert_eq!(
        (
            e["state"].as_str(),
            e["exported"].as_bool(),
            e["master"]["node"].as_str(),
            e["master"]["identity"].as_str(),
            e["master_changes"].as_u64(),
        ),
        (
            Some("ok"),
            Some(false),
            Some("n_0000000001"),
            Some("device"),
            Some(0)
        )
    );
    let (status, body) = json(&exporter, &format!("/api/v1/elections{base}/nobody"));
    assert_eq!(status, 404);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("no watched election")
    );
    let (status, _) = json(&exporter, &format!("/api/v1/elections{calm}?cluster=other"));
    assert_eq!(status, 404, "another cluster does not watch it");
}
