//! Writes every timeline entry once as a structured log line (targets
//! `zk_election_exporter::events::<class>`, see [`log`]), so a log shipper
//! keeps the history past the ring's size; and gives the models the time for entries that
//! time alone makes (a hold passing `max_hold`). It wakes when a cluster
//! was written to or a hold is due, never on a fixed pace: at rest it
//! sleeps.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::api::events::EventBody;
use crate::model::Now;
use crate::model::changes::WriteWatch;
use crate::model::timeline::{Class, What};
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
                log(&EventBody::of(&ticked.name, e), &e.what);
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

/// One entry's log line, under the target of its class
/// (`zk_election_exporter::events::elections`, `…::locks`, `…::members`,
/// `…::session`). What needs a person's eye is logged at INFO: switches,
/// masterless periods, ghosts, lease verdicts, the session, and a lock
/// held past `max_hold`. Routine traffic is at DEBUG: lock hand-overs and
/// registry joins and leaves, hundreds a minute on a busy system. A log
/// filter raises or lowers each class, e.g.
/// `--log=info,zk_election_exporter::events::locks=debug`.
fn log(e: &EventBody, what: &What) {
    macro_rules! line {
        ($level:ident, $target:literal) => {
            tracing::$level!(
                target: $target,
                seq = e.seq,
                cluster = %e.cluster,
                election = %e.election.as_deref().unwrap_or(""),
                kind = %e.kind,
                from = %e.previous_identity().unwrap_or(""),
                to = %e.to_identity().unwrap_or(""),
                cause = %e.cause_label().unwrap_or(""),
                at = %e.at,
                "{}", e.kind
            )
        };
    }
    match (what.class(), what) {
        (Class::Elections, _) => line!(info, "zk_election_exporter::events::elections"),
        (Class::Session, _) => line!(info, "zk_election_exporter::events::session"),
        (Class::Locks, What::LockHeldLong { .. }) => {
            line!(info, "zk_election_exporter::events::locks")
        }
        (Class::Locks, _) => line!(debug, "zk_election_exporter::events::locks"),
        (Class::Members, _) => line!(debug, "zk_election_exporter::events::members"),
    }
}
