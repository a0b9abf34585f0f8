//! A child node of a watched tree as read from ZooKeeper.

/// A child node as read from ZooKeeper: name, data and the stat fields used.
#[derive(Debug, Clone)]
pub struct ChildNode {
    pub name: String,
    pub data: Vec<u8>,
    pub ephemeral_owner: i64,
    /// Creation time in milliseconds since the epoch.
    pub ctime_ms: i64,
}
