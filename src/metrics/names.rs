//! Every metric family the exporter defines, in one place: encoders name
//! families only through these constants, and the `mntr` typing asks
//! [`owned`] before it names a family after a ZooKeeper key.
//!
//! Counters are registered without `_total` (the encoder adds it).

// probe.rs
pub const PROBE_FAILOVER_SECONDS: &str = "zookeeper_probe_failover_seconds";
pub const PROBE_EPHEMERAL_EXPIRY_SECONDS: &str = "zookeeper_probe_ephemeral_expiry_seconds";
pub const PROBE_ERRORS: &str = "zookeeper_probe_errors";

// discovery.rs
pub const DISCOVERY_TREES: &str = "zookeeper_discovery_trees";
pub const DISCOVERY_NODES_WALKED: &str = "zookeeper_discovery_nodes_walked";
pub const DISCOVERY_TRUNCATED: &str = "zookeeper_discovery_truncated";
pub const DISCOVERY_FLEETING: &str = "zookeeper_discovery_fleeting";
pub const DISCOVERY_LAST_RUN_TIMESTAMP_SECONDS: &str =
    "zookeeper_discovery_last_run_timestamp_seconds";

// elections.rs
pub const ELECTION_CANDIDATES: &str = "zookeeper_election_candidates";
pub const ELECTION_HAS_MASTER: &str = "zookeeper_election_has_master";
pub const ELECTION_MASTER: &str = "zookeeper_election_master";
pub const ELECTION_MASTER_SEQUENCE: &str = "zookeeper_election_master_sequence";
pub const ELECTION_MASTER_SINCE_TIMESTAMP_SECONDS: &str =
    "zookeeper_election_master_since_timestamp_seconds";
pub const ELECTION_MASTER_CHANGES: &str = "zookeeper_election_master_changes";
pub const ELECTION_MASTERLESS_SECONDS: &str = "zookeeper_election_masterless_seconds";
pub const ELECTION_CANDIDATE_CHANGES: &str = "zookeeper_election_candidate_changes";
pub const ELECTION_DUPLICATE_IDENTITIES: &str = "zookeeper_election_duplicate_identities";
pub const ELECTION_MIN_CANDIDATES: &str = "zookeeper_election_min_candidates";
pub const ELECTION_DISCOVERED: &str = "zookeeper_election_discovered";
pub const ELECTION_EPOCH: &str = "zookeeper_election_epoch";
pub const ELECTION_EPOCH_REGRESSIONS: &str = "zookeeper_election_epoch_regressions";
pub const ELECTION_RECORD_AGREES: &str = "zookeeper_election_record_agrees";

// lease.rs
pub const ELECTION_LEASE_AGREES: &str = "zookeeper_election_lease_agrees";
pub const ELECTION_LEASE_STATE: &str = "zookeeper_election_lease_state";
pub const ELECTION_LEASE_REMAINING_SECONDS: &str = "zookeeper_election_lease_remaining_seconds";
pub const ELECTION_LEASE_HEARTBEAT_AGE_SECONDS: &str =
    "zookeeper_election_lease_heartbeat_age_seconds";
pub const ELECTION_LEASE_HOLDER: &str = "zookeeper_election_lease_holder_info";
pub const LEASE_UP: &str = "zookeeper_lease_up";
pub const LEASE_READINGS: &str = "zookeeper_lease_readings";
pub const LEASE_FAILURES: &str = "zookeeper_lease_failures";
pub const LEASE_QUERY_DURATION_SECONDS: &str = "zookeeper_lease_query_duration_seconds";
pub const LEASE_LAST_READING_TIMESTAMP_SECONDS: &str =
    "zookeeper_lease_last_reading_timestamp_seconds";
pub const LEASE_QUERY_ROWS: &str = "zookeeper_lease_query_rows";
pub const LEASE_ROWS: &str = "zookeeper_lease_rows";
pub const LEASE_ROWS_REJECTED: &str = "zookeeper_lease_rows_rejected";
pub const LEASE_ROWS_UNMATCHED: &str = "zookeeper_lease_rows_unmatched";
pub const TREE_LEASE_ELECTIONS: &str = "zookeeper_tree_lease_elections";

