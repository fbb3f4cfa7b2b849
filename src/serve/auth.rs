//! Who may call the API, and who they are: the holder of a token.
//!
//! The admin token (named `admin`) comes from `[server] token` when
//! configured; otherwise, on loopback, it is made once, at random, and kept
//! in `DATA_DIR/token` (mode 0600). `[server.tokens.NAME]` adds tokens read
//! from the environment (`token_env`), each with a role (`admin`, `user`,
//! `viewer`: what [`super::access`] lets it do) and limits (requests a
//! minute, here; busy sessions, in [`super::access`]). Listening on anything
//! but loopback requires a configured token. Requests carry one as
//! `Authorization: Bearer TOKEN`, or in the web page's cookie
//! (`agentbus_token`, HttpOnly, SameSite=Strict), which `GET /?token=TOKEN`
//! (the printed link) sets once before it redirects to a clean `/`. The
//! request then carries its [`Caller`] to the handlers.
//!
//! Never: take the token from a URL of the API (it would land in browser
//! history, proxy logs and screenshots: `?token=` there is refused, with a
//! message saying how to send it), let a cross-site form use the cookie (a
//! state-changing request that the cookie authenticates must carry
//! `Content-Type: application/json` or `X-Agentbus-Page: 1`, which a form
//! cannot send), or write a token or the cookie into a log (names only).

use super::error::ApiError;
use agentbus_engine::settings::{Role, TokenSettings};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The name of the admin token (`[server] token`, or the one kept in
/// `DATA_DIR/token`); no `[server.tokens.NAME]` may take it.
pub const ADMIN: &str = "admin";

/// The shortest token `[server.tokens.NAME]` takes: long enough not to be
/// guessed (a variable such as `HOME` holds no such value).
const MIN_TOKEN_CHARS: usize = 24;

/// Whether `name` can name a token: 1 to 64 letters, digits, `-`, `_`
/// or `.`.
pub fn is_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Who made a request: its token's name and what that token may do.
#[derive(Clone, Debug)]
pub struct Caller {
    pub name: Arc<str>,
    pub role: Role,
    /// At most this many of its sessions busy at once.
    pub max_busy_sessions: Option<u32>,
}

impl Caller {
    /// The admin token, with no limits.
    pub fn admin() -> Caller {
        Caller {
            name: Arc::from(ADMIN),
            role: Role::Admin,
            max_busy_sessions: None,
        }
    }
}

/// One token `serve` takes.
struct Holder {
    caller: Caller,
    token: String,
    cookie: String,
    limiter: Option<governor::DefaultDirectRateLimiter>,
}

/// Every token `serve` takes.
pub struct Tokens {
    holders: Vec<Holder>,
}

impl Tokens {
    /// The admin token (if any) and the `[server.tokens.NAME]` ones, read
    /// from their variables now. Fails naming the token whose variable is
    /// unset, whose name is not allowed, or whose value another one has.
    pub fn new(
        admin: Option<String>,
        named: &BTreeMap<String, TokenSettings>,
    ) -> anyhow::Result<Tokens> {
        let mut holders = Vec::new();
        if let Some(token) = admin {
            holders.push(Holder::new(Caller::admin(), token, None));
        }
        for (name, settings) in named {
            let at = format!("`[server.tokens.{name}]`");
            if name == ADMIN {
                anyhow::bail!(
                    "{at}: `{ADMIN}` is the name of `[server] token`; give this token another name"
                );
            }
            if !is_token_name(name) {
                anyhow::bail!(
                    "{at}: a token's name is 1 to 64 letters, digits, `-`, `_` or `.` (it names the token in events and the log)"
                );
            }
            let token = std::env::var(&settings.token_env)
                .ok()
                .map(|value| value.trim().to_string())
                .filter(|value| !value.is_empty())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{at}: the environment variable `{}` (its `token_env`) is not set; it must hold the token",
                        settings.token_env
                    )
                })?;
            if token.chars().count() < MIN_TOKEN_CHARS {
                anyhow::bail!(
                    "{at}: the token in `{}` is {} characters; a token needs at least {MIN_TOKEN_CHARS} (e.g. `openssl rand -hex 32`)",
                    settings.token_env,
                    token.chars().count()
                );
            }
            if let Some(same) = holders.iter().find(|h| h.token == token) {
                anyhow::bail!(
                    "{at}: its token is the same as `{}`'s; each token needs a value of its own",
                    same.caller.name
                );
            }
            let caller = Caller {
                name: Arc::from(name.as_str()),
                role: settings.role,
                max_busy_sessions: settings.max_busy_sessions,
            };
            let rate = match settings.requests_per_minute {
                None => None,
                Some(n) => Some(NonZeroU32::new(n).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{at}: `requests_per_minute` must be at least 1 (leave it out for no limit)"
                    )
                })?),
            };
            holders.push(Holder::new(caller, token, rate));
        }
        Ok(Tokens { holders })
    }

    /// The names and roles of the tokens, for the start-up message.
    pub fn names(&self) -> Vec<(Arc<str>, Role)> {
        self.holders
            .iter()
            .map(|h| (h.caller.name.clone(), h.caller.role))
            .collect()
    }

    /// Whether `given` is one of the tokens.
    pub fn knows(&self, given: &str) -> bool {
        self.by_token(given).is_some()
    }

    /// The holder of token `given` (every token compared, in constant time
    /// each).
    fn by_token(&self, given: &str) -> Option<&Holder> {
        find(&self.holders, |h| {
            constant_time_eq(given.as_bytes(), h.token.as_bytes())
        })
    }

    /// The holder whose cookie value is `given`.
    fn by_cookie(&self, given: &str) -> Option<&Holder> {
        find(&self.holders, |h| {
            constant_time_eq(given.as_bytes(), h.cookie.as_bytes())
        })
    }
}

