use super::*;

#[path = "../../../tests/common/pki.rs"]
pub(crate) mod pki;

/// A fresh directory for one test's files.
fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zkee-webconfig-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("web.yml");
    std::fs::write(&p, text).unwrap();
    p
}

fn refused(dir: &Path, text: &str) -> WebConfigError {
    load(&write(dir, text)).expect_err(text)
}

/// bcrypt of "secret" at cost 4, in the `$2y$` form `htpasswd -B` writes.
const HASH: &str = "$2y$04$wNKv/2/lm6mc9K9AP7bW2.McmW/i0FiyvhZg3BXGUGU7qJGji9Zje";

#[test]
fn an_empty_file_is_plain_http_without_authentication() {
    let d = dir("empty");
    let loaded = load(&write(&d, "")).unwrap();
    assert!(loaded.config.tls.is_none() && loaded.config.users.is_empty());
    assert_eq!(loaded.files, vec![d.join("web.yml")]);
}

#[test]
fn the_hash_in_tests_is_bcrypt_of_secret() {
    assert!(bcrypt::verify("secret", HASH).unwrap());
}

#[test]
fn every_mistake_names_its_key() {
    let d = dir("mistakes");
    let pki = pki::Ca::new(&d, "t");
    let leaf = pki.issue(&d, "server", &["localhost"]);
    let (cert, key, ca) = (
        leaf.cert_file.display().to_string(),
        leaf.key_file.display().to_string(),
        pki.cert_file.display().to_string(),
    );
    let tls = |extra: &str| {
        format!("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n{extra}")
    };
    let cases: Vec<(String, &str)> = vec![
        ("bogus: 1\n".into(), ""),
        (
            "tls_server_config:\n  cert_fle: x\n".into(),
            "tls_server_config",
        ),
        (
            "tls_server_config:\n  key_file: x\n".into(),
            "tls_server_config.cert_file",
        ),
        (
            tls("  client_auth_type: Sometimes\n"),
            "tls_server_config.client_auth_type",
        ),
        (
            tls(&format!("  client_ca_file: {ca}\n")),
            "tls_server_config.client_auth_type",
        ),
        (
            tls("  client_auth_type: RequireAndVerifyClientCert\n"),
            "tls_server_config.client_ca_file",
        ),
        (
            tls("  min_version: SSL3\n"),
            "tls_server_config.min_version",
        ),
        (
            tls("  max_version: TLS11\n"),
            "tls_server_config.max_version",
        ),
        (
            tls("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n"),
            "tls_server_config.cipher_suites",
        ),
        (
            tls("  curve_preferences: [CurveP1]\n"),
            "tls_server_config.curve_preferences",
        ),
        (
            tls("  client_allowed_sans: [a]\n"),
            "tls_server_config.client_allowed_sans",
        ),
        (
            format!("tls_server_config:\n  cert_file: {cert}\n  key_file: {cert}\n"),
            "tls_server_config.key_file",
        ),
        (
            format!("tls_server_config:\n  cert_file: {key}\n  key_file: {key}\n"),
            "tls_server_config.cert_file",
        ),
        (
            "tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: x\n".into(),
            "tls_server_config.cert_file",
        ),
        (
            "basic_auth_users:\n  alice: plaintext\n".into(),
            "basic_auth_users.alice",
        ),
        (
            format!("basic_auth_users:\n  'a:b': '{HASH}'\n"),
            "basic_auth_users.a:b",
        ),
        (
            "http_server_config:\n  headers:\n    Set-Cookie: x\n".into(),
            "http_server_config.headers.Set-Cookie",
        ),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: allow\n".into(),
            "http_server_config.headers.X-Frame-Options",
        ),
        ("rate_limit:\n  burst: 1\n".into(), "rate_limit"),
    ];
    for (text, key) in cases {
        let e = refused(&d, &text);
        assert_eq!(e.key, key, "{text}: {e}");
        assert!(e.to_string().contains("web.yml"), "{e}");
    }
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused() {
    let d = dir("mismatch");
    let ca = pki::Ca::new(&d, "t");
    let a = ca.issue(&d, "a", &["localhost"]);
    let b = ca.issue(&d, "b", &["localhost"]);
    let e = refused(
        &d,
        &format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            a.cert_file.display(),
            b.key_file.display()
        ),
    );
    assert_eq!(e.key, "tls_server_config.key_file", "{e}");
}

