//! A bash command split into the simple commands it runs.
//!
//! The command is parsed by `brush-parser` (the parser of the brush shell:
//! bash syntax, maintained, MIT) and its syntax tree walked: `&&`, `||`,
//! `;`, `&`, `|`, newlines, subshells, `{ …; }`, `if`/`for`/`while`/`case`
//! bodies, command substitutions (`$(…)`, backquotes, also inside double
//! quotes and here-documents) and process substitutions each yield their
//! simple commands, in source order (a command before those substituted
//! into it).
//!
//! What the walk cannot vouch for is noted as *unsure*, and then no allow
//! rule may match the command (the call asks), while deny and ask rules
//! still see every command it found: text that does not parse (unbalanced
//! quotes, an unterminated here-document, …: deny and ask rules then see
//! each of its lines that parses alone), `eval` and `bash -c`/`sh -c`
//! (their string is parsed as a command when it is literal, for deny and
//! ask), function definitions, `coproc`, `(( … ))` and `$(( … ))`,
//! `[[ … ]]`, expansions that can run code (`${x:-$(cmd)}`, `${a[i]}`,
//! `${!x}`), output of a compound command redirected to a file, and
//! nesting too deep to parse (the parser recurses: the stack it runs on is
//! grown to fit the nesting the text may have, up to a bound).
//!
//! A simple command keeps its words (assignments first, redirections left
//! out) and whether it writes a file through a redirection (`> f`, `>> f`,
//! `&> f`, `>& f`; `/dev/null` and fd duplications such as `2>&1` do not
//! count). For deny and ask rules it also says where else a command may
//! start: after its assignments, after a wrapper that runs its arguments as
//! a command (`sudo`, `env`, `timeout`, `xargs`, …), after `find -exec`.

use super::word::{self, ShellWord};
use brush_parser::{ParserOptions, ast};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One simple command: a name, its arguments, its assignments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    /// Assignments, the command name, its arguments; no redirections.
    pub words: Vec<ShellWord>,
    /// How many words at the start are assignments (`FOO=1 cmd`).
    pub assignments: usize,
    /// Where deny and ask rules look for a command, besides the start: the
    /// name after the assignments, and each word after a wrapper.
    pub starts: Vec<usize>,
    /// Whether a redirection writes its output into a file.
    pub writes_file: bool,
}

impl SimpleCommand {
    /// Whether an allow rule may match it at all: it writes no file through
    /// a redirection and its name is literal.
    pub fn allowable(&self) -> bool {
        !self.writes_file
            && self
                .words
                .get(self.assignments)
                .is_none_or(|name| name.literal)
    }

    /// The word lists deny and ask rules are compared with: all the words,
    /// and the words from each start, also with the command name reduced to
    /// its last path component (`/bin/rm` → `rm`).
    pub fn candidates(&self) -> Vec<Vec<ShellWord>> {
        let mut out = vec![self.words.clone()];
        for &start in &self.starts {
            let rest = &self.words[start..];
            out.push(rest.to_vec());
            if let Some(base) = rest[0].basename() {
                let mut renamed = rest.to_vec();
                renamed[0] = base;
                out.push(renamed);
            }
        }
        out.dedup();
        out
    }
}

/// What a command line runs, as far as it can tell.
#[derive(Clone, Debug, Default)]
pub(super) struct Analysis {
    /// Every simple command found, in source order.
    pub commands: Vec<SimpleCommand>,
    /// Why no allow rule may match (empty when it understood everything).
    pub unsure: Vec<String>,
}

/// Splits `command` into its simple commands.
pub(super) fn analyse(command: &str) -> Analysis {
    guarded(command, |options| {
        let mut walker = Walker {
            options,
            depth: 0,
            out: Analysis::default(),
        };
        walker.source(command);
        walker.out
    })
    .unwrap_or_else(|why| Analysis {
        commands: Vec::new(),
        unsure: vec![why],
    })
}

