// Who is master of every election, how often mastership moves, masterless
// time, ghost masters, the failover probe, and who holds each lock.
local g = import '../lib/grafana.libsonnet';

function(config)
  local C = g.selector(config) + ',ensemble=~"$ensemble"';
  local e = C + ',election=~"$election"';
  local lk = C + ',lock=~"$lock"';
  // Recorded series carry no job label: they are filtered by ensemble alone.
  local re = 'ensemble=~"$ensemble",election=~"$election"';
  local rc = 'ensemble=~"$ensemble"';
  local quantiles(metric, by, window) = [
    ['histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket{%s}[%s])))' % [q[0], by, metric, C, window],
     'p%s {{%s}}' % [q[1], by]]
    for q in [['0.5', '50'], ['0.9', '90']]
  ];
  local switches = {
    name: 'Master switches',
    datasource: g.datasource,
    enable: true,
    iconColor: 'orange',
    expr: 'max by (ensemble, election) (changes(zookeeper_election_master_changes_total{%s}[1m])) > 0' % e,
    step: '60s',
    titleFormat: 'Master switch',
    textFormat: '{{election}} ({{ensemble}}): who, from whom and why in /api/v1/events',
    tagKeys: 'ensemble,election',
  };
  g.dashboard(
    config.dashboards,
    'elections',
    'ZooKeeper Elections',
    'Who is master of every election, how often mastership moves, masterless time, ghost masters, the failover probe, and who holds each lock.',
    [
      g.row('Overview'),
      // From the tree aggregates: they count every watched election, also
      // past max_elections, where per-election series cover only some. Each
      // is taken once over agent replicas (max), then summed.
      g.panel('stat', 'Elections', [['sum(max by (ensemble, tree, state) (zookeeper_tree_elections{%s}))' % C, '']],
              w=4, h=4, desc='Every watched election (all trees of the selected ensembles).'),
      g.panel('stat', 'Masterless now',
              [['sum(max by (ensemble, tree) (zookeeper_tree_elections{%s,state="masterless"})) or vector(0)' % C, '']],
              w=4, h=4, desc='Elections without any candidate.'),
      g.panel('stat', 'Ghost masters',
              [['sum(max by (ensemble, tree) (zookeeper_tree_elections{%s,state="ghost"})) or vector(0)' % C, '']],
              w=4, h=4, desc='Masters whose session is disconnected or silent (needs the ghost check).'),
      g.panel('stat', 'Switches in range',
              [['sum(max by (ensemble, tree) (increase(zookeeper_tree_master_changes_total{%s}[$__range]))) or vector(0)' % C, '']],
              w=4, h=4),
      g.panel('stat', 'With per-election series',
              [['sum(max by (ensemble) (zookeeper_exporter_elections_exported{%s}))' % C, '']],
              w=4, h=4, desc='All elections up to max_elections; past it, those needing attention first.'),
      g.panel('timeseries', 'Elections needing attention, by state',
              [['sum by (state) (max by (ensemble, tree, state) (zookeeper_tree_elections{%s,state!="ok"}))' % C, '{{state}}']],
              w=4, h=4, desc='Each election counted once, in its most urgent state.'),
      g.row('Masters'),
      // One row per election, masterless ones too (has_master exists for
      // every style, candidates only for sequential ones); each value taken
      // once over agent replicas.
      g.table('Elections and their masters',
              ['max by (ensemble, election) (zookeeper_election_has_master{%s})' % e,
               'max by (ensemble, election, znode, identity) (zookeeper_election_master{%s})' % e,
               'max by (ensemble, election) (zookeeper_election_master_since_timestamp_seconds{%s}) * 1000' % e,
               'max by (ensemble, election) (zookeeper_election_candidates{%s})' % e],
              [['ensemble', 'ensemble'],
               ['election', 'election'],
               ['A', 'master', { mappings: g.valueText([['0', 'MASTERLESS', 'red'], ['1', 'yes', 'green']]),
                                 custom: { cellOptions: { type: 'color-text' } } }],
               ['identity', 'identity'],
               ['znode', 'node'],
               ['C', 'master since', { unit: 'dateTimeFromNow' }],
               ['D', 'candidates', { unit: 'none', decimals: 0 }]],
              h=10, sortBy='election',
              desc='Every election with series: whether it has a master, who (identity and node), since when, and candidates (sequential elections; node-style ones keep no candidate nodes).'),
      g.table('Current masters by identity',
              ['ensemble_identity:zookeeper_election_masters:count{ensemble=~"$ensemble"}'],
              [['ensemble', 'ensemble'], ['identity', 'identity'], ['A', 'elections mastered', { unit: 'none', decimals: 0 }]],
              sortBy='elections mastered',
              desc='How many elections each identity (device, host, broker) is master of now, over every election of the selected ensembles: a single-active deployment expects one per account; one identity mastering many may be a misconfiguration or the last survivor.'),
      g.panel('state-timeline', 'Master identity per election',
              [['max by (election, identity) (zookeeper_election_master{%s})' % e, '{{election}} {{identity}}']],
              w=24, h=10),
      g.panel('timeseries', 'Switches',
              [['sum by (election) (ensemble_election:zookeeper_election_master_changes:increase5m{%s})' % re, '{{election}}']],
              desc='Master switches per 5 minutes.'),
      g.panel('timeseries', 'Candidates', [['zookeeper_election_candidates{%s}' % e, '{{election}}']]),
      g.row('Availability'),
      g.panel('timeseries', 'Masterless share',
              [['ensemble_election:zookeeper_election_masterless_seconds:rate5m{%s}' % re, '{{election}}']],
              unit='percentunit', desc="Share of time without a master; 1 - this is the election's availability."),
      g.panel('timeseries', 'Masterless periods (p50, p90)',
              quantiles('zookeeper_tree_masterless_duration_seconds', 'tree', '30m'), unit='s'),
      g.panel('timeseries', 'Ghost masters: time disconnected',
              [['zookeeper_election_master_disconnected_seconds{%s}' % e, '{{election}}']],
              unit='s', desc="Only while a master's session is disconnected or silent."),
      g.panel('timeseries', 'Duplicate identities',
              [['zookeeper_election_duplicate_identities{%s} > 0' % e, '{{election}}']],
              desc='Candidates sharing an identity (zombie sessions).'),
      g.panel('timeseries', 'Failover probe',
              quantiles('zookeeper_probe_failover_seconds', 'ensemble', '15m'),
              unit='s', desc='Needs [clusters.probe].'),
      g.panel('timeseries', 'Herd: watchers of the election node',
              [['zookeeper_election_parent_watchers{%s}' % e, '{{election}}']],
              desc='Needs ghost_check.watches.'),
      g.row('SLO'),
      // Election sets with an objective (`slo` in the agent's
      // configuration); the error ratio is recorded per set and window.
      g.panel('stat', 'Objective', [['max by (ensemble, tree) (zookeeper_tree_slo_objective{%s})' % C, '{{tree}}']],
              w=6, h=6, unit='percentunit', desc='The share of time each election of the set should have a master.'),
      g.panel('stat', 'Error budget left (%s)' % config.slo.window,
              [['1 - ensemble_tree:zookeeper_election_masterless:ratio_rate%s{%s} / on (ensemble, tree) (1 - max by (ensemble, tree) (zookeeper_tree_slo_objective{%s}))' % [config.slo.window, rc, C], '{{tree}}']],
              w=6, h=6, unit='percentunit', desc='What is left of the budget over the window; below 0 the objective is missed.'),
      g.panel('timeseries', 'Burn rate',
              [['ensemble_tree:zookeeper_election_masterless:ratio_rate%s{%s} / on (ensemble, tree) (1 - max by (ensemble, tree) (zookeeper_tree_slo_objective{%s}))' % [w, rc, C], '{{tree}} %s' % w]
               for w in [p.long for p in config.slo.page]],
              w=12, h=6, desc='How many times faster than the objective allows the set spends its budget; the page fires at 14.4 (1h) and 6 (6h).'),
      g.row('Locks'),
      g.panel('stat', 'Locks held', [['sum(max by (ensemble, lock) (zookeeper_lock_held{%s})) or vector(0)' % lk, '']],
              w=6, h=4, desc='A free lock is normal; this is how many are held now.'),
      g.panel('stat', 'Waiting contenders',
              [['sum(max by (ensemble, lock) (zookeeper_lock_waiters{%s})) or vector(0)' % lk, '']], w=6, h=4),
      g.panel('timeseries', 'Hold time of the current holder',
              [['zookeeper_lock_hold_seconds{%s}' % lk, '{{lock}}']], unit='s', w=12, h=4,
              desc='Only while held; timed from when the agent saw the hold start.'),
      g.panel('timeseries', 'Lock hand-overs',
              [['max by (ensemble, lock) (increase(zookeeper_lock_acquisitions_total{%s}[5m]))' % lk, '{{lock}}']],
              desc='Acquisitions per 5 minutes.'),
      g.panel('timeseries', 'Waiters per lock', [['zookeeper_lock_waiters{%s}' % lk, '{{lock}}']]),
      g.row('Agent'),
      g.panel('state-timeline', 'Session state',
              [['max by (ensemble, state) (zookeeper_session_state{%s}) == 1' % C, '{{ensemble}} {{state}}']],
              w=12, h=6),
      g.panel('timeseries', 'Reconnects and expirations',
              [['increase(zookeeper_session_reconnects_total{%s}[15m])' % C, 'reconnects {{ensemble}} {{instance}}'],
               ['increase(zookeeper_session_expirations_total{%s}[15m])' % C, 'expirations {{ensemble}} {{instance}}']],
              w=12, h=6),
      g.panel('timeseries', 'Agent request latency (p99)',
              [['histogram_quantile(0.99, sum by (le, ensemble, op) (rate(zookeeper_session_request_duration_seconds_bucket{%s}[5m])))' % C,
                '{{ensemble}} {{op}}']],
              unit='s', w=12, h=6),
      g.panel('timeseries', 'Trees synced', [['zookeeper_tree_synced{%s}' % C, '{{ensemble}} {{tree}} {{instance}}']], w=12, h=6),
      g.table('Watched trees', ['max by (ensemble, tree, kind, style, source) (zookeeper_tree_info{%s})' % C],
              [['ensemble', 'ensemble'], ['tree', 'tree'], ['kind', 'kind'], ['style', 'style'], ['source', 'source']],
              sortBy='tree',
              desc='Every tree: kind (election, group, lock), election style (sequential, node) and source (configured, discovered, recognised).'),
    ],
    [
      // has_master: every election with series has it, node-style ones
      // (Kafka, HBase, HDFS) too, which have no candidates series.
      g.jobVariable(config),
      g.queryVariable('ensemble', 'Ensemble', 'zookeeper_election_has_master', g.selector(config)),
      g.queryVariable('election', 'Election', 'zookeeper_election_has_master', C),
      g.queryVariable('lock', 'Lock', 'zookeeper_lock_held', C),
    ],
    [switches],
  )
