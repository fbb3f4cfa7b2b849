//! Reading and writing through a front end that holds the files
//! (`tools/files.rs`), as `read_file`, `write_file` and `edit_file` do it:
//! the path already checked on the disk, the call abandoned when it is
//! cancelled, and a refusal worded for the model.
//!
//! It never checks a path itself: the tool does that first, with
//! `confine.rs`.

use crate::tools::{FileAccess, ToolError};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The text of `path` as the holder has it.
pub async fn read(
    files: &Arc<dyn FileAccess>,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    tokio::select! {
        read = files.read_text(path) => read.map_err(|e| refused(files, "read", path, e)),
        _ = cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

/// Replace the text of `path` through the holder.
pub async fn write(
    files: &Arc<dyn FileAccess>,
    path: &Path,
    text: String,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    tokio::select! {
        written = files.write_text(path, text) => written.map_err(|e| refused(files, "write", path, e)),
        _ = cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

fn refused(
    files: &Arc<dyn FileAccess>,
    action: &str,
    path: &Path,
    error: crate::tools::FileAccessError,
) -> ToolError {
    ToolError::failed(format!(
        "could not {action} {} through {}: {error}",
        path.display(),
        files.holder()
    ))
}

#[cfg(test)]
mod tests {
    use crate::tools::builtin::{edit_file::EditFile, read_file::ReadFile, write_file::WriteFile};
    use crate::tools::{FileAccess, FileAccessError, Files, Tool, ToolContext};
    use futures::future::BoxFuture;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    /// An editor's buffers: text by path, and every path it was asked for.
    #[derive(Default)]
    struct Buffers {
        text: Mutex<BTreeMap<PathBuf, String>>,
        asked: Mutex<Vec<PathBuf>>,
    }

    impl FileAccess for Buffers {
        fn holder(&self) -> &str {
            "the test editor"
        }

        fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, FileAccessError>> {
            self.asked.lock().unwrap().push(path.to_path_buf());
            let text = self.text.lock().unwrap().get(path).cloned();
            Box::pin(async move { text.ok_or_else(|| FileAccessError::new("no such buffer")) })
        }

        fn write_text(
            &self,
            path: &Path,
            text: String,
        ) -> BoxFuture<'static, Result<(), FileAccessError>> {
            self.asked.lock().unwrap().push(path.to_path_buf());
            self.text.lock().unwrap().insert(path.to_path_buf(), text);
            Box::pin(async { Ok(()) })
        }
    }

    fn held(dir: &Path) -> (Arc<Buffers>, ToolContext) {
        let buffers = Arc::new(Buffers::default());
        let mut ctx = ToolContext::new(dir);
        ctx.files = Files::Held(buffers.clone());
        (buffers, ctx)
    }

    #[tokio::test]
    async fn read_file_shows_the_holders_text_not_the_disks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "saved\n").unwrap();
        let (buffers, ctx) = held(dir.path());
        buffers
            .text
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved\nchanges\n".into());
        let out = ReadFile.call(json!({"path": "a.txt"}), ctx).await.unwrap();
        assert_eq!(out.text, "     1\tunsaved\n     2\tchanges\n");
    }

    #[tokio::test]
    async fn write_file_goes_to_the_holder_and_says_whether_the_file_existed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.txt"), "x").unwrap();
        let (buffers, ctx) = held(dir.path());
        let out = WriteFile
            .call(
                json!({"path": "sub/new.txt", "content": "fresh"}),
                ctx.clone(),
            )
            .await
            .unwrap();
        assert!(out.text.starts_with("Created"), "{}", out.text);
        assert!(
            !dir.path().join("sub").exists(),
            "nothing is made on the disk"
        );
        let out = WriteFile
            .call(json!({"path": "old.txt", "content": "new"}), ctx)
            .await
            .unwrap();
        assert!(out.text.starts_with("Overwrote"), "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("old.txt")).unwrap(),
            "x"
        );
        let text = buffers.text.lock().unwrap().clone();
        assert_eq!(text[&dir.path().join("sub/new.txt")], "fresh");
        assert_eq!(text[&dir.path().join("old.txt")], "new");
    }

    #[tokio::test]
    async fn edit_file_edits_the_holders_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "one two\n").unwrap();
        let (buffers, ctx) = held(dir.path());
        buffers
            .text
            .lock()
            .unwrap()
            .insert(path.clone(), "one two three\n".into());
        let out = EditFile
            .call(
                json!({"path": "f.txt", "old_string": "three", "new_string": "3"}),
                ctx,
            )
            .await
            .unwrap();
        assert!(out.text.contains("+one two 3"), "{}", out.text);
        assert_eq!(buffers.text.lock().unwrap()[&path], "one two 3\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one two\n");
    }

    #[tokio::test]
    async fn paths_outside_the_roots_never_reach_the_holder() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(outer.path().join("secret.txt"), "s").unwrap();
        let (buffers, ctx) = held(&ws);
        let read = ReadFile
            .call(json!({"path": "../secret.txt"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(read.to_string().contains("outside the workspace"), "{read}");
        let write = WriteFile
            .call(json!({"path": "../new.txt", "content": "x"}), ctx)
            .await
            .unwrap_err();
        assert!(
            write.to_string().contains("outside the workspace"),
            "{write}"
        );
        assert!(buffers.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn plan_mode_refuses_writes_before_asking_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let (buffers, mut ctx) = held(dir.path());
        ctx.grant.read_only = true;
        let err = WriteFile
            .call(json!({"path": "a.txt", "content": "x"}), ctx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("plan"), "{err}");
        assert!(buffers.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_refusal_of_the_holder_names_it_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "on disk").unwrap();
        let (_buffers, ctx) = held(dir.path());
        let err = ReadFile
            .call(json!({"path": "a.txt"}), ctx)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("through the test editor"), "{text}");
        assert!(
            text.contains("a.txt") && text.contains("no such buffer"),
            "{text}"
        );
    }
}
