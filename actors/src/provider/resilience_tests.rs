//! The providers against a real HTTP server that misbehaves on purpose (the
//! scripted model server), through every wire format: every failure that
//! can pass is retried, with a `Retrying` event so the session discards the
//! failed attempt's output; the rest fail at once with a clear message.

use super::error::RETRYABLE_STATUSES;
use super::{ModelClient, Providers};
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::Message;
use crate::session::core::partial::PartialMessage;
use crate::settings::{ModelProfile, ProviderKind};
use agentbus_testkit::{Script, ScriptedModel};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::time::Duration;

const GUARD: Duration = Duration::from_secs(60);
const KINDS: [ProviderKind; 3] = [
    ProviderKind::Openai,
    ProviderKind::Anthropic,
    ProviderKind::OpenaiResponses,
];

/// What a model call produced, in order.
#[derive(Debug)]
struct Outcome {
    events: Vec<ModelEvent>,
    error: Option<String>,
}

impl Outcome {
    fn retries(&self) -> Vec<(u32, u64, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                } => Some((*attempt, *delay_ms, reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The text of the final attempt, assembled as the session does
    /// (a `Retrying` event discards what came before it).
    fn final_text(&self) -> String {
        let mut partial = PartialMessage::default();
        for e in &self.events {
            if matches!(e, ModelEvent::Retrying { .. }) {
                partial = PartialMessage::default();
            }
            partial.apply(e);
        }
        partial.finish(|i| i.to_string()).text()
    }

    fn finished(&self) -> bool {
        matches!(self.events.last(), Some(ModelEvent::Finished { .. }))
    }
}

/// Call the model once through a profile of `kind` pointed at `server`.
async fn call(
    server: &ScriptedModel,
    kind: ProviderKind,
    tweak: impl FnOnce(&mut ModelProfile),
) -> Outcome {
    let base = match kind {
        ProviderKind::Openai | ProviderKind::OpenaiResponses => server.openai_base_url(),
        ProviderKind::Anthropic => server.anthropic_base_url(),
    };
    let mut profile = ModelProfile::new(kind, "scripted", base);
    profile.retry_base_delay_ms = 1;
    tweak(&mut profile);
    let providers = Providers::new(BTreeMap::from([("p".to_string(), profile)])).unwrap();
    let request = ModelRequest {
        profile: "p".into(),
        cache_key: "session".into(),
        max_output_tokens: None,
        system_prompt: "sys".into(),
        messages: vec![Message::user("hi")],
        tools: Default::default(),
    };
    let mut stream = providers.stream(request);
    let mut outcome = Outcome {
        events: Vec::new(),
        error: None,
    };
    loop {
        match tokio::time::timeout(GUARD, stream.next())
            .await
            .expect("the call hung")
        {
            Some(Ok(e)) => outcome.events.push(e),
            Some(Err(e)) => {
                outcome.error = Some(e.to_string());
                break;
            }
            None => break,
        }
    }
    outcome
}

async fn server(script: &str) -> ScriptedModel {
    ScriptedModel::start(Script::from_toml_str(script).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn each_retryable_status_is_retried_in_both_formats() {
    for kind in KINDS {
        for status in RETRYABLE_STATUSES {
            let s = server(&format!(
                "[[response]]\nstatus = {status}\nbody = '{{\"error\":{{\"message\":\"try later\"}}}}'\n\
                 [[response]]\ntext = \"recovered\"\n"
            ))
            .await;
            let out = call(&s, kind, |_| {}).await;
            assert!(out.finished(), "{kind} {status}: {out:?}");
            let retries = out.retries();
            assert_eq!(retries.len(), 1, "{kind} {status}");
            assert!(
                retries[0].2.contains(&format!("HTTP {status}")),
                "{}",
                retries[0].2
            );
            assert!(
                retries[0].1 < 1000,
                "no Retry-After: the short backoff applies"
            );
            assert_eq!(out.final_text(), "recovered");
            assert_eq!(s.requests().len(), 2);
            assert!(s.violations().is_empty(), "{:?}", s.violations());
        }
    }
}

#[tokio::test]
async fn retry_after_is_honoured_in_both_formats() {
    for kind in KINDS {
        for (header, value, expected_ms) in
            [("retry-after", "1", 1000), ("retry-after-ms", "1200", 1200)]
        {
            let s = server(&format!(
                "[[response]]\nstatus = 429\nheaders = {{ \"{header}\" = \"{value}\" }}\nbody = 'slow down'\n\
                 [[response]]\ntext = \"after waiting\"\n"
            ))
            .await;
            let out = call(&s, kind, |_| {}).await;
            assert_eq!(out.retries()[0].1, expected_ms, "{kind} {header}");
            assert_eq!(out.final_text(), "after waiting");
        }
    }
}

#[tokio::test]
async fn a_retry_after_longer_than_the_cap_fails_at_once() {
    let s = server("[[response]]\nstatus = 429\nheaders = { \"retry-after\" = \"3600\" }\nbody = 'come back in an hour'\n").await;
    let out = call(&s, ProviderKind::Openai, |_| {}).await;
    assert!(out.retries().is_empty());
    assert!(
        out.error
            .unwrap()
            .contains("HTTP 429: come back in an hour")
    );
}

#[tokio::test]
async fn client_errors_fail_at_once_and_401_names_the_key_variable() {
    for kind in KINDS {
        for status in [400, 401, 403, 404] {
            let s = server(&format!(
                "[[response]]\nstatus = {status}\nbody = '{{\"error\":{{\"message\":\"no\"}}}}'\n"
            ))
            .await;
            // An optional key, unset: the request goes out without one.
            let out = call(&s, kind, |p| {
                p.api_key_env = Some("AGENTBUS_TEST_PROVIDER_KEY".into());
                p.key_optional = true;
            })
            .await;
            let error = out.error.clone().unwrap_or_default();
            assert!(out.retries().is_empty(), "{kind} {status}");
            assert_eq!(s.requests().len(), 1);
            assert!(error.contains(&format!("HTTP {status}: no")), "{error}");
            if status == 401 {
                assert!(error.contains("$AGENTBUS_TEST_PROVIDER_KEY"), "{error}");
            }
        }
    }
}

#[tokio::test]
async fn a_missing_key_fails_at_once_naming_its_variable_and_sends_nothing() {
    for kind in KINDS {
        let s = server("[[response]]\ntext = \"never\"\n").await;
        let out = call(&s, kind, |p| {
            p.api_key_env = Some("AGENTBUS_TEST_SURELY_UNSET_KEY".into())
        })
        .await;
        let error = out.error.clone().unwrap_or_default();
        assert!(out.retries().is_empty(), "{kind}: never retried");
        assert!(s.requests().is_empty(), "{kind}: nothing was sent");
        assert!(
            error.contains("AGENTBUS_TEST_SURELY_UNSET_KEY") && error.contains("`p`"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_dropped_connection_is_retried_and_the_partial_answer_discarded() {
    for kind in KINDS {
        // Past the first text delta: a Responses stream opens with four
        // events before its first text.
        let drop = if kind == ProviderKind::OpenaiResponses {
            6
        } else {
            4
        };
        let s = server(&format!(
            "[[response]]\ntext = \"first attempt text that is cut\"\nchunk_size = 5\ndrop_after_chunks = {drop}\n\
             [[response]]\ntext = \"clean answer\"\n",
        ))
        .await;
        let out = call(&s, kind, |_| {}).await;
        assert!(out.finished(), "{kind}: {out:?}");
        assert_eq!(out.retries().len(), 1, "{kind}");
        let before_retry = out
            .events
            .iter()
            .take_while(|e| !matches!(e, ModelEvent::Retrying { .. }))
            .any(|e| matches!(e, ModelEvent::TextDelta { .. }));
        assert!(
            before_retry,
            "{kind}: partial text streamed before the drop"
        );
        assert_eq!(out.final_text(), "clean answer");
    }
}

#[tokio::test]
async fn a_garbage_frame_is_retried() {
    for (kind, fixture) in [
        (ProviderKind::Openai, "openai/garbage.sse"),
        (ProviderKind::Anthropic, "anthropic/garbage.sse"),
        (
            ProviderKind::OpenaiResponses,
            "openai-responses/garbage.sse",
        ),
    ] {
        let s = server(&format!(
            "[[response]]\nfixture = \"{fixture}\"\n[[response]]\ntext = \"fine\"\n"
        ))
        .await;
        let out = call(&s, kind, |_| {}).await;
        let retries = out.retries();
        assert_eq!(retries.len(), 1, "{kind}: {out:?}");
        assert!(retries[0].2.contains("garbage"), "{}", retries[0].2);
        assert_eq!(out.final_text(), "fine");
    }
}

#[tokio::test]
async fn a_stall_past_the_idle_timeout_is_retried() {
    for kind in KINDS {
        let s = server("[[response]]\ntext = \"never finished\"\nstall_after_chunks = 2\n[[response]]\ntext = \"after the stall\"\n").await;
        let out = call(&s, kind, |p| p.stream_idle_timeout_secs = 1).await;
        let retries = out.retries();
        assert_eq!(retries.len(), 1, "{kind}: {out:?}");
        assert!(retries[0].2.contains("no data for 1 s"), "{}", retries[0].2);
        assert_eq!(out.final_text(), "after the stall");
        tokio::time::timeout(GUARD, s.wait_for_disconnects(1))
            .await
            .expect("the stalled connection was closed");
    }
}

#[tokio::test]
async fn an_anthropic_error_event_mid_stream_is_retried_like_529() {
    let s = server("[[response]]\nfixture = \"anthropic/overloaded_mid_stream.sse\"\n[[response]]\ntext = \"second try\"\n").await;
    let out = call(&s, ProviderKind::Anthropic, |_| {}).await;
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{out:?}");
    assert!(
        retries[0].2.contains("overloaded_error: Overloaded"),
        "{}",
        retries[0].2
    );
    assert_eq!(out.final_text(), "second try");
}

#[tokio::test]
async fn a_truncated_stream_is_retried() {
    let s = server(
        "[[response]]\nfixture = \"anthropic/truncated.sse\"\n[[response]]\ntext = \"whole\"\n",
    )
    .await;
    let out = call(&s, ProviderKind::Anthropic, |_| {}).await;
    assert_eq!(out.retries().len(), 1, "{out:?}");
    assert_eq!(out.final_text(), "whole");
}

#[tokio::test]
async fn retries_stop_after_max_retries_with_the_last_error() {
    for kind in KINDS {
        let s = server(&"[[response]]\nstatus = 503\nbody = 'down'\n".repeat(4)).await;
        let out = call(&s, kind, |p| p.max_retries = 2).await;
        assert_eq!(out.retries().len(), 2);
        assert_eq!(s.requests().len(), 3);
        assert!(out.error.unwrap().contains("HTTP 503: down"));
    }
}

#[tokio::test]
async fn a_profile_header_replaces_the_wire_formats_own() {
    let s = server("[[response]]\ntext = \"hi\"\n").await;
    let out = call(&s, ProviderKind::Anthropic, |p| {
        p.api_key = Some(crate::settings::Secret("sk-ant-test".into()));
        p.headers
            .insert("anthropic-version".into(), "2099-01-01".into());
        p.headers.insert("x-api-key".into(), "from-headers".into());
    })
    .await;
    assert!(out.finished(), "{out:?}");
    let r = &s.requests()[0];
    // One value each (repeated headers would arrive joined with ", ").
    assert_eq!(r.headers["anthropic-version"], "2099-01-01");
    assert_eq!(r.headers["x-api-key"], "from-headers");
}

#[tokio::test]
async fn a_header_that_is_not_valid_http_is_a_clear_error() {
    let s = server("[[response]]\ntext = \"hi\"\n").await;
    let out = call(&s, ProviderKind::Openai, |p| {
        p.headers.insert("bad header".into(), "x".into());
    })
    .await;
    let error = out.error.expect("the call fails");
    assert!(
        error.contains("`bad header` has an invalid name"),
        "{error}"
    );
    assert!(s.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_anthropic_request_carries_version_key_and_system() {
    let s = server("[[response]]\ntext = \"hi\"\n").await;
    let out = call(&s, ProviderKind::Anthropic, |p| {
        p.api_key = Some(crate::settings::Secret("sk-ant-test".into()));
    })
    .await;
    assert!(out.finished());
    let r = &s.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "sk-ant-test");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.body["system"][0]["text"], "sys");
    assert_eq!(r.body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(s.violations().is_empty(), "{:?}", s.violations());
}

#[tokio::test]
async fn a_failed_response_mid_stream_is_retried_and_a_refusal_for_length_is_not() {
    let s = server(
        "[[response]]\nfixture = \"openai-responses/failed_server_error.sse\"\n\
         [[response]]\ntext = \"second try\"\n",
    )
    .await;
    let out = call(&s, ProviderKind::OpenaiResponses, |_| {}).await;
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{out:?}");
    assert!(
        retries[0]
            .2
            .contains("server_error: The model failed to generate a response."),
        "{}",
        retries[0].2
    );
    assert_eq!(out.final_text(), "second try");

    let s = server("context_window = 5\n[[response]]\ntext = \"never\"\n").await;
    let out = call(&s, ProviderKind::OpenaiResponses, |_| {}).await;
    assert!(out.retries().is_empty(), "{out:?}");
    let error = out.error.expect("refused");
    assert!(
        error.contains("exceeds the context window") && error.contains("context_length_exceeded"),
        "{error}"
    );
    assert_eq!(s.requests().len(), 1);
}

#[tokio::test]
async fn an_organisation_refused_reasoning_summaries_gets_its_answer_without_one() {
    let s = server(
        "[[response]]\nstatus = 400\nbody = '{\"error\":{\"message\":\"Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization.\",\"type\":\"invalid_request_error\",\"param\":\"reasoning.summary\",\"code\":\"unsupported_value\"}}'\n\
         [[response]]\nthinking = \"hidden\"\ntext = \"answered\"\n",
    )
    .await;
    let out = call(&s, ProviderKind::OpenaiResponses, |p| {
        p.model = "gpt-5.1-codex".into();
    })
    .await;
    assert!(out.finished(), "{out:?}");
    assert!(out.retries().is_empty(), "asked again at once: {out:?}");
    assert_eq!(out.final_text(), "answered");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body["reasoning"],
        serde_json::json!({"summary": "auto"})
    );
    assert_eq!(requests[1].body["reasoning"], serde_json::json!({}));
    assert_eq!(
        requests[1].body["include"],
        serde_json::json!(["reasoning.encrypted_content"]),
        "still reasoning, encrypted"
    );
    assert!(s.violations().is_empty(), "{:?}", s.violations());
}

#[tokio::test]
async fn the_responses_request_goes_to_v1_responses_with_its_key() {
    let s = server("[[response]]\ntext = \"hi\"\n").await;
    let out = call(&s, ProviderKind::OpenaiResponses, |p| {
        p.api_key = Some(crate::settings::Secret("sk-test-responses".into()));
    })
    .await;
    assert!(out.finished(), "{out:?}");
    assert_eq!(out.final_text(), "hi");
    let r = &s.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.headers["authorization"], "Bearer sk-test-responses");
    assert_eq!(r.body["instructions"], "sys");
    assert_eq!(r.body["store"], false);
    assert!(s.violations().is_empty(), "{:?}", s.violations());
}
