//! The chat on a terminal.
//!
//! The line editor blocks, so it runs inside `block_in_place`; everything
//! else is async. While a turn runs the terminal is in raw mode (with
//! bracketed paste, so a paste stays one piece of text) and a
//! [`KeyWatcher`] reads keys: Esc or Ctrl-C interrupts; what is typed is
//! kept ([`TypeAhead`]): messages finished with Enter are sent after the
//! reply, in order, the unfinished one is in the prompt when it comes back,
//! and an interrupt puts everything typed back into the prompt. The watcher
//! is joined before the editor reads again — two readers of the terminal
//! would steal each other's input (the editor's cursor-position query among
//! it). A session that already has a conversation (`--continue`,
//! `/resume`, `/fork`, `/load`) is shown from its beginning. While the
//! prompt waits, [`AtPrompt`] shows what arrives meanwhile — another
//! client's turn on the same session — above the prompt ([`Screen`]).
//! Every event also goes to the [`Watch`]: the status line above the
//! prompt and what Tab completes follow the session. `/resume` without an
//! id opens the [`picker`]; `/rewind` without a turn opens the [`rewind`]
//! picker (for a session of this process; `--attach` shows the list the
//! session answers with), whose choice is submitted as the command it
//! makes. A rewind that forks the conversation switches to the fork as
//! `/fork` does, with the rewound turn's prompt back at the prompt.

