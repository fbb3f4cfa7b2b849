//! What the AgentLoop needs of a model: give it a request, get a stream of
//! events. The real implementation is [`Providers`](super::Providers); tests
//! and library users may bring their own.

use super::ProviderError;
use crate::model::{ModelEvent, ModelRequest};
use futures::stream::BoxStream;
use std::sync::Arc;

/// A model's streamed answer. Ends after `ModelEvent::Finished` or an error.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ProviderError>>;

/// Anything that can answer model requests (the real providers, or a fake).
pub trait ModelClient: Send + Sync + 'static {
    /// Start answering `request` (the call is made when the stream is
    /// first polled; dropping the stream cancels it).
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

impl<T: ModelClient> ModelClient for Arc<T> {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}
