//! Which rule, if any, decides a call.
//!
//! Deny rules first, then ask, then allow; within a list the first rule
//! that matches wins. A deny or ask rule about `bash(…)` matches when ANY
//! simple command of the call's command line matches it; an allow rule
//! decides only when EVERY simple command matches some allow rule, and the
//! command line held nothing the splitter could not vouch for (see
//! `shell`). Commands are compared word by word: `bash(git status)` is
//! exactly `git status`, `bash(npm test:*)` is `npm test` alone or followed
//! by more words. Deny and ask rules also look past assignments, wrappers
//! (`sudo`, `env`, `timeout`, …) and directory parts of the command name;
//! allow rules look at the command as written.
//!
//! A file rule matches when the call's path matches its glob; for deny and
//! ask, a `glob` or `grep` call searching a directory that holds the glob's
//! fixed start matches too. A `web_fetch(domain:…)` rule matches when the
//! host of the call's URL is the domain's (`domain.rs`). A call whose input
//! lacks what the rule looks at (no `command`, a `path` that is not a
//! string, a `url` without a host) matches deny and ask rules with a
//! specifier, and no allow rule with one.

use super::call::{CallView, MatchEnv, SEARCHES};
use super::path;
use super::rule::{Rule, RuleError, Specifier};
use super::shell::{self, Analysis};
use super::word::ShellWord;
use std::cell::OnceCell;
use std::path::PathBuf;

/// The three lists of rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rules {
    /// Calls that run without asking.
    #[serde(default)]
    pub allow: Vec<Rule>,
    /// Calls that ask the user first, whatever the mode.
    #[serde(default)]
    pub ask: Vec<Rule>,
    /// Calls that never run.
    #[serde(default)]
    pub deny: Vec<Rule>,
}

/// What the rules say about a call, and which rule said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A deny rule matched.
    Deny(Rule),
    /// No deny rule matched; an ask rule did.
    Ask(Rule),
    /// No deny or ask rule matched, and allow rules cover the whole call.
    /// The rule named is the one that settled it: a rule for the whole call
    /// (`bash`, `edit_file(src/**)`), or, when a command line was covered
    /// command by command, the first of the rules that covered it.
    Allow(Rule),
    /// No rule decides: the mode does.
    NoRule,
}

