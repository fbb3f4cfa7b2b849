//! What the user types while a reply streams. A finished message (Enter)
//! waits to be sent after the reply, in order; the unfinished one goes back
//! into the prompt; after an interrupt everything typed goes back into the
//! prompt to be edited, nothing is sent on its own. As at the prompt, a
//! paste is text in the message however many lines it has, and Alt+Enter
//! (Shift+Enter where the terminal tells it apart) starts a new line of it.
//!
//! Pure: fed key events, never reads the terminal (the chat's key watcher
//! does) and never sends anything (the chat does).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::VecDeque;

/// What a key meant.
#[derive(Debug, PartialEq)]
pub enum Typed {
    /// Esc or Ctrl-C: stop the reply.
    Interrupt,
    /// Enter finished this line; it is queued.
    Queued(String),
    /// Enter finished this line while an approval request waits: it is
    /// the answer, not queued.
    Answer(String),
    /// The unfinished line changed, or the key means nothing here.
    Nothing,
}

#[derive(Debug, Default)]
pub struct TypeAhead {
    lines: VecDeque<String>,
    partial: String,
    /// An approval request waits: the next finished line answers it.
    pub answering: bool,
}

impl TypeAhead {
    /// Take one key, `answering` an approval request or not.
    pub fn key_while(&mut self, answering: bool, key: &KeyEvent) -> Typed {
        self.answering = answering;
        self.key(key)
    }

    /// Take one key.
    pub fn key(&mut self, key: &KeyEvent) -> Typed {
        if key.kind == KeyEventKind::Release {
            return Typed::Nothing;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => Typed::Interrupt,
            KeyCode::Char('c') if control => Typed::Interrupt,
            KeyCode::Char('u') if control => {
                self.partial.clear();
                Typed::Nothing
            }
            KeyCode::Char(_) if control || key.modifiers.contains(KeyModifiers::ALT) => {
                Typed::Nothing
            }
            KeyCode::Char(c) => {
                self.partial.push(c);
                Typed::Nothing
            }
            KeyCode::Tab => {
                self.partial.push('\t');
                Typed::Nothing
            }
            KeyCode::Backspace => {
                self.partial.pop();
                Typed::Nothing
            }
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
            {
                self.partial.push('\n');
                Typed::Nothing
            }
            KeyCode::Enter => {
                let line = std::mem::take(&mut self.partial);
                if line.trim().is_empty() {
                    return Typed::Nothing;
                }
                if self.answering {
                    return Typed::Answer(line);
                }
                self.lines.push_back(line.clone());
                Typed::Queued(line)
            }
            _ => Typed::Nothing,
        }
    }

    /// Text pasted while the reply streams joins the unfinished message,
    /// newlines and all (Enter sends it).
    pub fn paste(&mut self, text: &str) {
        self.partial
            .push_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
    }

    /// The next queued line, to be sent now.
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.pop_front()
    }

    /// The unfinished line, for the prompt; only once no line is queued.
    pub fn take_partial(&mut self) -> String {
        std::mem::take(&mut self.partial)
    }

    /// After an interrupt: the queued lines go back into the unfinished
    /// text (one per line, before it), for the prompt; nothing stays queued.
    pub fn unqueue(&mut self) {
        let mut all: Vec<String> = self.lines.drain(..).collect();
        if !self.partial.is_empty() {
            all.push(std::mem::take(&mut self.partial));
        }
        self.partial = all.join("\n");
    }

    /// A line that could not be sent goes back, before everything else
    /// typed, into the prompt; nothing stays queued.
    pub fn give_back(&mut self, line: String) {
        self.lines.push_front(line);
        self.unqueue();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(ahead: &mut TypeAhead, text: &str) -> Vec<Typed> {
        text.chars()
            .map(|c| match c {
                '\n' => ahead.key(&KeyEvent::from(KeyCode::Enter)),
                '\x08' => ahead.key(&KeyEvent::from(KeyCode::Backspace)),
                c => ahead.key(&KeyEvent::from(KeyCode::Char(c))),
            })
            .collect()
    }

    #[test]
    fn finished_lines_queue_in_order_and_the_rest_goes_back_to_the_prompt() {
        let mut ahead = TypeAhead::default();
        let said = typed(&mut ahead, "first\nsecomd\x08\x08nd\nthi");
        assert!(said.contains(&Typed::Queued("first".into())));
        assert!(said.contains(&Typed::Queued("second".into())));
        assert_eq!(ahead.next_line().as_deref(), Some("first"));
        assert_eq!(ahead.next_line().as_deref(), Some("second"));
        assert_eq!(ahead.next_line(), None);
        assert_eq!(ahead.take_partial(), "thi");
        assert_eq!(ahead.take_partial(), "");
    }

    #[test]
    fn empty_lines_are_not_queued_and_control_keys_type_nothing() {
        let mut ahead = TypeAhead::default();
        typed(&mut ahead, "\n  \n");
        let ctrl_a = KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL);
        assert_eq!(ahead.key(&ctrl_a), Typed::Nothing);
        assert_eq!(ahead.next_line(), None);
        assert_eq!(ahead.take_partial(), "", "a blank line is dropped on Enter");
    }

    #[test]
    fn esc_and_ctrl_c_interrupt_and_ctrl_u_clears_the_line() {
        let mut ahead = TypeAhead::default();
        assert_eq!(ahead.key(&KeyEvent::from(KeyCode::Esc)), Typed::Interrupt);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(ahead.key(&ctrl_c), Typed::Interrupt);
        typed(&mut ahead, "oops");
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        ahead.key(&ctrl_u);
        assert_eq!(ahead.take_partial(), "");
    }

    #[test]
    fn after_an_interrupt_everything_typed_comes_back_as_one_text() {
        let mut ahead = TypeAhead::default();
        typed(&mut ahead, "one\ntwo\nthr");
        ahead.unqueue();
        assert_eq!(ahead.next_line(), None);
        assert_eq!(ahead.take_partial(), "one\ntwo\nthr");
    }

    #[test]
    fn a_paste_is_one_message_however_many_lines_it_has() {
        let mut ahead = TypeAhead::default();
        typed(&mut ahead, "a");
        ahead.paste("bc\r\nde\nf");
        assert_eq!(ahead.next_line(), None, "nothing is sent by a paste");
        assert_eq!(
            typed(&mut ahead, "\n"),
            [Typed::Queued("abc\nde\nf".into())]
        );
        assert_eq!(ahead.next_line().as_deref(), Some("abc\nde\nf"));
    }

    #[test]
    fn alt_or_shift_enter_starts_a_new_line_of_the_message() {
        let mut ahead = TypeAhead::default();
        typed(&mut ahead, "one");
        for modifier in [KeyModifiers::ALT, KeyModifiers::SHIFT] {
            let enter = KeyEvent::new(KeyCode::Enter, modifier);
            assert_eq!(ahead.key(&enter), Typed::Nothing);
        }
        typed(&mut ahead, "two\n");
        assert_eq!(ahead.next_line().as_deref(), Some("one\n\ntwo"));
    }

    #[test]
    fn a_line_that_could_not_be_sent_goes_back_first_into_the_prompt() {
        let mut ahead = TypeAhead::default();
        typed(&mut ahead, "second\nthi");
        let first = "first".to_string();
        ahead.give_back(first);
        assert_eq!(ahead.next_line(), None, "nothing is sent on its own");
        assert_eq!(ahead.take_partial(), "first\nsecond\nthi");
    }
}
