//! The `read_file` tool: shows a text file (or a window of its lines) with
//! line numbers, like `cat -n`.
//!
//! It must never modify anything, never dump binary data into the
//! conversation, and never return more than the output limit: long lines are
//! cut, and when lines remain unread the output says which `offset` reads on.
//! When a front end holds the files (`tools/files.rs`), the text comes from
//! it, after the path was checked on the disk like any other.

use super::found::special_file;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::confine::{Confinement, Kind};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Lines shown when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Lines longer than this many characters are cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// A file with a NUL byte in its first this-many bytes is treated as binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Clone, Debug)]
pub struct ReadFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Path of the file to read, absolute or relative to the workspace.
    pub path: String,
    /// 1-based number of the first line to show (default 1). Use it with
    /// `limit` to read a large file in parts.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Maximum number of lines to show (default 2000).
    #[serde(default)]
    pub limit: Option<usize>,
}

impl BuiltinTool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file from the local file system. \
        The path may be absolute or relative to the workspace. \
        By default it shows up to 2000 lines from the start of the file; for large files, \
        pass `offset` (1-based first line) and `limit` (number of lines) to read a part, and \
        when lines remain the output ends with a note giving the `offset` to read on from. \
        Lines are numbered like `cat -n` (line number, tab, line); the numbers are not part of \
        the file, so leave them out when quoting text for edit_file. \
        Lines longer than 2000 characters are cut. Binary files are refused; to see what is \
        in a directory use list_dir instead.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        read_file(params, ctx)
    }
}

async fn read_file(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ToolError::InvalidArguments {
            tool: ReadFile::NAME.to_string(),
            detail: "`limit` must be at least 1 (it is the number of lines to show)".into(),
        });
    }
    // Line numbers are 1-based; treat 0 as "from the start" rather than failing.
    let offset = params.offset.unwrap_or(1).max(1);
    let path = ctx.resolve(&params.path);
    let max_bytes = ctx.max_output_bytes;
    let confinement = Confinement::of(&ctx);
    let Some(files) = ctx.files.held().cloned() else {
        return super::blocking("read_file", move || {
            let file = open_text(&confinement, &path)?;
            read_lines(file, &path, offset, limit, max_bytes)
        })
        .await;
    };
    let checked = path.clone();
    super::blocking("read_file", move || {
        open_text(&confinement, &checked).map(drop)
    })
    .await?;
    let text = super::held::read(&files, &path, &ctx.cancel).await?;
    read_lines(text.as_bytes(), &path, offset, limit, max_bytes)
}

/// The regular file at `path`, opened for reading after its real location
/// was checked against the roots.
fn open_text(confinement: &Confinement, path: &Path) -> Result<std::fs::File, ToolError> {
    let Some(opened) = confinement.open(path, "read")? else {
        return Err(ToolError::failed(format!(
            "file not found: {} (check the path; relative paths resolve against the workspace)",
            path.display()
        )));
    };
    match opened.kind {
        Kind::RegularFile => {}
        Kind::Directory => {
            return Err(ToolError::failed(format!(
                "{} {}; use list_dir to see its contents",
                path.display(),
                crate::model::NOT_A_FILE
            )));
        }
        Kind::Special => return Err(special_file(path, "read_file", "reads")),
    }
    opened.read()
}

