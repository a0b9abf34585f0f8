//! The accept loop: TLS when the web config asks, a header timeout, an
//! idle timeout, a write timeout for scrapers that stopped reading, and a
//! connection cap under which the longest-idle connection makes room for a
//! new one, so idle sockets can never lock a scraper out.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::IntoResponse;
use futures::FutureExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;
use tower::ServiceExt;
use tracing::{debug, warn};

use super::auth::Web;
use super::conns::{Conn, Conns, InFlight, Slot};
use crate::config::HttpLimits;
use crate::model::web::{Closed, WebStats};

/// How long in-flight requests may finish after shutdown is asked.
const GRACE: Duration = Duration::from_secs(5);
/// Descriptors kept free of connections: ZooKeeper sessions, four-letter
/// words, config reloads, logs.
const RESERVED_FDS: u64 = 64;

/// The connection cap: `configured`, but never more than the open-files
/// limit leaves after what the agent itself needs.
pub fn connection_cap(configured: usize, open_files_limit: Option<u64>) -> usize {
    match open_files_limit {
        Some(limit) => configured
            .min(usize::try_from(limit.saturating_sub(RESERVED_FDS).max(2)).unwrap_or(usize::MAX)),
        None => configured,
    }
}

/// Serves `router` on `listener` until `stop` turns true, then lets
/// in-flight requests finish for a few seconds.
pub async fn serve(
    listeners: Vec<TcpListener>,
    router: Router,
    web: Arc<Web>,
    limits: HttpLimits,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let conns = Arc::new(Conns::default());
    let mut tasks = tokio::task::JoinSet::new();
    let mut last_fd_warning: Option<Instant> = None;
    'accept: loop {
        while conns.len() >= cap {
            conns.evict_idlest();
            tokio::select! {
                _ = conns.ended.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stopped(&mut stop) => break 'accept,
            }
        }
        let accepted = tokio::select! {
            a = accept(&listeners) => a,
            _ = stopped(&mut stop) => break 'accept,
        };
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                web.stats.accept_failed();
                let out_of_fds = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                if out_of_fds {
                    conns.evict_idlest();
                }
                if last_fd_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    last_fd_warning = Some(Instant::now());
                    warn!(
                        "cannot accept an HTTP connection: {e}{} (logged at most once a minute)",
                        if out_of_fds {
                            "; closing idle connections to make room; raise the open-files limit or lower web.max_connections"
                        } else {
                            ""
                        }
                    );
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (id, conn) = conns.add();
        web.stats.opened();
        let (conns, web, router, stop) = (conns.clone(), web.clone(), router.clone(), stop.clone());
        tasks.spawn(async move {
            // Released however the task ends, a panic included: a slot
            // left behind is one less connection for good.
            let _slot = Slot {
                id,
                conns,
                stats: web.stats.clone(),
            };
            connection(stream, conn.clone(), web, router, limits, stop).await;
        });
    }
    drop(listeners);
    let _ = tokio::time::timeout(GRACE + Duration::from_secs(1), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// The next connection on any of `listeners` (accepting is cancel-safe:
/// the listeners that lost the race keep their connections queued).
async fn accept(listeners: &[TcpListener]) -> io::Result<(TcpStream, std::net::SocketAddr)> {
    if listeners.is_empty() {
        return std::future::pending().await;
    }
    futures::future::select_all(listeners.iter().map(|l| Box::pin(l.accept())))
        .await
        .0
}

/// One connection: the TLS handshake if configured, then HTTP/1.1 or
/// HTTP/2 until it closes, times out, is evicted or the agent stops.
async fn connection(
    stream: TcpStream,
    conn: Arc<Conn>,
    web: Arc<Web>,
    router: Router,
    limits: HttpLimits,
    mut stop: watch::Receiver<bool>,
) {
    let config = web.current();
    let stats = web.stats.clone();
    let io: Box<dyn Io> = match &config.tls {
        None => Box::new(stream),
        Some(tls) => {
            let accept = tokio_rustls::TlsAcceptor::from(tls.clone()).accept(stream);
            match tokio::time::timeout(limits.header_timeout, accept).await {
                Ok(Ok(s)) => {
                    let h2 = s.get_ref().1.alpn_protocol() == Some(b"h2");
                    conn.h2.store(h2, Ordering::Relaxed);
                    Box::new(s)
                }
                Ok(Err(e)) => {
                    debug!("TLS handshake failed: {e}");
                    stats.closed(Closed::Handshake);
                    return;
                }
                Err(_) => {
                    stats.closed(Closed::Header);
                    return;
                }
            }
        }
    };
    let io = Guarded {
        io,
        conn: conn.clone(),
        limits,
        stats: stats.clone(),
        read_timer: None,
        write_timer: None,
    };
    let handler = conn.clone();
    let panics = stats.clone();
    let service = hyper::service::service_fn(
        move |request: hyper::Request<hyper::body::Incoming>| {
            let in_flight = InFlight::begin(handler.clone());
            let (router, panics) = (router.clone(), panics.clone());
            async move {
                let _in_flight = in_flight;
                let answer = std::panic::AssertUnwindSafe(router.oneshot(request))
                    .catch_unwind()
                    .await;
                Ok::<_, std::convert::Infallible>(match answer {
                    Ok(Ok(response)) => response,
                    Ok(Err(never)) => match never {},
                    Err(payload) => {
                        // The panic hook has logged where; the client gets
                        // a 500 and the connection carries on.
                        panics.panicked();
                        debug!("handler panicked: {}", crate::panics::message(&*payload));
                        (
                            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                            "internal error: the agent failed to answer this request; it is logged and counted in zookeeper_exporter_http_panics_total\n",
                        )
                            .into_response()
                    }
                })
            }
        },
    );
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let serving = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(serving);
    tokio::select! {
        r = serving.as_mut() => {
            if let Err(e) = r {
                debug!("HTTP connection ended: {e}");
            }
        }
        _ = conn.evict.notified() => stats.closed(Closed::Evicted),
        _ = stopped(&mut stop) => {
            serving.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(GRACE, serving).await;
        }
    }
}

/// Resolves once the agent stops (the guard of `wait_for` is not `Send`).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection's I/O with its timeouts: a read waits at most the idle or
/// header timeout (never while a request is handled), a write that makes
/// no progress at most the write timeout.
struct Guarded {
    io: Box<dyn Io>,
    conn: Arc<Conn>,
    limits: HttpLimits,
    stats: Arc<WebStats>,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what.to_owned())
}

