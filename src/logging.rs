//! Where the logs go: stderr by default, or a file (`--log-file PATH`,
//! `[log] file`: created with its folders, appended to), as lines of text
//! or JSON objects (`--log-format`, `[log] format`), filtered by
//! `RUST_LOG`, else `[log] level`, else `warn`. Never stdout: it belongs to
//! answers and `--json` events.
//!
//! The spans of `agentbus_engine::spans` are not the log's: they never
//! show in it, and the log's level never hides them from the traces
//! (`src/telemetry.rs` adds its layer beside this one).
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

/// One layer of the process's subscriber (the log's, the traces').
pub type BoxedLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Start logging as `settings` say, with `traces` (the OpenTelemetry
/// layer, when `[telemetry]` is on) beside it. Fails when the file cannot
/// be opened (naming it) or the level does not parse.
///
/// The filter is the log's own: the spans of `agentbus_engine::spans`
/// never show in the log (they are the traces'), and the log's level
/// never hides them from the traces.
pub fn init(settings: &LogSettings, traces: Option<BoxedLayer>) -> anyhow::Result<()> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
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
    let not_spans = format!("{}=off", agentbus_engine::spans::TARGET)
        .parse()
        .context("the log filter that leaves the spans out")?;
    let filter = filter.add_directive(not_spans);
    let json = settings.format == Some(LogFormat::Json);
    let layer = tracing_subscriber::fmt::layer().with_target(false);
    let log: BoxedLayer = match &settings.file {
        Some(path) => {
            let file = open_log_file(path)?;
            let writer = std::sync::Mutex::new(file);
            let layer = layer.with_ansi(false).with_writer(writer);
            if json {
                layer.json().with_filter(filter).boxed()
            } else {
                layer.with_filter(filter).boxed()
            }
        }
        None => {
            let ansi = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
            let layer = layer.with_ansi(ansi).with_writer(std::io::stderr);
            if json {
                layer.json().with_filter(filter).boxed()
            } else {
                layer.with_filter(filter).boxed()
            }
        }
    };
    let layers: Vec<BoxedLayer> = traces.into_iter().chain([log]).collect();
    tracing_subscriber::registry().with(layers).try_init()?;
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
