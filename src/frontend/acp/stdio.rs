//! The editor's end of the connection: our stdin and stdout, as the ACP
//! crate's byte streams.
//!
//! The crate's own `Stdio` ends the connection with an internal error when a
//! write meets a closed pipe. An editor that closes the connection while we
//! are still sending (a `session/update` that follows its last answer) is
//! not a failure, though: it has gone, and `agentbus acp` must end cleanly
//! when stdin reaches its end. So output to a closed stdout is dropped,
//! logged once, and the connection ends as it always does — at stdin's end.
//!
//! Never used for anything but the protocol: logs go to stderr.

use agent_client_protocol::ByteStreams;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// Our stdio as the connection's transport.
pub fn transport() -> ByteStreams<Compat<EditorOutput<tokio::io::Stdout>>, Compat<tokio::io::Stdin>>
{
    ByteStreams::new(
        EditorOutput::new(tokio::io::stdout()).compat_write(),
        tokio::io::stdin().compat(),
    )
}

/// A writer to the editor that treats a closed pipe as the editor having
/// gone: every later byte is accepted and dropped.
pub struct EditorOutput<W> {
    inner: W,
    gone: bool,
}

impl<W> EditorOutput<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, gone: false }
    }

    /// `result`, unless it says the reader has closed its end: then the
    /// editor is gone and `accepted` stands for what was asked.
    fn unless_gone<T>(&mut self, result: io::Result<T>, accepted: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                tracing::info!("the editor closed our stdout; what is still sent is dropped");
                self.gone = true;
                Ok(accepted)
            }
            other => other,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for EditorOutput<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(buf.len()));
        }
        let written = futures::ready!(Pin::new(&mut this.inner).poll_write(cx, buf));
        Poll::Ready(this.unless_gone(written, buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(()));
        }
        let flushed = futures::ready!(Pin::new(&mut this.inner).poll_flush(cx));
        Poll::Ready(this.unless_gone(flushed, ()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(()));
        }
        let shut = futures::ready!(Pin::new(&mut this.inner).poll_shutdown(cx));
        Poll::Ready(this.unless_gone(shut, ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn writes_after_the_reader_closed_are_dropped_not_failed() {
        let (reader, writer) = tokio::net::UnixStream::pair().expect("a socket pair");
        let mut output = EditorOutput::new(writer);
        output
            .write_all(b"first\n")
            .await
            .expect("the reader is there");
        drop(reader);
        output
            .write_all(b"second\n")
            .await
            .expect("a closed reader is the editor gone, not an error");
        output.flush().await.expect("flushing to nobody");
        assert!(output.gone);
    }

    #[tokio::test]
    async fn other_errors_still_fail() {
        let mut output = EditorOutput::new(Failing);
        let e = output.write_all(b"x").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(!output.gone);
    }

    struct Failing;

    impl AsyncWrite for Failing {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Err(io::ErrorKind::PermissionDenied.into()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}
