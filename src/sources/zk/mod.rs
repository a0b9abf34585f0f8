//! ZooKeeper session sources: one session per cluster ([`session`], built
//! and retried by [`lifecycle`] through [`connect`]) that watches every tree with persistent
//! watches, recursive or node by node ([`watch`]) or, on servers before 3.6, one-shot
//! watches ([`oneshot`]), reading in batches ([`read`]).

pub mod connect;
pub mod lifecycle;
pub mod oneshot;
pub mod read;
pub mod session;
pub mod watch;
