// Everything a user tunes. Override with
//   (import 'mixin.libsonnet') + { _config+:: { selector: 'job="zk"' } }
// and regenerate; docs/alerts.md lists every key.
{
  _config+:: {
    // Selects this exporter's series in every alert, recording rule and
    // dashboard query. `up` is shared by every scrape job, so
    // ZooKeeperExporterDown only works when this names yours.
    selector: 'job="zk-election-exporter"',

    // Where docs/runbooks.md is published; each alert links to
    // <runbookURL>#<alertname in lower case>. Absolute: the link reaches
    // Alertmanager and the pager as it is, where a relative path leads
    // nowhere. Point it at your own copy when you publish one.
    runbookURL: 'https://github.com/zk-election-exporter/zk-election-exporter/blob/main/docs/runbooks.md',

    // ZooKeeperServerDown and ZooKeeperNotServing judge the same window: a
    // member that served at no scrape in it pages as down when it answered
    // at no scrape either, as not serving when it answered "not currently
    // serving" at one. One window for both keeps them exclusive; it must
    // be longer than a routine restart (JVM start and sync with the leader).
    memberWindow: '2m',

    // The alerts the agent decides and pushes itself with [alerting]
    // (docs/alerts.md, "One voice"): while any replica pushes for an
    // ensemble, their rules stay silent, so Alertmanager hears one voice.
    // Where no agent pushes, the rules decide, and ride out a gap in the
    // agent's series (a restart) of up to `agentGap` without resolving.
    agentGap: '2m',

    // Per alert: `for` (how long the condition must hold before it fires;
    // null for alerts that judge a window instead) and thresholds. Text in
    // summaries and descriptions follows these values.
    alerts: {
      ZooKeeperServerDown: { 'for': '1m' },
      ZooKeeperNotServing: { 'for': '1m' },
      ZooKeeperQuorumLost: { 'for': '30s' },
      ZooKeeperQuorumAtRisk: { 'for': '1m' },
      ZooKeeperNoLeader: { 'for': '1m' },
      ZooKeeperMultipleLeaders: { 'for': '1m' },
      // Mean latency of reads or of updates over `rate` (see
      // util.recentLatency), where at least `minRate` requests/s were served.
      ZooKeeperHighLatency: { 'for': '5m', latencyMs: 100, rate: '5m', minRate: '0.1' },
      ZooKeeperOutstandingRequests: { 'for': '5m', requests: 10 },
      ZooKeeperFileDescriptorsNearLimit: { 'for': '5m', ratio: 0.85 },
      // 90% of 2^32: when the low 32 bits wrap, the ensemble forces an election.
      ZooKeeperZxidCounterNearWrap: { 'for': '5m', counter: 3865470566 },
      ZooKeeperMemberLagging: { 'for': '2m', transactions: 1000 },
      // Fires when ephemerals fall below `ratio` of `window` ago (at least `min` then).
      ZooKeeperEphemeralsDrop: { 'for': null, ratio: 0.5, window: '5m', min: 10 },
      ZooKeeperTLSHandshakeFailing: { 'for': '5m' },
      ZooKeeperFourLetterWordsDenied: { 'for': '5m' },
      ZooKeeperElectionNoMaster: { 'for': '1m' },
      ZooKeeperDiscoveredElectionNoMaster: { 'for': '5m' },
      // `switches` or more master switches within `window`.
      ZooKeeperElectionMasterFlapping: { 'for': null, switches: 4, window: '10m' },
      ZooKeeperElectionGhostMaster: { 'for': '30s' },
      ZooKeeperElectionDuplicateIdentity: { 'for': '5m' },
      ZooKeeperElectionNoStandby: { 'for': '15m' },
      // A regression counted within `window`.
      ZooKeeperElectionEpochRegression: { 'for': null, window: '10m' },
      ZooKeeperElectionRecordDisagrees: { 'for': '5m' },
      // Alone (no agent pushing), these two hold while the lease source
      // fails (no reading is no evidence that it ended); their `for` is the
      // agent's default `lease.split_brain_for` and `expired_for`.
      ZooKeeperElectionSplitBrain: { 'for': '1m' },
      ZooKeeperElectionLeaseExpired: { 'for': '2m' },
      // Only elections with more than `candidates` candidates.
      ZooKeeperElectionHerdEffect: { 'for': '15m', candidates: 2 },
      ZooKeeperElectionsMasterlessBeyondCap: { 'for': '1m' },
      ZooKeeperElectionsNeedAttentionBeyondCap: { 'for': '5m' },
      // 90th percentile of the failover probe, over `window`.
      ZooKeeperElectionSlowFailover: { 'for': '15m', seconds: 1, window: '15m' },
      // Multi-window, multi-burn-rate alerts on election sets with an
      // objective (see `slo` below): the page on the fast pairs, the
      // ticket on the slow ones.
      ZooKeeperElectionErrorBudgetBurn: { 'for': '2m' },
      ZooKeeperElectionErrorBudgetBurnSlow: { 'for': '15m' },
      ZooKeeperGroupBelowMinimum: { 'for': '2m' },
      ZooKeeperGroupEmpty: { 'for': '2m' },
      // `changes` or more joins and leaves within `window`.
      ZooKeeperGroupChurn: { 'for': null, changes: 21, window: '10m' },
      ZooKeeperLockHeldTooLong: { 'for': '1m' },
      // More than `waiters` contenders for the whole `window`.
      ZooKeeperLockWaitersPilingUp: { 'for': null, waiters: 10, window: '10m' },
      ZooKeeperExporterSessionDown: { 'for': '2m' },
      ZooKeeperExporterTreeNotSynced: { 'for': '5m' },
      ZooKeeperExporterLeaseSourceDown: { 'for': '5m' },
      ZooKeeperExporterSessionExpired: { 'for': null },
      // The agent's Kerberos ticket expires within `before` and within
      // the last `ratio` of the life the agent has seen of it (a keytab's
      // is renewed at half its life, so never gets there), or its checks
      // fail. Renewers of a credential cache must renew earlier than
      // `before` ahead of expiry.
      ZooKeeperExporterKerberosTicketExpiring: { 'for': '5m', before: '20m', ratio: 0.25 },
      // No replica delivered any of its own alerts to any Alertmanager
      // over `window` while deliveries failed: the agent's pages reach
      // nobody (the rules yield to it, see agentGap).
      ZooKeeperExporterAlertsUndelivered: { 'for': '2m', window: '5m' },
      ZooKeeperExporterDown: { 'for': '2m' },
      ZooKeeperExporterReplicaDown: { 'for': '5m' },
    },

    // Election SLOs. An election set with `slo = { availability = … }` in
    // the agent's configuration exports its objective
    // (zookeeper_tree_slo_objective); its error ratio is its share of time
    // without a master (zookeeper_tree_masterless_seconds_total over its
    // elections). Each pair (the Google SRE workbook's, for a 30-day
    // window) fires while both its long and short window burn the budget
    // faster than `burn` times the pace that spends it exactly over
    // `window`: 14.4x for an hour spends 2% of it, 6x for 6 hours 5%.
    slo: {
      window: '30d',
      page: [
        { long: '1h', short: '5m', burn: 14.4 },
        { long: '6h', short: '30m', burn: 6 },
      ],
      ticket: [
        { long: '1d', short: '2h', burn: 3 },
        { long: '3d', short: '6h', burn: 1 },
      ],
    },

    dashboards: {
      // Grafana refresh interval and default time range.
      refresh: '30s',
      from: 'now-6h',
      timezone: 'browser',
      tags: ['zookeeper', 'zk-election-exporter'],
      // The `datasource` variable lists data sources of this type whose
      // name matches `datasourceRegex` ('' = all).
      datasourceRegex: '',
      // Dashboard uids are <uidPrefix><name>.
      uidPrefix: 'zkee-',
    },
  },
}
