//! The rules as users meet them: whole calls through `Rules::evaluate`.

use super::{CallView, Decision, MatchEnv, Rule, RuleError, Rules};
use serde_json::{Value, json};
use std::path::Path;

fn env() -> MatchEnv<'static> {
    MatchEnv {
        workspace: Path::new("/work/proj"),
        home: Path::new("/home/me"),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    Rules::parse(&strings(allow), &strings(ask), &strings(deny)).unwrap_or_else(|e| panic!("{e}"))
}

fn decide(rules: &Rules, tool: &str, input: Value) -> Decision {
    rules.evaluate(
        &CallView {
            tool,
            input: &input,
        },
        &env(),
    )
}

fn bash(rules: &Rules, command: &str) -> Decision {
    decide(rules, "bash", json!({ "command": command }))
}

fn rule(text: &str) -> Rule {
    Rule::parse(text).unwrap()
}

fn allow(text: &str) -> Decision {
    Decision::Allow(rule(text))
}

fn deny(text: &str) -> Decision {
    Decision::Deny(rule(text))
}

fn ask(text: &str) -> Decision {
    Decision::Ask(rule(text))
}

#[test]
fn prefix_rules_match_whole_words() {
    let r = rules(&["bash(npm test:*)"], &[], &[]);
    assert_eq!(bash(&r, "npm test"), allow("bash(npm test:*)"));
    assert_eq!(bash(&r, "npm test --watch"), allow("bash(npm test:*)"));
    assert_eq!(bash(&r, "npm  test  a b c"), allow("bash(npm test:*)"));
    assert_eq!(bash(&r, "npm 'test' x"), allow("bash(npm test:*)"));
    assert_eq!(bash(&r, "npm tests"), Decision::NoRule);
    assert_eq!(bash(&r, "npm"), Decision::NoRule);
    assert_eq!(bash(&r, "npx npm test"), Decision::NoRule);
}

#[test]
fn exact_rules_match_exactly_after_normalising() {
    let r = rules(&["bash(git status)"], &[], &[]);
    assert_eq!(bash(&r, "git status"), allow("bash(git status)"));
    assert_eq!(bash(&r, "  git   status\t"), allow("bash(git status)"));
    assert_eq!(bash(&r, "git \"status\""), allow("bash(git status)"));
    assert_eq!(bash(&r, "git status; "), allow("bash(git status)"));
    assert_eq!(bash(&r, "git status --short"), Decision::NoRule);
    assert_eq!(bash(&r, "git"), Decision::NoRule);
    assert_eq!(bash(&r, "git statuses"), Decision::NoRule);
}

#[test]
fn compound_commands_need_every_part_allowed() {
    let r = rules(&["bash(git status)"], &[], &[]);
    assert_eq!(bash(&r, "git status && rm -rf /"), Decision::NoRule);
    for command in [
        "git status; rm -rf /",
        "git status || rm -rf /",
        "git status | rm -rf /",
        "git status & rm -rf /",
        "git status\nrm -rf /",
        "(git status; rm -rf /)",
        "{ git status; rm -rf /; }",
        "if git status; then rm -rf /; fi",
    ] {
        assert_eq!(bash(&r, command), Decision::NoRule, "{command}");
    }
    let r = rules(&["bash(git status)", "bash(git diff:*)"], &[], &[]);
    assert_eq!(
        bash(&r, "git status && git diff HEAD"),
        allow("bash(git status)")
    );
    assert_eq!(
        bash(&r, "git diff && git status"),
        allow("bash(git status)")
    );
    assert_eq!(bash(&r, "git diff | git status"), allow("bash(git status)"));
    assert_eq!(
        bash(&r, "(git diff) && { git status; }"),
        allow("bash(git status)")
    );
}

