//! The command line: global flags and subcommands (clap).

use crate::logging::LogFormat;
use agentbus_engine::protocol::checkpoint::RewindMode;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// agentbus: LLM agent sessions that read, write and edit files and run
/// commands in your workspace. Without a subcommand it opens the chat, as
/// `agentbus chat` does, and takes its flags (`agentbus --continue`,
/// `agentbus --model NAME`).
#[derive(Debug, Parser)]
#[command(name = "agentbus", version, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The chat's flags, for `agentbus` without a subcommand.
    #[command(flatten)]
    pub chat: ChatArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The global flags and the subcommand (`chat` when none was given).
    /// A chat flag before a subcommand (`agentbus --model x run ...`) is a
    /// usage error, never silently dropped. (clap's
    /// `args_conflicts_with_subcommands` would refuse the global flags
    /// too.)
    pub fn into_parts(self) -> (GlobalArgs, Command) {
        let command = match self.command {
            None => Command::Chat(self.chat),
            Some(command) if self.chat == ChatArgs::default() => command,
            Some(_) => {
                use clap::CommandFactory as _;
                Cli::command()
                    .error(
                        clap::error::ErrorKind::ArgumentConflict,
                        "a session flag (--model, --continue, --json, ...) before the subcommand is the chat's: \
                         put it after the subcommand (`agentbus run --model NAME \"...\"`)",
                    )
                    .exit()
            }
        };
        (self.global, command)
    }
}

