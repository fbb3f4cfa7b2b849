//! One shell word as the matcher compares it.
//!
//! A word is *literal* when its value is known without running anything:
//! quotes and backslashes are removed (`'a b'`, `"a b"` and `a\ b` are the
//! same word `a b`). Anything the shell would expand — `$VAR`, `~`, a glob
//! or brace pattern, `$(…)` — makes it non-literal, and then the matcher
//! keeps the word's source text as written: two non-literal words are the
//! same only when they are written the same way, and a non-literal word
//! never equals a literal one.
//!
//! Reading a word also collects the commands hidden in it (command
//! substitutions, to be checked as commands of their own) and what it could
//! not vouch for (`unsure`): expansions that can run code by themselves,
//! such as `${x:-$(cmd)}`, `${a[$(cmd)]}` or `$(( a[$(cmd)] ))`.

use brush_parser::ParserOptions;
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

/// A word of a command, compared by value when literal, by source text
/// otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct ShellWord {
    /// The value (literal) or the source text (non-literal).
    pub text: String,
    /// Whether `text` is the word's value, known without expanding anything.
    pub literal: bool,
}

impl ShellWord {
    /// A literal word.
    pub fn literal(text: impl Into<String>) -> Self {
        ShellWord {
            text: text.into(),
            literal: true,
        }
    }

    /// A word whose value is only known when the shell runs.
    pub fn expanded(source: impl Into<String>) -> Self {
        ShellWord {
            text: source.into(),
            literal: false,
        }
    }

    /// The last part of a command name (`/usr/bin/rm` → `rm`), or `None` if
    /// it has no directory part or is not literal.
    pub fn basename(&self) -> Option<ShellWord> {
        if !self.literal {
            return None;
        }
        let (_, base) = self.text.rsplit_once('/')?;
        (!base.is_empty()).then(|| ShellWord::literal(base))
    }

    /// How the word is written in a rule: literal words are quoted when they
    /// hold anything the shell would read specially, non-literal words are
    /// their source text.
    pub fn to_source(&self) -> String {
        if !self.literal {
            return self.text.clone();
        }
        let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=:+@%^,".contains(c);
        if !self.text.is_empty() && self.text.chars().all(safe) {
            self.text.clone()
        } else {
            quote(&self.text)
        }
    }
}

/// A command written back from its words, so that it reads as the same
/// words (a first word the shell would take for a keyword is quoted).
pub(super) fn command_source(words: &[ShellWord]) -> String {
    const RESERVED: [&str; 17] = [
        "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
        "in", "function", "select", "time", "coproc",
    ];
    let mut out: Vec<String> = words.iter().map(ShellWord::to_source).collect();
    if let (Some(first), Some(word)) = (out.first_mut(), words.first())
        && word.literal
        && RESERVED.contains(&word.text.as_str())
    {
        *first = quote(&word.text);
    }
    out.join(" ")
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A word read from its source text.
#[derive(Debug)]
pub(super) struct ReadWord {
    pub word: ShellWord,
    /// The source of each command substitution in it, `$(…)` or `` `…` ``.
    pub substitutions: Vec<String>,
    /// Why it might run something no command substitution shows.
    pub unsure: Vec<String>,
}

/// Reads one word (its source text, quotes included).
pub(super) fn read(source: &str, options: &ParserOptions) -> ReadWord {
    let mut reader = Reader::new(source);
    match brush_parser::word::parse(source, options) {
        Ok(pieces) => reader.pieces(&pieces, false),
        Err(e) => reader.unsure(format!("cannot read the word `{source}`: {e}")),
    }
    let word = match reader.value {
        Some(value) => ShellWord::literal(value),
        None => ShellWord::expanded(source),
    };
    ReadWord {
        word,
        substitutions: reader.substitutions,
        unsure: reader.unsure,
    }
}

/// Reads the body of a here-document whose delimiter is unquoted (so the
/// shell expands it): only what it runs matters.
pub(super) fn read_heredoc(body: &str, options: &ParserOptions) -> ReadWord {
    let mut reader = Reader::new(body);
    match brush_parser::word::parse_heredoc(body, options) {
        Ok(pieces) => reader.pieces(&pieces, true),
        Err(e) => reader.unsure(format!("cannot read a here-document: {e}")),
    }
    ReadWord {
        word: ShellWord::expanded(body),
        substitutions: reader.substitutions,
        unsure: reader.unsure,
    }
}

/// Walks the pieces of a word, building its value while it stays literal.
struct Reader<'s> {
    /// The text the pieces' indices point into.
    source: &'s str,
    /// The value so far; `None` once something expands.
    value: Option<String>,
    substitutions: Vec<String>,
    unsure: Vec<String>,
}

