//! Ghost masters: families from the session tracker.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::{Scrape, names};
use crate::model::ghost::{Liveness, SessionTracker};
use std::time::SystemTime;

/// Calls `f` for the master of every exported election whose owner
/// session the ghost check track.
pub(super) fn each_tracked_master(
    s: &Scrape,
    mut f: impl FnMut(&Labels, Liveness, &SessionTracker, i64) -> fmt::Result,
) -> fmt::Result {
    for (c, survey) in s.clusters.iter().zip(&s.surveys) {
        let Some(tracker) = c.ghost().filter(|t| t.polled()) else {
            continue;
        };
        for (_, path, e) in &survey.exported {
            let Some(master) = e.master().filter(|m| m.owner != 0) else {
                continue;
            };
            // Unknown sessions get no series: no value without evidence.
            if let Some(liveness) = tracker
                .liveness(master.owner)
                .filter(|l| !matches!(l, Liveness::Unknown(_)))
            {
                f(
                    &Labels::new("ensemble", c.name()).with("election", path),
                    liveness,
                    tracker,
                    master.owner,
                )?;
            }
        }
    }
    Ok(())
}

/// Ghost masters: families from the ghost check's session tracker.
pub(super) fn encode_ghosts(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let (clusters, now) = (s.clusters, s.now);
    let wall = SystemTime::now();
    family(
        enc,
        names::ELECTION_MASTER_SESSION_CONNECTED,
        "1 if the master's session holds a connection and talks; 0 for a ghost master (a complete cons round found no connection, or two rounds over 2/3 of its timeout apart saw no packet) whose node lives until the session expires; absent while unknown.",
        MetricType::Gauge,
        |m| {
            each_tracked_master(s, |l, live, _, _| {
                gauge(m, l, f64::from(u8::from(live.is_connected())))
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER_DISCONNECTED_SECONDS,
        "How long the master's session has been disconnected or silent so far; only for ghost masters.",
        MetricType::Gauge,
        |m| {
            each_tracked_master(s, |l, live, _, _| match live.since() {
                Some(s) => gauge(m, l, now.saturating_duration_since(s).as_secs_f64()),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_MASTER_EXPIRES_IN_SECONDS,
        "Seconds until ZooKeeper expires a ghost master's session (from dump on the leader; only for ghost masters, absent where dump is not allowed or prints local times).",
        MetricType::Gauge,
        |m| {
            each_tracked_master(s, |l, live, tracker, owner| {
                match tracker
                    .expires_in(owner, wall)
                    .filter(|_| !live.is_connected())
                {
                    Some(d) => gauge(m, l, d.as_secs_f64()),
                    None => Ok(()),
                }
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_PARENT_WATCHERS,
        "Sessions (other than the agent) watching the election node itself, from wchp: when it equals the candidates, every candidate watches the parent instead of its predecessor and each change wakes them all (herd effect).",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                if let Some(watchers) = c.parent_watchers() {
                    for (election, n) in watchers {
                        gauge(
                            m,
                            &Labels::new("ensemble", c.name()).with("election", election.as_str()),
                            *n as f64,
                        )?;
                    }
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        names::TREE_DISCONNECTED_EPHEMERALS,
        "Ephemeral candidates or members of the tree whose owner session is disconnected or silent.",
        MetricType::Gauge,
        |m| {
            for c in clusters {
                let Some(tracker) = c.ghost().filter(|t| t.polled()) else {
                    continue;
                };
                for tree in c.trees() {
                    let n: usize = tree
                        .owner_counts()
                        .into_iter()
                        .filter(|(o, _)| tracker.liveness(*o).is_some_and(Liveness::is_ghost))
                        .map(|(_, n)| n)
                        .sum();
                    gauge(
                        m,
                        &Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str()),
                        n as f64,
                    )?;
                }
            }
            Ok(())
        },
    )
}
