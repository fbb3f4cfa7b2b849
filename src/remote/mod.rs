//! A client of `agentbus serve`: what `chat --attach` and `run --attach`
//! use in place of an in-process runtime.
//!
//! [`client`] makes the API's requests (with the token) and turns failures
//! into errors that say what to do; [`events`] follows a session's SSE
//! stream onto a mirror of its topic, reconnecting with `Last-Event-ID` so
//! the front end sees every event once, in order; [`door`] makes a
//! daemon's session the same door as a session of this process. Request and answer bodies are the server's own
//! types ([`crate::api`]). Nothing here knows about terminals.

pub mod client;
pub mod door;
pub mod events;
#[cfg(test)]
mod fuzz_tests;

pub use client::RemoteClient;

/// A fake daemon for the tests: `app` served on a free port of this
/// machine; its address as a client is given it (with a token).
#[cfg(test)]
pub(crate) async fn fake_daemon(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}/?token=t")
}
