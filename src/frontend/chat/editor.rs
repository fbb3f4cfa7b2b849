//! The line editor (reedline): emacs keys, a history file, Tab completion
//! ([`completion`](super::completion)), bracketed paste, and the chat's own
//! keys.
//!
//! A paste is one piece of text however many lines it has: the terminal
//! marks it (bracketed paste) and it lands in the line, to be sent with
//! Enter. Alt+Enter inserts a newline; so does Shift+Enter where the
//! terminal reports it apart from Enter (those speaking the kitty keyboard
//! protocol — kitty, foot, WezTerm, Ghostty — do; most others, and tmux,
//! send a plain Enter). Ctrl-C is bound to a host command so the chat
//! decides what it does: quit at an empty prompt, clear the line otherwise.
//! Ctrl-N replaces the line with `/new` and submits it, as if typed.
//!
//! The prompt is `› `, with the [`Status`] line dimmed at the right end of
//! the input line (reedline's right prompt, hidden while the text reaches
//! it). A prompt of two lines would be torn by what is printed above it
//! while it waits (reedline's external printer redraws one line). Once a
//! line is sent it is redrawn without the status (a transient prompt), so
//! the transcript keeps the text and not a status per input.

use super::completion::{ChatCompleter, Choices};
use super::status::Status;
use reedline::{
    ColumnarMenu, Completer, EditCommand, Editor, Emacs, ExternalPrinter, FileBackedHistory,
    KeyCode, KeyModifiers, Menu, MenuBuilder, MenuEvent, Painter, Prompt, PromptEditMode,
    PromptHistorySearch, Reedline, ReedlineEvent, ReedlineMenu, Suggestion,
    default_emacs_keybindings,
};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the editor returns when Ctrl-C is pressed at the prompt.
pub const CTRL_C: &str = "\u{3}ctrl-c";

/// The editor, with history in `history` when given; lines sent to
/// `printer` appear above the prompt while it waits; Tab completes from
/// `choices`.
pub fn build(
    history: Option<PathBuf>,
    printer: ExternalPrinter<String>,
    choices: Arc<Mutex<Choices>>,
    color: bool,
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
    for modifier in [KeyModifiers::ALT, KeyModifiers::SHIFT] {
        keys.add_binding(
            modifier,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
    }
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu("completion_menu".into()),
            ReedlineEvent::MenuNext,
        ]),
    );
    let menu = QuietMenu(
        ColumnarMenu::default()
            .with_name("completion_menu")
            .with_marker("› "),
    );
    let mut editor = Reedline::create()
        .with_edit_mode(Box::new(Emacs::new(keys)))
        .with_completer(Box::new(ChatCompleter { choices }))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_quick_completions(true)
        .with_partial_completions(true)
        .with_ansi_colors(color)
        .use_bracketed_paste(true)
        .use_kitty_keyboard_enhancement(true)
        .with_transient_prompt(Box::new(SentPrompt))
        .with_external_printer(printer);
    if let Some(path) = history {
        match FileBackedHistory::with_file(1000, path.clone()) {
            Ok(h) => editor = editor.with_history(Box::new(h)),
            Err(e) => tracing::warn!(path = %path.display(), "chat history unavailable: {e}"),
        }
    }
    editor
}

/// The completion menu, except that it never opens on nothing: reedline's
/// own says `NO RECORDS FOUND` when Tab has nothing to offer; this one
/// stays shut.
struct QuietMenu(ColumnarMenu);

impl Menu for QuietMenu {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn indicator(&self) -> &str {
        self.0.indicator()
    }
    fn is_active(&self) -> bool {
        self.0.is_active()
    }
    fn menu_event(&mut self, event: MenuEvent) {
        self.0.menu_event(event)
    }
    fn can_quick_complete(&self) -> bool {
        self.0.can_quick_complete()
    }
    fn can_partially_complete(
        &mut self,
        values_updated: bool,
        editor: &mut Editor,
        completer: &mut dyn Completer,
    ) -> bool {
        self.0
            .can_partially_complete(values_updated, editor, completer)
    }
    fn update_values(&mut self, editor: &mut Editor, completer: &mut dyn Completer) {
        self.0.update_values(editor, completer)
    }
    fn update_working_details(
        &mut self,
        editor: &mut Editor,
        completer: &mut dyn Completer,
        painter: &Painter,
    ) {
        self.0.update_working_details(editor, completer, painter);
        if self.0.get_values().is_empty() {
            self.0.menu_event(MenuEvent::Deactivate);
        }
    }
    fn replace_in_buffer(&self, editor: &mut Editor) {
        self.0.replace_in_buffer(editor)
    }
    fn menu_required_lines(&self, terminal_columns: u16) -> u16 {
        self.0.menu_required_lines(terminal_columns)
    }
    fn menu_string(&self, available_lines: u16, use_ansi_coloring: bool) -> String {
        self.0.menu_string(available_lines, use_ansi_coloring)
    }
    fn min_rows(&self) -> u16 {
        self.0.min_rows()
    }
    fn get_values(&self) -> &[Suggestion] {
        self.0.get_values()
    }
}

/// `› `, and the status line at the right.
pub struct ChatPrompt {
    pub status: Arc<Mutex<Status>>,
}

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Owned(self.status.lock().map(|s| s.line()).unwrap_or_default())
    }
    /// Dimmed (the editor paints no colour under `NO_COLOR`).
    fn get_prompt_right_color(&self) -> reedline::Color {
        reedline::Color::DarkGrey
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

/// What a sent line's prompt becomes: `› ` alone.
struct SentPrompt;

impl Prompt for SentPrompt {
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
