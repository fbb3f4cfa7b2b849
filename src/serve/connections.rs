//! The daemon's connections: accept, serve each over HTTP/1.1 (WebSocket
//! upgrades included) or HTTP/2 with prior knowledge (h2c), and on
//! shutdown let the open ones finish.
//!
//! Why not `axum::serve`: it serves through hyper-util's "auto" builder,
//! which first *reads* 24 bytes to tell HTTP/2 from HTTP/1 and hands them
//! to hyper ahead of the socket. hyper's first read therefore sees only
//! those 24 bytes, and the next one grows its read buffer to 16 KiB, which
//! every connection then keeps for as long as it is open — a session's
//! event stream for its whole life. Here the preface is *peeked* at
//! ([`speaks_http2`]), left in the socket, and the connection served by
//! hyper's HTTP/1 or HTTP/2 connection directly: an HTTP/1 connection's
//! buffer stays at its 8 KiB (heaptrack under the serve bench: README,
//! "Per-session memory").
//!
//! What it must keep from `axum::serve`: both protocols, an accept error
//! never ending the loop (axum's listener retries it), and after
//! `shutdown` no connection accepted while those open are told to close
//! once their answer is sent; [`serve`] returns when they all have.

use axum::Router;
use axum::serve::Listener;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::pin::{Pin, pin};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What an HTTP/2 client with prior knowledge sends first.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serve `app` on every connection `listener` accepts until `shutdown`,
/// then wait for the open connections to close.
pub async fn serve<L>(mut listener: L, app: Router, shutdown: CancellationToken)
where
    L: Listener<Io = TcpStream>,
    L::Addr: std::fmt::Debug,
{
    // Each connection's task holds a receiver: the sender is closed once
    // they have all ended.
    let (open_tx, open_rx) = watch::channel(());
    loop {
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        tracing::trace!("connection {remote:?} accepted");
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            // A connection that has said nothing by the shutdown is closed,
            // as hyper closes an idle one.
            let h2 = tokio::select! {
                h2 = speaks_http2(&tcp) => h2,
                () = shutdown.cancelled() => return drop(open),
            };
            let io = TokioIo::new(tcp);
            let result = if h2 {
                let conn = http2::Builder::new(TokioExecutor::new()).serve_connection(io, service);
                // Boxed: inline, every HTTP/1 connection's task would be
                // as large as an HTTP/2 one's.
                Box::pin(until_shutdown(conn, &shutdown, |conn| {
                    conn.graceful_shutdown()
                }))
                .await
            } else {
                let conn = http1::Builder::new()
                    .serve_connection(io, service)
                    .with_upgrades();
                until_shutdown(conn, &shutdown, |conn| conn.graceful_shutdown()).await
            };
            if let Err(e) = result {
                tracing::trace!("connection {remote:?} ended: {e}");
            }
            drop(open);
        });
    }
    drop(listener);
    drop(open_rx);
    if open_tx.receiver_count() > 0 {
        tracing::debug!(
            "waiting for {} connection(s) to close",
            open_tx.receiver_count()
        );
    }
    open_tx.closed().await;
}

/// `conn` to its end; once `shutdown` comes, told to close after the
/// answer it is sending (`graceful`).
async fn until_shutdown<C, T>(
    conn: C,
    shutdown: &CancellationToken,
    graceful: impl FnOnce(Pin<&mut C>),
) -> T
where
    C: Future<Output = T>,
{
    let mut conn = pin!(conn);
    tokio::select! {
        result = conn.as_mut() => result,
        () = shutdown.cancelled() => {
            graceful(conn.as_mut());
            conn.await
        }
    }
}

/// Whether the client opens with HTTP/2's preface, seen without taking it
/// from the socket. An HTTP/1 request differs at its first byte; a preface
/// that arrives in pieces is waited for (a millisecond at a time, a second
/// at most), and a connection closed before it says anything is HTTP/1's
/// to end.
async fn speaks_http2(tcp: &TcpStream) -> bool {
    let mut seen = [0u8; H2_PREFACE.len()];
    for _ in 0..1000 {
        let n = match tcp.peek(&mut seen).await {
            Ok(n) => n,
            Err(_) => return false,
        };
        if n == 0 || seen[..n] != H2_PREFACE[..n] {
            return false;
        }
        if n == H2_PREFACE.len() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    false
}
