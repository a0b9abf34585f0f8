//! Election nodes configured the wrong way: a node election (Kafka's
//! EPHEMERAL `/controller`) configured as a sequential one would be
//! masterless forever and page for it. The agent refuses such a tree, says
//! on `/ready` and `/api/v1/trees` how to fix it, and exports no
//! masterless series, whether the node is there at the start or appears
//! later.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(40);

/// `/controller` configured as a sequential election (the default):
/// the tree is reported unsynced with the fix instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_election_node_configured_as_sequential_says_how_to_fix_it() {
    let zk = shared_server();
    let root = unique_path("misfit");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &root).await;
    let broker = client(&zk.address()).await;
    become_controller(&broker, &root, 1).await;
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{root}/controller"),
        "[clusters.four_letter_words]\nenabled = false",
    ));
    let reason = exporter.until_not_ready("set style = \"node\"", T).await;
    assert!(
        reason.contains(&format!("{root}/controller is itself an ephemeral node")),
        "{reason}"
    );
    let m = exporter.metrics().unwrap();
    assert!(m.series("zookeeper_election_has_master", &[]).is_empty());
    let (_, body) = http_get(exporter.port, "/api/v1/trees").unwrap();
    assert!(body.contains("\"style\":\"sequential\""), "{body}");
    assert!(body.contains("is itself an ephemeral node"), "{body}");
    drop(broker);
}

/// The same misfit arriving later under a sequential glob.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_election_node_created_later_is_refused_too() {
    let zk = shared_server();
    let root = unique_path("latemisfit");
    let admin = client(&zk.address()).await;
    let good = format!("{root}/good");
    mkdir(&admin, &good).await;
    candidate(&admin, &good, "n_", b"one").await;
    let exporter = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{root}/*"),
        "[clusters.four_letter_words]\nenabled = false",
    ));
    exporter
        .until("the good election", T, |m| master_node(m, &good).is_some())
        .await;
    let broker = client(&zk.address()).await;
    become_controller(&broker, &root, 1).await;
    let reason = exporter.until_not_ready("set style = \"node\"", T).await;
    assert!(
        reason.contains(&format!("{root}/controller is itself an ephemeral node")),
        "{reason}"
    );
    let m = exporter.metrics().unwrap();
    assert_eq!(
        m.get(
            "zookeeper_election_has_master",
            &election_labels(&format!("{root}/controller"))
        ),
        None,
        "no masterless election, no page"
    );
    drop(broker);
}