use super::completion::Choices;
use super::editor::{self, CTRL_C};
use super::picker;
use super::rewind;
use super::screen::Screen;
use super::status::Status;
use super::type_ahead::{TypeAhead, Typed};
use crate::frontend::common::approval;
use crate::frontend::common::attached::{Attached, Start, switch_target};
use crate::frontend::common::backend::Backend;
use crate::frontend::common::input_ends::{InputEnd, InputEnds, announces_compaction};
use crate::frontend::output::render::{RenderOptions, Renderer};
use crate::remote::events::Connection;
use agentbus_engine::protocol::checkpoint::Rewound;
use agentbus_engine::protocol::system::SessionStarted;
use agentbus_engine::protocol::{
    AgentMessage, ContentBlock, EventEnvelope, InputId, StreamDelta, SystemSubtype,
};
use anyhow::Context as _;
use crossterm::event::{self, Event};
use indicatif::{ProgressBar, ProgressStyle};
use reedline::{EditCommand, Signal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

/// What the chat says when it starts (and after `/help`): its keys, and
/// what `@` and `!` do.
pub const KEYS: [&str; 3] = [
    "Enter sends; Alt+Enter starts a new line (Shift+Enter too, where the terminal tells it from Enter); a paste is one message however many lines it has.",
    "@path attaches a file or a directory's listing; !command runs a command in the workspace for the model to see; Tab completes commands, their arguments and @paths.",
    "Esc or Ctrl-C interrupts a reply, Ctrl-N starts a new session, Ctrl-D quits; what you type during a reply is sent after it.",
];

/// `made_here`: the chat made `session` (it did not resume one), so the
/// session is deleted if the chat leaves it without a turn.
pub async fn run(
    backend: &Backend,
    session: Attached,
    history: Option<PathBuf>,
    made_here: bool,
) -> anyhow::Result<ExitCode> {
    let mut made_here = made_here;
    let color = std::env::var_os("NO_COLOR").is_none();
    let screen = Screen::new();
    let watch = Watch::start(backend).await;
    let mut editor = editor::build(history, screen.printer(), watch.choices.clone(), color);
    let prompt = editor::ChatPrompt {
        status: watch.status.clone(),
    };
    let mut renderer = Renderer::new(
        screen,
        RenderOptions {
            color,
            raw: false,
            echo_user: false,
        },
    );
    let mut attached = show(session, &mut renderer, &watch).await?;
    if let Some(server) = backend.server() {
        renderer.dim_line(&format!(
            "● attached to {server}: the session runs in that server, and stays when this chat ends"
        ));
    }
    renderer.line("Type a message; /help lists the commands.");
    for line in KEYS {
        renderer.dim_line(line);
    }
    let mut ahead = TypeAhead::default();
    loop {
        let text = match ahead.next_line() {
            Some(line) => {
                renderer.line(&format!("› {line}"));
                line
            }
            None => {
                watch.refresh_sessions(backend).await;
                let partial = ahead.take_partial();
                if !partial.is_empty() {
                    editor.run_edit_commands(&[EditCommand::InsertString(partial)]);
                }
                let at_prompt = AtPrompt::start(attached, renderer, watch.clone());
                let signal = tokio::task::block_in_place(|| editor.read_line(&prompt));
                (attached, renderer) = at_prompt.stop().await?;
                match signal.context("reading input")? {
                    Signal::Success(text) if text == CTRL_C => {
                        if editor.current_buffer_contents().is_empty() {
                            break;
                        }
                        editor.run_edit_commands(&[EditCommand::Clear]);
                        continue;
                    }
                    Signal::Success(text) => text,
                    Signal::CtrlC | Signal::CtrlD => break,
                }
            }
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut command = None;
        let text = if text.eq_ignore_ascii_case("/resume") {
            match pick_session(backend, &watch, attached.id(), color).await {
                Ok(Ok(id)) => format!("/resume {id}"),
                Ok(Err(why)) => {
                    renderer.dim_line(&format!("● {why}"));
                    continue;
                }
                Err(e) => {
                    renderer.dim_line(&format!("● could not list the sessions ({e:#})"));
                    continue;
                }
            }
        } else if text.eq_ignore_ascii_case("/rewind")
            && let Some(stored) = backend.stored()
        {
            match rewind::pick(stored, attached.id(), color).await {
                Ok(rewind::Picked::Rewind(picked)) => {
                    command = Some(picked);
                    text.to_string()
                }
                Ok(rewind::Picked::Nothing(why)) => {
                    renderer.dim_line(&format!("● {why}"));
                    continue;
                }
                Err(e) => {
                    renderer.dim_line(&format!("● could not list the turns ({e:#})"));
                    continue;
                }
            }
        } else {
            text.to_string()
        };
        let text = text.as_str();
        // The server may be out of reach for a moment: the text goes back
        // into the prompt, the chat goes on.
        let submitted = match command {
            Some(command) => attached.submit_control(command).await,
            None => attached.submit_text(text.to_string()).await,
        };
        let id = match submitted {
            Ok(id) => id,
            Err(e) => {
                renderer.dim_line(&format!(
                    "● could not send ({e:#}); your text is back at the prompt"
                ));
                ahead.give_back(text.to_string());
                continue;
            }
        };
        let end;
        (end, ahead) = follow(&mut attached, id, &mut renderer, ahead, &watch).await?;
        match &end {
            Some(InputEnd::Reply(reply)) if reply.subtype == SystemSubtype::Quit => break,
            Some(end) => {
                if matches!(end, InputEnd::Reply(reply) if reply.subtype == SystemSubtype::Help) {
                    renderer.dim_line("In this chat:");
                    for line in KEYS {
                        renderer.dim_line(line);
                    }
                }
                if let Some(target) = switch_target(end) {
                    forget_if_unused(backend, &watch, attached.id(), made_here).await;
                    made_here = matches!(end, InputEnd::Reply(r) if r.subtype == SystemSubtype::NewConversation);
                    watch.switched();
                    let session = backend.open(&target, Start::Beginning).await?;
                    attached = show(session, &mut renderer, &watch).await?;
                    // The conversation was rewound to before a turn: its
                    // prompt is back at the prompt, to edit and send again.
                    if let InputEnd::Reply(reply) = end
                        && let Some(rewound) = reply.payload::<Rewound>()
                        && !rewound.report.prompt.is_empty()
                    {
                        ahead.give_back(rewound.report.prompt);
                    }
                }
            }
            None => anyhow::bail!("the session stopped"),
        }
    }
    println!();
    let conversation = watch.status.lock().is_ok_and(|s| s.has_turns());
    forget_if_unused(backend, &watch, attached.id(), made_here).await;
    if conversation {
        let attach = backend
            .server()
            .map(|url| format!("--attach {url} "))
            .unwrap_or_default();
        println!(
            "To come back to this session: agentbus chat {attach}--resume {} (or --continue, the latest in this workspace)",
            attached.id()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Delete session `id` when this chat made it and it has no turn: a chat
/// opened and left (or left for another session) leaves nothing in
/// `sessions list`, as a command-only `run` leaves nothing.
async fn forget_if_unused(
    backend: &Backend,
    watch: &Watch,
    id: &agentbus_engine::protocol::SessionId,
    made_here: bool,
) {
    let used = watch.status.lock().map_or(true, |s| s.has_turns());
    if !made_here || used {
        return;
    }
    backend.forget(id).await;
}

/// The session `/resume` without an id picks among this workspace's
/// recent ones (not `current`), or why none was picked.
async fn pick_session(
    backend: &Backend,
    watch: &Watch,
    current: &agentbus_engine::protocol::SessionId,
    color: bool,
) -> anyhow::Result<Result<String, &'static str>> {
    let workspace = watch.workspace(backend);
    let sessions: Vec<_> = picker::of_workspace(backend.list().await?, workspace.as_deref())
        .into_iter()
        .filter(|s| s.id != current.0)
        .collect();
    if sessions.is_empty() {
        return Ok(Err("no other session of this workspace to resume"));
    }
    let picked = tokio::task::block_in_place(|| picker::pick(&sessions, color))
        .context("the session picker")?;
    Ok(picked
        .map(|i| sessions[i].id.clone())
        .ok_or("nothing resumed"))
}

/// What the chat follows in every event besides showing it: the status
/// line, and the workspace Tab completes `@` paths in.
#[derive(Clone)]
pub struct Watch {
    pub status: Arc<Mutex<Status>>,
    pub choices: Arc<Mutex<Choices>>,
    /// The terminal speaks the kitty keyboard protocol.
    kitty: bool,
}

impl Watch {
    /// What the backend offers: model profiles (and their prices) and
    /// agents; what cannot be had is left out.
    async fn start(backend: &Backend) -> Watch {
        let workspace = backend
            .workspace()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let offered = match backend.choices(&workspace).await {
            Ok(offered) => offered,
            Err(e) => {
                tracing::warn!("the chat cannot list models and agents: {e:#}");
                Default::default()
            }
        };
        let prices = backend.prices().await.unwrap_or_else(|e| {
            tracing::warn!("the chat cannot read the profiles' prices: {e:#}");
            Default::default()
        });
        let choices = Choices {
            models: offered.models,
            agents: offered
                .agents
                .into_iter()
                .map(|a| (a.name, Some(a.description).filter(|d| !d.is_empty())))
                .collect(),
            sessions: Vec::new(),
            workspace,
            custom: Vec::new(),
        };
        Watch {
            status: Arc::new(Mutex::new(Status::new(backend.server(), prices))),
            choices: Arc::new(Mutex::new(choices)),
            kitty: tokio::task::block_in_place(reedline::kitty_protocol_available),
        }
    }

    /// Learn from one of the session's events.
    fn observe(&self, event: &EventEnvelope) {
        if let Ok(mut status) = self.status.lock() {
            status.observe(event);
        }
        if let AgentMessage::System(s) = &event.message
            && let Some(started) = s.payload::<SessionStarted>()
            && let Ok(mut choices) = self.choices.lock()
        {
            if !started.workspace.is_empty() {
                choices.workspace = PathBuf::from(started.workspace);
            }
            choices.custom = started
                .commands
                .into_iter()
                .map(|c| (c.name, c.description))
                .collect();
        }
    }

    /// The chat moved to another session.
    fn switched(&self) {
        if let Ok(mut status) = self.status.lock() {
            status.switched();
        }
    }

    /// The session's workspace, as its events said (else the backend's).
    fn workspace(&self, backend: &Backend) -> Option<String> {
        let known = self
            .choices
            .lock()
            .ok()
            .map(|c| c.workspace.clone())
            .filter(|w| !w.as_os_str().is_empty());
        known
            .or_else(|| backend.workspace())
            .map(|w| w.display().to_string())
    }

    /// This workspace's sessions, for `/resume`'s Tab (a server slow to
    /// answer leaves the last list: the prompt does not wait for it).
    async fn refresh_sessions(&self, backend: &Backend) {
        let workspace = self.workspace(backend);
        let listing = tokio::time::timeout(Duration::from_secs(1), backend.list());
        let Ok(Ok(listed)) = listing.await else {
            return;
        };
        let now = chrono::Utc::now();
        let sessions = picker::of_workspace(listed, workspace.as_deref())
            .iter()
            .map(|s| (s.id.clone(), picker::describe(s, now)))
            .collect();
        if let Ok(mut choices) = self.choices.lock() {
            choices.sessions = sessions;
        }
    }
}

/// Show what an attached session (attached from the beginning) holds: the
/// conversation so far (user lines included), then this load's own events.
async fn show(
    mut attached: Attached,
    renderer: &mut Renderer<Screen>,
    watch: &Watch,
) -> anyhow::Result<Attached> {
    attached.watch_connection();
    let catchup = attached.catchup;
    renderer.options.echo_user = true;
    if !catchup.is_empty() {
        // The replay ends at a known seq, or at the announcement the load
        // makes right after the stored events.
        while let Some(event) = attached.events.recv().await {
            renderer.options.echo_user = event.seq <= catchup.history_until();
            watch.observe(&event);
            renderer.render(&event);
            if catchup.reached_by(&event) {
                break;
            }
        }
    }
    renderer.options.echo_user = false;
    Ok(attached)
}

/// Show the events of input `id` until it ends; Esc or Ctrl-C interrupts.
/// Keys typed meanwhile are added to `ahead`, which comes back with the end.
async fn follow(
    attached: &mut Attached,
    id: InputId,
    renderer: &mut Renderer<Screen>,
    ahead: TypeAhead,
    watch: &Watch,
) -> anyhow::Result<(Option<InputEnd>, TypeAhead)> {
    let _raw = RawMode::enable(watch.kitty)?;
    renderer.options.raw = true;
    let mut spinner = Spinner::default();
    spinner.show("thinking…");
    let (typed, mut keys) = tokio::sync::mpsc::unbounded_channel();
    let answering = Arc::new(AtomicBool::new(false));
    let watcher = KeyWatcher::start(ahead, typed, answering.clone());
    let mut interrupted = false;
    let mut asking = approval::Asking::default();
    let mut ends = InputEnds::default();
    let end = loop {
        tokio::select! {
            connection = connection_changed(&mut attached.connection) => {
                spinner.suspend(|| renderer.dim_line(&connection_notice(&connection)));
            }
            event = attached.events.recv() => {
                let Some(event) = event else { break None };
                spinner.hide();
                watch.observe(&event);
                renderer.render(&event);
                if let Some(end) = ends.end_of(&event, id) {
                    break Some(end);
                }
                if let Some(request) = asking.observe(&event, event.turn_id == Some(id)) {
                    renderer.line(&crate::frontend::output::wrap::to_terminal(&approval::keys(request)));
                }
                answering.store(asking.is_open(), Ordering::Relaxed);
                if !asking.is_open() && let Some(waiting) = waiting_after(&event.message) {
                    spinner.show(waiting);
                }
            }
            Some(typed) = keys.recv() => match typed {
                Typed::Interrupt => {
                    match attached.interrupt().await {
                        Ok(()) => interrupted = true,
                        Err(e) => spinner.suspend(|| {
                            renderer.dim_line(&format!("● could not interrupt ({e:#}); press Esc to try again"))
                        }),
                    }
                }
                Typed::Queued(line) => {
                    let shown = match line.lines().count() {
                        0 | 1 => line,
                        n => format!("{} (+{} lines)", line.lines().next().unwrap_or_default(), n - 1),
                    };
                    spinner.suspend(|| renderer.dim_line(&format!("⏎ next: {shown}")));
                }
                Typed::Answer(line) => {
                    match asking.answer(attached, &line).await {
                        Ok(()) => renderer.dim_line(&format!("› {line}")),
                        Err(why) => renderer.dim_line(&format!("● {why}")),
                    }
                    answering.store(asking.is_open(), Ordering::Relaxed);
                }
                Typed::Nothing => {}
            },
        }
    };
    let mut ahead = watcher.stop();
    ahead.answering = false;
    if interrupted {
        ahead.unqueue();
    }
    spinner.hide();
    renderer.options.raw = false;
    Ok((end, ahead))
}

/// Shows the session's events above the prompt while it waits for input:
/// a task owns the session and the renderer until [`stop`](Self::stop)
/// hands them back. Events not read by then stay queued for the next turn.
struct AtPrompt {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<(Attached, Renderer<Screen>)>,
}

impl AtPrompt {
    fn start(mut attached: Attached, mut renderer: Renderer<Screen>, watch: Watch) -> AtPrompt {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        renderer.writer_mut().above_prompt();
        renderer.options.echo_user = true; // another client's query
        let color = std::mem::replace(&mut renderer.options.color, false);
        let task = tokio::spawn(async move {
            // The editor prints a row per poll (every 100 ms at most).
            let mut pump = tokio::time::interval(Duration::from_millis(50));
            let mut open = true;
            loop {
                tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    connection = connection_changed(&mut attached.connection) => {
                        renderer.dim_line(&connection_notice(&connection));
                    }
                    // Closed: the next turn reports it; rows still waiting
                    // go on being printed.
                    event = attached.events.recv(), if open => match event {
                        Some(event) => {
                            watch.observe(&event);
                            renderer.render(&event);
                        }
                        None => open = false,
                    },
                    _ = pump.tick() => renderer.writer_mut().pump(),
                }
            }
            renderer.options.color = color;
            (attached, renderer)
        });
        AtPrompt { stop, task }
    }

    async fn stop(self) -> anyhow::Result<(Attached, Renderer<Screen>)> {
        let _ = self.stop.send(());
        let (attached, mut renderer) = self.task.await.context("the prompt's event task")?;
        renderer.options.echo_user = false;
        renderer
            .writer_mut()
            .on_terminal()
            .context("writing to the terminal")?;
        Ok((attached, renderer))
    }
}

/// The next change of the connection to the server; never, for a session
/// in this process (or once the link is gone).
async fn connection_changed(link: &mut Option<watch::Receiver<Connection>>) -> Connection {
    if let Some(changes) = link {
        if changes.changed().await.is_ok() {
            return changes.borrow_and_update().clone();
        }
        *link = None;
    }
    std::future::pending().await
}

fn connection_notice(connection: &Connection) -> String {
    match connection {
        Connection::Up => "● reconnected to the server".to_string(),
        Connection::Reconnecting { reason } => {
            format!("● lost the connection to the server ({reason}); reconnecting…")
        }
    }
}

/// What the turn waits for after `message`, if the spinner should show.
fn waiting_after(message: &AgentMessage) -> Option<&'static str> {
    match message {
        AgentMessage::User(_) => Some("thinking…"),
        AgentMessage::ToolResult(_) => Some("thinking…"),
        AgentMessage::Assistant(a)
            if a.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse { .. })) =>
        {
            Some("running tools…")
        }
        AgentMessage::StreamEvent(s) if matches!(s.event, StreamDelta::Discard { .. }) => {
            Some("retrying…")
        }
        AgentMessage::System(s) if announces_compaction(s) => Some("compacting…"),
        AgentMessage::System(s) if s.subtype == SystemSubtype::McpWaiting => {
            Some("waiting for MCP servers…")
        }
        // A turn's model call follows its compaction.
        AgentMessage::System(s) if s.subtype == SystemSubtype::Compacted => Some("thinking…"),
        _ => None,
    }
}

