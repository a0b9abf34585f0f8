//! The agent against a Kerberos realm: its configuration from a keytab or
//! a credential cache, Kafka's and HBase's layouts behind `sasl:` ACLs, and
//! readings of its Kerberos series.

use std::path::{Path, PathBuf};

use super::kdc::{KazooWriter, Kdc, REALM};
use super::*;

pub fn principal(name: &str) -> String {
    format!("{name}@{REALM}")
}

/// Read for the agent, everything for the application, nothing for anyone
/// else.
pub fn acl<'a>(app: &'a str, agent: &'a str) -> [[&'a str; 3]; 2] {
    [["sasl", app, "rwcda"], ["sasl", agent, "r"]]
}

/// A cluster of the agent's with `auth` (the inside of `[clusters.auth]`).
pub fn config(servers: &str, auth: &str, extra: &str) -> String {
    format!(
        "[[clusters]]\nname = \"secure\"\nservers = [\"{servers}\"]\nsession_timeout = \"6s\"\n{extra}\n\
         [clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\n{auth}\n"
    )
}

pub fn keytab_auth(kdc: &Kdc, name: &str, keytab: &Path) -> String {
    format!(
        "principal = \"{}\"\nkeytab = \"{}\"\nkrb5_conf = \"{}\"\n",
        principal(name),
        keytab.display(),
        kdc.krb5_conf.display()
    )
}

/// Kafka's controller, brokers and epoch, as a secured Kafka writes them.
pub fn kafka_layout(w: &mut KazooWriter, kafka: &str, acl: &[[&str; 3]]) {
    for dir in ["", "/brokers", "/brokers/ids"] {
        w.create(&format!("{kafka}{dir}"), b"", false, acl);
    }
    w.create(
        &format!("{kafka}/controller_epoch"),
        &payloads::kafka_controller_epoch(7),
        false,
        acl,
    );
    for id in [1, 2] {
        w.create(
            &format!("{kafka}/brokers/ids/{id}"),
            &payloads::kafka_broker(&format!("b{id}.example.com"), 9093, 1_700_000_000_000),
            true,
            acl,
        );
    }
    w.create(
        &format!("{kafka}/controller"),
        &payloads::kafka_controller(1, 1_700_000_000_000),
        true,
        acl,
    );
}

/// HBase's active and backup masters and a region server.
pub fn hbase_layout(w: &mut KazooWriter, hbase: &str, acl: &[[&str; 3]]) {
    for dir in ["", "/backup-masters", "/rs"] {
        w.create(&format!("{hbase}{dir}"), b"", false, acl);
    }
    w.create(
        &format!("{hbase}/master"),
        &payloads::hbase_master("m1.example.com", 16000, 1_700_000_000_001, 16010),
        true,
        acl,
    );
    w.create(
        &format!("{hbase}/backup-masters/m2.example.com,16000,1700000009999"),
        &payloads::hbase_master("m2.example.com", 16000, 1_700_000_009_999, 16010),
        true,
        acl,
    );
    w.create(
        &format!("{hbase}/rs/rs1.example.com,16020,1700000000123"),
        &payloads::hbase_region_server(16020, 16030),
        true,
        acl,
    );
}

/// Kafka's controller moves to `broker`: the old controller's node goes,
/// the new one's is created (as a controller election does).
pub fn hand_over(w: &mut KazooWriter, controller: &str, broker: u32, acl: &[[&str; 3]]) {
    w.delete(controller);
    w.create(
        controller,
        &payloads::kafka_controller(broker, 1_700_000_000_000 + u64::from(broker)),
        true,
        acl,
    );
}

pub fn systems(kafka: &str, hbase: &str) -> String {
    format!(
        "[[clusters.systems]]\nkind = \"kafka\"\nroot = \"{kafka}\"\n\
         [[clusters.systems]]\nkind = \"hbase\"\nroot = \"{hbase}\"\n"
    )
}

/// HBase's layout written by `hbase-{n}` and readable by `agent-{n}`,
/// whose tickets live `life`: the tree's root and the agent's keytab.
pub fn hbase_for(kdc: &Kdc, zk: &ZkServer, n: &str, life: &str) -> (String, PathBuf) {
    let app_keytab = kdc.principal(&format!("hbase-{n}"), "10h");
    let agent_keytab = kdc.principal(&format!("agent-{n}"), life);
    let (app, agent) = (
        principal(&format!("hbase-{n}")),
        principal(&format!("agent-{n}")),
    );
    let hbase = format!("{}-hbase", unique_path(&format!("krb{n}")));
    let mut w = KazooWriter::connect(kdc, zk.port, &app_keytab);
    hbase_layout(&mut w, &hbase, &acl(&app, &agent));
    (hbase, agent_keytab)
}

/// A cluster of only that HBase, without four-letter words.
pub fn hbase_only(hbase: &str) -> String {
    format!(
        "four_letter_words = {{ enabled = false }}\n[[clusters.systems]]\nkind = \"hbase\"\nroot = \"{hbase}\"\n"
    )
}

/// An agent for `agent-{n}` on a credential cache `kinit` filled from its
/// keytab (as k5start or a sidecar would) and nobody renews, with no
/// principal configured (the cache's own is taken) and the servers'
/// principal host from `server_name`.
pub fn cache_agent(kdc: &Kdc, zk: &ZkServer, n: &str, keytab: &Path, hbase: &str) -> Exporter {
    let cache = format!("FILE:{}/agent-{n}.ccache", kdc.dir.display());
    kdc.kinit(&principal(&format!("agent-{n}")), keytab, &cache);
    Exporter::start(&config(
        &zk.address(),
        &format!(
            "credential_cache = \"{cache}\"\nkrb5_conf = \"{}\"\nserver_name = \"localhost\"\n",
            kdc.krb5_conf.display()
        ),
        &hbase_only(hbase),
    ))
}

pub fn master(m: &Metrics, election: &str) -> Option<String> {
    m.series("zookeeper_election_master", &[("election", election)])
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

/// The agent's session id for the cluster, from `/api/v1/status`.
pub fn session_id(exporter: &Exporter) -> String {
    let body = http_get(exporter.port, "/api/v1/status").unwrap().1;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["clusters"][0]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub fn get(m: &Metrics, name: &str) -> f64 {
    m.get(name, &[("ensemble", "secure")]).unwrap_or(-1.0)
}

pub fn kerberos_errors(m: &Metrics, reason: &str) -> f64 {
    m.get(
        "zookeeper_session_kerberos_errors_total",
        &[("ensemble", "secure"), ("reason", reason)],
    )
    .unwrap_or(0.0)
}
