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

#[cfg(test)]
mod tests {
    use super::ellipsize;

    #[test]
    fn cuts_after_whole_characters_only_when_too_long() {
        assert_eq!(ellipsize("héllo", 5), "héllo");
        assert_eq!(ellipsize("héllo", 2), "hé…");
        assert_eq!(ellipsize("", 0), "");
        assert_eq!(ellipsize("ab", 0), "…");
    }
}
