//! Turns rendered SSE frames into an HTTP response body that ends the way the
//! script says: complete, stalled (frames stop but the connection stays
//! open, and the client's leaving is counted), or dropped (the connection is
//! aborted mid-stream). These are the failure modes a client's timeout and
//! retry logic must survive.

use std::io;
use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::watch;

use crate::record::Recorder;
use crate::script::Ending;

type Frames = BoxStream<'static, Result<Bytes, io::Error>>;

/// The body streaming `frames` and ending as `ending` says. A stalled stream
/// holds until the client goes away (counted on `recorder`) or `shutdown`
/// turns true.
pub(crate) fn body(
    frames: Vec<Bytes>,
    ending: Ending,
    recorder: Arc<Recorder>,
    shutdown: watch::Receiver<bool>,
) -> Body {
    let sent = |n: usize| -> Frames {
        stream::iter(frames.iter().take(n).cloned().map(Ok).collect::<Vec<_>>()).boxed()
    };
    let stream = match ending {
        Ending::Complete => sent(frames.len()),
        Ending::DropAfter(n) => sent(n)
            .chain(stream::once(async {
                // Pending once first: the server flushes what it holds when
                // the body is pending, so the client really gets the N frames
                // before the abort (otherwise they die in the write buffer).
                tokio::task::yield_now().await;
                Err(io::Error::other("scripted model: dropping the connection"))
            }))
            .boxed(),
        Ending::StallAfter(n) => {
            let guard = DisconnectGuard {
                recorder: Some(recorder),
            };
            let mut shutdown = shutdown;
            sent(n)
                .chain(stream::once(async move {
                    // Only ends early when the server shuts down; otherwise
                    // this future is dropped when the client goes away.
                    let _ = shutdown.wait_for(|stopping| *stopping).await;
                    guard.disarm();
                    Err(io::Error::other("scripted model: shutting down"))
                }))
                .boxed()
        }
    };
    Body::from_stream(stream)
}

/// Counts a disconnect when dropped while armed: the stalled stream was
/// dropped because the connection went away.
struct DisconnectGuard {
    recorder: Option<Arc<Recorder>>,
}

impl DisconnectGuard {
    /// The stream ended on our side: nothing to count.
    fn disarm(mut self) {
        self.recorder = None;
    }
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.take() {
            recorder.note_disconnect();
        }
    }
}
