//! `agentbus chat`: the terminal chat.
//!
//! On a terminal: a line editor with history ([`editor`]), streamed replies,
//! Esc or Ctrl-C to interrupt a turn, Ctrl-N for a new session, Ctrl-D (or
//! Ctrl-C at an empty prompt, or /quit) to leave ([`interactive`]).
//! Otherwise (piped stdin, or `--json`): one input per line, submitted as it
//! is read so inputs queue in the session like typed-ahead messages, exiting
//! at end of input once every submitted input has finished ([`piped`]).
//! Both follow `/new`, `/resume`, `/fork` and `/load` to the session they
//! name. `chat --resume` without an id picks the session first
//! ([`picker`]; a terminal is needed). On a terminal, `/rewind` alone
//! picks the turn to rewind to, with a preview of the diffs ([`rewind`]);
//! piped, it prints the session's list of turns.

mod completion;
mod editor;
mod interactive;
mod picker;
mod piped;
mod rewind;
mod screen;
mod status;
mod type_ahead;

use super::common::attached::Start;
use super::common::backend::{Attach, Backend};
use crate::cli::ResumeArgs;
use agentbus_engine::Settings;
use std::io::IsTerminal;
use std::process::ExitCode;

/// When the workspace has hooks not trusted yet: show them and ask whether
/// to trust them (as `agentbus hooks trust` does). No (the default) leaves
/// them off; the session then says so.
fn ask_trust(settings: &Settings) -> anyhow::Result<()> {
    use agentbus_engine::runtime::hooks;
    use std::io::Write;
    let workspace = &settings.workspace;
    let (project, _) = hooks::read_project(workspace, dirs::home_dir().as_deref());
    let trust_file = hooks::trust_file(&settings.data_dir);
    if project.is_empty() || hooks::is_trusted(&trust_file, workspace, &project) {
        return Ok(());
    }
    println!("This workspace has hooks: commands that run on this machine during a session.");
    for line in project.iter().flat_map(|group| group.lines()) {
        println!("  {line}");
    }
    print!("Trust them and let them run? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        hooks::trust(&trust_file, workspace, &project)?;
        println!("Trusted (a change to them will be asked about again).");
    } else {
        println!("Not trusted: they do not run (`agentbus hooks trust` later).");
    }
    Ok(())
}

pub async fn run(
    settings: Settings,
    resume: ResumeArgs,
    json: bool,
    attach: Option<Attach>,
    flags: super::common::backend::SessionFlags,
) -> anyhow::Result<ExitCode> {
    let history = chat_history(&settings.data_dir);
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal() && !json;
    // The workspace's hooks wait for trust: asked here, before a session
    // reads them (a daemon's workspace is the daemon's to trust).
    if interactive && attach.is_none() {
        ask_trust(&settings)?;
    }
    let backend = Backend::start(settings, attach).await?;
    let start = if interactive {
        Start::Beginning
    } else {
        Start::ThisLoad
    };
    let mut resume = resume;
    if resume.wants_picker() {
        if !interactive {
            backend.shutdown().await;
            anyhow::bail!(
                "chat --resume without an id picks a session on a terminal; give the id (see `agentbus sessions list`)"
            );
        }
        let workspace = backend.workspace().map(|w| w.display().to_string());
        let sessions = match backend.list().await {
            Ok(listed) => picker::of_workspace(listed, workspace.as_deref()),
            Err(e) => {
                backend.shutdown().await;
                return Err(e);
            }
        };
        if sessions.is_empty() {
            backend.shutdown().await;
            anyhow::bail!(
                "no earlier session in this workspace to resume; start one without --resume"
            );
        }
        let color = std::env::var_os("NO_COLOR").is_none();
        match tokio::task::block_in_place(|| picker::pick(&sessions, color)) {
            Ok(Some(i)) => resume.resume = Some(Some(sessions[i].id.clone())),
            Ok(None) => {
                backend.shutdown().await;
                println!("Nothing resumed.");
                return Ok(ExitCode::SUCCESS);
            }
            Err(e) => {
                backend.shutdown().await;
                return Err(anyhow::Error::new(e).context("the session picker"));
            }
        }
    }
    let code = match backend.choose(&resume, start, &flags).await {
        Ok(session) => {
            // A profile that cannot answer is said before the first message;
            // the chat still opens (`/model` may switch to one that can).
            backend.say_model_problem(&session).await;
            if interactive {
                interactive::run(&backend, session, history, !resume.stored()).await
            } else {
                piped::run(&backend, session, json, !resume.stored()).await
            }
        }
        Err(e) => Err(e),
    };
    backend.shutdown().await;
    code
}

/// The chat's line-editor history file in the data directory (created).
pub fn chat_history(data_dir: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::create_dir_all(data_dir).ok()?;
    Some(data_dir.join("chat_history.txt"))
}
