//! A TCP proxy a test can cut: the network between a program and a
//! server (Postgres, ...) failing on cue.
//!
//! [`TcpProxy::cut`] closes every connection it carries and refuses new
//! ones (each is accepted and closed at once, as a server that went away
//! would look); [`TcpProxy::restore`] lets connections through again. The
//! proxy runs on the runtime that started it and stops when dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A proxy from a port on 127.0.0.1 to `target`.
pub struct TcpProxy {
    address: SocketAddr,
    /// Cancelled when cut; replaced by a fresh one when restored.
    open: Arc<Mutex<Option<CancellationToken>>>,
    accepting: tokio::task::JoinHandle<()>,
}

impl TcpProxy {
    /// Listen on a free port of 127.0.0.1, passing connections to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let open = Arc::new(Mutex::new(Some(CancellationToken::new())));
        let state = open.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let token = state.lock().ok().and_then(|open| open.clone());
                match token {
                    Some(token) => {
                        tokio::spawn(carry(client, target, token));
                    }
                    // Cut: closed at once.
                    None => drop(client),
                }
            }
        });
        Ok(TcpProxy {
            address,
            open,
            accepting,
        })
    }

    /// Where to connect instead of the target.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Close every connection and refuse new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        if let Ok(mut open) = self.open.lock()
            && let Some(token) = open.take()
        {
            token.cancel();
        }
    }

    /// Let connections through again.
    pub fn restore(&self) {
        if let Ok(mut open) = self.open.lock()
            && open.is_none()
        {
            *open = Some(CancellationToken::new());
        }
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
        self.accepting.abort();
    }
}

/// Copy both ways between `client` and `target` until either side closes
/// or the proxy is cut.
async fn carry(mut client: TcpStream, target: SocketAddr, cut: CancellationToken) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = cut.cancelled() => {}
    }
}
