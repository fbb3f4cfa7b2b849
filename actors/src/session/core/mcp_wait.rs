//! The first model call of a session waits for MCP servers still on their
//! first start.
//!
//! A model can only call the tools a request offers, and a server that has
//! not finished its first start has listed none: a one-shot `agentbus run`
//! whose first request went out before its servers were up could never use
//! them. So the first turn of a session holds its first model call while
//! servers are on their first start, and says so (`system` `mcp_waiting`).
//!
//! The rules:
//! - Only the session's first turn waits — and the first turn after the
//!   session was given MCP servers of its own while it ran (an editor's
//!   `session/load` of a loaded session, [`given`]) —, and only for servers
//!   on their first start (starting, never ready, restarting or failed
//!   before). A server that was ready once never holds a turn up again;
//!   neither does a restart.
//! - The wait lasts at most `mcp_first_turn_wait_ms` in all: the deadline is
//!   an effect ([`Effect::McpWaitTimer`]) the driver performs with a timer,
//!   answering [`Input::McpWaitTimedOut`](super::Input::McpWaitTimedOut);
//!   the turn then goes on with a notice naming the servers still starting.
//!   A server that fails, or gives up at its own `startup_timeout_secs`,
//!   stops being waited for at once (its `mcp_server_status` event says
//!   why); the turn goes on when none is left.
//! - Nothing to wait for (no server, all ready, the wait configured to 0):
//!   the model is called at once, and nothing is said.
//! - An interrupt ends the turn, and the wait with it, at once (`step`'s
//!   interrupt: a waiting turn has nothing running to cancel).
//!
//! What the session keeps for it is `SessionState::mcp_wait`
//! ([`McpWait`](super::state::McpWait)). Pure, like the rest of the core:
//! no clock, no I/O.

use super::effect::Effect;
use super::state::SessionState;
use super::turn::Phase;
use crate::protocol::system::McpWaiting;
use crate::protocol::{AgentMessage, InputId, SystemEvent, SystemSubtype};
use std::collections::BTreeSet;

/// A turn `turn_id` starts: whether its first model call must wait. When
/// it must, the turn waits in [`Phase::WaitingForMcp`], and the notice and
/// the deadline's timer are in `fx`.
pub(super) fn holds(state: &mut SessionState, turn_id: InputId, fx: &mut Vec<Effect>) -> bool {
    if std::mem::replace(&mut state.mcp_wait.spent, true) {
        return false;
    }
    let max_wait_ms = state.config.mcp_first_turn_wait_ms;
    if max_wait_ms == 0 || state.mcp_wait.first_start.is_empty() {
        return false;
    }
    let Some(turn) = state.turn.as_mut().filter(|t| t.id == turn_id) else {
        return false;
    };
    turn.phase = Phase::WaitingForMcp;
    let servers: Vec<String> = state.mcp_wait.first_start.iter().cloned().collect();
    let message = format!(
        "Waiting up to {} for {} to start, so that the model is offered {}.",
        seconds(max_wait_ms),
        named(&servers),
        if servers.len() == 1 {
            "its tools"
        } else {
            "their tools"
        }
    );
    let waiting = McpWaiting {
        servers,
        max_wait_ms,
    };
    fx.push(Effect::Emit {
        turn_id: Some(turn_id),
        message: AgentMessage::System(SystemEvent::new(message, &waiting)),
    });
    fx.push(Effect::McpWaitTimer {
        turn_id,
        after_ms: max_wait_ms,
    });
    true
}

/// The session was given MCP servers: its next turn waits for those on
/// their first start, as a first turn does.
pub(super) fn given(state: &mut SessionState) {
    state.mcp_wait.spent = false;
}

/// The tool catalog changed: remember which servers are still on their
/// first start. `true` when a turn waited for them and none is left, so
/// its model call goes out now.
pub(super) fn observe(state: &mut SessionState, first_start: BTreeSet<String>) -> bool {
    state.mcp_wait.first_start = first_start;
    state.mcp_wait.first_start.is_empty() && waiting_turn(state).is_some()
}

