//! One four-letter-word exchange: connect, send the word, read until the
//! server closes, all inside one deadline. A server that accepts and never
//! answers costs exactly `timeout`, never more.

use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::zktls::ZkTls;
use crate::fourlw::Failure;

/// Largest reply kept; `cons` and `wchc` of a busy server are large, and
/// nothing the exporter parses needs more.
pub const MAX_REPLY_BYTES: u64 = 16 << 20;

/// A plain or TLS stream to a server.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Opens a connection to `server`: plain TCP, or TLS with the cluster's
/// certificates (four-letter words work over `secureClientPort`). A failed
/// handshake is [`Failure::Tls`], so a wrong CA reads as what it is.
pub async fn open(server: &str, tls: Option<&ZkTls>) -> Result<Pin<Box<dyn Stream>>, Failure> {
    let stream = TcpStream::connect(server)
        .await
        .map_err(|_| Failure::Connect)?;
    let _ = stream.set_nodelay(true);
    match tls {
        None => Ok(Box::pin(stream)),
        Some(tls) => Ok(Box::pin(
            handshake(server, stream, tls)
                .await
                .map_err(|_| Failure::Tls)?,
        )),
    }
}

/// The TLS handshake on `stream` to `server`; the error says why (an
/// unknown issuer, a name the certificate does not carry, an alert).
pub async fn handshake(
    server: &str,
    stream: TcpStream,
    tls: &ZkTls,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let name = tls.name_for(server).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{server}` has no host to verify"),
        )
    })?;
    tokio_rustls::TlsConnector::from(tls.client.clone())
        .connect(name, stream)
        .await
}

/// Connects and sends the word; the reply is read by the caller.
async fn send(
    server: &str,
    command: &str,
    tls: Option<&ZkTls>,
) -> Result<Pin<Box<dyn Stream>>, Failure> {
    let mut stream = open(server, tls).await?;
    stream
        .write_all(command.as_bytes())
        .await
        .map_err(|_| Failure::Connect)?;
    Ok(stream)
}

/// Sends `command` to `server` (`host:port`) and returns the reply text
/// (invalid UTF-8 replaced).
pub async fn exchange(
    server: &str,
    command: &str,
    timeout: Duration,
    tls: Option<&ZkTls>,
) -> Result<String, Failure> {
    let attempt = async {
        let mut stream = send(server, command, tls).await?;
        // Room for a whole `mntr` reply (17 KiB from a 3.8 leader) in one
        // read, rather than growing it four times.
        let mut reply = Vec::with_capacity(32 << 10);
        let read = (&mut stream)
            .take(MAX_REPLY_BYTES)
            .read_to_end(&mut reply)
            .await;
        // ZooKeeper closes a TLS connection without close_notify after a
        // reply: what arrived is the reply.
        if read.is_err() && reply.is_empty() {
            return Err(Failure::Connect);
        }
        // Valid UTF-8 (every reply ZooKeeper writes) is taken as it is,
        // not copied.
        Ok(String::from_utf8(reply)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// What a line reader wants after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// The next line.
    More,
    /// Nothing more: the rest of the reply is drained unread.
    Enough,
}

/// Like [`exchange`], but hands the reply to `line` one line at a time as
/// it arrives, so a large reply (`cons` of a busy server, `dump` of one
/// holding a million ephemerals) is never held whole. Stops after `limit`
/// bytes, or when `line` says [`Flow::Enough`]: the rest is then read and
/// dropped (closing early would make the server log a broken pipe every
/// round) until the server closes or `timeout` is up, which still counts
/// as an answer, since what was needed arrived.
pub async fn exchange_lines(
    server: &str,
    command: &str,
    timeout: Duration,
    tls: Option<&ZkTls>,
    limit: u64,
    mut line: impl FnMut(&str) -> Flow,
) -> Result<(), Failure> {
    use tokio::io::AsyncBufReadExt;
    let deadline = tokio::time::Instant::now() + timeout;
    let attempt = async {
        let stream = send(server, command, tls).await?;
        let mut reader = tokio::io::BufReader::new(stream.take(limit));
        let mut buf = Vec::with_capacity(512);
        let mut any = false;
        loop {
            buf.clear();
            let n = match reader.read_until(b'\n', &mut buf).await {
                Ok(n) => n,
                // A TLS close without close_notify ends a reply too.
                Err(_) if any => return Ok(None),
                Err(_) => return Err(Failure::Connect),
            };
            if n == 0 {
                return Ok(None);
            }
            any = true;
            if line(&String::from_utf8_lossy(&buf)) == Flow::Enough {
                // Past the line limit too: the server writes it all anyway.
                return Ok(Some(reader.into_inner().into_inner()));
            }
        }
    };
    let rest = tokio::time::timeout_at(deadline, attempt)
        .await
        .unwrap_or(Err(Failure::Timeout))?;
    if let Some(mut rest) = rest {
        let mut sink = tokio::io::sink();
        let drain = tokio::io::copy(&mut rest, &mut sink);
        let _ = tokio::time::timeout_at(deadline, drain).await;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn a_server_that_never_answers_costs_the_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let hold = tokio::spawn(async move {
            let (_socket, _) = listener.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let started = Instant::now();
        let r = exchange(&addr, "mntr", Duration::from_millis(300), None).await;
        assert_eq!(r, Err(Failure::Timeout));
        assert!(started.elapsed() >= Duration::from_millis(300));
        hold.abort();
    }

    #[tokio::test]
    async fn refused_connections_are_connect_failures() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        assert_eq!(
            exchange(&addr, "ruok", Duration::from_secs(2), None).await,
            Err(Failure::Connect)
        );
    }

    /// A server that reads one word, answers `reply` and closes.
    pub(crate) async fn answer_once(reply: &'static [u8]) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut word = [0u8; 4];
            s.read_exact(&mut word).await.unwrap();
            s.write_all(reply).await.unwrap();
        });
        addr
    }

    #[tokio::test]
    async fn replies_are_read_until_close() {
        let addr = answer_once(b"imok").await;
        assert_eq!(
            exchange(&addr, "ruok", Duration::from_secs(2), None)
                .await
                .as_deref(),
            Ok("imok")
        );
    }

    #[tokio::test]
    async fn lines_arrive_one_by_one() {
        let addr = answer_once(b"one\ntwo\nthree").await;
        let mut lines = Vec::new();
        let two = Duration::from_secs(2);
        exchange_lines(&addr, "cons", two, None, MAX_REPLY_BYTES, |l| {
            lines.push(l.trim_end().to_owned());
            Flow::More
        })
        .await
        .unwrap();
        assert_eq!(lines, vec!["one", "two", "three"]);
    }

    /// Past "enough" nothing is parsed, and a server that keeps the
    /// connection open after the needed part costs the timeout, not an
    /// error: what was needed arrived.
    #[tokio::test]
    async fn enough_drains_the_rest_unread_and_is_an_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut word = [0u8; 4];
            s.read_exact(&mut word).await.unwrap();
            s.write_all(b"head\nstop\n").await.unwrap();
            // Far more than the limit below, then silence without a close.
            let bulk = vec![b'x'; 1 << 20];
            let mut sent = 0usize;
            for _ in 0..8 {
                if s.write_all(&bulk).await.is_err() {
                    break;
                }
                sent += bulk.len();
            }
            let _ = sent_tx.send(sent);
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let mut lines = Vec::new();
        let started = Instant::now();
        let timeout = Duration::from_millis(1500);
        let got = exchange_lines(&addr, "dump", timeout, None, 64, |l| {
            lines.push(l.trim_end().to_owned());
            if l.starts_with("stop") {
                Flow::Enough
            } else {
                Flow::More
            }
        })
        .await;
        assert_eq!(got, Ok(()));
        assert_eq!(lines, vec!["head", "stop"]);
        assert!(started.elapsed() >= timeout, "it waited for the close");
        assert_eq!(
            sent_rx.await.unwrap(),
            8 << 20,
            "the rest was read past the line limit, not left in the socket"
        );
    }
}
