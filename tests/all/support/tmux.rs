//! The interactive chat on a real terminal: tmux runs the built binary in a
//! detached session of 120×40 on a server of its own (a socket in a
//! temporary directory, no configuration file), keys and pastes are sent
//! to it (`send-keys`, `paste-buffer -p` for a bracketed paste), and the
//! screen is read back with `capture-pane`.
//!
//! Waits poll the screen until what is expected shows, bounded by
//! [`GUARD`] only to turn a hang into a failure: nothing synchronises on
//! time. Logs are off (`RUST_LOG=off`): they would go to the same screen
//! (stderr, where the line editor draws too).

use super::{Fixture, GUARD};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

/// How often the screen is read while waiting.
const POLL: Duration = Duration::from_millis(50);

/// Whether tmux runs, found or installed once per test process: when it
/// is missing and we are root with apt-get (a fresh container, CI), Debian's
/// package is installed, as `tests/browser/run.sh` installs Chromium;
/// otherwise `Err` says how to get it.
fn installed() -> Result<(), &'static String> {
    static TMUX: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    TMUX.get_or_init(|| {
        let runs = || {
            Command::new("tmux")
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if runs() {
            return Ok(());
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        let how = "install it (as root: apt-get install -y tmux)";
        if !root || Command::new("apt-get").arg("--version").output().is_err() {
            return Err(format!(
                "the terminal tests need tmux, which is not installed; {how}"
            ));
        }
        eprintln!("the terminal tests need tmux: installing Debian's package (apt-get)");
        let installed = Command::new("sh")
            .arg("-c")
            .arg("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux")
            .output();
        match installed {
            Ok(_) if runs() => Ok(()),
            Ok(output) => Err(format!(
                "the terminal tests need tmux, and apt-get could not install it ({}); {how}",
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(e) => Err(format!(
                "the terminal tests need tmux, and apt-get could not run ({e}); {how}"
            )),
        }
    })
    .as_ref()
    .map(|_| ())
}

/// A chat running in tmux.
pub struct Terminal {
    dir: tempfile::TempDir,
    /// The screen after the last wait that saw what it waited for.
    pub last_screen: String,
}

impl Fixture {
    /// `agentbus ARGS...` with this fixture's config, workspace, data dir
    /// and home, on a terminal. `env` adds variables (`NO_COLOR`, ...).
    pub fn terminal(&self, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        self.terminal_of_size(args, env, 120, 40)
    }

    /// [`terminal`](Self::terminal) with `columns` × `rows`.
    pub fn terminal_of_size(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        columns: u16,
        rows: u16,
    ) -> Terminal {
        let dir = tempfile::tempdir().expect("tmux dir");
        let mut words: Vec<String> = vec![
            "env".into(),
            "-u".into(),
            "AGENTBUS_CONFIG".into(),
            "-u".into(),
            "AGENTBUS_DATA_DIR".into(),
            "-u".into(),
            "NO_COLOR".into(),
            "-u".into(),
            "COLORTERM".into(),
            format!("HOME={}", self.home.path().display()),
            format!(
                "XDG_CONFIG_HOME={}",
                self.home.path().join(".config").display()
            ),
            "RUST_LOG=off".into(),
        ];
        words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        words.extend([
            env!("CARGO_BIN_EXE_agentbus").to_string(),
            "--config".into(),
            self.config.display().to_string(),
            "--workspace".into(),
            self.workspace().display().to_string(),
            "--data-dir".into(),
            self.home.path().join("data").display().to_string(),
        ]);
        words.extend(args.iter().map(|a| a.to_string()));
        let command: Vec<String> = words.iter().map(|w| quote(w)).collect();
        // The pane stays after the chat exits, saying how it ended.
        let script = format!("{}; echo \"[exited $?]\"; sleep 600", command.join(" "));
        let terminal = Terminal {
            dir,
            last_screen: String::new(),
        };
        let (columns, rows) = (columns.to_string(), rows.to_string());
        terminal.tmux(&[
            "new-session",
            "-d",
            "-s",
            "chat",
            "-x",
            &columns,
            "-y",
            &rows,
            &script,
        ]);
        terminal
    }
}

impl Terminal {
    fn socket(&self) -> PathBuf {
        self.dir.path().join("tmux.sock")
    }

    /// Run `tmux ARGS` on this terminal's server; panics when it fails.
    fn tmux(&self, args: &[&str]) -> Output {
        if let Err(missing) = installed() {
            agentbus_testkit::prerequisite::missing(missing);
        }
        let output = Command::new("tmux")
            .arg("-S")
            .arg(self.socket())
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                agentbus_testkit::prerequisite::missing(&format!(
                    "the terminal tests need tmux, and it cannot run ({e})"
                ))
            });
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Press keys, in tmux's names (`Enter`, `Tab`, `Escape`, `M-Enter`,
    /// `C-d`, `Down`, ...).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "chat"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Type `text` as it is (no key names).
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "chat", "-l", text]);
    }

    /// Paste `text` as a terminal does: in bracketed-paste markers when the
    /// program asked for them.
    pub fn paste(&self, text: &str) {
        self.tmux(&["set-buffer", "-b", "pasted", text]);
        self.tmux(&["paste-buffer", "-p", "-b", "pasted", "-t", "chat"]);
    }

    /// The screen and its scrollback, as text (wrapped lines joined).
    pub fn screen(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "chat"]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The visible screen with its colours (`capture-pane -e`).
    pub fn screen_with_colours(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-e", "-t", "chat"]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Wait until the screen satisfies `ready`; returns it.
    pub async fn wait_until(&mut self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                self.last_screen = screen.clone();
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("the terminal never showed {what} within {GUARD:?}; screen:\n{screen}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Wait until `text` is on the screen (or in its scrollback).
    pub async fn wait_for(&mut self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |screen| screen.contains(text))
            .await
    }

    /// Type `text` and press Enter.
    pub fn type_line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// Wait until the visible screen shows `text` (looked for without the
    /// escape codes); returns it with its colours.
    pub async fn wait_for_coloured(&mut self, text: &str) -> String {
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            let screen = self.screen_with_colours();
            if without_escapes(&screen).contains(text) {
                self.last_screen = screen.clone();
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "the terminal never showed {text:?} within {GUARD:?}; screen:\n{}",
                    without_escapes(&screen)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Wait until `text` is gone from the visible screen (a menu closed).
    pub async fn wait_until_gone(&mut self, text: &str) {
        let visible = |term: &Terminal| {
            let output = term.tmux(&["capture-pane", "-p", "-J", "-t", "chat"]);
            String::from_utf8_lossy(&output.stdout).contains(text)
        };
        let deadline = tokio::time::Instant::now() + GUARD;
        while visible(self) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{text:?} stayed on the screen for {GUARD:?}:\n{}",
                self.screen()
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Wait until the chat waits at an empty prompt (the line editor reads
    /// the keys again: keys sent earlier, while a reply ends, would be
    /// typed ahead).
    pub async fn wait_for_prompt(&mut self) -> String {
        self.wait_until("an empty prompt", |screen| {
            let last = screen.lines().rev().find(|l| !l.trim().is_empty());
            last.and_then(|l| l.strip_prefix('›'))
                .is_some_and(|rest| rest.starts_with("  ") && rest.contains(" mode"))
        })
        .await
    }

    /// The prompt's line (the last one starting with `›`), where the status
    /// line is shown at the right.
    pub fn prompt_line(screen: &str) -> Option<&str> {
        screen.lines().rev().find(|line| line.starts_with('›'))
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(self.socket())
            .arg("kill-server")
            .output();
    }
}

/// `word` quoted for the shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
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
