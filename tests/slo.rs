//! An election set's objective and its time without a master, as the SLO
//! rules read them, against a real ZooKeeper: the objective is exported,
//! the set's masterless seconds grow exactly while an election has no
//! master, and deleting an election never takes its seconds back (a drop
//! would read as a counter reset: a burst of downtime to a rate).

mod common;

use std::time::{Duration, Instant};

use common::*;

const T: Duration = Duration::from_secs(30);

fn tree_labels(tree: &str) -> [(&str, &str); 2] {
    [("ensemble", "test"), ("tree", tree)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sets_masterless_seconds_grow_only_while_masterless_and_survive_deletion() {
    let zk = shared_server();
    let base = unique_path("slo");
    let c = client(&zk.address()).await;
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    mkdir(&c, &a).await;
    mkdir(&c, &b).await;
    candidate(&c, &a, "n_", b"a-1").await;
    let tree = format!("{base}/*");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{tree}\"\nslo = {{ availability = 0.99, window = \"7d\" }}\n",
        zk.address()
    ));
    let labels = tree_labels(&tree);
    let lost = |m: &Metrics| m.get("zookeeper_tree_masterless_seconds_total", &labels);
    // b has no master: the set loses time.
    let m = exporter
        .until("a second without a master counted", T, |m| {
            lost(m).is_some_and(|s| s >= 1.0)
        })
        .await;
    assert_eq!(m.get("zookeeper_tree_slo_objective", &labels), Some(0.99));
    assert_eq!(
        m.get("zookeeper_tree_slo_window_seconds", &labels),
        Some(7.0 * 86_400.0)
    );
    // b gets a master: the total stops where it is.
    candidate(&c, &b, "n_", b"b-1").await;
    let m = exporter
        .until("b mastered", T, |m| {
            m.get("zookeeper_election_has_master", &election_labels(&b)) == Some(1.0)
        })
        .await;
    let held = lost(&m).unwrap();
    // Every scrape over the next 1.5 s reads the same total.
    let since = Instant::now();
    exporter
        .until("1.5 s of scrapes", T, |m| {
            assert_eq!(lost(m), Some(held), "no election is masterless");
            since.elapsed() >= Duration::from_millis(1500)
        })
        .await;
    // b loses its master again, then is deleted altogether: what it lost
    // stays in the set's total.
    let children = c.list_children(&b).await.unwrap();
    for child in children {
        c.delete(&format!("{b}/{child}"), None).await.unwrap();
    }
    let m = exporter
        .until("b masterless again for a while", T, |m| {
            lost(m).is_some_and(|s| s >= held + 0.5)
        })
        .await;
    let before_delete = lost(&m).unwrap();
    c.delete(&b, None).await.unwrap();
    let m = exporter
        .until("b gone", T, |m| {
            m.get("zookeeper_election_has_master", &election_labels(&b))
                .is_none()
        })
        .await;
    assert!(
        lost(&m).unwrap() >= before_delete,
        "the set's total went down when b was deleted: {} < {before_delete}",
        lost(&m).unwrap()
    );
}