// ensemble.rs
pub const UP: &str = "zookeeper_up";
pub const RUOK: &str = "zookeeper_ruok";
pub const SERVER_STATE: &str = "zookeeper_server_state";
pub const SERVER_LEADER: &str = "zookeeper_server_leader";
pub const SERVER_NOT_SERVING: &str = "zookeeper_server_not_serving";
pub const SERVER_INFO: &str = "zookeeper_server_info";
pub const ZXID_EPOCH: &str = "zookeeper_zxid_epoch";
pub const ZXID_COUNTER: &str = "zookeeper_zxid_counter";
pub const NODE_COUNT: &str = "zookeeper_node_count";
pub const READ_ONLY: &str = "zookeeper_read_only";
pub const CONFIG_TICK_TIME_SECONDS: &str = "zookeeper_config_tick_time_seconds";
pub const CONFIG_MIN_SESSION_TIMEOUT_SECONDS: &str = "zookeeper_config_min_session_timeout_seconds";
pub const CONFIG_MAX_SESSION_TIMEOUT_SECONDS: &str = "zookeeper_config_max_session_timeout_seconds";
pub const CONFIG_INFO: &str = "zookeeper_config_info";
pub const WCHS_CONNECTIONS: &str = "zookeeper_wchs_connections";
pub const WCHS_PATHS: &str = "zookeeper_wchs_paths";
pub const WCHS_WATCHES: &str = "zookeeper_wchs_watches";
pub const CONS_CONNECTIONS: &str = "zookeeper_cons_connections";
pub const SERVER_JAVA_INFO: &str = "zookeeper_server_java_info";
pub const ENSEMBLE_SERVERS: &str = "zookeeper_ensemble_servers";
pub const ENSEMBLE_SERVERS_UP: &str = "zookeeper_ensemble_servers_up";
pub const ENSEMBLE_SERVERS_UNVERIFIED: &str = "zookeeper_ensemble_servers_unverified";
pub const ENSEMBLE_LEADERS: &str = "zookeeper_ensemble_leaders";
pub const ENSEMBLE_ZXID_SPREAD: &str = "zookeeper_ensemble_zxid_spread";

// exporter.rs
pub const EXPORTER_SERIES_DROPPED: &str = "zookeeper_exporter_series_dropped";
pub const EXPORTER_ELECTIONS_EXPORTED: &str = "zookeeper_exporter_elections_exported";
pub const EXPORTER_BUILD_INFO: &str = "zookeeper_exporter_build_info";
pub const EXPORTER_TIMELINE_ENTRIES: &str = "zookeeper_exporter_timeline_entries";
pub const EXPORTER_TIMELINE_OLDEST: &str = "zookeeper_exporter_timeline_oldest_timestamp_seconds";
pub const CONFIG_LAST_RELOAD_SUCCESSFUL: &str = "zookeeper_exporter_config_last_reload_successful";
pub const CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP: &str =
    "zookeeper_exporter_config_last_reload_success_timestamp_seconds";
