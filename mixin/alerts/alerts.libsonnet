// The alert rules: prometheusAlerts. Expressions aggregate by what an
// alert is about (ensemble, server, election, group, lock), so several agent
// replicas scraping one ensemble raise one alert, with the same identifying
// labels as the agent's own pushed alerts (Alertmanager deduplicates them).
local util = import '../lib/util.libsonnet';

{
  prometheusAlerts+:: {
    local c = $._config,

    // Parameters an alert's text and expression are formatted with: the
    // selector, its entry in _config.alerts, and readable forms of both.
    local params(name) =
      local a = c.alerts[name];
      { selector: c.selector, memberWindow: c.memberWindow } + a
      // How long a member has not served when its alert fires: the window, then `for`.
      + (if a['for'] != null then { memberText: util.humanSeconds(util.seconds(c.memberWindow) + util.seconds(a['for'])) } else {})
      + (if a['for'] != null then { forText: util.human(a['for']) } else {})
      + (if std.objectHas(a, 'window') then { windowText: util.human(a.window) } else {})
      + (if std.objectHas(a, 'rate') then { rateText: util.human(a.rate) } else {})
      + (if std.objectHas(a, 'before') then { beforeSeconds: util.seconds(a.before), beforeText: util.human(a.before) } else {})
      + { sloWindowText: util.human(c.slo.window) }
      + (if std.objectHas(a, 'switches') then { over: a.switches - 1 } else {})
      + (if std.objectHas(a, 'changes') then { over: a.changes - 1 } else {})
      + (if std.objectHas(a, 'counter') then { percent: std.floor(a.counter / 4294967296 * 100 + 0.5) } else {})
      + (if std.objectHas(a, 'ratio') then {
           ratioText: if a.ratio == 0.5 then 'half' else '%d%%' % std.floor(a.ratio * 100 + 0.5),
           dropText: if a.ratio == 0.5 then 'by half' else 'below %d%%' % std.floor(a.ratio * 100 + 0.5),
         } else {}),

    // Multi-window burn: each pair fires while both its windows' error
    // ratio exceeds `burn` times the set's budget (1 - objective).
    local burns(pairs) = std.join(' or ', [
      '(ensemble_tree:zookeeper_election_masterless:ratio_rate%(long)s > on (ensemble, tree) (%(burn)s * (1 - max by (ensemble, tree) (zookeeper_tree_slo_objective{%%(selector)s}))) and on (ensemble, tree) ensemble_tree:zookeeper_election_masterless:ratio_rate%(short)s > on (ensemble, tree) (%(burn)s * (1 - max by (ensemble, tree) (zookeeper_tree_slo_objective{%%(selector)s}))))' % p
      for p in pairs
    ]),

    // The alerts the agent decides itself, in the order of its `Kind`
    // (variant): src/model/alerting/catalogue.rs is generated from these
    // rules, so the agent's names, severities, texts and holds are theirs.
    local agentKinds = [
      ['NoMaster', 'ZooKeeperElectionNoMaster'],
      ['GhostMaster', 'ZooKeeperElectionGhostMaster'],
      ['DuplicateIdentity', 'ZooKeeperElectionDuplicateIdentity'],
      ['MasterFlapping', 'ZooKeeperElectionMasterFlapping'],
      ['EpochRegression', 'ZooKeeperElectionEpochRegression'],
      ['RecordDisagrees', 'ZooKeeperElectionRecordDisagrees'],
      ['SplitBrain', 'ZooKeeperElectionSplitBrain'],
      ['LeaseExpired', 'ZooKeeperElectionLeaseExpired'],
      ['SessionDown', 'ZooKeeperExporterSessionDown'],
    ],
    local pushed = std.set([k[1] for k in agentKinds]),
    // Judged from the lease table: while every replica's source of the
    // ensemble fails and no verdict is left, a firing alert holds, as the
    // agent's does (its last reading stands until the next one).
    local fromLease = std.set(['ZooKeeperElectionSplitBrain', 'ZooKeeperElectionLeaseExpired']),
    local leaseHold(name) =
      ' or (max by (ensemble, election) (ALERTS{alertname="%s",alertstate="firing"}) unless on (ensemble, election) max by (ensemble, election) (zookeeper_election_lease_state{%%(selector)s}) and on (ensemble) min by (ensemble) (zookeeper_lease_up{%%(selector)s}) == 0)' % name,
    // A firing split brain also holds while the verdict is `unconfirmed`:
    // an agent that has just started has not yet seen an election of the
    // set agree, so it cannot confirm the split brain, but nothing shows
    // that it ended (the other holder still renews), as the agent's own
    // copy holds.
    local unconfirmedHold(name) =
      if name == 'ZooKeeperElectionSplitBrain' then
        ' or (max by (ensemble, election) (ALERTS{alertname="%s",alertstate="firing"}) and on (ensemble, election) max by (ensemble, election) (zookeeper_election_lease_state{%%(selector)s,state="unconfirmed"}) == 1)' % name
      else '',
    // A firing ghost also holds while no replica has judged the master's
    // session (its series absent while a master is named): an agent that
    // has just started, or whose rounds cannot tell, has no evidence that
    // the ghost came back, as the agent's own copy holds. It ends once a
    // round shows the master live, or no master is left.
    local unjudgedHold(name) =
      if name == 'ZooKeeperElectionGhostMaster' then
        ' or (max by (ensemble, election) (ALERTS{alertname="%s",alertstate="firing"}) and on (ensemble, election) (group by (ensemble, election) (zookeeper_election_master{%%(selector)s}) unless on (ensemble, election) group by (ensemble, election) (zookeeper_election_master_session_connected{%%(selector)s})))' % name
      else '',
    // Judged over a window of counted changes: while the agents were
    // blind to the ensemble (no replica's session connected through the
    // whole window), the changes they did not see are no evidence that
    // the trouble ended, so a firing alert holds until some replica has
    // watched a whole window again, as the agent's own copy does.
    local windowed = std.set(['ZooKeeperElectionMasterFlapping', 'ZooKeeperElectionEpochRegression']),
    local windowHold(name) =
      if std.setMember(name, windowed) then
        ' or (max by (ensemble, election) (ALERTS{alertname="%s",alertstate="firing"}) and on (ensemble) max by (ensemble) (min_over_time(sum without (state) (zookeeper_session_state{%%(selector)s,state=~"connected|read_only"})[%%(window)s:])) == 0)' % name
      else '',
    // One voice: silent while an agent pushes for the ensemble. A rule
    // over a window reads samples from the whole window, also across a
    // gap in the scrapes (the agent's series stale) or an agent restart,
    // so it stays silent while an agent pushed at any time in it.
    local pushing(name) =
      if std.setMember(name, windowed) then 'max_over_time(zookeeper_exporter_alerts_active{%(selector)s}[%(window)s])'
      else 'zookeeper_exporter_alerts_active{%(selector)s}',
    local oneVoice(name, expr) =
      if std.setMember(name, pushed) then
        '(%s%s%s%s%s) unless on (ensemble) group by (ensemble) (%s)'
        % [expr, if std.setMember(name, fromLease) then leaseHold(name) else '', unconfirmedHold(name), unjudgedHold(name), windowHold(name), pushing(name)]
      else expr,

    local alert(name, severity, expr, summary, description) =
      local p = params(name);
      {
        alert: name,
        expr: oneVoice(name, expr) % p,
        [if p['for'] != null then 'for']: p['for'],
        [if std.setMember(name, pushed) then 'keep_firing_for']: c.agentGap,
        labels: { severity: severity },
        annotations: {
          summary: summary % p,
          description: description % p,
          runbook_url: '%s#%s' % [c.runbookURL, std.asciiLower(name)],
        },
      },

    // The agent's catalogue: each of its alerts as its rule says it, with
    // the hold and window it judges by (seconds; null where none).
    agentCatalogue:: [
      local rule = [r for g in self.groups for r in g.rules if std.objectHas(r, 'alert') && r.alert == k[1]][0];
      local a = c.alerts[k[1]];
      {
        kind: k[0],
        alertname: k[1],
        severity: rule.labels.severity,
        summary: rule.annotations.summary,
        description: rule.annotations.description,
        holdSeconds: if a['for'] == null then null else util.seconds(a['for']),
        windowSeconds: if std.objectHas(a, 'window') then util.seconds(a.window) else null,
        switches: if std.objectHas(a, 'switches') then a.switches else null,
      }
      for k in agentKinds
    ],

    groups+: [
        {
          name: 'zookeeper-ensemble',
          rules: [
            // Down and NotServing share one window and one condition (the
            // member served at no scrape of it, and it was read before the
            // window began, so a reading that started a moment ago is no
            // evidence) and split it by whether it answered at any scrape:
            // exclusive by construction, one page each.
            alert('ZooKeeperServerDown', 'critical', 'max by (ensemble, server) (max_over_time(zookeeper_up{%(selector)s}[%(memberWindow)s])) == 0 and on (ensemble, server) max by (ensemble, server) (zookeeper_up{%(selector)s} offset %(memberWindow)s) unless on (ensemble, server) max by (ensemble, server) (max_over_time(zookeeper_server_not_serving{%(selector)s}[%(memberWindow)s])) == 1',
                  'ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} is down',
                  '{{ $labels.server }} in ensemble {{ $labels.ensemble }} has answered no four-letter word for %(memberText)s: the process is gone, hung or unreachable.'),
            alert('ZooKeeperNotServing', 'critical', 'max by (ensemble, server) (max_over_time(zookeeper_up{%(selector)s}[%(memberWindow)s])) == 0 and on (ensemble, server) max by (ensemble, server) (zookeeper_up{%(selector)s} offset %(memberWindow)s) and on (ensemble, server) max by (ensemble, server) (max_over_time(zookeeper_server_not_serving{%(selector)s}[%(memberWindow)s])) == 1',
                  'ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} is not serving',
                  '{{ $labels.server }} in ensemble {{ $labels.ensemble }} runs but has served no client for %(memberText)s, longer than a restart takes: it cannot join the quorum, or it restarts in a loop.'),
            alert('ZooKeeperQuorumLost', 'critical', '(max by (ensemble) (zookeeper_ensemble_servers_up{%(selector)s}) + (max by (ensemble) (zookeeper_ensemble_servers_unverified{%(selector)s}) or max by (ensemble) (zookeeper_ensemble_servers_up{%(selector)s}) * 0)) < floor(max by (ensemble) (zookeeper_ensemble_servers{%(selector)s}) / 2) + 1 and max by (ensemble) (zookeeper_ensemble_servers{%(selector)s}) > 1',
                  'ZooKeeper ensemble {{ $labels.ensemble }} has lost its quorum',
                  'Only {{ $value }} members of {{ $labels.ensemble }} answer: fewer than a majority, so the ensemble serves no writes and no sessions.'),
            alert('ZooKeeperQuorumAtRisk', 'warning', '(max by (ensemble) (zookeeper_ensemble_servers_up{%(selector)s}) + (max by (ensemble) (zookeeper_ensemble_servers_unverified{%(selector)s}) or max by (ensemble) (zookeeper_ensemble_servers_up{%(selector)s}) * 0)) == floor(max by (ensemble) (zookeeper_ensemble_servers{%(selector)s}) / 2) + 1 and max by (ensemble) (zookeeper_ensemble_servers{%(selector)s}) > 1',
                  'ZooKeeper ensemble {{ $labels.ensemble }} is one failure away from losing quorum',
                  '{{ $value }} members of {{ $labels.ensemble }} answer, exactly a majority: one more failure stops the ensemble.'),
            alert('ZooKeeperNoLeader', 'critical', 'max by (ensemble) (zookeeper_ensemble_leaders{%(selector)s}) == 0 and max by (ensemble) (zookeeper_ensemble_servers{%(selector)s}) > 1',
                  'ZooKeeper ensemble {{ $labels.ensemble }} has no leader',
                  'No member of {{ $labels.ensemble }} reports itself leader: no quorum, or a leader election that does not finish.'),
            alert('ZooKeeperMultipleLeaders', 'critical', 'max by (ensemble) (zookeeper_ensemble_leaders{%(selector)s}) > 1',
                  'ZooKeeper ensemble {{ $labels.ensemble }} reports {{ $value }} leaders',
                  '{{ $value }} members of {{ $labels.ensemble }} each report themselves leader: a split ensemble or a stale member.'),
            alert('ZooKeeperHighLatency', 'warning', 'max by (ensemble, server) %s > %%(latencyMs)s' % util.recentLatency('%(selector)s', c.alerts.ZooKeeperHighLatency.rate, c.alerts.ZooKeeperHighLatency.minRate),
                  'ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} answers slowly',
                  'Requests to {{ $labels.server }} ({{ $labels.ensemble }}) have taken {{ $value | printf "%%.0f" }} ms on average (reads or updates, over %(rateText)s), over %(latencyMs)s ms for %(forText)s.'),
            alert('ZooKeeperOutstandingRequests', 'warning', 'max by (ensemble, server) (zookeeper_outstanding_requests{%(selector)s}) > %(requests)s',
                  'ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} queues requests',
                  '{{ $labels.server }} ({{ $labels.ensemble }}) has had {{ $value }} outstanding requests, over %(requests)s for %(forText)s: it cannot keep up.'),
            alert('ZooKeeperFileDescriptorsNearLimit', 'warning', 'max by (ensemble, server) (zookeeper_open_file_descriptor_count{%(selector)s} / zookeeper_max_file_descriptor_count{%(selector)s}) > %(ratio)s',
                  'ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} is running out of file descriptors',
                  '{{ $labels.server }} ({{ $labels.ensemble }}) uses {{ $value | humanizePercentage }} of its file descriptors.'),
            alert('ZooKeeperZxidCounterNearWrap', 'warning', 'max by (ensemble, server) (zookeeper_zxid_counter{%(selector)s}) > %(counter)s',
                  'ZooKeeper zxid counter of {{ $labels.ensemble }} nears its 32-bit limit',
                  'The zxid counter of {{ $labels.server }} ({{ $labels.ensemble }}) passed %(percent)s%% of 2^32; when it wraps the ensemble forces a leader election.'),
            alert('ZooKeeperMemberLagging', 'warning', 'min by (ensemble) (zookeeper_ensemble_zxid_spread{%(selector)s}) > %(transactions)s',
                  'A member of ZooKeeper ensemble {{ $labels.ensemble }} lags behind',
                  'The slowest current member of {{ $labels.ensemble }} is {{ $value }} transactions behind the fastest.'),
            alert('ZooKeeperEphemeralsDrop', 'warning', 'max by (ensemble) (zookeeper_ephemerals_count{%(selector)s}) < %(ratio)s * max by (ensemble) (zookeeper_ephemerals_count{%(selector)s} offset %(window)s) and max by (ensemble) (zookeeper_ephemerals_count{%(selector)s} offset %(window)s) > %(min)s',
                  'Ephemeral nodes of {{ $labels.ensemble }} dropped %(dropText)s',
                  '{{ $labels.ensemble }} holds {{ $value }} ephemeral nodes, less than %(ratioText)s of %(windowText)s ago: many sessions expired at once.'),
            alert('ZooKeeperTLSHandshakeFailing', 'warning', 'max by (ensemble, server) (increase(zookeeper_fourlw_errors_total{%(selector)s,reason="tls"}[5m])) > 0',
                  'TLS handshakes with ZooKeeper server {{ $labels.server }} of {{ $labels.ensemble }} fail',
                  'The agent cannot verify {{ $labels.server }} ({{ $labels.ensemble }}) over TLS: its certificate is not signed by tls.ca_file, has expired or lacks the name dialled, or it refuses the agent\'s client certificate. Its state is unknown (zookeeper_up is absent), not down.'),
            alert('ZooKeeperFourLetterWordsDenied', 'info', 'max by (ensemble, server, command) (increase(zookeeper_fourlw_errors_total{%(selector)s,reason="not_allowed"}[10m])) > 0',
                  'Four-letter word {{ $labels.command }} is refused by {{ $labels.server }}',
                  '{{ $labels.server }} ({{ $labels.ensemble }}) refuses {{ $labels.command }}: add it to 4lw.commands.whitelist or set four_letter_words.admin_url.'),
          ],
        },
        {
          name: 'zookeeper-elections',
          rules: [
            alert('ZooKeeperElectionNoMaster', 'critical', 'max by (ensemble, election) (zookeeper_election_has_master{%(selector)s}) == 0 unless on (ensemble, election) max by (ensemble, election) (zookeeper_election_discovered{%(selector)s})',
                  'Election {{ $labels.election }} of {{ $labels.ensemble }} has no master',
                  'No candidate holds {{ $labels.election }} in {{ $labels.ensemble }}: nobody drives it until an instance joins.'),
            alert('ZooKeeperDiscoveredElectionNoMaster', 'warning', 'max by (ensemble, election) (zookeeper_election_has_master{%(selector)s}) == 0 and on (ensemble, election) max by (ensemble, election) (zookeeper_election_discovered{%(selector)s})',
                  'Discovered election {{ $labels.election }} of {{ $labels.ensemble }} has no master',
                  'No candidate holds {{ $labels.election }} in {{ $labels.ensemble }}, a tree discovery took for an election; configure it to page on it, or exclude it from discovery.'),
            alert('ZooKeeperElectionMasterFlapping', 'warning', 'max by (ensemble, election) (increase(zookeeper_election_master_changes_total{%(selector)s}[%(window)s])) >= %(switches)s',
                  'Mastership of {{ $labels.election }} ({{ $labels.ensemble }}) flaps',
                  '{{ $labels.election }} in {{ $labels.ensemble }} switched master more than %(over)s times in %(windowText)s: sessions keep expiring or instances keep restarting.'),
            alert('ZooKeeperElectionGhostMaster', 'warning', 'min by (ensemble, election) (zookeeper_election_master_session_connected{%(selector)s}) == 0',
                  'Master of {{ $labels.election }} ({{ $labels.ensemble }}) is a ghost',
                  'The session holding {{ $labels.election }} in {{ $labels.ensemble }} has no connection or has gone silent; its node, and so its mastership, lasts until the session expires.'),
            alert('ZooKeeperElectionDuplicateIdentity', 'warning', 'max by (ensemble, election) (zookeeper_election_duplicate_identities{%(selector)s}) > 0',
                  'The same identity is registered twice in {{ $labels.election }} ({{ $labels.ensemble }})',
                  '{{ $value }} candidates of {{ $labels.election }} in {{ $labels.ensemble }} share an identity with another: usually a zombie session of a restarted instance.'),
            alert('ZooKeeperElectionNoStandby', 'warning', 'max by (ensemble, election) (zookeeper_election_candidates{%(selector)s}) < on (ensemble, election) max by (ensemble, election) (zookeeper_election_min_candidates{%(selector)s})',
                  'Election {{ $labels.election }} ({{ $labels.ensemble }}) has no standby',
                  'Only {{ $value }} candidates compete for {{ $labels.election }} in {{ $labels.ensemble }}, fewer than its min_candidates: if the master dies, nobody may take over.'),
            alert('ZooKeeperElectionEpochRegression', 'critical', 'max by (ensemble, election) (increase(zookeeper_election_epoch_regressions_total{%(selector)s}[%(window)s])) > 0',
                  'The fencing epoch of {{ $labels.election }} ({{ $labels.ensemble }}) went backwards',
                  'The epoch of {{ $labels.election }} in {{ $labels.ensemble }} was written lower than before: a master with a stale epoch is acting, and fencing is not protecting the system.'),
            alert('ZooKeeperElectionRecordDisagrees', 'warning', 'min by (ensemble, election) (zookeeper_election_record_agrees{%(selector)s}) == 0',
                  'The master record of {{ $labels.election }} ({{ $labels.ensemble }}) names another master',
                  'The node where {{ $labels.election }} in {{ $labels.ensemble }} records its active master has named someone other than the lock\'s owner for %(forText)s: the new master has not taken over its duties, or fencing of the old one failed.'),
            // Judged by the agent from the application's lease table: a
            // lease held, unexpired, by another identity that renewed it
            // after ZooKeeper's master took over (docs/split-brain.md).
            alert('ZooKeeperElectionSplitBrain', 'critical', 'max by (ensemble, election) (zookeeper_election_lease_state{%(selector)s,state="split_brain"}) == 1',
                  'Two masters act for {{ $labels.election }} ({{ $labels.ensemble }})',
                  'The application\'s lease of {{ $labels.election }} in {{ $labels.ensemble }} is held, unexpired, by an instance other than ZooKeeper\'s master, which renewed it after mastership moved: two instances act at once.'),
            alert('ZooKeeperElectionLeaseExpired', 'warning', 'max by (ensemble, election) (zookeeper_election_lease_state{%(selector)s,state="expired"}) == 1',
                  'The master of {{ $labels.election }} ({{ $labels.ensemble }}) stopped renewing its lease',
                  'ZooKeeper\'s master of {{ $labels.election }} in {{ $labels.ensemble }} holds a live session but its lease in the application\'s table expired: the application stopped acting behind a live session.'),
            alert('ZooKeeperElectionHerdEffect', 'info', '(max by (ensemble, election) (zookeeper_election_parent_watchers{%(selector)s}) >= on (ensemble, election) max by (ensemble, election) (zookeeper_election_candidates{%(selector)s})) and on (ensemble, election) (max by (ensemble, election) (zookeeper_election_candidates{%(selector)s}) > %(candidates)s)',
                  'Candidates of {{ $labels.election }} ({{ $labels.ensemble }}) all watch the election node',
                  '{{ $value }} sessions watch {{ $labels.election }} itself in {{ $labels.ensemble }}: every change wakes every candidate (herd effect); candidates should watch their predecessor.'),
            alert('ZooKeeperElectionsMasterlessBeyondCap', 'critical', '(sum by (ensemble) (max by (ensemble, tree) (zookeeper_tree_elections{%(selector)s,state="masterless"}) * on (ensemble, tree) max by (ensemble, tree) (zookeeper_tree_info{%(selector)s,source!="discovered"})) > 0) and on (ensemble) (sum by (ensemble) (max by (ensemble, tree, state) (zookeeper_tree_elections{%(selector)s,state!="ok"})) > on (ensemble) max by (ensemble) (zookeeper_exporter_elections_exported{%(selector)s}))',
                  '{{ $value }} elections of {{ $labels.ensemble }} have no master, and not all have series',
                  'More elections of {{ $labels.ensemble }} need attention than max_elections exports: some masterless ones have no series, so ZooKeeperElectionNoMaster cannot name them. Look them up with /api/v1/elections/PATH, or raise max_elections.'),
            alert('ZooKeeperElectionsNeedAttentionBeyondCap', 'warning', 'sum by (ensemble) (max by (ensemble, tree, state) (zookeeper_tree_elections{%(selector)s,state!="ok"})) > on (ensemble) max by (ensemble) (zookeeper_exporter_elections_exported{%(selector)s})',
                  '{{ $value }} elections of {{ $labels.ensemble }} need attention, more than max_elections exports',
                  '{{ $labels.ensemble }} has more elections that are masterless, ghost, duplicate, flapping or short of standbys than it exports per-election series for; the per-election alerts cannot see the rest. zookeeper_tree_elections counts them by tree and state.'),
            alert('ZooKeeperElectionErrorBudgetBurn', 'critical', burns(c.slo.page),
                  'Election set {{ $labels.tree }} of {{ $labels.ensemble }} burns its error budget fast',
                  'The elections of {{ $labels.tree }} in {{ $labels.ensemble }} were without a master {{ $value | humanizePercentage }} of the time lately, in a long and a short window alike: at this pace the %(sloWindowText)s error budget of its objective is gone within days.'),
            alert('ZooKeeperElectionErrorBudgetBurnSlow', 'warning', burns(c.slo.ticket),
                  'Election set {{ $labels.tree }} of {{ $labels.ensemble }} burns its error budget',
                  'The elections of {{ $labels.tree }} in {{ $labels.ensemble }} were without a master {{ $value | humanizePercentage }} of the time over the last days, faster than their objective allows over %(sloWindowText)s.'),
            alert('ZooKeeperElectionSlowFailover', 'warning', 'histogram_quantile(0.9, sum by (ensemble, le) (rate(zookeeper_probe_failover_seconds_bucket{%(selector)s}[%(window)s]))) > %(seconds)s',
                  'Failover in {{ $labels.ensemble }} is slow',
                  'The failover probe of {{ $labels.ensemble }} needs {{ $value | humanizeDuration }} (90th percentile) for a standby to take over a closed master.'),
          ],
        },
        {
          name: 'zookeeper-groups',
          rules: [
            alert('ZooKeeperGroupBelowMinimum', 'critical', 'max by (ensemble, group) (zookeeper_group_members{%(selector)s}) < on (ensemble, group) max by (ensemble, group) (zookeeper_group_min_members{%(selector)s})',
                  'Group {{ $labels.group }} ({{ $labels.ensemble }}) is below its minimum',
                  '{{ $labels.group }} in {{ $labels.ensemble }} has {{ $value }} live members, fewer than its configured minimum.'),
            alert('ZooKeeperGroupEmpty', 'critical', 'max by (ensemble, group) (zookeeper_group_members{%(selector)s}) == 0 unless on (ensemble, group) max by (ensemble, group) (zookeeper_group_discovered{%(selector)s})',
                  'Group {{ $labels.group }} ({{ $labels.ensemble }}) has no live member',
                  'No instance of {{ $labels.group }} in {{ $labels.ensemble }} is registered: the service is gone.'),
            alert('ZooKeeperGroupChurn', 'warning', 'sum by (ensemble, group) (max by (ensemble, group, change) (increase(zookeeper_group_member_changes_total{%(selector)s}[%(window)s]))) >= %(changes)s',
                  'Members of {{ $labels.group }} ({{ $labels.ensemble }}) churn',
                  'More than %(over)s joins and leaves in %(windowText)s in {{ $labels.group }} ({{ $labels.ensemble }}): instances crash-loop or flap.'),
          ],
        },
        {
          name: 'zookeeper-locks',
          rules: [
            alert('ZooKeeperLockHeldTooLong', 'warning', 'max by (ensemble, lock) (zookeeper_lock_hold_seconds{%(selector)s}) > on (ensemble, lock) max by (ensemble, lock) (zookeeper_lock_max_hold_seconds{%(selector)s})',
                  'Lock {{ $labels.lock }} ({{ $labels.ensemble }}) is held too long',
                  'The holder of {{ $labels.lock }} in {{ $labels.ensemble }} has held it for {{ $value | humanizeDuration }}, longer than its max_hold: it may be stuck while others wait.'),
            alert('ZooKeeperLockWaitersPilingUp', 'warning', 'max by (ensemble, lock) (min_over_time(zookeeper_lock_waiters{%(selector)s}[%(window)s])) > %(waiters)s',
                  'Waiters pile up on lock {{ $labels.lock }} ({{ $labels.ensemble }})',
                  'More than %(waiters)s contenders have waited for {{ $labels.lock }} in {{ $labels.ensemble }} for %(windowText)s ({{ $value }} now): the lock is a bottleneck or its holder is stuck.'),
          ],
        },
        {
          name: 'zookeeper-exporter',
          rules: [
            alert('ZooKeeperExporterSessionDown', 'critical', 'max by (ensemble) (zookeeper_session_state{%(selector)s,state=~"connected|read_only"}) == 0',
                  'zk-election-exporter has no ZooKeeper session to {{ $labels.ensemble }}',
                  'The exporter\'s session to {{ $labels.ensemble }} is not connected: election metrics are stale or missing until it is.'),
            alert('ZooKeeperExporterTreeNotSynced', 'warning', 'min by (ensemble, tree, instance) (zookeeper_tree_synced{%(selector)s}) == 0',
                  'Tree {{ $labels.tree }} of {{ $labels.ensemble }} is not synced',
                  'zk-election-exporter could not watch and list {{ $labels.tree }} in {{ $labels.ensemble }} for %(forText)s; its election values are stale (see /ready for why).'),
            // Every replica reads the lease table: only all of them failing
            // leaves split brain unjudged.
            alert('ZooKeeperExporterLeaseSourceDown', 'warning', 'max by (ensemble, tree) (zookeeper_lease_up{%(selector)s}) == 0',
                  'The lease table of {{ $labels.tree }} ({{ $labels.ensemble }}) cannot be read',
                  'zk-election-exporter has read no lease of {{ $labels.tree }} in {{ $labels.ensemble }} for %(forText)s: split brain and stopped heartbeats cannot be judged (see /ready for why).'),
            alert('ZooKeeperExporterSessionExpired', 'warning', 'max by (ensemble, instance) (increase(zookeeper_session_expirations_total{%(selector)s}[10m])) > 0',
                  'zk-election-exporter\'s session to {{ $labels.ensemble }} expired',
                  'The exporter lost its session to {{ $labels.ensemble }} and rebuilt it; switches during the outage were counted at resync.'),
            // About one replica's own ticket (each may have its keytab), so
            // by instance. Evidence only: the expiry the last successful
            // check saw, close (within `before`) and near the end of the
            // life the agent has seen (`ratio` of it: MIT renews a keytab's
            // ticket at half its life, so a renewing agent never gets
            // there, whatever the ticket's length or when the agent began);
            // or checks that have failed.
            alert('ZooKeeperExporterKerberosTicketExpiring', 'warning', 'min by (ensemble, instance) ((zookeeper_session_kerberos_ticket_expiry_timestamp_seconds{%(selector)s} - time() < %(beforeSeconds)d) and (zookeeper_session_kerberos_ticket_expiry_timestamp_seconds{%(selector)s} - time() < %(ratio)s * (zookeeper_session_kerberos_ticket_expiry_timestamp_seconds{%(selector)s} - zookeeper_session_kerberos_ticket_first_seen_timestamp_seconds{%(selector)s}))) or (max by (ensemble, instance) (zookeeper_session_kerberos_ticket_ok{%(selector)s}) == 0)',
                  'zk-election-exporter\'s Kerberos ticket for {{ $labels.ensemble }} is running out',
                  'The exporter\'s ticket-granting ticket for {{ $labels.ensemble }} expires within %(beforeText)s and nothing has renewed it, or its ticket checks have failed, for %(forText)s: the running session goes on, but its next reconnect will fail to authenticate (see /ready and zookeeper_session_kerberos_errors_total for why).'),
            // The agent decides its own alerts and the rules yield to it:
            // if none of its deliveries gets through, this says so through
            // Prometheus's Alertmanagers. Across replicas: one replica's
            // alerts reaching an Alertmanager is enough.
            alert('ZooKeeperExporterAlertsUndelivered', 'critical', 'sum by (job) (increase(zookeeper_exporter_alerts_send_errors_total{%(selector)s}[%(window)s])) > 0 unless on (job) sum by (job) (increase(zookeeper_exporter_alerts_sent_total{%(selector)s}[%(window)s])) > 0',
                  'zk-election-exporter cannot deliver its alerts',
                  'No replica of {{ $labels.job }} has delivered any of its alerts to an Alertmanager for %(windowText)s while deliveries failed: elections that lose their master, split brains and lost sessions page nobody (the rules leave these alerts to the agent). See zookeeper_exporter_alerts_send_errors_total for why.'),
            // Every replica watches every cluster, so one replica down
            // loses no metric: only all of them down pages.
            alert('ZooKeeperExporterDown', 'critical', 'max by (job) (up{%(selector)s}) == 0 or absent(up{%(selector)s})',
                  'zk-election-exporter is down',
                  'Prometheus has scraped no replica of {{ $labels.job }} for %(forText)s: no election or ensemble metrics, and no alert of the agent\'s own.'),
            alert('ZooKeeperExporterReplicaDown', 'warning', '(up{%(selector)s} == 0) and on (job) (max by (job) (up{%(selector)s}) == 1)',
                  'A replica of zk-election-exporter is down',
                  'Prometheus cannot scrape {{ $labels.instance }} of {{ $labels.job }}; another replica serves every metric, so nothing is lost yet, but one more failure leaves the ensembles unwatched.'),
          ],
        },
    ],
  },
}
