#!/usr/bin/env python3
"""Generates dashboards/*.json and dashboards/provisioning/ (edit here, then run
`python3 scripts/gen-dashboards.py`; tests/e2e.rs checks every query in them)."""
import json, os
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DS={"type":"prometheus","uid":"${datasource}"}
def var_ds():
    return {"name":"datasource","label":"Data source","type":"datasource","query":"prometheus","current":{},"hide":0,"refresh":1}
def var_q(name,label,metric,dep=""):
    q=f"label_values({metric}{dep}, {name})"
    return {"name":name,"label":label,"type":"query","datasource":DS,"definition":q,"query":{"query":q,"refId":"PrometheusVariableQueryEditor-VariableQuery"},
            "includeAll":True,"multi":True,"allValue":".*","current":{"selected":True,"text":["All"],"value":["$__all"]},"refresh":2,"sort":1,"hide":0}
class D:
    def __init__(s,title,uid,desc): s.title,s.uid,s.desc,s.panels,s.y,s.id=title,uid,desc,[],0,1
    def row(s,title):
        s.panels.append({"type":"row","title":title,"collapsed":False,"id":s.id,"gridPos":{"h":1,"w":24,"x":0,"y":s.y},"panels":[]}); s.id+=1; s.y+=1; s.x=0
    def panel(s,typ,title,targets,w=12,h=8,desc="",unit=None,extra=None):
        if getattr(s,'x',0)+w>24: s.x=0; s.y+=h
        p={"type":typ,"title":title,"description":desc,"id":s.id,"datasource":DS,"gridPos":{"h":h,"w":w,"x":getattr(s,'x',0),"y":s.y},
           "targets":[dict(refId=chr(65+i),datasource=DS,expr=e,legendFormat=l,**({"instant":True,"format":"table"} if typ=="table" else {})) for i,(e,l) in enumerate(targets)],
           "fieldConfig":{"defaults":{},"overrides":[]},"options":{}}
        if unit: p["fieldConfig"]["defaults"]["unit"]=unit
        if extra: p.update(extra)
        s.panels.append(p); s.id+=1; s.x=getattr(s,'x',0)+w
        if s.x>=24: s.x=0; s.y+=h
    def json(s,vars):
        return {"__inputs":[{"name":"DS_PROMETHEUS","label":"Prometheus","description":"Prometheus scraping zk-election-exporter","type":"datasource","pluginId":"prometheus","pluginName":"Prometheus"}],
                "__requires":[{"type":"grafana","id":"grafana","name":"Grafana","version":"9.0.0"},{"type":"datasource","id":"prometheus","name":"Prometheus","version":"1.0.0"}],
                "title":s.title,"uid":s.uid,"description":s.desc,"tags":["zookeeper","zk-election-exporter"],"timezone":"browser","schemaVersion":38,"version":1,"editable":True,
                "time":{"from":"now-6h","to":"now"},"refresh":"30s","graphTooltip":1,"templating":{"list":[var_ds()]+vars},"annotations":{"list":[]},"panels":s.panels}
C='cluster=~"$cluster"'
# ---------------- Elections
d=D("ZooKeeper Elections","zkee-elections","Who is master of every election, how often mastership moves, masterless time, ghost masters and the failover canary.")
E=f'{C},election=~"$election"'
d.row("Overview")
d.panel("stat","Elections",[(f"count(zookeeper_election_candidates{{{E}}})","")],w=6,h=4)
d.panel("stat","Masterless now",[(f"count(zookeeper_election_has_master{{{E}}} == 0) or vector(0)","")],w=6,h=4,desc="Elections without any candidate.")
d.panel("stat","Ghost masters",[(f"count(zookeeper_election_master_session_connected{{{E}}} == 0) or vector(0)","")],w=6,h=4,desc="Masters whose session is disconnected or silent (needs diagnostics).")
d.panel("stat","Switches in range",[(f"sum(increase(zookeeper_election_master_changes_total{{{E}}}[$__range])) or vector(0)","")],w=6,h=4)
d.row("Masters")
d.panel("table","Elections and their masters",[(f"zookeeper_election_master{{{E}}}","master"),(f"time() - zookeeper_election_master_since_timestamp_seconds{{{E}}}","since"),(f"zookeeper_election_candidates{{{E}}}","candidates")],w=24,h=10,
        desc="Master node and identity, seconds since it took over, candidates.",extra={"transformations":[{"id":"merge","options":{}}]})
