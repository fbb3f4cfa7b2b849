//! A pruning strategy brought by a library user: a closure or a trait
//! object from (history, budget) to the messages a request carries. Its
//! answer is checked by the same invariants as the built-in strategies
//! (tool calls and results stay paired; the system prompt is added by the
//! session, so it is always kept); an answer that breaks them is not sent.

use crate::protocol::Message;
use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// Chooses what of the conversation a request carries.
pub trait ContextStrategy: Send + Sync + 'static {
    /// The messages to send, taken from `history` (the conversation after
    /// the last summary), within `budget` tokens (the request's budget
    /// minus the system prompt and the tool definitions).
    fn view(&self, history: &[Message], budget: u64) -> Vec<Message>;

    /// How `/context` and `/debug` name it.
    fn name(&self) -> String {
        "custom".into()
    }
}

impl<F> ContextStrategy for F
where
    F: Fn(&[Message], u64) -> Vec<Message> + Send + Sync + 'static,
{
    fn view(&self, history: &[Message], budget: u64) -> Vec<Message> {
        self(history, budget)
    }
}

/// A shared [`ContextStrategy`], as the session state holds it.
#[derive(Clone)]
pub struct CustomStrategy(pub Arc<dyn ContextStrategy>);

impl CustomStrategy {
    /// Wrap a strategy.
    pub fn new(strategy: impl ContextStrategy) -> Self {
        CustomStrategy(Arc::new(strategy))
    }
}

impl fmt::Debug for CustomStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomStrategy({})", self.0.name())
    }
}

impl PartialEq for CustomStrategy {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Serialize for CustomStrategy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.name())
    }
}
