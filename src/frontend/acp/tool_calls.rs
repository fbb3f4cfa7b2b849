//! How a tool call looks in an editor: its kind (read, edit, execute,
//! search, fetch, other), its title, the files it touches and what it
//! shows (the diff an edit proposes, the text a tool returned) — worked out
//! from the tool's name and arguments alone.
//!
//! Pure: it never reads a file (a diff is the edit's own `old_string` and
//! `new_string`, as the model wrote them), and it never fails — arguments
//! it does not understand make a plainer title, never an error.

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, ToolCallContent, ToolCallLocation, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The kind an editor shows (an icon, a grouping) for tool `name`: the
/// built-in tools by name; an MCP tool (`mcp__SERVER__TOOL`) by the words
/// of its own name; anything else `other`.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "bash" | "kill_shell" => ToolKind::Execute,
        "list_dir" | "glob" | "grep" => ToolKind::Search,
        "bash_output" => ToolKind::Read,
        "web_fetch" => ToolKind::Fetch,
        _ => match mcp_tool(name) {
            Some((_, tool)) => kind_from_words(tool),
            None => ToolKind::Other,
        },
    }
}

/// An MCP tool's kind from the words of its name (`fetch_url`,
/// `search-issues`, `get_file_contents`).
fn kind_from_words(tool: &str) -> ToolKind {
    let words: Vec<String> = tool
        .split(|c: char| !c.is_ascii_alphanumeric())
        .flat_map(split_camel)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let has = |options: &[&str]| words.iter().any(|w| options.contains(&w.as_str()));
    if has(&["fetch", "http", "url", "browse", "download", "web"]) {
        ToolKind::Fetch
    } else if has(&["search", "find", "grep", "query", "lookup"]) {
        ToolKind::Search
    } else if has(&[
        "write", "edit", "create", "update", "delete", "remove", "move", "rename", "patch",
        "insert", "set", "add",
    ]) {
        ToolKind::Edit
    } else if has(&["exec", "execute", "run", "shell", "command", "eval"]) {
        ToolKind::Execute
    } else if has(&["read", "get", "list", "show", "view", "open", "cat"]) {
        ToolKind::Read
    } else {
        ToolKind::Other
    }
}

/// `getFileContents` → `get`, `File`, `Contents`.
fn split_camel(word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    for c in word.chars() {
        if c.is_ascii_uppercase() && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// `mcp__SERVER__TOOL` split into server and tool.
fn mcp_tool(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

/// A string argument.
fn text<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key)?.as_str()
}

/// One line for the editor's list of tool calls.
pub fn title(name: &str, input: &Value) -> String {
    let path = text(input, "path");
    match name {
        "read_file" => match path {
            Some(path) => format!("Read {path}"),
            None => "Read a file".into(),
        },
        "write_file" => match path {
            Some(path) => format!("Write {path}"),
            None => "Write a file".into(),
        },
        "edit_file" => match path {
            Some(path) => format!("Edit {path}"),
            None => "Edit a file".into(),
        },
        "bash" => match text(input, "command") {
            Some(command) => format!("`{}`", one_line(command)),
            None => "Run a command".into(),
        },
        "bash_output" => match text(input, "id") {
            Some(id) => format!("Output of {id}"),
            None => "Output of a background command".into(),
        },
        "kill_shell" => match text(input, "id") {
            Some(id) => format!("Stop {id}"),
            None => "Stop a background command".into(),
        },
        "web_fetch" => match text(input, "url") {
            Some(url) => format!("Fetch {url}"),
            None => "Fetch a web page".into(),
        },
        "list_dir" => format!("List {}", path.unwrap_or(".")),
        "glob" => match (text(input, "pattern"), path) {
            (Some(pattern), Some(path)) => format!("Find {pattern} in {path}"),
            (Some(pattern), None) => format!("Find {pattern}"),
            _ => "Find files".into(),
        },
        "grep" => match (text(input, "pattern"), path) {
            (Some(pattern), Some(path)) => format!("Search for `{pattern}` in {path}"),
            (Some(pattern), None) => format!("Search for `{pattern}`"),
            _ => "Search file contents".into(),
        },
        "task" => match (text(input, "description"), text(input, "agent")) {
            (Some(description), Some(agent)) => format!("{description} ({agent})"),
            (Some(description), None) => description.to_string(),
            _ => "Run a sub-agent".into(),
        },
        _ => match mcp_tool(name) {
            Some((server, tool)) => format!("{tool} ({server})"),
            None => name.to_string(),
        },
    }
}

/// A command on one line, shortened for a title.
fn one_line(command: &str) -> String {
    let flat = command.split_whitespace().collect::<Vec<_>>().join(" ");
    agentbus_engine::text::ellipsize(&flat, 120)
}

/// `path` made absolute against the workspace (editors want absolute
/// paths); lexical only.
fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    }
}

