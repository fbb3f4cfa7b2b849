//! Paths as file rules see them.
//!
//! A call's path is made absolute against the workspace and lexically
//! normalised (`.` and `..` removed, as the file tools do before they open
//! anything): `src/../../etc/passwd` is `/etc/passwd`. Nothing here looks at
//! the file system — no `canonicalize`, no symlinks (those are checked when
//! a file is opened).
//!
//! A rule's glob is made absolute the same way: `~` and `~/…` are the home
//! directory, an absolute glob stays as it is, anything else is relative to
//! the workspace; its `.` and `..` are removed too. Globs are matched with
//! `globset`, `*` and `?` not crossing `/`, `**` any number of directories;
//! `dir/**` also names `dir` itself. A `..` after a wildcard never matches.

use globset::{GlobBuilder, GlobMatcher};
use std::path::{Component, Path, PathBuf};

/// `path` made absolute against `workspace` and lexically normalised.
pub(super) fn resolve(path: &str, workspace: &Path) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&workspace.join(path))
    }
}

/// `.` and `..` removed without looking at the file system (`..` at the
/// root stays at the root).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A rule's glob made absolute for one workspace and home.
#[derive(Clone, Debug)]
pub(super) struct AbsoluteGlob {
    matcher: GlobMatcher,
    /// For `…/**`, the glob without it (`dir/**` names `dir` too).
    tree_root: Option<GlobMatcher>,
    /// The directory the glob starts with, before any wildcard.
    base: PathBuf,
}

impl AbsoluteGlob {
    /// Whether `path` (absolute, normalised) is one the glob names.
    pub fn matches(&self, path: &Path) -> bool {
        self.matcher.is_match(path) || self.tree_root.as_ref().is_some_and(|m| m.is_match(path))
    }

    /// Whether a search of the directory `dir` reaches files the glob may
    /// name: the glob's fixed start lies inside `dir`.
    pub fn inside(&self, dir: &Path) -> bool {
        self.base.starts_with(dir)
    }
}

/// Checks a rule's glob on its own (at parse time).
pub(super) fn check(glob: &str) -> Result<(), String> {
    if glob.is_empty() {
        return Err("the path is empty".to_string());
    }
    if glob.starts_with('~') && glob != "~" && !glob.starts_with("~/") {
        return Err("`~user` is not supported: write `~/…` or an absolute path".to_string());
    }
    absolute(glob, Path::new("/workspace"), Path::new("/home")).map(|_| ())
}

/// `glob` made absolute: `~` is `home`, a relative glob is under
/// `workspace`.
pub(super) fn absolute(glob: &str, workspace: &Path, home: &Path) -> Result<AbsoluteGlob, String> {
    let (base, rest) = if glob == "~" {
        (home, "")
    } else if let Some(rest) = glob.strip_prefix("~/") {
        (home, rest)
    } else if let Some(rest) = glob.strip_prefix('/') {
        (Path::new("/"), rest)
    } else {
        (workspace, glob)
    };
    let mut base = normalize(base);
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                None => {
                    base.pop();
                }
                Some(last) if *last != ".." && !has_meta(last) => {
                    parts.pop();
                }
                Some(_) => parts.push(".."),
            },
            part => parts.push(part),
        }
    }
    let fixed = parts.iter().take_while(|p| !has_meta(p)).count();
    for part in &parts[..fixed] {
        base.push(part);
    }
    let rest = &parts[fixed..];
    let base_pattern = escape(&base.to_string_lossy());
    let pattern = if rest.is_empty() {
        base_pattern.clone()
    } else {
        format!("{}/{}", base_pattern.trim_end_matches('/'), rest.join("/"))
    };
    let tree_root = match rest.split_last() {
        Some((&"**", [])) => Some(compile(&base_pattern)?),
        Some((&"**", parent)) => Some(compile(&format!(
            "{}/{}",
            base_pattern.trim_end_matches('/'),
            parent.join("/")
        ))?),
        _ => None,
    };
    Ok(AbsoluteGlob {
        matcher: compile(&pattern)?,
        tree_root,
        base,
    })
}

/// The glob naming exactly `path`: relative to the workspace when inside
/// it, absolute otherwise, its wildcard characters escaped.
pub(super) fn exact_glob(path: &Path, workspace: &Path) -> String {
    match path.strip_prefix(normalize(workspace)) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => {
            let glob = escape(&relative.to_string_lossy());
            // A leading `~` would read as the home directory.
            match glob.strip_prefix('~') {
                Some(rest) => format!("\\~{rest}"),
                None => glob,
            }
        }
        Err(_) => escape(&path.to_string_lossy()),
    }
}

fn compile(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob: {}", e.kind()))
}

