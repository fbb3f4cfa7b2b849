//! The `glob` tool: finds files whose path matches a glob pattern such as
//! `**/*.rs`, under a directory (the workspace by default).
//!
//! It walks with the `ignore` crate, so `.gitignore`d files and `.git` are
//! skipped (see `tools/walk.rs` for the exact rules, including trees that are
//! not git repositories). It must never modify anything, never follow
//! symbolic links while walking, and never list more than [`MAX_RESULTS`]
//! paths (the rest are counted).

use super::listing::Listing;
use super::walk;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::confine::{Confinement, Kind};
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// At most this many paths are listed; the rest are only counted.
pub const MAX_RESULTS: usize = 1000;

#[derive(Clone, Debug)]
pub struct Glob;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Glob pattern matched against file paths relative to `path`, e.g.
    /// `**/*.rs`, `src/**/mod.rs` or `*.{json,toml}`. `*` does not cross `/`;
    /// `**` matches any number of directories.
    pub pattern: String,
    /// Directory to search in, absolute or relative to the workspace
    /// (default: the workspace).
    #[serde(default)]
    pub path: Option<String>,
}

impl BuiltinTool for Glob {
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by name: list the files under a directory \
        (default: the workspace) whose path relative to it matches a glob pattern, e.g. \
        `**/*.rs` (every .rs file at any depth), `*.toml` (only at the top level, since `*` \
        does not cross `/`), `src/**/test_*.py` or `**/*.{ts,tsx}`. Paths are printed relative \
        to the searched directory, sorted, at most 1000. Files ignored by .gitignore and the \
        .git directory are skipped; hidden files are included. Use grep to search inside \
        files, list_dir to see a single directory.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        glob(params, ctx)
    }
}

async fn glob(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let root = ctx.resolve(params.path.as_deref().unwrap_or("."));
    let pattern = relative_pattern(&params.pattern, &root)?;
    let matcher = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| {
            ToolError::failed(format!(
                "invalid glob pattern `{}`: {e}; expected something like `**/*.rs`",
                params.pattern
            ))
        })?
        .compile_matcher();
    let cancel = ctx.cancel.clone();
    let confinement = Confinement::of(&ctx);
    super::blocking("glob", move || {
        find(&confinement, &root, &matcher, &params.pattern, &cancel)
    })
    .await
}

/// The pattern relative to the search root: a leading `./` is dropped, and an
/// absolute pattern inside the root is made relative to it.
fn relative_pattern(pattern: &str, root: &Path) -> Result<String, ToolError> {
    if pattern.is_empty() {
        return Err(ToolError::failed(
            "the glob pattern is empty; give one such as `**/*.rs`",
        ));
    }
    if pattern.starts_with('/') {
        let root_prefix = format!("{}/", root.display().to_string().trim_end_matches('/'));
        return match pattern.strip_prefix(&root_prefix) {
            Some(rest) if !rest.is_empty() => Ok(rest.to_string()),
            _ => Err(ToolError::failed(format!(
                "the glob pattern `{pattern}` is absolute but not inside the searched directory \
                 {}; give a pattern relative to `path` and set `path` to the directory to search",
                root.display()
            ))),
        };
    }
    let mut p = pattern;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    Ok(p.to_string())
}

