//! HBase (2.6): the active master holds EPHEMERAL `master`, backups
//! register under `backup-masters`, region servers under `rs`. The master's
//! data is `0xFF`, a length, the process id, `PBUF`, then the protobuf
//! `Master { ServerName { host_name, port, start_code }, … }`.

use super::{Decoder, Election, Group, KnownSystem, Root, Spot, SystemTree};
use crate::protobuf;

pub(super) const SYSTEM: &dyn KnownSystem = &Hbase;

struct Hbase;

impl KnownSystem for Hbase {
    fn name(&self) -> &'static str {
        "hbase"
    }

    fn default_root(&self) -> &'static str {
        "/hbase"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::node(root.at("/master"), "hbase")
                .standbys(root.at("/backup-masters"))
                .into(),
            Group::new(root.at("/rs")).into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &["/master", "/backup-masters", "/rs"]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "master" && spot.sibling("backup-masters") && spot.sibling("rs"))
            .then(|| spot.up(1).to_owned())
    }

    fn decoders(&self) -> &'static [Decoder] {
        &[Decoder {
            name: "hbase",
            decode: host_and_port,
        }]
    }
}

/// `host:port` of the master's `ServerName`.
fn host_and_port(data: &[u8]) -> Option<String> {
    let pb = protobuf::strip_hbase_prefix(data);
    let host = protobuf::path(pb, &[1, 1]).and_then(|v| v.text());
    let port = protobuf::path(pb, &[1, 2]).and_then(|v| v.text());
    host.zip(port).map(|(h, p)| format!("{h}:{p}"))
}
