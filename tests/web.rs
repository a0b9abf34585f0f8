//! `--web.config.file` for real: certificates from a throwaway CA, curl
//! as the client, Debian's Prometheus scraping through `tls_config` and
//! `basic_auth`, and a certificate rotated under a running exporter.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::pki::{Ca, Leaf};
use common::program::{Program, query};
use common::*;

const T: Duration = Duration::from_secs(60);
/// bcrypt of "secret" (cost 4), as `htpasswd -nbBC 4 "" secret` writes it.
const HASH: &str = "$2y$04$wNKv/2/lm6mc9K9AP7bW2.McmW/i0FiyvhZg3BXGUGU7qJGji9Zje";

/// What curl got: its exit code, the HTTP status (0: none) and the body.
#[derive(Debug)]
struct Got {
    exit: i32,
    status: u16,
    body: String,
}

/// `curl https://127.0.0.1:{port}{path}` trusting `ca`, with a client
/// certificate and credentials when given.
fn curl(port: u16, path: &str, ca: &Path, client: Option<&Leaf>, user: Option<&str>) -> Got {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "10",
        "-w",
        "\n%{http_code}",
        "--cacert",
    ])
    .arg(ca);
    if let Some(leaf) = client {
        c.arg("--cert").arg(&leaf.cert_file);
        c.arg("--key").arg(&leaf.key_file);
    }
    if let Some(user) = user {
        c.args(["-u", user]);
    }
    c.arg(format!("https://127.0.0.1:{port}{path}"));
    let out = c
        .output()
        .expect("curl (Debian package curl) must be installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    Got {
        exit: out.status.code().unwrap_or(-1),
        status: status.trim().parse().unwrap_or(0),
        body: format!("{body}{}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn tls_client_certificates_basic_auth_and_a_rotated_certificate() {
    let dir = temp_dir("web-tls");
    let servers = Ca::new(&dir, "servers");
    servers.issue(&dir, "server", &["127.0.0.1", "localhost"]);
    let clients = Ca::new(&dir, "clients");
    let prometheus_cert = clients.issue(&dir, "prometheus", &["prometheus"]);
    let stranger = Ca::new(&dir, "stranger").issue(&dir, "stranger", &["prometheus"]);
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients-ca.pem\n\
             basic_auth_users:\n  prometheus: '{HASH}'\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let ca = servers.cert_file.clone();
    let good = prometheus_cert.clone();
    let exporter = Exporter::launch(
        &offline_args(port, &["--web.config.file", &web.display().to_string()]),
        &[],
        port,
        None,
        &|port| match curl(port, "/healthz", &ca, Some(&good), None) {
            Got { status: 200, .. } => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );

    // Right certificate and password.
    let ok = curl(
        port,
        "/metrics",
        &ca,
        Some(&prometheus_cert),
        Some("prometheus:secret"),
    );
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(
        ok.body.contains("zookeeper_exporter_http_tls_enabled 1"),
        "{}",
        ok.body
    );
    // Wrong password, no password: 401; /healthz stays open for probes.
    let wrong = curl(
        port,
        "/metrics",
        &ca,
        Some(&prometheus_cert),
        Some("prometheus:guess"),
    );
    assert_eq!(wrong.status, 401, "{wrong:?}");
    let none = curl(port, "/api/v1/trees", &ca, Some(&prometheus_cert), None);
    assert_eq!(none.status, 401, "{none:?}");
    // No client certificate, or one from another CA: no HTTP at all.
    for client in [None, Some(&stranger)] {
        let refused = curl(port, "/healthz", &ca, client, Some("prometheus:secret"));
        assert_eq!(refused.status, 0, "handshake refused: {refused:?}");
        assert_ne!(refused.exit, 0, "{refused:?}");
    }
    // Plain HTTP on the TLS port gets nothing either.
    let plain = http_get(port, "/healthz");
    assert!(!matches!(plain, Ok((200, _))), "{plain:?}");

    // Debian's Prometheus scrapes through tls_config and basic_auth; a job
    // with the wrong password is down.
    let (cert, key) = (&prometheus_cert.cert_file, &prometheus_cert.key_file);
    let prometheus = Program::start("prometheus-tls", |d, p| {
        std::fs::write(
            d.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n\
                 - job_name: right\n  scheme: https\n  tls_config:\n    ca_file: {ca}\n    cert_file: {cert}\n    key_file: {key}\n  basic_auth:\n    username: prometheus\n    password: secret\n  static_configs:\n  - targets: ['127.0.0.1:{port}']\n\
                 - job_name: wrong\n  scheme: https\n  tls_config:\n    ca_file: {ca}\n    cert_file: {cert}\n    key_file: {key}\n  basic_auth:\n    username: prometheus\n    password: guess\n  static_configs:\n  - targets: ['127.0.0.1:{port}']\n",
                ca = servers.cert_file.display(),
                cert = cert.display(),
                key = key.display(),
            ),
        )
        .unwrap();
        format!(
            "prometheus --config.file={d}/prometheus.yml --storage.tsdb.path={d}/data --web.listen-address=127.0.0.1:{p}",
            d = d.display()
        )
    });
    wait_for("Prometheus scraped over TLS with basic auth", T, || {
        let up = query(
            &prometheus,
            "up{job=\"right\"} == 1 and on() up{job=\"wrong\"} == 0",
        )?;
        let tls = query(
            &prometheus,
            "zookeeper_exporter_http_tls_enabled{job=\"right\"} == 1",
        )?;
        if up.is_empty() || tls.is_empty() {
            Err(format!("up: {up:?}, tls: {tls:?}"))
        } else {
            Ok(())
        }
    });
    drop(prometheus);

    // Rotate: a certificate from a new CA, written over the old files.
    let rotated = Ca::new(&dir, "rotated");
    rotated.issue(&dir, "server", &["127.0.0.1", "localhost"]);
    wait_for("the rotated certificate served", T, || {
        match curl(
            port,
            "/metrics",
            &rotated.cert_file,
            Some(&prometheus_cert),
            Some("prometheus:secret"),
        ) {
            Got { status: 200, .. } => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    let old = curl(
        port,
        "/healthz",
        &servers.cert_file,
        Some(&prometheus_cert),
        None,
    );
    assert_eq!(old.status, 0, "the old CA no longer verifies: {old:?}");
    let m = curl(
        port,
        "/metrics",
        &rotated.cert_file,
        Some(&prometheus_cert),
        Some("prometheus:secret"),
    );
    assert!(
        m.body
            .contains("zookeeper_exporter_web_config_reloads_total{result=\"success\"} 1"),
        "{}",
        m.body
    );
    assert!(
        exporter.log().contains("web config reloaded"),
        "{}",
        exporter.log()
    );
}

#[test]
fn a_broken_edit_keeps_the_config_in_force_and_is_counted() {
    let dir = temp_dir("web-reload");
    let web = dir.join("web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  prometheus: '{HASH}'\n")).unwrap();
    let port = free_port();
    let exporter = Exporter::spawn(
        &offline_args(port, &["--web.config.file", &web.display().to_string()]),
        &[],
        port,
    );
    let auth = ("Authorization", "Basic cHJvbWV0aGV1czpzZWNyZXQ=");
    let scrape = |headers: &[(&str, &str)]| http_get_with(port, "/metrics", headers).unwrap();
    assert_eq!(scrape(&[]).0, 401);
    assert_eq!(scrape(&[auth]).0, 200);
    std::fs::write(&web, "basic_auth_users:\n  prometheus: not-a-hash\n").unwrap();
    let body = wait_for("the failed reload counted", T, || {
        let (status, body) = scrape(&[auth]);
        if status == 200
            && body.contains("zookeeper_exporter_web_config_reloads_total{result=\"failure\"} 1")
        {
            Ok(body)
        } else {
            Err(format!("{status}"))
        }
    });
    assert!(body.contains("zookeeper_exporter_web_config_last_reload_successful 0"));
    assert_eq!(scrape(&[]).0, 401, "the old config is still in force");
    let log = exporter.log();
    assert_eq!(
        log.matches("keeping the web config in force").count(),
        1,
        "logged once: {log}"
    );
    assert!(log.contains("basic_auth_users.prometheus"), "{log}");
    // Fixed by removing authentication: open.
    std::fs::write(&web, "").unwrap();
    wait_for("the fixed file loaded", T, || match scrape(&[]) {
        (200, body) if body.contains("zookeeper_exporter_web_config_last_reload_successful 1") => {
            Ok(())
        }
        (status, _) => Err(format!("{status}")),
    });
}
