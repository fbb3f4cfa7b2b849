//! `/init` — ask the model to write the workspace's `AGENTS.md` (project
//! overview, build and test commands, conventions) with its file tools, or
//! to improve the one the session started with.
//!
//! The user sees an ordinary turn: a `user` event showing `/init` (its
//! `prompt` is the request below, what the model receives), the model
//! exploring and writing, a `result`. The core never looks at the
//! disk: whether `AGENTS.md` exists is what the session read when it
//! started (`SessionConfig::instructions`), and the request also tells the
//! model to improve a file it finds rather than replace it.

use super::syntax::{CommandQuery, SlashCommand, no_arguments};
use crate::protocol::ControlCommand;
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "init",
    usage: "/init",
    summary: "ask the model to write (or improve) AGENTS.md for this workspace",
    parse: |args| no_arguments("init", args, ControlCommand::Init),
};

/// How every `/init` request begins (tests look for it).
pub const OPENING: &str = "Look at this workspace";

/// What a new `AGENTS.md` should say, and how to write it.
const CONTENTS: &str = "AGENTS.md is read by coding agents before they work here, so it must hold what they cannot guess quickly:\n\
- a short overview of the project: what it is for and how the code is laid out (the main directories and what lives where);\n\
- the commands to build, test (all tests, and one test), lint and format, exactly as they are typed;\n\
- the conventions the code follows (style, naming, error handling, logging, how tests are written) and anything surprising a newcomer must know.\n\
Explore before you write: list the directories, read the README, the build and CI files and a few central sources. Keep it short and specific to this project: no generic advice, nothing obvious from the file names. Write it with your file tools, then say in a sentence or two what you wrote.";

/// The query `/init` runs.
pub fn apply(state: &SessionState) -> CommandQuery {
    CommandQuery {
        typed: "/init".into(),
        prompt: request(state),
        ..CommandQuery::default()
    }
}

/// What the model is asked.
fn request(state: &SessionState) -> String {
    let workspace = &state.config.workspace;
    match state.config.instructions.project() {
        Some(file) if file.file_name() == "AGENTS.md" => format!(
            "{OPENING} ({workspace}) and improve its AGENTS.md ({}). Check what it says against the code: correct what is out of date or wrong, add what is missing, remove what is generic. Edit the file in place and keep what still holds.\n\n{CONTENTS}",
            file.path
        ),
        Some(file) => format!(
            "{OPENING} ({workspace}) and write an AGENTS.md at its root. Its {} ({}) holds instructions already: take what still holds from it.\n\n{CONTENTS}",
            file.file_name(),
            file.path
        ),
        None => format!(
            "{OPENING} ({workspace}) and write an AGENTS.md at its root. If an AGENTS.md is there by now, improve it instead of replacing it.\n\n{CONTENTS}"
        ),
    }
}