pub const CONFIG_RELOADS: &str = "zookeeper_exporter_config_reloads";
pub const HTTP_CONNECTIONS: &str = "zookeeper_exporter_http_connections";
pub const HTTP_CONNECTION_LIMIT: &str = "zookeeper_exporter_http_connection_limit";
pub const HTTP_CONNECTIONS_ACCEPTED: &str = "zookeeper_exporter_http_connections_accepted";
pub const HTTP_CONNECTIONS_CLOSED: &str = "zookeeper_exporter_http_connections_closed";
pub const HTTP_ACCEPT_ERRORS: &str = "zookeeper_exporter_http_accept_errors";
pub const HTTP_UNAUTHORIZED: &str = "zookeeper_exporter_http_unauthorized_requests";
pub const HTTP_PANICS: &str = "zookeeper_exporter_http_panics";
pub const PROCESS_CPU_SECONDS: &str = "process_cpu_seconds";
pub const PROCESS_RESIDENT_MEMORY_BYTES: &str = "process_resident_memory_bytes";
pub const PROCESS_VIRTUAL_MEMORY_BYTES: &str = "process_virtual_memory_bytes";
pub const PROCESS_OPEN_FDS: &str = "process_open_fds";
pub const PROCESS_MAX_FDS: &str = "process_max_fds";
pub const PROCESS_START_TIME_SECONDS: &str = "process_start_time_seconds";
pub const PROCESS_THREADS: &str = "process_threads";
pub const HTTP_TLS_ENABLED: &str = "zookeeper_exporter_http_tls_enabled";
pub const ALERTS_ACTIVE: &str = "zookeeper_exporter_alerts_active";
pub const ALERTS_SENT: &str = "zookeeper_exporter_alerts_sent";
pub const ALERTS_SEND_ERRORS: &str = "zookeeper_exporter_alerts_send_errors";
pub const ALERTS_DROPPED: &str = "zookeeper_exporter_alerts_dropped";
pub const ALERTS_READ_BACK_ERRORS: &str = "zookeeper_exporter_alerts_read_back_errors";
pub const WEB_CONFIG_RELOADS: &str = "zookeeper_exporter_web_config_reloads";
pub const WEB_CONFIG_LAST_RELOAD_SUCCESSFUL: &str =
    "zookeeper_exporter_web_config_last_reload_successful";

// fourlw.rs
pub const FOURLW_UP: &str = "zookeeper_fourlw_up";
pub const FOURLW_DURATION_SECONDS: &str = "zookeeper_fourlw_duration_seconds";
pub const FOURLW_ERRORS: &str = "zookeeper_fourlw_errors";
pub const FOURLW_SKIPPED_LINES: &str = "zookeeper_fourlw_skipped_lines";

// ghost.rs
pub const ELECTION_MASTER_SESSION_CONNECTED: &str = "zookeeper_election_master_session_connected";
pub const ELECTION_MASTER_DISCONNECTED_SECONDS: &str =
    "zookeeper_election_master_disconnected_seconds";
pub const ELECTION_MASTER_EXPIRES_IN_SECONDS: &str = "zookeeper_election_master_expires_in_seconds";
pub const ELECTION_PARENT_WATCHERS: &str = "zookeeper_election_parent_watchers";
pub const TREE_DISCONNECTED_EPHEMERALS: &str = "zookeeper_tree_disconnected_ephemerals";

// groups.rs
pub const GROUP_MEMBERS: &str = "zookeeper_group_members";
pub const GROUP_MEMBER_CHANGES: &str = "zookeeper_group_member_changes";
pub const GROUP_MIN_MEMBERS: &str = "zookeeper_group_min_members";
pub const GROUP_MEMBER: &str = "zookeeper_group_member";
pub const GROUP_DISCOVERED: &str = "zookeeper_group_discovered";

// session.rs
pub const SESSION_STATE: &str = "zookeeper_session_state";
pub const SESSION_RECONNECTS: &str = "zookeeper_session_reconnects";
pub const SESSION_EXPIRATIONS: &str = "zookeeper_session_expirations";
pub const SESSION_CONNECT_FAILURES: &str = "zookeeper_session_connect_failures";
pub const SESSION_TIMEOUT_SECONDS: &str = "zookeeper_session_timeout_seconds";
pub const SESSION_REQUEST_DURATION_SECONDS: &str = "zookeeper_session_request_duration_seconds";

// kerberos.rs
pub const KERBEROS_TICKET_OK: &str = "zookeeper_session_kerberos_ticket_ok";
pub const KERBEROS_TICKET_EXPIRY: &str =
    "zookeeper_session_kerberos_ticket_expiry_timestamp_seconds";