/// The lines of `file` as `read_file` shows them.
fn read_lines(
    mut file: impl Read,
    path: &Path,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<ToolOutput, ToolError> {
    // Binary check on the first 8 KiB (chained back in front for reading).
    let mut sniff = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)
        .map_err(|e| ToolError::io("read", path, e))?;
    if sniff.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "(file {} is empty)",
            path.display()
        )));
    }
    if sniff.contains(&0) {
        return Err(ToolError::failed(format!(
            "{} looks like a binary file (it contains NUL bytes); read_file only shows text files",
            path.display()
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(sniff).chain(file));

    let mut out = String::new();
    let mut line_no = 0usize; // number of the last line read
    let mut shown = 0usize;
    let mut next_unshown: Option<usize> = None; // first line not shown, if any remain
    let mut stopped_for_size = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| ToolError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if shown == limit {
            next_unshown = Some(line_no);
            break;
        }
        let entry = format_line(line_no, &buf);
        if shown > 0 && out.len() + entry.len() > max_bytes {
            next_unshown = Some(line_no);
            stopped_for_size = true;
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }

    if shown == 0 {
        // The loop only ends with nothing shown when the file has fewer lines
        // than `offset` (a non-empty file has at least one line).
        return Err(ToolError::failed(format!(
            "offset {offset} is past the end of {}: it has {line_no} line{}",
            path.display(),
            if line_no == 1 { "" } else { "s" }
        )));
    }
    if let Some(next) = next_unshown {
        let total = count_remaining_lines(&mut reader).map(|rest| next + rest);
        let last = next - 1;
        let of_total = match total {
            Some(t) => format!(" of {t}"),
            None => String::new(),
        };
        let why = if stopped_for_size {
            " (output size limit reached)"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n[Showing lines {offset}-{last}{of_total}{why}. {}: \
             to read on, call read_file with offset={next}.]\n",
            crate::model::MORE_LINES_REMAIN
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// One output line: right-aligned number, tab, the line (without its line
/// ending, cut to [`MAX_LINE_CHARS`] characters), newline.
fn format_line(line_no: usize, raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let char_count = text.chars().count();
    if char_count > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!(
            "{line_no:>6}\t{cut} [... line cut: {} more characters]\n",
            char_count - MAX_LINE_CHARS
        )
    } else {
        format!("{line_no:>6}\t{text}\n")
    }
}

/// Lines left in `reader` (counting a final line without a newline), or
/// `None` if reading fails part way.
fn count_remaining_lines(reader: &mut impl BufRead) -> Option<usize> {
    let mut lines = 0usize;
    let mut ends_with_newline = true;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        if chunk.is_empty() {
            break;
        }
        lines += chunk.iter().filter(|b| **b == b'\n').count();
        ends_with_newline = chunk.last() == Some(&b'\n');
        let len = chunk.len();
        reader.consume(len);
    }
    // The line in progress when we stopped was already counted by the caller,
    // so a trailing partial line adds one only if something followed the
    // last newline.
    Some(if ends_with_newline { lines } else { lines + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    async fn read(ctx: &ToolContext, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ReadFile.call(args, ctx.clone()).await
    }

    #[tokio::test]
    async fn read_file_numbers_lines_like_cat_n() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\r\ngamma").unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = read(&ctx, json!({"path": "a.txt"})).await.unwrap();
        assert!(!out.is_error);
        assert_eq!(out.text, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    }

    #[tokio::test]
    async fn read_file_offset_and_limit_select_a_window_and_say_how_to_read_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.txt"), numbered(10)).unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = read(&ctx, json!({"path": "n.txt", "offset": 3, "limit": 4}))
            .await
            .unwrap();
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines[0], "     3\tline 3");
        assert_eq!(lines[3], "     6\tline 6");
        assert!(!out.text.contains("line 7\n"), "{}", out.text);
        assert!(out.text.contains("lines 3-6 of 10"), "{}", out.text);
        assert!(out.text.contains("offset=7"), "{}", out.text);
    }

    #[tokio::test]
    async fn read_file_defaults_to_2000_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.txt"), numbered(2500)).unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_output_bytes = usize::MAX;
        let out = read(&ctx, json!({"path": "big.txt"})).await.unwrap();
        assert!(out.text.contains("  2000\tline 2000\n"));
        assert!(!out.text.contains("\tline 2001\n"));
        assert!(out.text.contains("offset=2001"), "{}", out.text);
    }

    #[tokio::test]
    async fn read_file_stops_at_the_output_limit_and_says_where_to_read_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.txt"), numbered(1000)).unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.max_output_bytes = 200;
        let out = read(&ctx, json!({"path": "big.txt"})).await.unwrap();
        assert!(out.text.contains("output size limit"), "{}", out.text);
        let next = out.text.split("offset=").nth(1).unwrap();
        let next: usize = next
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap();
        assert!(
            out.text
                .contains(&format!("{:>6}\tline {}\n", next - 1, next - 1))
        );
        assert!(!out.text.contains(&format!("\tline {next}\n")));
    }

    #[tokio::test]
    async fn read_file_cuts_very_long_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("long.txt"), "x".repeat(5000)).unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = read(&ctx, json!({"path": "long.txt"})).await.unwrap();
        assert!(
            out.text.contains("line cut: 3000 more characters"),
            "{}",
            out.text
        );
        assert!(out.text.len() < 2100);
    }

    #[tokio::test]
    async fn read_file_says_an_empty_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = read(&ctx, json!({"path": "empty.txt"})).await.unwrap();
        assert!(out.text.contains("is empty"), "{}", out.text);
    }

    #[tokio::test]
    async fn read_file_refuses_binary_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin"), b"ELF\x00\x01\x02").unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "bin"})).await.unwrap_err();
        assert!(err.to_string().contains("binary"), "{err}");
    }

    #[tokio::test]
    async fn read_file_missing_file_error_names_the_resolved_path() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "sub/../nope.txt"}))
            .await
            .unwrap_err();
        let expected = dir.path().join("nope.txt");
        assert!(
            err.to_string().contains(&expected.display().to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("not found"), "{err}");
    }

    #[tokio::test]
    async fn read_file_on_a_directory_suggests_list_dir() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "."})).await.unwrap_err();
        assert!(err.to_string().contains("list_dir"), "{err}");
    }

    #[tokio::test]
    async fn read_file_refuses_special_files_instead_of_blocking_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        crate::tools::test_tools::make_fifo(&fifo);
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "pipe"})).await.unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[tokio::test]
    async fn read_file_offset_past_the_end_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.txt"), numbered(3)).unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "n.txt", "offset": 10}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("has 3 lines"), "{err}");
    }

    #[tokio::test]
    async fn read_file_rejects_unknown_fields_and_wrong_types() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = read(&ctx, json!({"path": "a", "lines": 3}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains("lines"), "{err}");
        let err = read(&ctx, json!({"path": "a", "offset": "3"}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains("offset"), "{err}");
        let err = read(&ctx, json!({})).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    }

    #[test]
    fn read_file_schema_documents_every_parameter() {
        let schema = crate::tools::builtin::typed::schema_of::<Params>();
        for field in ["path", "offset", "limit"] {
            let desc = &schema["properties"][field]["description"];
            assert!(desc.is_string(), "{field} has no description: {schema}");
        }
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["required"], json!(["path"]));
    }

    /// A workspace inside `outer`, and a file `secret.txt` beside it.
    fn workspace_beside_a_secret() -> (tempfile::TempDir, std::path::PathBuf) {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(outer.path().join("secret.txt"), "secret\n").unwrap();
        (outer, ws)
    }

    #[tokio::test]
    async fn read_file_refuses_files_outside_the_workspace_unless_granted() {
        let (_outer, ws) = workspace_beside_a_secret();
        let mut ctx = ToolContext::new(&ws);
        let err = read(&ctx, json!({"path": "/etc/hostname"}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "refusing to read /etc/hostname: it is outside the workspace {}",
                ws.display()
            )),
            "{err}"
        );
        let err = read(&ctx, json!({"path": "../secret.txt"}))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside the workspace"), "{err}");

        ctx.grant.outside_roots = true;
        let out = read(&ctx, json!({"path": "/etc/hostname"})).await.unwrap();
        assert!(out.text.starts_with("     1\t"), "{}", out.text);
        let out = read(&ctx, json!({"path": "../secret.txt"})).await.unwrap();
        assert_eq!(out.text, "     1\tsecret\n");
    }

    #[tokio::test]
    async fn read_file_refuses_a_symlink_leading_out_of_the_workspace_unless_granted() {
        let (outer, ws) = workspace_beside_a_secret();
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("etc")).unwrap();
        let mut ctx = ToolContext::new(&ws);
        for path in ["link", "etc/hostname"] {
            let err = read(&ctx, json!({"path": path}))
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("refusing to read"), "{err}");
            assert!(err.contains("it leads to"), "{err}");
            assert!(!err.contains("secret\n"), "{err}");
        }
        ctx.grant.outside_roots = true;
        let out = read(&ctx, json!({"path": "link"})).await.unwrap();
        assert_eq!(out.text, "     1\tsecret\n");
    }

    #[tokio::test]
    async fn read_file_reads_in_a_write_root_and_through_links_inside_the_workspace() {
        let (outer, ws) = workspace_beside_a_secret();
        std::fs::write(ws.join("real.txt"), "inside\n").unwrap();
        std::os::unix::fs::symlink("real.txt", ws.join("alias")).unwrap();
        let mut ctx = ToolContext::new(&ws);
        let out = read(&ctx, json!({"path": "alias"})).await.unwrap();
        assert_eq!(out.text, "     1\tinside\n");
        ctx.sandbox.write_roots = vec![outer.path().to_path_buf()];
        let out = read(&ctx, json!({"path": "../secret.txt"})).await.unwrap();
        assert_eq!(out.text, "     1\tsecret\n");
    }
}
