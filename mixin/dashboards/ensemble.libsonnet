// Every ensemble member from four-letter words: up, role, latency, load,
// znodes, watches, zxid.
local g = import '../lib/grafana.libsonnet';
local util = import '../lib/util.libsonnet';

function(config)
  local C = g.selector(config) + ',ensemble=~"$ensemble"';
  local s = C + ',server=~"$server"';
  local perServer(title, metric, w=12, unit=null, desc='') =
    g.panel('timeseries', title, [['%s{%s}' % [metric, s], '{{server}}']], w=w, unit=unit, desc=desc);
  g.dashboard(
    config.dashboards,
    'ensemble',
    'ZooKeeper Ensemble',
    'Every ensemble member from four-letter words: up, role, latency, load, znodes, watches, zxid.',
    [
      g.row('Members'),
      // Taken once over agent replicas (max by ensemble).
      g.panel('stat', 'Members up',
              [['max by (ensemble) (zookeeper_ensemble_servers_up{%s})' % C, '{{ensemble}}']], w=6, h=4),
      g.panel('stat', 'Leaders',
              [['max by (ensemble) (zookeeper_ensemble_leaders{%s})' % C, '{{ensemble}}']],
              w=6, h=4, desc='Must be 1.'),
      g.panel('stat', 'Zxid spread',
              [['max by (ensemble) (zookeeper_ensemble_zxid_spread{%s})' % C, '{{ensemble}}']],
              w=6, h=4, desc='Transactions the slowest member lags.'),
      g.panel('stat', 'Four-letter-word errors (1h)',
              [['sum(increase(zookeeper_fourlw_errors_total{%s}[1h])) or vector(0)' % s, '']], w=6, h=4,
              desc='Over every agent replica.'),
      g.table('Members',
              ['max by (ensemble, server) (zookeeper_up{%s})' % s,
               'max by (ensemble, server, state) (zookeeper_server_state{%s} == 1)' % s,
               'max by (ensemble, server, version) (zookeeper_server_info{%s})' % s],
              [['ensemble', 'ensemble'], ['server', 'server'],
               ['A', 'up', { mappings: g.valueText([['0', 'DOWN', 'red'], ['1', 'up', 'green']]),
                             custom: { cellOptions: { type: 'color-text' } } }],
               ['state', 'role'], ['version', 'version']],
              sortBy='server',
              desc='Each member once over agent replicas: answering or not, its role and version.'),
      g.row('Load'),
      g.panel('timeseries', 'Latency (recent mean)',
              [[util.recentLatency(s, '$__rate_interval'), '{{op}} {{server}}']],
              unit='ms',
              desc='Mean time of reads and of updates over the last rate interval, from the _sum and _count of ZooKeeper\'s latency summaries (3.6+). A 3.4/3.5 server shows its mean since start (op since_start), which moves slowly.'),
      g.panel('timeseries', 'Requests',
              [['rate(zookeeper_packets_received_total{%s}[5m])' % s, 'received {{server}}'],
               ['rate(zookeeper_packets_sent_total{%s}[5m])' % s, 'sent {{server}}']],
              unit='reqps'),
      perServer('Connections', 'zookeeper_num_alive_connections'),
      perServer('Outstanding requests', 'zookeeper_outstanding_requests'),
      g.row('Data'),
      perServer('Znodes', 'zookeeper_znode_count', w=8),
      perServer('Watches', 'zookeeper_watch_count', w=8),
      perServer('Ephemerals', 'zookeeper_ephemerals_count', w=8),
      perServer('Data size', 'zookeeper_approximate_data_size', w=8, unit='bytes'),
      g.panel('timeseries', 'File descriptors used',
              [['zookeeper_open_file_descriptor_count{%s} / zookeeper_max_file_descriptor_count{%s}' % [s, s], '{{server}}']],
              unit='percentunit', w=8),
      perServer('Zxid counter', 'zookeeper_zxid_counter', w=8,
                desc='Low 32 bits; near 4294967296 the ensemble forces an election.'),
      g.row('Four-letter words'),
      g.panel('timeseries', 'Command health', [['zookeeper_fourlw_up{%s}' % s, '{{server}} {{command}}']]),
      g.panel('timeseries', 'Errors by reason',
              [['sum by (server, reason) (rate(zookeeper_fourlw_errors_total{%s}[5m]))' % s, '{{server}} {{reason}}']]),
    ],
    [
      g.jobVariable(config),
      g.queryVariable('ensemble', 'Ensemble', 'zookeeper_up', g.selector(config)),
      g.queryVariable('server', 'Server', 'zookeeper_up', C),
    ],
  )
