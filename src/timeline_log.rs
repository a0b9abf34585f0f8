//! Writes every timeline entry once as a structured log line (target
//! `zk_election_exporter::events`), so a log shipper keeps the history
//! past the ring's size; and gives the models the time for entries that
//! time alone makes (a hold passing `max_hold`). It wakes when a cluster
//! was written to or a hold is due, never on a fixed pace: at rest it
//! sleeps.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::info;

use crate::api::events::EventBody;
use crate::model::Now;
use crate::model::changes::WriteWatch;
use crate::model::{Roster, SharedCluster};

/// The least time between two looks: a burst of writes (the first
/// listing of a large tree) is logged in a few batches, not once per write.
const PACE: Duration = Duration::from_millis(250);

pub async fn run(clusters: Roster<SharedCluster>, mut stop: watch::Receiver<bool>) {
    // By cluster name: a cluster rebuilt by a reload keeps its timeline and
    // numbering, so nothing is logged twice.
    let mut logged: HashMap<String, u64> = HashMap::new();
    let mut changes = WriteWatch::new(&clusters);
    let mut due: Option<Instant> = None;
    loop {
        let at = due.map(tokio::time::Instant::from_std);
        tokio::select! {
            _ = changes.next() => {}
            _ = tokio::time::sleep_until(at.unwrap_or_else(tokio::time::Instant::now)), if at.is_some() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let roster = clusters.now();
        let mut seen = Vec::with_capacity(roster.len());
        due = None;
        for c in roster.iter() {
            let after = |name: &str| logged.get(name).copied().unwrap_or(0);
            let ticked = c.tick(Now::current(), after);
            let last = logged.entry(ticked.name.clone()).or_insert(0);
            for e in &ticked.new {
                *last = e.seq;
                log(&EventBody::of(&ticked.name, e));
            }
            due = due.into_iter().chain(ticked.next).min();
            seen.push(ticked.name);
        }
        logged.retain(|name, _| seen.contains(name));
        tokio::select! {
            _ = tokio::time::sleep(PACE) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One entry's log line.
fn log(e: &EventBody) {
    info!(
        target: "zk_election_exporter::events",
        seq = e.seq,
        cluster = %e.cluster,
        election = %e.election.as_deref().unwrap_or(""),
        kind = %e.kind,
        from = %e.from_identity().unwrap_or(""),
        to = %e.to_identity().unwrap_or(""),
        cause = %e.cause_label().unwrap_or(""),
        at = %e.at,
        "{}", e.kind
    );
}
