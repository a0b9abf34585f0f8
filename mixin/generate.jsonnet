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
      group_by: ['alertname', 'cluster', 'ensemble'],
      routes: [
        { matchers: ['severity="critical"'], receiver: 'pager' },
        { matchers: ['severity="info"'], receiver: 'quiet' },
      ],
    },
    receivers: [{ name: 'pager' }, { name: 'tickets' }, { name: 'quiet' }],
    inhibit_rules: mixin.alertmanagerInhibitRules,
  }),

  // The compatibility records for the Prometheus Operator, as an optional
  // kustomize component (deploy/components/compat-rules).
  'deploy/components/compat-rules/prometheusrule.yaml': header + util.yaml({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'zk-election-exporter-compat',
      labels: {
        'app.kubernetes.io/name': 'zk-election-exporter',
        'app.kubernetes.io/component': 'compat-rules',
      },
    },
    spec: { groups: mixin.prometheusCompatRules.groups },
  }),

  // The dashboards as ConfigMaps that Grafana's dashboard sidecar loads
  // (kube-prometheus-stack's finds them by the `grafana_dashboard` label).
  'deploy/components/kube-prometheus-stack/dashboards.yaml': header + std.join('---\n', [
    util.yaml({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'zk-election-exporter-' + std.strReplace(std.strReplace(name, 'zookeeper-', ''), '.json', '') + '-dashboard',
        labels: {
          'app.kubernetes.io/name': 'zk-election-exporter',
          'app.kubernetes.io/component': 'dashboards',
          grafana_dashboard: '1',
        },
      },
      data: { [name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n' },
    })
    for name in std.objectFields(mixin.grafanaDashboards)
  ]),

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

  // The agent's own alerts, taken from their rules: what it pushes is what
  // the rule would say (src/model/alerting.rs).
  'src/model/alerting/catalogue.rs':
    local opt(v, f) = if v == null then 'None' else 'Some(%s)' % f(v);
    local secs(v) = 'Duration::from_secs(%d)' % v;
    local raw(t) = if std.length(std.findSubstr('"#', t)) > 0 then error 'text with "#: ' + t else 'r#"%s"#' % t;
    |||
      // Generated from mixin/ by scripts/generate.sh: do not edit. The texts,
      // severities and holds are the rules' (mixin/alerts/alerts.libsonnet and
      // mixin/config.libsonnet); change them there and regenerate.
      //! The catalogue of the agent's own alerts, one entry per [`Kind`], in
      //! the order of `Kind::ALL`, as the mixin's rules define them.

      use std::time::Duration;

      use super::{Entry, Kind};

      pub(super) const CATALOGUE: [Entry; %d] = [
    ||| % std.length(mixin.prometheusAlerts.agentCatalogue) + std.join('', [
      local indent(block) = std.join('', ['    ' + l + '\n' for l in std.split(block, '\n') if l != '']);
      indent(
      |||
        Entry {
            kind: Kind::%(kind)s,
            alertname: "%(alertname)s",
            severity: "%(severity)s",
            summary: %(summary)s,
            description: %(description)s,
            hold: %(hold)s,
            window: %(window)s,
            switches: %(switches)s,
        },
      ||| % (e {
               summary: raw(e.summary),
               description: raw(e.description),
               hold: opt(e.holdSeconds, secs),
               window: opt(e.windowSeconds, secs),
               switches: opt(e.switches, function(n) '%d' % n),
             }))
      for e in mixin.prometheusAlerts.agentCatalogue
    ]) + '];\n',
} + {
  ['dashboards/' + name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n'
  for name in std.objectFields(mixin.grafanaDashboards)
}