d.panel("state-timeline","Master identity per election",[(f"max by (election, identity) (zookeeper_election_master{{{E}}})","{{election}} {{identity}}")],w=24,h=10)
d.panel("timeseries","Switches",[(f"sum by (election) (increase(zookeeper_election_master_changes_total{{{E}}}[5m]))","{{election}}")],desc="Master switches per 5 minutes.")
d.panel("timeseries","Candidates",[(f"zookeeper_election_candidates{{{E}}}","{{election}}")])
d.row("Availability")
d.panel("timeseries","Masterless share",[(f"rate(zookeeper_election_masterless_seconds_total{{{E}}}[5m])","{{election}}")],unit="percentunit",desc="Share of time without a master; 1 - this is the election's availability.")
d.panel("timeseries","Masterless periods (p50, p90)",[(f'histogram_quantile(0.5, sum by (le, tree) (rate(zookeeper_tree_masterless_duration_seconds_bucket{{{C}}}[30m])))',"p50 {{tree}}"),(f'histogram_quantile(0.9, sum by (le, tree) (rate(zookeeper_tree_masterless_duration_seconds_bucket{{{C}}}[30m])))',"p90 {{tree}}")],unit="s")
d.panel("timeseries","Ghost masters: time disconnected",[(f"zookeeper_election_master_disconnected_seconds{{{E}}}","{{election}}")],unit="s",desc="Only while a master's session is disconnected or silent.")
d.panel("timeseries","Duplicate identities",[(f"zookeeper_election_duplicate_identities{{{E}}} > 0","{{election}}")],desc="Candidates sharing an identity (zombie sessions).")
d.panel("timeseries","Failover canary",[(f'histogram_quantile(0.5, sum by (le, cluster) (rate(zookeeper_probe_failover_seconds_bucket{{{C}}}[15m])))',"p50 {{cluster}}"),(f'histogram_quantile(0.9, sum by (le, cluster) (rate(zookeeper_probe_failover_seconds_bucket{{{C}}}[15m])))',"p90 {{cluster}}")],unit="s",desc="Needs [clusters.probe].")
d.panel("timeseries","Herd: watchers of the election node",[(f"zookeeper_election_parent_watchers{{{E}}}","{{election}}")],desc="Needs diagnostics.watches.")
d.row("Agent")
d.panel("state-timeline","Session state",[(f"max by (cluster, state) (zookeeper_session_state{{{C}}}) == 1","{{cluster}} {{state}}")],w=12,h=6)
d.panel("timeseries","Reconnects and expirations",[(f"increase(zookeeper_session_reconnects_total{{{C}}}[15m])","reconnects {{cluster}}"),(f"increase(zookeeper_session_expirations_total{{{C}}}[15m])","expirations {{cluster}}")],w=12,h=6)
d.panel("timeseries","Agent request latency (p99)",[(f'histogram_quantile(0.99, sum by (le, cluster, op) (rate(zookeeper_session_request_duration_seconds_bucket{{{C}}}[5m])))',"{{cluster}} {{op}}")],unit="s",w=12,h=6)
d.panel("timeseries","Trees synced",[(f"zookeeper_tree_synced{{{C}}}","{{cluster}} {{tree}}")],w=12,h=6)
elections=d.json([var_q("cluster","Cluster","zookeeper_election_candidates"),var_q("election","Election","zookeeper_election_candidates",'{cluster=~"$cluster"}')])
# ---------------- Ensemble
d=D("ZooKeeper Ensemble","zkee-ensemble","Every ensemble member from four-letter words: up, role, latency, load, znodes, watches, zxid.")
S=f'{C},server=~"$server"'
d.row("Members")
d.panel("stat","Members up",[(f"sum by (cluster) (zookeeper_ensemble_servers_up{{{C}}})","{{cluster}}")],w=6,h=4)
d.panel("stat","Leaders",[(f"sum by (cluster) (zookeeper_ensemble_leaders{{{C}}})","{{cluster}}")],w=6,h=4,desc="Must be 1.")
d.panel("stat","Zxid spread",[(f"max by (cluster) (zookeeper_ensemble_zxid_spread{{{C}}})","{{cluster}}")],w=6,h=4,desc="Transactions the slowest member lags.")
d.panel("stat","Four-letter-word errors (1h)",[(f"sum(increase(zookeeper_fourlw_errors_total{{{S}}}[1h])) or vector(0)","")],w=6,h=4)
d.panel("table","Members",[(f"zookeeper_up{{{S}}}","up"),(f"zookeeper_server_state{{{S}}} == 1","role"),(f"zookeeper_server_info{{{S}}}","version")],w=24,h=8,extra={"transformations":[{"id":"merge","options":{}}]})
d.row("Load")
d.panel("timeseries","Latency (avg, max)",[(f"zookeeper_latency_avg{{{S}}}","avg {{server}}"),(f"zookeeper_latency_max{{{S}}}","max {{server}}")],unit="ms")
d.panel("timeseries","Requests",[(f"rate(zookeeper_packets_received_total{{{S}}}[5m])","received {{server}}"),(f"rate(zookeeper_packets_sent_total{{{S}}}[5m])","sent {{server}}")],unit="reqps")
d.panel("timeseries","Connections",[(f"zookeeper_num_alive_connections{{{S}}}","{{server}}")])
d.panel("timeseries","Outstanding requests",[(f"zookeeper_outstanding_requests{{{S}}}","{{server}}")])
d.row("Data")
d.panel("timeseries","Znodes",[(f"zookeeper_znode_count{{{S}}}","{{server}}")],w=8)
d.panel("timeseries","Watches",[(f"zookeeper_watch_count{{{S}}}","{{server}}")],w=8)
d.panel("timeseries","Ephemerals",[(f"zookeeper_ephemerals_count{{{S}}}","{{server}}")],w=8)
d.panel("timeseries","Data size",[(f"zookeeper_approximate_data_size{{{S}}}","{{server}}")],unit="bytes",w=8)
d.panel("timeseries","File descriptors used",[(f"zookeeper_open_file_descriptor_count{{{S}}} / zookeeper_max_file_descriptor_count{{{S}}}","{{server}}")],unit="percentunit",w=8)
d.panel("timeseries","Zxid counter",[(f"zookeeper_zxid_counter{{{S}}}","{{server}}")],w=8,desc="Low 32 bits; near 4294967296 the ensemble forces an election.")
d.row("Four-letter words")
d.panel("timeseries","Command health",[(f"zookeeper_fourlw_up{{{S}}}","{{server}} {{command}}")])
d.panel("timeseries","Errors by reason",[(f"sum by (server, reason) (rate(zookeeper_fourlw_errors_total{{{S}}}[5m]))","{{server}} {{reason}}")])
ensemble=d.json([var_q("cluster","Cluster","zookeeper_up"),var_q("server","Server","zookeeper_up",'{cluster=~"$cluster"}')])
# ---------------- Registry
d=D("ZooKeeper Registry","zkee-registry","Service registries and membership trees: live members against the minimum, and churn.")
G=f'{C},group=~"$group"'
d.row("Groups")
d.panel("timeseries","Members and minimum",[(f"zookeeper_group_members{{{G}}}","{{group}}"),(f"zookeeper_group_min_members{{{G}}}","min {{group}}")],w=24)
d.panel("timeseries","Churn",[(f"sum by (group, change) (increase(zookeeper_group_member_changes_total{{{G}}}[5m]))","{{group}} {{change}}")])
d.panel("table","Live members",[(f"zookeeper_group_member{{{G}}}","")],desc="Needs export_members = true.")
d.panel("stat","Groups per tree",[(f"zookeeper_tree_groups{{{C}}}","{{tree}}")],w=12,h=4)
d.panel("stat","Below minimum",[(f"count(zookeeper_group_members{{{G}}} < on (cluster, group) zookeeper_group_min_members{{{G}}}) or vector(0)","")],w=12,h=4)
registry=d.json([var_q("cluster","Cluster","zookeeper_group_members"),var_q("group","Group","zookeeper_group_members",'{cluster=~"$cluster"}')])
for name,dash in [("elections",elections),("ensemble",ensemble),("registry",registry)]:
    json.dump(dash, open(os.path.join(ROOT, f"dashboards/zookeeper-{name}.json"),"w"), indent=2)
    open(os.path.join(ROOT, f"dashboards/zookeeper-{name}.json"),"a").write("\n")
open(os.path.join(ROOT, "dashboards/provisioning/dashboards.yml"),"w").write("""# Grafana file provisioning: mount dashboards/ at /var/lib/grafana/dashboards.
apiVersion: 1
providers:
  - name: zk-election-exporter
    folder: ZooKeeper
    type: file
    disableDeletion: false
    options:
      path: /var/lib/grafana/dashboards
""")
open(os.path.join(ROOT, "dashboards/provisioning/datasources.yml"),"w").write("""# A Prometheus data source for the dashboards; they select it through their
# `datasource` variable, so any Prometheus data source works.
apiVersion: 1
datasources:
  - name: Prometheus
    type: prometheus
    access: proxy
    url: http://prometheus:9090
    isDefault: true
""")