pub const KERBEROS_TICKET_FIRST_SEEN: &str =
    "zookeeper_session_kerberos_ticket_first_seen_timestamp_seconds";
pub const KERBEROS_LAST_CHECK_SUCCESS: &str =
    "zookeeper_session_kerberos_last_success_timestamp_seconds";
pub const KERBEROS_RENEWALS: &str = "zookeeper_session_kerberos_ticket_renewals";
pub const KERBEROS_ERRORS: &str = "zookeeper_session_kerberos_errors";

// trees.rs
pub const TREE_SYNCED: &str = "zookeeper_tree_synced";
pub const TREE_ELECTIONS: &str = "zookeeper_tree_elections";
pub const TREE_MASTER_CHANGES: &str = "zookeeper_tree_master_changes";
pub const TREE_MASTERLESS_SECONDS: &str = "zookeeper_tree_masterless_seconds";
pub const TREE_SLO_OBJECTIVE: &str = "zookeeper_tree_slo_objective";
pub const TREE_SLO_WINDOW_SECONDS: &str = "zookeeper_tree_slo_window_seconds";
pub const TREE_GROUPS: &str = "zookeeper_tree_groups";
pub const TREE_LOCKS: &str = "zookeeper_tree_locks";
pub const TREE_INFO: &str = "zookeeper_tree_info";
pub const TREE_NODES: &str = "zookeeper_tree_nodes";
pub const TREE_EPHEMERAL_NODES: &str = "zookeeper_tree_ephemeral_nodes";
pub const TREE_IGNORED_NODES: &str = "zookeeper_tree_ignored_nodes";
pub const TREE_SYNC_FAILURES: &str = "zookeeper_tree_sync_failures";
pub const TREE_WATCH_EVENTS: &str = "zookeeper_tree_watch_events";
pub const TREE_MASTERLESS_DURATION_SECONDS: &str = "zookeeper_tree_masterless_duration_seconds";
pub const TREE_HANDOVER_SECONDS: &str = "zookeeper_tree_handover_seconds";

// mntr_section.rs
pub const FOURLW_MNTR_DROPPED_KEYS: &str = "zookeeper_fourlw_mntr_dropped_keys";

// locks.rs
pub const LOCK_HELD: &str = "zookeeper_lock_held";
pub const LOCK_HOLDERS: &str = "zookeeper_lock_holders";
pub const LOCK_WAITERS: &str = "zookeeper_lock_waiters";
pub const LOCK_HOLD_SECONDS: &str = "zookeeper_lock_hold_seconds";
pub const LOCK_ACQUISITIONS: &str = "zookeeper_lock_acquisitions";
pub const LOCK_MAX_HOLD_SECONDS: &str = "zookeeper_lock_max_hold_seconds";
pub const TREE_LOCK_HOLD_DURATION_SECONDS: &str = "zookeeper_tree_lock_hold_duration_seconds";

