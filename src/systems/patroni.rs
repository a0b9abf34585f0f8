//! Patroni (3.0) on ZooKeeper: every scope under the namespace has its
//! leader key (EPHEMERAL, data = the leader's member name) and its members
//! beside it (one EPHEMERAL node per running member, the leader's too).

use super::{Election, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &Patroni;

struct Patroni;

impl KnownSystem for Patroni {
    fn name(&self) -> &'static str {
        "patroni"
    }

    fn default_root(&self) -> &'static str {
        "/service"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::node(root.at("/*/leader"), "data")
                .standbys(root.at("/*/members"))
                .into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &["/pg", "/pg/leader", "/pg/members", "/pg/initialize"]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "leader"
            && spot.up(1) != "/"
            && spot.sibling("members")
            && spot.sibling("initialize"))
        .then(|| spot.up(2).to_owned())
    }
}
