//! A handler that panics (a bug) costs one request, never a connection
//! slot: the agent's real server and router, with two deliberately broken
//! routes that only this test adds, under a small connection cap. Were a
//! panic to leak its slot, a few dozen requests would lock every scraper
//! out; here thousands leave the open connections where they were and
//! `/metrics` answering.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zk_election_exporter::config::HttpLimits;
use zk_election_exporter::config::webfile::WebFile;
use zk_election_exporter::http::{self, AppState, auth::Web, server};
use zk_election_exporter::model::web::WebStats;

/// Connections at most: far fewer than the panics sent on fresh ones.
const CAP: usize = 8;
/// Requests to the panicking handler over a few kept-alive connections.
const KEPT_ALIVE: usize = 8_000;
/// Requests to the panicking handler, each on a fresh connection.
const FRESH: usize = 2_000;
/// Responses whose body panics while it is sent, each on a fresh connection.
const BODY_PANICS: usize = 200;
/// How long any one exchange may take before the test calls the server stuck.
const STUCK: Duration = Duration::from_secs(10);

/// Reads one response off `s`: its status and body (by Content-Length).
/// `None` when the connection ended first.
async fn response(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(u16, Vec<u8>)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let status = head.split(' ').nth(1)?.parse().ok()?;
            let length: usize = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            let start = end + 4;
            while buf.len() < start + length {
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = buf[start..start + length].to_vec();
            buf.drain(..start + length);
            return Some((status, body));
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn connect(port: u16) -> TcpStream {
    tokio::time::timeout(STUCK, TcpStream::connect(("127.0.0.1", port)))
        .await
        .expect("connecting took too long: the server accepts nothing")
        .unwrap()
}

/// One request on a fresh connection that the client closes after it.
async fn once(port: u16, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut s = connect(port).await;
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(STUCK, response(&mut s, &mut buf))
        .await
        .expect("no answer in time: the server is stuck")
}

/// A handler with a bug.
async fn panicking() -> &'static str {
    if std::hint::black_box(true) {
        panic!("a deliberate panic in a handler");
    }
    "never"
}

/// A response whose body has a bug: the panic comes while hyper sends it,
/// outside the handler.
async fn panicking_body() -> axum::body::Body {
    let pieces = futures::stream::once(async {
        if std::hint::black_box(true) {
            panic!("a deliberate panic while a body is sent");
        }
        Ok::<_, std::io::Error>(axum::body::Bytes::new())
    });
    axum::body::Body::from_stream(pieces)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_panics_leave_the_slots_free_and_the_agent_answering() {
    let stats = Arc::new(WebStats::new(CAP as u64));
    let (state, _reloads) = AppState::detached(Vec::new(), stats.clone(), false);
    let web = Arc::new(Web::new(WebFile::default(), stats.clone()));
    let router = http::secured(state, web.clone())
        .route("/panic", get(panicking))
        .route("/panic-in-body", get(panicking_body));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let served = tokio::spawn(server::serve(
        vec![listener],
        router,
        web,
        HttpLimits::default(),
        CAP,
        stopped,
    ));

    // Kept-alive connections: each panic is a 500 and the connection
    // carries on with the next request.
    let keepers: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let mut s = connect(port).await;
                let mut buf = Vec::new();
                for _ in 0..KEPT_ALIVE / 4 {
                    s.write_all(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n")
                        .await
                        .unwrap();
                    let (status, body) = tokio::time::timeout(STUCK, response(&mut s, &mut buf))
                        .await
                        .expect("no answer in time")
                        .expect("the connection closed after a panic");
                    assert_eq!(status, 500, "{}", String::from_utf8_lossy(&body));
                    assert!(String::from_utf8_lossy(&body).contains("http_panics_total"));
                }
            })
        })
        .collect();
    for k in keepers {
        k.await.unwrap();
    }
    for _ in 0..FRESH {
        let (status, _) = once(port, "/panic").await.expect("no 500");
        assert_eq!(status, 500);
    }
    // A panic past the handler, while hyper polls the body: it unwinds
    // the connection's task; the client sees the connection end.
    for _ in 0..BODY_PANICS {
        let _ = once(port, "/panic-in-body").await;
    }

    // Every slot is back: the gauge returns to idle (0 here: the test's
    // clients have all closed their connections).
    let deadline = tokio::time::Instant::now() + STUCK;
    while stats.snapshot().open != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} connections still counted open after every client closed",
            stats.snapshot().open
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, body) = once(port, "/metrics").await.expect("no scrape");
    assert_eq!(status, 200);
    let body = String::from_utf8(body).unwrap();
    let handled = KEPT_ALIVE + FRESH;
    assert!(
        body.lines()
            .any(|l| l == format!("zookeeper_exporter_http_panics_total {handled}")),
        "panics counted: {:?}",
        body.lines()
            .find(|l| l.starts_with("zookeeper_exporter_http_panics_total"))
    );
    // The scrape itself is the one connection open.
    assert!(
        body.lines()
            .any(|l| l == "zookeeper_exporter_http_connections 1.0"),
        "{:?}",
        body.lines()
            .find(|l| l.starts_with("zookeeper_exporter_http_connections "))
    );
    let _ = stop.send(true);
    served.await.unwrap().unwrap();
}