/// The words of the command in a `bash(…)` rule: one simple command whose
/// words hold no command substitution.
pub(super) fn rule_words(spec: &str) -> Result<Vec<ShellWord>, String> {
    const ONE: &str = "the command must be one simple command, without `&&`, `||`, `;`, `|`, \
                       `&`, redirections or substitutions";
    guarded(spec, |options| {
        let program = brush_parser::Parser::new(spec.as_bytes(), options)
            .parse_program()
            .map_err(|e| format!("the command does not parse: {e}"))?;
        let [list] = program.complete_commands.as_slice() else {
            return Err(ONE.to_string());
        };
        let [ast::CompoundListItem(and_or, ast::SeparatorOperator::Sequence)] = list.0.as_slice()
        else {
            return Err(ONE.to_string());
        };
        let pipeline = &and_or.first;
        let ([ast::Command::Simple(command)], true, false, None) = (
            pipeline.seq.as_slice(),
            and_or.additional.is_empty(),
            pipeline.bang,
            &pipeline.timed,
        ) else {
            return Err(ONE.to_string());
        };
        let mut words = Vec::new();
        for item in items(command) {
            let source = match item {
                Item::Word(w) => w,
                Item::Redirect(_) | Item::ProcessSubstitution(_) => return Err(ONE.to_string()),
            };
            let read = word::read(&source.value, options);
            if !read.substitutions.is_empty() || !read.unsure.is_empty() {
                return Err(ONE.to_string());
            }
            words.push(read.word);
        }
        if words.is_empty() {
            return Err("the command is empty".to_string());
        }
        Ok(words)
    })?
}

/// Nesting deeper than this is not parsed (the command is unsure). The
/// bound counts every opening character, quoted or not (a here-document of
/// code counts its brackets), hence the room.
const MAX_NESTING: usize = 16 * 1024;
/// Stack the parser may need per level of nesting (it recurses; about
/// 18 KiB a level was measured in a debug build), and besides. The stack is
/// address space: only what the parser touches is used.
const STACK_PER_LEVEL: usize = 32 * 1024;
const STACK_BASE: usize = 256 * 1024;
/// Command substitutions, `eval` and `sh -c` strings are parsed at most
/// this deep.
const MAX_DEPTH: usize = 32;

/// Runs `f` with the parser's options on a stack large enough for the
/// nesting `text` may have (a new stack when the thread's has not enough
/// room left), and turns a panic (of the parser, or of a stack that cannot
/// be had) into an error.
fn guarded<T>(text: &str, f: impl FnOnce(&ParserOptions) -> T) -> Result<T, String> {
    let nesting = nesting_bound(text);
    if nesting > MAX_NESTING {
        return Err(format!(
            "the command nests more than {MAX_NESTING} levels deep"
        ));
    }
    let stack = STACK_BASE + nesting * STACK_PER_LEVEL;
    let options = ParserOptions::default();
    catch_unwind(AssertUnwindSafe(|| {
        stacker::maybe_grow(stack, stack, || f(&options))
    }))
    .map_err(|_| "the shell parser failed on the command".to_string())
}

/// An upper bound on how deeply the parser may recurse on `text`: every
/// character or keyword that may open a level counts, wherever it stands.
fn nesting_bound(text: &str) -> usize {
    const KEYWORDS: [&str; 8] = [
        "if", "while", "until", "for", "case", "select", "function", "coproc",
    ];
    let openers = text
        .chars()
        .filter(|c| matches!(c, '(' | '{' | '[' | '`' | '!'))
        .count();
    let keywords = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| KEYWORDS.contains(w))
        .count();
    openers + keywords
}