#[test]
fn any_part_is_enough_to_deny_or_ask() {
    let r = rules(&["bash(git status)"], &[], &["bash(rm:*)"]);
    assert_eq!(bash(&r, "git status && rm -rf /"), deny("bash(rm:*)"));
    assert_eq!(bash(&r, "git status; rm x"), deny("bash(rm:*)"));
    assert_eq!(bash(&r, "git status | xargs rm"), deny("bash(rm:*)"));
    assert_eq!(bash(&r, "git status"), allow("bash(git status)"));
    let r = rules(&["bash"], &["bash(git push:*)"], &[]);
    assert_eq!(
        bash(&r, "git commit -m x && git push origin main"),
        ask("bash(git push:*)")
    );
    assert_eq!(bash(&r, "git commit -m x"), allow("bash"));
    let r = rules(&["bash(git status)", "bash", "bash(ls)"], &[], &[]);
    assert_eq!(bash(&r, "git status && ls"), allow("bash"));
    let r = rules(&["bash(git status)", "bash(ls)", "bash"], &[], &[]);
    assert_eq!(bash(&r, "git status && ls"), allow("bash(git status)"));
}

#[test]
fn substitutions_inside_arguments_are_commands() {
    let r = rules(&["bash(echo:*)"], &[], &[]);
    assert_eq!(bash(&r, "echo $(rm -rf /)"), Decision::NoRule);
    assert_eq!(bash(&r, "echo `rm -rf /`"), Decision::NoRule);
    assert_eq!(bash(&r, "echo \"$(rm -rf /)\""), Decision::NoRule);
    assert_eq!(bash(&r, "echo $(echo hi)"), allow("bash(echo:*)"));
    assert_eq!(bash(&r, "echo $HOME \"$USER\""), allow("bash(echo:*)"));
    let r = rules(&["bash(echo:*)"], &[], &["bash(rm:*)"]);
    assert_eq!(bash(&r, "echo $(rm -rf /)"), deny("bash(rm:*)"));
    assert_eq!(bash(&r, "echo \"x $(y `rm -rf /`)\""), deny("bash(rm:*)"));
    assert_eq!(bash(&r, "cat <<EOF\n$(rm -rf /)\nEOF"), deny("bash(rm:*)"));
    // Quoted here-documents are text.
    assert_eq!(
        bash(&r, "echo <<'EOF'\n$(rm -rf /)\nEOF"),
        allow("bash(echo:*)")
    );
}

#[test]
fn commit_messages_from_a_heredoc() {
    let r = rules(&["bash(git commit:*)", "bash(cat)"], &[], &[]);
    let command = "git commit -m \"$(cat <<'EOF'\nFix the parser\n\nIt said `x` && $(y).\nEOF\n)\"";
    assert_eq!(bash(&r, command), allow("bash(git commit:*)"));
    let r = rules(&["bash(git commit:*)"], &[], &[]);
    assert_eq!(bash(&r, command), Decision::NoRule);
}

#[test]
fn quotes_keep_operators_in_one_word() {
    let r = rules(&["bash(echo:*)"], &[], &["bash(b:*)", "bash(rm:*)"]);
    assert_eq!(bash(&r, "echo \"a && b\""), allow("bash(echo:*)"));
    assert_eq!(bash(&r, "echo 'a; rm -rf /'"), allow("bash(echo:*)"));
    assert_eq!(bash(&r, "echo a\\;rm -rf /"), allow("bash(echo:*)"));
    assert_eq!(bash(&r, "echo a;rm -rf /"), deny("bash(rm:*)"));
    let r = rules(&["bash(echo 'a b')"], &[], &[]);
    assert_eq!(bash(&r, "echo \"a b\""), allow("bash(echo 'a b')"));
    assert_eq!(bash(&r, "echo a b"), Decision::NoRule);
}