fn find(
    confinement: &Confinement,
    root: &Path,
    matcher: &GlobMatcher,
    pattern: &str,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    match confinement.open(root, "search")? {
        Some(opened) if opened.kind != Kind::Directory => {
            return Err(ToolError::failed(format!(
                "{} is a file, not a directory; `path` must be the directory to search in",
                root.display()
            )));
        }
        Some(_) => {}
        None => {
            return Err(ToolError::failed(format!(
                "directory not found: {} (relative paths resolve against the workspace)",
                root.display()
            )));
        }
    }

    let mut found = Vec::new();
    let unreadable = walk::files(root, cancel, |path, rel| {
        if matcher.is_match(rel) {
            found.push(walk::relative(path, root));
        }
    })?;
    found.sort();

    let out = Listing {
        empty: format!("No files match `{pattern}` under {}.", root.display()),
        max: MAX_RESULTS,
        more: "matching files",
        hint: "use a narrower pattern or path",
        what: "paths",
    }
    .render(&found, unreadable);
    Ok(ToolOutput::ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x\n").unwrap();
        }
        dir
    }

    async fn glob(dir: &tempfile::TempDir, args: serde_json::Value) -> ToolOutput {
        Glob.call(args, ToolContext::new(dir.path())).await.unwrap()
    }

    #[tokio::test]
    async fn glob_finds_files_at_any_depth_sorted_and_relative_to_the_root() {
        let dir = tree(&["b.rs", "a.rs", "src/lib.rs", "src/deep/x.rs", "README.md"]);
        let out = glob(&dir, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(out.text, "a.rs\nb.rs\nsrc/deep/x.rs\nsrc/lib.rs\n");
    }

    #[tokio::test]
    async fn glob_star_does_not_cross_directories() {
        let dir = tree(&["a.rs", "src/lib.rs"]);
        let out = glob(&dir, json!({"pattern": "*.rs"})).await;
        assert_eq!(out.text, "a.rs\n");
    }

    #[tokio::test]
    async fn glob_searches_under_path_and_prints_paths_relative_to_it() {
        let dir = tree(&["a.rs", "src/lib.rs", "src/deep/x.rs"]);
        let out = glob(&dir, json!({"pattern": "**/*.rs", "path": "src"})).await;
        assert_eq!(out.text, "deep/x.rs\nlib.rs\n");
    }

    #[tokio::test]
    async fn glob_respects_gitignore_without_a_git_repository_and_skips_dot_git() {
        let dir = tree(&[
            "src/main.rs",
            "target/debug/gen.rs",
            "notes.log",
            ".git/hooks/pre-commit.rs",
            ".github/workflows/ci.yml",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        let out = glob(&dir, json!({"pattern": "**/*"})).await;
        assert_eq!(
            out.text,
            ".github/workflows/ci.yml\n.gitignore\nsrc/main.rs\n"
        );
    }

    #[tokio::test]
    async fn glob_respects_gitignore_inside_a_git_repository() {
        let dir = tree(&["keep.rs", "gen/skip.rs"]);
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "gen/\n").unwrap();
        let out = glob(&dir, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(out.text, "keep.rs\n");
    }

    #[tokio::test]
    async fn glob_says_when_nothing_matches() {
        let dir = tree(&["a.rs"]);
        let out = glob(&dir, json!({"pattern": "**/*.py"})).await;
        assert!(!out.is_error);
        assert!(
            out.text.contains("No files match `**/*.py`"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn glob_caps_the_results_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_RESULTS + 3) {
            std::fs::write(dir.path().join(format!("f{i:05}.txt")), "").unwrap();
        }
        let out = glob(&dir, json!({"pattern": "*.txt"})).await;
        assert_eq!(out.text.lines().count(), MAX_RESULTS + 1);
        assert!(out.text.contains("3 more matching files"), "{}", out.text);
    }

    #[tokio::test]
    async fn glob_accepts_dot_slash_and_absolute_patterns_inside_the_root() {
        let dir = tree(&["src/lib.rs"]);
        let out = glob(&dir, json!({"pattern": "./src/*.rs"})).await;
        assert_eq!(out.text, "src/lib.rs\n");
        let abs = format!("{}/src/*.rs", dir.path().display());
        let out = glob(&dir, json!({"pattern": abs})).await;
        assert_eq!(out.text, "src/lib.rs\n");
    }

    #[tokio::test]
    async fn glob_reports_invalid_patterns_and_bad_paths() {
        let dir = tree(&["a.rs"]);
        let ctx = ToolContext::new(dir.path());
        let err = Glob
            .call(json!({"pattern": "src/[a"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("invalid glob pattern `src/[a`"),
            "{err}"
        );
        let err = Glob
            .call(json!({"pattern": "*", "path": "a.rs"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        let err = Glob
            .call(json!({"pattern": "*", "path": "nope"}), ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }

    #[tokio::test]
    async fn glob_rejects_unknown_fields_and_wrong_types() {
        let dir = tree(&[]);
        let ctx = ToolContext::new(dir.path());
        let err = Glob
            .call(json!({"pattern": "*", "exclude": "x"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = Glob.call(json!({"pattern": 1}), ctx).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    }

    #[tokio::test]
    async fn glob_refuses_to_search_outside_the_workspace_unless_granted() {
        let outer = tree(&["out/a.rs", "ws/b.rs"]);
        let mut ctx = ToolContext::new(outer.path().join("ws"));
        let err = Glob
            .call(json!({"pattern": "*.rs", "path": "../out"}), ctx.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing to search"), "{err}");
        ctx.grant.outside_roots = true;
        let out = Glob
            .call(json!({"pattern": "*.rs", "path": "../out"}), ctx)
            .await
            .unwrap();
        assert!(out.text.contains("a.rs"), "{}", out.text);
    }
}
