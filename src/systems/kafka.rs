//! Kafka in ZooKeeper mode (3.9, the last release line with it): the
//! controller is EPHEMERAL `/controller`, JSON naming its broker id; every
//! broker, the controller too, registers under `brokers/ids`;
//! `controller_epoch` fences.

use super::{Election, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &Kafka;

struct Kafka;

impl KnownSystem for Kafka {
    fn name(&self) -> &'static str {
        "kafka"
    }

    fn default_root(&self) -> &'static str {
        "/"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::node(root.at("/controller"), "json:/brokerid")
                .standbys(root.at("/brokers/ids"))
                .epoch(root.at("/controller_epoch"))
                .into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &[
            "/controller",
            "/controller_epoch",
            "/brokers",
            "/brokers/ids",
        ]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "controller"
            && spot.sibling("controller_epoch")
            && spot.sibling("brokers/ids"))
        .then(|| spot.up(1).to_owned())
    }
}
