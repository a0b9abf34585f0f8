//! The HTTP side against the real binary: gzip only when asked (and then
//! a valid exposition), `nosniff` on every response, the soft limit of
//! open files raised at start, and the server's defences: idle sockets
//! cannot lock a scraper out, idle / slow / stalled connections are
//! closed, and stalled readers share one body.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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
        &offline_args(port, &[]),
        &[],
        port,
        Some(FdLimit::Soft(128)),
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

/// Reads until the server closes the connection (Ok: what was read) or
/// the deadline passes.
fn until_closed(s: &mut TcpStream, what: &str) -> String {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut got = Vec::new();
    wait_for(what, Duration::from_secs(20), || {
        let mut buf = [0; 65536];
        match s.read(&mut buf) {
            Ok(0) => Ok(()),
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                Err("still open (data)".to_owned())
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err("still open".to_owned())
            }
            Err(_) => Ok(()), // reset
        }
    });
    String::from_utf8_lossy(&got).into_owned()
}

fn closed(m: &Metrics, reason: &str) -> f64 {
    m.get(
        "zookeeper_exporter_http_connections_closed_total",
        &[("reason", reason)],
    )
    .unwrap_or(0.0)
}

#[test]
fn idle_sockets_cannot_lock_a_scraper_out() {
    let port = free_port();
    // 256 descriptors, soft and hard: the exporter cannot raise it.
    let exporter = Exporter::spawn_with(
        &offline_args(port, &[]),
        &[],
        port,
        Some(FdLimit::Both(256)),
    );
    let held: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let asked = Instant::now();
    let (status, body) = http_get(port, "/metrics").unwrap();
    eprintln!(
        "/metrics answered in {:?} with 300 idle sockets held",
        asked.elapsed()
    );
    assert_eq!(status, 200);
    let m = Metrics::parse(&body);
    assert_eq!(
        m.get("zookeeper_exporter_http_connection_limit", &[]),
        Some(192.0),
        "256 descriptors less 64 kept for the agent"
    );
    assert!(closed(&m, "evicted") >= 1.0, "idle ones made room");
    assert_eq!(
        m.get("zookeeper_exporter_http_accept_errors_total", &[]),
        Some(0.0),
        "the cap keeps accept below the descriptor limit: {}",
        exporter.log()
    );
    assert!(!exporter.log().contains("Too many open files"));
    drop(held);
}

#[test]
fn idle_slow_and_stalled_connections_are_closed() {
    let exporter = Exporter::start_with(
        "idle_timeout = \"1s\"\nheader_timeout = \"1s\"\nwrite_timeout = \"1s\"\n\
         [[clusters]]\nname = \"t\"\nservers = [\"127.0.0.1:1\"]\n\
         [clusters.four_letter_words]\nenabled = false\n",
        &[],
        &[],
    );
    let port = exporter.port;
    let connect = || TcpStream::connect(("127.0.0.1", port)).unwrap();
    // Never sends anything.
    until_closed(&mut connect(), "a silent connection closed");
    // Sends half a request.
    let mut slow = connect();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    until_closed(&mut slow, "a half-sent request closed");
    // A whole request, then nothing: answered, then closed when idle.
    let mut kept = connect();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let answered = until_closed(&mut kept, "a kept-alive connection closed");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    // Thousands of pipelined scrapes never read: the writes stall.
    let stalled = connect();
    let mut writer = stalled.try_clone().unwrap();
    std::thread::spawn(move || {
        let requests = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(3000);
        let _ = writer.write_all(&requests);
    });
    let m = wait_for("the stalled writer closed", Duration::from_secs(30), || {
        let m = exporter.metrics()?;
        if closed(&m, "write_timeout") >= 1.0 {
            Ok(m)
        } else {
            Err(format!("write_timeout {}", closed(&m, "write_timeout")))
        }
    });
    assert!(closed(&m, "idle_timeout") >= 2.0, "silent and kept-alive");
    assert!(closed(&m, "header_timeout") >= 1.0, "half-sent");
    drop(stalled);
}

/// Resident memory of `pid` in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_stalled_readers_cost_about_one_body() {
    let zk = shared_server();
    let base = unique_path("stalled");
    let _owner = one_candidate_elections(&zk.address(), &base, 5000).await;
    let exporter = Exporter::start(&format!(
        "write_timeout = \"5s\"\n[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/*\"\n",
        zk.address()
    ));
    let exported = |m: &Metrics| {
        m.get(
            "zookeeper_exporter_elections_exported",
            &[("ensemble", "test")],
        )
    };
    let body = wait_for("5,000 elections exported", Duration::from_secs(60), || {
        let text = exporter.raw_metrics();
        match exported(&Metrics::parse(&text)) {
            Some(n) if n >= 5000.0 => Ok(text),
            other => Err(format!("{other:?}")),
        }
    });
    let before = rss(exporter.pid());
    // 40 scrapers that send a request and never read the answer.
    let stalled: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = small_window_connect(exporter.port);
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    // Each has begun to receive its body: the server holds the rest.
    for s in &stalled {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.peek(&mut [0; 1]).unwrap();
    }
    let after = rss(exporter.pid());
    let grown = after.saturating_sub(before);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "body {:.1} MiB; RSS {:.1} MiB before, {:.1} MiB with 40 stalled readers (+{:.1} MiB)",
        mib(body.len() as u64),
        mib(before),
        mib(after),
        mib(grown)
    );
    // Forty private bodies would be 40x; shared ones are one or a few
    // (scrapes asking during a render wait for the next).
    let bound = 4 * body.len() as u64 + (32 << 20);
    assert!(
        grown < bound,
        "RSS grew {:.1} MiB with 40 stalled readers; bound {:.1} MiB",
        mib(grown),
        mib(bound)
    );
    assert!(
        40 * body.len() as u64 > 2 * bound,
        "the bound tells shared from private"
    );
    // The write timeout frees them.
    wait_for("stalled readers closed", Duration::from_secs(60), || {
        let m = exporter.metrics()?;
        let n = closed(&m, "write_timeout");
        if n >= 40.0 {
            Ok(())
        } else {
            Err(format!("{n}"))
        }
    });
}
