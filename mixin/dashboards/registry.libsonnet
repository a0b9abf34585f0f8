// Service registries and membership trees: live members against the
// minimum, and churn.
local g = import '../lib/grafana.libsonnet';

function(config)
  local C = g.selector(config) + ',ensemble=~"$ensemble"';
  local gr = C + ',group=~"$group"';
  g.dashboard(
    config.dashboards,
    'registry',
    'ZooKeeper Registry',
    'Service registries and membership trees: live members against the minimum, and churn.',
    [
      g.row('Groups'),
      g.panel('timeseries', 'Members and minimum',
              [['max by (ensemble, group) (zookeeper_group_members{%s})' % gr, '{{group}}'],
               ['max by (ensemble, group) (zookeeper_group_min_members{%s})' % gr, 'min {{group}}']],
              w=24),
      g.panel('timeseries', 'Churn',
              [['sum by (group, change) (max by (ensemble, group, change) (increase(zookeeper_group_member_changes_total{%s}[5m])))' % gr,
                '{{group}} {{change}}']]),
      g.table('Live members', ['max by (ensemble, group, member) (zookeeper_group_member{%s})' % gr],
              [['ensemble', 'ensemble'], ['group', 'group'], ['member', 'member']],
              w=12, sortBy='member', desc='Needs export_members = true.'),
      g.panel('stat', 'Groups per tree', [['max by (ensemble, tree) (zookeeper_tree_groups{%s})' % C, '{{tree}}']],
              w=12, h=4),
      g.panel('stat', 'Below minimum',
              [['count(max by (ensemble, group) (zookeeper_group_members{%s}) < on (ensemble, group) max by (ensemble, group) (zookeeper_group_min_members{%s})) or vector(0)' % [gr, gr], '']],
              w=12, h=4),
    ],
    [
      g.jobVariable(config),
      g.queryVariable('ensemble', 'Ensemble', 'zookeeper_group_members', g.selector(config)),
      g.queryVariable('group', 'Group', 'zookeeper_group_members', C),
    ],
  )
