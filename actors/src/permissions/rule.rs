//! One rule as users write it: its syntax, its canonical text, serde.
//!
//! ```text
//! RULE      = TOOL | TOOL "(" SPECIFIER ")"
//! TOOL      = name of letters, digits, `_`, `-`, optionally ending in `*`
//!             (`mcp__github__*`: every tool whose name starts so)
//! SPECIFIER = for `bash`: COMMAND (exactly it) or COMMAND ":*" (it, or it
//!             followed by more words); for the file tools: a path glob;
//!             for `web_fetch`: "domain:" HOST or "domain:*." HOST
//! ```
//!
//! Only `bash`, the file tools and `web_fetch` take a specifier; a name with `*` takes
//! none. The command is one simple command in shell syntax (quotes allowed,
//! no operators, redirections or substitutions), compared word by word.

use super::call::{BASH, FILE_TOOLS};
use super::domain::{self, Domain};
use super::path;
use super::shell;
use super::word::{self, ShellWord};
use std::fmt;
use std::str::FromStr;

/// A permission rule: a tool (or tools), and optionally which of its calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub(super) tool: ToolName,
    pub(super) specifier: Option<Specifier>,
}

/// Which tools a rule is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum ToolName {
    /// Exactly this tool.
    Exact(String),
    /// Every tool whose name starts with this (`mcp__github__*`).
    Prefix(String),
}

impl ToolName {
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolName::Exact(name) => name == tool,
            ToolName::Prefix(prefix) => tool.starts_with(prefix.as_str()),
        }
    }
}

/// Which calls of the tool a rule is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Specifier {
    /// `bash(COMMAND)` or `bash(COMMAND:*)`.
    Command {
        words: Vec<ShellWord>,
        /// Whether more words may follow (`:*`).
        prefix: bool,
    },
    /// A file tool's path glob, as written.
    Path(String),
    /// `web_fetch(domain:HOST)`.
    Domain(Domain),
}

/// A rule that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The rule itself is wrong.
    #[error("`{rule}`: {problem}; expected {expected}")]
    Invalid {
        /// The rule as written (trimmed).
        rule: String,
        /// What is wrong with it.
        problem: String,
        /// What was expected instead.
        expected: &'static str,
    },
    /// A rule of a list is wrong.
    #[error("{list}[{index}]: {error}")]
    InList {
        /// `allow`, `ask` or `deny`.
        list: &'static str,
        /// Its index in the list, from 0.
        index: usize,
        /// What is wrong with it.
        error: Box<RuleError>,
    },
}

const ANY: &str = "TOOL or TOOL(SPECIFIER)";
const COMMAND: &str = "bash(COMMAND) or bash(COMMAND PREFIX:*)";
const PATH: &str = "TOOL(PATH GLOB), e.g. edit_file(src/**)";

/// Claude Code's names of the tools agentbus names otherwise.
const CLAUDE_NAMES: [(&str, &str); 7] = [
    ("Bash", "bash"),
    ("Read", "read_file"),
    ("Edit", "edit_file"),
    ("Write", "write_file"),
    ("LS", "list_dir"),
    ("Glob", "glob"),
    ("Grep", "grep"),
];

impl Rule {
    /// Parses a rule (`bash(npm test:*)`, `edit_file(src/**)`,
    /// `mcp__github__*`, `read_file`).
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let rule = text.trim();
        let invalid = |problem: String, expected: &'static str| RuleError::Invalid {
            rule: rule.to_string(),
            problem,
            expected,
        };
        if rule.is_empty() {
            return Err(invalid("the rule is empty".into(), ANY));
        }
        let (name, specifier) = match rule.split_once('(') {
            None if rule.contains(')') => {
                return Err(invalid("`)` without `(`".into(), ANY));
            }
            None => (rule, None),
            Some((name, rest)) => match rest.strip_suffix(')') {
                Some(inner) => (name.trim_end(), Some(inner)),
                None if rest.contains(')') => {
                    return Err(invalid("text after the closing `)`".into(), ANY));
                }
                None => return Err(invalid("missing `)`".into(), ANY)),
            },
        };
        let tool = tool_name(name).map_err(|problem| invalid(problem, ANY))?;
        if let Some(&(_, ours)) = CLAUDE_NAMES.iter().find(|(claude, _)| *claude == name) {
            return Err(invalid(
                format!("`{name}` is Claude Code's name for the tool agentbus calls `{ours}`"),
                ANY,
            ));
        }
        let Some(specifier) = specifier else {
            return Ok(Rule {
                tool,
                specifier: None,
            });
        };
        let specifier = match &tool {
            ToolName::Prefix(_) => {
                return Err(invalid(
                    "a tool name ending in `*` takes no specifier".into(),
                    ANY,
                ));
            }
            ToolName::Exact(name) if name == BASH => {
                command(specifier).map_err(|problem| invalid(problem, COMMAND))?
            }
            ToolName::Exact(name) if FILE_TOOLS.contains(&name.as_str()) => {
                let glob = specifier.trim();
                path::check(glob).map_err(|problem| invalid(problem, PATH))?;
                Specifier::Path(glob.to_string())
            }
            ToolName::Exact(name) if name == domain::WEB_FETCH => Specifier::Domain(
                Domain::parse(specifier).map_err(|problem| invalid(problem, domain::EXPECTED))?,
            ),
            ToolName::Exact(name) => {
                return Err(invalid(
                    format!(
                        "`{name}` takes no specifier: only bash (a command), the file \
                         tools {} (a path glob) and web_fetch (a domain) do",
                        FILE_TOOLS.join(", ")
                    ),
                    ANY,
                ));
            }
        };
        Ok(Rule {
            tool,
            specifier: Some(specifier),
        })
    }

    /// The rule naming every call of `tool`.
    pub(super) fn tool(tool: &str) -> Rule {
        Rule {
            tool: ToolName::Exact(tool.to_string()),
            specifier: None,
        }
    }
}

