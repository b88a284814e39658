//! Accepting connections: hyper's HTTP/1 server with a timer, so a request's head must
//! arrive within `header_timeout` (a connection that sends part of a header, or sits idle
//! between requests, is closed after it), at most `max_connections` at once, and a
//! graceful shutdown that cannot wait forever.
//!
//! At the cap, a new connection takes the place of the oldest one that has sent no
//! request for a second (slow clients' first, so half-sent headers cannot lock others
//! out); when there is none, it is answered 503 and closed.
//!
//! Shutdown drains: once it begins, connections opened before it finish their requests
//! (idle ones close at once; one that has sent nothing yet gets its first request
//! answered 503, or is closed after `header_timeout`), while new
//! connections are still accepted and answered 503 `shutting_down` (with `Retry-After`),
//! so a load balancer sees why instead of a refused connection. The drain ends when the
//! earlier connections are gone, or after `request_timeout` plus `header_timeout` at the
//! latest; then the listener closes.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use hyper::server::conn::http1;
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::error::ApiError;

/// How connections are accepted and drained.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenLimits {
    /// The longest a request's head may take to arrive (idle time between requests
    /// included).
    pub header_timeout: Duration,
    /// The most connections open at once.
    pub max_connections: usize,
    /// The longest the shutdown waits for connections opened before it.
    pub drain_limit: Duration,
}

/// Connections refused at the cap that are still being answered; past this many, more
/// are closed without an answer (a flood must not hold descriptors for its refusals).
const MAX_REFUSING: usize = 64;

/// How long a refused connection is given to read its 503.
const REFUSAL_TIME: Duration = Duration::from_secs(2);

/// After the drain, how long connections opened during it get to finish their 503s.
const LAST_GRACE: Duration = Duration::from_secs(2);

/// How often the drain looks at what is still open.
const DRAIN_POLL: Duration = Duration::from_millis(25);

/// A connection that has not sent a request yet is evicted to make room at the cap
/// once it is this old (a client's head takes milliseconds; a slow one's, seconds).
const EVICTABLE_AFTER: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Open {
    /// Every connection being served.
    all: AtomicUsize,
    /// Those accepted before the shutdown began.
    from_before: AtomicUsize,
    /// Refusals being written.
    refusing: AtomicUsize,
    /// Connections that may not have sent a request yet, oldest first.
    fresh: std::sync::Mutex<VecDeque<Fresh>>,
}

/// A connection that had sent no request when it was accepted.
struct Fresh {
    opened: Instant,
    /// Set when it sends its first request.
    seen: Arc<AtomicBool>,
    /// Closes it.
    evict: oneshot::Sender<()>,
}

impl Open {
    /// Closes the oldest connection that has sent no request in [`EVICTABLE_AFTER`]
    /// (a slow client's, most likely): true if there was one.
    fn evict_one(&self) -> bool {
        let mut fresh = self
            .fresh
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        while let Some(oldest) = fresh.front() {
            if oldest.opened.elapsed() < EVICTABLE_AFTER {
                return false;
            }
            let Some(oldest) = fresh.pop_front() else {
                return false;
            };
            if !oldest.seen.load(Ordering::SeqCst) && oldest.evict.send(()).is_ok() {
                return true;
            }
        }
        false
    }

    /// Remembers a new connection as evictable until it sends a request.
    fn track(&self, fresh: Fresh, max_connections: usize) {
        let mut tracked = self
            .fresh
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if tracked.len() >= max_connections.saturating_mul(2).max(16) {
            tracked.retain(|entry| !entry.seen.load(Ordering::SeqCst) && !entry.evict.is_closed());
        }
        tracked.push_back(fresh);
    }
}

