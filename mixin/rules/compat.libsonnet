// Optional recording rules for a migration: prometheusCompatRules publishes
// the names the exporters people already run export, from this agent's
// series, so their dashboards (Grafana 11442, 10465) and alert rules
// (awesome-prometheus-alerts' ZooKeeper rules) keep working while they move
// (docs/migrating.md). Not in the main rules file: load
// alerts/compat.rules.yml only for the migration, then drop it.
//
// Every record is one series per ZooKeeper server: the max over agent
// replicas by (ensemble, server), then the old exporters' labels added from
// `server`: `zk_host` (dabealu) and `instance` (carlpett and ZooKeeper's
// own provider, where instance named the server scraped).
local names = {
  // zk_<key> of dabealu's and carlpett's exporters (mntr keys as-is), and
  // the unprefixed names of ZooKeeper's PrometheusMetricsProvider: from
  // the agent's family.
  gauges: {
    avg_latency: 'zookeeper_latency_avg',
    min_latency: 'zookeeper_latency_min',
    max_latency: 'zookeeper_latency_max',
    num_alive_connections: 'zookeeper_num_alive_connections',
    outstanding_requests: 'zookeeper_outstanding_requests',
    znode_count: 'zookeeper_znode_count',
    watch_count: 'zookeeper_watch_count',
    ephemerals_count: 'zookeeper_ephemerals_count',
    approximate_data_size: 'zookeeper_approximate_data_size',
    open_file_descriptor_count: 'zookeeper_open_file_descriptor_count',
    max_file_descriptor_count: 'zookeeper_max_file_descriptor_count',
    synced_followers: 'zookeeper_synced_followers',
    pending_syncs: 'zookeeper_pending_syncs',
    quorum_size: 'zookeeper_quorum_size',
    uptime: 'zookeeper_uptime',
  },
  // Counters: the old exporters exposed mntr's running totals under the
  // bare name; the same values, so rate() and increase() read as before.
  counters: {
    packets_received: 'zookeeper_packets_received_total',
    packets_sent: 'zookeeper_packets_sent_total',
  },
  // Every summary the agent exports from mntr (docs/metrics.md), as the
  // provider names it: [provider name, agent family, keyed]. A keyed set
  // (per namespace, per learner) keeps its `key` label.
  summaries: [
    ['ack_latency', 'zookeeper_ack_latency', true],
    ['close_session_prep_time', 'zookeeper_close_session_prep_time', false],
    ['commit_commit_proc_req_queued', 'zookeeper_commit_commit_proc_req_queued', false],
    ['commit_process_time', 'zookeeper_commit_process_time', false],
    ['commit_propagation_latency', 'zookeeper_commit_propagation_latency', false],
    ['concurrent_request_processing_in_commit_processor', 'zookeeper_concurrent_request_processing_in_commit_processor', false],
    ['connection_token_deficit', 'zookeeper_connection_token_deficit', false],
    ['dbinittime', 'zookeeper_dbinittime', false],
    ['dead_watchers_cleaner_latency', 'zookeeper_dead_watchers_cleaner_latency', false],
    ['follower_sync_time', 'zookeeper_follower_sync_time', false],
    ['fsynctime', 'zookeeper_fsynctime', false],
    ['inflight_diff_count', 'zookeeper_inflight_diff_count', false],
    ['inflight_snap_count', 'zookeeper_inflight_snap_count', false],
    ['jvm_pause_time_ms', 'zookeeper_jvm_pause_time_ms', false],
    ['leader_unavailable_time', 'zookeeper_leader_unavailable_time', false],
    ['learner_handler_qp_size', 'zookeeper_learner_handler_qp_size', true],
    ['learner_handler_qp_time_ms', 'zookeeper_learner_handler_qp_time_ms', true],
    ['learner_request_processor_queue_size', 'zookeeper_learner_request_processor_queue_size', false],
    ['local_write_committed_time_ms', 'zookeeper_local_write_committed_time_ms', false],
    ['election_time', 'zookeeper_mntr_election_time', false],
    ['server_write_committed_time_ms', 'zookeeper_mntr_server_write_committed_time_ms', false],
    ['session_queues_drained', 'zookeeper_mntr_session_queues_drained', false],
    ['netty_queued_buffer_capacity', 'zookeeper_netty_queued_buffer_capacity', false],
    ['node_changed_watch_count', 'zookeeper_node_changed_watch_count', false],
    ['node_children_watch_count', 'zookeeper_node_children_watch_count', false],
    ['node_created_watch_count', 'zookeeper_node_created_watch_count', false],
    ['node_deleted_watch_count', 'zookeeper_node_deleted_watch_count', false],
    ['observer_sync_time', 'zookeeper_observer_sync_time', false],
    ['om_commit_process_time_ms', 'zookeeper_om_commit_process_time_ms', false],
    ['om_proposal_process_time_ms', 'zookeeper_om_proposal_process_time_ms', false],
    ['pending_session_queue_size', 'zookeeper_pending_session_queue_size', false],
    ['prep_process_time', 'zookeeper_prep_process_time', false],
    ['prep_processor_queue_size', 'zookeeper_prep_processor_queue_size', false],
    ['prep_processor_queue_time_ms', 'zookeeper_prep_processor_queue_time_ms', false],
    ['propagation_latency', 'zookeeper_propagation_latency', false],
    ['proposal_ack_creation_latency', 'zookeeper_proposal_ack_creation_latency', false],
    ['proposal_latency', 'zookeeper_proposal_latency', false],
    ['proposal_process_time', 'zookeeper_proposal_process_time', false],
    ['quorum_ack_latency', 'zookeeper_quorum_ack_latency', false],
    ['read_commit_proc_issued', 'zookeeper_read_commit_proc_issued', false],
    ['read_commit_proc_req_queued', 'zookeeper_read_commit_proc_req_queued', false],
    ['read_commitproc_time_ms', 'zookeeper_read_commitproc_time_ms', false],
    ['read_final_proc_time_ms', 'zookeeper_read_final_proc_time_ms', false],
    ['read_per_namespace', 'zookeeper_read_per_namespace', true],
    ['readlatency', 'zookeeper_readlatency', false],
    ['reads_after_write_in_session_queue', 'zookeeper_reads_after_write_in_session_queue', false],
    ['reads_issued_from_session_queue', 'zookeeper_reads_issued_from_session_queue', false],
    ['request_throttle_queue_time_ms', 'zookeeper_request_throttle_queue_time_ms', false],
    ['requests_in_session_queue', 'zookeeper_requests_in_session_queue', false],
    ['snapshottime', 'zookeeper_snapshottime', false],
    ['socket_closing_time', 'zookeeper_socket_closing_time', false],
    ['startup_snap_load_time', 'zookeeper_startup_snap_load_time', false],
    ['startup_txns_load_time', 'zookeeper_startup_txns_load_time', false],
    ['startup_txns_loaded', 'zookeeper_startup_txns_loaded', false],
    ['sync_process_time', 'zookeeper_sync_process_time', false],
    ['sync_processor_batch_size', 'zookeeper_sync_processor_batch_size', false],
    ['sync_processor_queue_and_flush_time_ms', 'zookeeper_sync_processor_queue_and_flush_time_ms', false],
    ['sync_processor_queue_flush_time_ms', 'zookeeper_sync_processor_queue_flush_time_ms', false],
    ['sync_processor_queue_size', 'zookeeper_sync_processor_queue_size', false],
    ['sync_processor_queue_time_ms', 'zookeeper_sync_processor_queue_time_ms', false],
    ['time_waiting_empty_pool_in_commit_processor_read_ms', 'zookeeper_time_waiting_empty_pool_in_commit_processor_read_ms', false],
    ['unavailable_time', 'zookeeper_unavailable_time', false],
    ['updatelatency', 'zookeeper_updatelatency', false],
    ['write_batch_time_in_commit_processor', 'zookeeper_write_batch_time_in_commit_processor', false],
    ['write_commit_proc_issued', 'zookeeper_write_commit_proc_issued', false],
    ['write_commit_proc_req_queued', 'zookeeper_write_commit_proc_req_queued', false],
    ['write_commitproc_time_ms', 'zookeeper_write_commitproc_time_ms', false],
    ['write_final_proc_time_ms', 'zookeeper_write_final_proc_time_ms', false],
    ['write_per_namespace', 'zookeeper_write_per_namespace', true],
  ],
};

