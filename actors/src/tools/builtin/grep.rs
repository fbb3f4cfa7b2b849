//! The `grep` tool: searches file contents for a regular expression and
//! prints matching lines as `path:line_number:line`.
//!
//! Directories are walked with the `ignore` crate, so `.gitignore`d files and
//! `.git` are skipped (see `tools/walk.rs`); binary files are skipped. It must
//! never modify anything, never follow symbolic links while walking, and
//! never print more than [`MAX_MATCHES`] lines or the output limit (further
//! matches are counted, not shown).

use super::walk;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::confine::{Confinement, Kind, locate};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// At most this many matching lines are shown; the rest are only counted.
pub const MAX_MATCHES: usize = 500;
/// Matching lines longer than this many characters are cut.
const MAX_LINE_CHARS: usize = 500;

#[derive(Clone, Debug)]
pub struct Grep;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Regular expression (Rust regex syntax, like ripgrep) searched for in
    /// each line, e.g. `fn\s+main` or `(?i)todo`. Escape regex metacharacters
    /// such as `(`, `.` or `{` to match them literally.
    pub pattern: String,
    /// File or directory to search, absolute or relative to the workspace
    /// (default: the workspace).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob: without a `/` it is matched
    /// against file names (`*.rs`, `*.{ts,tsx}`), with one against paths
    /// relative to `path` (`src/**/*.rs`).
    #[serde(default)]
    pub glob: Option<String>,
}

impl BuiltinTool for Grep {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents with a regular expression (Rust \
        regex syntax, as in ripgrep) and print each matching line as `path:line_number:line`, \
        with paths relative to the searched directory. `path` may be a directory (default: the \
        workspace) or a single file; `glob` limits which files are searched (e.g. `*.rs`). \
        Patterns match within a single line; use `(?i)` for case-insensitive search and escape \
        metacharacters to match them literally (e.g. `foo\\(` for `foo(`). Files ignored by \
        .gitignore, the .git directory and binary files are skipped. At most 500 matching \
        lines are shown; if you hit the limit, narrow the pattern, path or glob. Use glob to \
        find files by name, read_file to see a match in context.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        grep(params, ctx)
    }
}