/// The wait of turn `turn_id` ran out. `true` when that turn still waits:
/// it goes on now, and a notice naming the servers still starting is in
/// `fx`. A late timer (the turn went on, or was interrupted) is ignored.
pub(super) fn timed_out(state: &mut SessionState, turn_id: InputId, fx: &mut Vec<Effect>) -> bool {
    if waiting_turn(state) != Some(turn_id) {
        return false;
    }
    let servers: Vec<String> = state.mcp_wait.first_start.iter().cloned().collect();
    let (is, their) = if servers.len() == 1 {
        ("is", "its tools join")
    } else {
        ("are", "their tools join")
    };
    let message = format!(
        "Going on without {}: {is} still starting after {} ({their} a later request once up).",
        named(&servers),
        seconds(state.config.mcp_first_turn_wait_ms),
    );
    fx.push(Effect::Emit {
        turn_id: Some(turn_id),
        message: AgentMessage::System(SystemEvent::bare(SystemSubtype::Notice, message)),
    });
    true
}

/// The turn waiting for MCP servers, if one is.
fn waiting_turn(state: &SessionState) -> Option<InputId> {
    state
        .turn
        .as_ref()
        .filter(|t| t.phase == Phase::WaitingForMcp)
        .map(|t| t.id)
}

/// `the MCP server `a`` or `the MCP servers `a`, `b``.
fn named(servers: &[String]) -> String {
    let names: Vec<String> = servers.iter().map(|s| format!("`{s}`")).collect();
    match names.as_slice() {
        [one] => format!("the MCP server {one}"),
        many => format!("the MCP servers {}", many.join(", ")),
    }
}