/// Commands that run their arguments as a command.
const WRAPPERS: [&str; 18] = [
    "sudo", "doas", "env", "command", "builtin", "exec", "nohup", "nice", "ionice", "timeout",
    "stdbuf", "xargs", "setsid", "watch", "time", "chroot", "flock", "unbuffer",
];
/// Shells whose `-c` runs a string.
const SHELLS: [&str; 7] = ["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"];
/// The `find` actions that run a command.
const FIND_EXEC: [&str; 4] = ["-exec", "-execdir", "-ok", "-okdir"];

/// The name a literal command word runs, without its directory.
fn command_name(word: &ShellWord) -> Option<&str> {
    if !word.literal {
        return None;
    }
    Some(word.text.rsplit('/').next().unwrap_or(&word.text))
}

/// A prefix or suffix item of a simple command.
enum Item<'a> {
    Word(&'a ast::Word),
    Redirect(&'a ast::IoRedirect),
    ProcessSubstitution(&'a ast::SubshellCommand),
}

/// The items of a simple command in source order.
fn items(command: &ast::SimpleCommand) -> impl Iterator<Item = Item<'_>> {
    fn item(i: &ast::CommandPrefixOrSuffixItem) -> Item<'_> {
        match i {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => Item::Redirect(r),
            ast::CommandPrefixOrSuffixItem::Word(w)
            | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => Item::Word(w),
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, s) => {
                Item::ProcessSubstitution(s)
            }
        }
    }
    let prefix = command.prefix.iter().flat_map(|p| p.0.iter().map(item));
    let name = command.word_or_name.iter().map(Item::Word);
    let suffix = command.suffix.iter().flat_map(|s| s.0.iter().map(item));
    prefix.chain(name).chain(suffix)
}

/// Walks a syntax tree, collecting simple commands.
struct Walker<'o> {
    options: &'o ParserOptions,
    /// How many substitutions (or `eval`/`sh -c` strings) deep it is.
    depth: usize,
    out: Analysis,
}