/// The one holder `matches` (all compared: no early exit).
fn find(holders: &[Holder], matches: impl Fn(&Holder) -> bool) -> Option<&Holder> {
    holders
        .iter()
        .fold(None, |found, holder| match matches(holder) {
            true => Some(holder),
            false => found,
        })
}

impl Holder {
    fn new(caller: Caller, token: String, per_minute: Option<NonZeroU32>) -> Holder {
        Holder {
            cookie: cookie_value(&token),
            caller,
            token,
            limiter: per_minute
                .map(|n| governor::RateLimiter::direct(governor::Quota::per_minute(n))),
        }
    }

    /// Count a request against the token's limit: the seconds to wait
    /// when it is reached.
    fn spend(&self) -> Result<(), u64> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter.check().map_err(|not_until| {
            use governor::clock::Clock as _;
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

/// Where the token came from, for the start-up message.
pub enum TokenSource {
    Configured,
    File(PathBuf),
}

/// The admin token: `configured`, else (on loopback) the one kept in the
/// data dir. `None` off loopback when `[server.tokens.NAME]` gives the
/// only tokens (`named`).
pub fn token(
    configured: Option<String>,
    named: bool,
    data_dir: &Path,
    listen: &SocketAddr,
) -> anyhow::Result<Option<(String, TokenSource)>> {
    if let Some(token) = configured.filter(|t| !t.trim().is_empty()) {
        return Ok(Some((token, TokenSource::Configured)));
    }
    if !listen.ip().is_loopback() {
        if named {
            return Ok(None);
        }
        anyhow::bail!(
            "listening on {listen} (not loopback) needs a token set explicitly: `[server] token = \"${{AGENTBUS_TOKEN}}\"` (or `[server.tokens.NAME]`) in the configuration"
        );
    }
    let path = data_dir.join("token");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_string();
        if !existing.is_empty() {
            return Ok(Some((existing, TokenSource::File(path))));
        }
    }
    std::fs::create_dir_all(data_dir)?;
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot write the token to {}: {e}", path.display()))?
    };
    writeln!(file, "{token}")?;
    Ok(Some((token, TokenSource::File(path))))
}

/// The web page's cookie: the token, hex-encoded (any configured token
/// fits a cookie's value that way).
pub const COOKIE: &str = "agentbus_token";

/// The header the web page sends with every API call: a cross-site form
/// cannot send it, so a state-changing request authenticated by the cookie
/// alone needs it (or a JSON body's content type).
pub const PAGE_HEADER: &str = "x-agentbus-page";

/// The value of the cookie that holds `token`.
pub fn cookie_value(token: &str) -> String {
    token.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Whether the query string of `uri` has a `token` parameter.
pub fn query_has_token(uri: &axum::http::Uri) -> bool {
    uri.query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("token"))
    })
}

