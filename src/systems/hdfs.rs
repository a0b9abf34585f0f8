//! HDFS (Hadoop 3.4) namenode failover: every nameservice's ZKFC holds
//! EPHEMERAL `<nameservice>/ActiveStandbyElectorLock`, and the last active
//! namenode's persistent `ActiveBreadCrumb` is kept for fencing. Both hold
//! the protobuf `ActiveNodeInfo { nameserviceId = 1, namenodeId = 2, … }`.

use super::{Decoder, Election, KnownSystem, Root, Spot, SystemTree};
use crate::protobuf;

pub(super) const SYSTEM: &dyn KnownSystem = &Hdfs;

struct Hdfs;

impl KnownSystem for Hdfs {
    fn name(&self) -> &'static str {
        "hdfs"
    }

    fn default_root(&self) -> &'static str {
        "/hadoop-ha"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::node(root.at("/*/ActiveStandbyElectorLock"), "hdfs")
                .record(root.at("/*/ActiveBreadCrumb"), "hdfs")
                .into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &[
            "/ns1",
            "/ns1/ActiveStandbyElectorLock",
            "/ns1/ActiveBreadCrumb",
        ]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "ActiveStandbyElectorLock" && spot.up(1) != "/")
            .then(|| spot.up(2).to_owned())
    }

    fn decoders(&self) -> &'static [Decoder] {
        &[Decoder {
            name: "hdfs",
            decode: namenode_id,
        }]
    }
}

/// The namenode id of an `ActiveNodeInfo`.
fn namenode_id(data: &[u8]) -> Option<String> {
    protobuf::field(data, 2).and_then(|v| v.text())
}
