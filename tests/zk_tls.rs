//! ZooKeeper's own security for real: Debian's ZooKeeper 3.8 with a
//! `secureClientPort` (Netty, PEM key and trust stores, client certificates
//! required) and with SASL DIGEST-MD5 (a JAAS `Server` section), the agent
//! following elections and polling four-letter words over TLS, and clear
//! errors for a wrong CA and wrong SASL credentials.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::pki::Ca;
use common::*;
use zookeeper_client::{Acls, Client, CreateMode};

const T: Duration = Duration::from_secs(60);

/// A standalone server with a TLS port beside its plain one (the harness
/// checks the plain one for readiness); returns it and the TLS address.
fn tls_server(dir: &Path, ca: &Ca) -> (ZkServer, String) {
    let server = ca.issue(dir, "zk", &["127.0.0.1", "localhost"]);
    let port = free_port();
    let zk = ZkServer::start_custom(
        ServerOptions::default(),
        &format!(
            "secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\nssl.clientAuth=need\n",
            server.bundle_file.display(),
            ca.cert_file.display()
        ),
        "",
    );
    (zk, format!("127.0.0.1:{port}"))
}

fn tls_table(ca: &Path, cert: &Path, key: &Path) -> String {
    format!(
        "[clusters.tls]\nca_file = \"{}\"\ncert_file = \"{}\"\nkey_file = \"{}\"\n",
        ca.display(),
        cert.display(),
        key.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_and_four_letter_words_over_tls() {
    let dir = temp_dir("zk-tls");
    let ca = Ca::new(&dir, "zk");
    let agent = ca.issue(&dir, "agent", &["agent"]);
    let (zk, secure) = tls_server(&dir, &ca);
    // Candidates over the plain port; the agent only over TLS.
    let base = unique_path("tls");
    let c = client(&zk.address()).await;
    mkdir(&c, &base).await;
    let election = format!("{base}/bot_1");
    mkdir(&c, &election).await;
    candidate(&c, &election, "n_", b"device-a").await;
    let mut config = cluster_config(&secure, &format!("{base}/*"), "");
    config.push_str(&tls_table(&ca.cert_file, &agent.cert_file, &agent.key_file));
    let exporter = Exporter::start(&config);
    let m = exporter
        .until("the election followed over TLS", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    assert_eq!(
        m.get(
            "zookeeper_session_state",
            &[("ensemble", "test"), ("state", "connected")]
        ),
        Some(1.0)
    );
    exporter
        .until("mntr over TLS", T, |m| {
            m.get(
                "zookeeper_fourlw_up",
                &[("server", &secure), ("command", "mntr")],
            ) == Some(1.0)
        })
        .await;
    let (status, _) = exporter.ready();
    assert_eq!(status, 200);
    // Mastership moves and the agent, over TLS, sees it.
    drop(c);
    let c2 = client(&zk.address()).await;
    candidate(&c2, &election, "n_", b"device-b").await;
    exporter
        .until("the new master over TLS", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-b")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_a_clear_error_not_a_crash() {
    let dir = temp_dir("zk-tls-wrong");
    let ca = Ca::new(&dir, "zk");
    let (zk, secure) = tls_server(&dir, &ca);
    let stranger = Ca::new(&dir, "stranger");
    let agent = ca.issue(&dir, "agent", &["agent"]);
    let mut config = cluster_config(&secure, "/nowhere/*", "");
    config.push_str(&tls_table(
        &stranger.cert_file,
        &agent.cert_file,
        &agent.key_file,
    ));
    let exporter = Exporter::start(&config);
    let reason = exporter.until_not_ready("TLS handshake", T).await;
    assert!(reason.contains("cluster test: session"), "{reason}");
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    let m = exporter
        .until("the four-letter words fail as TLS", T, |m| {
            m.get(
                "zookeeper_fourlw_errors_total",
                &[("server", &secure), ("command", "mntr"), ("reason", "tls")],
            )
            .is_some_and(|n| n >= 1.0)
        })
        .await;
    assert_eq!(
        m.get(
            "zookeeper_fourlw_up",
            &[("server", &secure), ("command", "mntr")]
        ),
        Some(0.0)
    );
    assert!(
        m.get(
            "zookeeper_session_connect_failures_total",
            &[("ensemble", "test")]
        )
        .is_some_and(|n| n >= 1.0)
    );
    let log = exporter.log();
    assert!(
        log.contains(&format!("the TLS handshake with {secure} failed"))
            && log.contains("UnknownIssuer"),
        "the log says what failed: {log}"
    );
    drop(zk);
}

/// A JAAS file with one SASL DIGEST-MD5 user.
fn jaas(dir: &Path, user: &str, password: &str) -> PathBuf {
    let file = dir.join("jaas.conf");
    std::fs::write(
        &file,
        format!(
            "Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_{user}=\"{password}\";\n}};\n"
        ),
    )
    .unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_readable_only_by_a_sasl_user() {
    let dir = temp_dir("zk-sasl");
    let jaas = jaas(&dir, "agent", "s3cret");
    let zk = ZkServer::start_custom(
        ServerOptions::default(),
        "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
        &format!("-Djava.security.auth.login.config={}", jaas.display()),
    );
    // The tree, readable only by sasl:agent.
    let owner = Client::connector()
        .with_sasl(zookeeper_client::SaslOptions::digest_md5("agent", "s3cret"))
        .connect(&zk.address())
        .await
        .expect("SASL session");
    let acl = [zookeeper_client::Acl::new_const(
        zookeeper_client::Permission::ALL,
        "sasl",
        "agent",
    )];
    let only_agent = CreateMode::Persistent.with_acls(Acls::new(&acl));
    let base = unique_path("sasl");
    owner
        .create(
            &base,
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    let election = format!("{base}/bot_1");
    owner.create(&election, b"", &only_agent).await.unwrap();
    owner
        .create(
            &format!("{election}/n_"),
            b"device-a",
            &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    let credentials = dir.join("credentials");
    let run = |password: &str| {
        std::fs::write(&credentials, format!("agent:{password}\n")).unwrap();
        Exporter::start(&format!(
            "{}[clusters.auth]\nscheme = \"sasl\"\ncredentials_file = \"{}\"\n",
            cluster_config(
                &zk.address(),
                &format!("{base}/*"),
                "four_letter_words = { enabled = false }"
            ),
            credentials.display()
        ))
    };
    let right = run("s3cret");
    right
        .until("the election read with SASL credentials", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    drop(right);
    let wrong = run("guess");
    let reason = wrong.until_not_ready("SASL", T).await;
    assert!(
        reason.contains("SASL DIGEST-MD5 credentials from"),
        "{reason}"
    );
    assert!(
        reason.contains(&credentials.display().to_string()),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_word_is_asked_of_an_https_admin_server() {
    let dir = temp_dir("zk-admin-tls");
    let ca = Ca::new(&dir, "zk");
    let server = ca.issue(&dir, "zk", &["127.0.0.1", "localhost"]);
    let agent = ca.issue(&dir, "agent", &["agent"]);
    let admin = free_port();
    let port = free_port();
    // ZooKeeper's default whitelist (srvr only): mntr comes from the
    // AdminServer, served over HTTPS with the same CA.
    let zk = ZkServer::start_custom(
        ServerOptions {
            whitelist: None,
            admin_port: Some(admin),
        },
        &format!(
            "secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={bundle}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={ca}\nssl.trustStore.type=PEM\n\
             admin.forceHttps=true\n\
             ssl.quorum.keyStore.location={bundle}\nssl.quorum.keyStore.type=PEM\n\
             ssl.quorum.trustStore.location={ca}\nssl.quorum.trustStore.type=PEM\n",
            bundle = server.bundle_file.display(),
            ca = ca.cert_file.display()
        ),
        "",
    );
    let secure = format!("127.0.0.1:{port}");
    let mut config = cluster_config(
        &secure,
        "/nowhere/*",
        &format!(
            "four_letter_words = {{ commands = [\"mntr\"], admin_url = \"https://{{host}}:{admin}/commands\" }}"
        ),
    );
    config.push_str(&tls_table(&ca.cert_file, &agent.cert_file, &agent.key_file));
    let exporter = Exporter::start(&config);
    exporter
        .until("mntr from the HTTPS AdminServer", T, |m| {
            m.get(
                "zookeeper_fourlw_up",
                &[("server", &secure), ("command", "mntr")],
            ) == Some(1.0)
        })
        .await;
    drop(zk);
}