/// One served connection, counted while it lives.
struct Counted {
    open: Arc<Open>,
    before_shutdown: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.all.fetch_sub(1, Ordering::SeqCst);
        if self.before_shutdown {
            self.open.from_before.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves and the drain ends; `on_shutdown`
/// runs when it begins (before any connection is told).
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ListenLimits,
    shutdown: impl Future<Output = ()>,
    on_shutdown: impl FnOnce(),
) {
    let open = Arc::new(Open::default());
    let (closing, _) = watch::channel(false);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut shutdown = pin!(shutdown);
    let mut on_shutdown = Some(on_shutdown);
    let mut drain_until: Option<Instant> = None;
    let mut tick = tokio::time::interval(DRAIN_POLL);
    loop {
        tokio::select! {
            () = &mut shutdown, if drain_until.is_none() => {
                if let Some(on_shutdown) = on_shutdown.take() {
                    on_shutdown();
                }
                closing.send_replace(true);
                drain_until = Some(Instant::now() + limits.drain_limit);
            }
            _ = tick.tick(), if drain_until.is_some() => {
                let over = drain_until.is_some_and(|until| Instant::now() >= until);
                if open.from_before.load(Ordering::SeqCst) == 0 || over {
                    break;
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => admit(stream, &app, &builder, &open, &closing, limits, drain_until.is_some()),
                // Out of descriptors (or a connection reset before it was taken): some
                // will close; try again shortly rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
    drop(listener);
    let grace = Instant::now() + LAST_GRACE;
    while open.all.load(Ordering::SeqCst) > 0 && Instant::now() < grace {
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

fn admit(
    stream: TcpStream,
    app: &Router,
    builder: &http1::Builder,
    open: &Arc<Open>,
    closing: &watch::Sender<bool>,
    limits: ListenLimits,
    draining: bool,
) {
    if open.all.load(Ordering::SeqCst) >= limits.max_connections && !open.evict_one() {
        if open.refusing.fetch_add(1, Ordering::SeqCst) < MAX_REFUSING {
            let open = open.clone();
            tokio::spawn(async move {
                refuse(stream).await;
                open.refusing.fetch_sub(1, Ordering::SeqCst);
            });
        } else {
            open.refusing.fetch_sub(1, Ordering::SeqCst);
            drop(stream);
        }
        return;
    }
    open.all.fetch_add(1, Ordering::SeqCst);
    if !draining {
        open.from_before.fetch_add(1, Ordering::SeqCst);
    }
    let counted = Counted {
        open: open.clone(),
        before_shutdown: !draining,
    };
    let mut builder = builder.clone();
    if draining {
        // One answer (a 503), then the connection closes.
        builder.keep_alive(false);
    }
    // Whether the connection has carried a request: one that has not is left to send
    // its first (answered 503 with `Connection: close`) rather than closed under a
    // client that connected just before the shutdown.
    let seen = Arc::new(AtomicBool::new(false));
    let marker = seen.clone();
    let (evict, mut evicted) = oneshot::channel::<()>();
    if !draining {
        open.track(
            Fresh {
                opened: Instant::now(),
                seen: seen.clone(),
                evict,
            },
            limits.max_connections,
        );
    }
    let inner = TowerToHyperService::new(app.clone());
    let service = service_fn(move |request| {
        marker.store(true, Ordering::SeqCst);
        inner.call(request)
    });
    let mut closing = closing.subscribe();
    tokio::spawn(async move {
        let _counted = counted;
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let mut connection = pin!(connection);
        if draining {
            let _ = connection.await;
            return;
        }
        let closed = tokio::select! {
            _ = connection.as_mut() => true,
            _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => false,
            // Made room for a newer connection at the cap: closed without an answer.
            Ok(()) = &mut evicted => return,
        };
        if !closed {
            if seen.load(Ordering::SeqCst) {
                // Idle: closed now; a request in flight: answered, then closed.
                connection.as_mut().graceful_shutdown();
            }
            // Otherwise its first request is answered 503 and closes it, or the
            // header timeout does.
            let _ = connection.await;
        }
    });
}

/// Answers a connection over the cap with a 503 and closes it.
async fn refuse(mut stream: TcpStream) {
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        "too_many_connections",
        "this server has as many connections open as it takes (grail serve --max-connections); try again shortly",
    );
    let body = error.body().to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_TIME, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so closing does not reset the
        // connection before the client has read the answer.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}
