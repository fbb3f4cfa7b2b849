//! The `list_dir` tool: lists the entries of one directory (not recursive),
//! sorted by name, directories marked with a trailing `/` and files with
//! their size.
//!
//! It must never modify anything, never descend into subdirectories, and
//! never list more than [`MAX_ENTRIES`] entries (the rest are counted).

use super::listing::Listing;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::confine::{Confinement, Kind};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;

/// At most this many entries are listed; the rest are only counted.
pub const MAX_ENTRIES: usize = 1000;

#[derive(Clone, Debug)]
pub struct ListDir;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Path of the directory to list, absolute or relative to the workspace
    /// (use "." for the workspace itself).
    pub path: String,
}

impl BuiltinTool for ListDir {
    const NAME: &'static str = "list_dir";
    const DESCRIPTION: &'static str = "List the entries of a directory (not recursive), sorted \
        by name, hidden files included. Directories end with `/`, files show their size in \
        bytes, symbolic links show their target (`name -> target`). The path may be absolute or \
        relative to the workspace; use \".\" for the workspace itself. At most 1000 entries are \
        shown. To find files by name across many directories use glob; to search file contents \
        use grep.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        list_dir(params, ctx)
    }
}

async fn list_dir(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let path = ctx.resolve(&params.path);
    let confinement = Confinement::of(&ctx);
    super::blocking("list_dir", move || list(&confinement, &path)).await
}

fn list(confinement: &Confinement, path: &Path) -> Result<ToolOutput, ToolError> {
    let Some(opened) = confinement.open(path, "list")? else {
        return Err(ToolError::failed(format!(
            "directory not found: {} (check the path; relative paths resolve against the \
             workspace)",
            path.display()
        )));
    };
    if opened.kind != Kind::Directory {
        return Err(ToolError::failed(format!(
            "{} is a file, not a directory; use read_file to read it",
            path.display()
        )));
    }
    // The directory that was checked, whatever the path names by now.
    let read =
        std::fs::read_dir(opened.access_path()).map_err(|e| ToolError::io("list", path, e))?;

    let mut entries: Vec<(String, String)> = Vec::new(); // (sort key, rendered line)
    let mut unreadable = 0usize;
    for entry in read {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let line = match entry.file_type() {
            Ok(t) if t.is_dir() => format!("{name}/"),
            Ok(t) if t.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(target) => {
                    // A link to a directory gets the `/` too: it can be listed.
                    let slash = if entry.path().is_dir() { "/" } else { "" };
                    format!("{name}{slash} -> {}", target.display())
                }
                Err(_) => format!("{name} -> (unreadable link)"),
            },
            Ok(t) if t.is_file() => match entry.metadata() {
                Ok(meta) => format!("{name} ({} bytes)", meta.len()),
                Err(_) => format!("{name} (size unknown)"),
            },
            Ok(_) => format!("{name} (special file)"),
            Err(_) => format!("{name} (type unknown)"),
        };
        entries.push((name, line));
    }
    entries.sort();

    let lines: Vec<String> = entries.into_iter().map(|(_, line)| line).collect();
    let out = Listing {
        empty: format!("(directory {} is empty)", path.display()),
        max: MAX_ENTRIES,
        more: "entries",
        hint: "use glob to find specific files",
        what: "entries",
    }
    .render(&lines, unreadable);
    Ok(ToolOutput::ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    #[tokio::test]
    async fn list_dir_sorts_entries_marks_directories_and_shows_sizes_and_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join(".env"), "X=1\n").unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("link")).unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = ListDir.call(json!({"path": "."}), ctx).await.unwrap();
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            ".env (4 bytes)\na.txt (0 bytes)\nb.txt (5 bytes)\nlink/ -> src\nsrc/\n"
        );
    }

    #[tokio::test]
    async fn list_dir_caps_the_listing_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_ENTRIES + 5) {
            std::fs::write(dir.path().join(format!("f{i:05}")), "").unwrap();
        }
        let ctx = ToolContext::new(dir.path());
        let out = ListDir.call(json!({"path": "."}), ctx).await.unwrap();
        assert_eq!(out.text.lines().count(), MAX_ENTRIES + 1);
        assert!(out.text.contains("f00999 (0 bytes)"));
        assert!(!out.text.contains("f01000"));
        assert!(
            out.text.contains("5 more entries not shown"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn list_dir_says_an_empty_directory_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = ListDir.call(json!({"path": "."}), ctx).await.unwrap();
        assert!(out.text.contains("is empty"), "{}", out.text);
    }

    #[tokio::test]
    async fn list_dir_errors_on_a_file_or_a_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "x").unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = ListDir
            .call(json!({"path": "f.txt"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("read_file"), "{err}");
        let err = ListDir
            .call(json!({"path": "missing"}), ctx)
            .await
            .unwrap_err();
        let expected = dir.path().join("missing").display().to_string();
        assert!(err.to_string().contains(&expected), "{err}");
    }

    #[tokio::test]
    async fn list_dir_rejects_unknown_fields_and_wrong_types() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = ListDir
            .call(json!({"path": ".", "recursive": true}), ctx.clone())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = ListDir.call(json!({"path": ["."]}), ctx).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    }

    #[tokio::test]
    async fn list_dir_refuses_directories_outside_the_workspace_unless_granted() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let mut ctx = ToolContext::new(dir.path());
        for path in ["/etc", "etc"] {
            let err = ListDir
                .call(json!({"path": path}), ctx.clone())
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("refusing to list"), "{path}: {err}");
        }
        ctx.grant.outside_roots = true;
        let out = ListDir.call(json!({"path": "etc"}), ctx).await.unwrap();
        assert!(out.text.contains("hostname"), "{}", out.text);
    }
}