/// Every family above, which the tests hold to the naming rules and
/// the documentation.
#[cfg(test)]
pub const ALL: &[&str] = &[
    PROBE_FAILOVER_SECONDS,
    PROBE_EPHEMERAL_EXPIRY_SECONDS,
    PROBE_ERRORS,
    DISCOVERY_TREES,
    DISCOVERY_NODES_WALKED,
    DISCOVERY_TRUNCATED,
    DISCOVERY_FLEETING,
    DISCOVERY_LAST_RUN_TIMESTAMP_SECONDS,
    ELECTION_CANDIDATES,
    ELECTION_HAS_MASTER,
    ELECTION_MASTER,
    ELECTION_MASTER_SEQUENCE,
    ELECTION_MASTER_SINCE_TIMESTAMP_SECONDS,
    ELECTION_MASTER_CHANGES,
    ELECTION_MASTERLESS_SECONDS,
    ELECTION_CANDIDATE_CHANGES,
    ELECTION_DUPLICATE_IDENTITIES,
    ELECTION_MIN_CANDIDATES,
    ELECTION_DISCOVERED,
    ELECTION_EPOCH,
    ELECTION_EPOCH_REGRESSIONS,
    ELECTION_RECORD_AGREES,
    ELECTION_LEASE_AGREES,
    ELECTION_LEASE_STATE,
    ELECTION_LEASE_REMAINING_SECONDS,
    ELECTION_LEASE_HEARTBEAT_AGE_SECONDS,
    ELECTION_LEASE_HOLDER,
    LEASE_UP,
    LEASE_READINGS,
    LEASE_FAILURES,
    LEASE_QUERY_DURATION_SECONDS,
    LEASE_QUERY_ROWS,
    LEASE_LAST_READING_TIMESTAMP_SECONDS,
    LEASE_ROWS,
    LEASE_ROWS_REJECTED,
    LEASE_ROWS_UNMATCHED,
    TREE_LEASE_ELECTIONS,
    UP,
    RUOK,
    SERVER_STATE,
    SERVER_LEADER,
    SERVER_NOT_SERVING,
    SERVER_INFO,
    ZXID_EPOCH,
    ZXID_COUNTER,
    NODE_COUNT,
    READ_ONLY,
    CONFIG_TICK_TIME_SECONDS,
    CONFIG_MIN_SESSION_TIMEOUT_SECONDS,
    CONFIG_MAX_SESSION_TIMEOUT_SECONDS,
    CONFIG_INFO,
    WCHS_CONNECTIONS,
    WCHS_PATHS,
    WCHS_WATCHES,
    CONS_CONNECTIONS,
    SERVER_JAVA_INFO,
    ENSEMBLE_SERVERS,
    ENSEMBLE_SERVERS_UP,
    ENSEMBLE_SERVERS_UNVERIFIED,
    ENSEMBLE_LEADERS,
    ENSEMBLE_ZXID_SPREAD,
    EXPORTER_SERIES_DROPPED,
    EXPORTER_ELECTIONS_EXPORTED,
    EXPORTER_TIMELINE_ENTRIES,
    EXPORTER_TIMELINE_OLDEST,
    EXPORTER_BUILD_INFO,
    CONFIG_LAST_RELOAD_SUCCESSFUL,
    CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP,
    CONFIG_RELOADS,
    HTTP_CONNECTIONS,
    HTTP_CONNECTION_LIMIT,
    HTTP_CONNECTIONS_ACCEPTED,
    HTTP_CONNECTIONS_CLOSED,
    HTTP_ACCEPT_ERRORS,
    HTTP_UNAUTHORIZED,
    HTTP_TLS_ENABLED,
    WEB_CONFIG_RELOADS,
    ALERTS_ACTIVE,
    ALERTS_SENT,
    ALERTS_SEND_ERRORS,
    ALERTS_DROPPED,
    ALERTS_READ_BACK_ERRORS,
    WEB_CONFIG_LAST_RELOAD_SUCCESSFUL,
    FOURLW_UP,
    FOURLW_DURATION_SECONDS,
    FOURLW_ERRORS,
    FOURLW_SKIPPED_LINES,
    ELECTION_MASTER_SESSION_CONNECTED,
    ELECTION_MASTER_DISCONNECTED_SECONDS,
    ELECTION_MASTER_EXPIRES_IN_SECONDS,
    ELECTION_PARENT_WATCHERS,
    TREE_DISCONNECTED_EPHEMERALS,
    GROUP_MEMBERS,
    GROUP_MEMBER_CHANGES,
    GROUP_MIN_MEMBERS,
    GROUP_MEMBER,
    GROUP_DISCOVERED,
    SESSION_STATE,
    SESSION_RECONNECTS,
    SESSION_EXPIRATIONS,
    SESSION_CONNECT_FAILURES,
    SESSION_TIMEOUT_SECONDS,
    SESSION_REQUEST_DURATION_SECONDS,
    TREE_SYNCED,
    TREE_ELECTIONS,
    TREE_MASTER_CHANGES,
    TREE_MASTERLESS_SECONDS,
    TREE_SLO_OBJECTIVE,
    TREE_SLO_WINDOW_SECONDS,
    TREE_GROUPS,
    TREE_LOCKS,
    TREE_INFO,
    TREE_NODES,
    TREE_EPHEMERAL_NODES,
    TREE_IGNORED_NODES,
    TREE_SYNC_FAILURES,
    TREE_WATCH_EVENTS,
    TREE_MASTERLESS_DURATION_SECONDS,
    TREE_HANDOVER_SECONDS,
    FOURLW_MNTR_DROPPED_KEYS,
    LOCK_HELD,
    LOCK_HOLDERS,
    LOCK_WAITERS,
    LOCK_HOLD_SECONDS,
    LOCK_ACQUISITIONS,
    LOCK_MAX_HOLD_SECONDS,
    TREE_LOCK_HOLD_DURATION_SECONDS,
];

