//! The accept loop: each TCP connection served by hyper's HTTP/1, with two deadlines of
//! its own. A connection has [`Timeouts::header`] to send the complete headers of a
//! request, counted from when it opens or from the first byte of a request after an
//! earlier one; a kept-alive connection that sends nothing after a response is closed
//! after [`Timeouts::idle`]. Either way it is dropped without an answer.
//!
//! hyper's own `header_read_timeout` runs one clock from the end of a response to the
//! end of the next request's headers, so with it the idle time could never be longer
//! than the header time; a proxy in front that keeps connections longer than Reftrack
//! would then now and then send a request on a connection Reftrack is closing
//! (`docs/deploy.md`, "Connection timeouts").

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::ServiceExt;

/// Default of `REFTRACK_HEADER_TIMEOUT`, in seconds.
pub const DEFAULT_HEADER_TIMEOUT: u64 = 30;
/// Default of `REFTRACK_KEEP_ALIVE_TIMEOUT`, in seconds.
pub const DEFAULT_IDLE_TIMEOUT: u64 = 150;

/// How long a connection may take to send a request's headers, and stay idle between
/// requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From the connection's start, or the first byte of a later request, to the end of
    /// the request's headers.
    pub header: Duration,
    /// From the end of a response to the first byte of the next request.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            header: Duration::from_secs(DEFAULT_HEADER_TIMEOUT),
            idle: Duration::from_secs(DEFAULT_IDLE_TIMEOUT),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes; then stops accepting, lets
/// each connection finish its request under way (idle ones close at once) and returns
/// when all have closed. Handlers see the peer's address as `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let (stop_tx, stop_rx) = watch::channel(());
    tokio::spawn(async move {
        shutdown.await;
        drop(stop_rx);
    });
    // Each connection task holds a receiver; the loop ends when all are dropped.
    let (open_tx, open_rx) = watch::channel(());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = stop_tx.closed() => break,
        };
        let router = router.clone();
        let stopping = stop_tx.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, router, timeouts, stopping).await;
            drop(open);
        });
    }
    drop(open_rx);
    drop(listener);
    open_tx.closed().await;
}