async fn grep(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    if params.pattern.is_empty() {
        return Err(ToolError::failed(
            "the regex pattern is empty; give the text or regular expression to search for",
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&params.pattern)
        .map_err(|e| {
            ToolError::failed(format!(
                "invalid regex `{}`: {e}\n(expected Rust regex syntax; patterns match within \
                 one line; escape metacharacters such as `(` or `.` to match them literally)",
                params.pattern
            ))
        })?;
    let filter = match &params.glob {
        None => None,
        Some(g) => Some(FileFilter::new(g)?),
    };
    let root = ctx.resolve(params.path.as_deref().unwrap_or("."));
    let display_root = params.path.clone();
    let search = Search {
        matcher,
        filter,
        max_bytes: ctx.max_output_bytes,
        cancel: ctx.cancel.clone(),
        confinement: Confinement::of(&ctx),
    };
    super::blocking("grep", move || search.run(&root, display_root.as_deref())).await
}

/// The `glob` parameter: matched against the file name, or against the path
/// relative to the search root if it contains a `/`.
struct FileFilter {
    matcher: GlobMatcher,
    match_path: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<Self, ToolError> {
        let glob = glob.strip_prefix("./").unwrap_or(glob);
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                ToolError::failed(format!(
                    "invalid glob `{glob}`: {e}; expected something like `*.rs` or `src/**/*.rs`"
                ))
            })?
            .compile_matcher();
        Ok(FileFilter {
            matcher,
            match_path: glob.contains('/'),
        })
    }

    fn accepts(&self, rel: &Path) -> bool {
        if self.match_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}

struct Search {
    matcher: RegexMatcher,
    filter: Option<FileFilter>,
    max_bytes: usize,
    cancel: CancellationToken,
    confinement: Confinement,
}

/// What the search found so far.
#[derive(Default)]
struct Found {
    out: String,
    shown: usize,
    total: usize,
    /// Set once a line did not fit in the output limit; later lines are only
    /// counted, so the output never has gaps.
    full: bool,
    unreadable: usize,
    /// Files skipped because they lead outside the workspace and the
    /// write roots (symbolic links).
    outside: usize,
}

impl Found {
    fn add(&mut self, path: &str, line_number: u64, line: &str, max_bytes: usize) {
        self.total += 1;
        if self.full || self.shown >= MAX_MATCHES {
            return;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let entry = if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{path}:{line_number}:{cut} [... line cut]\n")
        } else {
            format!("{path}:{line_number}:{line}\n")
        };
        if self.out.len() + entry.len() > max_bytes {
            self.full = true;
            return;
        }
        self.out.push_str(&entry);
        self.shown += 1;
    }
}

impl Search {
    fn run(&self, root: &Path, display_root: Option<&str>) -> Result<ToolOutput, ToolError> {
        let opened = self.confinement.open(root, "search")?;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let mut found = Found::default();

        match opened.as_ref().map(|o| o.kind) {
            None => {
                return Err(ToolError::failed(format!(
                    "path not found: {} (relative paths resolve against the workspace)",
                    root.display()
                )));
            }
            Some(Kind::Special) => {
                return Err(ToolError::failed(format!(
                    "{} is not a regular file or directory (it is a device, FIFO or socket); \
                     grep searches files and directories",
                    root.display()
                )));
            }
            Some(Kind::Directory) => {
                found.unreadable += walk::files(root, &self.cancel, |path, rel| {
                    if self.filter.as_ref().is_some_and(|f| !f.accepts(rel)) {
                        return;
                    }
                    let shown = walk::relative(path, root);
                    self.search_path(&mut searcher, path, &shown, &mut found);
                })?;
            }
            Some(Kind::RegularFile) => {
                // A single file: shown as the model named it.
                let shown = display_root.map_or_else(|| root.display().to_string(), str::to_string);
                let name = PathBuf::from(root.file_name().unwrap_or_default());
                if self.filter.as_ref().is_none_or(|f| f.accepts(&name))
                    && let Some(opened) = &opened
                {
                    match opened.read() {
                        Ok(file) => self.search_file(&mut searcher, file, &shown, &mut found),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(ToolOutput::ok(self.render(found, root)))
    }

    /// Searches the walked file `path` if it really lies inside the roots
    /// (a symbolic link may lead elsewhere).
    fn search_path(&self, searcher: &mut Searcher, path: &Path, shown: &str, found: &mut Found) {
        let opened = match locate(path) {
            Ok(Some(opened)) if opened.kind == Kind::RegularFile => opened,
            Ok(Some(_)) => return,
            Ok(None) | Err(_) => {
                found.unreadable += 1;
                return;
            }
        };
        if !self.confinement.allows(&opened) {
            found.outside += 1;
            return;
        }
        match opened.read() {
            Ok(file) => self.search_file(searcher, file, shown, found),
            Err(_) => found.unreadable += 1,
        }
    }

    fn search_file(
        &self,
        searcher: &mut Searcher,
        file: std::fs::File,
        shown: &str,
        found: &mut Found,
    ) {
        let max_bytes = self.max_bytes;
        let result = searcher.search_file(
            &self.matcher,
            &file,
            Lossy(|line_number, text| {
                // Consecutive matching lines may arrive together.
                let text = text.strip_suffix('\n').unwrap_or(text);
                for (i, line) in text.split('\n').enumerate() {
                    found.add(shown, line_number + i as u64, line, max_bytes);
                }
                Ok(true)
            }),
        );
        if result.is_err() {
            found.unreadable += 1;
        }
    }

    fn render(&self, found: Found, root: &Path) -> String {
        let mut out = found.out;
        if found.total == 0 {
            out.push_str(&format!("No matches under {}.\n", root.display()));
        } else if found.total > found.shown {
            out.push_str(&format!(
                "[... {} more matching lines not shown ({} of {} shown); narrow the pattern, \
                 path or glob]\n",
                found.total - found.shown,
                found.shown,
                found.total
            ));
        }
        if found.unreadable > 0 {
            out.push_str(&if found.unreadable == 1 {
                "[1 file or directory could not be read]\n".to_string()
            } else {
                format!(
                    "[{} files or directories could not be read]\n",
                    found.unreadable
                )
            });
        }
        if found.outside > 0 {
            out.push_str(&format!(
                "[{} symbolic links leading outside the workspace and the write roots were \
                 skipped]\n",
                found.outside
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (f, content) in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    async fn grep(dir: &tempfile::TempDir, args: serde_json::Value) -> ToolOutput {
        Grep.call(args, ToolContext::new(dir.path())).await.unwrap()
    }

    #[tokio::test]
    async fn grep_prints_relpath_line_number_and_line() {
        let dir = tree(&[
            (
                "src/main.rs",
                "fn main() {\n    helper();\n}\nfn helper() {}\n",
            ),
            ("README.md", "call helper() to help\n"),
        ]);
        let out = grep(&dir, json!({"pattern": r"helper\(\)"})).await;
        assert_eq!(
            out.text,
            "README.md:1:call helper() to help\nsrc/main.rs:2:    helper();\nsrc/main.rs:4:fn helper() {}\n"
        );
    }

    #[tokio::test]
    async fn grep_respects_gitignore() {
        let dir = tree(&[
            (".gitignore", "target/\n"),
            ("src/lib.rs", "needle\n"),
            ("target/gen.rs", "needle\n"),
            (".git/config", "needle\n"),
        ]);
        let out = grep(&dir, json!({"pattern": "needle"})).await;
        assert_eq!(out.text, "src/lib.rs:1:needle\n");
    }

    #[tokio::test]
    async fn grep_glob_filters_file_names_and_paths() {
        let dir = tree(&[("a.rs", "hit\n"), ("b.txt", "hit\n"), ("src/c.rs", "hit\n")]);
        let out = grep(&dir, json!({"pattern": "hit", "glob": "*.rs"})).await;
        assert_eq!(out.text, "a.rs:1:hit\nsrc/c.rs:1:hit\n");
        let out = grep(&dir, json!({"pattern": "hit", "glob": "src/**/*.rs"})).await;
        assert_eq!(out.text, "src/c.rs:1:hit\n");
    }

    #[tokio::test]
    async fn grep_searches_a_single_file_or_a_subdirectory() {
        let dir = tree(&[("src/a.rs", "one\nhit two\n"), ("b.rs", "hit\n")]);
        let out = grep(&dir, json!({"pattern": "hit", "path": "src/a.rs"})).await;
        assert_eq!(out.text, "src/a.rs:2:hit two\n");
        let out = grep(&dir, json!({"pattern": "hit", "path": "src"})).await;
        assert_eq!(out.text, "a.rs:2:hit two\n");
    }

    #[tokio::test]
    async fn grep_numbers_consecutive_matching_lines_individually() {
        let dir = tree(&[("f.txt", "x1\nx2\nno\nx4\n")]);
        let out = grep(&dir, json!({"pattern": "x"})).await;
        assert_eq!(out.text, "f.txt:1:x1\nf.txt:2:x2\nf.txt:4:x4\n");
    }

    #[tokio::test]
    async fn grep_skips_binary_files() {
        let dir = tree(&[("bin.dat", "needle\u{0}\u{1}"), ("t.txt", "needle\n")]);
        let out = grep(&dir, json!({"pattern": "needle"})).await;
        assert_eq!(out.text, "t.txt:1:needle\n");
    }

    #[tokio::test]
    async fn grep_caps_the_number_of_matches_and_counts_the_rest() {
        let content: String = (0..(MAX_MATCHES + 20)).map(|i| format!("m{i}\n")).collect();
        let dir = tree(&[("f.txt", &content)]);
        let out = grep(&dir, json!({"pattern": "^m"})).await;
        assert_eq!(out.text.lines().count(), MAX_MATCHES + 1);
        assert!(
            out.text.contains("20 more matching lines not shown"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn grep_caps_the_output_bytes() {
        let content: String = (0..300)
            .map(|i| format!("{i} {}\n", "y".repeat(100)))
            .collect();
        let dir = tree(&[("f.txt", &content)]);
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_output_bytes = 1000;
        let out = Grep.call(json!({"pattern": "y"}), ctx).await.unwrap();
        assert!(out.text.len() < 1200, "{}", out.text.len());
        assert!(out.text.starts_with("f.txt:1:0 yyy"), "{}", out.text);
        assert!(out.text.contains("of 300 shown"), "{}", out.text);
    }

    #[tokio::test]
    async fn grep_says_when_nothing_matches() {
        let dir = tree(&[("a.txt", "hello\n")]);
        let out = grep(&dir, json!({"pattern": "absent"})).await;
        assert!(!out.is_error);
        assert!(out.text.starts_with("No matches"), "{}", out.text);
    }

    #[tokio::test]
    async fn grep_invalid_regex_error_names_the_pattern() {
        let dir = tree(&[]);
        let ctx = ToolContext::new(dir.path());
        let err = Grep
            .call(json!({"pattern": "foo("}), ctx.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("invalid regex `foo(`"), "{err}");
        let err = Grep
            .call(json!({"pattern": "x", "glob": "[a"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("invalid glob `[a`"), "{err}");
        let err = Grep
            .call(json!({"pattern": "x", "path": "nope"}), ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }

    #[tokio::test]
    async fn grep_rejects_unknown_fields_and_wrong_types() {
        let dir = tree(&[]);
        let ctx = ToolContext::new(dir.path());
        let err = Grep
            .call(
                json!({"pattern": "x", "case_insensitive": true}),
                ctx.clone(),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = Grep
            .call(json!({"pattern": "x", "glob": ["*.rs"]}), ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains("glob"), "{err}");
    }

    #[tokio::test]
    async fn grep_skips_symlinks_leading_outside_and_refuses_outside_paths_unless_granted() {
        let outer = tree(&[
            ("secret.txt", "needle outside\n"),
            ("ws/in.txt", "needle inside\n"),
        ]);
        let ws = outer.path().join("ws");
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), ws.join("link.txt")).unwrap();
        let mut ctx = ToolContext::new(&ws);
        let out = Grep
            .call(json!({"pattern": "needle"}), ctx.clone())
            .await
            .unwrap();
        assert!(out.text.contains("in.txt:1:needle inside"), "{}", out.text);
        assert!(!out.text.contains("needle outside"), "{}", out.text);
        assert!(
            out.text.contains("1 symbolic links leading"),
            "{}",
            out.text
        );
        let err = Grep
            .call(
                json!({"pattern": "needle", "path": "link.txt"}),
                ctx.clone(),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing to search"), "{err}");

        ctx.grant.outside_roots = true;
        let out = Grep.call(json!({"pattern": "needle"}), ctx).await.unwrap();
        assert!(
            out.text.contains("link.txt:1:needle outside"),
            "{}",
            out.text
        );
    }
}
