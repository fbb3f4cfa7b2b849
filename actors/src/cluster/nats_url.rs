//! The NATS server address a node connects to, as configured
//! (`[cluster] nats_url`): one URL, or several separated by commas (the
//! servers of a NATS cluster).
//!
//! Exists so that credentials in the URL (`nats://user:password@host`, or a
//! token as `nats://TOKEN@host`; percent-encoded where need be) reach the
//! connection — async-nats 0.50 does not read them from the URL itself, so
//! they are taken out here and given as options — and nothing else:
//! [`NatsUrl`]'s `Display` and `Debug`, and so every error and log line
//! naming the server, show `***` in their place. Never keeps the text as
//! given; never shows a password, even of an address it could not parse.

use crate::settings::redact_nats_address as redact;
use async_nats::ServerAddr;
use std::fmt;
use std::str::FromStr;

/// Why an address could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatsUrlError {
    #[error("no NATS server address given")]
    Empty,
    #[error("NATS server address {url} is invalid: {reason}")]
    Invalid { url: String, reason: String },
    #[error(
        "the NATS server addresses {url} carry different credentials: one connection has one \
         user (or token) for every server"
    )]
    MixedCredentials { url: String },
}

/// How the connection authenticates, from the URL.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Credentials {
    UserPassword { user: String, password: String },
    Token(String),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::UserPassword { .. } => f.write_str("UserPassword(***)"),
            Credentials::Token(_) => f.write_str("Token(***)"),
        }
    }
}

/// One or more NATS server addresses; shown with any credentials redacted.
#[derive(Clone)]
pub struct NatsUrl {
    servers: Vec<ServerAddr>,
    credentials: Option<Credentials>,
    shown: String,
}

impl NatsUrl {
    /// The addresses in `text`, separated by commas: `nats://host:port`,
    /// `tls://…`, or `host:port` (`nats://` assumed; port 4222 by default).
    pub fn parse(text: &str) -> Result<NatsUrl, NatsUrlError> {
        let parts: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() {
            return Err(NatsUrlError::Empty);
        }
        let shown = parts
            .iter()
            .map(|p| redact(p))
            .collect::<Vec<_>>()
            .join(",");
        let mut servers = Vec::with_capacity(parts.len());
        let mut credentials = None;
        for part in &parts {
            let server = ServerAddr::from_str(part).map_err(|e| NatsUrlError::Invalid {
                url: redact(part),
                // async-nats says what is wrong without repeating the text.
                reason: e.to_string(),
            })?;
            if let Some(these) = credentials_of(&server) {
                if credentials.as_ref().is_some_and(|c| *c != these) {
                    return Err(NatsUrlError::MixedCredentials { url: shown });
                }
                credentials = Some(these);
            }
            servers.push(without_credentials(server, part)?);
        }
        Ok(NatsUrl {
            servers,
            credentials,
            shown,
        })
    }

    /// The servers to connect to.
    pub(super) fn servers(&self) -> &[ServerAddr] {
        &self.servers
    }

    /// The user and password, or the token, the addresses carry.
    pub(super) fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }
}

impl fmt::Display for NatsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for NatsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NatsUrl({:?})", self.shown)
    }
}

/// A user and password, or a token (a user alone), percent-decoded.
/// `server` without its user, password or token: the connection is given
/// them apart, and the client logs the addresses it connects to.
fn without_credentials(server: ServerAddr, text: &str) -> Result<ServerAddr, NatsUrlError> {
    if server.username().is_none() && server.password().is_none() {
        return Ok(server);
    }
    let mut url = server.into_inner();
    let stripped = url.set_username("").and_then(|()| url.set_password(None));
    stripped
        .map_err(|()| NatsUrlError::Invalid {
            url: redact(text),
            reason: "its credentials cannot be taken apart from the address".to_string(),
        })
        .and_then(|()| {
            ServerAddr::from_url(url).map_err(|e| NatsUrlError::Invalid {
                url: redact(text),
                reason: e.to_string(),
            })
        })
}

fn credentials_of(server: &ServerAddr) -> Option<Credentials> {
    let user = percent_decoded(server.username()?);
    Some(match server.password() {
        Some(password) => Credentials::UserPassword {
            user,
            password: percent_decoded(password),
        },
        None => Credentials::Token(user),
    })
}

/// `%XX` escapes decoded (a malformed one is kept as it is).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        for (given, shown) in [
            (
                "nats://alice:s3cret@nats.example:4222",
                "nats://***@nats.example:4222",
            ),
            ("nats://T0KEN@10.0.0.1", "nats://***@10.0.0.1"),
            ("tls://u:p@a:1/x?y", "tls://***@a:1/x?y"),
            ("u:p@host:4222", "***@host:4222"),
            ("nats://p@ss:w@rd@h:1", "nats://***@h:1"),
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
            ("localhost", "localhost"),
        ] {
            assert_eq!(redact(given), shown, "{given}");
        }
    }

    #[test]
    fn a_url_shows_redacted_in_display_and_debug() {
        let url = NatsUrl::parse(
            "nats://alice:s3cret@127.0.0.1:4222, nats://alice:s3cret@127.0.0.1:4223",
        )
        .unwrap();
        assert_eq!(url.servers().len(), 2);
        let shown = format!("{url} {url:?} {:?}", url.credentials());
        assert!(
            !shown.contains("s3cret") && !shown.contains("alice"),
            "{shown}"
        );
        assert_eq!(
            url.to_string(),
            "nats://***@127.0.0.1:4222,nats://***@127.0.0.1:4223"
        );
    }

    #[test]
    fn an_invalid_address_is_refused_without_its_credentials() {
        let err = NatsUrl::parse("http://alice:s3cret@host:4222").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("http://***@host:4222"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        let err = NatsUrl::parse("nats://alice:s3cret@host:notaport").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert_eq!(NatsUrl::parse(" , ").unwrap_err(), NatsUrlError::Empty);
    }

    #[test]
    fn credentials_are_taken_from_the_url_decoded() {
        let url = NatsUrl::parse("nats://al%40ice:p%3Ass%2Fw@h:1").unwrap();
        assert_eq!(
            url.credentials(),
            Some(&Credentials::UserPassword {
                user: "al@ice".into(),
                password: "p:ss/w".into()
            })
        );
        let url = NatsUrl::parse("nats://T0KEN@h:1,nats://T0KEN@g:1").unwrap();
        assert_eq!(url.credentials(), Some(&Credentials::Token("T0KEN".into())));
        assert_eq!(format!("{:?}", url.credentials()), "Some(Token(***))");
        assert_eq!(NatsUrl::parse("nats://h:1").unwrap().credentials(), None);
        let err = NatsUrl::parse("nats://a:b@h:1,nats://c:d@g:1").unwrap_err();
        assert_eq!(
            err,
            NatsUrlError::MixedCredentials {
                url: "nats://***@h:1,nats://***@g:1".into()
            }
        );
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%41"), "%zzA");
    }

    #[test]
    fn a_bare_host_and_port_is_a_nats_url() {
        let url = NatsUrl::parse("127.0.0.1:4222").unwrap();
        assert_eq!(url.servers().len(), 1);
        assert_eq!(url.to_string(), "127.0.0.1:4222");
    }
}
