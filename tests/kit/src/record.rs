//! The record of everything the server saw: each request with its protocol
//! violations and script problems, plus counters that tests can await
//! (requests arrived, stalled streams whose client went away) without
//! sleeping or polling.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::watch;

/// One request the scripted model received, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request path, e.g. `/v1/chat/completions` (no query string).
    pub path: String,
    /// Headers by lower-case name; repeated headers are joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The JSON body; `Null` when there was none, a JSON string holding the
    /// raw text when it was not JSON.
    pub body: Value,
    /// Protocol violations: things the real provider would reject, and
    /// scripted calls to tools the request did not offer (which a real
    /// model could not make). An agentbus bug (or a script's) when not
    /// empty.
    pub violations: Vec<String>,
    /// Problems on the scripted side: script exhausted, no response matched,
    /// a template with nothing to fill it, an unknown endpoint.
    pub problems: Vec<String>,
    /// Index in the script of the response that answered this request, if
    /// one did.
    pub response: Option<usize>,
    /// The request's input tokens, counted when the script sets a
    /// `context_window` and the request is a model call with a JSON body
    /// (see [`count_request`](crate::count_request)); `None` otherwise.
    pub input_tokens: Option<u64>,
    /// Whether the request was refused because its input tokens plus its
    /// maximum output tokens exceed the script's `context_window` (HTTP 400
    /// with the provider's error; no response consumed). Neither a protocol
    /// violation nor a problem: a real provider refuses it the same way.
    pub refused_for_length: bool,
    /// What the prompt cache read and wrote for this request, when the
    /// script caches prompts and the request was answered with a stream
    /// (see [`cache`](crate::cache)); `None` otherwise.
    pub cache: Option<crate::CacheUsage>,
}

/// Shared, thread-safe log of requests and disconnects.
#[derive(Debug)]
pub(crate) struct Recorder {
    requests: Mutex<Vec<RecordedRequest>>,
    request_count: watch::Sender<usize>,
    disconnect_count: watch::Sender<usize>,
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            requests: Mutex::new(Vec::new()),
            request_count: watch::Sender::new(0),
            disconnect_count: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        // A panic elsewhere must not hide the record from the test.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a request and wakes the waiters; returns its index.
    pub(crate) fn record(&self, request: RecordedRequest) -> usize {
        let index = {
            let mut requests = self.lock();
            requests.push(request);
            requests.len()
        };
        self.request_count.send_replace(index);
        index - 1
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    /// Counts a stalled stream whose client went away.
    pub(crate) fn note_disconnect(&self) {
        self.disconnect_count.send_modify(|count| *count += 1);
    }

    pub(crate) fn disconnects(&self) -> usize {
        *self.disconnect_count.borrow()
    }

    pub(crate) async fn wait_for_requests(&self, n: usize) {
        wait_for(&self.request_count, n).await;
    }

    pub(crate) async fn wait_for_disconnects(&self, n: usize) {
        wait_for(&self.disconnect_count, n).await;
    }
}

async fn wait_for(count: &watch::Sender<usize>, n: usize) {
    let mut receiver = count.subscribe();
    // The sender lives as long as `self`, so this cannot fail while we wait.
    let _ = receiver.wait_for(|count| *count >= n).await;
}

/// Lines of `requests`' violations (or problems) prefixed with where they were
/// found, e.g. `request 2 (POST /v1/messages): messages[1]: ...`.
pub(crate) fn prefixed(
    requests: &[RecordedRequest],
    pick: fn(&RecordedRequest) -> &[String],
) -> Vec<String> {
    requests
        .iter()
        .enumerate()
        .flat_map(|(index, request)| {
            pick(request).iter().map(move |line| {
                format!(
                    "request {index} ({} {}): {line}",
                    request.method, request.path
                )
            })
        })
        .collect()
}
