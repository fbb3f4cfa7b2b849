//! Configuration errors: each names the file, the key and what was expected.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// (The reason is part of the message, not a source of its own: a
    /// chain printed whole would say it twice.)
    #[error("cannot read config file {path}: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{origin} is not valid TOML: {message}")]
    Syntax { origin: String, message: String },
    #[error("{origin}: key `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
    #[error(
        "{origin}: key `{key}` uses ${{{var}}}, but the environment variable {var} is not set (use ${{{var}:-default}} for a fallback)"
    )]
    UndefinedVariable {
        origin: String,
        key: String,
        var: String,
    },
    #[error("{origin}: key `system_prompt_file`: cannot read {path}: {reason}")]
    PromptFile {
        origin: String,
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("unknown model profile `{name}` (from {origin}); configured profiles: {available}")]
    UnknownModel {
        name: String,
        origin: String,
        available: String,
    },
    #[error("the workspace {path} is not a directory: {reason}")]
    Workspace { path: PathBuf, reason: String },
}