/// Whether a part of a glob is a pattern rather than a fixed name.
fn has_meta(part: &str) -> bool {
    part.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// `text` with every glob metacharacter escaped by a backslash.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const WS: &str = "/work/space";
    const HOME: &str = "/home/me";

    fn matches(glob: &str, path: &str) -> bool {
        let glob = absolute(glob, Path::new(WS), Path::new(HOME)).expect("glob");
        glob.matches(&resolve(path, Path::new(WS)))
    }

    #[test]
    fn call_paths_are_resolved_lexically() {
        let ws = Path::new(WS);
        assert_eq!(resolve("src/a.rs", ws), Path::new("/work/space/src/a.rs"));
        assert_eq!(resolve("./src/../b", ws), Path::new("/work/space/b"));
        assert_eq!(
            resolve("src/../../../etc/passwd", ws),
            Path::new("/etc/passwd")
        );
        assert_eq!(resolve("/../../etc", ws), Path::new("/etc"));
        assert_eq!(resolve("/tmp/./x", ws), Path::new("/tmp/x"));
        // The tools do not expand `~`, so neither does the matcher.
        assert_eq!(resolve("~/x", ws), Path::new("/work/space/~/x"));
        assert_eq!(resolve(".", ws), Path::new(WS));
    }

    #[test]
    fn double_star_crosses_directories_single_does_not() {
        assert!(matches("src/**", "src/a.rs"));
        assert!(matches("src/**", "src/deep/er/a.rs"));
        assert!(matches("src/**", "src"));
        assert!(!matches("src/**", "srcx/a.rs"));
        assert!(!matches("src/**", "other/src/a.rs"));
        assert!(matches("docs/*.md", "docs/a.md"));
        assert!(!matches("docs/*.md", "docs/sub/a.md"));
        assert!(matches("**/*.md", "docs/sub/a.md"));
        assert!(matches("**/*.md", "a.md"));
        assert!(matches("src/**/mod.rs", "src/a/b/mod.rs"));
        assert!(matches("*/**", "a/b"));
        assert!(matches("*/**", "a"));
    }

    #[test]
    fn dot_dot_cannot_escape_the_workspace() {
        assert!(!matches("src/**", "src/../../etc/passwd"));
        assert!(!matches("src/**", "src/../Cargo.toml"));
        assert!(matches("src/**", "lib/../src/x.rs"));
        assert!(matches("**", "a/b"));
        assert!(!matches("**", "../outside"));
        assert!(!matches("**", "/etc/passwd"));
    }

    #[test]
    fn home_absolute_and_relative_globs() {
        assert!(matches("~/.ssh/**", "/home/me/.ssh/id_ed25519"));
        assert!(matches("~/.ssh/**", "/home/me/.ssh"));
        assert!(!matches("~/.ssh/**", "/home/you/.ssh/id_ed25519"));
        assert!(matches("~", "/home/me"));
        assert!(matches("/etc/**", "/etc/passwd"));
        assert!(matches("/etc/**", "src/../../../etc/passwd"));
        assert!(matches("../shared/*.txt", "/work/shared/a.txt"));
        assert!(matches("./src/./a.rs", "src/a.rs"));
        assert!(!matches("src/*/../a.rs", "src/a.rs"));
        assert!(!matches("src/*.rs", "~/x.rs"));
    }

    #[test]
    fn special_characters_in_the_workspace_are_literal() {
        let glob = absolute("src/**", Path::new("/w[1]/{a,b}*"), Path::new(HOME)).unwrap();
        assert!(glob.matches(Path::new("/w[1]/{a,b}*/src/x")));
        assert!(!glob.matches(Path::new("/w1/a/src/x")));
    }

    #[test]
    fn a_search_inside_reaches_the_base() {
        let glob = absolute("~/.ssh/**", Path::new(WS), Path::new(HOME)).unwrap();
        assert!(glob.inside(Path::new("/home/me")));
        assert!(glob.inside(Path::new("/")));
        assert!(!glob.inside(Path::new("/home/me/src")));
        let glob = absolute("**/*.pem", Path::new(WS), Path::new(HOME)).unwrap();
        assert!(glob.inside(Path::new(WS)));
        assert!(!glob.inside(Path::new("/work/space/src")));
    }

    #[test]
    fn checks() {
        assert!(check("src/**").is_ok());
        assert!(check("~").is_ok());
        assert!(check("").is_err());
        assert!(check("~root/x").unwrap_err().contains("~user"));
        assert!(check("src/{a,b").unwrap_err().contains("invalid glob"));
        assert!(check("src/[a").unwrap_err().contains("invalid glob"));
    }

    #[test]
    fn exact_globs_name_one_path() {
        let ws = Path::new(WS);
        for path in [
            "src/main.rs",
            "src/[id]/page.tsx",
            "a*b?{c,d}",
            "~weird",
            "back\\slash",
            ".",
        ] {
            let resolved = resolve(path, ws);
            let glob = exact_glob(&resolved, ws);
            let compiled = absolute(&glob, ws, Path::new(HOME)).unwrap();
            assert!(compiled.matches(&resolved), "{path} -> {glob}");
            check(&glob).unwrap();
        }
        assert_eq!(
            exact_glob(Path::new("/work/space/src/a.rs"), ws),
            "src/a.rs"
        );
        assert_eq!(exact_glob(Path::new("/etc/passwd"), ws), "/etc/passwd");
        assert_eq!(exact_glob(Path::new(WS), ws), ".");
        assert_eq!(exact_glob(Path::new("/work/space/~x"), ws), "\\~x");
        assert!(
            !absolute("a\\*b", ws, Path::new(HOME))
                .unwrap()
                .matches(Path::new("/work/space/axb"))
        );
    }
}
