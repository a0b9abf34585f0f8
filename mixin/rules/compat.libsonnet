// Optional recording rules for a migration: prometheusCompatRules publishes
// the names the exporters people already run export, from this agent's
// series, so their dashboards (Grafana 11442, 10465) and alert rules
// (awesome-prometheus-alerts' ZooKeeper rules) keep working while they move
// (docs/migrating.md). Not in the main rules file: load
// alerts/compat.rules.yml only for the migration, then drop it.
//
// Every record is one series per ZooKeeper server: the max over agent
// replicas by (cluster, server), then the old exporters' labels added from
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
};

{
  prometheusCompatRules+:: {
    local c = $._config,
    // One server's series with the old label names.
    local server(expr) =
      'label_replace(label_replace(%s, "zk_host", "$1", "server", "(.*)"), "instance", "$1", "server", "(.*)")' % expr,
    local one(family, extra='') = 'max by (cluster, server%s) (%s{%s})' % [extra, family, c.selector],
    groups+: [
      {
        name: 'zookeeper-compat-exporters',
        rules: [
          // dabealu: 1 while mntr answers; carlpett: 1 after a good scrape.
          { record: 'zk_up', expr: server(one('zookeeper_up')) },
          { record: 'zk_ruok', expr: server(one('zookeeper_ruok')) },
          // dabealu: 1 on the leader, 0 on the others.
          { record: 'zk_server_leader', expr: server('max by (cluster, server) (zookeeper_server_state{%s,state="leader"})' % c.selector) },
          // carlpett: 1 with the current state as a label.
          { record: 'zk_server_state', expr: server('max by (cluster, server, state) (zookeeper_server_state{%s} == 1)' % c.selector) },
          { record: 'zk_version', expr: server(one('zookeeper_server_info', ', version')) },
          // 3.4 calls the leader's learners followers.
          { record: 'zk_followers', expr: server('max by (cluster, server) (zookeeper_followers{%s} or zookeeper_learners{%s})' % [c.selector, c.selector]) },
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
          { record: s[0] + suffix, expr: server(one(s[1] + suffix)) }
          for s in [['readlatency', 'zookeeper_readlatency'], ['updatelatency', 'zookeeper_updatelatency'],
                    ['fsynctime', 'zookeeper_fsynctime'], ['election_time', 'zookeeper_mntr_election_time']]
          for suffix in ['_sum', '_count']
        ] + [
          { record: 'learners', expr: server(one('zookeeper_learners')) },
          { record: 'leader_uptime', expr: server(one('zookeeper_leader_uptime')) },
        ],
      },
    ],
  },
}
