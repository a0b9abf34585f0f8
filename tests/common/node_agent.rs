//! The agent over node-style elections laid out as Kafka, HBase and HDFS
//! lay them out: its configuration, and readings of the controller.

use super::*;

pub fn config(servers: &str, chroot: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{servers}\"]\nchroot = \"{chroot}\"\n\
         session_timeout = \"15s\"\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"/controller\"\nstyle = \"node\"\nidentity = \"json:/brokerid\"\n\
         standbys = \"/brokers/ids\"\nepoch = \"/controller_epoch\"\n"
    )
}

/// The quick start: `--zk` and one `--system KIND:ROOT` per entry, no
/// configuration file (the cluster is named `default`).
pub fn with_systems(zk: &ZkServer, systems: &[String]) -> Exporter {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut list = vec![
        "--zk".to_owned(),
        zk.address(),
        "--no-four-letter-words".into(),
    ];
    for s in systems {
        list.extend(["--system".to_owned(), s.clone()]);
    }
    list.extend(["--web.listen-address".to_owned(), listen]);
    Exporter::spawn(&list, &[], port)
}

pub fn labels() -> [(&'static str, &'static str); 2] {
    [("ensemble", "test"), ("election", "/controller")]
}

pub fn controller(m: &Metrics) -> Option<String> {
    m.series("zookeeper_election_master", &labels())
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

pub fn controller_switches(m: &Metrics) -> Option<f64> {
    m.get("zookeeper_election_master_changes_total", &labels())
}
