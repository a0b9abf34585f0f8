//! One HTTP/1.1 request on a connection the caller opened (plain or TLS,
//! its own timeouts), spoken by hyper's client: the agent's two clients,
//! the alert pusher to Alertmanager and the AdminServer reader, frame
//! requests and read answers (lengths, chunks) the way every hyper client
//! does. A leaf beside the layers: it imports nothing of the crate.

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// Why an exchange gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The request could not be written or no answer came back.
    Io(String),
    /// What came back is not an HTTP answer.
    Protocol(String),
    /// The answer's body was longer than the caller takes.
    TooLarge,
}

/// Sends `request` on `stream` and reads the answer: its status and at
/// most `limit` bytes of body.
pub async fn exchange<S>(
    stream: S,
    request: Request<Full<Bytes>>,
    limit: usize,
) -> Result<(StatusCode, Bytes), Failure>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let io = |e: hyper::Error| {
        if e.is_parse() || e.is_parse_status() {
            Failure::Protocol(e.to_string())
        } else {
            Failure::Io(e.to_string())
        }
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io)?;
    // The connection is driven beside the request and ends with it: the
    // caller's timeout dropping this future drops the connection too.
    let driven = async move {
        let answer = sender.send_request(request).await.map_err(io)?;
        let status = answer.status();
        let body = Limited::new(answer.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    Failure::TooLarge
                } else {
                    Failure::Io(e.to_string())
                }
            })?
            .to_bytes();
        Ok((status, body))
    };
    tokio::pin!(driven);
    tokio::pin!(connection);
    tokio::select! {
        answer = &mut driven => answer,
        // The connection ended first: an error, or it closed while the
        // answer was still owed (the answer's future says which).
        ended = &mut connection => match ended {
            Err(e) => Err(io(e)),
            Ok(()) => driven.await,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that reads a request head and answers `reply` verbatim.
    async fn answered(reply: &'static [u8], limit: usize) -> Result<(StatusCode, Bytes), Failure> {
        let (client, mut server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match server.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = server.write_all(reply).await;
            let _ = server.shutdown().await;
        });
        let request = Request::get("/x")
            .header("host", "h")
            .body(Full::new(Bytes::new()))
            .unwrap();
        exchange(client, request, limit).await
    }

    #[tokio::test]
    async fn a_whole_or_chunked_answer_is_its_body() {
        let whole = answered(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", 100).await;
        assert_eq!(whole, Ok((StatusCode::OK, Bytes::from_static(b"abcd"))));
        let chunked = answered(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n",
            100,
        )
        .await;
        assert_eq!(
            chunked,
            Ok((StatusCode::NOT_FOUND, Bytes::from_static(b"abcdef")))
        );
    }

    #[tokio::test]
    async fn a_body_past_the_limit_or_no_answer_is_a_failure() {
        let long = answered(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
            4,
        )
        .await;
        assert_eq!(long, Err(Failure::TooLarge));
        assert!(matches!(answered(b"", 100).await, Err(Failure::Io(_))));
        assert!(matches!(
            answered(b"garbage\r\n\r\n", 100).await,
            Err(Failure::Protocol(_))
        ));
    }
}
