//! The line editor (reedline): emacs keys, a history file, Tab completion of
//! slash commands, and the chat's own keys.
//!
//! Ctrl-C is bound to a host command so the chat decides what it does: quit
//! at an empty prompt, clear the line otherwise. Ctrl-N replaces the line
//! with `/new` and submits it, as if typed.

use agentbus_actors::runtime::COMMANDS;
use reedline::{
    ColumnarMenu, Completer, EditCommand, Emacs, ExternalPrinter, FileBackedHistory, KeyCode,
    KeyModifiers, MenuBuilder, Prompt, PromptEditMode, PromptHistorySearch, Reedline,
    ReedlineEvent, ReedlineMenu, Span, Suggestion, default_emacs_keybindings,
};
use std::borrow::Cow;
use std::path::PathBuf;

/// What the editor returns when Ctrl-C is pressed at the prompt.
pub const CTRL_C: &str = "\u{3}ctrl-c";

/// The editor, with history in `history` when given; lines sent to
/// `printer` appear above the prompt while it waits.
pub fn build(history: Option<PathBuf>, printer: ExternalPrinter<String>) -> Reedline {
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
        .with_completer(Box::new(SlashCommands))
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
struct SlashCommands;

impl Completer for SlashCommands {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let typed = &line[..pos.min(line.len())];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Vec::new();
        }
        COMMANDS
            .iter()
            .filter(|c| format!("/{}", c.name).starts_with(typed))
            .map(|c| Suggestion {
                value: format!("/{}", c.name),
                description: Some(c.summary.to_string()),
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
        let values: Vec<String> = SlashCommands
            .complete("/mo", 3)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["/model", "/models", "/mode"]);
        assert!(SlashCommands.complete("hello", 5).is_empty());
        assert!(SlashCommands.complete("/model x", 8).is_empty());
        let values: Vec<String> = SlashCommands
            .complete("/co", 3)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["/context", "/compact"]);
    }
}
