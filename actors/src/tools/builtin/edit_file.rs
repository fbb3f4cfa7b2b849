//! The `edit_file` tool: replaces an exact string in a file and shows the
//! change as a unified diff.
//!
//! It must never write outside the workspace and the write roots (checked
//! on what it opens, `tools/confine.rs`) unless granted, never write in
//! plan mode (`Grant::read_only`), never guess: an `old_string` that is
//! missing or (without `replace_all`) not unique changes nothing, and never
//! create files (that is write_file's job). When a front end holds the
//! files (`tools/files.rs`), the text is read and written through it, after
//! the path was checked on the disk like any other.

use super::BuiltinTool;
use super::found::{plan_mode_refusal, special_file};
use crate::tools::confine::{Confinement, Kind, Opened};
use crate::tools::{ToolContext, ToolError, ToolOutput, truncate_middle};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{Read, Write};
use std::path::Path;

/// Unchanged lines shown around each change in the diff.
const DIFF_CONTEXT_LINES: usize = 3;
/// After this long the diff algorithm settles for a coarser (still correct)
/// diff, so huge rewrites cannot stall the tool.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

#[derive(Clone, Debug)]
pub struct EditFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Path of the file to edit, absolute or relative to the workspace. It
    /// must exist and be inside the workspace (or a write root).
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It
    /// must occur exactly once in the file unless `replace_all` is true.
    pub old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    pub new_string: String,
    /// Replace every occurrence of `old_string` instead of requiring it to be
    /// unique (default false).
    #[serde(default)]
    pub replace_all: bool,
}

impl BuiltinTool for EditFile {
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Edit a file in the workspace by replacing an exact \
        string. `old_string` must match the file's text exactly, including whitespace and \
        indentation (copy it from read_file output without the line-number prefix), and must \
        occur exactly once: if it occurs several times, include more surrounding lines to make \
        it unique, or set `replace_all` to change every occurrence (e.g. to rename a variable). \
        Nothing is changed if the match fails. Read the file first so the text you quote is \
        current. On success it reports the number of replacements and a unified diff of the \
        change. To create a new file, use write_file.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        edit_file(params, ctx)
    }
}

async fn edit_file(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    if params.old_string.is_empty() {
        return Err(ToolError::failed(
            "old_string is empty; give the exact text to replace (to create a file or replace \
             all of its content, use write_file)",
        ));
    }
    if params.old_string == params.new_string {
        return Err(ToolError::failed(
            "old_string and new_string are identical, so the edit would change nothing; give \
             the new text in new_string",
        ));
    }
    let path = ctx.resolve(&params.path);
    if ctx.grant.read_only {
        return Err(plan_mode_refusal("edit", &path));
    }
    let max_bytes = ctx.max_output_bytes;
    let confinement = Confinement::of(&ctx);
    let Some(files) = ctx.files.held().cloned() else {
        return super::blocking("edit_file", move || {
            edit(&confinement, &path, &params, max_bytes)
        })
        .await;
    };
    let checked = path.clone();
    super::blocking("edit_file", move || {
        open_existing(&confinement, &checked).map(drop)
    })
    .await?;
    let old_content = super::held::read(&files, &path, &ctx.cancel).await?;
    let (new_content, count) = replaced(&old_content, &path, &params)?;
    super::held::write(&files, &path, new_content.clone(), &ctx.cancel).await?;
    Ok(report(&path, &old_content, &new_content, count, max_bytes))
}

fn edit(
    confinement: &Confinement,
    path: &Path,
    params: &Params,
    max_bytes: usize,
) -> Result<ToolOutput, ToolError> {
    let opened = open_existing(confinement, path)?;
    let mut bytes = Vec::new();
    opened
        .read()?
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", path, e))?;
    let Ok(old_content) = String::from_utf8(bytes) else {
        return Err(ToolError::failed(format!(
            "{} is not valid UTF-8 text; edit_file only edits text files",
            path.display()
        )));
    };
    let (new_content, count) = replaced(&old_content, path, params)?;
    opened
        .overwrite()?
        .write_all(new_content.as_bytes())
        .map_err(|e| ToolError::io("write", path, e))?;
    Ok(report(path, &old_content, &new_content, count, max_bytes))
}

