//! Styled text for the terminal: a [`Span`] is text in one [`Style`], a
//! line is a list of spans; [`wrap`] fills lines to a width measured in
//! display columns (wide characters count two, escape codes nothing), and
//! [`Style::paint`] writes a span as SGR escape codes around its text.
//!
//! Pure: knows nothing of Markdown or of the terminal's size.

use unicode_width::UnicodeWidthChar;

/// A foreground colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// One of the terminal's 16 colours (0–15), as its theme draws them.
    Named(u8),
    /// 24-bit, written as such when the terminal says it takes it
    /// (`COLORTERM=truecolor`), as the nearest of the 256 colours otherwise.
    Rgb(u8, u8, u8),
}

pub const BLUE: Color = Color::Named(4);
pub const CYAN: Color = Color::Named(6);

/// How a span looks; the default is the terminal's own text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<Color>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub strike: bool,
}

impl Style {
    pub const PLAIN: Style = Style {
        fg: None,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        strike: false,
    };

    pub fn dimmed() -> Style {
        Style {
            dim: true,
            ..Style::PLAIN
        }
    }

    /// `text` between this style's escape codes and a reset (just `text`
    /// for the plain style).
    pub fn paint(&self, text: &str, truecolor: bool) -> String {
        let mut codes: Vec<String> = Vec::new();
        if self.bold {
            codes.push("1".into());
        }
        if self.dim {
            codes.push("2".into());
        }
        if self.italic {
            codes.push("3".into());
        }
        if self.underline {
            codes.push("4".into());
        }
        if self.strike {
            codes.push("9".into());
        }
        match self.fg {
            Some(Color::Named(n)) if n < 8 => codes.push(format!("3{n}")),
            Some(Color::Named(n)) => codes.push(format!("9{}", n.min(15) - 8)),
            Some(Color::Rgb(r, g, b)) if truecolor => codes.push(format!("38;2;{r};{g};{b}")),
            Some(Color::Rgb(r, g, b)) => codes.push(format!("38;5;{}", ansi256(r, g, b))),
            None => {}
        }
        if codes.is_empty() || text.is_empty() {
            return text.to_string();
        }
        format!("\x1b[{}m{text}\x1b[0m", codes.join(";"))
    }
}

/// The nearest of the 256 colours to an RGB colour: the 6×6×6 cube or the
/// grey ramp, whichever is closer.
pub fn ansi256(r: u8, g: u8, b: u8) -> u8 {
    const STEPS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let nearest = |v: u8| -> usize {
        (0..6)
            .min_by_key(|&i| (i32::from(STEPS[i]) - i32::from(v)).abs())
            .unwrap_or(0)
    };
    let (ri, gi, bi) = (nearest(r), nearest(g), nearest(b));
    let cube = (STEPS[ri], STEPS[gi], STEPS[bi]);
    let average = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let grey_index = (average.saturating_sub(8) / 10).min(23) as u8;
    let grey = 8 + 10 * grey_index;
    let distance = |(x, y, z): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    if distance((grey, grey, grey)) < distance(cube) {
        232 + grey_index
    } else {
        16 + 36 * ri as u8 + 6 * gi as u8 + bi as u8
    }
}

/// Text in one style. A span whose text is `"\n"` is a hard line break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn new(text: impl Into<String>, style: Style) -> Span {
        Span {
            text: text.into(),
            style,
        }
    }

    pub fn plain(text: impl Into<String>) -> Span {
        Span::new(text, Style::PLAIN)
    }

    pub fn hard_break() -> Span {
        Span::plain("\n")
    }
}

/// One line of spans.
pub type Line = Vec<Span>;

/// Display columns of `text` (tabs count as one: the renderer expands
/// them before measuring).
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Display columns of a line.
pub fn line_width(line: &[Span]) -> usize {
    line.iter().map(|s| width(&s.text)).sum()
}

/// A line written out: each span painted.
pub fn to_ansi(line: &[Span], truecolor: bool) -> String {
    line.iter()
        .map(|s| s.style.paint(&s.text, truecolor))
        .collect()
}

/// `text` cut into control-free pieces: tabs become four spaces and other
/// control characters (an escape sequence the model wrote) are dropped, so
/// nothing but our own codes reaches the terminal.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A word or a run of spaces, in one style.
struct Piece {
    text: String,
    style: Style,
    space: bool,
}

