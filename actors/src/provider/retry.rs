//! Trying a model call again: exponential backoff with jitter, honouring
//! `Retry-After`, announced to the session as `ModelEvent::Retrying` so front
//! ends discard the failed attempt's partial output.
//!
//! The whole retry loop lives inside the returned stream: dropping the
//! stream (an interrupt) cancels a request waiting in backoff too.

use super::{ModelStream, ProviderError};
use crate::model::ModelEvent;
use crate::settings::ModelProfile;
use futures::StreamExt;
use std::time::Duration;

/// How often and how patiently to retry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub max_retries: u32,
    /// The first backoff; it doubles with each attempt.
    pub base_delay: Duration,
    /// No backoff grows beyond this, and a `Retry-After` beyond it is not
    /// waited for (the call fails instead).
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// How `profile` retries (its `max_retries`, `retry_base_delay_ms` and
    /// `max_retry_delay_secs`).
    pub fn of(profile: &ModelProfile) -> Self {
        RetryPolicy {
            max_retries: profile.max_retries,
            base_delay: Duration::from_millis(profile.retry_base_delay_ms),
            max_delay: Duration::from_secs(profile.max_retry_delay_secs),
        }
    }
}

/// The delay before retry number `attempt` (1-based). `jitter` in `[0, 1)`
/// spreads exponential delays over 75%–125% of nominal; a server's
/// `Retry-After` is honoured as given. `None`: the server asked for longer
/// than `max_delay`.
pub fn delay_before(
    policy: &RetryPolicy,
    attempt: u32,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Option<Duration> {
    if let Some(asked) = retry_after {
        return (asked <= policy.max_delay).then_some(asked);
    }
    let exponent = attempt.saturating_sub(1).min(20);
    let nominal = policy
        .base_delay
        .saturating_mul(1 << exponent)
        .min(policy.max_delay);
    let spread = 0.75 + 0.5 * jitter.clamp(0.0, 1.0);
    // Not `mul_f64`, which panics past `Duration::MAX` (a configured
    // `max_retry_delay_secs` near u64::MAX gets there).
    Some(Duration::try_from_secs_f64(nominal.as_secs_f64() * spread).unwrap_or(nominal))
}

/// A stream that runs `attempt()` and, when it fails in a retryable way,
/// announces `Retrying` and runs it again after the backoff.
pub fn with_retries<F>(policy: RetryPolicy, attempt: F) -> ModelStream
where
    F: Fn() -> ModelStream + Send + Sync + 'static,
{
    Box::pin(async_stream::stream! {
        let mut retries = 0u32;
        loop {
            let mut stream = attempt();
            let error = loop {
                match stream.next().await {
                    Some(Ok(event)) => {
                        let finished = matches!(event, ModelEvent::Finished { .. });
                        yield Ok(event);
                        if finished {
                            return;
                        }
                    }
                    Some(Err(e)) => break e,
                    None => {
                        break ProviderError::Stream {
                            url: String::new(),
                            detail: "the stream ended before the answer was complete".into(),
                        }
                    }
                }
            };
            drop(stream);
            retries += 1;
            if !error.is_retryable() || retries > policy.max_retries {
                yield Err(error);
                return;
            }
            let Some(delay) = delay_before(&policy, retries, error.retry_after(), fastrand::f64()) else {
                yield Err(error);
                return;
            };
            tracing::info!(attempt = retries, delay_ms = delay.as_millis() as u64, "retrying model call: {error}");
            yield Ok(ModelEvent::Retrying {
                attempt: retries,
                delay_ms: delay.as_millis() as u64,
                reason: error.short_reason(),
            });
            tokio::time::sleep(delay).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    const POLICY: RetryPolicy = RetryPolicy {
        max_retries: 5,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(30),
    };

    #[test]
    fn backoff_doubles_within_its_jitter_band() {
        for (attempt, nominal_ms) in [(1, 200.0), (2, 400.0), (3, 800.0), (4, 1600.0)] {
            let low = delay_before(&POLICY, attempt, None, 0.0)
                .unwrap()
                .as_secs_f64()
                * 1000.0;
            let high = delay_before(&POLICY, attempt, None, 0.999)
                .unwrap()
                .as_secs_f64()
                * 1000.0;
            assert!((low - nominal_ms * 0.75).abs() < 1.0, "{attempt}: {low}");
            assert!((high - nominal_ms * 1.25).abs() < 2.0, "{attempt}: {high}");
        }
    }

    #[test]
    fn backoff_is_capped() {
        let d = delay_before(&POLICY, 30, None, 0.5).unwrap();
        assert_eq!(d, Duration::from_secs(30));
    }

    fn failing_attempt(counter: Arc<AtomicU32>, retry_after: Option<Duration>) -> ModelStream {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(futures::stream::once(async move {
            Err(ProviderError::Status {
                url: "u".into(),
                status: 429,
                message: "slow down".into(),
                hint: None,
                retry_after,
            })
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_stream_during_backoff_cancels_the_retry() {
        let attempts = Arc::new(AtomicU32::new(0));
        let counter = attempts.clone();
        let mut stream = with_retries(POLICY, move || {
            failing_attempt(counter.clone(), Some(Duration::from_secs(20)))
        });
        match stream.next().await {
            Some(Ok(ModelEvent::Retrying {
                attempt: 1,
                delay_ms: 20_000,
                ..
            })) => {}
            other => panic!("{other:?}"),
        }
        drop(stream); // the interrupt
        tokio::time::advance(Duration::from_secs(120)).await;
        tokio::task::yield_now().await;
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            1,
            "no attempt after the stream was dropped"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_retries_with_the_last_error() {
        let attempts = Arc::new(AtomicU32::new(0));
        let counter = attempts.clone();
        let policy = RetryPolicy {
            max_retries: 2,
            ..POLICY
        };
        let items: Vec<_> = with_retries(policy, move || failing_attempt(counter.clone(), None))
            .collect()
            .await;
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
        assert!(matches!(
            items.last(),
            Some(Err(ProviderError::Status { status: 429, .. }))
        ));
        let retries = items
            .iter()
            .filter(|i| matches!(i, Ok(ModelEvent::Retrying { .. })))
            .count();
        assert_eq!(retries, 2);
    }

    #[test]
    fn retry_after_is_honoured_unless_it_is_too_long() {
        assert_eq!(
            delay_before(&POLICY, 1, Some(Duration::from_secs(7)), 0.9),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            delay_before(&POLICY, 1, Some(Duration::from_secs(31)), 0.1),
            None
        );
    }
}