/// The existing regular file at `path`, checked against the roots.
fn open_existing(confinement: &Confinement, path: &Path) -> Result<Opened, ToolError> {
    let Some(opened) = confinement.open(path, "edit")? else {
        return Err(ToolError::failed(format!(
            "file not found: {}; edit_file only changes existing files (use write_file to \
             create one)",
            path.display()
        )));
    };
    match opened.kind {
        Kind::RegularFile => {}
        Kind::Directory => {
            return Err(ToolError::failed(format!(
                "{} is a directory, not a file; edit_file needs the path of a file",
                path.display()
            )));
        }
        Kind::Special => return Err(special_file(path, "edit_file", "edits")),
    }
    Ok(opened)
}

/// `old_content` with the edit made, and how many replacements it took;
/// refused when `old_string` is missing or (without `replace_all`) not
/// unique.
fn replaced(old_content: &str, path: &Path, params: &Params) -> Result<(String, usize), ToolError> {
    let (old_string, new_string) = match_line_endings(old_content, params);
    let count = old_content.matches(old_string.as_str()).count();
    if count == 0 {
        return Err(ToolError::failed(format!(
            "old_string not found in {}; it must match the file exactly, including whitespace \
             and indentation (read the file again to copy the current text)",
            path.display()
        )));
    }
    if count > 1 && !params.replace_all {
        return Err(ToolError::failed(format!(
            "old_string occurs {count} times in {}; add surrounding context to old_string so it \
             matches exactly one place, or set replace_all to true to replace all {count}",
            path.display()
        )));
    }
    let new_content = if params.replace_all {
        old_content.replace(&old_string, &new_string)
    } else {
        old_content.replacen(&old_string, &new_string, 1)
    };
    Ok((new_content, count))
}

/// What the model reads after an edit: the count and the diff.
fn report(
    path: &Path,
    old_content: &str,
    new_content: &str,
    count: usize,
    max_bytes: usize,
) -> ToolOutput {
    let shown = path.display().to_string();
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old_content, new_content);
    let diff = diff
        .unified_diff()
        .context_radius(DIFF_CONTEXT_LINES)
        .header(&shown, &shown)
        .to_string();
    let noun = if count == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let summary = format!("Edited {shown}: {count} {noun}.\n\n");
    let budget = max_bytes.saturating_sub(summary.len());
    ToolOutput::ok(format!("{summary}{}", truncate_middle(&diff, budget)))
}