/// The spans filled into lines of at most `width` columns: words are kept
/// whole where they fit, spaces where a line breaks are dropped, a word
/// longer than a line is cut, and hard breaks end a line.
pub fn wrap(spans: &[Span], width_limit: usize) -> Vec<Line> {
    let limit = width_limit.max(1);
    let mut lines: Vec<Line> = vec![Vec::new()];
    let mut used = 0;
    // Words may span several spans (`**bold**text`): collect a whole word
    // before placing it.
    let mut word: Vec<Piece> = Vec::new();
    let mut pending_space: Vec<Piece> = Vec::new();

    fn push_piece(line: &mut Line, piece: &Piece) {
        match line.last_mut() {
            Some(last) if last.style == piece.style => last.text.push_str(&piece.text),
            _ => line.push(Span::new(piece.text.clone(), piece.style)),
        }
    }

    let place_word = |lines: &mut Vec<Line>,
                      used: &mut usize,
                      word: &mut Vec<Piece>,
                      spaces: &mut Vec<Piece>| {
        if word.is_empty() {
            return;
        }
        let word_width: usize = word.iter().map(|p| width(&p.text)).sum();
        let space_width: usize = spaces.iter().map(|p| width(&p.text)).sum();
        if *used > 0 && *used + space_width + word_width > limit {
            lines.push(Vec::new());
            *used = 0;
        }
        if *used > 0
            && let Some(line) = lines.last_mut()
        {
            for piece in spaces.iter() {
                push_piece(line, piece);
            }
            *used += space_width;
        }
        spaces.clear();
        for piece in word.drain(..) {
            // Cut what does not fit on a line of its own.
            let mut rest = piece.text.as_str();
            while !rest.is_empty() {
                let room = limit.saturating_sub(*used);
                let mut taken = 0;
                let mut cols = 0;
                for (i, c) in rest.char_indices() {
                    let w = c.width().unwrap_or(0);
                    if cols + w > room && (cols > 0 || *used > 0) {
                        break;
                    }
                    cols += w;
                    taken = i + c.len_utf8();
                }
                if taken == 0 {
                    lines.push(Vec::new());
                    *used = 0;
                    continue;
                }
                if let Some(line) = lines.last_mut() {
                    push_piece(
                        line,
                        &Piece {
                            text: rest[..taken].to_string(),
                            style: piece.style,
                            space: false,
                        },
                    );
                }
                *used += cols;
                rest = &rest[taken..];
                if !rest.is_empty() {
                    lines.push(Vec::new());
                    *used = 0;
                }
            }
        }
    };

    for span in spans {
        if span.text == "\n" {
            place_word(&mut lines, &mut used, &mut word, &mut pending_space);
            pending_space.clear();
            lines.push(Vec::new());
            used = 0;
            continue;
        }
        let mut current = String::new();
        let mut in_space: Option<bool> = None;
        for c in span.text.chars() {
            let space = c == ' ';
            if in_space.is_some_and(|s| s != space) {
                let piece = Piece {
                    text: std::mem::take(&mut current),
                    style: span.style,
                    space: !space,
                };
                if piece.space {
                    place_word(&mut lines, &mut used, &mut word, &mut pending_space);
                    pending_space.push(piece);
                } else {
                    word.push(piece);
                }
            }
            in_space = Some(space);
            current.push(c);
        }
        if !current.is_empty() {
            let piece = Piece {
                text: current,
                style: span.style,
                space: in_space == Some(true),
            };
            if piece.space {
                place_word(&mut lines, &mut used, &mut word, &mut pending_space);
                pending_space.push(piece);
            } else {
                word.push(piece);
            }
        }
    }
    place_word(&mut lines, &mut used, &mut word, &mut pending_space);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|s| s.text.as_str()).collect())
            .collect()
    }

    #[test]
    fn words_fill_lines_and_spaces_at_breaks_are_dropped() {
        let spans = [Span::plain("one two three four")];
        assert_eq!(texts(&wrap(&spans, 9)), ["one two", "three", "four"]);
        assert_eq!(texts(&wrap(&spans, 80)), ["one two three four"]);
    }

    #[test]
    fn a_word_across_styles_stays_whole() {
        let bold = Style {
            bold: true,
            ..Style::PLAIN
        };
        let spans = [
            Span::plain("aa "),
            Span::new("bb", bold),
            Span::plain("cc dd"),
        ];
        assert_eq!(texts(&wrap(&spans, 5)), ["aa", "bbcc", "dd"]);
    }

    #[test]
    fn long_words_are_cut_and_wide_characters_count_twice() {
        assert_eq!(
            texts(&wrap(&[Span::plain("abcdefgh")], 3)),
            ["abc", "def", "gh"]
        );
        assert_eq!(
            texts(&wrap(&[Span::plain("日本語 x")], 4)),
            ["日本", "語 x"]
        );
    }

    #[test]
    fn hard_breaks_end_lines() {
        let spans = [Span::plain("a"), Span::hard_break(), Span::plain("b")];
        assert_eq!(texts(&wrap(&spans, 10)), ["a", "b"]);
    }

    #[test]
    fn styles_become_sgr_codes_and_plain_stays_plain() {
        assert_eq!(Style::PLAIN.paint("x", false), "x");
        let heading = Style {
            bold: true,
            underline: true,
            fg: Some(Color::Named(5)),
            ..Style::PLAIN
        };
        assert_eq!(heading.paint("T", false), "\x1b[1;4;35mT\x1b[0m");
        let red = Style {
            fg: Some(Color::Rgb(255, 0, 0)),
            ..Style::PLAIN
        };
        assert_eq!(red.paint("r", true), "\x1b[38;2;255;0;0mr\x1b[0m");
        assert_eq!(red.paint("r", false), "\x1b[38;5;196mr\x1b[0m");
        assert_eq!(ansi256(128, 128, 128), 244);
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(sanitize("a\x1b[2Jb\tc\r\n"), "a[2Jb    c\n");
    }
}