#[test]
fn deny_beats_ask_beats_allow_and_the_first_rule_is_named() {
    let r = rules(
        &["bash(git:*)"],
        &["bash(git push:*)"],
        &["bash(git push --force:*)"],
    );
    assert_eq!(
        bash(&r, "git push --force"),
        deny("bash(git push --force:*)")
    );
    assert_eq!(bash(&r, "git push"), ask("bash(git push:*)"));
    assert_eq!(bash(&r, "git log"), allow("bash(git:*)"));
    let r = rules(&["bash"], &[], &["bash"]);
    assert_eq!(bash(&r, "ls"), deny("bash"));
    let r = rules(
        &["bash(ls:*)", "bash"],
        &[],
        &["bash(rm:*)", "bash(rm -rf:*)"],
    );
    assert_eq!(bash(&r, "ls -la"), allow("bash(ls:*)"));
    assert_eq!(bash(&r, "pwd"), allow("bash"));
    assert_eq!(bash(&r, "rm -rf /"), deny("bash(rm:*)"));
    let r = rules(&["edit_file(src/**)"], &[], &["edit_file(src/secret/**)"]);
    assert_eq!(
        decide(&r, "edit_file", json!({"path": "src/secret/key.rs"})),
        deny("edit_file(src/secret/**)")
    );
    assert_eq!(
        decide(&r, "edit_file", json!({"path": "src/a.rs"})),
        allow("edit_file(src/**)")
    );
}

#[test]
fn what_the_splitter_cannot_vouch_for_is_never_allowed() {
    let r = rules(
        &[
            "bash(echo:*)",
            "bash(bash:*)",
            "bash(eval:*)",
            "bash(cat:*)",
        ],
        &[],
        &[],
    );
    for command in [
        "echo \"unterminated",
        "bash -c 'echo hi'",
        "eval echo hi",
        "echo ${x:-$(id)}",
        "echo $((1 + 2))",
        "f() { echo; }; f",
        "cat <<EOF\nno end",
        "[[ -f x ]] && echo yes",
    ] {
        assert_eq!(bash(&r, command), Decision::NoRule, "{command}");
    }
    // Deny still sees inside.
    let r = rules(&[], &[], &["bash(rm:*)"]);
    for command in [
        "bash -c 'rm -rf /'",
        "eval rm -rf /",
        "sh -c \"ls; rm x\"",
        "f() { rm -rf /; }",
        "ls\nrm -rf /\necho \"unterminated",
    ] {
        assert_eq!(bash(&r, command), deny("bash(rm:*)"), "{command}");
    }
    // A rule for the whole tool needs no understanding.
    let r = rules(&["bash"], &[], &[]);
    assert_eq!(bash(&r, "echo \"unterminated"), allow("bash"));
}

#[test]
fn writing_a_file_through_a_redirection_is_not_allowed_by_a_command_rule() {
    let r = rules(&["bash(echo:*)", "bash(cargo test:*)"], &[], &[]);
    assert_eq!(bash(&r, "echo x > ~/.bashrc"), Decision::NoRule);
    assert_eq!(bash(&r, "echo x >> f"), Decision::NoRule);
    assert_eq!(bash(&r, "cargo test 2>&1"), allow("bash(cargo test:*)"));
    assert_eq!(
        bash(&r, "cargo test > /dev/null 2>&1"),
        allow("bash(cargo test:*)")
    );
}

#[test]
fn deny_looks_past_assignments_wrappers_and_directories() {
    let r = rules(&["bash(rm:*)"], &[], &["bash(rm -rf:*)"]);
    for command in [
        "FOO=1 rm -rf /",
        "sudo rm -rf /",
        "sudo -u root rm -rf /",
        "env X=1 timeout 5 rm -rf /",
        "/bin/rm -rf /",
        "nohup rm -rf / &",
        "find . -exec rm -rf {} ;",
        "r''m -rf /",
        "\\rm -rf /",
    ] {
        assert_eq!(bash(&r, command), deny("bash(rm -rf:*)"), "{command}");
    }
    // Allow rules look at the command as written.
    assert_eq!(bash(&r, "rm x"), allow("bash(rm:*)"));
    assert_eq!(bash(&r, "sudo rm x"), Decision::NoRule);
    assert_eq!(bash(&r, "FOO=1 rm x"), Decision::NoRule);
    assert_eq!(bash(&r, "/bin/rm x"), Decision::NoRule);
    assert_eq!(bash(&r, "$RM x"), Decision::NoRule);
    let r = rules(&["bash(CI=1 npm test:*)"], &[], &[]);
    assert_eq!(bash(&r, "CI=1 npm test"), allow("bash(CI=1 npm test:*)"));
}

