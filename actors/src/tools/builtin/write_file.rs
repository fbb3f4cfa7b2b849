//! The `write_file` tool: writes a whole file, creating parent directories as
//! needed, and reports whether it created or overwrote it.
//!
//! It must never write outside the workspace and the write roots (checked
//! on what it opens, `tools/confine.rs`) unless granted, never write in
//! plan mode (`Grant::read_only`), and never replace a directory. When a
//! front end holds the files (`tools/files.rs`), the text is written
//! through it, after the path was checked on the disk like any other.

use super::found::{plan_mode_refusal, special_file};
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::tools::confine::{Confinement, Kind};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::Write;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct WriteFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Path of the file to write, absolute or relative to the workspace. It
    /// must be inside the workspace (or a write root). Missing parent
    /// directories are created.
    pub path: String,
    /// The complete new content of the file (not a diff or an excerpt).
    pub content: String,
}

impl BuiltinTool for WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Write a file in the workspace, replacing it entirely \
        if it exists. The path may be absolute or relative to the workspace but must be inside \
        it; missing parent directories are created. `content` is the complete new file, so \
        when changing part of an existing file prefer edit_file, which cannot lose the rest of \
        it; if you do overwrite an existing file, read it with read_file first. \
        Reports whether the file was created or overwritten and how many bytes were written.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        write_file(params, ctx)
    }
}

async fn write_file(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let path = ctx.resolve(&params.path);
    if ctx.grant.read_only {
        return Err(plan_mode_refusal("write", &path));
    }
    let confinement = Confinement::of(&ctx);
    let Some(files) = ctx.files.held().cloned() else {
        return super::blocking("write_file", move || {
            write(&confinement, &path, params.content.as_bytes())
        })
        .await;
    };
    let checked = path.clone();
    let existed = super::blocking("write_file", move || check(&confinement, &checked)).await?;
    let bytes = params.content.len();
    super::held::write(&files, &path, params.content, &ctx.cancel).await?;
    Ok(written(&path, bytes, existed))
}

/// Whether `path` may be written (an existing regular file, or a new file
/// where it may be created); `true` when it exists.
fn check(confinement: &Confinement, path: &Path) -> Result<bool, ToolError> {
    match confinement.open(path, "write")? {
        Some(opened) => match opened.kind {
            Kind::RegularFile => Ok(true),
            Kind::Directory => Err(ToolError::failed(format!(
                "{} is a directory; write_file needs a file path",
                path.display()
            ))),
            Kind::Special => Err(special_file(path, "write_file", "writes")),
        },
        None => confinement.check_new(path, "write").map(|()| false),
    }
}

fn write(confinement: &Confinement, path: &Path, content: &[u8]) -> Result<ToolOutput, ToolError> {
    let (mut file, existed) = match confinement.open(path, "write")? {
        Some(opened) => match opened.kind {
            Kind::RegularFile => (opened.overwrite()?, true),
            Kind::Directory => {
                return Err(ToolError::failed(format!(
                    "{} is a directory; write_file needs a file path",
                    path.display()
                )));
            }
            Kind::Special => return Err(special_file(path, "write_file", "writes")),
        },
        None => (confinement.create_new(path, "write")?, false),
    };
    file.write_all(content)
        .map_err(|e| ToolError::io("write", path, e))?;
    Ok(written(path, content.len(), existed))
}

/// What the model reads after a write.
fn written(path: &Path, bytes: usize, existed: bool) -> ToolOutput {
    let verb = if existed { "Overwrote" } else { "Created" };
    ToolOutput::ok(format!("{verb} {} ({bytes} bytes)", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    #[tokio::test]
    async fn write_file_creates_parent_directories_and_reports_created() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = WriteFile
            .call(json!({"path": "a/b/c.txt", "content": "hello"}), ctx)
            .await
            .unwrap();
        assert!(!out.is_error);
        assert!(out.text.starts_with("Created"), "{}", out.text);
        assert!(out.text.contains("5 bytes"), "{}", out.text);
        let written = std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap();
        assert_eq!(written, "hello");
    }

    #[tokio::test]
    async fn write_file_reports_overwriting_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "old content").unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = WriteFile
            .call(json!({"path": "f.txt", "content": "new"}), ctx)
            .await
            .unwrap();
        assert!(out.text.starts_with("Overwrote"), "{}", out.text);
        assert!(out.text.contains("3 bytes"), "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "new"
        );
    }

    #[tokio::test]
    async fn write_file_refuses_a_path_outside_the_workspace() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ctx = ToolContext::new(&ws);
        let err = WriteFile
            .call(
                json!({"path": "../escape.txt", "content": "x"}),
                ctx.clone(),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        assert!(!outer.path().join("escape.txt").exists());
        let abs = outer.path().join("abs.txt");
        let err = WriteFile
            .call(json!({"path": abs, "content": "x"}), ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        assert!(!abs.exists());
    }

    #[tokio::test]
    async fn write_file_refuses_to_replace_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = WriteFile
            .call(json!({"path": "sub", "content": "x"}), ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[tokio::test]
    async fn write_file_rejects_unknown_fields_and_wrong_types() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = WriteFile
            .call(
                json!({"path": "a", "content": "x", "mode": "append"}),
                ctx.clone(),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        let err = WriteFile
            .call(json!({"path": "a", "content": 42}), ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains("content"), "{err}");
        assert!(!dir.path().join("a").exists());
    }

    #[tokio::test]
    async fn write_file_refuses_to_write_through_a_symlink_leading_outside_unless_granted() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let target = outer.path().join("target.txt");
        std::fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, ws.join("link")).unwrap();
        std::os::unix::fs::symlink(outer.path(), ws.join("up")).unwrap();
        let mut ctx = ToolContext::new(&ws);
        for path in ["link", "up/new.txt", "up/deeper/new.txt"] {
            let err = WriteFile
                .call(json!({"path": path, "content": "x"}), ctx.clone())
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("refusing to write"), "{path}: {err}");
            assert!(err.contains("outside the workspace"), "{path}: {err}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(!outer.path().join("new.txt").exists());
        assert!(!outer.path().join("deeper").exists());

        ctx.grant.outside_roots = true;
        let out = WriteFile
            .call(json!({"path": "link", "content": "granted"}), ctx)
            .await
            .unwrap();
        assert!(out.text.starts_with("Overwrote"), "{}", out.text);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "granted");
    }

    #[tokio::test]
    async fn write_file_writes_in_a_write_root() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        let shared = outer.path().join("shared");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&shared).unwrap();
        let mut ctx = ToolContext::new(&ws);
        ctx.sandbox.write_roots = vec!["../shared".into()];
        let out = WriteFile
            .call(json!({"path": "../shared/new/f.txt", "content": "x"}), ctx)
            .await
            .unwrap();
        assert!(out.text.starts_with("Created"), "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(shared.join("new/f.txt")).unwrap(),
            "x"
        );
    }

    #[tokio::test]
    async fn write_file_refuses_everything_in_plan_mode() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path());
        ctx.grant.read_only = true;
        let err = WriteFile
            .call(json!({"path": "f.txt", "content": "x"}), ctx)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("plan mode is read-only"), "{err}");
        assert!(!dir.path().join("f.txt").exists());
    }
}
