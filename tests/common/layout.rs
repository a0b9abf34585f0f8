//! Laying out large trees fast for the benchmarks: multi-ops of creates,
//! many in flight, from sessions that outlive a busy server's pauses.

use std::time::Duration;

use zookeeper_client::{Acls, CreateMode};

/// A client for laying out the million: its session outlives a busy
/// ZooKeeper's pauses.
pub async fn layout_client(address: &str) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .connect(address)
        .await
        .expect("a session for the layout")
}

/// Commits `ops` creates per multi, `in_flight` multis at a time.
pub async fn multi_create(
    c: &zookeeper_client::Client,
    paths: &[(String, Vec<u8>)],
    mode: CreateMode,
    per_multi: usize,
    in_flight: usize,
) -> Vec<String> {
    let options = mode.with_acls(Acls::anyone_all());
    let mut made = Vec::with_capacity(paths.len());
    for wave in paths.chunks(per_multi * in_flight) {
        let commits = wave.chunks(per_multi).map(|batch| {
            let mut w = c.new_multi_writer();
            for (p, data) in batch {
                w.add_create(p, data, &options).unwrap();
            }
            w.commit()
        });
        for result in futures::future::join_all(commits).await {
            for r in result.expect("a multi of creates") {
                if let zookeeper_client::MultiWriteResult::Create { path, .. } = r {
                    made.push(path);
                }
            }
        }
    }
    made
}
