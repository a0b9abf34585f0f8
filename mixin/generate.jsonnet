// The mixin's committed output, one entry per file (paths from the
// repository root). scripts/generate.sh writes them; tests/mixin.rs fails
// when a committed file differs from a fresh generation.
local mixin = import 'mixin.libsonnet';
local util = import 'lib/util.libsonnet';

local groups = mixin.prometheusAlerts.groups + mixin.prometheusRules.groups;
local header = |||
  # Generated from mixin/ by scripts/generate.sh: do not edit. Tune thresholds,
  # `for:` durations, the job selector and the runbook URL in
  # mixin/config.libsonnet, or override _config when importing the mixin
  # (docs/alerts.md), then regenerate.
|||;

{
  'alerts/zookeeper.rules.yml': header + util.yaml({ groups: groups }),

  // The old exporters' names, recorded: only for a migration (docs/migrating.md).
  'alerts/compat.rules.yml': header + |||
    # Optional, for a migration only: the metric names of dabealu's and
    # carlpett's zookeeper exporters and of ZooKeeper's own Prometheus
    # provider, recorded from this agent's series so existing dashboards and
    # alert rules keep working while they move (docs/migrating.md). Load it
    # beside zookeeper.rules.yml; remove it once nothing reads the old names.
  ||| + util.yaml({ groups: mixin.prometheusCompatRules.groups }),

  // The inhibit rules alone, to add to an Alertmanager configuration.
  'alerts/inhibit_rules.yml': header + util.yaml({ inhibit_rules: mixin.alertmanagerInhibitRules }),

  // The compose stack's Alertmanager: routes by severity and the inhibit rules.
  'deploy/alertmanager.yml': header + |||
    # Route by severity: critical pages, warning tickets, info stays on dashboards.
    # Replace the receivers with your pager and ticket integrations.
  ||| + util.yaml({
    route: {
      receiver: 'tickets',
      group_by: ['alertname', 'cluster'],
      routes: [
        { matchers: ['severity="critical"'], receiver: 'pager' },
        { matchers: ['severity="info"'], receiver: 'quiet' },
      ],
    },
    receivers: [{ name: 'pager' }, { name: 'tickets' }, { name: 'quiet' }],
    inhibit_rules: mixin.alertmanagerInhibitRules,
  }),

  // The same groups for the Prometheus Operator.
  'deploy/kubernetes/prometheusrule.yaml': header + util.yaml({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'zk-election-exporter',
      labels: {
        'app.kubernetes.io/name': 'zk-election-exporter',
        'app.kubernetes.io/component': 'alerting',
      },
    },
    spec: { groups: groups },
  }),
} + {
  ['dashboards/' + name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n'
  for name in std.objectFields(mixin.grafanaDashboards)
}
