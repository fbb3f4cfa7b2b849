//! `web_fetch(domain:HOST)`: the host a `web_fetch` call reaches, and the
//! rules about it.
//!
//! `domain:docs.rs` is that host exactly; `domain:*.rust-lang.org` is any
//! host beneath it (`blog.rust-lang.org`), not the domain itself. Hosts
//! are compared without regard to case and without a trailing dot. The
//! host of a call is its `url` argument's, parsed as the tool parses it
//! (a URL that does not parse has none). Pure, like the rest of the
//! rules: nothing is resolved or fetched.

/// The tool whose rules name a domain; its URL is the `url` argument.
pub(super) const WEB_FETCH: &str = "web_fetch";

/// What a domain specifier looks like, for errors.
pub(super) const EXPECTED: &str = "web_fetch(domain:HOST) or web_fetch(domain:*.HOST)";

/// A domain as a rule names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Domain {
    /// Lower-case, without a trailing dot.
    pub host: String,
    /// `*.HOST`: the hosts beneath it.
    pub subdomains: bool,
}

impl Domain {
    /// Reads `domain:HOST` (the text inside the parentheses).
    pub fn parse(specifier: &str) -> Result<Domain, String> {
        let specifier = specifier.trim();
        let Some(host) = specifier.strip_prefix("domain:") else {
            return Err(format!(
                "`{specifier}` is not a domain: web_fetch rules name one as `domain:HOST`"
            ));
        };
        let host = host.trim();
        let (host, subdomains) = match host.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (host, false),
        };
        let host = normalize(host);
        if host.is_empty() {
            return Err("the domain is empty".into());
        }
        // An IPv6 address as URLs write it: `[::1]`.
        let ipv6 = |h: &str| {
            h.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .is_some_and(|inner| {
                    !inner.is_empty()
                        && inner
                            .chars()
                            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
                })
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
        if ipv6(&host) && !subdomains {
            return Ok(Domain { host, subdomains });
        }
        if !host.chars().all(valid) || host.starts_with('.') || host.contains("..") {
            return Err(format!(
                "`{host}` is not a host name (letters, digits, `-` and `.`; `*.` only at the start)"
            ));
        }
        Ok(Domain { host, subdomains })
    }

    /// Whether `host` (normalised) is this domain's.
    pub fn matches(&self, host: &str) -> bool {
        if self.subdomains {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'))
        } else {
            host == self.host
        }
    }

    /// The rule naming exactly `host`.
    pub fn exactly(host: &str) -> Domain {
        Domain {
            host: normalize(host),
            subdomains: false,
        }
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let star = if self.subdomains { "*." } else { "" };
        write!(f, "domain:{star}{}", self.host)
    }
}

/// A host lower-case, without a trailing dot.
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The host a `web_fetch` call with this `url` argument reaches, when it is
/// an http(s) URL with a host.
pub(super) fn host_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?;
    (!host.is_empty()).then(|| normalize(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_is_that_host_and_a_star_the_hosts_beneath_it() {
        let exact = Domain::parse("domain:Docs.RS.").unwrap();
        assert_eq!(exact.to_string(), "domain:docs.rs");
        assert!(exact.matches("docs.rs"));
        assert!(!exact.matches("evil-docs.rs"));
        assert!(!exact.matches("sub.docs.rs"));
        let star = Domain::parse(" domain: *.rust-lang.org ").unwrap();
        assert_eq!(star.to_string(), "domain:*.rust-lang.org");
        assert!(star.matches("blog.rust-lang.org"));
        assert!(star.matches("a.b.rust-lang.org"));
        assert!(!star.matches("rust-lang.org"));
        assert!(!star.matches("evilrust-lang.org"));
    }

    #[test]
    fn what_is_not_a_domain_says_what_was_expected() {
        assert!(
            Domain::parse("docs.rs")
                .unwrap_err()
                .contains("domain:HOST")
        );
        assert!(Domain::parse("domain:").unwrap_err().contains("empty"));
        assert!(
            Domain::parse("domain:a b")
                .unwrap_err()
                .contains("not a host name")
        );
        assert!(
            Domain::parse("domain:a.*.b")
                .unwrap_err()
                .contains("not a host name")
        );
        assert!(
            Domain::parse("domain:https://x")
                .unwrap_err()
                .contains("not a host name")
        );
    }

    #[test]
    fn an_ipv6_host_reads_back_as_urls_write_it() {
        let host = host_of("http://[::1]:8080/x").unwrap();
        assert_eq!(host, "[::1]");
        let domain = Domain::parse(&format!("domain:{host}")).unwrap();
        assert!(domain.matches(&host));
        assert_eq!(domain, Domain::exactly(&host));
        assert!(Domain::parse("domain:*.[::1]").is_err());
    }

    #[test]
    fn the_host_of_a_call_is_its_urls() {
        assert_eq!(host_of("https://Docs.rs/serde").as_deref(), Some("docs.rs"));
        assert_eq!(
            host_of("http://127.0.0.1:8080/x").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(host_of("ftp://docs.rs/x"), None);
        assert_eq!(host_of("docs.rs/serde"), None);
    }
}
