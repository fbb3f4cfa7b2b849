//! `${VAR}` expansion in configuration strings.
//!
//! `${VAR}` is replaced by the environment variable's value; `${VAR:-text}`
//! falls back to `text` when the variable is unset or empty. A `$` not
//! followed by `{` is kept as is.

/// Expand `text` using `lookup`; on an unset variable without a fallback,
/// returns its name.
pub fn expand_with(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, fallback) = match inner.split_once(":-") {
            Some((n, f)) => (n, Some(f)),
            None => (inner, None),
        };
        match (lookup(name).filter(|v| !v.is_empty()), fallback) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(f)) => out.push_str(f),
            (None, None) => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Expand from the process environment.
pub fn expand(text: &str) -> Result<String, String> {
    expand_with(text, |name| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_fallbacks() {
        assert_eq!(expand_with("${HOME}/x", env), Ok("/home/u/x".into()));
        assert_eq!(expand_with("${NOPE:-dflt}", env), Ok("dflt".into()));
        assert_eq!(expand_with("${EMPTY:-dflt}", env), Ok("dflt".into()));
        assert_eq!(
            expand_with("cost $5 ${HOME}", env),
            Ok("cost $5 /home/u".into())
        );
        assert_eq!(
            expand_with("unterminated ${HOME", env),
            Ok("unterminated ${HOME".into())
        );
    }

    #[test]
    fn unset_variable_is_named() {
        assert_eq!(expand_with("a ${MISSING} b", env), Err("MISSING".into()));
    }
}