/// `10 s`, `1.5 s`.
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{ToolOrigin, ToolSpec};
    use crate::protocol::system::McpWaiting;
    use crate::protocol::{AgentMessage, McpServerStatus, StopReason, SystemSubtype};
    use crate::session::core::tests::{
        Harness, assert_history_valid, messages, model_calls, tool_batches,
    };
    use crate::session::core::{Effect, Input};
    use serde_json::json;
    use std::sync::Arc;

    /// The catalog as the executor publishes it: the built-in `bash`, the
    /// tools of every `ready` server, and which servers are on their first
    /// start.
    fn catalog(servers: &[(&str, McpServerStatus)], first_start: &[&str]) -> Input {
        let mut tools = vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
            origin: ToolOrigin::Builtin,
        }];
        for (server, status) in servers {
            if matches!(status, McpServerStatus::Ready { .. }) {
                tools.push(ToolSpec {
                    name: format!("mcp__{server}__echo"),
                    description: "echo".into(),
                    input_schema: std::sync::Arc::new(json!({"type": "object"})),
                    origin: ToolOrigin::Mcp {
                        server: server.to_string(),
                        writes: false,
                    },
                });
            }
        }
        Input::CatalogChanged {
            tools: Arc::new(tools),
            servers: servers
                .iter()
                .map(|(name, status)| (name.to_string(), status.clone()))
                .collect(),
            first_start: first_start.iter().map(|s| s.to_string()).collect(),
            prompts: String::new(),
        }
    }

    fn ready() -> McpServerStatus {
        McpServerStatus::Ready { tools: 1 }
    }

    fn offered(fx: &[Effect]) -> Vec<String> {
        let calls = model_calls(fx);
        assert_eq!(calls.len(), 1, "one model call: {fx:#?}");
        calls[0].1.tools.iter().map(|t| t.name.clone()).collect()
    }

    fn waiting_notices(fx: &[Effect]) -> Vec<McpWaiting> {
        messages(fx)
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::System(s) => s.payload::<McpWaiting>(),
                _ => None,
            })
            .collect()
    }

    fn notices(fx: &[Effect]) -> Vec<String> {
        messages(fx)
            .into_iter()
            .filter_map(|m| match m {
                AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message),
                _ => None,
            })
            .collect()
    }

    /// A session whose catalog says `fs` is on its first start.
    fn starting_fs() -> Harness {
        let mut h = Harness::new();
        h.feed(catalog(&[("fs", McpServerStatus::Starting)], &["fs"]));
        h
    }

    #[test]
    fn the_first_call_waits_for_a_server_on_its_first_start_and_offers_its_tools() {
        let mut h = starting_fs();
        let turn = h.state().next_input_id();
        h.query("use fs");
        assert!(model_calls(&h.effects).is_empty(), "no call while waiting");
        assert_eq!(
            waiting_notices(&h.effects),
            vec![McpWaiting {
                servers: vec!["fs".into()],
                max_wait_ms: 10_000,
            }]
        );
        assert!(
            h.effects.contains(&Effect::McpWaitTimer {
                turn_id: turn,
                after_ms: 10_000
            }),
            "{:#?}",
            h.effects
        );
        let fx = h.feed(catalog(&[("fs", ready())], &[]));
        assert_eq!(offered(&fx), ["bash", "mcp__fs__echo"]);
        // The timer that comes later changes nothing.
        assert!(h.feed(Input::McpWaitTimedOut { turn_id: turn }).is_empty());
        h.answer(1, "done", &[]);
        assert_eq!(h.results()[0].stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn nothing_to_wait_for_means_no_wait_and_no_notice() {
        // No server at all.
        let mut h = Harness::new();
        let fx = h.feed(Input::Submit {
            input_id: 1,
            input: crate::protocol::UserInput::Query {
                text: "hi".into(),
                images: Vec::new(),
                by: None,
            },
        });
        assert_eq!(offered(&fx), ["bash"]);
        // Every server ready; one that failed is not waited for either.
        let mut h = Harness::new();
        let failed = McpServerStatus::Failed {
            reason: "gone".into(),
            stderr: vec![],
        };
        h.feed(catalog(&[("fs", ready()), ("ghost", failed)], &[]));
        h.query("hi");
        assert_eq!(offered(&h.effects), ["bash", "mcp__fs__echo"]);
        assert!(waiting_notices(&h.effects).is_empty());
        assert!(
            !h.effects
                .iter()
                .any(|e| matches!(e, Effect::McpWaitTimer { .. }))
        );
    }

    #[test]
    fn a_wait_of_zero_never_waits() {
        let mut h = starting_fs();
        h.state.config.mcp_first_turn_wait_ms = 0;
        h.query("hi");
        assert_eq!(offered(&h.effects), ["bash"]);
        assert!(waiting_notices(&h.effects).is_empty());
    }

    #[test]
    fn the_timer_ends_the_wait_with_a_notice_naming_who_is_still_starting() {
        let mut h = starting_fs();
        let turn = h.query("hi");
        let fx = h.feed(Input::McpWaitTimedOut { turn_id: turn });
        assert_eq!(offered(&fx), ["bash"], "the call goes out without fs");
        let said = notices(&fx);
        assert!(
            said.len() == 1
                && said[0].contains("`fs`")
                && said[0].contains("still starting after 10 s"),
            "{said:?}"
        );
        // fs comes up later: its tools join the next call, not a new one now.
        let fx = h.feed(catalog(&[("fs", ready())], &[]));
        assert!(model_calls(&fx).is_empty());
        let fx = h.answer(1, "", &[("c1", "bash", "{}")]);
        assert!(model_calls(&fx).is_empty());
        let batch = tool_batches(&fx)[0].0;
        let fx = h.tool_done(batch, "c1", "ok");
        assert_eq!(offered(&fx), ["bash", "mcp__fs__echo"]);
    }

    #[test]
    fn each_server_that_fails_or_gives_up_stops_being_waited_for() {
        let mut h = Harness::new();
        let starting = McpServerStatus::Starting;
        h.feed(catalog(
            &[("a", starting.clone()), ("b", starting.clone())],
            &["a", "b"],
        ));
        h.query("hi");
        assert_eq!(waiting_notices(&h.effects)[0].servers, ["a", "b"]);
        let failed = McpServerStatus::Failed {
            reason: "exit 3".into(),
            stderr: vec![],
        };
        let fx = h.feed(catalog(&[("a", failed), ("b", starting)], &["b"]));
        assert!(model_calls(&fx).is_empty(), "b is still on its first start");
        assert_eq!(messages(&fx).len(), 1, "a's failure is reported");
        let gave_up = McpServerStatus::Restarting {
            attempt: 1,
            delay_ms: 500,
            reason: "it did not start within 1 s (startup_timeout_secs)".into(),
            stderr: vec![],
        };
        let failed = McpServerStatus::Failed {
            reason: "exit 3".into(),
            stderr: vec![],
        };
        let fx = h.feed(catalog(&[("a", failed), ("b", gave_up)], &[]));
        assert_eq!(offered(&fx), ["bash"]);
        assert!(notices(&fx).is_empty(), "the statuses said why");
    }

    #[test]
    fn only_the_first_turn_of_a_session_waits() {
        let mut h = starting_fs();
        let first = h.query("one");
        h.feed(Input::McpWaitTimedOut { turn_id: first });
        h.answer(1, "done", &[]);
        // fs is still on its first start, yet the second turn goes at once.
        let before = h.effects.len();
        h.query("two");
        let fx = h.effects[before..].to_vec();
        assert_eq!(offered(&fx), ["bash"]);
        assert!(waiting_notices(&fx).is_empty());

        // A session whose first turn found everything ready never waits
        // later, whatever the catalog says then (a restart is not a first
        // start, but the rule holds even if it were).
        let mut h = Harness::new();
        h.feed(catalog(&[("fs", ready())], &[]));
        h.query("one");
        h.answer(1, "done", &[]);
        h.feed(catalog(&[("fs", McpServerStatus::Starting)], &["fs"]));
        let before = h.effects.len();
        h.query("two");
        assert_eq!(model_calls(&h.effects[before..]).len(), 1);
    }

    #[test]
    fn the_first_turn_after_servers_were_given_waits_for_them() {
        let mut h = Harness::new();
        h.query("one");
        h.answer(1, "done", &[]);
        // An editor loads the running session with a server of its own.
        h.feed(catalog(
            &[("editor", McpServerStatus::Starting)],
            &["editor"],
        ));
        h.feed(Input::ServersGiven { notices: vec![] });
        let turn = h.state().next_input_id();
        let before = h.effects.len();
        h.query("two");
        let fx = h.effects[before..].to_vec();
        assert!(model_calls(&fx).is_empty(), "no call while waiting");
        assert_eq!(waiting_notices(&fx).len(), 1, "{fx:#?}");
        let fx = h.feed(catalog(&[("editor", ready())], &[]));
        assert_eq!(offered(&fx), ["bash", "mcp__editor__echo"]);
        assert!(h.feed(Input::McpWaitTimedOut { turn_id: turn }).is_empty());
    }

    #[test]
    fn an_interrupt_during_the_wait_ends_the_turn_at_once() {
        let mut h = starting_fs();
        let turn = h.query("hi");
        let fx = h.feed(Input::Interrupt);
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::CancelModel { .. })),
            "no model call to cancel: {fx:#?}"
        );
        let results = h.results();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].stop_reason, StopReason::Cancelled);
        assert!(h.state().turn.is_none());
        assert_history_valid(&h.state().history);
        // Neither the late timer nor the server coming up calls the model.
        assert!(h.feed(Input::McpWaitTimedOut { turn_id: turn }).is_empty());
        assert!(model_calls(&h.feed(catalog(&[("fs", ready())], &[]))).is_empty());
    }

    #[test]
    fn a_query_queued_behind_the_waiting_turn_runs_after_it() {
        let mut h = starting_fs();
        h.query("one");
        h.query("two");
        let fx = h.feed(catalog(&[("fs", ready())], &[]));
        assert_eq!(offered(&fx), ["bash", "mcp__fs__echo"]);
        h.answer(1, "done", &[]);
        let calls = model_calls(&h.effects);
        assert_eq!(calls.len(), 2, "the second turn called at once");
        assert_eq!(h.results().len(), 1);
    }
}
