//! `check-config` prints everything in force, as TOML that loads back to
//! the same configuration.

use super::*;

/// Prints `c`, loads the print, and checks nothing changed (`Debug` covers
/// every setting; secrets are files here, so nothing is masked away).
fn round_trip(c: &Config) -> String {
    let printed = summary::summary(c);
    let again = load_file(&printed, &[])
        .unwrap_or_else(|e| panic!("check-config's output does not load: {e}\n{printed}"));
    assert_eq!(
        format!("{again:?}"),
        format!("{c:?}"),
        "check-config's output loads to another configuration:\n{printed}"
    );
    printed
}

#[test]
fn everything_in_force_is_printed_and_loads_back_the_same() {
    let creds = file("monitor:pw\n");
    let token = file("t0ken\n");
    let dsn = file("postgres://zkee@db:5432/app?sslmode=verify-full\n");
    let dsn_password = file("hunter2\n");
    let toml = format!(
        r#"
[web]
listen_address = "127.0.0.1:9999"
telemetry_path = "/m"
idle_timeout = "30s"
max_connections = 64
[[clusters]]
name = "prod"
servers = ["zk1:2181", "zk2:2181"]
chroot = "/apps"
session_timeout = "6s"
latency_read_interval = "2s"
watch_mode = "oneshot"
max_elections = 500
max_tracked_elections = 9000
attention_window = "5m"
max_groups = 70
max_locks = 80
timeline_size = 321
auth = {{ scheme = "digest", credentials_file = "{creds}" }}
four_letter_words = {{ commands = ["mntr", "srvr"], timeout = "1500ms", min_interval = "3s", admin_url = "http://{{host}}:8080/commands" }}
ghost_check = {{ cons_interval = "2s", watches = true }}
probe = {{ path = "/zkee-probe", interval = "20s", write = true }}
[[clusters.elections]]
path = "/wechat/bots/*"
identity = "json:/device/id"
min_candidates = 2
no_master_for = "30s"
exclude = ["/wechat/bots/retired_*"]
lease = {{ dsn_file = "{dsn}", password_file = "{dsn_password}", table = "app.master_lease", key_from = "capture", interval = "1s", timeout = "500ms", max_rows = 5000, time_zone = "Asia/Shanghai", split_brain_for = "30s", expired_for = "90s" }}
[[clusters.elections]]
path = "/solr/overseer_elect/election"
slo = {{ availability = 0.9995, window = "7d" }}
identity = "regex:^(\\d+)-"
record = {{ path = "/solr/overseer_elect/leader", identity = "json:/id" }}
[[clusters.elections]]
path = "/kafka/controller"
style = "node"
identity = "json:/brokerid"
epoch = "/kafka/controller_epoch"
standbys = "/kafka/brokers/ids"
[[clusters.groups]]
path = "/services/*"
member = "data"
min_members = 2
export_members = true
[[clusters.groups]]
path = "/clickhouse/tables/*/*/replicas"
alive = "is_active"
[[clusters.locks]]
path = "/locks/*"
max_hold = "30m"
exclude = ["/locks/idle"]
[[clusters.systems]]
kind = "hbase"
root = "/hbase-prod"
[[clusters]]
name = "found"
servers = ["zk9:2181"]
discovery = {{ root = "/apps", exclude = ["/apps/tmp"], max_nodes = 5000, interval = "2m", settle = "20s" }}
[alerting]
alertmanagers = [{{ url = "http://am1:9093", timeout = "3s", bearer_token_file = "{token}" }}, "http://am2:9093"]
no_master_for = "7s"
external_labels = {{ env = "prod" }}
generator_url = "http://agent:9141"
runbook_url = "https://wiki.example/zk"
max_alerts = 99
"#,
        creds = creds.path().display(),
        token = token.path().display(),
        dsn = dsn.path().display(),
        dsn_password = dsn_password.path().display(),
    );
    let c = load_file(&toml, &[]).unwrap();
    let printed = round_trip(&c);
    assert!(printed.contains("key_from = \"capture\""), "{printed}");
    assert!(!printed.contains("hunter2"), "{printed}");
    // The system is expanded into the trees it watches.
    assert!(
        printed.contains("path = \"/hbase-prod/master\""),
        "{printed}"
    );
    assert!(printed.contains("identity = \"hbase\""), "{printed}");
    // What the old summary left out.
    for key in [
        "min_candidates = 2",
        "member = \"data\"",
        "min_members = 2",
        "export_members = true",
        "alive = \"is_active\"",
        "max_hold = \"30m\"",
        "style = \"node\"",
        "epoch = \"/kafka/controller_epoch\"",
        "standbys = \"/kafka/brokers/ids\"",
        "[clusters.elections.record]\npath = \"/solr/overseer_elect/leader\"",
        "identity = \"json:/device/id\"",
    ] {
        assert!(printed.contains(key), "{key} missing from:\n{printed}");
    }
    assert!(!printed.contains("monitor:pw") && !printed.contains("t0ken"));
}