fn tool_name(name: &str) -> Result<ToolName, String> {
    let (stem, wildcard) = match name.strip_suffix('*') {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if stem.is_empty() {
        return Err(if wildcard {
            "`*` needs the start of a tool name before it (e.g. `mcp__github__*`)".into()
        } else {
            "the tool name is missing".into()
        });
    }
    if !stem.chars().all(valid) {
        return Err(format!(
            "`{name}` is not a tool name (letters, digits, `_` and `-`, optionally ending in `*`)"
        ));
    }
    Ok(if wildcard {
        ToolName::Prefix(stem.to_string())
    } else {
        ToolName::Exact(stem.to_string())
    })
}

fn command(specifier: &str) -> Result<Specifier, String> {
    let specifier = specifier.trim();
    let (command, prefix) = match specifier.strip_suffix(":*") {
        Some(command) => (command.trim_end(), true),
        None => (specifier, false),
    };
    if command.is_empty() {
        return Err("the command is empty".into());
    }
    let words = shell::rule_words(command)?;
    if words.iter().any(|w| !w.literal && w.text.contains(":*")) {
        return Err("`:*` may only end the command".into());
    }
    if !prefix && words.last() == Some(&ShellWord::expanded("*")) {
        return Err(format!(
            "a trailing ` *` is not a wildcard (write `bash({}:*)` for a prefix)",
            word::command_source(&words[..words.len() - 1])
        ));
    }
    Ok(Specifier::Command { words, prefix })
}

impl fmt::Display for Rule {
    /// The canonical text: [`Rule::parse`] reads it back as the same rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            ToolName::Exact(name) => f.write_str(name)?,
            ToolName::Prefix(prefix) => write!(f, "{prefix}*")?,
        }
        match &self.specifier {
            None => Ok(()),
            Some(Specifier::Path(glob)) => write!(f, "({glob})"),
            Some(Specifier::Domain(domain)) => write!(f, "({domain})"),
            Some(Specifier::Command { words, prefix }) => {
                let tail = if *prefix { ":*" } else { "" };
                write!(f, "({}{tail})", word::command_source(words))
            }
        }
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Rule, RuleError> {
        Rule::parse(text)
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rule, D::Error> {
        let text = String::deserialize(deserializer)?;
        Rule::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Rule::parse(text)
            .unwrap_or_else(|e| panic!("{e}"))
            .to_string()
    }

    fn error(text: &str) -> String {
        Rule::parse(text).expect_err(text).to_string()
    }

    #[test]
    fn canonical_text() {
        for (written, shown) in [
            ("bash", "bash"),
            ("  read_file ", "read_file"),
            ("mcp__github__create_issue", "mcp__github__create_issue"),
            ("mcp__github__*", "mcp__github__*"),
            ("mcp__*", "mcp__*"),
            ("bash(git status)", "bash(git status)"),
            ("bash(  git   status )", "bash(git status)"),
            ("bash('git' \"status\")", "bash(git status)"),
            ("bash(npm test:*)", "bash(npm test:*)"),
            ("bash(npm test :*)", "bash(npm test:*)"),
            ("bash(echo \"a b\":*)", "bash(echo 'a b':*)"),
            ("bash(ls *.rs)", "bash(ls *.rs)"),
            ("bash(CI=1 npm test:*)", "bash(CI=1 npm test:*)"),
            ("bash('if' true)", "bash('if' true)"),
            ("bash(\"time\":*)", "bash('time':*)"),
            ("bash(echo if)", "bash(echo if)"),
            ("bash('in')", "bash('in')"),
            ("edit_file(src/**)", "edit_file(src/**)"),
            ("read_file( ~/.ssh/** )", "read_file(~/.ssh/**)"),
            ("write_file (docs/*.md)", "write_file(docs/*.md)"),
            ("grep(/etc/**)", "grep(/etc/**)"),
            ("web_fetch(domain:docs.rs)", "web_fetch(domain:docs.rs)"),
            (
                "web_fetch( domain:*.Rust-Lang.org )",
                "web_fetch(domain:*.rust-lang.org)",
            ),
        ] {
            assert_eq!(canonical(written), shown, "{written}");
            assert_eq!(canonical(shown), shown, "{shown} reads back");
        }
    }

    #[test]
    fn errors_name_the_rule_and_what_was_expected() {
        assert_eq!(
            error("bash(npm test:*"),
            "`bash(npm test:*`: missing `)`; expected TOOL or TOOL(SPECIFIER)"
        );
        assert_eq!(
            error(""),
            "``: the rule is empty; expected TOOL or TOOL(SPECIFIER)"
        );
        assert!(error("bash(x) y").contains("text after the closing `)`"));
        assert!(error("bash)").contains("`)` without `(`"));
        assert!(error("ba sh").contains("is not a tool name"));
        assert!(error("mcp__*__x").contains("is not a tool name"));
        assert!(error("*").contains("`*` needs the start of a tool name"));
        assert!(error("(x)").contains("the tool name is missing"));
        assert!(error("mcp__*(x)").contains("takes no specifier"));
        assert!(error("grepx(a)").contains("`grepx` takes no specifier"));
        assert!(error("Bash(ls)").contains("agentbus calls `bash`"));
        assert!(error("Read").contains("agentbus calls `read_file`"));
        assert!(error("bash()").contains("the command is empty; expected bash(COMMAND)"));
        assert!(error("bash(:*)").contains("the command is empty"));
        assert!(error("bash(git status && rm:*)").contains("one simple command"));
        assert!(error("bash(echo $(id))").contains("one simple command"));
        assert!(error("bash(a:* b)").contains("`:*` may only end"));
        assert_eq!(canonical("bash('a:*' b:*)"), "bash('a:*' b:*)");
        assert!(error("bash(npm test *)").contains("write `bash(npm test:*)`"));
        assert!(error("bash(echo 'x)").contains("does not parse"));
        assert!(error("edit_file()").contains("the path is empty; expected TOOL(PATH GLOB)"));
        assert!(error("edit_file(src/{a)").contains("invalid glob"));
        assert!(error("read_file(~root/x)").contains("`~user` is not supported"));
        assert!(
            error("web_fetch(docs.rs)")
                .contains("expected web_fetch(domain:HOST) or web_fetch(domain:*.HOST)")
        );
    }

    #[test]
    fn list_errors_say_which_list_and_index() {
        let error = RuleError::InList {
            list: "deny",
            index: 2,
            error: Box::new(Rule::parse("bash(").unwrap_err()),
        };
        assert_eq!(
            error.to_string(),
            "deny[2]: `bash(`: missing `)`; expected TOOL or TOOL(SPECIFIER)"
        );
    }

    #[test]
    fn serde_uses_the_text() {
        let rule: Rule = serde_json::from_str("\"bash( git  status:*)\"").unwrap();
        assert_eq!(
            serde_json::to_string(&rule).unwrap(),
            "\"bash(git status:*)\""
        );
        let rules: Vec<Rule> = serde_json::from_str("[\"read_file\", \"mcp__x__*\"]").unwrap();
        assert_eq!(rules.len(), 2);
        let err = serde_json::from_str::<Rule>("\"bash(\"").unwrap_err();
        assert!(err.to_string().contains("missing `)`"), "{err}");
        assert_eq!("grep".parse::<Rule>().unwrap(), Rule::tool("grep"));
    }

    proptest::proptest! {
        #[test]
        fn command_rules_read_back(
            words in proptest::collection::vec("[ -~\n]{0,8}", 1..4),
            prefix: bool,
        ) {
            let rule = Rule {
                tool: ToolName::Exact(BASH.to_string()),
                specifier: Some(Specifier::Command {
                    words: words.into_iter().map(ShellWord::literal).collect(),
                    prefix,
                }),
            };
            let text = rule.to_string();
            proptest::prop_assert_eq!(Rule::parse(&text), Ok(rule), "{}", text);
        }
    }

    #[test]
    fn name_wildcards() {
        let rule = Rule::parse("mcp__github__*").unwrap();
        assert!(rule.tool.matches("mcp__github__create_issue"));
        assert!(rule.tool.matches("mcp__github__"));
        assert!(!rule.tool.matches("mcp__gitlab__create_issue"));
        assert!(Rule::parse("mcp__*").unwrap().tool.matches("mcp__a__b"));
        assert!(!Rule::parse("read_file").unwrap().tool.matches("read_file2"));
    }
}
