//! What the status page shows, and `/api/v1/status` serializes: per
//! cluster the agent's session, the ensemble members, the elections (those
//! needing attention first), the locks held, the latest events; and the
//! alerts being pushed.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::events::EventBody;
use super::{rfc3339_seconds, session_hex};
use crate::model::ClusterState;
use crate::model::alerting::PushCounts;
use crate::model::attention::State as ElectionState;
use crate::model::timeline::Class;

/// Rows per table: the page stays readable; the JSON API has the rest.
pub const ROWS: usize = 200;
/// Latest events per cluster.
pub const EVENTS: usize = 20;

/// `GET /api/v1/status`, and the page at `/`.
#[derive(Debug, Clone, Serialize)]
pub struct StatusBody {
    pub clusters: Vec<ClusterStatus>,
    /// When this was made (RFC 3339).
    pub generated: String,
    pub pushed_alerts: Vec<PushedAlert>,
    /// Whether `[alerting]` pushes alerts at all.
    pub pushing: bool,
    pub telemetry_path: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterStatus {
    pub cluster: String,
    /// The first [`ROWS`], those needing attention first, then path order.
    pub elections: Vec<ElectionRow>,
    /// Elections with series (all of them up to `max_elections`).
    pub elections_shown_of: usize,
    pub elections_watched: usize,
    /// The latest [`EVENTS`], newest first.
    pub events: Vec<EventBody>,
    /// Each election set's lease source.
    pub leases: Vec<LeaseStatus>,
    pub locks_held: Vec<LockRow>,
    pub members: Vec<MemberRow>,
    pub session: &'static str,
    pub session_error: Option<String>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemberRow {
    pub role: Option<&'static str>,
    pub server: String,
    /// `up`, `down` or `unverified` (answered, but not as a ZooKeeper).
    pub up: &'static str,
    /// Transactions behind the newest member of the same epoch.
    pub zxid_lag: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ElectionRow {
    pub candidates: Option<usize>,
    pub election: String,
    pub ghost: bool,
    /// The master's identity.
    pub master: Option<String>,
    pub node: Option<String>,
    pub since: Option<String>,
    pub state: &'static str,
    pub switches: u64,
    pub switches_last_hour: usize,
}

/// One election set's lease source.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseStatus {
    /// Why the latest query gave no reading (`config`, `connect`,
    /// `query`, `timeout`) and what the source said; `null` while it reads.
    pub error: Option<String>,
    pub failing_since: Option<String>,
    /// When the last successful query was sent.
    pub last_reading: Option<String>,
    pub reason: Option<&'static str>,
    /// Usable rows of the last reading.
    pub rows: Option<usize>,
    pub tree: String,
    /// Rows that match no election.
    pub unmatched: Option<u64>,
}

impl LeaseStatus {
    /// The lease sources of `c`'s election sets.
    pub fn of(c: &ClusterState) -> Vec<Self> {
        c.trees()
            .iter()
            .filter_map(|t| Some((t, t.as_elections()?.lease_book()?)))
            .map(|(t, b)| LeaseStatus {
                error: b.failing.as_ref().map(|(_, m, _)| m.clone()),
                failing_since: b.failing.as_ref().map(|(_, _, at)| rfc3339_seconds(*at)),
                last_reading: b.last.as_ref().and_then(|r| r.started).map(rfc3339_seconds),
                reason: b.failing.as_ref().map(|(why, _, _)| why.label()),
                rows: b.last.as_ref().map(|r| r.rows.len()),
                tree: t.pattern().as_str().to_owned(),
                unmatched: b.last.as_ref().map(|_| b.unmatched),
            })
            .collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LockRow {
    pub held_seconds: Option<u64>,
    pub holders: usize,
    pub lock: String,
    pub waiters: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PushedAlert {
    pub alertname: &'static str,
    /// The alert's `ensemble` label: the cluster's `name`.
    pub ensemble: String,
    /// Absent from the key of cluster-wide alerts: `null`.
    pub election: Option<String>,
    pub since: String,
}

impl StatusBody {
    pub fn new(
        clusters: Vec<ClusterStatus>,
        push: PushCounts,
        telemetry_path: &str,
        wall: SystemTime,
    ) -> Self {
        let pushed_alerts = push
            .firing
            .into_iter()
            .map(|(alertname, cluster, election, since)| PushedAlert {
                alertname,
                ensemble: cluster,
                election: (!election.is_empty()).then_some(election),
                since: rfc3339_seconds(since),
            })
            .collect();
        Self {
            clusters,
            generated: rfc3339_seconds(wall),
            pushed_alerts,
            pushing: push.enabled,
            telemetry_path: telemetry_path.to_owned(),
        }
    }
}

impl ClusterStatus {
    pub fn of(c: &ClusterState, now: Instant, wall: SystemTime) -> Self {
        let survey = c.survey(now);
        let elections = election_rows(c, &survey.exported, now, wall);
        let locks = c
            .trees()
            .iter()
            .filter_map(|t| t.as_locks())
            .flat_map(|l| l.locks())
            .filter(|(_, lock)| lock.held())
            .take(ROWS)
            .map(|(path, lock)| LockRow {
                held_seconds: lock.hold(now).map(|d| d.as_secs()),
                holders: lock.holders(),
                lock: path.to_owned(),
                waiters: lock.waiters(),
            })
            .collect();
        Self {
            cluster: c.name().to_owned(),
            elections,
            elections_shown_of: survey.exported.len(),
            elections_watched: survey.total,
            // Lock hand-overs and member churn are routine and frequent:
            // the locks table shows holders; /api/v1/events has them all.
            events: c
                .timeline()
                .newest_first()
                .filter(|e| matches!(e.what.class(), Class::Elections | Class::Session))
                .take(EVENTS)
                .map(|e| EventBody::of(c.name(), e))
                .collect(),
            leases: LeaseStatus::of(c),
            locks_held: locks,
            members: member_rows(c),
            session: c.session().state.label(),
            session_error: c.session().last_error.clone(),
            session_id: c.session().id.map(session_hex),
        }
    }
}

fn member_rows(c: &ClusterState) -> Vec<MemberRow> {
    let readings = c.ensemble().now();
    let Some(e) = readings.replies.as_ref() else {
        return Vec::new();
    };
    let newest = e.servers().filter_map(|(_, h)| h.zxid()).max().unwrap_or(0);
    e.servers()
        .map(|(server, h)| MemberRow {
            role: h.role().map(|r| r.label()),
            server: server.to_owned(),
            up: if h.unverified() {
                "unverified"
            } else if h.up() {
                "up"
            } else {
                "down"
            },
            zxid_lag: h
                .zxid()
                .filter(|z| z >> 32 == newest >> 32)
                .map(|z| (newest & 0xffff_ffff) - (z & 0xffff_ffff)),
        })
        .collect()
}

/// The [`ROWS`] rows shown of the exported elections: those needing
/// attention first, then path order. Every state is judged (for the
/// order), but only the rows shown are built, and the last hour's switches
/// are counted in one pass over the timeline, not one per election: the
/// page is opened during a mass failover, and is built under the read
/// lock that the watch waits on.
fn election_rows(
    c: &ClusterState,
    exported: &[crate::model::survey::Exported<'_>],
    now: Instant,
    wall: SystemTime,
) -> Vec<ElectionRow> {
    let mut order: Vec<(ElectionState, usize)> = exported
        .iter()
        .enumerate()
        .map(|(i, (tree, path, election))| {
            let state = tree
                .as_elections()
                .map_or(ElectionState::Ok, |t| c.state_of(t, path, election, now));
            (state, i)
        })
        .collect();
    // Stable: path order within a state.
    order.sort_by_key(|(state, _)| *state);
    order.truncate(ROWS);
    let hour_ago = wall - Duration::from_secs(3600);
    let mut last_hour: HashMap<&str, usize> = HashMap::new();
    for e in c
        .timeline()
        .newest_of(Class::Elections)
        .take_while(|e| e.at >= hour_ago)
        .filter(|e| e.what.kind() == "switch")
    {
        *last_hour.entry(e.election.as_str()).or_default() += 1;
    }
    order
        .into_iter()
        .map(|(state, i)| {
            let (tree, path, election) = &exported[i];
            let tree = tree.as_elections();
            let master = election.master();
            ElectionRow {
                candidates: tree.and_then(|t| c.candidates_of(t, path, election)),
                election: (*path).to_owned(),
                ghost: state == ElectionState::Ghost,
                master: master.as_ref().map(|m| m.identity.to_owned()),
                node: master.as_ref().map(|m| m.node.to_owned()),
                since: master.as_ref().map(|m| rfc3339_seconds(m.since)),
                state: state.label(),
                switches: election.changes(),
                switches_last_hour: last_hour.get(*path).copied().unwrap_or(0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Now;
    use crate::model::candidate::IdentityMode;
    use crate::model::timeline::{Master, What};
    use crate::model::tree::{ChildNode, Tree, TreePattern};

    fn candidate(name: &str) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: name.as_bytes().to_vec(),
            ephemeral_owner: 1,
            ctime_ms: 1_700_000_000_000,
        }
    }

    /// Rows: those needing attention first, then path order, only
    /// [`ROWS`] of them; each with its own switches of the last hour.
    #[test]
    fn rows_put_attention_first_and_count_the_last_hour_per_election() {
        let mut tree = Tree::elections(TreePattern::parse("/e/*").unwrap(), IdentityMode::Node);
        let listing = (0..ROWS + 10)
            .map(|i| {
                // Every election but /e/e005 has a master.
                let children = match i {
                    5 => Vec::new(),
                    _ => vec![candidate("n_0000000001")],
                };
                (format!("/e/e{i:03}"), children)
            })
            .collect();
        let at = Now::current();
        tree.apply_listing(listing, at);
        let mut c = ClusterState::new("c".into(), vec![tree], false);
        let master = |n: &str| Master {
            node: n.into(),
            identity: n.into(),
            owner: 1,
        };
        let switch = || What::Switch {
            from: Some(master("a")),
            to: master("b"),
            cause: None,
            masterless: None,
        };
        let wall = at.wall;
        c.timeline_mut()
            .push(wall - Duration::from_secs(7200), "/e/e001".into(), switch());
        for (ago, e) in [(1800, "/e/e001"), (60, "/e/e002"), (30, "/e/e001")] {
            c.timeline_mut()
                .push(wall - Duration::from_secs(ago), e.into(), switch());
        }
        let s = ClusterStatus::of(&c, at.mono, wall);
        assert_eq!(s.elections.len(), ROWS);
        assert_eq!(s.elections_shown_of, ROWS + 10);
        let paths: Vec<&str> = s.elections.iter().map(|r| r.election.as_str()).collect();
        assert_eq!(&paths[..4], ["/e/e005", "/e/e000", "/e/e001", "/e/e002"]);
        assert_eq!(s.elections[0].state, "masterless");
        let last_hour = |p: &str| {
            s.elections
                .iter()
                .find(|r| r.election == p)
                .map(|r| r.switches_last_hour)
        };
        assert_eq!(
            last_hour("/e/e001"),
            Some(2),
            "the one two hours ago is older"
        );
        assert_eq!(last_hour("/e/e002"), Some(1));
        assert_eq!(last_hour("/e/e000"), Some(0));
    }
}
