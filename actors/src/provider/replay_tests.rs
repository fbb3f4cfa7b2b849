//! What the wire modules' tests share: recorded SSE streams from
//! `tests/fixtures/<wire>/`, replayed byte for byte through the real SSE
//! parser in chunks of any size and then through a wire's decoder, as
//! `http::answer` feeds it.

use super::http::{FrameDecoder, FrameError};
use crate::model::ModelEvent;
use futures::StreamExt;

/// The text of `tests/fixtures/<dir>/<name>`.
pub fn fixture(dir: &str, name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The events decoder `D` makes of `tests/fixtures/<dir>/<name>` arriving
/// in chunks of `size` bytes, up to its last frame.
pub async fn replay<D: FrameDecoder>(
    dir: &str,
    name: &str,
    size: usize,
) -> Result<Vec<ModelEvent>, FrameError> {
    let bytes = fixture(dir, name).into_bytes();
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = bytes
        .chunks(size)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let mut frames = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(chunks));
    let mut decoder = D::default();
    let mut events = Vec::new();
    while let Some(frame) = frames.next().await {
        let Some(data) = frame.expect("an SSE frame").data else {
            continue;
        };
        let decoded = decoder.decode(&data)?;
        events.extend(decoded.events);
        if decoded.done {
            break;
        }
    }
    Ok(events)
}
