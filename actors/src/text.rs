//! Small text helpers shared by layers that must not depend on each other
//! (the pure session core, the providers, the front ends).

/// `s` as it is when it has at most `max_chars` characters, otherwise its
/// first `max_chars` characters and `…`.
pub fn ellipsize(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// A count and its noun, agreeing: `1 turn`, `0 turns`, `2 model calls`.
/// `noun` is the singular; the plural adds `s`.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::{count, ellipsize};

    #[test]
    fn a_count_agrees_with_its_noun() {
        assert_eq!(count(1u64, "turn"), "1 turn");
        assert_eq!(count(0u64, "turn"), "0 turns");
        assert_eq!(count(2u32, "model call"), "2 model calls");
    }

    #[test]
    fn cuts_after_whole_characters_only_when_too_long() {
        assert_eq!(ellipsize("héllo", 5), "héllo");
        assert_eq!(ellipsize("héllo", 2), "hé…");
        assert_eq!(ellipsize("", 0), "");
        assert_eq!(ellipsize("ab", 0), "…");
    }
}
