//! File changes as the transcript shows them: what an `edit_file` did is
//! the unified diff its result carries (hunk headers with the file's line
//! numbers, three lines of context, as the tool wrote it for the model);
//! what a `write_file` wrote is the content its call gave, every line
//! added. Shown whole up to [`DIFF_LINES_SHOWN`] lines, then how many more
//! there are; removed lines red, added green, hunk headers cyan when
//! colour is on ([`styled`], which the rewind picker's preview of a
//! rewind's diffs, [`unified_rows`], uses too).
//!
//! Pure: reads the result and the call's input, never a file.

use serde_json::Value;

/// The most diff lines shown for one change.
pub const DIFF_LINES_SHOWN: usize = 200;

/// What a line of a diff is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// `@@ -a,b +c,d @@`.
    Hunk,
    Removed,
    Added,
    Context,
    /// Anything else (`\ No newline at end of file`, a cut marker).
    Note,
}

/// One line of a diff, without its sign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub kind: RowKind,
    pub text: String,
}

impl Row {
    fn new(kind: RowKind, text: &str) -> Row {
        Row {
            kind,
            text: text.to_string(),
        }
    }

    /// The line as a unified diff writes it.
    pub fn signed(&self) -> String {
        let sign = match self.kind {
            RowKind::Removed => "-",
            RowKind::Added => "+",
            RowKind::Context => " ",
            RowKind::Hunk | RowKind::Note => "",
        };
        format!("{sign}{}", self.text)
    }
}

/// A change to show: the line that says what happened, and the diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub summary: String,
    pub rows: Vec<Row>,
}

/// What a successful `edit_file` or `write_file` changed, from its
/// output (and, for a write, its call's `content`); `None` for other tools
/// or an output of another shape.
pub fn file_change(tool: &str, output: &str, input: Option<&Value>) -> Option<FileChange> {
    match tool {
        "edit_file" => edited(output),
        "write_file" => {
            let content = input?.get("content")?.as_str()?;
            Some(written(output, content))
        }
        _ => None,
    }
}

/// An edit's output: a line, then the unified diff (`--- a`, `+++ b`,
/// hunks); the file header is left out (the call names the file).
fn edited(output: &str) -> Option<FileChange> {
    let at = if output.starts_with("--- ") {
        0
    } else {
        output.find("\n--- ")? + 1
    };
    let mut lines = output[at..].lines();
    lines.next()?;
    if !lines.next()?.starts_with("+++ ") {
        return None;
    }
    let rows = lines.map(row).collect();
    let summary = output[..at].trim();
    let summary = summary.lines().next().unwrap_or("edited").to_string();
    Some(FileChange { summary, rows })
}

/// One line of a unified diff's body.
fn row(line: &str) -> Row {
    if line.starts_with("@@") {
        Row::new(RowKind::Hunk, line)
    } else if let Some(rest) = line.strip_prefix('-') {
        Row::new(RowKind::Removed, rest)
    } else if let Some(rest) = line.strip_prefix('+') {
        Row::new(RowKind::Added, rest)
    } else if let Some(rest) = line.strip_prefix(' ') {
        Row::new(RowKind::Context, rest)
    } else {
        Row::new(RowKind::Note, line)
    }
}

/// The rows of a unified diff (`--- a/PATH`, `+++ b/PATH`, hunks), its
/// file header left out: a rewind's preview.
pub fn unified_rows(diff: &str) -> Vec<Row> {
    let mut lines = diff.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with("--- ")) {
        lines.next();
        if lines.peek().is_some_and(|l| l.starts_with("+++ ")) {
            lines.next();
        }
    }
    lines.map(row).collect()
}

/// `text` (a row as shown) in its kind's colour when `color`: removed
/// red, added green, hunk headers cyan, notes dim.
pub fn styled(kind: RowKind, text: &str, color: bool) -> String {
    use crossterm::style::Stylize;
    if !color {
        return text.to_string();
    }
    match kind {
        RowKind::Hunk => text.cyan().to_string(),
        RowKind::Removed => text.red().to_string(),
        RowKind::Added => text.green().to_string(),
        RowKind::Context => text.to_string(),
        RowKind::Note => text.dark_grey().to_string(),
    }
}