#[test]
fn file_rules_match_globs() {
    let r = rules(
        &["edit_file(src/**)", "write_file(docs/*.md)"],
        &[],
        &["read_file(~/.ssh/**)"],
    );
    let edit = |path: &str| decide(&r, "edit_file", json!({ "path": path, "old_string": "a" }));
    assert_eq!(edit("src/main.rs"), allow("edit_file(src/**)"));
    assert_eq!(edit("src/a/b/c.rs"), allow("edit_file(src/**)"));
    assert_eq!(edit("/work/proj/src/main.rs"), allow("edit_file(src/**)"));
    assert_eq!(edit("./src/../src/x.rs"), allow("edit_file(src/**)"));
    assert_eq!(edit("src/../../etc/passwd"), Decision::NoRule);
    assert_eq!(edit("src/../Cargo.toml"), Decision::NoRule);
    assert_eq!(edit("/etc/passwd"), Decision::NoRule);
    assert_eq!(edit("../proj2/src/x.rs"), Decision::NoRule);
    assert_eq!(edit("srcx/a.rs"), Decision::NoRule);
    let write = |path: &str| decide(&r, "write_file", json!({ "path": path }));
    assert_eq!(write("docs/a.md"), allow("write_file(docs/*.md)"));
    assert_eq!(write("docs/sub/a.md"), Decision::NoRule);
    // A rule is about its tool only.
    assert_eq!(
        decide(&r, "write_file", json!({"path": "src/a.rs"})),
        Decision::NoRule
    );
    let read = |path: &str| decide(&r, "read_file", json!({ "path": path }));
    assert_eq!(
        read("/home/me/.ssh/id_ed25519"),
        deny("read_file(~/.ssh/**)")
    );
    assert_eq!(
        read("/home/me/x/../.ssh/config"),
        deny("read_file(~/.ssh/**)")
    );
    assert_eq!(
        read("../../../home/me/.ssh/id_rsa"),
        deny("read_file(~/.ssh/**)")
    );
    assert_eq!(read("/home/me/.sshx"), Decision::NoRule);
    // The tools do not expand `~` in a call's path: this is in the workspace.
    assert_eq!(read("~/.ssh/id_rsa"), Decision::NoRule);
}

#[test]
fn absolute_rule_globs() {
    let r = rules(&["read_file(/usr/share/**)"], &["read_file(/etc/*)"], &[]);
    let read = |path: &str| decide(&r, "read_file", json!({ "path": path }));
    assert_eq!(
        read("/usr/share/dict/words"),
        allow("read_file(/usr/share/**)")
    );
    assert_eq!(read("/etc/hosts"), ask("read_file(/etc/*)"));
    assert_eq!(read("../../etc/hosts"), ask("read_file(/etc/*)"));
    assert_eq!(read("/etc/ssl/certs/x"), Decision::NoRule);
}

#[test]
fn searches_of_a_directory_holding_a_denied_tree_are_denied() {
    let r = rules(&["grep"], &[], &["grep(~/.ssh/**)"]);
    let grep = |input: Value| decide(&r, "grep", input);
    assert_eq!(
        grep(json!({"pattern": "x", "path": "/home/me"})),
        deny("grep(~/.ssh/**)")
    );
    assert_eq!(
        grep(json!({"pattern": "x", "path": "/"})),
        deny("grep(~/.ssh/**)")
    );
    assert_eq!(
        grep(json!({"pattern": "x", "path": "/home/me/.ssh"})),
        deny("grep(~/.ssh/**)")
    );
    assert_eq!(grep(json!({"pattern": "x", "path": "src"})), allow("grep"));
    assert_eq!(grep(json!({"pattern": "x"})), allow("grep"));
    let r = rules(&["grep(src/**)"], &[], &[]);
    assert_eq!(
        decide(&r, "grep", json!({"pattern": "x", "path": "src"})),
        allow("grep(src/**)")
    );
    assert_eq!(
        decide(&r, "grep", json!({"pattern": "x"})),
        Decision::NoRule
    );
}

