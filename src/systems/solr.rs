//! Solr: the overseer election, with the overseer's own record of who
//! leads (`{"id": "<master node name>"}`), and every shard's leader
//! election.

use super::{Election, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &Solr;

struct Solr;

impl KnownSystem for Solr {
    fn name(&self) -> &'static str {
        "solr"
    }

    fn default_root(&self) -> &'static str {
        "/"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::sequential(root.at("/overseer_elect/election"), "node")
                .record(root.at("/overseer_elect/leader"), "json:/id")
                .into(),
            Election::sequential(root.at("/collections/*/leader_elect/*/election"), "node").into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &[
            "/overseer_elect",
            "/overseer_elect/election",
            "/overseer_elect/leader",
        ]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "election" && spot.up(1).ends_with("/overseer_elect"))
            .then(|| spot.up(2).to_owned())
    }
}