impl<'s> Reader<'s> {
    fn new(source: &'s str) -> Self {
        Reader {
            source,
            value: Some(String::new()),
            substitutions: Vec::new(),
            unsure: Vec::new(),
        }
    }

    fn push(&mut self, text: &str) {
        if let Some(value) = &mut self.value {
            value.push_str(text);
        }
    }

    fn expands(&mut self) {
        self.value = None;
    }

    fn unsure(&mut self, why: String) {
        self.expands();
        self.unsure.push(why);
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], quoted: bool) {
        for piece in pieces {
            self.piece(piece, quoted);
        }
    }

    fn piece(&mut self, piece: &WordPieceWithSource, quoted: bool) {
        match &piece.piece {
            WordPiece::Text(text) => {
                if hides_expansion(text) {
                    self.unsure(format!("cannot read `{text}`"));
                } else if !quoted && expands_unquoted(text) {
                    self.expands();
                } else {
                    self.push(text);
                }
            }
            WordPiece::SingleQuotedText(text) => self.push(text),
            WordPiece::EscapeSequence(escaped) => {
                let rest = escaped.strip_prefix('\\').unwrap_or(escaped);
                if rest != "\n" {
                    self.push(rest);
                }
            }
            WordPiece::DoubleQuotedSequence(inner) => self.pieces(inner, true),
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                self.pieces(inner, true);
                self.expands();
            }
            // ANSI-C quoting (`$'a\n'`) has escapes of its own: not decoded,
            // so the word is compared as written.
            WordPiece::AnsiCQuotedText(_) | WordPiece::TildeExpansion(_) => self.expands(),
            WordPiece::ParameterExpansion(expr) => {
                self.expands();
                if !is_plain(expr) {
                    let text = self.source.get(piece.start_index..piece.end_index);
                    self.unsure(format!(
                        "the expansion `{}` can run commands by itself",
                        text.unwrap_or("${…}")
                    ));
                }
            }
            WordPiece::CommandSubstitution(source)
            | WordPiece::BackquotedCommandSubstitution(source) => {
                self.expands();
                self.substitutions.push(source.clone());
            }
            WordPiece::ArithmeticExpression(expr) => self.unsure(format!(
                "the arithmetic expansion `$(({}))` can run commands through array subscripts",
                expr.value
            )),
        }
    }
}

/// `$x`, `${x}`, `$1`, `$@`, `${a[@]}`: expansions that only substitute a
/// value. Everything else (defaults, indirection, subscripts, …) may hold
/// code the shell runs.
fn is_plain(expr: &ParameterExpr) -> bool {
    match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect: false,
        } => matches!(
            parameter,
            Parameter::Positional(_)
                | Parameter::Special(_)
                | Parameter::Named(_)
                | Parameter::NamedWithAllIndices { .. }
        ),
        _ => false,
    }
}

/// Whether unquoted text would be expanded: a glob (`*`, `?`, `[…]`,
/// extended globs), a brace expansion (`{a,b}`, `{1..3}`) or a tilde.
fn expands_unquoted(text: &str) -> bool {
    if text.contains(['*', '?', '(', '~']) {
        return true;
    }
    let bracket = text.find('[').is_some_and(|i| text[i..].contains(']'));
    let brace = text.find('{').is_some_and(|i| {
        text[i..].find('}').is_some_and(|j| {
            let inside = &text[i..i + j];
            inside.contains(',') || inside.contains("..")
        })
    });
    bracket || brace
}