impl Walker<'_> {
    fn unsure(&mut self, why: impl Into<String>) {
        self.out.unsure.push(why.into());
    }

    /// Parses and walks a command line.
    fn source(&mut self, text: &str) {
        if self.depth > MAX_DEPTH {
            self.unsure("command substitutions nest too deeply");
            return;
        }
        match brush_parser::Parser::new(text.as_bytes(), self.options).parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list);
                }
            }
            Err(e) => {
                self.unsure(format!(
                    "cannot parse `{}`: {e}",
                    crate::text::ellipsize(text, 80)
                ));
                self.lines(text);
            }
        }
    }

    /// For deny and ask, the commands of a command line that does not
    /// parse: bash runs the lines before the one in error, so each line
    /// that parses on its own is walked (more than bash would run: a line
    /// may belong to a construct spanning several, or come after the error).
    fn lines(&mut self, text: &str) {
        if !text.contains('\n') {
            return;
        }
        for line in text.lines() {
            let parsed = brush_parser::Parser::new(line.as_bytes(), self.options).parse_program();
            for list in parsed.iter().flat_map(|p| &p.complete_commands) {
                self.list(list);
            }
        }
    }

    /// Walks a command line found inside another one.
    fn nested(&mut self, text: &str) {
        self.depth += 1;
        self.source(text);
        self.depth -= 1;
    }

    fn list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &ast::Command) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound);
                self.compound_redirects(redirects.as_ref());
            }
            ast::Command::Function(function) => {
                self.unsure("it defines a function");
                self.compound(&function.body.0);
                self.compound_redirects(function.body.1.as_ref());
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.unsure("`[[ … ]]` can run commands through array subscripts");
                self.test(&test.expr);
                self.compound_redirects(redirects.as_ref());
            }
        }
    }

    fn compound_redirects(&mut self, redirects: Option<&ast::RedirectList>) {
        for redirect in redirects.iter().flat_map(|r| &r.0) {
            if self.redirect(redirect) {
                self.unsure("the output of a compound command goes to a file");
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(_) => self.unsure("`(( … ))` can run commands through array subscripts"),
            C::ArithmeticForClause(f) => {
                self.unsure("`for (( … ))` can run commands through array subscripts");
                self.list(&f.body.list);
            }
            C::BraceGroup(group) => self.list(&group.list),
            C::Subshell(subshell) => self.list(&subshell.list),
            C::ForClause(f) => {
                for value in f.values.iter().flatten() {
                    self.word(value);
                }
                self.list(&f.body.list);
            }
            C::CaseClause(c) => {
                self.word(&c.value);
                for case in &c.cases {
                    for pattern in &case.patterns {
                        self.word(pattern);
                    }
                    if let Some(body) = &case.cmd {
                        self.list(body);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for branch in i.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(condition);
                    }
                    self.list(&branch.body);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            C::Coprocess(c) => {
                self.unsure("`coproc` runs a command in the background");
                self.command(&c.body);
            }
        }
    }

    fn test(&mut self, expr: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as T;
        match expr {
            T::And(a, b) | T::Or(a, b) => {
                self.test(a);
                self.test(b);
            }
            T::Not(e) | T::Parenthesized(e) => self.test(e),
            T::UnaryTest(_, w) => {
                self.word(w);
            }
            T::BinaryTest(_, a, b) => {
                self.word(a);
                self.word(b);
            }
        }
    }

    /// Reads a word, walking the commands substituted into it.
    fn word(&mut self, source: &ast::Word) -> ShellWord {
        let read = word::read(&source.value, self.options);
        for substitution in &read.substitutions {
            self.nested(substitution);
        }
        self.out.unsure.extend(read.unsure);
        read.word
    }

    /// Walks a redirection; true when it writes its output into a file.
    fn redirect(&mut self, redirect: &ast::IoRedirect) -> bool {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
        match redirect {
            ast::IoRedirect::File(_, kind, target) => match target {
                T::Filename(file) => {
                    let file = self.word(file);
                    matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite)
                        && !is_sink(&file)
                }
                T::Fd(_) => false,
                T::ProcessSubstitution(_, subshell) => {
                    self.list(&subshell.list);
                    false
                }
                // `>&2` duplicates a descriptor; `>&file` writes the file.
                T::Duplicate(target) => {
                    let target = self.word(target);
                    matches!(kind, K::DuplicateOutput)
                        && !(target.literal
                            && (target.text == "-" || target.text.parse::<u32>().is_ok()))
                        && !is_sink(&target)
                }
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let read = word::read_heredoc(&doc.doc.value, self.options);
                    for substitution in &read.substitutions {
                        self.nested(substitution);
                    }
                    self.out.unsure.extend(read.unsure);
                }
                false
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(w);
                false
            }
            ast::IoRedirect::OutputAndError(file, _) => {
                let file = self.word(file);
                !is_sink(&file)
            }
        }
    }

    fn simple(&mut self, command: &ast::SimpleCommand) {
        // Reserve its place so that it comes before what is substituted
        // into it.
        let slot = self.out.commands.len();
        self.out.commands.push(SimpleCommand::default());
        let mut words = Vec::new();
        let mut writes_file = false;
        let assignments = command
            .prefix
            .iter()
            .flat_map(|p| &p.0)
            .filter(|i| matches!(i, ast::CommandPrefixOrSuffixItem::AssignmentWord(..)))
            .count();
        for item in items(command) {
            match item {
                Item::Word(w) => {
                    let w = self.word(w);
                    words.push(w);
                }
                Item::Redirect(r) => writes_file |= self.redirect(r),
                Item::ProcessSubstitution(subshell) => {
                    words.push(ShellWord::expanded("<(…)"));
                    self.list(&subshell.list);
                }
            }
        }
        let starts = starts(&words, assignments);
        for &start in &starts {
            self.interpreter(&words[start..]);
        }
        self.out.commands[slot] = SimpleCommand {
            words,
            assignments,
            starts,
            writes_file,
        };
    }

    /// `eval …` and `bash -c STRING`: their string is a command line too.
    fn interpreter(&mut self, words: &[ShellWord]) {
        let Some(name) = command_name(&words[0]) else {
            return;
        };
        if name == "eval" {
            self.unsure("`eval` runs a string as a command");
            let args = &words[1..];
            if !args.is_empty() && args.iter().all(|w| w.literal) {
                let text: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
                self.nested(&text.join(" "));
            }
            return;
        }
        if !SHELLS.contains(&name) {
            return;
        }
        // Any word that may be a `-c` among the options (`-c`, `-lc`, `-ec`,
        // also after `-o pipefail`); a script's argument that looks like one
        // only makes the command unsure. A word that is not literal may be
        // one too.
        let is_c = |w: &ShellWord| {
            !w.literal
                || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c'))
        };
        let Some(at) = words.iter().skip(1).position(is_c).map(|i| i + 1) else {
            return;
        };
        self.unsure(format!("`{name} -c` runs a string as a command"));
        match words.get(at + 1) {
            Some(string) if string.literal => self.nested(&string.text),
            _ => {}
        }
    }
}

