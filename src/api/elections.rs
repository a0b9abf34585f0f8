//! What the agent watches (`/api/v1/trees`) and everything it knows about
//! one election (`/api/v1/elections/{path}`).

use std::time::Instant;

use serde::Serialize;

use super::{session_hex, unix_seconds};
use crate::model::ClusterState;
use crate::model::election_tree::Style;
use crate::model::tree::Tree;

/// Most election, group or lock paths listed per tree, and candidates per
/// election: a tree of a million elections is looked up one by one
/// instead.
pub const LISTED: usize = 1000;

fn style_label(style: &Style) -> &'static str {
    match style {
        Style::Sequential => "sequential",
        Style::Node(_) => "node",
    }
}

/// `GET /api/v1/trees`.
#[derive(Debug, Clone, Serialize)]
pub struct TreesBody {
    pub clusters: Vec<ClusterTrees>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterTrees {
    pub cluster: String,
    pub trees: Vec<TreeBody>,
}

/// One watched tree, configured or found.
#[derive(Debug, Clone, Serialize)]
pub struct TreeBody {
    /// Why the last listing failed, while it does.
    pub error: Option<String>,
    /// Masters whose ghost check cannot say (enough): evidence missing,
    /// or rounds too slow for the session's timeout.
    pub ghost_check_unjudged: Vec<Unjudged>,
    pub kind: &'static str,
    /// The first [`LISTED`] elections, groups or locks.
    pub nodes: Vec<String>,
    /// All of them.
    pub nodes_total: usize,
    pub path: String,
    pub source: &'static str,
    /// `sequential` or `node` for elections.
    pub style: Option<&'static str>,
    pub synced: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unjudged {
    pub election: String,
    pub reason: String,
    pub session: String,
}

impl ClusterTrees {
    pub fn of(c: &ClusterState) -> Self {
        Self {
            cluster: c.name().to_owned(),
            trees: c.trees().iter().map(|t| TreeBody::of(c, t)).collect(),
        }
    }
}

impl TreeBody {
    fn of(c: &ClusterState, t: &Tree) -> Self {
        let nodes: Vec<String> = if let Some(e) = t.as_elections() {
            e.elections()
                .map(|(p, _)| p.to_owned())
                .take(LISTED)
                .collect()
        } else if let Some(g) = t.as_groups() {
            g.groups().map(|(p, _)| p.to_owned()).take(LISTED).collect()
        } else if let Some(l) = t.as_locks() {
            l.locks().map(|(p, _)| p.to_owned()).take(LISTED).collect()
        } else {
            Vec::new()
        };
        let unjudged = match (t.as_elections(), c.ghost()) {
            (Some(e), Some(tracker)) => e
                .elections()
                .filter_map(|(path, e)| {
                    let owner = e.master()?.owner;
                    Some(Unjudged {
                        election: path.to_owned(),
                        reason: tracker.cannot_judge(owner)?,
                        session: session_hex(owner),
                    })
                })
                .take(LISTED)
                .collect(),
            _ => Vec::new(),
        };
        Self {
            error: t.sync_error().map(str::to_owned),
            ghost_check_unjudged: unjudged,
            kind: t.content_kind().label(),
            nodes,
            nodes_total: t.parent_count(),
            path: t.pattern().as_str().to_owned(),
            source: t.source().label(),
            style: t.as_elections().map(|e| style_label(&e.spec().style)),
            synced: t.synced(),
        }
    }
}

/// `GET /api/v1/elections/{path}`: the election in every cluster watching
/// it (one, unless `?cluster=` is not given and two clusters watch the
/// same path).
#[derive(Debug, Clone, Serialize)]
pub struct ElectionsBody {
    pub elections: Vec<ElectionBody>,
}

/// Everything known about one election.
#[derive(Debug, Clone, Serialize)]
pub struct ElectionBody {
    /// `None` where it is not known (a node election without candidates
    /// below it).
    pub candidate_count: Option<usize>,
    /// The first [`LISTED`], in sequence order.
    pub candidates: Vec<Candidate>,
    pub cluster: String,
    pub duplicate_identities: usize,
    pub election: String,
    /// Whether it has series in `/metrics` (see `max_elections`): under
    /// the cap always; past it, whether the latest scrape gave it series
    /// (`null` before the first scrape past the cap).
    pub exported: Option<bool>,
    pub joins: u64,
    /// The last completed handover (old master's node gone to the record
    /// or lease naming the new one); `None` without either or before the
    /// first.
    pub last_handover: Option<HandoverBody>,
    /// What the application's lease table says; absent without a lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseBody>,
    pub leaves: u64,
    pub master: Option<ElectionMaster>,
    pub master_changes: u64,
    pub masterless_seconds_total: f64,
    pub record: Option<String>,
    pub state: &'static str,
    pub style: &'static str,
    pub synced: bool,
    /// The glob of the tree that watches it.
    pub tree: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub identity: String,
    pub node: String,
    pub sequence: i32,
}

/// An election's lease at the last reading.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseBody {
    /// Seconds since the holder last wrote, by the database's clock.
    pub heartbeat_age_seconds: Option<f64>,
    pub holder: Option<String>,
    /// The row's key.
    pub key: String,
    /// When the reading was sent.
    pub read_at: Option<String>,
    /// Whether the source's latest query gave a reading.
    pub reading: bool,
    /// `lease_until - now()`, negative once expired.
    pub remaining_seconds: Option<f64>,
    /// The verdict against ZooKeeper's master (`null`: cannot tell).
    pub verdict: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HandoverBody {
    /// When the record or lease named the new master.
    pub at: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ElectionMaster {
    pub identity: String,
    pub node: String,
    pub sequence: i32,
    pub session: String,
    pub since_unix_seconds: f64,
}

impl ElectionBody {
    /// Election `path` of cluster `c`, or `None` when no tree of it
    /// watches that election.
    pub fn of(c: &ClusterState, path: &str, now: Instant) -> Option<Self> {
        let (tree, elections, election) = c.trees().iter().find_map(|t| {
            let e = t.as_elections()?;
            Some((t, e, e.election(path)?))
        })?;
        let exported = c.has_series(tree.id(), path);
        let master = election.master().map(|m| ElectionMaster {
            identity: m.identity.to_owned(),
            node: m.node.to_owned(),
            sequence: m.sequence,
            session: session_hex(m.owner),
            since_unix_seconds: unix_seconds(m.since),
        });
        let candidates = election
            .candidates()
            .take(LISTED)
            .map(|(sequence, node, identity)| Candidate {
                identity: identity.to_owned(),
                node: node.to_owned(),
                sequence,
            })
            .collect();
        Some(Self {
            candidate_count: c.candidates_of(elections, path, election),
            candidates,
            cluster: c.name().to_owned(),
            duplicate_identities: election.duplicate_identities(),
            election: path.to_owned(),
            exported,
            joins: election.joins(),
            last_handover: elections
                .handover(path)
                .and_then(|h| h.done())
                .map(|(took, at)| HandoverBody {
                    at: super::rfc3339_millis(at),
                    seconds: took.as_secs_f64(),
                }),
            lease: elections.lease_book().map(|book| {
                let row = elections.lease_row(path);
                LeaseBody {
                    heartbeat_age_seconds: row.map(|r| r.heartbeat_age),
                    holder: row.map(|r| r.holder.to_owned()),
                    key: elections
                        .spec()
                        .lease
                        .as_ref()
                        .map_or(path.to_owned(), |l| l.key.of(path).into_owned()),
                    read_at: book
                        .last
                        .as_ref()
                        .and_then(|r| r.started)
                        .map(super::rfc3339_millis),
                    reading: book.fresh(),
                    remaining_seconds: row.map(|r| r.remaining),
                    verdict: tree.lease_verdict(path, election).map(|v| v.label()),
                }
            }),
            leaves: election.leaves(),
            master,
            master_changes: election.changes(),
            masterless_seconds_total: election.masterless_total(now).as_secs_f64(),
            record: elections.record(path).map(str::to_owned),
            state: c.state_of(elections, path, election, now).label(),
            style: style_label(&elections.spec().style),
            synced: tree.synced(),
            tree: tree.pattern().as_str().to_owned(),
        })
    }
}
