//! Known systems in one line: `[[clusters.systems]] kind = "kafka"` (or
//! `--system kafka[:ROOT]`) stands for the elections and groups the system
//! writes, laid out as it writes them ([`crate::systems`] knows each one).
//! They become the raw entries a file would hold, and are validated alike.

use super::ConfigError;
use super::raw::{RawElection, RawGroup, RawRecord, RawSystem};
use crate::systems::{self, Root, SystemTree};

/// The elections and groups `systems` stand for.
pub(super) fn expand(
    key: &str,
    systems: Vec<RawSystem>,
) -> Result<(Vec<RawElection>, Vec<RawGroup>), ConfigError> {
    let (mut elections, mut groups) = (Vec::new(), Vec::new());
    for (j, raw) in systems.into_iter().enumerate() {
        let skey = format!("{key}.systems[{j}]");
        let Some(system) = systems::find(&raw.kind) else {
            return Err(ConfigError::new(
                format!("{skey}.kind"),
                format!(
                    "`{}` is not a known system; choose from {}",
                    raw.kind,
                    systems::names().join(", ")
                ),
            ));
        };
        let root = raw.root.unwrap_or_else(|| system.default_root().to_owned());
        if !root.starts_with('/') || (root.len() > 1 && root.ends_with('/')) {
            return Err(ConfigError::new(
                format!("{skey}.root"),
                format!("`{root}` must be an absolute path like \"/\" or \"/kafka\""),
            ));
        }
        for tree in system.trees(&Root(&root)) {
            match tree {
                SystemTree::Election(e) => elections.push(election(e)),
                SystemTree::Group(g) => groups.push(RawGroup {
                    path: g.path,
                    alive: g.alive.map(str::to_owned),
                    ..Default::default()
                }),
            }
        }
    }
    Ok((elections, groups))
}

/// A system's election as `[[clusters.elections]]` would spell it.
fn election(e: systems::Election) -> RawElection {
    RawElection {
        path: e.path,
        identity: Some(e.identity.to_owned()),
        style: e.node.then(|| "node".to_owned()),
        standbys: e.standbys,
        epoch: e.epoch,
        record: e.record.map(|r| RawRecord {
            path: r.path,
            identity: Some(r.identity.to_owned()),
        }),
        ..Default::default()
    }
}