impl Guarded {
    /// Pending until the write timeout passes without progress.
    fn write_stalled(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let limit = self.limits.write_timeout;
        let timer = self
            .write_timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.stats.closed(Closed::Write);
                Poll::Ready(timed_out("the client stopped reading"))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// A write, flush or shutdown returned `r`; `wrote` says whether it
    /// moved bytes. Only bytes are activity: hyper flushes on every poll of
    /// the connection, even with nothing buffered, and counting those
    /// flushes would push the idle deadline on at each wake-up (the idle
    /// timer's own included), so an idle connection under load could
    /// stay open for good.
    fn write_result<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
        wrote: impl FnOnce(&T) -> bool,
    ) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.write_timer = None;
                if r.as_ref().is_ok_and(wrote) {
                    self.conn.touched();
                }
                Poll::Ready(r)
            }
            Poll::Pending => match self.write_stalled(cx) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.read_timer = None;
                if buf.filled().len() > before {
                    this.conn.received();
                }
                Poll::Ready(r)
            }
            Poll::Pending => loop {
                // While a request is handled there is no deadline, but a
                // timer still wakes the connection now and then to look
                // again: it may not read again by itself once idle.
                let (deadline, why) = this
                    .conn
                    .read_deadline(&this.limits)
                    .unwrap_or((Instant::now() + this.limits.idle_timeout, Closed::Idle));
                let deadline = tokio::time::Instant::from_std(deadline);
                let timer = this
                    .read_timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if timer.deadline() != deadline {
                    timer.as_mut().reset(deadline);
                }
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                // Fired: give up unless a request is in flight or the
                // deadline moved meanwhile.
                if this
                    .conn
                    .read_deadline(&this.limits)
                    .is_some_and(|(d, _)| tokio::time::Instant::from_std(d) <= deadline)
                {
                    this.stats.closed(why);
                    return Poll::Ready(Err(timed_out(why.label())));
                }
            },
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, data);
        self.write_result(cx, r, |n| *n > 0)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.write_result(cx, r, |n| *n > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.write_result(cx, r, |_| false)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_shutdown(cx);
        self.write_result(cx, r, |_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_descriptors_for_the_agent() {
        assert_eq!(connection_cap(512, None), 512);
        assert_eq!(connection_cap(512, Some(1 << 20)), 512);
        assert_eq!(connection_cap(512, Some(256)), 192);
        assert_eq!(connection_cap(512, Some(10)), 2);
    }

    /// hyper polls read, then write and flush, on every wake of a
    /// connection, and flushes even with nothing buffered. On a loaded
    /// machine the flush lands a millisecond or more after the read armed
    /// the idle timer; an idle connection must still close once its idle
    /// timeout has passed (counting the empty flushes as activity kept it
    /// open for good: the flake hunt's kept-alive connection).
    #[tokio::test]
    async fn empty_flushes_after_each_read_do_not_keep_an_idle_connection_open() {
        let (_client, server) = tokio::io::duplex(1024);
        let limits = HttpLimits {
            idle_timeout: Duration::from_millis(200),
            ..HttpLimits::default()
        };
        let mut io = Guarded {
            io: Box::new(server),
            conn: Arc::new(Conn::new()),
            limits,
            stats: Arc::new(WebStats::new(8)),
            read_timer: None,
            write_timer: None,
        };
        let started = Instant::now();
        let mut polls = 0;
        let closed = std::future::poll_fn(|cx| {
            polls += 1;
            let mut buf = [0u8; 64];
            let mut buf = ReadBuf::new(&mut buf);
            if let Poll::Ready(r) = Pin::new(&mut io).poll_read(cx, &mut buf) {
                return Poll::Ready(r);
            }
            // A loaded machine: the flush comes a few milliseconds later.
            std::thread::sleep(Duration::from_millis(3));
            let _ = Pin::new(&mut io).poll_flush(cx);
            Poll::Pending
        });
        let r = tokio::time::timeout(Duration::from_secs(3), closed)
            .await
            .expect("the idle connection was never closed");
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
        // Armed once, closed at the timer's first wake-up: the flushes
        // moved no deadline (they moved it at every wake-up before).
        assert_eq!(polls, 2, "the idle deadline moved");
    }
}
