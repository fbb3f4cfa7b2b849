//! A real terminal for tests: a command run in a detached tmux session of
//! a fixed size, typed into with `send-keys` and read back with
//! `capture-pane -p -e` (the scrollback and the screen, colours and
//! attributes as escape codes). Each [`Tmux`] has its own tmux server
//! (`-L`, a socket of its own), killed when it is dropped.
//!
//! Waits poll the screen until it shows what is expected, bounded by
//! [`GUARD`]; they never sleep a fixed time instead of looking.

use super::GUARD;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub struct Tmux {
    socket: String,
}

/// `text` as one word for `sh`.
fn quoted(text: &OsStr) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', r"'\''"))
}

impl Tmux {
    /// Run `command` (its program, arguments and environment changes; its
    /// working directory is not used) in a terminal of `columns` × `rows`.
    /// `dir` holds the server's configuration file. The pane stays when
    /// the command exits, so what it printed can still be read.
    pub fn run(command: &Command, dir: &Path, columns: u16, rows: u16) -> Tmux {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "agentbus-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let config = dir.join("tmux.conf");
        std::fs::write(
            &config,
            "set -g remain-on-exit on\nset -g history-limit 5000\nset -g status off\n",
        )
        .expect("write tmux.conf");
        // `env -u NAME ... NAME=VALUE ... PROGRAM ARGS`: removals first.
        let mut line = vec!["exec".to_string(), "env".to_string()];
        let mut set = Vec::new();
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => {
                    let mut pair = key.to_os_string();
                    pair.push("=");
                    pair.push(value);
                    set.push(quoted(&pair));
                }
                None => {
                    line.push("-u".into());
                    line.push(quoted(key));
                }
            }
        }
        line.extend(set);
        line.push(quoted(command.get_program()));
        line.extend(command.get_args().map(quoted));
        let tmux = Tmux { socket };
        let status = tmux
            .tmux()
            .arg("-f")
            .arg(&config)
            .args(["new-session", "-d", "-s", "test", "-x"])
            .arg(columns.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .arg(line.join(" "))
            .status()
            .expect("run tmux (Debian's package `tmux`)");
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-L").arg(&self.socket);
        command
    }

    /// Everything the terminal shows and has scrolled away, with escape
    /// codes.
    pub fn capture(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-e", "-S", "-", "-t", "test"])
            .output()
            .expect("run tmux capture-pane");
        assert!(out.status.success(), "tmux capture-pane failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What [`capture`](Self::capture) shows once `ready` accepts it.
    pub async fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + GUARD;
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {what}; it shows:\n{}",
                without_escapes(&screen)
            );
            // Polling the screen, not waiting in place of looking.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// What [`capture`](Self::capture) shows once it contains `text`
    /// (looked for without the escape codes).
    pub async fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |screen| {
            without_escapes(screen).contains(text)
        })
        .await
    }

    /// Type `text` and press Enter.
    pub fn type_line(&self, text: &str) {
        let typed = self
            .tmux()
            .args(["send-keys", "-t", "test", "-l", text])
            .status()
            .expect("run tmux send-keys");
        assert!(typed.success());
        self.press("Enter");
    }

    /// Press a key (`Enter`, `C-d`, ...).
    pub fn press(&self, key: &str) {
        let pressed = self
            .tmux()
            .args(["send-keys", "-t", "test", key])
            .status()
            .expect("run tmux send-keys");
        assert!(pressed.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// `text` without its CSI escape sequences.
pub fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The line of `screen` whose text (without escape codes) contains
/// `text`, with its escape codes.
pub fn line_with<'s>(screen: &'s str, text: &str) -> Option<&'s str> {
    screen
        .lines()
        .find(|line| without_escapes(line).contains(text))
}
