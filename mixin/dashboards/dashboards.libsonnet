// grafanaDashboards: file name -> dashboard, as Grafana's file
// provisioning and kube-prometheus expect.
{
  grafanaDashboards+:: {
    'zookeeper-elections.json': (import 'elections.libsonnet')($._config),
    'zookeeper-ensemble.json': (import 'ensemble.libsonnet')($._config),
    'zookeeper-registry.json': (import 'registry.libsonnet')($._config),
  },
}