/// The strings to search for and insert. read_file shows lines without their
/// `\r`, so in a file with CRLF line endings a multi-line `old_string` quoted
/// from it only matches with `\n` turned back into `\r\n`; that form (and the
/// same for `new_string`, keeping the file's line endings) is used when the
/// string as given does not occur.
fn match_line_endings(content: &str, params: &Params) -> (String, String) {
    let as_given = (params.old_string.clone(), params.new_string.clone());
    if !params.old_string.contains('\n')
        || params.old_string.contains("\r\n")
        || !content.contains("\r\n")
        || content.contains(params.old_string.as_str())
    {
        return as_given;
    }
    let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    let old = crlf(&params.old_string);
    if content.contains(old.as_str()) {
        (old, crlf(&params.new_string))
    } else {
        as_given
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), content).unwrap();
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    fn contents(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap()
    }

    #[tokio::test]
    async fn edit_file_replaces_a_unique_string_and_shows_a_diff() {
        let (dir, ctx) = setup("one\ntwo\nthree\nfour\n");
        let out = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "two", "new_string": "TWO"}),
                ctx,
            )
            .await
            .unwrap();
        assert!(!out.is_error);
        assert_eq!(contents(&dir), "one\nTWO\nthree\nfour\n");
        assert!(out.text.contains("1 replacement."), "{}", out.text);
        assert!(out.text.contains("@@"), "{}", out.text);
        assert!(out.text.contains("\n-two\n+TWO\n"), "{}", out.text);
        assert!(
            out.text.contains("\n one\n"),
            "context line missing: {}",
            out.text
        );
    }

    #[tokio::test]
    async fn edit_file_refuses_ambiguous_old_string() {
        let (dir, ctx) = setup("x = 1\nx = 1\nx = 1\n");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "x = 1", "new_string": "x = 2"}),
                ctx,
            )
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("3 times"), "{msg}");
        assert!(msg.contains("replace_all"), "{msg}");
        assert!(msg.contains("context"), "{msg}");
        assert_eq!(contents(&dir), "x = 1\nx = 1\nx = 1\n");
    }

    #[tokio::test]
    async fn edit_file_replace_all_replaces_every_occurrence() {
        let (dir, ctx) = setup("foo bar foo\nfoo\n");
        let out = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "foo", "new_string": "baz", "replace_all": true}),
                ctx,
            )
            .await
            .unwrap();
        assert!(out.text.contains("3 replacements"), "{}", out.text);
        assert_eq!(contents(&dir), "baz bar baz\nbaz\n");
    }

    #[tokio::test]
    async fn edit_file_reports_old_string_not_found() {
        let (dir, ctx) = setup("hello\n");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "bye", "new_string": "x"}),
                ctx,
            )
            .await
            .unwrap_err();
        let expected = format!(
            "old_string not found in {}",
            dir.path().join("f.txt").display()
        );
        assert!(err.to_string().contains(&expected), "{err}");
    }

    #[tokio::test]
    async fn edit_file_refuses_empty_old_string() {
        let (dir, ctx) = setup("hello\n");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "", "new_string": "x"}),
                ctx,
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("old_string is empty"), "{err}");
        assert_eq!(contents(&dir), "hello\n");
    }

    #[tokio::test]
    async fn edit_file_refuses_identical_old_and_new_string() {
        let (_dir, ctx) = setup("hello\n");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "hello", "new_string": "hello"}),
                ctx,
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("identical"), "{err}");
    }

    #[tokio::test]
    async fn edit_file_refuses_a_missing_file_and_paths_outside_the_workspace() {
        let (_dir, ctx) = setup("hello\n");
        let err = EditFile
            .call(
                json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
                ctx.clone(),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("write_file"), "{err}");
        let err = EditFile
            .call(
                json!({"path": "../x.txt", "old_string": "a", "new_string": "b"}),
                ctx,
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }

    #[tokio::test]
    async fn edit_file_truncates_a_large_diff_to_the_output_limit() {
        let (_dir, mut ctx) = setup(&"a\n".repeat(5000));
        ctx.max_output_bytes = 500;
        let out = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": true}),
                ctx,
            )
            .await
            .unwrap();
        assert!(out.text.contains("5000 replacements"), "{}", out.text);
        assert!(out.text.contains("truncated"), "{}", out.text);
        assert!(out.text.len() < 700, "{}", out.text.len());
    }

    #[tokio::test]
    async fn edit_file_matches_lines_quoted_without_carriage_returns_in_a_crlf_file() {
        let (dir, ctx) = setup("one\r\ntwo\r\nthree\r\n");
        let out = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n"}),
                ctx,
            )
            .await
            .unwrap();
        assert!(out.text.contains("1 replacement"), "{}", out.text);
        assert_eq!(contents(&dir), "1\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn edit_file_rejects_unknown_fields_and_wrong_types() {
        let (_dir, ctx) = setup("hello\n");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old": "hello", "new_string": "x"}),
                ctx.clone(),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "hello", "new_string": "x", "replace_all": "yes"}),
                ctx,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains("replace_all"), "{err}");
    }

    #[tokio::test]
    async fn edit_file_refuses_a_symlink_leading_outside_unless_granted() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let target = outer.path().join("target.txt");
        std::fs::write(&target, "old\n").unwrap();
        std::os::unix::fs::symlink(&target, ws.join("link")).unwrap();
        let mut ctx = ToolContext::new(&ws);
        let args = json!({"path": "link", "old_string": "old", "new_string": "new"});
        let err = EditFile
            .call(args.clone(), ctx.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing to edit"), "{err}");
        assert!(err.contains("it leads to"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
        ctx.grant.outside_roots = true;
        EditFile.call(args, ctx).await.unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
    }

    #[tokio::test]
    async fn edit_file_refuses_everything_in_plan_mode() {
        let (dir, mut ctx) = setup("old\n");
        ctx.grant.read_only = true;
        let err = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "old", "new_string": "new"}),
                ctx,
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("plan mode is read-only"), "{err}");
        assert_eq!(contents(&dir), "old\n");
    }
}