/// Reads keys on a thread of its own while a turn runs into a
/// [`TypeAhead`], and reports interrupts and queued lines. Polls in short
/// slices so that [`stop`](Self::stop) returns soon.
struct KeyWatcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<TypeAhead>>,
}

impl KeyWatcher {
    fn start(
        mut ahead: TypeAhead,
        typed: UnboundedSender<Typed>,
        answering: Arc<AtomicBool>,
    ) -> KeyWatcher {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match event::poll(Duration::from_millis(50)) {
                    Ok(true) => match event::read() {
                        Ok(Event::Key(key)) => {
                            match ahead.key_while(answering.load(Ordering::Relaxed), &key) {
                                Typed::Nothing => {}
                                said => {
                                    let _ = typed.send(said);
                                }
                            }
                        }
                        Ok(Event::Paste(text)) => ahead.paste(&text),
                        _ => {}
                    },
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
            ahead
        });
        KeyWatcher {
            stop,
            thread: Some(thread),
        }
    }

    /// Stop reading keys; returns what was typed once the thread is gone.
    fn stop(mut self) -> TypeAhead {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take();
        thread
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

/// Also when a turn ends early with an error: the editor must be the only
/// reader of the terminal again.
impl Drop for KeyWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A spinner on stderr while nothing streams.
#[derive(Default)]
struct Spinner(Option<ProgressBar>);

impl Spinner {
    fn show(&mut self, message: &'static str) {
        self.hide();
        let bar = ProgressBar::new_spinner().with_message(message);
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(100));
        self.0 = Some(bar);
    }

    fn hide(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }

    /// Run `f` (which writes to the terminal) with the spinner out of the way.
    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.0 {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }
}

/// Raw mode and bracketed paste (a paste comes as one event) for the life
/// of the guard; on a terminal that speaks the kitty keyboard protocol,
/// keys told apart as at the prompt (Shift+Enter from Enter).
struct RawMode {
    kitty: bool,
}

impl RawMode {
    fn enable(kitty: bool) -> anyhow::Result<RawMode> {
        crossterm::terminal::enable_raw_mode().context("switching the terminal to raw mode")?;
        let mut out = std::io::stdout();
        let _ = crossterm::execute!(out, event::EnableBracketedPaste);
        if kitty {
            let flags = event::KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
            let _ = crossterm::execute!(out, event::PushKeyboardEnhancementFlags(flags));
        }
        Ok(RawMode { kitty })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        if self.kitty {
            let _ = crossterm::execute!(out, event::PopKeyboardEnhancementFlags);
        }
        let _ = crossterm::execute!(out, event::DisableBracketedPaste);
        let _ = crossterm::terminal::disable_raw_mode();
    }
}
