#!/usr/bin/env python3
"""Generates dashboards/*.json and dashboards/provisioning/.

Edit the dashboards here, then run `python3 scripts/gen-dashboards.py`;
tests/e2e.rs checks every query in them against a real Prometheus.
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24
CLUSTER = 'cluster=~"$cluster"'


def datasource_variable():
    """The `datasource` variable every panel selects its data source by."""
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
    }


def query_variable(name, label, metric, selector=""):
    """A multi-value variable listing the values of label `name` of `metric`."""
    query = f"label_values({metric}{selector}, {name})"
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "refresh": 2,
        "sort": 1,
        "hide": 0,
    }


def target(index, expr, legend, table):
    """One query of a panel; table panels ask for an instant table."""
    t = {"refId": chr(ord("A") + index), "datasource": DATASOURCE,
         "expr": expr, "legendFormat": legend}
    if table:
        t.update({"instant": True, "format": "table"})
    return t


class Dashboard:
    """Lays panels out left to right in rows of GRID_WIDTH columns."""

    def __init__(self, title, uid, description):
        self.title = title
        self.uid = uid
        self.description = description
        self.panels = []
        self.x = 0
        self.y = 0
        self.next_id = 1

    def _take_id(self):
        panel_id = self.next_id
        self.next_id += 1
        return panel_id

    def row(self, title):
        self.panels.append({
            "type": "row", "title": title, "collapsed": False, "id": self._take_id(),
            "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": self.y}, "panels": [],
        })
        self.y += 1
        self.x = 0

    def panel(self, kind, title, queries, w=12, h=8, desc="", unit=None, extra=None):
        """A panel of `kind` with `queries` as (expression, legend) pairs."""
        if self.x + w > GRID_WIDTH:
            self.x = 0
            self.y += h
        panel = {
            "type": kind,
            "title": title,
            "description": desc,
            "id": self._take_id(),
            "datasource": DATASOURCE,
            "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
            "targets": [target(i, expr, legend, kind == "table")
                        for i, (expr, legend) in enumerate(queries)],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {},
        }
        if unit:
            panel["fieldConfig"]["defaults"]["unit"] = unit
        if extra:
            panel.update(extra)
        self.panels.append(panel)
        self.x += w
        if self.x >= GRID_WIDTH:
            self.x = 0
            self.y += h

    def to_json(self, variables, annotations=()):
        return {
            "__inputs": [{
                "name": "DS_PROMETHEUS", "label": "Prometheus",
                "description": "Prometheus scraping zk-election-exporter",
                "type": "datasource", "pluginId": "prometheus", "pluginName": "Prometheus",
            }],
            "__requires": [
                {"type": "grafana", "id": "grafana", "name": "Grafana", "version": "9.0.0"},
                {"type": "datasource", "id": "prometheus", "name": "Prometheus",
                 "version": "1.0.0"},
            ],
            "title": self.title,
            "uid": self.uid,
            "description": self.description,
            "tags": ["zookeeper", "zk-election-exporter"],
            "timezone": "browser",
            "schemaVersion": 38,
            "version": 1,
            "editable": True,
            "time": {"from": "now-6h", "to": "now"},
            "refresh": "30s",
            "graphTooltip": 1,
            "templating": {"list": [datasource_variable()] + variables},
            "annotations": {"list": list(annotations)},
            "panels": self.panels,
        }


MERGE = {"transformations": [{"id": "merge", "options": {}}]}


def quantiles(metric, by, window, legend_by):
    """p50 and p90 of a histogram, as (expression, legend) pairs."""
    return [
        (f"histogram_quantile({q}, sum by (le, {by}) "
         f"(rate({metric}_bucket{{{CLUSTER}}}[{window}])))", f"p{p} {{{{{legend_by}}}}}")
        for q, p in [("0.5", 50), ("0.9", 90)]
    ]


def elections_dashboard():
    d = Dashboard("ZooKeeper Elections", "zkee-elections",
                  "Who is master of every election, how often mastership moves, masterless "
                  "time, ghost masters, the failover canary, and who holds each lock.")
    e = f'{CLUSTER},election=~"$election"'
    d.row("Overview")
    # From the tree aggregates: they count every watched election, also past
    # max_elections, where per-election series cover only some.
    d.panel("stat", "Elections", [(f"sum(zookeeper_tree_elections{{{CLUSTER}}})", "")],
            w=4, h=4, desc="Every watched election (all trees of the selected clusters).")
    d.panel("stat", "Masterless now",
            [(f'sum(zookeeper_tree_elections{{{CLUSTER},state="masterless"}}) or vector(0)', "")],
            w=4, h=4, desc="Elections without any candidate.")
    d.panel("stat", "Ghost masters",
            [(f'sum(zookeeper_tree_elections{{{CLUSTER},state="ghost"}}) or vector(0)', "")],
            w=4, h=4,
            desc="Masters whose session is disconnected or silent (needs diagnostics).")
    d.panel("stat", "Switches in range",
            [(f"sum(increase(zookeeper_tree_master_changes_total{{{CLUSTER}}}[$__range])) "
              "or vector(0)", "")], w=4, h=4)
    d.panel("stat", "With per-election series",
            [(f"sum(zookeeper_exporter_elections_exported{{{CLUSTER}}})", "")], w=4, h=4,
            desc="All elections up to max_elections; past it, those needing attention first.")
    d.panel("timeseries", "Elections needing attention, by state",
            [(f'sum by (state) (zookeeper_tree_elections{{{CLUSTER},state!="ok"}})', "{{state}}")],
            w=4, h=4, desc="Each election counted once, in its most urgent state.")
    d.row("Masters")
    d.panel("table", "Elections and their masters",
            [(f"zookeeper_election_master{{{e}}}", "master"),
             (f"time() - zookeeper_election_master_since_timestamp_seconds{{{e}}}", "since"),
             (f"zookeeper_election_candidates{{{e}}}", "candidates")],
            w=24, h=10,
            desc="Master node and identity, seconds since it took over, candidates.",
            extra=MERGE)
    d.panel("table", "Current masters by identity",
            [(f"count by (cluster, identity) (max by (cluster, election, identity) "
              f"(zookeeper_election_master{{{e}}} == 1))", "")],
            w=24, h=8,
            desc="How many elections each identity (device, host, broker) is master of now: "
                 "a single-active deployment expects one per account; one identity mastering "
                 "many may be a misconfiguration or the last survivor.",
            extra={"transformations": [{"id": "organize", "options": {
                "renameByName": {"Value": "elections mastered"}}}]})
    d.panel("state-timeline", "Master identity per election",
            [(f"max by (election, identity) (zookeeper_election_master{{{e}}})",
              "{{election}} {{identity}}")], w=24, h=10)
    d.panel("timeseries", "Switches",
            [(f"sum by (election) (increase(zookeeper_election_master_changes_total{{{e}}}[5m]))",
              "{{election}}")], desc="Master switches per 5 minutes.")
    d.panel("timeseries", "Candidates",
            [(f"zookeeper_election_candidates{{{e}}}", "{{election}}")])
    d.row("Availability")
    d.panel("timeseries", "Masterless share",
            [(f"rate(zookeeper_election_masterless_seconds_total{{{e}}}[5m])", "{{election}}")],
            unit="percentunit",
            desc="Share of time without a master; 1 - this is the election's availability.")
    d.panel("timeseries", "Masterless periods (p50, p90)",
            quantiles("zookeeper_tree_masterless_duration_seconds", "tree", "30m", "tree"),
            unit="s")
    d.panel("timeseries", "Ghost masters: time disconnected",
            [(f"zookeeper_election_master_disconnected_seconds{{{e}}}", "{{election}}")],
            unit="s", desc="Only while a master's session is disconnected or silent.")
    d.panel("timeseries", "Duplicate identities",
            [(f"zookeeper_election_duplicate_identities{{{e}}} > 0", "{{election}}")],
            desc="Candidates sharing an identity (zombie sessions).")
    d.panel("timeseries", "Failover canary",
            quantiles("zookeeper_probe_failover_seconds", "cluster", "15m", "cluster"),
            unit="s", desc="Needs [clusters.probe].")
    d.panel("timeseries", "Herd: watchers of the election node",
            [(f"zookeeper_election_parent_watchers{{{e}}}", "{{election}}")],
            desc="Needs diagnostics.watches.")
    d.row("Locks")
    lk = f'{CLUSTER},lock=~"$lock"'
    d.panel("stat", "Locks held", [(f"sum(zookeeper_lock_held{{{lk}}}) or vector(0)", "")],
            w=6, h=4, desc="A free lock is normal; this is how many are held now.")
    d.panel("stat", "Waiting contenders",
            [(f"sum(zookeeper_lock_waiters{{{lk}}}) or vector(0)", "")], w=6, h=4)
    d.panel("timeseries", "Hold time of the current holder",
            [(f"zookeeper_lock_hold_seconds{{{lk}}}", "{{lock}}")], unit="s", w=12, h=4,
            desc="Only while held; timed from when the agent saw the hold start.")
    d.panel("timeseries", "Lock hand-overs",
            [(f"sum by (lock) (increase(zookeeper_lock_acquisitions_total{{{lk}}}[5m]))",
              "{{lock}}")], desc="Acquisitions per 5 minutes.")
    d.panel("timeseries", "Waiters per lock",
            [(f"zookeeper_lock_waiters{{{lk}}}", "{{lock}}")])
    d.row("Agent")
    d.panel("state-timeline", "Session state",
            [(f"max by (cluster, state) (zookeeper_session_state{{{CLUSTER}}}) == 1",
              "{{cluster}} {{state}}")], w=12, h=6)
    d.panel("timeseries", "Reconnects and expirations",
            [(f"increase(zookeeper_session_reconnects_total{{{CLUSTER}}}[15m])",
              "reconnects {{cluster}}"),
             (f"increase(zookeeper_session_expirations_total{{{CLUSTER}}}[15m])",
              "expirations {{cluster}}")], w=12, h=6)
    d.panel("timeseries", "Agent request latency (p99)",
            [("histogram_quantile(0.99, sum by (le, cluster, op) "
              f"(rate(zookeeper_session_request_duration_seconds_bucket{{{CLUSTER}}}[5m])))",
              "{{cluster}} {{op}}")], unit="s", w=12, h=6)
    d.panel("timeseries", "Trees synced",
            [(f"zookeeper_tree_synced{{{CLUSTER}}}", "{{cluster}} {{tree}}")], w=12, h=6)
    d.panel("table", "Watched trees",
            [(f"zookeeper_tree_info{{{CLUSTER}}}", "")], w=24, h=8,
            desc="Every tree: kind (election, group, lock), election style (sequential, node) "
                 "and source (configured, discovered, recognised).")
    switches = {
        "name": "Master switches",
        "datasource": DATASOURCE,
        "enable": True,
        "iconColor": "orange",
        "expr": (f"max by (cluster, election) "
                 f"(changes(zookeeper_election_master_changes_total{{{e}}}[1m])) > 0"),
        "step": "60s",
        "titleFormat": "Master switch",
        "textFormat": "{{election}} ({{cluster}}): who, from whom and why in /api/v1/events",
        "tagKeys": "cluster,election",
    }
    return d.to_json([
        query_variable("cluster", "Cluster", "zookeeper_election_candidates"),
        query_variable("election", "Election", "zookeeper_election_candidates",
                       '{cluster=~"$cluster"}'),
        query_variable("lock", "Lock", "zookeeper_lock_held", '{cluster=~"$cluster"}'),
    ], annotations=[switches])


def ensemble_dashboard():
    d = Dashboard("ZooKeeper Ensemble", "zkee-ensemble",
                  "Every ensemble member from four-letter words: up, role, latency, load, "
                  "znodes, watches, zxid.")
    s = f'{CLUSTER},server=~"$server"'

    def per_server(title, metric, **options):
        d.panel("timeseries", title, [(f"{metric}{{{s}}}", "{{server}}")], **options)

    d.row("Members")
    d.panel("stat", "Members up",
            [(f"sum by (cluster) (zookeeper_ensemble_servers_up{{{CLUSTER}}})", "{{cluster}}")],
            w=6, h=4)
    d.panel("stat", "Leaders",
            [(f"sum by (cluster) (zookeeper_ensemble_leaders{{{CLUSTER}}})", "{{cluster}}")],
            w=6, h=4, desc="Must be 1.")
    d.panel("stat", "Zxid spread",
            [(f"max by (cluster) (zookeeper_ensemble_zxid_spread{{{CLUSTER}}})", "{{cluster}}")],
            w=6, h=4, desc="Transactions the slowest member lags.")
    d.panel("stat", "Four-letter-word errors (1h)",
            [(f"sum(increase(zookeeper_fourlw_errors_total{{{s}}}[1h])) or vector(0)", "")],
            w=6, h=4)
    d.panel("table", "Members",
            [(f"zookeeper_up{{{s}}}", "up"), (f"zookeeper_server_state{{{s}}} == 1", "role"),
             (f"zookeeper_server_info{{{s}}}", "version")], w=24, h=8, extra=MERGE)
    d.row("Load")
    d.panel("timeseries", "Latency (avg, max)",
            [(f"zookeeper_latency_avg{{{s}}}", "avg {{server}}"),
             (f"zookeeper_latency_max{{{s}}}", "max {{server}}")], unit="ms")
    d.panel("timeseries", "Requests",
            [(f"rate(zookeeper_packets_received_total{{{s}}}[5m])", "received {{server}}"),
             (f"rate(zookeeper_packets_sent_total{{{s}}}[5m])", "sent {{server}}")],
            unit="reqps")
    per_server("Connections", "zookeeper_num_alive_connections")
    per_server("Outstanding requests", "zookeeper_outstanding_requests")
    d.row("Data")
    per_server("Znodes", "zookeeper_znode_count", w=8)
    per_server("Watches", "zookeeper_watch_count", w=8)
    per_server("Ephemerals", "zookeeper_ephemerals_count", w=8)
    per_server("Data size", "zookeeper_approximate_data_size", unit="bytes", w=8)
    d.panel("timeseries", "File descriptors used",
            [(f"zookeeper_open_file_descriptor_count{{{s}}} / "
              f"zookeeper_max_file_descriptor_count{{{s}}}", "{{server}}")],
            unit="percentunit", w=8)
    per_server("Zxid counter", "zookeeper_zxid_counter", w=8,
               desc="Low 32 bits; near 4294967296 the ensemble forces an election.")
    d.row("Four-letter words")
    d.panel("timeseries", "Command health",
            [(f"zookeeper_fourlw_up{{{s}}}", "{{server}} {{command}}")])
    d.panel("timeseries", "Errors by reason",
            [(f"sum by (server, reason) (rate(zookeeper_fourlw_errors_total{{{s}}}[5m]))",
              "{{server}} {{reason}}")])
    return d.to_json([
        query_variable("cluster", "Cluster", "zookeeper_up"),
        query_variable("server", "Server", "zookeeper_up", '{cluster=~"$cluster"}'),
    ])


def registry_dashboard():
    d = Dashboard("ZooKeeper Registry", "zkee-registry",
                  "Service registries and membership trees: live members against the minimum, "
                  "and churn.")
    g = f'{CLUSTER},group=~"$group"'
    d.row("Groups")
    d.panel("timeseries", "Members and minimum",
            [(f"zookeeper_group_members{{{g}}}", "{{group}}"),
             (f"zookeeper_group_min_members{{{g}}}", "min {{group}}")], w=24)
    d.panel("timeseries", "Churn",
            [("sum by (group, change) "
              f"(increase(zookeeper_group_member_changes_total{{{g}}}[5m]))",
              "{{group}} {{change}}")])
    d.panel("table", "Live members", [(f"zookeeper_group_member{{{g}}}", "")],
            desc="Needs export_members = true.")
    d.panel("stat", "Groups per tree", [(f"zookeeper_tree_groups{{{CLUSTER}}}", "{{tree}}")],
            w=12, h=4)
    d.panel("stat", "Below minimum",
            [(f"count(zookeeper_group_members{{{g}}} < on (cluster, group) "
              f"zookeeper_group_min_members{{{g}}}) or vector(0)", "")], w=12, h=4)
    return d.to_json([
        query_variable("cluster", "Cluster", "zookeeper_group_members"),
        query_variable("group", "Group", "zookeeper_group_members", '{cluster=~"$cluster"}'),
    ])


PROVISIONING = {
    "dashboards.yml": "# Grafana file provisioning: mount dashboards/ at "
                      """/var/lib/grafana/dashboards.
apiVersion: 1
providers:
  - name: zk-election-exporter
    folder: ZooKeeper
    type: file
    disableDeletion: false
    options:
      path: /var/lib/grafana/dashboards
""",
    "datasources.yml": "# A Prometheus data source for the dashboards; they select it "
                       """through their
# `datasource` variable, so any Prometheus data source works.
apiVersion: 1
datasources:
  - name: Prometheus
    type: prometheus
    access: proxy
    url: http://prometheus:9090
    isDefault: true
""",
}


def write(relative, text):
    with open(os.path.join(ROOT, relative), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    dashboards = {
        "elections": elections_dashboard(),
        "ensemble": ensemble_dashboard(),
        "registry": registry_dashboard(),
    }
    for name, dashboard in dashboards.items():
        write(f"dashboards/zookeeper-{name}.json", json.dumps(dashboard, indent=2) + "\n")
    for name, text in PROVISIONING.items():
        write(f"dashboards/provisioning/{name}", text)


if __name__ == "__main__":
    main()