/// The next connection. A failed accept is retried: at once when only that connection
/// failed, after a second when the process is out of something (file descriptors).
async fn accept(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) if per_connection(&e) => {}
            Err(e) => {
                tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Whether an accept error concerns only the connection it would have returned.
fn per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it closes, its deadline passes, or the server stops
/// (then after the request under way).
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    timeouts: Timeouts,
    stopping: watch::Sender<()>,
) {
    let clock = Arc::new(Clock::new(timeouts));
    let io = TokioIo::new(Watched {
        inner: stream,
        clock: clock.clone(),
    });
    let requests = clock.clone();
    let service = tower::service_fn(move |req: Request<Incoming>| {
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        requests.request_started();
        let answered = Answered(requests.clone());
        let router = router.clone();
        async move {
            let response: Response = router.oneshot(req).await?;
            Ok::<_, Infallible>(response.map(|inner| {
                Body::new(Tracked {
                    inner,
                    _answered: answered,
                })
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.keep_alive(true);
    let conn = builder.serve_connection(io, TowerToHyperService::new(service));
    tokio::pin!(conn);
    let stop = stopping.closed();
    tokio::pin!(stop);
    let mut stopped = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = &mut stop, if !stopped => {
                stopped = true;
                conn.as_mut().graceful_shutdown();
            }
            which = clock.expired() => {
                tracing::debug!(%peer, "closing a connection: {which}");
                return;
            }
        }
    }
}

/// What a connection is doing, for its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the end of a request's headers, since the connection opened or the
    /// request's first byte came.
    Head(Instant),
    /// A request is being answered: no deadline of this module's.
    Busy,
    /// Kept alive after a response, since it ended.
    Idle(Instant),
}

/// A connection's phase and the deadline it gives. A change of phase wakes nobody: the
/// watcher ([`Clock::expired`]) never sleeps longer than the shorter timeout and reads
/// the phase again when it wakes. A deadline that begins while it sleeps is at least that
/// far away, so it is never passed unnoticed, and a request costs no wake-up.
struct Clock {
    phase: Mutex<Phase>,
    timeouts: Timeouts,
}

impl Clock {
    fn new(timeouts: Timeouts) -> Self {
        Clock {
            phase: Mutex::new(Phase::Head(Instant::now())),
            timeouts,
        }
    }

    fn set(&self, change: impl FnOnce(Phase) -> Phase) {
        // The phase holds no invariant a panic could break: recover from poisoning.
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *phase = change(*phase);
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes came in: the first of a new request starts its header clock.
    fn received(&self) {
        self.set(|phase| match phase {
            Phase::Idle(_) => Phase::Head(Instant::now()),
            other => other,
        });
    }

    /// A request's headers are in: it is being answered.
    fn request_started(&self) {
        self.set(|_| Phase::Busy);
    }

    /// The answer's body has been sent (or dropped): the connection waits for the next.
    fn answered(&self) {
        self.set(|phase| match phase {
            Phase::Busy => Phase::Idle(Instant::now()),
            other => other,
        });
    }

    /// Completes when the connection's deadline has passed, saying which.
    async fn expired(&self) -> &'static str {
        let longest_sleep = self.timeouts.header.min(self.timeouts.idle);
        loop {
            let deadline = match self.phase() {
                Phase::Head(since) => Some((
                    since + self.timeouts.header,
                    "no complete request headers in time",
                )),
                Phase::Idle(since) => Some((since + self.timeouts.idle, "idle for too long")),
                Phase::Busy => None,
            };
            let now = Instant::now();
            let wake = now + longest_sleep;
            match deadline {
                Some((at, which)) if at <= now => return which,
                Some((at, _)) => tokio::time::sleep_until(at.min(wake)).await,
                None => tokio::time::sleep_until(wake).await,
            }
        }
    }
}

/// The connection's stream, telling its [`Clock`] when bytes come in.
struct Watched {
    inner: TcpStream,
    clock: Arc<Clock>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.received();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Tells the connection's [`Clock`] that its answer is done when dropped: hyper drops
/// a response's body once it has sent it, or when the connection ends.
struct Answered(Arc<Clock>);

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.answered();
    }
}

/// A response body that holds an [`Answered`] until it is dropped.
struct Tracked {
    inner: Body,
    _answered: Answered,
}

impl HttpBody for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time, in steps of a tenth of a second: the clock's order of events, not its
    // precision, is what is tested.
    const STEP: Duration = Duration::from_millis(100);

    fn clock() -> Clock {
        Clock::new(Timeouts {
            header: 3 * STEP,
            idle: 6 * STEP,
        })
    }

    fn about(elapsed: Duration, expected: Duration) -> bool {
        elapsed >= expected && elapsed < expected + 2 * STEP
    }

    #[tokio::test]
    async fn a_connection_without_headers_expires_after_the_header_time() {
        let clock = clock();
        let start = Instant::now();
        assert_eq!(clock.expired().await, "no complete request headers in time");
        assert!(about(start.elapsed(), 3 * STEP), "{:?}", start.elapsed());
    }

    #[tokio::test]
    async fn a_request_being_answered_has_no_deadline_and_idle_time_follows_it() {
        let clock = Arc::new(clock());
        clock.request_started();
        let start = Instant::now();
        let answered = {
            let clock = clock.clone();
            tokio::spawn(async move {
                tokio::time::sleep(10 * STEP).await;
                clock.answered();
            })
        };
        assert_eq!(clock.expired().await, "idle for too long");
        assert!(about(start.elapsed(), 16 * STEP), "{:?}", start.elapsed());
        answered.await.unwrap();
    }

    #[tokio::test]
    async fn the_first_byte_after_an_idle_time_starts_the_header_clock() {
        let clock = Arc::new(clock());
        clock.request_started();
        clock.answered();
        let start = Instant::now();
        let typing = {
            let clock = clock.clone();
            tokio::spawn(async move {
                tokio::time::sleep(4 * STEP).await;
                clock.received();
                // More bytes of the same headers do not restart it.
                tokio::time::sleep(2 * STEP).await;
                clock.received();
            })
        };
        assert_eq!(clock.expired().await, "no complete request headers in time");
        assert!(about(start.elapsed(), 7 * STEP), "{:?}", start.elapsed());
        typing.await.unwrap();
    }
}