/// The value of the cookie `name` among the request's `Cookie` headers.
fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// Whether a request the cookie authenticates shows it comes from the page
/// itself (or at least not from a cross-site form): a safe method, the
/// page's header, or a JSON body.
fn not_a_form(request: &Request) -> bool {
    use axum::http::Method;
    let headers = request.headers();
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) || headers.contains_key(PAGE_HEADER)
        || headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// What a request without the token is told.
const HOW_TO_SEND: &str = "send `Authorization: Bearer TOKEN` (a web browser: open the link `agentbus serve` printed, which sets the page's cookie); `agentbus serve` printed where the token is";

/// Refuse requests under `/v1`, and to `/metrics`, without a token (401)
/// or past its token's rate (429); give the others their [`Caller`].
/// Other paths reach this layer only when nothing serves them: they get
/// their 404 as they are.
pub async fn require_token(
    State(tokens): State<Arc<Tokens>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let path = request.uri().path();
    if path != "/v1" && !path.starts_with("/v1/") && path != "/metrics" {
        return Ok(next.run(request).await);
    }
    let holder = identify(&tokens, &request)?;
    if let Err(seconds) = holder.spend() {
        tracing::debug!(token = %holder.caller.name, path = request.uri().path(), "refused: the token's requests a minute");
        return Err(ApiError::too_many(
            format!(
                "this token's requests a minute are spent (`requests_per_minute` of `[server.tokens.{}]`); try again in {seconds} s",
                holder.caller.name
            ),
            seconds,
        ));
    }
    request.extensions_mut().insert(holder.caller.clone());
    Ok(next.run(request).await)
}

/// The holder of the token `request` carries, or why there is none.
fn identify<'t>(tokens: &'t Tokens, request: &Request) -> Result<&'t Holder, ApiError> {
    let path = request.uri().path();
    if query_has_token(request.uri()) {
        // The path only: the query holds the token.
        tracing::debug!(path, "refused: the token in the address");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!(
                "the API does not take the token in the address (`?token=`: it would land in history and logs): {HOW_TO_SEND}"
            ),
        ));
    }
    let bearer = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(given) = bearer {
        return tokens.by_token(given).ok_or_else(|| {
            tracing::debug!(path, "refused: a wrong token in the header");
            ApiError::new(StatusCode::UNAUTHORIZED, "wrong token")
        });
    }
    match cookie(request.headers(), COOKIE).map(|given| tokens.by_cookie(given)) {
        Some(Some(holder)) if not_a_form(request) => Ok(holder),
        Some(Some(_)) => {
            tracing::debug!(path, "refused: the cookie alone on a form-like request");
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a request that changes something and is authenticated by the page's cookie needs `Content-Type: application/json` or `X-Agentbus-Page: 1` (or send `Authorization: Bearer TOKEN`)",
            ))
        }
        Some(None) => {
            tracing::debug!(path, "refused: a wrong token in the cookie");
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "wrong token (the page's cookie): open the link `agentbus serve` printed again",
            ))
        }
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("missing token: {HOW_TO_SEND}"),
        )),
    }
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