{
  prometheusCompatRules+:: {
    local c = $._config,
    // One server's series with the old label names.
    local server(expr) =
      'label_replace(label_replace(%s, "zk_host", "$1", "server", "(.*)"), "instance", "$1", "server", "(.*)")' % expr,
    local one(family, extra='') = 'max by (ensemble, server%s) (%s{%s})' % [extra, family, c.selector],
    // What each agent replica (told apart by `instance`, as every
    // per-replica rule of the mixin does) reads as leaders: their epoch
    // (srvr's zxid), 0 where srvr is not polled.
    local claims = 'max by (ensemble, server, instance) ((zookeeper_zxid_epoch{%(s)s} and ignoring (state) (zookeeper_server_state{%(s)s,state="leader"} == 1)) or ignoring (state) ((zookeeper_server_state{%(s)s,state="leader"} == 1) * 0))' % { s: c.selector },
    // One view per ensemble: the replica whose leader has the newest
    // epoch, and of those the one scraped last (topk keeps one on a tie).
    // Replicas scrape at different instants: through a leader change one
    // may still read the old leader while another reads the new one, and
    // both can carry the same epoch (a member's srvr reports the epoch of
    // the last transaction it processed, which the new leader may not have
    // moved yet when a replica read it). Counting every replica's leaders
    // would read two where ZooKeeper had one; counting one replica's never
    // does.
    local viewAtNewest = '(max by (ensemble, instance) (%(l)s) == on (ensemble) group_left max by (ensemble) (%(l)s))' % { l: claims },
    local view = 'topk by (ensemble) (1, max by (ensemble, instance) (timestamp(zookeeper_server_state{%(s)s,state="leader"})) and on (ensemble, instance) %(v)s)' % { s: c.selector, v: viewAtNewest },
    // The leaders of the newest epoch in that view, one series each.
    local newest = '(max by (ensemble, server) ((%(l)s == on (ensemble) group_left max by (ensemble) (%(l)s)) and on (ensemble, instance) %(view)s))' % { l: claims, view: view },
    groups+: [
      {
        name: 'zookeeper-compat-exporters',
        rules: [
          // dabealu: 1 while mntr answers; carlpett: 1 after a good scrape.
          { record: 'zk_up', expr: server(one('zookeeper_up')) },
          { record: 'zk_ruok', expr: server(one('zookeeper_ruok')) },
          // dabealu: 1 on the leader, 0 on every other member, down and
          // not serving ones too (a quorum lost reads all 0, so
          // `sum(zk_server_leader) == 0` fires). Only the leader of the
          // newest epoch in one replica's view counts (see `view`): the
          // old exporters' `sum(zk_server_leader) > 1` pages at once, and
          // must not for a leader change read by two replicas. A member
          // claiming an older epoch is ZooKeeperMultipleLeaders' business.
          { record: 'zk_server_leader', expr: server('%(newest)s * 0 + 1 or max by (ensemble, server) (zookeeper_up{%(selector)s}) * 0' % {
            selector: c.selector,
            newest: newest,
          }) },
          // carlpett: 1 with the current state as a label. "leader" only
          // for the leaders of the newest epoch, for the same reason as
          // zk_server_leader: `count(zk_server_state{state="leader"}) > 1`
          // stays quiet through a leader change read by several replicas.
          // Through the change a member may read two states for a scrape
          // (the new leader "follower" too, from the slower replica).
          { record: 'zk_server_state', expr: server('max by (ensemble, server, state) (zookeeper_server_state{%(s)s,state!="leader"} == 1) or (max by (ensemble, server, state) (zookeeper_server_state{%(s)s,state="leader"} == 1) and on (ensemble, server) %(newest)s)' % {
            s: c.selector,
            newest: newest,
          }) },
          { record: 'zk_version', expr: server(one('zookeeper_server_info', ', version')) },
          // 3.4 calls the leader's learners followers.
          { record: 'zk_followers', expr: server('max by (ensemble, server) (zookeeper_followers{%s} or zookeeper_learners{%s})' % [c.selector, c.selector]) },
        ] + [
          { record: 'zk_' + key, expr: server(one(names.gauges[key])) }
          for key in std.objectFields(names.gauges)
        ] + [
          { record: 'zk_' + key, expr: server(one(names.counters[key])) }
          for key in std.objectFields(names.counters)
        ],
      },
      {
        name: 'zookeeper-compat-metrics-provider',
        rules: [
          { record: key, expr: server(one(names.gauges[key])) }
          for key in std.objectFields(names.gauges)
        ] + [
          { record: key, expr: server(one(names.counters[key])) }
          for key in std.objectFields(names.counters)
        ] + [
          // The provider's summaries: _sum and _count, for rates.
          { record: s[0] + suffix, expr: server(one(s[1] + suffix, if s[2] then ', key' else '')) }
          for s in names.summaries
          for suffix in ['_sum', '_count']
        ] + [
          { record: 'learners', expr: server(one('zookeeper_learners')) },
          { record: 'leader_uptime', expr: server(one('zookeeper_leader_uptime')) },
        ],
      },
    ],
  },
}