impl Rules {
    /// Parses the three lists; an error names the list and the index.
    pub fn parse(allow: &[String], ask: &[String], deny: &[String]) -> Result<Rules, RuleError> {
        let list = |name: &'static str, texts: &[String]| {
            texts
                .iter()
                .enumerate()
                .map(|(index, text)| {
                    Rule::parse(text).map_err(|error| RuleError::InList {
                        list: name,
                        index,
                        error: Box::new(error),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Rules {
            allow: list("allow", allow)?,
            ask: list("ask", ask)?,
            deny: list("deny", deny)?,
        })
    }

    /// What the rules say about `call`.
    pub fn evaluate(&self, call: &CallView<'_>, env: &MatchEnv<'_>) -> Decision {
        let facts = Facts::new(*call, *env);
        if let Some(rule) = self.deny.iter().find(|r| facts.reaches(r)) {
            return Decision::Deny(rule.clone());
        }
        if let Some(rule) = self.ask.iter().find(|r| facts.reaches(r)) {
            return Decision::Ask(rule.clone());
        }
        match facts.allowed_by(&self.allow) {
            Some(rule) => Decision::Allow(rule.clone()),
            None => Decision::NoRule,
        }
    }
}

/// A call, with what rules look at worked out once, when first needed.
struct Facts<'a> {
    call: CallView<'a>,
    env: MatchEnv<'a>,
    analysis: OnceCell<Option<Analysis>>,
    path: OnceCell<Option<PathBuf>>,
    host: OnceCell<Option<String>>,
}

/// How much of a call an allow rule covers.
enum Cover {
    Nothing,
    /// The whole call.
    Call,
    /// These simple commands of its command line.
    Commands(Vec<usize>),
}

impl<'a> Facts<'a> {
    fn new(call: CallView<'a>, env: MatchEnv<'a>) -> Self {
        Facts {
            call,
            env,
            analysis: OnceCell::new(),
            path: OnceCell::new(),
            host: OnceCell::new(),
        }
    }

    fn analysis(&self) -> Option<&Analysis> {
        self.analysis
            .get_or_init(|| self.call.command().map(shell::analyse))
            .as_ref()
    }

    fn path(&self) -> Option<&PathBuf> {
        self.path.get_or_init(|| self.call.path(&self.env)).as_ref()
    }

    fn host(&self) -> Option<&str> {
        self.host.get_or_init(|| self.call.host()).as_deref()
    }

    /// Whether a deny or ask rule matches: any part of the call.
    fn reaches(&self, rule: &Rule) -> bool {
        if !rule.tool.matches(self.call.tool) {
            return false;
        }
        match &rule.specifier {
            None => true,
            Some(Specifier::Command { words, prefix }) => match self.analysis() {
                None => true,
                Some(analysis) => analysis.commands.iter().any(|command| {
                    command
                        .candidates()
                        .iter()
                        .any(|candidate| command_matches(words, *prefix, candidate))
                }),
            },
            Some(Specifier::Path(glob)) => {
                let Some(path) = self.path() else {
                    return true;
                };
                match path::absolute(glob, self.env.workspace, self.env.home) {
                    Ok(glob) => {
                        glob.matches(path)
                            || (SEARCHES.contains(&self.call.tool) && glob.inside(path))
                    }
                    Err(_) => true,
                }
            }
            Some(Specifier::Domain(domain)) => self.host().is_none_or(|host| domain.matches(host)),
        }
    }

    /// How much of the call an allow rule covers.
    fn covers(&self, rule: &Rule) -> Cover {
        if !rule.tool.matches(self.call.tool) {
            return Cover::Nothing;
        }
        match &rule.specifier {
            None => Cover::Call,
            Some(Specifier::Command { words, prefix }) => match self.analysis() {
                Some(analysis) if analysis.unsure.is_empty() => Cover::Commands(
                    analysis
                        .commands
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.allowable() && command_matches(words, *prefix, &c.words))
                        .map(|(i, _)| i)
                        .collect(),
                ),
                _ => Cover::Nothing,
            },
            Some(Specifier::Path(glob)) => {
                let matched = self.path().is_some_and(|path| {
                    path::absolute(glob, self.env.workspace, self.env.home)
                        .is_ok_and(|glob| glob.matches(path))
                });
                if matched { Cover::Call } else { Cover::Nothing }
            }
            Some(Specifier::Domain(domain)) => {
                if self.host().is_some_and(|host| domain.matches(host)) {
                    Cover::Call
                } else {
                    Cover::Nothing
                }
            }
        }
    }

    /// The allow rule that settles the call, if the set does: the first
    /// rule covering the whole call, unless command rules before it already
    /// cover every command, and then the first of those.
    fn allowed_by<'r>(&self, rules: &'r [Rule]) -> Option<&'r Rule> {
        let mut covered: Option<Vec<bool>> = None;
        let mut first = None;
        for rule in rules {
            match self.covers(rule) {
                Cover::Nothing => {}
                Cover::Call => return Some(rule),
                Cover::Commands(indices) if indices.is_empty() => {}
                Cover::Commands(indices) => {
                    let commands = self.analysis().map_or(0, |a| a.commands.len());
                    let covered = covered.get_or_insert_with(|| vec![false; commands]);
                    for i in indices {
                        covered[i] = true;
                    }
                    let first = *first.get_or_insert(rule);
                    if covered.iter().all(|&c| c) {
                        return Some(first);
                    }
                }
            }
        }
        None
    }
}

/// Whether a command's words are the rule's (`prefix`: or start with them).
fn command_matches(rule: &[ShellWord], prefix: bool, words: &[ShellWord]) -> bool {
    if prefix {
        words.starts_with(rule)
    } else {
        words == rule
    }
}
