// zk-election-exporter's monitoring mixin: prometheusAlerts,
// prometheusRules and grafanaDashboards from one _config.
//   jsonnet -J mixin -e '(import "mixin.libsonnet") + { _config+:: { selector: "job=\"zk\"" } }'
(import 'config.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
