//! zk-election-exporter: watches ZooKeeper election trees and exports who is
//! master, how often mastership moves and how long elections go without one.
//!
//! Data flows one way, down this page: sources write models, outputs read
//! them, and no layer imports one above it.
//!
//! **Configuration** ([`config`], [`cli`]): file, environment and flags
//! merged and validated into typed values; [`agent`] assembles each
//! cluster from them (models, sources, poller), runs the HTTP server, and on
//! SIGHUP or `POST /-/reload` applies a new configuration as a difference
//! (the outputs read the running clusters through a [`model::Roster`]).
//! `main.rs` only parses the command line and hands over.
//!
//! **Sources** ([`sources`]) do all I/O and turn what they see into calls on
//! the models' shared face ([`model::SharedCluster`]):
//! - [`sources::zk::session`] keeps one ZooKeeper session per cluster,
//!   watches every tree ([`sources::zk::watch`], or
//!   [`sources::zk::oneshot`] before 3.6), reads in batches
//!   ([`sources::zk::read`]) and resyncs after reconnects and expiry;
//!   [`sources::discovery`] finds trees nobody configured; [`sources::probe`]
//!   runs the failover probe.
//! - Four-letter-word replies enter in [`sources::fourlw`]: [`ask`] sends one
//!   word under a hard timeout, the [`sources::fourlw::poller`] collects every
//!   member on scrape, and [`sources::fourlw::ghost`] runs the `cons`/`dump`
//!   rounds of ghost-master detection.
//! - What one source alone makes (the ensemble's readings, the probe's
//!   figures, the Kerberos ticket, discovery's outcome) it publishes as a
//!   snapshot through a handle taken once (a feed such as
//!   [`model::cluster::EnsembleFeed`]), without the cluster's lock.
//!
//! **Vocabulary** ([`fourlw`]): the pure side of four-letter words, commands,
//! failures and reply parsers, shared by sources and models. [`systems`]:
//! the known systems (Kafka, HBase, …), one file each, read by the
//! configuration (the trees `--system` stands for), by discovery (where it
//! recognises one) and by the models (the identity modes their payloads
//! need); build.rs lists the files, so a system is added by adding its
//! file.
//!
//! **Models** ([`model`]) are plain data with no I/O and no clock: events and
//! a [`model::Now`] go in. A master switch is decided in [`model::election`]
//! (lowest sequence is master; a different node becoming master is a
//! switch); a tree of elections is a [`model::election_tree`] (whose
//! candidates a recipe without data names by their owner session, from
//! ghost-check rounds or a record in [`model::outer_record`]), and a tree's
//! content is one [`model::content::TreeContent`] (elections, groups,
//! locks); [`model::ghost`] judges owner sessions from evidence and
//! `model::cluster::ghost_flags` turns its rounds into ghost flags;
//! [`model::cluster`] holds one cluster and applies the changes sources
//! report (trees addressed by [`model::tree::TreeId`]; its fields are
//! private, outputs read them through accessors); an election tree keeps
//! its owners, nodes and time without a master tallied as they change, and
//! a journal of the elections it changed ([`model::journal`]), from which
//! the readers that keep a view of every election (the alert reading, the
//! scrape's survey in `model::survey`) take only what moved, so the cost
//! of a change is the elections it touched, never the tree; [`model::timeline`]
//! keeps its events; [`model::shared`] is its locked face, whose verbs
//! take the lock once each, writers' and readers' alike.
//!
//! **Outputs** read the models, through [`model::SharedCluster`]'s read
//! verbs (`view`, `alert_reading`, `tick`; `/metrics` holds one read guard
//! and one snapshot of each feed per cluster for a scrape): [`metrics`] renders `/metrics` at scrape
//! time, one encoder per model, every family name (`zookeeper_up`, …) in
//! [`metrics::names`]; [`api`] holds every JSON body as a type (the API,
//! the status page's data, the timeline's log fields, the pushed alerts);
//! [`http`] serves `/metrics` and the other endpoints: `/` (the status
//! page, rendered from [`api::status`]) and `/api/v1/status`, `/healthz`,
//! `/ready`, `/api/v1/trees`, `/api/v1/elections/{path}`, `/api/v1/events`
//! (the timeline) and `POST /-/reload`. No handler waits on the ZooKeeper
//! session; `/metrics` alone drives a source, the bounded
//! four-letter-word collection, before it renders. [`alerting`] reads each
//! cluster's alert conditions (decided in [`model::alerting`]) and pushes
//! them to Alertmanager, one delivery per Alertmanager;
//! [`timeline_log`] writes each timeline event once as a log line and
//! gives the models the time for events time alone makes.
//!
//! Beside the layers: [`logging`] sets up the log format and level,
//! [`simulate`] is the load generator behind `zk-election-exporter
//! simulate` (real sessions competing, masters killed) and [`fuzzing`] the
//! entry points of the fuzz targets; no layer imports them. Four leaves the
//! layers use, which import nothing of the crate: [`panics`] logs a panic
//! (a bug) once per place instead of on every hit (the supervisor and the
//! HTTP server), and [`os`] is the process's dealings with the operating
//! system: the C allocator's settings after a sync (the sessions), huge
//! pages for a large body and the `process_*` figures (the metrics), the
//! open-files limit (the agent); [`web_client`] speaks HTTP/1.1 with
//! hyper's client on a connection its caller opened (the alert pusher and
//! the AdminServer reader); [`protobuf`] reads one field of a protobuf
//! message (the known systems' payloads and the `protobuf:` identities).
//!
//! Where one thing lives: a known system in its own file in [`systems`]; a
//! switch is decided in [`model::election`]; a metric is named in
//! [`metrics::names`]; a four-letter-word reply enters in
//! [`sources::fourlw`] and is parsed in [`fourlw::parse`]; an alert is
//! decided in [`model::alerting`] and pushed by [`alerting`] (its body in
//! [`api::alerts`]); a tree's identity is made in [`model::tree::TreeId`]
//! (from the configuration's fingerprints, [`config`]'s `tree_ids`); a
//! tree's glob (and what it excludes) is made in [`model::pattern`];
//! which trees discovery may take is judged in [`sources::discovery`]; a
//! JSON field is named in [`api`].
//!
//! [`ask`]: sources::fourlw::ask

