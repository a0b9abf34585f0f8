//! Sources: everything that does I/O. They read ZooKeeper and its
//! four-letter words and turn what they see into calls on the models; they
//! never render anything.

pub mod discovery;
pub(crate) mod fourlw;
pub mod kerberos;
pub(crate) mod lease;
pub(crate) mod probe;
pub(crate) mod zk;
