//! Known systems in one line: `[[clusters.systems]] kind = "kafka"` (or
//! `--system kafka[:ROOT]`) stands for the elections and groups the system
//! writes, laid out as it writes them.

use super::ConfigError;
use super::raw::{RawElection, RawGroup, RawRecord, RawSystem};

/// The systems known, with the root their znodes live under by default.
pub const KINDS: [(&str, &str); 8] = [
    ("kafka", "/"),
    ("hbase", "/hbase"),
    ("hdfs", "/hadoop-ha"),
    ("solr", "/"),
    ("patroni", "/service"),
    ("clickhouse", "/clickhouse"),
    ("spark", "/spark"),
    ("flink", "/flink"),
];

fn under(root: &str, rest: &str) -> String {
    if root == "/" {
        rest.to_owned()
    } else {
        format!("{root}{rest}")
    }
}

fn node(path: String, identity: &str) -> RawElection {
    RawElection {
        style: Some("node".into()),
        ..sequential(path, identity)
    }
}

fn sequential(path: String, identity: &str) -> RawElection {
    RawElection {
        path,
        identity: Some(identity.to_owned()),
        ..Default::default()
    }
}

fn group(path: String) -> RawGroup {
    RawGroup {
        path,
        ..Default::default()
    }
}

/// The elections and groups `systems` stand for.
pub(super) fn expand(
    key: &str,
    systems: Vec<RawSystem>,
) -> Result<(Vec<RawElection>, Vec<RawGroup>), ConfigError> {
    let (mut elections, mut groups) = (Vec::new(), Vec::new());
    for (j, system) in systems.into_iter().enumerate() {
        let skey = format!("{key}.systems[{j}]");
        let Some((kind, default_root)) = KINDS.iter().find(|(k, _)| *k == system.kind) else {
            let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
            return Err(ConfigError::new(
                format!("{skey}.kind"),
                format!(
                    "`{}` is not a known system; choose from {}",
                    system.kind,
                    known.join(", ")
                ),
            ));
        };
        let root = system.root.unwrap_or_else(|| (*default_root).to_owned());
        if !root.starts_with('/') || (root.len() > 1 && root.ends_with('/')) {
            return Err(ConfigError::new(
                format!("{skey}.root"),
                format!("`{root}` must be an absolute path like \"/\" or \"/kafka\""),
            ));
        }
        match *kind {
            // The controller is /controller; every broker registers under
            // brokers/ids (the controller too); controller_epoch fences.
            "kafka" => elections.push(RawElection {
                standbys: Some(under(&root, "/brokers/ids")),
                epoch: Some(under(&root, "/controller_epoch")),
                ..node(under(&root, "/controller"), "json:/brokerid")
            }),
            // The active master holds /hbase/master; backups register under
            // backup-masters; region servers under rs.
            "hbase" => {
                elections.push(RawElection {
                    standbys: Some(under(&root, "/backup-masters")),
                    ..node(under(&root, "/master"), "hbase")
                });
                groups.push(group(under(&root, "/rs")));
            }
            // Every nameservice's ZKFC lock, and the breadcrumb of the last
            // active namenode (fencing).
            "hdfs" => elections.push(RawElection {
                record: Some(RawRecord {
                    path: under(&root, "/*/ActiveBreadCrumb"),
                    identity: Some("hdfs".into()),
                }),
                ..node(under(&root, "/*/ActiveStandbyElectorLock"), "hdfs")
            }),
            // Every scope under the namespace: the leader key (EPHEMERAL,
            // data = the leader's member name) and the members beside it
            // (one EPHEMERAL node per running member, the leader's too;
            // Patroni 3.0).
            "patroni" => elections.push(RawElection {
                standbys: Some(under(&root, "/*/members")),
                ..node(under(&root, "/*/leader"), "data")
            }),
            // Every replicated table at ROOT/tables/<shard>/<table> (the
            // layout ClickHouse's documentation uses): its leader election
            // (EPHEMERAL_SEQUENTIAL, data = the replica name) and its
            // replicas, persistent nodes live while their EPHEMERAL
            // `is_active` exists (ClickHouse 18.16).
            "clickhouse" => {
                elections.push(sequential(
                    under(&root, "/tables/*/*/leader_election"),
                    "data",
                ));
                groups.push(RawGroup {
                    alive: Some("is_active".into()),
                    ..group(under(&root, "/tables/*/*/replicas"))
                });
            }
            // The standalone masters' leader latch (Curator's LeaderLatch
            // at `spark.deploy.zookeeper.dir`/leader_election: EPHEMERAL_
            // SEQUENTIAL `_c_<uuid>-latch-N` with empty data; Spark 4.3):
            // named by the host of the session holding each latch node.
            "spark" => elections.push(sequential(under(&root, "/leader_election"), "owner-host")),
            // Every cluster id's leader latch (Curator's LeaderLatch at
            // ROOT/<cluster-id>/leader/latch, empty data), named by the
            // leader information the latch holder publishes beside it: the
            // REST server's, EPHEMERAL, a Java serialization of its URL
            // (Flink 2.3).
            "flink" => elections.push(RawElection {
                record: Some(RawRecord {
                    path: under(&root, "/*/leader/rest_server/connection_info"),
                    identity: Some("flink".into()),
                }),
                ..sequential(under(&root, "/*/leader/latch"), "owner-record")
            }),
            // The overseer election with the overseer's own record of who
            // leads (`{"id": "<master node name>"}`), and every shard's
            // leader election.
            _ => {
                elections.push(RawElection {
                    record: Some(RawRecord {
                        path: under(&root, "/overseer_elect/leader"),
                        identity: Some("json:/id".into()),
                    }),
                    ..sequential(under(&root, "/overseer_elect/election"), "node")
                });
                elections.push(sequential(
                    under(&root, "/collections/*/leader_elect/*/election"),
                    "node",
                ));
            }
        }
    }
    Ok((elections, groups))
}
