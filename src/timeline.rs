//! Writes every timeline entry once as a structured log line (target
//! `zk_election_exporter::events`), so a log shipper keeps the history
//! past the ring's size; and gives the models the time for entries that
//! time alone makes (a hold passing `max_hold`).

use std::time::Duration;

use tokio::sync::watch;
use tracing::info;

use crate::http::events::event_json;
use crate::model::SharedCluster;

/// How often new entries are looked for.
const PACE: Duration = Duration::from_millis(250);

pub async fn run(clusters: Vec<SharedCluster>, mut stop: watch::Receiver<bool>) {
    let mut logged: Vec<u64> = vec![0; clusters.len()];
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PACE) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        for (c, last) in clusters.iter().zip(&mut logged) {
            c.tick(crate::model::election::Now::current());
            let new: Vec<(u64, serde_json::Value)> = {
                let g = c.read();
                g.events
                    .after(*last)
                    .map(|e| (e.seq, event_json(&g.name, e)))
                    .collect()
            };
            for (seq, e) in new {
                *last = seq;
                let field = |k: &str| e[k].as_str().unwrap_or("").to_owned();
                let who = |k: &str| e[k]["identity"].as_str().unwrap_or("").to_owned();
                info!(
                    target: "zk_election_exporter::events",
                    seq,
                    cluster = %field("cluster"),
                    election = %field("election"),
                    kind = %field("kind"),
                    from = %who("from"),
                    to = %who("to"),
                    cause = %field("cause"),
                    at = %field("at"),
                    "{}", e["kind"].as_str().unwrap_or("event")
                );
            }
        }
    }
}
