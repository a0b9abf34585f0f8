//! Flink (2.3) JobManagers: every cluster id's Curator LeaderLatch at
//! `ROOT/<cluster-id>/leader/latch` (empty data), named by the leader
//! information the latch holder publishes beside it: the REST server's
//! EPHEMERAL `connection_info`, a Java serialization of its URL.

use super::{Decoder, Election, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &Flink;

struct Flink;

impl KnownSystem for Flink {
    fn name(&self) -> &'static str {
        "flink"
    }

    fn default_root(&self) -> &'static str {
        "/flink"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::sequential(root.at("/*/leader/latch"), "owner-record")
                .record(root.at("/*/leader/rest_server/connection_info"), "flink")
                .into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &[
            "/app-1",
            "/app-1/leader",
            "/app-1/leader/latch",
            "/app-1/leader/rest_server",
        ]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "latch" && spot.up(1).ends_with("/leader") && spot.sibling("rest_server"))
            .then(|| spot.up(3).to_owned())
    }

    /// The leader information of every component (`rest_server`,
    /// `dispatcher`, `resource_manager`): one EPHEMERAL `connection_info`
    /// each, which looks like a registry of one.
    fn claimed(&self) -> &'static [&'static str] {
        &["/*/leader/*"]
    }

    fn decoders(&self) -> &'static [Decoder] {
        &[Decoder {
            name: "flink",
            decode: java_utf,
        }]
    }
}

/// The first string a Java `ObjectOutputStream` wrote with `writeUTF`:
/// the stream magic and version, one block-data record (short or long),
/// then a two-byte length and modified UTF-8 (plain UTF-8 for a URL).
fn java_utf(data: &[u8]) -> Option<String> {
    let rest = data.strip_prefix(&[0xAC, 0xED, 0x00, 0x05])?;
    let block = match rest.first()? {
        0x77 => rest.get(2..2 + usize::from(*rest.get(1)?))?,
        0x7A => {
            let len = u32::from_be_bytes(rest.get(1..5)?.try_into().ok()?);
            rest.get(5..5 + usize::try_from(len).ok()?)?
        }
        _ => return None,
    };
    let len = usize::from(u16::from_be_bytes(block.get(..2)?.try_into().ok()?));
    std::str::from_utf8(block.get(2..2 + len)?)
        .ok()
        .map(str::to_owned)
}
