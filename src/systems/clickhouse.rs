//! ClickHouse (18.16) replicated tables at `ROOT/tables/<shard>/<table>`
//! (the layout its documentation uses): the leader election
//! (EPHEMERAL_SEQUENTIAL, data = the replica name) and the replicas,
//! persistent nodes live while their EPHEMERAL `is_active` exists. The
//! millisecond-lived sequential nodes of every INSERT are not part of it.

use super::{Election, Group, KnownSystem, Root, Spot, SystemTree, root_above};

pub(super) const SYSTEM: &dyn KnownSystem = &ClickHouse;

struct ClickHouse;

impl KnownSystem for ClickHouse {
    fn name(&self) -> &'static str {
        "clickhouse"
    }

    fn default_root(&self) -> &'static str {
        "/clickhouse"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::sequential(root.at("/tables/*/*/leader_election"), "data").into(),
            Group::new(root.at("/tables/*/*/replicas"))
                .alive("is_active")
                .into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &[
            "/tables",
            "/tables/01",
            "/tables/01/hits",
            "/tables/01/hits/leader_election",
            "/tables/01/hits/replicas",
            "/tables/01/hits/block_numbers",
        ]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        if spot.name() != "leader_election"
            || !spot.sibling("replicas")
            || !spot.sibling("block_numbers")
        {
            return None;
        }
        root_above(spot.up(3), "/tables").map(str::to_owned)
    }
}