#[test]
fn a_full_config_loads_with_relative_paths_and_lists_its_files() {
    let d = dir("full");
    let ca = pki::Ca::new(&d, "clients");
    let leaf = ca.issue(&d, "server", &["localhost", "127.0.0.1"]);
    let text = format!(
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients-ca.pem\n  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]\nhttp_server_config:\n  http2: false\n  headers:\n    strict-transport-security: max-age=31536000\n    X-Frame-Options: deny\n    X-XSS-Protection: ''\nbasic_auth_users:\n  prometheus: '{HASH}'\n"
    );
    let loaded = load(&write(&d, &text)).unwrap();
    let tls = loaded.config.tls.clone().expect("TLS");
    assert_eq!(tls.alpn_protocols, vec![b"http/1.1".to_vec()]);
    let client = ca.issue(&d, "client", &["prometheus"]);
    let stranger = pki::Ca::new(&d, "other").issue(&d, "stranger", &["prometheus"]);
    let trusting = |c: Option<&pki::Leaf>| client_config(&d.join("clients-ca.pem"), c);
    assert!(handshake(tls.clone(), trusting(Some(&client))).is_ok());
    assert!(
        handshake(tls.clone(), trusting(None)).is_err(),
        "no client certificate"
    );
    assert!(
        handshake(tls, trusting(Some(&stranger))).is_err(),
        "another CA's client"
    );
    assert_eq!(loaded.config.users.len(), 1);
    let mut headers: Vec<&str> = loaded
        .config
        .headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    headers.sort();
    assert_eq!(
        headers,
        vec!["strict-transport-security", "x-frame-options"],
        "blank is unset"
    );
    assert_eq!(
        loaded.files,
        vec![
            d.join("web.yml"),
            leaf.cert_file.clone(),
            leaf.key_file.clone(),
            ca.cert_file.clone()
        ]
    );
}

/// A client trusting `ca`, presenting `cert` if given.
fn client_config(ca: &Path, cert: Option<&pki::Leaf>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    Arc::new(match cert {
        Some(l) => builder
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(&l.cert_file)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_file(&l.key_file).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    })
}

/// A TLS handshake between the two configs in memory, then one byte
/// each way (a TLS 1.3 server refuses a client certificate only after the
/// client thinks it is done).
fn handshake(
    server: Arc<ServerConfig>,
    client: Arc<rustls::ClientConfig>,
) -> Result<(), rustls::Error> {
    use std::io::{Read, Write};
    let mut s = rustls::ServerConnection::new(server)?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut c = rustls::ClientConnection::new(client, name)?;
    c.writer().write_all(b"x").unwrap();
    s.writer().write_all(b"y").unwrap();
    let mut got = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let mut buf = Vec::new();
        c.write_tls(&mut buf).unwrap();
        s.read_tls(&mut &buf[..]).unwrap();
        s.process_new_packets()?;
        let mut buf = Vec::new();
        s.write_tls(&mut buf).unwrap();
        c.read_tls(&mut &buf[..]).unwrap();
        c.process_new_packets()?;
        let _ = s.reader().read_to_end(&mut got.0);
        let _ = c.reader().read_to_end(&mut got.1);
        if got == (b"x".to_vec(), b"y".to_vec()) {
            return Ok(());
        }
    }
    Err(rustls::Error::General("handshake did not finish".into()))
}

#[test]
fn every_policy_asks_for_and_checks_client_certificates_as_go_does() {
    let d = dir("policies");
    let ca = pki::Ca::new(&d, "c");
    ca.issue(&d, "server", &["localhost"]);
    let own = ca.issue(&d, "client", &["prometheus"]);
    let stranger = pki::Ca::new(&d, "other").issue(&d, "stranger", &["prometheus"]);
    let ca_file = ca.cert_file.clone();
    // Policy, needs the CA, accepts (none, own CA's, another CA's).
    for (policy, with_ca, accepts) in [
        ("NoClientCert", false, [true, true, true]),
        ("RequestClientCert", false, [true, true, true]),
        ("RequireAnyClientCert", false, [false, true, true]),
        ("VerifyClientCertIfGiven", true, [true, true, false]),
        ("RequireAndVerifyClientCert", true, [false, true, false]),
    ] {
        let ca_line = if with_ca {
            "  client_ca_file: c-ca.pem\n"
        } else {
            ""
        };
        let text = format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: {policy}\n{ca_line}"
        );
        let tls = load(&write(&d, &text)).unwrap().config.tls.unwrap();
        let got = [None, Some(&own), Some(&stranger)]
            .map(|c| handshake(tls.clone(), client_config(&ca_file, c)).is_ok());
        assert_eq!(got, accepts, "{policy}");
    }
}

#[test]
fn the_fingerprint_moves_when_a_named_file_changes() {
    let d = dir("fingerprint");
    let ca = pki::Ca::new(&d, "t");
    let leaf = ca.issue(&d, "server", &["localhost"]);
    let files = vec![leaf.cert_file.clone(), d.join("missing.pem")];
    let before = fingerprint(&files);
    assert_eq!(before, fingerprint(&files));
    ca.issue(&d, "server", &["localhost"]);
    assert_ne!(before, fingerprint(&files), "rotated certificate");
}
