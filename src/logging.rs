//! Where the logs go: stderr by default, or a file (`--log-file PATH`,
//! `[log] file`: created with its folders, appended to), as lines of text
//! or JSON objects (`--log-format`, `[log] format`), filtered by
//! `RUST_LOG`, else `[log] level`, else `warn`. Never stdout: it belongs to
//! answers and `--json` events.
//!
//! Secrets stay out by construction: keys are read from the environment
//! only when a request is made and are never a field of a log event
//! (`Secret` prints as `[redacted]`), and no HTTP headers are logged.

use anyhow::Context as _;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text per event.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields`, ...).
    Json,
}

/// `[log]` in a configuration file (every key optional; flags win).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// The file the logs are appended to (relative to the configuration
    /// file that names it; `~/` is the home directory). Unset: stderr.
    pub file: Option<PathBuf>,
    /// `text` (default) or `json`.
    pub format: Option<LogFormat>,
    /// What is logged, as `RUST_LOG` says it (`info`,
    /// `agentbus=debug,warn`); `RUST_LOG` wins. Default: `warn`.
    pub level: Option<String>,
}

impl LogSettings {
    /// `later`'s keys over these.
    pub fn overridden_by(self, later: LogSettings) -> LogSettings {
        LogSettings {
            file: later.file.or(self.file),
            format: later.format.or(self.format),
            level: later.level.or(self.level),
        }
    }
}

/// Start logging as `settings` say. Fails when the file cannot be opened
/// (naming it) or the level does not parse.
pub fn init(settings: &LogSettings) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            tracing_subscriber::EnvFilter::try_new(&text).unwrap_or_else(|_| default_filter())
        }
        _ => match &settings.level {
            Some(level) => tracing_subscriber::EnvFilter::try_new(level)
                .with_context(|| format!("`[log] level`: `{level}` is not a log filter (e.g. `info`, `agentbus=debug,warn`)"))?,
            None => default_filter(),
        },
    };
    let json = settings.format == Some(LogFormat::Json);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    match &settings.file {
        Some(path) => {
            let file = open_log_file(path)?;
            let writer = std::sync::Mutex::new(file);
            let builder = builder.with_ansi(false).with_writer(writer);
            if json {
                builder.json().init();
            } else {
                builder.init();
            }
        }
        None => {
            let ansi = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
            let builder = builder.with_ansi(ansi).with_writer(std::io::stderr);
            if json {
                builder.json().init();
            } else {
                builder.init();
            }
        }
    }
    Ok(())
}

fn default_filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new("warn")
}

/// The log file, opened for appending; its folders made first.
fn open_log_file(path: &Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create the folder of the log file {}",
                path.display()
            )
        })?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the log file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_keys_win_one_by_one() {
        let file = LogSettings {
            file: Some("a.log".into()),
            format: Some(LogFormat::Json),
            level: None,
        };
        let flags = LogSettings {
            file: Some("b.log".into()),
            ..LogSettings::default()
        };
        let merged = file.overridden_by(flags);
        assert_eq!(merged.file.as_deref(), Some(Path::new("b.log")));
        assert_eq!(merged.format, Some(LogFormat::Json));
        assert_eq!(merged.level, None);
    }

    #[test]
    fn the_log_file_is_made_with_its_folders_and_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/agentbus.log");
        use std::io::Write as _;
        writeln!(open_log_file(&path).unwrap(), "one").unwrap();
        writeln!(open_log_file(&path).unwrap(), "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    }
}
