//! Batched reads: many `getChildren` or `getData` requests in multi-read
//! batches, a few in flight, shared by tree listings and discovery.

use std::time::{Duration, Instant};

use futures::future::join_all;
use zookeeper_client::{Client, Error, MultiReadResult};

use crate::model::tree::ChildNode;

/// Operations per multi-read request. Large enough to amortise round trips,
/// small enough that one reply stays well under ZooKeeper's 1 MiB packet
/// limit for typical node data.
pub const BATCH: usize = 256;
/// Multi-read requests in flight at once.
const IN_FLIGHT: usize = 4;

/// What each operation of a multi-read asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Children,
    Data,
}

/// Reads `paths` in multi-read batches, `IN_FLIGHT` at a time, in order;
/// `timed` is told each request's round trip.
pub async fn multi_read(
    client: &Client,
    paths: &[String],
    op: Op,
    timed: &(dyn Fn(Duration) + Sync),
) -> Result<Vec<MultiReadResult>, Error> {
    let mut out = Vec::with_capacity(paths.len());
    for group in paths.chunks(BATCH * IN_FLIGHT) {
        let batches = group.chunks(BATCH).map(|chunk| async move {
            let mut reader = client.new_multi_reader();
            for path in chunk {
                match op {
                    Op::Children => reader.add_get_children(path)?,
                    Op::Data => reader.add_get_data(path)?,
                }
            }
            let started = Instant::now();
            let results = reader.commit().await?;
            timed(started.elapsed());
            Ok::<_, Error>(results)
        });
        for batch in join_all(batches).await {
            out.extend(batch?);
        }
    }
    Ok(out)
}

/// The children of a `getChildren` result; `None` when the node is gone.
pub fn as_children(r: MultiReadResult) -> Result<Option<Vec<String>>, Error> {
    match r {
        MultiReadResult::Children { children } => Ok(Some(children)),
        MultiReadResult::Error { err: Error::NoNode } => Ok(None),
        MultiReadResult::Error { err } => Err(err),
        _ => Err(Error::UnexpectedError(
            "multi-read returned data for a children request".into(),
        )),
    }
}

/// The node at `path` from a `getData` result; `None` when it is gone.
pub fn as_child(path: &str, r: MultiReadResult) -> Result<Option<ChildNode>, Error> {
    match r {
        MultiReadResult::Data { data, stat } => Ok(Some(ChildNode {
            name: path.rsplit('/').next().unwrap_or_default().to_owned(),
            data,
            ephemeral_owner: stat.ephemeral_owner,
            ctime_ms: stat.ctime,
        })),
        MultiReadResult::Error { err: Error::NoNode } => Ok(None),
        MultiReadResult::Error { err } => Err(err),
        _ => Err(Error::UnexpectedError(
            "multi-read returned children for a data request".into(),
        )),
    }
}
