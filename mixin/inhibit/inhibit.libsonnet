// Alertmanager inhibit rules: alertmanagerInhibitRules. One condition, one
// page: where one alert's cause is another's (a lost quorum stops every
// member serving and every election updating), the cause silences the
// effects in the same ensemble while it fires. Pushed alerts carry the same
// alertname and ensemble as the rules, so the agent's own are silenced too.
// `cluster` is the multi-cluster convention's label (Prometheus's external
// labels): two Kubernetes clusters may each run an ensemble of one name,
// and one's lost quorum must not silence the other's pages. Alertmanager
// takes a label both alerts lack as equal, so it costs nothing elsewhere.
local anyOf(names) = 'alertname=~"%s"' % std.join('|', names);

{
  alertmanagerInhibitRules+:: [
    {
      // Without a quorum no member serves, no leader exists and no
      // election, group or lock can change: each of those pages follows.
      source_matchers: ['alertname="ZooKeeperQuorumLost"'],
      target_matchers: [anyOf([
        'ZooKeeperServerDown', 'ZooKeeperNotServing', 'ZooKeeperQuorumAtRisk',
        'ZooKeeperNoLeader', 'ZooKeeperMemberLagging',
        'ZooKeeperExporterSessionDown', 'ZooKeeperExporterTreeNotSynced',
      ] + $._inhibitedWhenUnwatched)],
      equal: ['cluster', 'ensemble'],
    },
    {
      // A leader election that does not finish leaves every member
      // refusing clients as not serving.
      source_matchers: ['alertname="ZooKeeperNoLeader"'],
      target_matchers: [anyOf(['ZooKeeperNotServing', 'ZooKeeperQuorumAtRisk'])],
      equal: ['cluster', 'ensemble'],
    },
    {
      // Without the agent's session the trees are not read: what the
      // election, group and lock alerts judge is the last reading.
      source_matchers: ['alertname="ZooKeeperExporterSessionDown"'],
      target_matchers: [anyOf(['ZooKeeperExporterTreeNotSynced'] + $._inhibitedWhenUnwatched)],
      equal: ['cluster', 'ensemble'],
    },
  ],

  // The per-election, group and lock alerts whose readings stop while the
  // cluster cannot be watched. Fencing (epoch regression) and split brain
  // (multiple leaders, two masters by the lease) are never inhibited: they
  // are their own trouble (and the agent judges no lease while it cannot
  // watch the cluster).
  _inhibitedWhenUnwatched:: [
    'ZooKeeperElectionNoMaster', 'ZooKeeperDiscoveredElectionNoMaster',
    'ZooKeeperElectionGhostMaster', 'ZooKeeperElectionMasterFlapping',
    'ZooKeeperElectionNoStandby', 'ZooKeeperElectionRecordDisagrees',
    'ZooKeeperElectionLeaseExpired',
    'ZooKeeperElectionsMasterlessBeyondCap', 'ZooKeeperElectionsNeedAttentionBeyondCap',
    'ZooKeeperElectionErrorBudgetBurn', 'ZooKeeperElectionErrorBudgetBurnSlow',
    'ZooKeeperGroupBelowMinimum', 'ZooKeeperGroupEmpty', 'ZooKeeperGroupChurn',
    'ZooKeeperLockHeldTooLong', 'ZooKeeperLockWaitersPilingUp',
  ],
}
