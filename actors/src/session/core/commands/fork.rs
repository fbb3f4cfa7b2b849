//! `/fork [SEQ]` — copies this session, up to event SEQ (default: now),
//! into a new session and switches to it. This session is untouched.

use super::syntax::SlashCommand;
use crate::protocol::system::Forked;
use crate::protocol::{ControlCommand, SessionId, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "fork",
    usage: "/fork [SEQ]",
    summary: "copy this session (up to event SEQ) into a new one and switch to it",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    match args.trim() {
        "" => Ok(ControlCommand::Fork { at_seq: None }),
        seq => seq
            .parse::<u64>()
            .map(|n| ControlCommand::Fork { at_seq: Some(n) })
            .map_err(|_| format!("/fork takes an event number (seq), not `{seq}`.")),
    }
}

/// The reply once the store made the fork.
pub fn forked(new: &SessionId, parent: &SessionId, at_seq: u64) -> SystemEvent {
    SystemEvent::new(
        format!("Forked {parent} at event {at_seq} into new session {new}."),
        &Forked {
            switch_to: new.clone(),
            parent: parent.clone(),
            at_seq,
        },
    )
}