#[test]
fn inline_secrets_are_masked_and_the_shipped_example_loads_back() {
    let c = load_file(
        "[[clusters]]\nservers=[\"a:1\"]\nauth = { credentials = \"user:s3cret\" }\n",
        &[],
    )
    .unwrap();
    let printed = summary::summary(&c);
    assert!(!printed.contains("s3cret"), "{printed}");
    assert!(
        printed.contains("credentials = \"<redacted>\""),
        "{printed}"
    );

    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/config.toml"))
            .unwrap();
    // The example's inline credentials would print masked: give them a
    // file instead, the rest as shipped.
    let creds = file("monitor:change-me\n");
    let example = example.replace(
        "auth = { scheme = \"digest\", credentials = \"monitor:change-me\" }",
        &format!(
            "auth = {{ scheme = \"digest\", credentials_file = \"{}\" }}",
            creds.path().display()
        ),
    );
    round_trip(&load_file(&example, &[]).unwrap());
}

#[test]
fn every_known_system_expands_into_trees_that_load_back_the_same() {
    for kind in crate::systems::names() {
        for root in [None, Some("/deep/root")] {
            let root_line = root
                .map(|r| format!("root = \"{r}\"\n"))
                .unwrap_or_default();
            let toml = format!(
                "[[clusters]]\nservers = [\"zk1:2181\"]\n[[clusters.systems]]\nkind = \"{kind}\"\n{root_line}"
            );
            let c = load_file(&toml, &[]).unwrap_or_else(|e| panic!("{kind}: {e}"));
            let printed = round_trip(&c);
            assert!(
                !printed.contains("[[clusters.systems]]"),
                "{kind}: {printed}"
            );
            assert!(
                printed.contains("[[clusters.elections]]"),
                "{kind}: {printed}"
            );
        }
    }
}

/// A Kerberos cluster prints its principal, keytab, krb5.conf and the
/// servers' principal, and loads back the same.
/// A build without Kerberos refuses a GSSAPI cluster at load, naming the
/// key and what to do, rather than failing at the first connection.
#[cfg(not(feature = "kerberos"))]
#[test]
fn a_kerberos_cluster_is_refused_by_a_build_without_kerberos() {
    let toml = "[[clusters]]\nservers = [\"zk1:2181\"]\n[clusters.auth]\nscheme = \"sasl\"\n\
                mechanism = \"GSSAPI\"\nprincipal = \"agent@EXAMPLE.COM\"\n";
    let e = load_file(toml, &[]).unwrap_err();
    assert_eq!(e.key, "clusters[0].auth.mechanism", "{e:?}");
    assert!(e.message.contains("--features kerberos"), "{e:?}");
}

/// Only a build with Kerberos loads a GSSAPI cluster.
#[cfg(feature = "kerberos")]
#[test]
fn a_kerberos_cluster_is_printed_and_loads_back_the_same() {
    let keytab = file("not a real keytab");
    let krb5 = file("[libdefaults]\n");
    let toml = format!(
        "[[clusters]]\nservers = [\"zk1:2181\"]\n[clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\n\
         principal = \"agent@EXAMPLE.COM\"\nkeytab = \"{}\"\nkrb5_conf = \"{}\"\nserver_name = \"zk.example.com\"\n\
         [[clusters]]\nname = \"other\"\nservers = [\"zk9:2181\"]\n[clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\n\
         principal = \"agent@EXAMPLE.COM\"\nkeytab = \"{0}\"\nkrb5_conf = \"{1}\"\nservice_name = \"zk\"\n",
        keytab.path().display(),
        krb5.path().display()
    );
    let c = load_file(&toml, &[]).unwrap();
    let printed = round_trip(&c);
    assert!(
        printed.contains(&format!(
            "[clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\nprincipal = \"agent@EXAMPLE.COM\"\nkeytab = \"{}\"",
            keytab.path().display()
        )),
        "{printed}"
    );
    assert!(
        printed.contains("server_name = \"zk.example.com\""),
        "{printed}"
    );
    assert!(printed.contains("service_name = \"zk\""), "{printed}");
    assert_eq!(
        c.kerberos.unwrap().principal.as_deref(),
        Some("agent@EXAMPLE.COM"),
        "one identity for both clusters"
    );
}
