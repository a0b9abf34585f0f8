//! Handover time: from the moment the old master's node went (deleted, or
//! expired with its session, as the agent saw it) to the first evidence
//! that the new master took over: the election's record naming it (HDFS's
//! breadcrumb, Flink's leader information, Solr's overseer record; a lease
//! table later). The masterless time says when a candidate held the node;
//! this says when it acted. Without a record there is no evidence, and no
//! figure.

use std::time::{Duration, Instant, SystemTime};

use super::{ElectionTree, Now};

/// Buckets of the handover histogram, around the 200 ms goal of the
/// single-active design, up to the session timeouts a crash costs.
pub const HANDOVER_BUCKETS: &[f64] = &[
    0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// One election's handover, pending or done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Handover {
    /// When the old master's node went.
    started: Instant,
    /// How long it took and when it completed, once evidence came.
    done: Option<(Duration, SystemTime)>,
}

impl Handover {
    /// How long the last one took and when it completed; `None` while
    /// the new master has not been seen to take over.
    pub fn done(&self) -> Option<(Duration, SystemTime)> {
        self.done
    }

    /// Ends a pending handover with the new master's takeover at `write`
    /// (monotonic; the lease's last write, an upper bound of the first),
    /// seen at `wall`; returns how long it took.
    pub(super) fn finish(&mut self, write: Instant, wall: SystemTime) -> Duration {
        let took = write.saturating_duration_since(self.started);
        self.done = Some((took, wall));
        took
    }
}

impl ElectionTree {
    /// The master of election `path` went: its handover starts now.
    pub(super) fn handover_starts(&mut self, path: &str, now: Now) {
        if !self.has_takeover_evidence() {
            return;
        }
        if let Some(entry) = self.elections.get_mut(path) {
            entry.handover = Some(Box::new(Handover {
                started: now.mono,
                done: None,
            }));
        }
        self.handover_evidence(path, now);
    }

    /// Something changed in election `path` (a candidate, its record): if
    /// a handover is pending and the record names the master now, it is
    /// done.
    pub(super) fn handover_evidence(&mut self, path: &str, now: Now) {
        let record = self.record(path).map(str::to_owned);
        let Some(entry) = self.elections.get_mut(path) else {
            return;
        };
        let Some(handover) = entry.handover.as_deref_mut().filter(|h| h.done.is_none()) else {
            return;
        };
        let names_master = entry.election.master().is_some_and(|m| {
            record
                .as_deref()
                .is_some_and(|r| (!m.identity.is_empty() && r == m.identity) || r == m.node)
        });
        if names_master {
            let took = now.mono.saturating_duration_since(handover.started);
            handover.done = Some((took, now.wall));
            self.handovers.observe(took.as_secs_f64());
        }
    }

    /// The last handover of election `path`, if one started.
    pub fn handover(&self, path: &str) -> Option<Handover> {
        self.elections.get(path)?.handover.as_deref().copied()
    }
}