/// Name spaces the exporter keeps for itself: a `mntr` key that would land
/// in one is exported as `zookeeper_mntr_…` instead, so a ZooKeeper version
/// adding a key can never collide with a family of ours, present or future.
/// A space is a whole word sequence of the name (see [`owned`]):
/// `zookeeper_up` keeps `zookeeper_up` and `zookeeper_up_…`, not
/// `zookeeper_uptime` or `zookeeper_updatelatency`, which stay ZooKeeper's
/// like `zookeeper_readlatency`.
const NAMESPACES: &[&str] = &[
    "zookeeper_up",
    "zookeeper_ruok",
    "zookeeper_server",
    "zookeeper_zxid",
    "zookeeper_node_count",
    "zookeeper_read_only",
    "zookeeper_config",
    "zookeeper_cons",
    "zookeeper_fourlw",
    "zookeeper_ensemble",
    "zookeeper_election",
    "zookeeper_tree",
    "zookeeper_session",
    "zookeeper_exporter",
    "zookeeper_group",
    "zookeeper_lock",
    "zookeeper_lease",
    "zookeeper_discovery",
    "zookeeper_probe",
    "zookeeper_wchs",
];

/// Whether `name` is, or may become, one of the exporter's own families:
/// it is one of [`NAMESPACES`] or continues one after an `_`.
pub fn owned(name: &str) -> bool {
    NAMESPACES.iter().any(|space| {
        name.strip_prefix(space)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
    })
}

/// Whether the rule of 0.1 prefixed `name` (four spaces were matched by
/// their letters alone): such a key that [`owned`] now leaves alone is also
/// exported under its old `zookeeper_mntr_` name for one release, so
/// dashboards and rules written against it keep working while they move.
pub fn owned_in_0_1(name: &str) -> bool {
    const BY_LETTERS: &[&str] = &[
        "zookeeper_up",
        "zookeeper_ruok",
        "zookeeper_node_count",
        "zookeeper_read_only",
    ];
    owned(name) || BY_LETTERS.iter().any(|space| name.starts_with(space))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_lies_in_an_owned_name_space() {
        for name in ALL {
            assert!(
                owned(name),
                "{name} is not in NAMESPACES: mntr keys could collide with it"
            );
        }
    }

    #[test]
    fn every_family_is_documented() {
        let docs = include_str!("../../docs/metrics.md");
        for name in ALL {
            assert!(
                docs.contains(&format!("`{name}")),
                "{name} is missing from docs/metrics.md"
            );
        }
    }

    #[test]
    fn name_spaces_are_whole_words() {
        assert!(owned("zookeeper_up"));
        assert!(owned("zookeeper_server_state"));
        assert!(owned("zookeeper_election_time"));
        assert!(!owned("zookeeper_uptime"));
        assert!(!owned("zookeeper_updatelatency"));
        assert!(!owned("zookeeper_serverless"));
        assert!(owned_in_0_1("zookeeper_updatelatency"));
        assert!(!owned_in_0_1("zookeeper_sessionless_connections_expired"));
    }

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for name in ALL {
            assert!(seen.insert(name), "{name} twice");
        }
    }
}
