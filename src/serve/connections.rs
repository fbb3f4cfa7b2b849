//! The daemon's connections: accept, serve each over HTTP/1.1 (WebSocket
//! upgrades included), and on shutdown let the open ones finish.
//!
//! Why not `axum::serve`: it serves through hyper-util's "auto" builder,
//! which first reads 24 bytes to tell HTTP/2 from HTTP/1 (this daemon's
//! axum speaks only HTTP/1; an HTTP/2 client was refused either way) and
//! hands them to hyper ahead of the socket. hyper's first read therefore
//! sees only those 24 bytes, and the next one grows its read buffer to
//! 16 KiB, which every connection then keeps for as long as it is open —
//! a session's event stream for its whole life. Served here by hyper's
//! HTTP/1 connection directly, the buffer stays at its 8 KiB (heaptrack
//! under the serve bench: README, "Per-session memory").
//!
//! What it must keep from `axum::serve`: an accept error never ends the
//! loop (axum's listener retries it), and after `shutdown` no connection is
//! accepted while those open are told to close once their answer is sent;
//! [`serve`] returns when they all have.

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::pin::pin;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Serve `app` on every connection `listener` accepts until `shutdown`,
/// then wait for the open connections to close.
pub async fn serve<L>(mut listener: L, app: Router, shutdown: CancellationToken)
where
    L: Listener,
    L::Addr: std::fmt::Debug,
{
    // Each connection's task holds a receiver: the sender is closed once
    // they have all ended.
    let (open_tx, open_rx) = watch::channel(());
    loop {
        let (io, remote) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        tracing::trace!("connection {remote:?} accepted");
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let mut conn = pin!(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(io), service)
                    .with_upgrades()
            );
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
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
