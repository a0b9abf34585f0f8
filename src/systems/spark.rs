//! Spark (4.3) standalone masters: Curator's LeaderLatch at
//! `spark.deploy.zookeeper.dir`/leader_election, EPHEMERAL_SEQUENTIAL
//! `_c_<uuid>-latch-N` with empty data, beside the persistent recovery
//! state `master_status`. The nodes name nobody: a candidate is named by
//! the host of the session holding it.

use super::{Election, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &Spark;

struct Spark;

impl KnownSystem for Spark {
    fn name(&self) -> &'static str {
        "spark"
    }

    fn default_root(&self) -> &'static str {
        "/spark"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![Election::sequential(root.at("/leader_election"), "owner-host").into()]
    }

    fn layout(&self) -> &'static [&'static str] {
        &["/leader_election", "/master_status"]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "leader_election" && spot.sibling("master_status"))
            .then(|| spot.up(1).to_owned())
    }
}