/// Text the word parser left as text but the shell would expand: a
/// backquote or a `$` followed by something (the parser is lenient with
/// malformed words; the shell is not).
fn hides_expansion(text: &str) -> bool {
    let dollar = text.as_bytes().windows(2).any(|pair| {
        pair[0] == b'$' && (pair[1].is_ascii_alphanumeric() || b"_{(@*#?$!-".contains(&pair[1]))
    });
    dollar || text.contains('`')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(source: &str) -> ReadWord {
        read(source, &ParserOptions::default())
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        for source in ["'a b'", "\"a b\"", r"a\ b", "'a'\" \"b", "a' 'b"] {
            let w = word(source);
            assert_eq!(w.word, ShellWord::literal("a b"), "{source}");
            assert!(w.substitutions.is_empty() && w.unsure.is_empty());
        }
        assert_eq!(word(r#""\$x \"q\"""#).word, ShellWord::literal(r#"$x "q""#));
        assert_eq!(word(r#""a\b""#).word, ShellWord::literal(r"a\b"));
        assert_eq!(word("''").word, ShellWord::literal(""));
    }

    #[test]
    fn expansions_keep_the_source_text() {
        for source in [
            "$HOME", "\"$x\"", "~/x", "*.rs", "a?", "[ab]", "{a,b}", "x{1..3}", "$'a\\n'", "HEAD~1",
        ] {
            let w = word(source);
            assert_eq!(w.word, ShellWord::expanded(source), "{source}");
            assert!(w.unsure.is_empty(), "{source}: {:?}", w.unsure);
        }
        // Not expanded by the shell: stays literal.
        for source in ["{}", "[", "]", "a,b", "-rf"] {
            assert!(word(source).word.literal, "{source}");
        }
    }

    #[test]
    fn command_substitutions_are_collected() {
        let w = word("\"$(rm -rf /)\"`id`x");
        assert!(!w.word.literal);
        assert_eq!(w.substitutions, ["rm -rf /", "id"]);
        assert!(w.unsure.is_empty());
    }

    #[test]
    fn expansions_that_run_code_are_unsure() {
        for source in [
            "${x:-$(id)}",
            "${a[$(id)]}",
            "${!x}",
            "$((a[$(id)]))",
            "${#x}",
        ] {
            let w = word(source);
            assert!(!w.word.literal, "{source}");
            assert!(!w.unsure.is_empty(), "{source}");
        }
    }

    #[test]
    fn heredoc_bodies_show_their_substitutions() {
        let w = read_heredoc("hello $(whoami)\n`id` $USER\n", &ParserOptions::default());
        assert_eq!(w.substitutions, ["whoami", "id"]);
        assert!(w.unsure.is_empty());
    }

    #[test]
    fn words_are_quoted_back_when_needed() {
        assert_eq!(ShellWord::literal("git").to_source(), "git");
        assert_eq!(ShellWord::literal("--x=a/b,c").to_source(), "--x=a/b,c");
        assert_eq!(ShellWord::literal("a b").to_source(), "'a b'");
        assert_eq!(ShellWord::literal("it's").to_source(), r"'it'\''s'");
        assert_eq!(ShellWord::literal("").to_source(), "''");
        assert_eq!(ShellWord::literal("~").to_source(), "'~'");
        assert_eq!(ShellWord::literal("*").to_source(), "'*'");
        assert_eq!(ShellWord::expanded("\"$x\"").to_source(), "\"$x\"");
        let words = [ShellWord::literal("done"), ShellWord::literal("done")];
        assert_eq!(command_source(&words), "'done' done");
        for text in ["a b", "it's", "", "~/x", "$x", "*", "a\nb", "\\"] {
            let back = word(&ShellWord::literal(text).to_source()).word;
            assert_eq!(back, ShellWord::literal(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn literal_words_read_back(text in "[ -~\n\t]{0,16}") {
            let back = word(&ShellWord::literal(text.clone()).to_source()).word;
            proptest::prop_assert_eq!(back, ShellWord::literal(text));
        }
    }

    #[test]
    fn basename_of_a_path() {
        assert_eq!(
            ShellWord::literal("/usr/bin/rm").basename(),
            Some(ShellWord::literal("rm"))
        );
        assert_eq!(ShellWord::literal("rm").basename(), None);
        assert_eq!(ShellWord::literal("dir/").basename(), None);
        assert_eq!(ShellWord::expanded("$d/rm").basename(), None);
    }
}
