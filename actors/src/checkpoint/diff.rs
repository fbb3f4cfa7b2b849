//! How two versions of a file differ, for people: lines added and removed,
//! and a unified diff (similar), shortened when long. Binary content (not
//! UTF-8, or holding a NUL) has neither. Pure.

use crate::protocol::checkpoint::{Change, ChangedFile};

/// A diff longer than this many lines is cut (and says so).
pub const MAX_DIFF_LINES: usize = 400;

/// The longest a diff may take: past it, similar gives a coarser one (as
/// `edit_file`'s report does).
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

fn lines<'a>(old: &'a str, new: &'a str) -> similar::TextDiff<'a, 'a, 'a, str> {
    similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
}

/// Text, or `None` for binary content.
fn text(bytes: &[u8]) -> Option<&str> {
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// Whether either side is binary.
pub fn is_binary(old: Option<&[u8]>, new: Option<&[u8]>) -> bool {
    old.is_some_and(|b| text(b).is_none()) || new.is_some_and(|b| text(b).is_none())
}

/// What changed from `old` to `new` at `path` (`None`: absent).
pub fn changed(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> ChangedFile {
    let change = match (old, new) {
        (None, _) => Change::Created,
        (_, None) => Change::Deleted,
        _ => Change::Modified,
    };
    let binary = is_binary(old, new);
    let (added, removed) = if binary {
        (0, 0)
    } else {
        counts(
            old.and_then(text).unwrap_or(""),
            new.and_then(text).unwrap_or(""),
        )
    };
    ChangedFile {
        path: path.to_string(),
        change,
        added,
        removed,
        binary,
    }
}

/// Lines added and removed from `old` to `new`.
pub fn counts(old: &str, new: &str) -> (u64, u64) {
    let diff = lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// A unified diff from `old` to `new` at `path`, headed `a/PATH` and
/// `b/PATH` (`/dev/null` for an absent side); empty for binary content or
/// no difference.
pub fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    if is_binary(old, new) {
        return String::new();
    }
    let old_text = old.and_then(text).unwrap_or("");
    let new_text = new.and_then(text).unwrap_or("");
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let to = if new.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".to_string()
    };
    let diff = lines(old_text, new_text);
    let whole = diff
        .unified_diff()
        .context_radius(3)
        .header(&from, &to)
        .to_string();
    let lines: Vec<&str> = whole.lines().collect();
    if lines.len() <= MAX_DIFF_LINES {
        return whole;
    }
    let mut cut = lines[..MAX_DIFF_LINES].join("\n");
    cut.push_str(&format!(
        "\n… {} more lines of diff\n",
        lines.len() - MAX_DIFF_LINES
    ));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_and_the_diff_names_both_sides() {
        let old = b"a\nb\nc\n".as_slice();
        let new = b"a\nB\nc\nd\n".as_slice();
        let file = changed("x.txt", Some(old), Some(new));
        assert_eq!(
            (file.change, file.added, file.removed),
            (Change::Modified, 2, 1)
        );
        let diff = unified("x.txt", Some(old), Some(new));
        assert!(diff.starts_with("--- a/x.txt\n+++ b/x.txt\n"), "{diff}");
        assert!(diff.contains("-b\n+B\n"), "{diff}");
    }

    #[test]
    fn created_deleted_and_binary_files() {
        assert_eq!(changed("n", None, Some(b"1\n2\n")).change, Change::Created);
        assert_eq!(changed("n", None, Some(b"1\n2\n")).added, 2);
        assert_eq!(changed("n", Some(b"1\n"), None).change, Change::Deleted);
        assert!(unified("n", Some(b"1\n"), None).contains("+++ /dev/null"));
        let bin = changed("img", Some(b"\x89PNG\0\x01"), Some(b"\x89PNG\0\x02"));
        assert!(bin.binary && bin.added == 0);
        assert_eq!(unified("img", Some(b"\0"), Some(b"\x01\0")), "");
    }

    #[test]
    fn a_long_diff_is_cut_and_says_how_much_more() {
        let new: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let diff = unified("long", None, Some(new.as_bytes()));
        assert!(diff.lines().count() <= MAX_DIFF_LINES + 1);
        assert!(diff.contains("more lines of diff"), "{diff}");
    }
}
