//! /metrics render time for 10,000 elections x 3 candidates (~100,000
//! series), in-process and without ZooKeeper: the model is filled directly.
//! Run: cargo bench --bench render

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use zk_election_exporter::metrics;
use zk_election_exporter::model::ClusterState;
use zk_election_exporter::model::candidate::IdentityMode;
use zk_election_exporter::model::election::Now;
use zk_election_exporter::model::tree::{ChildNode, ElectionTree, TreePattern};

fn main() {
    let elections = 10_000;
    let candidates = 3;
    let mut tree = ElectionTree::new(
        TreePattern::parse("/wechat/bots/*").unwrap(),
        IdentityMode::Data,
    );
    let listing = (0..elections)
        .map(|i| {
            let children = (0..candidates)
                .map(|j| ChildNode {
                    name: format!("instance_{:010}", j),
                    data: format!("device-{i}-{j}").into_bytes(),
                    ephemeral_owner: 1,
                    ctime_ms: 1_700_000_000_000,
                })
                .collect();
            (format!("/wechat/bots/bot_{i:05}"), children)
        })
        .collect();
    tree.apply_listing(listing, Now::current());
    let cluster = Arc::new(RwLock::new(ClusterState::new(
        "bench".into(),
        vec![tree],
        false,
    )));
    let exposition = metrics::Exposition::new(vec![cluster]);
    for openmetrics in [false, true] {
        let mut times: Vec<Duration> = Vec::new();
        let mut size = (0, 0);
        for _ in 0..31 {
            let start = Instant::now();
            let out = exposition.render(openmetrics).unwrap();
            times.push(start.elapsed());
            size = (
                out.len(),
                out.lines().filter(|l| !l.starts_with('#')).count(),
            );
        }
        times.sort();
        println!(
            "render {}: {} series, {:.1} MiB, median {:.1?}, min {:.1?}, max {:.1?}",
            if openmetrics {
                "openmetrics"
            } else {
                "text 0.0.4"
            },
            size.1,
            size.0 as f64 / (1 << 20) as f64,
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
}
