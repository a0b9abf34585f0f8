//! Writes every timeline entry once as a structured log line (target
//! `zk_election_exporter::events`), so a log shipper keeps the history
//! past the ring's size; and gives the models the time for entries that
//! time alone makes (a hold passing `max_hold`).

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::watch;
use tracing::info;

use crate::http::events::event_json;
use crate::model::{Roster, SharedCluster};

/// How often new entries are looked for.
const PACE: Duration = Duration::from_millis(250);

pub async fn run(clusters: Roster<SharedCluster>, mut stop: watch::Receiver<bool>) {
    // By cluster name: a cluster rebuilt by a reload keeps its timeline and
    // numbering, so nothing is logged twice.
    let mut logged: HashMap<String, u64> = HashMap::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PACE) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let roster = clusters.now();
        logged.retain(|name, _| roster.iter().any(|c| c.read().name == *name));
        for c in roster.iter() {
            c.tick(crate::model::election::Now::current());
            let name = c.read().name.clone();
            let last = logged.entry(name).or_insert(0);
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