// A cast that truncates, wraps or drops a sign is where a number from
// outside (a reply, a node, a query) silently becomes another number: each
// one left says why it cannot happen there.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

pub mod agent;
pub(crate) mod alerting;
pub mod api;
pub mod cli;
pub mod config;
pub mod fourlw;
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod model;
pub mod os;
pub mod panics;
pub(crate) mod protobuf;
pub mod simulate;
pub mod sources;
pub(crate) mod systems;
pub(crate) mod timeline_log;
pub(crate) mod web_client;

/// Version, git revision, build date and compiler baked in at build time
/// (build.rs), for `--version` and `zookeeper_exporter_build_info`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const REVISION: &str = match option_env!("ZKEE_GIT_REVISION") {
    Some(r) => r,
    None => "unknown",
};
pub const BUILD_DATE: &str = env!("ZKEE_BUILD_DATE");
pub const RUSTC_VERSION: &str = env!("ZKEE_RUSTC_VERSION");

/// `--version` in the shape Prometheus' own exporters print, and whether
/// this build speaks Kerberos (a build without it refuses GSSAPI).
pub fn version_text() -> String {
    format!(
        "zk-election-exporter, version {VERSION} (revision: {REVISION})\n  build date: {BUILD_DATE}\n  rustc version: {RUSTC_VERSION}\n  platform: {}/{}\n  kerberos: {}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        if config::kerberos::BUILT_WITH_KERBEROS {
            "yes"
        } else {
            "no (built without the kerberos feature)"
        }
    )
}
