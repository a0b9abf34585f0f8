// Recording rules: prometheusRules. Only what the dashboards would otherwise
// compute over every election's series on each refresh; each record takes
// the max over agent replicas, so two replicas do not double a count.
{
  prometheusRules+:: {
    local c = $._config,
    groups+: [
      {
        name: 'zookeeper-elections-records',
        rules: [
          {
            // How many elections each identity is master of now.
            record: 'cluster_identity:zookeeper_election_masters:count',
            expr: 'count by (cluster, identity) (max by (cluster, election, identity) (zookeeper_election_master{%(selector)s} == 1))' % c,
          },
          {
            record: 'cluster_election:zookeeper_election_master_changes:increase5m',
            expr: 'max by (cluster, election) (increase(zookeeper_election_master_changes_total{%(selector)s}[5m]))' % c,
          },
          {
            // The share of time without a master (1 - availability).
            record: 'cluster_election:zookeeper_election_masterless_seconds:rate5m',
            expr: 'max by (cluster, election) (rate(zookeeper_election_masterless_seconds_total{%(selector)s}[5m]))' % c,
          },
        ],
      },
    ],
  },
}
