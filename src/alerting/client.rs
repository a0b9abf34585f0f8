//! One `POST /api/v2/alerts` to one Alertmanager: plain or TLS, with basic
//! auth or a bearer token read from their files at each send (rotation
//! needs no restart), bounded by the target's timeout.

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
    let attempt = async {
        let auth = authorization(target)?;
        let stream = TcpStream::connect(&target.authority)
            .await
            .map_err(|e| failed("connect", e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let head = format!(
            "POST {}/api/v2/alerts HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: zk-election-exporter/{}\r\n{auth}\r\n",
            target.path,
            target.authority,
            body.len(),
            crate::VERSION
        );
        let mut reply = Vec::new();
        match &target.tls {
            None => exchange(stream, head.as_bytes(), body, &mut reply).await?,
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
                exchange(tls, head.as_bytes(), body, &mut reply).await?;
            }
        }
        let text = String::from_utf8_lossy(&reply);
        let status: u16 = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| failed("protocol", "no HTTP status in the answer"))?;
        match status {
            200..=299 => Ok(()),
            400..=499 => Err(failed(
                "status_4xx",
                format!("{status}: {}", text.lines().last().unwrap_or("")),
            )),
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
) -> Result<(), SendError> {
    let io = |e: std::io::Error| failed("io", e.to_string());
    stream.write_all(head).await.map_err(io)?;
    stream.write_all(body).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    // The status line and a short body are all that is read.
    let read = (&mut stream).take(64 * 1024).read_to_end(reply).await;
    if read.is_err() && reply.is_empty() {
        return Err(failed("io", "connection closed without an answer"));
    }
    Ok(())
}
