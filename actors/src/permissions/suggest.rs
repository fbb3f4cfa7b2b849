//! The rule an "allow always" answer adds: the narrowest that covers the
//! call again.

use super::call::{BASH, CallView, FILE_TOOLS, MatchEnv};
use super::domain::Domain;
use super::path;
use super::rule::{Rule, Specifier, ToolName};
use super::shell;
use super::word::ShellWord;

impl Rule {
    /// The narrowest rule an "allow always" answer would add for `call`:
    /// for `bash`, the first two words of its (first) command as a prefix
    /// (`bash(git status:*)`; `bash(ls:*)` for a one-word command); for a
    /// file tool, its exact path, relative to the workspace when inside it;
    /// for `web_fetch`, its URL's host (`web_fetch(domain:docs.rs)`);
    /// for any other tool (or a call without the argument), the tool's
    /// name.
    ///
    /// For a command line of several commands the rule covers the first
    /// only, so the same line still asks next time unless rules cover the
    /// others.
    pub fn for_call(call: &CallView<'_>, env: &MatchEnv<'_>) -> Rule {
        if call.tool == BASH
            && let Some(command) = call.command()
        {
            return Rule {
                tool: ToolName::Exact(BASH.to_string()),
                specifier: Some(Specifier::Command {
                    words: first_words(command),
                    prefix: true,
                }),
            };
        }
        if let Some(host) = call.host() {
            return Rule {
                tool: ToolName::Exact(call.tool.to_string()),
                specifier: Some(Specifier::Domain(Domain::exactly(&host))),
            };
        }
        if FILE_TOOLS.contains(&call.tool)
            && let Some(path) = call.path(env)
        {
            return Rule {
                tool: ToolName::Exact(call.tool.to_string()),
                specifier: Some(Specifier::Path(path::exact_glob(&path, env.workspace))),
            };
        }
        Rule::tool(call.tool)
    }
}

/// Up to two leading literal words of the first simple command (or, when
/// it has none, the first word of the text as it stands).
fn first_words(command: &str) -> Vec<ShellWord> {
    let analysis = shell::analyse(command);
    let words: Vec<ShellWord> = analysis
        .commands
        .first()
        .map(|c| {
            c.words
                .iter()
                .take_while(|w| w.literal)
                .take(2)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !words.is_empty() {
        return words;
    }
    let first = command.split_whitespace().next().unwrap_or_default();
    vec![ShellWord::literal(first)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn env() -> MatchEnv<'static> {
        MatchEnv {
            workspace: Path::new("/ws"),
            home: Path::new("/home/me"),
        }
    }

    fn suggest(tool: &str, input: serde_json::Value) -> String {
        let rule = Rule::for_call(
            &CallView {
                tool,
                input: &input,
            },
            &env(),
        );
        let text = rule.to_string();
        assert_eq!(Rule::parse(&text).unwrap(), rule, "{text} reads back");
        text
    }

    fn bash(command: &str) -> String {
        suggest("bash", json!({ "command": command }))
    }

    #[test]
    fn bash_gets_a_two_word_prefix() {
        assert_eq!(bash("git status --short"), "bash(git status:*)");
        assert_eq!(bash("git status"), "bash(git status:*)");
        assert_eq!(bash("ls"), "bash(ls:*)");
        assert_eq!(bash("  npm   test -- --watch"), "bash(npm test:*)");
        assert_eq!(bash("echo 'a b' c"), "bash(echo 'a b':*)");
        assert_eq!(bash("cat $FILE"), "bash(cat:*)");
        assert_eq!(bash("cd src && cargo test"), "bash(cd src:*)");
        assert_eq!(bash("CI=1 npm test"), "bash(CI=1 npm:*)");
        assert_eq!(bash("$(which rm) x"), "bash('$(which':*)");
        assert_eq!(bash("echo 'unterminated"), "bash(echo:*)");
        assert_eq!(bash(""), "bash('':*)");
    }

    #[test]
    fn file_tools_get_their_exact_path() {
        assert_eq!(
            suggest("edit_file", json!({"path": "src/main.rs"})),
            "edit_file(src/main.rs)"
        );
        assert_eq!(
            suggest("read_file", json!({"path": "/ws/./a/../b.txt"})),
            "read_file(b.txt)"
        );
        assert_eq!(
            suggest("read_file", json!({"path": "/etc/hosts"})),
            "read_file(/etc/hosts)"
        );
        assert_eq!(
            suggest("write_file", json!({"path": "app/[id].tsx"})),
            r"write_file(app/\[id\].tsx)"
        );
        assert_eq!(suggest("grep", json!({"pattern": "x"})), "grep(.)");
        assert_eq!(suggest("list_dir", json!({"path": "."})), "list_dir(.)");
    }

    #[test]
    fn web_fetch_gets_the_host_of_its_url() {
        assert_eq!(
            suggest("web_fetch", json!({"url": "https://Docs.rs/serde/latest"})),
            "web_fetch(domain:docs.rs)"
        );
        assert_eq!(
            suggest("web_fetch", json!({"url": "http://127.0.0.1:8080/"})),
            "web_fetch(domain:127.0.0.1)"
        );
        assert_eq!(suggest("web_fetch", json!({"url": "nope"})), "web_fetch");
    }

    #[test]
    fn other_tools_get_their_name() {
        assert_eq!(
            suggest("mcp__github__create_issue", json!({})),
            "mcp__github__create_issue"
        );
        assert_eq!(suggest("read_file", json!({})), "read_file");
        assert_eq!(suggest("bash", json!({"cmd": "ls"})), "bash");
    }
}
