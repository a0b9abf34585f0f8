// Generated from mixin/ by scripts/generate.sh: do not edit. The texts,
// severities and holds are the rules' (mixin/alerts/alerts.libsonnet and
// mixin/config.libsonnet); change them there and regenerate.
//! The catalogue of the agent's own alerts, one entry per [`Kind`], in
//! the order of `Kind::ALL`, as the mixin's rules define them.

use std::time::Duration;

use super::{Entry, Kind};

pub(super) const CATALOGUE: [Entry; 9] = [
    Entry {
        kind: Kind::NoMaster,
        alertname: "ZooKeeperElectionNoMaster",
        severity: "critical",
        summary: r#"Election {{ $labels.election }} of {{ $labels.ensemble }} has no master"#,
        description: r#"No candidate holds {{ $labels.election }} in {{ $labels.ensemble }}: nobody drives it until an instance joins."#,
        hold: Some(Duration::from_secs(60)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::GhostMaster,
        alertname: "ZooKeeperElectionGhostMaster",
        severity: "warning",
        summary: r#"Master of {{ $labels.election }} ({{ $labels.ensemble }}) is a ghost"#,
        description: r#"The session holding {{ $labels.election }} in {{ $labels.ensemble }} has no connection or has gone silent; its node, and so its mastership, lasts until the session expires."#,
        hold: Some(Duration::from_secs(30)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::DuplicateIdentity,
        alertname: "ZooKeeperElectionDuplicateIdentity",
        severity: "warning",
        summary: r#"The same identity is registered twice in {{ $labels.election }} ({{ $labels.ensemble }})"#,
        description: r#"{{ $value }} candidates of {{ $labels.election }} in {{ $labels.ensemble }} share an identity with another: usually a zombie session of a restarted instance."#,
        hold: Some(Duration::from_secs(300)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::MasterFlapping,
        alertname: "ZooKeeperElectionMasterFlapping",
        severity: "warning",
        summary: r#"Mastership of {{ $labels.election }} ({{ $labels.ensemble }}) flaps"#,
        description: r#"{{ $labels.election }} in {{ $labels.ensemble }} switched master more than 3 times in 10 minutes: sessions keep expiring or instances keep restarting."#,
        hold: None,
        window: Some(Duration::from_secs(600)),
        switches: Some(4),
    },
    Entry {
        kind: Kind::EpochRegression,
        alertname: "ZooKeeperElectionEpochRegression",
        severity: "critical",
        summary: r#"The fencing epoch of {{ $labels.election }} ({{ $labels.ensemble }}) went backwards"#,
        description: r#"The epoch of {{ $labels.election }} in {{ $labels.ensemble }} was written lower than before: a master with a stale epoch is acting, and fencing is not protecting the system."#,
        hold: None,
        window: Some(Duration::from_secs(600)),
        switches: None,
    },
    Entry {
        kind: Kind::RecordDisagrees,
        alertname: "ZooKeeperElectionRecordDisagrees",
        severity: "warning",
        summary: r#"The master record of {{ $labels.election }} ({{ $labels.ensemble }}) names another master"#,
        description: r#"The node where {{ $labels.election }} in {{ $labels.ensemble }} records its active master has named someone other than the lock's owner for 5 minutes: the new master has not taken over its duties, or fencing of the old one failed."#,
        hold: Some(Duration::from_secs(300)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::SplitBrain,
        alertname: "ZooKeeperElectionSplitBrain",
        severity: "critical",
        summary: r#"Two masters act for {{ $labels.election }} ({{ $labels.ensemble }})"#,
        description: r#"The application's lease of {{ $labels.election }} in {{ $labels.ensemble }} is held, unexpired, by an instance other than ZooKeeper's master, which renewed it after mastership moved: two instances act at once."#,
        hold: Some(Duration::from_secs(60)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::LeaseExpired,
        alertname: "ZooKeeperElectionLeaseExpired",
        severity: "warning",
        summary: r#"The master of {{ $labels.election }} ({{ $labels.ensemble }}) stopped renewing its lease"#,
        description: r#"ZooKeeper's master of {{ $labels.election }} in {{ $labels.ensemble }} holds a live session but its lease in the application's table expired: the application stopped acting behind a live session."#,
        hold: Some(Duration::from_secs(120)),
        window: None,
        switches: None,
    },
    Entry {
        kind: Kind::SessionDown,
        alertname: "ZooKeeperExporterSessionDown",
        severity: "critical",
        summary: r#"zk-election-exporter has no ZooKeeper session to {{ $labels.ensemble }}"#,
        description: r#"The exporter's session to {{ $labels.ensemble }} is not connected: election metrics are stale or missing until it is."#,
        hold: Some(Duration::from_secs(120)),
        window: None,
        switches: None,
    },
];

