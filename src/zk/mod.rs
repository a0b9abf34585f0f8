//! ZooKeeper sources: session lifecycle and tree watching. All ZooKeeper I/O
//! of the agent happens in this module.

pub mod discovery;
pub mod oneshot;
pub mod probe;
pub mod session;
pub mod watch;
