// zk-election-exporter's monitoring mixin: prometheusAlerts,
// prometheusRules and grafanaDashboards from one _config, the
// Alertmanager inhibit rules that go with the alerts
// (alertmanagerInhibitRules), and, for a migration from other exporters,
// prometheusCompatRules (their metric names, recorded).
//   jsonnet -J mixin -e '(import "mixin.libsonnet") + { _config+:: { selector: "job=\"zk\"" } }'
(import 'config.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'rules/compat.libsonnet') +
(import 'dashboards/dashboards.libsonnet') +
(import 'inhibit/inhibit.libsonnet')
