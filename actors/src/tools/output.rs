//! Keeping tool output to a size the model can read.

/// `text` cut to at most about `max_bytes`, keeping the head and the tail
/// (errors tend to be at the end) with a marker saying how much was left out.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let head_len = floor_char_boundary(text, max_bytes * 2 / 3);
    let tail_start = ceil_char_boundary(text, text.len() - (max_bytes - head_len));
    let omitted = tail_start - head_len;
    splice(&text[..head_len], &text[tail_start..], omitted, text.len())
}

/// Head and tail joined by the truncation marker.
fn splice(head: &str, tail: &str, omitted: usize, total: usize) -> String {
    format!("{head}\n[... {omitted} bytes truncated; output was {total} bytes ...]\n{tail}")
}

/// A byte stream of unknown (possibly endless) length, captured in bounded
/// memory: the first `limit` bytes and the last `limit` bytes are kept, the
/// middle is only counted. [`finish`](Self::finish) renders it like
/// [`truncate_middle`] would render the whole stream.
#[derive(Debug)]
pub(crate) struct HeadTailBuffer {
    limit: usize,
    head: Vec<u8>,
    /// Holds up to `2 * limit` bytes between trims; only the last `limit`
    /// bytes count.
    tail: Vec<u8>,
    total: usize,
}

impl HeadTailBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        HeadTailBuffer {
            limit,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len());
        let room = self.limit.saturating_sub(self.head.len());
        let (to_head, to_tail) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend_from_slice(to_tail);
        if self.tail.len() > self.limit.saturating_mul(2) {
            let excess = self.tail.len() - self.limit;
            self.tail.drain(..excess);
        }
    }

    /// Whether nothing has been captured.
    pub(crate) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The captured text (invalid UTF-8 replaced), at most about `max_bytes`
    /// long, with a marker in the middle if anything was left out.
    pub(crate) fn finish(&self, max_bytes: usize) -> String {
        let kept_tail = &self.tail[self.tail.len().saturating_sub(self.limit)..];
        if self.head.len() + kept_tail.len() == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(kept_tail);
            return truncate_middle(&String::from_utf8_lossy(&all), max_bytes);
        }
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(kept_tail);
        let head = &head[..floor_char_boundary(&head, max_bytes * 2 / 3)];
        let tail_budget = max_bytes.saturating_sub(head.len());
        let tail = &tail[ceil_char_boundary(&tail, tail.len().saturating_sub(tail_budget))..];
        let omitted = self.total.saturating_sub(head.len() + tail.len());
        splice(head, tail, omitted, self.total)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_middle("hello", 10), "hello");
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_a_marker() {
        let text = format!("{}{}", "a".repeat(1000), "z".repeat(1000));
        let out = truncate_middle(&text, 300);
        assert!(out.starts_with("aaaa"));
        assert!(out.ends_with("zzzz"));
        assert!(out.contains("bytes truncated; output was 2000 bytes"));
        assert!(out.len() < 400);
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "é".repeat(500);
        let out = truncate_middle(&text, 101);
        assert!(out.contains("truncated"));
    }

    #[test]
    fn head_tail_buffer_renders_short_streams_whole() {
        let mut buf = HeadTailBuffer::new(100);
        buf.push(b"hello ");
        buf.push(b"world");
        assert_eq!(buf.finish(100), "hello world");
    }

    #[test]
    fn head_tail_buffer_keeps_head_and_tail_of_long_streams_in_bounded_memory() {
        let mut buf = HeadTailBuffer::new(300);
        buf.push(&[b'a'; 1000]);
        for _ in 0..1000 {
            buf.push(&[b'm'; 100]);
        }
        buf.push(&[b'z'; 1000]);
        assert!(buf.head.len() + buf.tail.len() <= 900);
        let out = buf.finish(300);
        assert!(out.starts_with("aaaa"), "{out}");
        assert!(out.ends_with("zzzz"), "{out}");
        assert!(out.contains("output was 102000 bytes"), "{out}");
        assert!(out.len() < 400);
    }

    #[test]
    fn head_tail_buffer_matches_truncate_middle_when_nothing_was_dropped() {
        let text = format!("{}{}", "a".repeat(150), "z".repeat(150));
        let mut buf = HeadTailBuffer::new(200);
        buf.push(text.as_bytes());
        assert_eq!(buf.finish(200), truncate_middle(&text, 200));
    }
}
