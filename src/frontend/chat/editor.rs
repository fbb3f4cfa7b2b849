//! The line editor (reedline): emacs keys, a history file, Tab completion of
//! slash commands (the built-in ones and the session's custom commands),
//! and the chat's own keys.
//!
//! Ctrl-C is bound to a host command so the chat decides what it does: quit
//! at an empty prompt, clear the line otherwise. Ctrl-N replaces the line
//! with `/new` and submits it, as if typed.

use agentbus_actors::protocol::system::{CommandEntry, SessionStarted};
use agentbus_actors::protocol::{AgentMessage, EventEnvelope};
use agentbus_actors::runtime::COMMANDS;
use reedline::{
    ColumnarMenu, Completer, EditCommand, Emacs, ExternalPrinter, FileBackedHistory, KeyCode,
    KeyModifiers, MenuBuilder, Prompt, PromptEditMode, PromptHistorySearch, Reedline,
    ReedlineEvent, ReedlineMenu, Span, Suggestion, default_emacs_keybindings,
};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the editor returns when Ctrl-C is pressed at the prompt.
pub const CTRL_C: &str = "\u{3}ctrl-c";

/// The session's custom commands, as its `session_started` event lists
/// them: the chat passes each event it shows to [`learn`](Self::learn),
/// and Tab completes them after the built-in ones.
#[derive(Clone, Default)]
pub struct CustomCommands(Arc<Mutex<Vec<CommandEntry>>>);

impl CustomCommands {
    /// Take the commands of a `session_started` event.
    pub fn learn(&self, event: &EventEnvelope) {
        if let AgentMessage::System(system) = &event.message
            && let Some(started) = system.payload::<SessionStarted>()
            && let Ok(mut commands) = self.0.lock()
        {
            *commands = started.commands;
        }
    }

    fn entries(&self) -> Vec<CommandEntry> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// The editor, with history in `history` when given; lines sent to
/// `printer` appear above the prompt while it waits; Tab completes
/// `custom` too.
pub fn build(
    history: Option<PathBuf>,
    printer: ExternalPrinter<String>,
    custom: CustomCommands,
) -> Reedline {
    let mut keys = default_emacs_keybindings();
    keys.add_binding(
        KeyModifiers::CONTROL,
        KeyCode::Char('c'),
        ReedlineEvent::ExecuteHostCommand(CTRL_C.into()),
    );
    keys.add_binding(
        KeyModifiers::CONTROL,
        KeyCode::Char('n'),
        ReedlineEvent::Multiple(vec![
            ReedlineEvent::Edit(vec![
                EditCommand::Clear,
                EditCommand::InsertString("/new".into()),
            ]),
            ReedlineEvent::Submit,
        ]),
    );
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu("completion_menu".into()),
            ReedlineEvent::MenuNext,
        ]),
    );
    let menu = ColumnarMenu::default().with_name("completion_menu");
    let mut editor = Reedline::create()
        .with_edit_mode(Box::new(Emacs::new(keys)))
        .with_completer(Box::new(SlashCommands(custom)))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_external_printer(printer);
    if let Some(path) = history {
        match FileBackedHistory::with_file(1000, path.clone()) {
            Ok(h) => editor = editor.with_history(Box::new(h)),
            Err(e) => tracing::warn!(path = %path.display(), "chat history unavailable: {e}"),
        }
    }
    editor
}

/// Completes `/com` to the slash commands the session understands.
struct SlashCommands(CustomCommands);

impl Completer for SlashCommands {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let typed = &line[..pos.min(line.len())];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Vec::new();
        }
        let custom = self.0.entries();
        let built_in = COMMANDS.iter().map(|c| (c.name, c.summary));
        let custom = custom
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_str()));
        built_in
            .chain(custom)
            .filter(|(name, _)| format!("/{name}").starts_with(typed))
            .map(|(name, summary)| Suggestion {
                value: format!("/{name}"),
                description: Some(summary.to_string()),
                span: Span::new(0, typed.len()),
                append_whitespace: true,
                ..Default::default()
            })
            .collect()
    }
}

/// `› ` as the prompt.
pub struct ChatPrompt;

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_indicator(&self, _: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("› ")
    }
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }
    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_prefixes_complete_to_commands() {
        let mut commands = SlashCommands(CustomCommands::default());
        let values: Vec<String> = commands
            .complete("/mo", 3)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["/model", "/models", "/mode"]);
        assert!(commands.complete("hello", 5).is_empty());
        assert!(commands.complete("/model x", 8).is_empty());
        let values: Vec<String> = commands
            .complete("/co", 3)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["/context", "/compact"]);
    }

    #[test]
    fn the_sessions_custom_commands_complete_after_the_built_in_ones() {
        let custom = CustomCommands::default();
        let started = agentbus_actors::protocol::SystemEvent::new(
            "started",
            &SessionStarted {
                commands: vec![CommandEntry {
                    command: "/compare [a] [b]".into(),
                    description: "Compare two files".into(),
                    name: "compare".into(),
                    source: Some("/ws/.claude/commands/compare.md".into()),
                }],
                ..Default::default()
            },
        );
        custom.learn(&EventEnvelope {
            seq: 1,
            session_id: agentbus_actors::protocol::SessionId("s".into()),
            turn_id: None,
            at: chrono::Utc::now(),
            message: AgentMessage::System(started),
        });
        let suggestions = SlashCommands(custom).complete("/co", 3);
        let values: Vec<&str> = suggestions.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, ["/context", "/compact", "/compare"]);
        assert_eq!(
            suggestions[2].description.as_deref(),
            Some("Compare two files")
        );
    }
}
