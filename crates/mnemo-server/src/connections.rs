//! The accept loop and each connection's life: HTTP/1.1 by hyper, with the guards `axum::serve`
//! does not have — a bound on connections held, a time limit on a request head (slowloris),
//! and an idle limit on a kept-alive connection — and the graceful shutdown it had (stop
//! accepting, let every request in flight finish, then return).
//!
//! Why not hyper's own `header_read_timeout`: hyper runs that timer whenever it waits for a
//! request head, including while a kept-alive connection waits for its next request, so it
//! would also cut every idle connection at the header limit (10 s), far below the minute for
//! which a reverse proxy keeps an idle upstream connection. Here a head's clock starts at
//! accept or at the first byte after the previous answer, and idleness is timed apart.
//!
//! Times are transport concerns and read tokio's monotonic clock, never the injected `Clock`
//! (which may be simulated): a connection's deadlines are real seconds whatever the memory's
//! time.
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tower::ServiceExt as _;

use crate::metrics::Metrics;

/// The connection limits (from `[serve]`).
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// A request head must arrive whole within this.
    pub header_read_timeout: Duration,
    /// A connection with nothing in flight and nothing received is closed after this.
    pub idle_timeout: Duration,
    /// Most connections held at once.
    pub max_connections: usize,
}

/// Why the server closed a connection itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// A request head did not arrive whole in time.
    HeaderTimeout,
    /// Kept alive with no request for too long.
    Idle,
}

impl Closed {
    /// Its label in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Closed::HeaderTimeout => "header_timeout",
            Closed::Idle => "idle",
        }
    }
}

/// What one connection is doing, shared by its socket, its requests and its watchdog.
/// Instants are kept as milliseconds since the connection's accept (atomics, no lock).
struct Activity {
    accepted: Instant,
    /// Requests whose answer is not fully sent yet.
    in_flight: AtomicUsize,
    /// When the head now awaited began to arrive (0: none is arriving). Starts at accept: a new
    /// connection owes its first head at once.
    head_since: AtomicU64,
    /// When the connection last became idle (its last answer fully sent).
    idle_since: AtomicU64,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Activity {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            // 1, not 0: "a head is awaited since accept".
            head_since: AtomicU64::new(1),
            idle_since: AtomicU64::new(1),
        })
    }

    /// Milliseconds since accept, at least 1 (0 means "none").
    fn now(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// Bytes came in: with nothing in flight they begin the next request head.
    fn received(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let _ = self.head_since.compare_exchange(0, self.now(), Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// A request head was read: the request is in flight until its answer is sent.
    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Release);
        InFlight(self.clone())
    }

    /// Whether the connection is past a limit now.
    fn overdue(&self, limits: &ConnectionLimits) -> Option<Closed> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let now = self.now();
        let since = |at: u64| Duration::from_millis(now.saturating_sub(at));
        match self.head_since.load(Ordering::Acquire) {
            0 if since(self.idle_since.load(Ordering::Acquire)) >= limits.idle_timeout => Some(Closed::Idle),
            0 => None,
            head if since(head) >= limits.header_read_timeout => Some(Closed::HeaderTimeout),
            _ => None,
        }
    }
}

/// A request in flight on its connection; dropped once its answer is sent (or abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle_since.store(self.0.now(), Ordering::Release);
        }
    }
}

/// The socket, telling the connection's activity when bytes come in.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.received();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Completes when the connection is past a limit, saying which.
async fn watchdog(activity: Arc<Activity>, limits: ConnectionLimits) -> Closed {
    // Checked four times per limit, and at least once a second: a connection is closed at most
    // a quarter of its limit, and at most a second, after it.
    let tick = (limits.header_read_timeout.min(limits.idle_timeout) / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        if let Some(why) = activity.overdue(&limits) {
            return why;
        }
    }
}

/// `body`, holding `guard` until it is dropped: hyper drops a response body once it is sent
/// (or the connection is gone), so whatever `guard` counts lasts as long as the answer does,
/// a streamed export included.
pub fn hold_until_sent<G: Send + Sync + 'static>(body: Body, guard: G) -> Body {
    Body::new(body.map_err(move |e| {
        let _held = &guard;
        e
    }))
}

/// Accept connections on `listener` and serve `app` on each until `shutdown` completes; then
/// stop accepting and wait for every connection to finish its requests in flight (idle ones are
/// closed at once).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: the loop must live on, but not spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Above the bound: closed at once (dropped), which costs nothing held.
            metrics.connection_refused();
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let io = TokioIo::new(Watched { stream, activity: activity.clone() });
        let per_request = activity.clone();
        let app = app.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let in_flight = per_request.begin();
            let app = app.clone();
            async move {
                let response = app.oneshot(req.map(Body::new)).await?;
                Ok::<_, Infallible>(response.map(|body| hold_until_sent(body, in_flight)))
            }
        });
        let conn = hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(io, service);
        let conn = graceful.watch(conn);
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _open = metrics.connection_opened();
            tokio::select! {
                r = conn => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                why = watchdog(activity, limits) => {
                    // Dropping the connection closes the socket: nothing is in flight on it.
                    tracing::debug!(reason = why.as_str(), "closing a connection");
                    metrics.connection_closed_by(why);
                }
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(header_ms: u64, idle_ms: u64) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_millis(header_ms),
            idle_timeout: Duration::from_millis(idle_ms),
            max_connections: 1,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_owes_its_head_and_a_served_one_is_idle() {
        let a = Activity::new();
        let l = limits(100, 1000);
        tokio::time::advance(Duration::from_millis(50)).await;
        assert_eq!(a.overdue(&l), None);
        tokio::time::advance(Duration::from_millis(60)).await;
        assert_eq!(a.overdue(&l), Some(Closed::HeaderTimeout), "no head within 100 ms of accept");
        let req = a.begin();
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(a.overdue(&l), None, "a request in flight is never cut");
        drop(req);
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(a.overdue(&l), None, "idle, but below the idle limit (the header limit does not apply)");
        a.received();
        tokio::time::advance(Duration::from_millis(110)).await;
        assert_eq!(a.overdue(&l), Some(Closed::HeaderTimeout), "a head began and did not finish");
        drop(a.begin());
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert_eq!(a.overdue(&l), Some(Closed::Idle));
    }
}