#[test]
fn name_rules_and_wildcards() {
    let r = rules(
        &["mcp__github__*", "read_file"],
        &["mcp__github__delete_repo"],
        &["mcp__evil__*"],
    );
    let call = |tool: &str| decide(&r, tool, json!({}));
    assert_eq!(call("mcp__github__create_issue"), allow("mcp__github__*"));
    assert_eq!(
        call("mcp__github__delete_repo"),
        ask("mcp__github__delete_repo")
    );
    assert_eq!(call("mcp__evil__anything"), deny("mcp__evil__*"));
    assert_eq!(call("mcp__gitlab__create_issue"), Decision::NoRule);
    assert_eq!(call("read_file"), allow("read_file"));
    assert_eq!(
        decide(&r, "read_file", json!({"path": "/etc/shadow"})),
        allow("read_file")
    );
    let r = rules(&["mcp__*"], &[], &[]);
    assert_eq!(decide(&r, "mcp__x__y", json!({})), allow("mcp__*"));
    assert_eq!(
        decide(&r, "bash", json!({"command": "ls"})),
        Decision::NoRule
    );
}

#[test]
fn malformed_input_is_denied_by_specific_rules_and_never_allowed_by_them() {
    let r = rules(&["bash(ls)", "read_file(**)"], &[], &[]);
    assert_eq!(decide(&r, "bash", json!({})), Decision::NoRule);
    assert_eq!(
        decide(&r, "read_file", json!({"path": 7})),
        Decision::NoRule
    );
    let r = rules(&[], &["read_file(/etc/**)"], &["bash(rm:*)"]);
    assert_eq!(
        decide(&r, "bash", json!({"command": ["rm"]})),
        deny("bash(rm:*)")
    );
    assert_eq!(
        decide(&r, "read_file", json!({})),
        ask("read_file(/etc/**)")
    );
}

#[test]
fn an_empty_command_is_allowed_by_no_command_rule() {
    let r = rules(&["bash(ls:*)"], &[], &["bash(rm:*)"]);
    assert_eq!(bash(&r, ""), Decision::NoRule);
    assert_eq!(bash(&r, "  # just a comment"), Decision::NoRule);
}

#[test]
fn parse_errors_say_which_list_and_index() {
    let err = Rules::parse(
        &strings(&["bash", "read_file"]),
        &strings(&[]),
        &strings(&["bash(rm:*)", "bash(npm test:*"]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "deny[1]: `bash(npm test:*`: missing `)`; expected TOOL or TOOL(SPECIFIER)"
    );
    assert!(matches!(
        err,
        RuleError::InList {
            list: "deny",
            index: 1,
            ..
        }
    ));
    let err = Rules::parse(&strings(&["Bash(ls)"]), &[], &[]).unwrap_err();
    assert!(
        err.to_string().starts_with("allow[0]: `Bash(ls)`:"),
        "{err}"
    );
    assert!(
        Rules::parse(&[], &strings(&["edit_file(src/{)"]), &[])
            .unwrap_err()
            .to_string()
            .starts_with("ask[0]")
    );
}

#[test]
fn rules_deserialise_from_config() {
    let rules: Rules = serde_json::from_value(json!({
        "allow": ["bash(npm test:*)", "edit_file(src/**)"],
        "deny": ["read_file(~/.ssh/**)"]
    }))
    .unwrap();
    assert_eq!(rules.allow.len(), 2);
    assert!(rules.ask.is_empty());
    assert_eq!(rules.deny[0].to_string(), "read_file(~/.ssh/**)");
    let back = serde_json::to_value(&rules).unwrap();
    assert_eq!(back["allow"][0], "bash(npm test:*)");
}
