//! Turns rendered SSE frames into an HTTP response body that ends the way the
//! script says: complete, stalled (frames stop but the connection stays
//! open, and the client's leaving is counted), or dropped (the connection is
//! aborted mid-stream). These are the failure modes a client's timeout and
//! retry logic must survive. Frames can be paced (`chunk_interval_ms`), and
//! `stamped_chunks` markers get the time each frame is sent.

use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::watch;

use crate::record::Recorder;
use crate::script::{Ending, SENT_AT_MARKER};

type Frames = BoxStream<'static, Result<Bytes, io::Error>>;

/// The body streaming `frames` and ending as `ending` says, pausing
/// `interval` before each frame after the first and holding the first until
/// `after_requests` requests have arrived (if set). A stalled stream holds
/// until the client goes away (counted on `recorder`) or `shutdown` turns
/// true.
pub(crate) fn body(
    frames: Vec<Bytes>,
    ending: Ending,
    interval: Option<Duration>,
    after_requests: Option<usize>,
    recorder: Arc<Recorder>,
    shutdown: watch::Receiver<bool>,
) -> Body {
    let gate = recorder.clone();
    let sent = |n: usize| -> Frames {
        let first_n: Vec<Bytes> = frames.iter().take(n).cloned().collect();
        let gate = gate.clone();
        stream::iter(first_n.into_iter().enumerate())
            .then(move |(at, frame)| {
                let gate = gate.clone();
                async move {
                    if let Some(pause) = interval.filter(|_| at > 0) {
                        tokio::time::sleep(pause).await;
                    }
                    if let Some(requests) = after_requests.filter(|_| at == 0) {
                        gate.wait_for_requests(requests).await;
                    }
                    Ok(stamp(frame))
                }
            })
            .boxed()
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

/// `frame` with every [`SENT_AT_MARKER`] replaced by the time now, in
/// microseconds since the Unix epoch (16 digits, as long as the marker).
fn stamp(frame: Bytes) -> Bytes {
    let marker = SENT_AT_MARKER.as_bytes();
    if !frame.windows(marker.len()).any(|window| window == marker) {
        return frame;
    }
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros());
    let text = String::from_utf8_lossy(&frame).replace(SENT_AT_MARKER, &format!("{micros:016}"));
    Bytes::from(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_replace_markers_with_the_time_and_keep_the_length() {
        let frame = Bytes::from(format!("data: {{\"content\":\"{SENT_AT_MARKER} \"}}\n\n"));
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        let stamped = stamp(frame.clone());
        assert_eq!(stamped.len(), frame.len());
        let text = String::from_utf8_lossy(&stamped);
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        let micros: u128 = digits.parse().expect("a stamp");
        assert!(micros >= before, "{text}");
        assert_eq!(
            stamp(Bytes::from_static(b"data: x\n\n")),
            Bytes::from_static(b"data: x\n\n")
        );
    }
}