/// Where a command may start besides the first word: the name after the
/// assignments, every word after a wrapper's name, the word after each
/// `find -exec`.
fn starts(words: &[ShellWord], assignments: usize) -> Vec<usize> {
    let Some(name) = words.get(assignments) else {
        return Vec::new();
    };
    let mut starts = vec![assignments];
    match command_name(name) {
        Some(n) if WRAPPERS.contains(&n) => starts.extend(assignments + 1..words.len()),
        Some("find") => starts.extend(
            (assignments + 1..words.len())
                .filter(|&i| words[i].literal && FIND_EXEC.contains(&words[i].text.as_str()))
                .map(|i| i + 1)
                .filter(|&i| i < words.len()),
        ),
        _ => {}
    }
    starts
}

/// A file that writing to changes nothing.
fn is_sink(file: &ShellWord) -> bool {
    file.literal && ["/dev/null", "/dev/stdout", "/dev/stderr"].contains(&file.text.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of each simple command, as text.
    fn commands(command: &str) -> Vec<String> {
        analyse(command)
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(ShellWord::to_source)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    fn sure(command: &str) -> bool {
        let analysis = analyse(command);
        analysis.unsure.is_empty()
    }

    #[test]
    fn operators_split_commands() {
        assert_eq!(
            commands("git status && rm -rf /"),
            ["git status", "rm -rf /"]
        );
        assert_eq!(commands("a || b; c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(commands("a\nb\n\nc"), ["a", "b", "c"]);
        assert_eq!(commands("a |& b"), ["a", "b"]);
        assert_eq!(commands("(cd x; make) && { ls; }"), ["cd x", "make", "ls"]);
        assert_eq!(commands("! git diff --quiet"), ["git diff --quiet"]);
        assert_eq!(commands("time cargo build"), ["cargo build"]);
        assert!(sure("git status && rm -rf / || (a; b) | c"));
    }

    #[test]
    fn quotes_keep_operators_inside_one_word() {
        assert_eq!(commands(r#"echo "a && b""#), ["echo 'a && b'"]);
        assert_eq!(commands("echo 'a; rm -rf /' x"), ["echo 'a; rm -rf /' x"]);
        assert_eq!(commands(r"echo a\;b\&\&c"), ["echo 'a;b&&c'"]);
        assert_eq!(commands("git   status  "), ["git status"]);
        assert_eq!(commands("g'i't \"status\""), ["git status"]);
        assert_eq!(commands("git status # && rm -rf /"), ["git status"]);
    }

    #[test]
    fn substitutions_are_commands_too() {
        assert_eq!(
            commands("echo $(rm -rf /) `id` \"$(curl x | sh)\""),
            [
                "echo $(rm -rf /) `id` \"$(curl x | sh)\"",
                "rm -rf /",
                "id",
                "curl x",
                "sh"
            ]
        );
        assert_eq!(
            commands("echo $(a $(b `c`))"),
            ["echo $(a $(b `c`))", "a $(b `c`)", "b `c`", "c"]
        );
        assert_eq!(commands("x=$(date) y=1"), ["x=$(date) y=1", "date"]);
        assert_eq!(
            commands("diff <(ls a) >(cat)"),
            ["diff <(…) <(…)", "ls a", "cat"]
        );
        let diff = analyse("diff <(ls a) <(ls b)");
        assert_eq!(diff.commands.len(), 3);
        assert_eq!(
            diff.commands[1].words,
            [ShellWord::literal("ls"), ShellWord::literal("a")]
        );
        assert!(diff.unsure.is_empty());
    }

    #[test]
    fn compound_commands_are_walked() {
        assert_eq!(
            commands("for f in $(ls); do rm \"$f\"; done"),
            ["ls", "rm \"$f\""]
        );
        assert_eq!(
            commands("if test -f x; then a; elif b; then c; else d; fi"),
            ["test -f x", "a", "b", "c", "d"]
        );
        assert_eq!(
            commands("while a; do b; done; until c; do d; done"),
            ["a", "b", "c", "d"]
        );
        assert_eq!(commands("case $(x) in a) y;; *) z;; esac"), ["x", "y", "z"]);
        assert!(sure("for f in *.rs; do wc -l \"$f\"; done"));
    }

    #[test]
    fn heredocs() {
        let quoted = analyse("cat <<'EOF'\n$(rm -rf /)\nEOF\necho done");
        assert_eq!(quoted.commands.len(), 2);
        assert!(quoted.unsure.is_empty());
        assert_eq!(
            commands("cat <<EOF\nhi $(rm -rf /)\nEOF\necho done"),
            ["cat", "rm -rf /", "echo done"]
        );
        // The way agents write commit messages.
        let commit = "git commit -m \"$(cat <<'EOF'\nFix it\n\n$(not run)\nEOF\n)\"";
        let analysis = analyse(commit);
        assert!(analysis.unsure.is_empty(), "{:?}", analysis.unsure);
        assert_eq!(analysis.commands.len(), 2);
        assert_eq!(analysis.commands[1].words, [ShellWord::literal("cat")]);
        // Unterminated: bash would read the rest as the document.
        assert!(!sure("cat <<EOF\nrm -rf /"));
    }

    #[test]
    fn assignments_wrappers_and_paths() {
        let c = &analyse("FOO=1 BAR=2 npm test").commands[0];
        assert_eq!(c.assignments, 2);
        assert_eq!(c.starts, [2]);
        let c = &analyse("sudo -u bob /bin/rm -rf /").commands[0];
        assert_eq!(c.starts, [0, 1, 2, 3, 4, 5]);
        let candidates = c.candidates();
        assert!(candidates.contains(&vec![
            ShellWord::literal("rm"),
            ShellWord::literal("-rf"),
            ShellWord::literal("/"),
        ]));
        let c = &analyse("find . -name x -exec rm {} ;").commands[0];
        assert_eq!(c.starts, [0, 5]);
        let c = &analyse("ls -la").commands[0];
        assert_eq!(c.starts, [0]);
        assert_eq!(c.candidates().len(), 1);
    }

    #[test]
    fn redirections() {
        let writes = |c: &str| analyse(c).commands[0].writes_file;
        for c in [
            "echo x > f",
            "echo x >> f",
            "echo x &> f",
            "echo x >| f",
            "echo x >& f",
            "echo x 1<> f",
            "> f echo x",
            "echo x > \"$F\"",
        ] {
            assert!(writes(c), "{c}");
        }
        for c in [
            "cargo test 2>&1",
            "a > /dev/null 2>&1",
            "a &> /dev/null",
            "a >&2",
            "a < input",
            "a <<< \"$x\"",
            "a 2>&-",
        ] {
            assert!(!writes(c), "{c}");
        }
        assert_eq!(commands("a > $(b)"), ["a", "b"]);
        assert!(!sure("{ a; b; } > f"));
        assert!(sure("{ a; b; } 2>/dev/null"));
    }

    #[test]
    fn what_it_cannot_vouch_for() {
        for c in [
            "echo \"unterminated",
            "echo 'unterminated",
            "echo $(unterminated",
            "echo `unterminated",
            "ls )",
            "a &&",
            "eval rm -rf /",
            "bash -c 'rm -rf /'",
            "sh -ec \"rm -rf /\"",
            "sudo bash -lc 'rm -rf /'",
            "bash -o pipefail -c 'rm -rf /'",
            "bash $OPT 'rm -rf /'",
            "xargs sh -c 'rm $1'",
            "f() { rm -rf /; }; f",
            "(( x = a[$(id)] ))",
            "echo $(( 1 + 2 ))",
            "[[ -f x ]]",
            "echo ${x:-$(id)}",
            "coproc ls",
        ] {
            assert!(!sure(c), "{c}");
        }
        // Bash runs the lines before a syntax error: deny and ask see them.
        assert_eq!(
            commands("git status\nrm -rf /\necho \"unterminated"),
            ["git status", "rm -rf /"]
        );
        assert!(commands("rm -rf / && echo \"unterminated").is_empty());
        // What they hide is still seen.
        for c in [
            "eval rm -rf /",
            "bash -c 'rm -rf /'",
            "sudo bash -lc 'rm -rf /'",
            "f() { rm -rf /; }",
        ] {
            assert!(
                commands(c).contains(&"rm -rf /".to_string()),
                "{c}: {:?}",
                commands(c)
            );
        }
        assert!(sure("bash script.sh"));
        assert!(sure("bash -x script.sh --verbose"));
        assert_eq!(
            commands("bash -o pipefail -c 'rm -rf /'")[1..],
            ["rm -rf /"]
        );
        assert!(sure("echo $HOME \"${x}\" $1 \"$@\""));
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}x{}", "{ ".repeat(3000), "; }".repeat(3000));
        let analysis = analyse(&deep);
        assert_eq!(analysis.commands.len(), 1);
        let subs = format!("echo {}x{}", "$(".repeat(100), ")".repeat(100));
        let analysis = analyse(&subs);
        assert!(!analysis.unsure.is_empty());
        let too_deep = "(".repeat(MAX_NESTING + 1);
        assert!(!analyse(&too_deep).unsure.is_empty());
    }

    proptest::proptest! {
        /// Whatever the text, the walk ends with an answer (the parser's
        /// panics, if any, are caught; its recursion has the stack it needs).
        #[test]
        fn any_text_gets_an_answer(text in "[a-z $(){}<>|&;'\"`!\\\n#=*~-]{0,64}") {
            let analysis = analyse(&text);
            proptest::prop_assert!(analysis.commands.iter().all(|c| c.starts.iter().all(|&s| s < c.words.len())));
        }
    }

    #[test]
    fn rule_words_are_one_plain_command() {
        assert_eq!(
            rule_words("git  'status' ").unwrap(),
            [ShellWord::literal("git"), ShellWord::literal("status")]
        );
        assert_eq!(
            rule_words("FOO=1 ls *.rs").unwrap(),
            [
                ShellWord::literal("FOO=1"),
                ShellWord::literal("ls"),
                ShellWord::expanded("*.rs")
            ]
        );
        for bad in [
            "a && b",
            "a; b",
            "a | b",
            "a &",
            "a > f",
            "echo $(x)",
            "echo `x`",
            "! a",
            "",
            "(a)",
            "echo 'x",
        ] {
            assert!(rule_words(bad).is_err(), "{bad}");
        }
    }
}