/// Flags every subcommand takes.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// A config file read after the user and project files.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where agentbus keeps its data (chat history, ...). Default:
    /// $AGENTBUS_DATA_DIR, else ~/.local/share/agentbus.
    // `hide_env_values`: clap would show `[env: AGENTBUS_DATA_DIR=]`, an
    // empty value, whenever the variable is not set.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "AGENTBUS_DATA_DIR",
        hide_env_values = true
    )]
    pub data_dir: Option<PathBuf>,
    /// Where sessions are stored: a Postgres URL
    /// (postgres://USER[:PASSWORD]@HOST:PORT/DATABASE) or a SQLite file's
    /// path. Default: `[sessions] store`, else agentbus.db in the data dir.
    #[arg(long, global = true, value_name = "URL|FILE")]
    pub store: Option<String>,
    /// The directory the agent works in (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Write the logs to this file (created with its folders, appended to)
    /// instead of stderr. Default: `[log] file`.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// How log lines are written: text, or json (one object per line).
    /// Default: `[log] format`, else text.
    #[arg(long, global = true, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat with the agent in the terminal (reads one input per line when
    /// stdin is not a terminal).
    Chat(ChatArgs),
    /// Run one prompt to the end and print the answer.
    Run(RunArgs),
    /// Inspect the configured MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// List, show, export, import, fork, rewind and delete stored sessions;
    /// collect the checkpoints' unneeded file versions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Show the hooks sessions in this workspace run, and trust the
    /// workspace's own (`.claude/settings.json`), which wait until you do.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Run the daemon: the HTTP API, SSE and WebSocket streams, and the web
    /// page, for every session of the data dir.
    Serve(ServeArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed,
    /// JetBrains, Neovim) and ACP clients: start it from the editor.
    Acp(AcpArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or
    /// powershell to stdout (see the README for where to put it).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// Run the editor's sessions in a running `agentbus serve` (its
    /// address, e.g. http://127.0.0.1:7878) instead of in this process, so
    /// the web page and `chat --attach` see them too.
    #[arg(long, value_name = "URL")]
    pub attach: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default: `[server] listen`, else 127.0.0.1:7878).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// The stored sessions of this workspace (`--all`: of every
    /// workspace), most recent first.
    List {
        #[arg(long)]
        json: bool,
        /// Every workspace's sessions, with a WORKSPACE column.
        #[arg(long)]
        all: bool,
    },
    /// One session: its details and conversation (`--json`: its events).
    Show {
        /// Session id, or the start of one.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a session as a versioned JSON document.
    Export {
        id: String,
        /// The file to write (default: stdout).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Read a document written by `export` (or `/save`) as a new session.
    Import { file: PathBuf },
    /// Copy a session (up to event SEQ) into a new session.
    Fork {
        id: String,
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
    },
    /// Delete a session and its events.
    Delete { id: String },
    /// Without SEQ: a session's turns and what each changed in the
    /// workspace. With SEQ: take back the files and/or the conversation to
    /// before that turn (the conversation: a fork, as `fork --at` makes).
    Rewind {
        /// Session id, or the start of one.
        id: String,
        /// The turn: its event number, as the list shows it.
        seq: Option<u64>,
        /// What to take back: the files and the conversation (`both`),
        /// the conversation alone or the files (`code`) alone.
        #[arg(long, value_name = "both|conversation|code", value_parser = rewind_mode, default_value = "both", requires = "seq")]
        mode: RewindMode,
        /// Overwrite files someone else changed since (else left alone).
        #[arg(long, requires = "seq")]
        force: bool,
        /// Only say what would be done, with each file's diff.
        #[arg(long, requires = "seq")]
        preview: bool,
        /// The list or the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take back the file changes of a session's last turn that changed
    /// files (and is not taken back already); the conversation stays.
    Undo {
        /// Session id, or the start of one.
        id: String,
        /// Overwrite files someone else changed since (else left alone).
        #[arg(long)]
        force: bool,
        /// Only say what would be done, with each file's diff.
        #[arg(long)]
        preview: bool,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the stored file versions no checkpoint needs any more
    /// (unused for an hour), and say what the checkpoints now hold.
    Gc {
        #[arg(long)]
        json: bool,
    },
}

/// `--mode`'s word.
fn rewind_mode(word: &str) -> Result<RewindMode, String> {
    RewindMode::parse(word)
        .ok_or_else(|| format!("`{word}` is not a mode; use both, conversation or code"))
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every hook a session in the workspace would run, where each comes
    /// from, and whether the workspace's own are trusted.
    List,
    /// Trust the workspace's hooks as they are now (any later change to
    /// them must be trusted again).
    Trust,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured MCP server, wait until each is ready or has
    /// failed, and print its status and tools.
    List {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Flags that choose the session: a new one by default.
#[derive(Debug, Args, Clone, Default, PartialEq)]
pub struct ResumeArgs {
    /// Continue this stored session (its id, or the start of one).
    #[arg(long, value_name = "ID", conflicts_with_all = ["continue_", "resume"])]
    pub session: Option<String>,
    /// Continue the most recent session of this workspace.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_: bool,
    /// Continue a stored session: this one (its id, or the start of one),
    /// or — without an id, in the chat — one picked from this workspace's
    /// recent sessions.
    #[arg(long, short = 'r', value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
}

impl ResumeArgs {
    /// A stored session is asked for.
    pub fn stored(&self) -> bool {
        self.session.is_some() || self.continue_ || self.resume.is_some()
    }

    /// The session asked for by id (`--session ID` or `--resume ID`); an
    /// error for `--resume` without one, which only the chat can ask about.
    pub fn id(&self) -> anyhow::Result<Option<&str>> {
        match (&self.session, &self.resume) {
            (Some(id), _) | (None, Some(Some(id))) => Ok(Some(id)),
            (None, Some(None)) => anyhow::bail!(
                "--resume without an id picks a session in the terminal chat; give the id here (see `agentbus sessions list`)"
            ),
            (None, None) => Ok(None),
        }
    }

    /// `--resume` without an id: the chat shows its picker.
    pub fn wants_picker(&self) -> bool {
        matches!(self.resume, Some(None))
    }
}

/// Flags that choose how a session runs.
#[derive(Debug, Args, Clone, Default, PartialEq)]
pub struct SessionArgs {
    /// Model profile to use (see /models).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Most model calls per turn.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// What runs without asking: default (reads), accept-edits (reads and
    /// edits in the workspace), plan (read-only), bypass (everything; deny
    /// rules and the sandbox still hold).
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<agentbus_engine::protocol::PermissionMode>,
    /// Run as this named agent: build (default), plan (read-only), or one
    /// from [agents.NAME], .agentbus/agents/ or .claude/agents/ (see /agent).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Allow calls matching RULE without asking, e.g. 'bash(cargo test:*)'
    /// or 'edit_file(src/**)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
}

#[derive(Debug, Args, Default, PartialEq)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub resume: ResumeArgs,
    /// Print every event as one JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Chat with a session of a running `agentbus serve` (its address, e.g.
    /// http://127.0.0.1:7878) instead of one in this process.
    #[arg(long, value_name = "URL")]
    pub attach: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub resume: ResumeArgs,
    /// Print every event as one JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Run the prompt in a session of a running `agentbus serve` (its
    /// address) instead of one in this process.
    #[arg(long, value_name = "URL")]
    pub attach: Option<String>,
    /// Attach an image (PNG, JPEG, GIF or WebP, at most 5 MB) to the
    /// prompt; repeatable. The model profile must take images (`images`).
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<std::path::PathBuf>,
    /// The prompt (words are joined with spaces). Without one, or with `-`,
    /// it is read from stdin when stdin is not a terminal.
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn help_names_the_data_dir_variable_without_an_empty_value() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("[env: AGENTBUS_DATA_DIR]"), "{help}");
        assert!(!help.contains("AGENTBUS_DATA_DIR="), "{help}");
    }
}
