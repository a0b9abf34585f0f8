//! The HTTP side against the real binary: gzip only when asked (and then
//! a valid exposition), `nosniff` on every response, and the soft limit of
//! open files raised at start.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;

/// One request; the status, headers (lower-cased names) and raw body.
fn fetch(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
    {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_when_asked_and_nosniff_everywhere() {
    let zk = shared_server();
    let base = unique_path("http");
    let c = client(&zk.address()).await;
    mkdir(&c, &format!("{base}/e1")).await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    let (status, headers, zipped) =
        fetch(exporter.port, "/metrics", &[("Accept-Encoding", "gzip")]);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-encoding"), Some("gzip"));
    assert_eq!(header(&headers, "vary"), Some("Accept-Encoding"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&zipped[..])
        .read_to_string(&mut text)
        .unwrap();
    assert!(text.contains("zookeeper_tree_elections{"), "{text}");
    promtool_check(&text).unwrap_or_else(|p| panic!("gzip body: {p}"));
    let (_, headers, plain) = fetch(exporter.port, "/metrics", &[]);
    assert_eq!(
        header(&headers, "content-encoding"),
        None,
        "plain unless asked"
    );
    promtool_check(std::str::from_utf8(&plain).unwrap())
        .unwrap_or_else(|p| panic!("plain body: {p}"));
    let (_, headers, _) = fetch(
        exporter.port,
        "/metrics",
        &[("Accept-Encoding", "gzip;q=0")],
    );
    assert_eq!(
        header(&headers, "content-encoding"),
        None,
        "q=0 refuses gzip"
    );
    for path in [
        "/",
        "/metrics",
        "/healthz",
        "/ready",
        "/api/v1/trees",
        "/api/v1/elections/nowhere",
    ] {
        let (_, headers, _) = fetch(exporter.port, path, &[]);
        assert_eq!(
            header(&headers, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
}

#[test]
fn the_soft_limit_of_open_files_is_raised_at_start() {
    let port = free_port();
    let exporter = Exporter::spawn_with(
        &args(&[
            "--zk",
            "127.0.0.1:1",
            "--web.listen-address",
            &format!("127.0.0.1:{port}"),
        ]),
        &[],
        port,
        Some(128),
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", exporter.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers[0], numbers[1], "soft raised to hard: {line}");
    assert_ne!(numbers[0], "128");
    assert!(
        exporter
            .log()
            .contains("raised the soft limit of open files")
    );
}
