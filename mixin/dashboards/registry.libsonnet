// Service registries and membership trees: live members against the
// minimum, and churn.
local g = import '../lib/grafana.libsonnet';

function(config)
  local C = '%s,cluster=~"$cluster"' % config.selector;
  local gr = C + ',group=~"$group"';
  g.dashboard(
    config.dashboards,
    'registry',
    'ZooKeeper Registry',
    'Service registries and membership trees: live members against the minimum, and churn.',
    [
      g.row('Groups'),
      g.panel('timeseries', 'Members and minimum',
              [['max by (cluster, group) (zookeeper_group_members{%s})' % gr, '{{group}}'],
               ['max by (cluster, group) (zookeeper_group_min_members{%s})' % gr, 'min {{group}}']],
              w=24),
      g.panel('timeseries', 'Churn',
              [['sum by (group, change) (max by (cluster, group, change) (increase(zookeeper_group_member_changes_total{%s}[5m])))' % gr,
                '{{group}} {{change}}']]),
      g.table('Live members', ['max by (cluster, group, member) (zookeeper_group_member{%s})' % gr],
              [['cluster', 'cluster'], ['group', 'group'], ['member', 'member']],
              w=12, sortBy='member', desc='Needs export_members = true.'),
      g.panel('stat', 'Groups per tree', [['max by (cluster, tree) (zookeeper_tree_groups{%s})' % C, '{{tree}}']],
              w=12, h=4),
      g.panel('stat', 'Below minimum',
              [['count(max by (cluster, group) (zookeeper_group_members{%s}) < on (cluster, group) max by (cluster, group) (zookeeper_group_min_members{%s})) or vector(0)' % [gr, gr], '']],
              w=12, h=4),
    ],
    [
      g.queryVariable('cluster', 'Cluster', 'zookeeper_group_members', config.selector),
      g.queryVariable('group', 'Group', 'zookeeper_group_members', '%s,cluster=~"$cluster"' % config.selector),
    ],
  )