/// A write: its output line, and the content as added lines under a hunk
/// header numbering them (a new file's is `@@ -0,0 +1,N @@`; an
/// overwritten file's old lines are not known, so it has none).
fn written(output: &str, content: &str) -> FileChange {
    let lines: Vec<&str> = content.lines().collect();
    let mut rows = Vec::new();
    if output.starts_with("Created") && !lines.is_empty() {
        rows.push(Row::new(
            RowKind::Hunk,
            &format!("@@ -0,0 +1,{} @@", lines.len()),
        ));
    }
    rows.extend(lines.iter().map(|l| Row::new(RowKind::Added, l)));
    FileChange {
        summary: output.lines().next().unwrap_or("written").to_string(),
        rows,
    }
}

/// The rows shown, and how many are left out past [`DIFF_LINES_SHOWN`].
pub fn shown(rows: &[Row]) -> (&[Row], usize) {
    if rows.len() <= DIFF_LINES_SHOWN {
        (rows, 0)
    } else {
        (&rows[..DIFF_LINES_SHOWN], rows.len() - DIFF_LINES_SHOWN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EDIT: &str = "Edited notes.txt: 1 replacement.\n\n--- notes.txt\n+++ notes.txt\n@@ -1,3 +1,3 @@\n zero\n-one two three\n+one TWO three\n four\n\\ No newline at end of file\n";

    #[test]
    fn an_edit_shows_the_diff_its_tool_wrote_without_the_file_header() {
        let change = file_change("edit_file", EDIT, None).unwrap();
        assert_eq!(change.summary, "Edited notes.txt: 1 replacement.");
        let signed: Vec<String> = change.rows.iter().map(Row::signed).collect();
        assert_eq!(
            signed,
            [
                "@@ -1,3 +1,3 @@",
                " zero",
                "-one two three",
                "+one TWO three",
                " four",
                "\\ No newline at end of file"
            ]
        );
        assert_eq!(change.rows[2].kind, RowKind::Removed);
        assert_eq!(change.rows[3].kind, RowKind::Added);
    }

    #[test]
    fn outputs_of_other_shapes_are_not_changes() {
        assert_eq!(
            file_change("edit_file", "Edited a: 1 replacement.", None),
            None
        );
        assert_eq!(file_change("read_file", EDIT, None), None);
        assert_eq!(file_change("write_file", "Created a (3 bytes)", None), None);
    }

    #[test]
    fn a_new_file_is_all_added_lines_numbered_from_one() {
        let input = json!({"path": "a.txt", "content": "alpha\nbeta\n"});
        let change = file_change("write_file", "Created a.txt (11 bytes)", Some(&input)).unwrap();
        assert_eq!(change.summary, "Created a.txt (11 bytes)");
        let signed: Vec<String> = change.rows.iter().map(Row::signed).collect();
        assert_eq!(signed, ["@@ -0,0 +1,2 @@", "+alpha", "+beta"]);
        let over = file_change("write_file", "Overwrote a.txt (11 bytes)", Some(&input)).unwrap();
        assert_eq!(over.rows.len(), 2, "no header without the old lines");
    }

    #[test]
    fn a_unified_diff_is_its_rows_without_the_file_header() {
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha TWO\n+alpha one\n";
        let rows = unified_rows(diff);
        let signed: Vec<String> = rows.iter().map(Row::signed).collect();
        assert_eq!(signed, ["@@ -1 +1 @@", "-alpha TWO", "+alpha one"]);
        let removed = unified_rows("--- a/c.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made\n");
        assert_eq!(removed[1].kind, RowKind::Removed);
        assert!(unified_rows("").is_empty());
        assert_eq!(styled(RowKind::Added, "+x", false), "+x");
        assert!(styled(RowKind::Added, "+x", true).contains("\u{1b}["));
    }

    #[test]
    fn long_diffs_are_shown_whole_up_to_the_cap() {
        let rows: Vec<Row> = (0..250)
            .map(|i| Row::new(RowKind::Added, &i.to_string()))
            .collect();
        let (first, more) = shown(&rows);
        assert_eq!((first.len(), more), (DIFF_LINES_SHOWN, 50));
        let (all, none) = shown(&rows[..12]);
        assert_eq!((all.len(), none), (12, 0));
    }
}
