//! Reading the Markdown files a session takes definitions from — agent
//! files (`agent_files`) and command files (`command_files`): which `*.md`
//! files a folder holds, and one file's text. What cannot be read is an
//! error sentence the caller turns into a problem naming the file; a
//! missing folder holds nothing.

use std::path::{Path, PathBuf};

/// Files larger than this are not read (a prompt, not a book).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// How deep `list` looks into subfolders (a command's namespace).
const MAX_DEPTH: usize = 4;

/// The `*.md` files of `dir` in name order — with `subfolders`, those of
/// its subfolders too (not hidden ones, at most a few levels down), each
/// after the files beside it. A missing folder holds none; one that cannot
/// be read is a problem.
pub fn list(dir: &Path, subfolders: bool, problems: &mut Vec<String>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(
        dir,
        if subfolders { MAX_DEPTH } else { 0 },
        &mut found,
        problems,
    );
    found
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>, problems: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            problems.push(format!("{}: the folder cannot be read: {e}", dir.display()));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let mut folders = Vec::new();
    for path in paths {
        if path.extension().is_some_and(|ext| ext == "md") && !path.is_dir() {
            found.push(path);
        } else if depth > 0
            && path.is_dir()
            && !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            folders.push(path);
        }
    }
    for folder in folders {
        walk(&folder, depth - 1, found, problems);
    }
}

/// The text of the file at `path`: a UTF-8 file of at most
/// [`MAX_FILE_BYTES`].
pub fn read_text(path: &Path) -> Result<String, String> {
    let metadata = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !metadata.is_file() {
        return Err("not a file".into());
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} bytes, more than the {} KiB such a file may have",
            metadata.len(),
            MAX_FILE_BYTES / 1024
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_files_are_listed_in_order_with_subfolders_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for file in ["b.md", "a.md", "notes.txt", "sub/c.md", ".hidden/d.md"] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let mut problems = Vec::new();
        let names = |paths: Vec<PathBuf>| -> Vec<String> {
            paths
                .iter()
                .map(|p| p.strip_prefix(root).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(names(list(root, false, &mut problems)), ["a.md", "b.md"]);
        assert_eq!(
            names(list(root, true, &mut problems)),
            ["a.md", "b.md", "sub/c.md"]
        );
        assert!(list(&root.join("missing"), true, &mut problems).is_empty());
        assert!(problems.is_empty(), "{problems:?}");
    }
}
