//! Tool names for MCP tools: `mcp__<server>__<tool>`, made of
//! `[A-Za-z0-9_-]` and at most 64 characters (the limit models accept).
//! Longer names are cut and end in a short hash of the full name, so the
//! same server and tool always get the same name.

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// The model-facing name of `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let hash = format!("{:08x}", fnv1a(&format!("{server}\u{0}{tool}")));
    format!("{}_{hash}", &full[..MAX_TOOL_NAME - hash.len() - 1])
}

/// The prefix every tool name of `server` starts with.
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", sanitize(server))
}

/// The same name with a hash of `salt` appended, for the loser of a clash
/// (two servers whose names sanitise to the same text).
pub fn disambiguated(name: &str, salt: &str) -> String {
    let hash = format!("{:08x}", fnv1a(salt));
    let keep = name.len().min(MAX_TOOL_NAME - hash.len() - 1);
    format!("{}_{hash}", &name[..keep])
}

fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 32 bits: small, stable across releases and platforms.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(tool_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(
            tool_name("my server", "get.sum!"),
            "mcp__my_server__get_sum_"
        );
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let a = tool_name(
            "a-very-long-server-name-indeed",
            "and-an-even-longer-tool-name-than-that",
        );
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert_eq!(
            a,
            tool_name(
                "a-very-long-server-name-indeed",
                "and-an-even-longer-tool-name-than-that"
            )
        );
        let b = tool_name(
            "a-very-long-server-name-indeed",
            "and-an-even-longer-tool-name-than-this",
        );
        assert_ne!(a, b, "different tools keep different names");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn disambiguated_names_stay_short_and_differ() {
        let name = tool_name("my server", "x");
        let other = disambiguated(&name, "my_server/x");
        assert_ne!(name, other);
        assert!(other.len() <= MAX_TOOL_NAME);
        assert_eq!(disambiguated(&"m".repeat(64), "s").len(), MAX_TOOL_NAME);
    }
}
