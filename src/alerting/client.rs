//! One `POST /api/v2/alerts` to one Alertmanager, or one `GET` of the
//! alerts it holds: plain or TLS, with basic auth or a bearer token read
//! from their files at each request (rotation needs no restart), bounded by
//! the target's timeout.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::alerting::AlertmanagerTarget;

/// Why a delivery failed: a bounded set, for the `reason` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub reason: &'static str,
    pub detail: String,
}

fn failed(reason: &'static str, detail: impl Into<String>) -> SendError {
    SendError {
        reason,
        detail: detail.into(),
    }
}

/// The `Authorization` header line, if the target has credentials.
fn authorization(target: &AlertmanagerTarget) -> Result<String, SendError> {
    use base64::Engine;
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_owned())
            .map_err(|e| failed("credentials", format!("cannot read {}: {e}", p.display())))
    };
    if let Some((user, file)) = &target.basic_auth {
        let pair = format!("{user}:{}", read(file)?);
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        return Ok(format!("Authorization: Basic {encoded}\r\n"));
    }
    if let Some(file) = &target.bearer_token_file {
        return Ok(format!("Authorization: Bearer {}\r\n", read(file)?));
    }
    Ok(String::new())
}

/// Posts `body` (a JSON array of alerts); Ok on a 2xx answer.
pub async fn post(target: &AlertmanagerTarget, body: &[u8]) -> Result<(), SendError> {
    let head = format!(
        "POST {}/api/v2/alerts HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: zk-election-exporter/{}\r\n",
        target.path,
        target.authority,
        body.len(),
        crate::VERSION
    );
    // The status line and a short body are all that is read.
    request(target, head, body, 64 * 1024).await.map(|_| ())
}

/// The most of Alertmanager's alert list read back: thousands of alerts.
const MAX_LISTING: u64 = 16 * 1024 * 1024;

/// The alerts Alertmanager holds whose name is one of `alertnames`
/// (`GET /api/v2/alerts`, silenced and inhibited ones too): the JSON body.
/// Asked as HTTP/1.0, so the answer is never chunked and ends with the
/// connection.
pub async fn alerts(
    target: &AlertmanagerTarget,
    alertnames: &[&str],
) -> Result<Vec<u8>, SendError> {
    let filter = format!("alertname=~\"{}\"", alertnames.join("|"));
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("active", "true")
        .append_pair("silenced", "true")
        .append_pair("inhibited", "true")
        .append_pair("unprocessed", "true")
        .append_pair("filter", &filter)
        .finish();
    let head = format!(
        "GET {}/api/v2/alerts?{query} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: zk-election-exporter/{}\r\n",
        target.path,
        target.authority,
        crate::VERSION
    );
    let reply = request(target, head, &[], MAX_LISTING).await?;
    if reply.len() as u64 >= MAX_LISTING {
        return Err(failed("protocol", "the alert list is over 16 MiB"));
    }
    let Some(at) = reply.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(failed("protocol", "the answer has no end of headers"));
    };
    Ok(reply.get(at + 4..).unwrap_or_default().to_vec())
}

/// Sends `head` (without its final blank line; credentials are added) and
/// `body`; the whole answer, at most `limit` bytes, on a 2xx status.
async fn request(
    target: &AlertmanagerTarget,
    head: String,
    body: &[u8],
    limit: u64,
) -> Result<Vec<u8>, SendError> {
    let attempt = async {
        let auth = authorization(target)?;
        let head = format!("{head}{auth}\r\n");
        let stream = TcpStream::connect(&target.authority)
            .await
            .map_err(|e| failed("connect", e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let mut reply = Vec::new();
        match &target.tls {
            None => exchange(stream, head.as_bytes(), body, &mut reply, limit).await?,
            Some(config) => {
                let host = target
                    .authority
                    .rsplit_once(':')
                    .map_or(target.authority.as_str(), |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned();
                let name = rustls::pki_types::ServerName::try_from(host)
                    .map_err(|e| failed("tls", e.to_string()))?;
                let tls = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, stream)
                    .await
                    .map_err(|e| failed("tls", e.to_string()))?;
                exchange(tls, head.as_bytes(), body, &mut reply, limit).await?;
            }
        }
        let first = reply.get(..reply.len().min(512)).unwrap_or_default();
        let status: u16 = String::from_utf8_lossy(first)
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| failed("protocol", "no HTTP status in the answer"))?;
        match status {
            200..=299 => Ok(reply),
            400..=499 => {
                let text = String::from_utf8_lossy(&reply);
                Err(failed(
                    "status_4xx",
                    format!("{status}: {}", text.lines().last().unwrap_or("")),
                ))
            }
            _ => Err(failed("status_5xx", format!("answered {status}"))),
        }
    };
    tokio::time::timeout(target.timeout, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(failed(
                "timeout",
                format!("no answer within {:?}", target.timeout),
            ))
        })
}

async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    head: &[u8],
    body: &[u8],
    reply: &mut Vec<u8>,
    limit: u64,
) -> Result<(), SendError> {
    let io = |e: std::io::Error| failed("io", e.to_string());
    stream.write_all(head).await.map_err(io)?;
    stream.write_all(body).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    let read = (&mut stream).take(limit).read_to_end(reply).await;
    if read.is_err() && reply.is_empty() {
        return Err(failed("io", "connection closed without an answer"));
    }
    Ok(())
}
