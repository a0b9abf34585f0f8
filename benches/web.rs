//! The web side against a real ZooKeeper with 5,000 elections (a 5 MiB
//! body): scrape latency over plain HTTP, TLS and TLS with basic auth in
//! the same run (kept-alive and new connections), and RSS with 40 scrapers
//! that never read their answer.
//! Run: cargo bench --bench web
//! `ZKEE_BENCH_BIN=/path/to/zk-election-exporter` measures another build
//! (the stalled-reader figure of a build before render sharing).

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::pki::Ca;
use common::*;
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;

const ELECTIONS: usize = 5_000;
const SCRAPES: usize = 40;

fn binary() -> PathBuf {
    std::env::var_os("ZKEE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zk-election-exporter")))
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

/// Starts an exporter on `zk` watching `base/*`, with `args` beside its
/// config, and waits until every election is exported.
fn exporter(zk: &ZkServer, base: &str, args: &[String]) -> (Child, u16) {
    let dir = temp_dir("bench-web");
    let port = free_port();
    std::fs::write(
        dir.join("c.toml"),
        format!(
            "[web]\nlisten_address = \"127.0.0.1:{port}\"\n[[clusters]]\nname = \"b\"\nservers = [\"{}\"]\n\
             [clusters.four_letter_words]\nenabled = false\n[[clusters.elections]]\npath = \"{base}/*\"\n",
            zk.address()
        ),
    )
    .unwrap();
    let child = Command::new(binary())
        .arg("--config")
        .arg(dir.join("c.toml"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, port)
}

async fn elections(zk: &ZkServer) -> String {
    let base = unique_path("bench-web");
    let owner = one_candidate_elections(&zk.address(), &base, ELECTIONS).await;
    std::mem::forget(owner); // the candidates live as long as the bench
    base
}

/// One GET /metrics on `s` (kept alive); the body length.
fn scrape<S: Read + Write>(s: &mut S, auth: Option<&str>) -> usize {
    let auth = auth
        .map(|a| format!("Authorization: Basic {a}\r\n"))
        .unwrap_or_default();
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{auth}\r\n").as_bytes())
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("content-length");
    let mut body = vec![0; len];
    s.read_exact(&mut body).unwrap();
    len
}

fn tls_client(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

fn connect(port: u16, tls: Option<&Arc<rustls::ClientConfig>>) -> Box<dyn ReadWrite> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_nodelay(true).unwrap();
    match tls {
        None => Box::new(tcp),
        Some(config) => {
            let conn = rustls::ClientConnection::new(
                config.clone(),
                ServerName::try_from("127.0.0.1").unwrap(),
            )
            .unwrap();
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn latency(name: &str, port: u16, tls: Option<&Arc<rustls::ClientConfig>>, auth: Option<&str>) {
    let mut kept = connect(port, tls);
    scrape(&mut kept, auth); // warm
    let mut alive = Vec::new();
    let mut fresh = Vec::new();
    let mut len = 0;
    for _ in 0..SCRAPES {
        let t = Instant::now();
        len = scrape(&mut kept, auth);
        alive.push(t.elapsed());
        let t = Instant::now();
        let mut c = connect(port, tls);
        scrape(&mut c, auth);
        fresh.push(t.elapsed());
    }
    println!(
        "{name:<22} body {:.1} MiB: kept-alive median {:.1?}, new connection median {:.1?}",
        len as f64 / (1 << 20) as f64,
        median(alive),
        median(fresh)
    );
}

fn wait_exported(port: u16, tls: Option<&Arc<rustls::ClientConfig>>, auth: Option<&str>) {
    wait_for("every election exported", Duration::from_secs(120), || {
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        let mut c = connect(port, tls);
        // A scrape that panics on a not-yet-200 answer is retried.
        let len = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scrape(&mut c, auth)))
            .map_err(|_| "not yet".to_owned())?;
        if len > 4 << 20 {
            Ok(())
        } else {
            Err(format!("{len} bytes"))
        }
    });
}

fn stalled(port: u16, pid: u32) {
    let before = rss_mib(pid);
    let held: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = small_window_connect(port);
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    for s in &held {
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.peek(&mut [0; 1]).unwrap();
    }
    // Let every response reach its stall (socket buffers full).
    let mut last = 0.0;
    let settled = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = rss_mib(pid);
        if (now - last).abs() < 0.5 || settled.elapsed() > Duration::from_secs(30) {
            last = now;
            break;
        }
        last = now;
    }
    println!(
        "40 stalled readers: RSS {before:.1} MiB before, {last:.1} MiB with them (+{:.1} MiB) [{}]",
        last - before,
        binary().display()
    );
    drop(held);
}

fn main() {
    let zk = ZkServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = runtime.block_on(elections(&zk));
    let only_stalled = std::env::args().any(|a| a == "stalled");

    let (mut plain, plain_port) = exporter(&zk, &base, &[]);
    wait_exported(plain_port, None, None);
    stalled(plain_port, plain.id());
    if only_stalled {
        let _ = plain.kill();
        return;
    }

    let dir = temp_dir("bench-web-tls");
    let ca = Ca::new(&dir, "bench");
    ca.issue(&dir, "server", &["127.0.0.1"]);
    std::fs::write(
        dir.join("tls.yml"),
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n",
    )
    .unwrap();
    let hash = "$2y$10$qCDRYhssom.6KWvxbiz48OF6cXnkhGCu3rt5LUKYIY46sfNX2VEa6";
    std::fs::write(
        dir.join("auth.yml"),
        format!("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\nbasic_auth_users:\n  prometheus: '{hash}'\n"),
    )
    .unwrap();
    let web = |f: &str| {
        vec![
            "--web.config.file".to_owned(),
            dir.join(f).display().to_string(),
        ]
    };
    let (mut tls, tls_port) = exporter(&zk, &base, &web("tls.yml"));
    let (mut auth, auth_port) = exporter(&zk, &base, &web("auth.yml"));
    let client = tls_client(&ca.cert_file);
    // "prometheus" and the decoy's password, base64.
    let credentials =
        "cHJvbWV0aGV1czp6ay1lbGVjdGlvbi1leHBvcnRlciBkZWNveTogbm8gcGFzc3dvcmQgbWF0Y2hlcyB0aGlz";
    wait_exported(tls_port, Some(&client), None);
    wait_exported(auth_port, Some(&client), Some(credentials));
    for _ in 0..2 {
        latency("plain HTTP", plain_port, None, None);
        latency("TLS", tls_port, Some(&client), None);
        latency(
            "TLS + basic auth",
            auth_port,
            Some(&client),
            Some(credentials),
        );
    }
    for c in [&mut plain, &mut tls, &mut auth] {
        let _ = c.kill();
        let _ = c.wait();
    }
}
