//! One `POST /api/v2/alerts` to one Alertmanager, or one `GET` of the
//! alerts it holds: plain or TLS, with basic auth or a bearer token read
//! from their files at each request (rotation needs no restart), bounded by
//! the target's timeout.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, header};
use tokio::net::TcpStream;

use crate::config::alerting::AlertmanagerTarget;
use crate::web_client;

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

/// The `Authorization` header's value, if the target has credentials.
fn authorization(target: &AlertmanagerTarget) -> Result<Option<String>, SendError> {
    use base64::Engine;
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_owned())
            .map_err(|e| failed("credentials", format!("cannot read {}: {e}", p.display())))
    };
    if let Some((user, file)) = &target.basic_auth {
        let pair = format!("{user}:{}", read(file)?);
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        return Ok(Some(format!("Basic {encoded}")));
    }
    if let Some(file) = &target.bearer_token_file {
        return Ok(Some(format!("Bearer {}", read(file)?)));
    }
    Ok(None)
}

/// Posts `body` (a JSON array of alerts); Ok on a 2xx answer.
pub async fn post(target: &AlertmanagerTarget, body: &[u8]) -> Result<(), SendError> {
    let path = format!("{}/api/v2/alerts", target.path);
    // A short body is all that is read.
    request(target, Method::POST, &path, body.to_vec(), 64 * 1024)
        .await
        .map(|_| ())
}

/// The most of Alertmanager's alert list read back: thousands of alerts.
const MAX_LISTING: usize = 16 * 1024 * 1024;

/// The alerts Alertmanager holds whose name is one of `alertnames`
/// (`GET /api/v2/alerts`, silenced and inhibited ones too): the JSON body.
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
    let path = format!("{}/api/v2/alerts?{query}", target.path);
    request(target, Method::GET, &path, Vec::new(), MAX_LISTING).await
}

/// Sends one request (credentials added) and reads the answer's body, at
/// most `limit` bytes, on a 2xx status.
async fn request(
    target: &AlertmanagerTarget,
    method: Method,
    path: &str,
    body: Vec<u8>,
    limit: usize,
) -> Result<Vec<u8>, SendError> {
    let attempt = async {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &target.authority)
            .header(header::ACCEPT, "application/json")
            .header(
                header::USER_AGENT,
                format!("zk-election-exporter/{}", crate::VERSION),
            );
        if !body.is_empty() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(value) = authorization(target)? {
            builder = builder.header(header::AUTHORIZATION, value);
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed("protocol", e.to_string()))?;
        let stream = TcpStream::connect(&target.authority)
            .await
            .map_err(|e| failed("connect", e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let answer = match &target.tls {
            None => web_client::exchange(stream, request, limit).await,
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
                web_client::exchange(tls, request, limit).await
            }
        };
        let (status, reply) = answer.map_err(|e| match e {
            web_client::Failure::Io(detail) => failed("io", detail),
            web_client::Failure::Protocol(detail) => failed("protocol", detail),
            web_client::Failure::TooLarge => {
                failed("protocol", format!("the answer is over {limit} bytes"))
            }
        })?;
        match status.as_u16() {
            200..=299 => Ok(reply.to_vec()),
            code @ 400..=499 => {
                let text = String::from_utf8_lossy(&reply);
                Err(failed(
                    "status_4xx",
                    format!("{code}: {}", text.lines().last().unwrap_or("")),
                ))
            }
            code => Err(failed("status_5xx", format!("answered {code}"))),
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
