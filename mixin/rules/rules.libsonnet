// Recording rules: prometheusRules. Only what the dashboards would otherwise
// compute over every election's series on each refresh; each record takes
// the max over agent replicas, so two replicas do not double a count.
local util = import '../lib/util.libsonnet';

{
  prometheusRules+:: {
    local c = $._config,
    groups+: [
      {
        name: 'zookeeper-elections-records',
        rules: [
          {
            // How many elections each identity is master of now.
            record: 'ensemble_identity:zookeeper_election_masters:count',
            expr: 'count by (ensemble, identity) (max by (ensemble, election, identity) (zookeeper_election_master{%(selector)s} == 1))' % c,
          },
          {
            record: 'ensemble_election:zookeeper_election_master_changes:increase5m',
            expr: 'max by (ensemble, election) (increase(zookeeper_election_master_changes_total{%(selector)s}[5m]))' % c,
          },
          {
            // The share of time without a master (1 - availability).
            record: 'ensemble_election:zookeeper_election_masterless_seconds:rate5m',
            expr: 'max by (ensemble, election) (rate(zookeeper_election_masterless_seconds_total{%(selector)s}[5m]))' % c,
          },
        ],
      },
      {
        // Each election set's error ratio over every window the burn-rate
        // alerts and the SLO dashboard use: its elections' share of time
        // without a master. One replica's reading (max), so two agents
        // count once; sets without elections have none.
        name: 'zookeeper-election-slo-records',
        rules: [
          {
            record: 'ensemble_tree:zookeeper_election_masterless:ratio_rate%s' % w,
            expr: 'max by (ensemble, tree) (rate(zookeeper_tree_masterless_seconds_total{%(selector)s}[%(w)s])) / (max by (ensemble, tree) (sum without (state) (zookeeper_tree_elections{%(selector)s})) > 0)' % (c { w: w }),
          }
          for w in std.set([p.long for p in c.slo.page + c.slo.ticket] + [p.short for p in c.slo.page + c.slo.ticket] + [c.slo.window], function(d) util.seconds(d))
        ],
      },
    ],
  },
}
