//! Code as the terminal shows it: syntect's bundled syntaxes and its
//! `base16-ocean.dark` theme, one line at a time, so that a fence still
//! streaming is highlighted line by line exactly as the whole block would
//! be. The syntaxes load once, on the first code block (a few tens of
//! milliseconds), never for an answer without code.
//!
//! The theme's own text colour is left out: plain code is in the
//! terminal's colour, readable on a light background as on a dark one.

use super::styled::{Color, Span, Style, sanitize};
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

const THEME: &str = "base16-ocean.dark";

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults();
        let theme = themes.themes.remove(THEME).unwrap_or_default();
        Assets {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            theme,
        }
    })
}

/// Highlights the lines of one code block in order.
pub struct CodeHighlighter {
    /// `None`: no syntax for the block's language (or none given): plain.
    lines: Option<HighlightLines<'static>>,
}

impl CodeHighlighter {
    /// A highlighter for code in `language` (a fence's first word:
    /// `rust`, `py`, `sh`, ...).
    pub fn new(language: &str) -> CodeHighlighter {
        let language = language.trim();
        if language.is_empty() {
            return CodeHighlighter { lines: None };
        }
        let assets = assets();
        let syntax = assets
            .syntaxes
            .find_syntax_by_token(language)
            .or_else(|| alias(language).and_then(|t| assets.syntaxes.find_syntax_by_token(t)));
        CodeHighlighter {
            lines: syntax.map(|s| HighlightLines::new(s, &assets.theme)),
        }
    }

    /// One line of code (without its newline) as spans.
    pub fn line(&mut self, line: &str) -> Vec<Span> {
        let text = sanitize(line);
        let Some(lines) = self.lines.as_mut() else {
            return vec![Span::plain(text)];
        };
        let assets = assets();
        let default = assets.theme.settings.foreground;
        let with_newline = format!("{text}\n");
        match lines.highlight_line(&with_newline, &assets.syntaxes) {
            Ok(regions) => regions
                .into_iter()
                .map(|(style, piece)| {
                    let piece = piece.trim_end_matches('\n');
                    let c = style.foreground;
                    let fg = (Some(c) != default).then_some(Color::Rgb(c.r, c.g, c.b));
                    Span::new(
                        piece,
                        Style {
                            fg,
                            bold: style.font_style.contains(FontStyle::BOLD),
                            italic: style.font_style.contains(FontStyle::ITALIC),
                            underline: style.font_style.contains(FontStyle::UNDERLINE),
                            ..Style::PLAIN
                        },
                    )
                })
                .filter(|s| !s.text.is_empty())
                .collect(),
            // A grammar that fails on a line: the rest of the block plain.
            Err(_) => {
                self.lines = None;
                vec![Span::plain(text)]
            }
        }
    }
}

/// Fence names the bundled syntaxes do not know by that name.
fn alias(language: &str) -> Option<&'static str> {
    Some(match language.to_ascii_lowercase().as_str() {
        "shell" | "console" | "zsh" | "bash" => "sh",
        "ts" | "typescript" | "tsx" => "js",
        "jsonc" | "json5" => "json",
        "toml" => "ini",
        "yml" => "yaml",
        "golang" => "go",
        "c++" => "cpp",
        "dockerfile" => "sh",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_unknown_ones_plain() {
        let mut rust = CodeHighlighter::new("rust");
        let spans = rust.line("fn main() { let x = \"hi\"; }");
        let text: String = spans.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(text, "fn main() { let x = \"hi\"; }");
        assert!(spans.iter().any(|s| s.style.fg.is_some()), "{spans:?}");

        let mut unknown = CodeHighlighter::new("no-such-language");
        assert_eq!(unknown.line("x = 1"), vec![Span::plain("x = 1")]);
        let mut none = CodeHighlighter::new("");
        assert_eq!(none.line("x\ty"), vec![Span::plain("x    y")]);
    }

    #[test]
    fn state_carries_from_line_to_line() {
        // The second line is inside a block comment opened on the first.
        let mut whole = CodeHighlighter::new("rust");
        let first = whole.line("/* open");
        let second = whole.line("still comment */ fn");
        let mut fresh = CodeHighlighter::new("rust");
        assert_ne!(fresh.line("still comment */ fn"), second);
        assert!(!first.is_empty());
    }
}
