//! Minimal HTTP/1.1 on loopback, enough to read the exporter, Prometheus
//! and Alertmanager without a client library.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Minimal HTTP/1.1 GET on loopback; returns status and body.
pub fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    http_get_with(port, path, &[])
}

pub fn http_get_with(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    http_request(port, "GET", path, headers)
}

/// One request with `method` (and no body); status and body.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    http_send(port, method, path, headers, "")
}

/// A POST of a JSON `body`; status and body of the answer.
pub fn http_post_json(port: u16, path: &str, body: &str) -> Result<(u16, String), String> {
    http_send(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
}

/// One request with `method` and `body`; status and body.
pub fn http_send(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let length = if method == "GET" {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{length}Connection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP header end")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A connection to `port` whose receive buffer is 4 KiB, set before the
/// handshake so the window stays small: a scraper that stops reading then
/// leaves the response in the server, not in this side's kernel buffers
/// (on loopback those grow to megabytes and would hide what the server
/// holds).
pub fn small_window_connect(port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor owned here until handed
    // to the TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let size: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(
            rc,
            0,
            "connect to {port}: {}",
            std::io::Error::last_os_error()
        );
        TcpStream::from_raw_fd(fd)
    }
}