/// The files the call reads or changes, for "follow the agent": a file
/// tool's path (with the first line read), a search's directory.
pub fn locations(name: &str, input: &Value, workspace: &Path) -> Vec<ToolCallLocation> {
    let path = match name {
        "read_file" | "write_file" | "edit_file" | "list_dir" => text(input, "path"),
        "glob" | "grep" => text(input, "path").or(Some(".")),
        _ => None,
    };
    let Some(path) = path else { return Vec::new() };
    let mut location = ToolCallLocation::new(absolute(workspace, path));
    if name == "read_file"
        && let Some(offset) = input.get("offset").and_then(Value::as_u64)
    {
        location = location.line(u32::try_from(offset).ok());
    }
    vec![location]
}

/// What the call proposes, shown before it runs (and kept after it ran):
/// the diff of an edit (`old_string` → `new_string`) or of a whole-file
/// write. Nothing for other tools.
pub fn proposed(name: &str, input: &Value, workspace: &Path) -> Vec<ToolCallContent> {
    let Some(path) = text(input, "path") else {
        return Vec::new();
    };
    let path = absolute(workspace, path);
    let diff = match name {
        "edit_file" => match (text(input, "old_string"), text(input, "new_string")) {
            (Some(old), Some(new)) => Diff::new(path, new).old_text(old.to_string()),
            _ => return Vec::new(),
        },
        "write_file" => match text(input, "content") {
            Some(content) => Diff::new(path, content),
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    vec![ToolCallContent::from(diff)]
}

/// What the call shows once it ran: an edit's diff when it succeeded,
/// otherwise the text the tool returned (the model's view of it), fenced
/// as code.
pub fn finished(
    name: &str,
    input: &Value,
    output: &str,
    is_error: bool,
    workspace: &Path,
) -> Vec<ToolCallContent> {
    let diff = proposed(name, input, workspace);
    if !is_error && !diff.is_empty() {
        return diff;
    }
    if output.is_empty() {
        return Vec::new();
    }
    vec![ToolCallContent::Content(
        agent_client_protocol::v1::schema::Content::new(ContentBlock::from(fenced(output))),
    )]
}

/// `fields` with everything the call's name and arguments tell: title,
/// kind, the proposed diff and the files (each only when there is one, so
/// an update never empties what an earlier one showed), and the arguments.
pub fn described(
    fields: ToolCallUpdateFields,
    name: &str,
    input: &Value,
    workspace: &Path,
) -> ToolCallUpdateFields {
    let mut fields = fields.title(title(name, input)).kind(kind(name));
    let content = proposed(name, input, workspace);
    if !content.is_empty() {
        fields = fields.content(content);
    }
    let locations = locations(name, input, workspace);
    if !locations.is_empty() {
        fields = fields.locations(locations);
    }
    fields.raw_input(input.clone())
}

/// `text` in a Markdown code fence longer than any run of backticks in it.
pub fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{text}{newline}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_tools_have_their_kinds() {
        assert_eq!(kind("read_file"), ToolKind::Read);
        assert_eq!(kind("edit_file"), ToolKind::Edit);
        assert_eq!(kind("write_file"), ToolKind::Edit);
        assert_eq!(kind("bash"), ToolKind::Execute);
        for search in ["glob", "grep", "list_dir"] {
            assert_eq!(kind(search), ToolKind::Search, "{search}");
        }
        assert_eq!(kind("task"), ToolKind::Other);
        assert_eq!(kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(kind("bash_output"), ToolKind::Read);
        assert_eq!(kind("kill_shell"), ToolKind::Execute);
    }

    #[test]
    fn mcp_tools_are_known_by_the_words_of_their_names() {
        assert_eq!(kind("mcp__web__fetch_url"), ToolKind::Fetch);
        assert_eq!(kind("mcp__github__search_issues"), ToolKind::Search);
        assert_eq!(kind("mcp__github__getFileContents"), ToolKind::Read);
        assert_eq!(kind("mcp__fs__write_file"), ToolKind::Edit);
        assert_eq!(kind("mcp__box__run-command"), ToolKind::Execute);
        assert_eq!(kind("mcp__everything__echo"), ToolKind::Other);
        // A built-in name under a server is the server's tool.
        assert_eq!(kind("mcp__x__bash"), ToolKind::Other);
    }

    #[test]
    fn titles_name_what_the_call_touches() {
        assert_eq!(title("read_file", &json!({"path": "a.txt"})), "Read a.txt");
        assert_eq!(
            title("web_fetch", &json!({"url": "https://docs.rs/"})),
            "Fetch https://docs.rs/"
        );
        assert_eq!(title("kill_shell", &json!({"id": "bash_2"})), "Stop bash_2");
        assert_eq!(
            title("bash", &json!({"command": "cargo  test\n --all"})),
            "`cargo test --all`"
        );
        assert_eq!(
            title("grep", &json!({"pattern": "fn main", "path": "src"})),
            "Search for `fn main` in src"
        );
        assert_eq!(
            title("mcp__github__get_issue", &json!({})),
            "get_issue (github)"
        );
        assert_eq!(
            title(
                "task",
                &json!({"description": "Review the diff", "agent": "reviewer"})
            ),
            "Review the diff (reviewer)"
        );
        assert_eq!(title("read_file", &json!("not an object")), "Read a file");
    }

    #[test]
    fn locations_are_absolute_with_the_first_line_read() {
        let ws = Path::new("/ws");
        let read = locations("read_file", &json!({"path": "src/a.rs", "offset": 40}), ws);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].path, PathBuf::from("/ws/src/a.rs"));
        assert_eq!(read[0].line, Some(40));
        let abs = locations("edit_file", &json!({"path": "/etc/x"}), ws);
        assert_eq!(abs[0].path, PathBuf::from("/etc/x"));
        assert_eq!(abs[0].line, None);
        assert!(locations("bash", &json!({"command": "ls"}), ws).is_empty());
    }

    #[test]
    fn an_edit_shows_its_diff_before_and_after_it_ran() {
        let ws = Path::new("/ws");
        let input = json!({"path": "a.txt", "old_string": "one", "new_string": "1"});
        let [ToolCallContent::Diff(diff)] = &proposed("edit_file", &input, ws)[..] else {
            panic!("one diff expected");
        };
        assert_eq!(diff.path, PathBuf::from("/ws/a.txt"));
        assert_eq!(diff.old_text.as_deref(), Some("one"));
        assert_eq!(diff.new_text, "1");
        assert_eq!(
            finished("edit_file", &input, "Edited", false, ws),
            proposed("edit_file", &input, ws)
        );
        let failed = finished("edit_file", &input, "old_string not found", true, ws);
        let [ToolCallContent::Content(content)] = &failed[..] else {
            panic!("the error text expected: {failed:?}");
        };
        assert_eq!(
            content.content,
            ContentBlock::from("```\nold_string not found\n```")
        );
    }

    #[test]
    fn a_whole_file_write_is_a_diff_from_nothing() {
        let input = json!({"path": "n.txt", "content": "new\n"});
        let [ToolCallContent::Diff(diff)] = &proposed("write_file", &input, Path::new("/w"))[..]
        else {
            panic!("one diff expected");
        };
        assert_eq!(diff.old_text, None);
        assert_eq!(diff.new_text, "new\n");
    }

    #[test]
    fn output_is_fenced_longer_than_any_backticks_in_it() {
        assert_eq!(fenced("a\n"), "```\na\n```");
        assert_eq!(fenced("x ```` y"), "`````\nx ```` y\n`````");
    }
}
