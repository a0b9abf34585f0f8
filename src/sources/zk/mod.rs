//! ZooKeeper session sources: one session per cluster ([`session`], built
//! and retried by [`lifecycle`] through [`connect`]) that watches every tree with persistent
//! watches, recursive or node by node ([`watch`]) or, on servers before 3.6, one-shot
//! watches ([`oneshot`]), reading in batches ([`read`]).

pub(crate) mod connect;
pub(crate) mod lifecycle;
pub(crate) mod oneshot;
pub(crate) mod read;
pub(crate) mod session;
pub(crate) mod watch;
