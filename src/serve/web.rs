//! The web page at `/`: the files of `src/web` (no build step), compiled
//! into release builds, the third-party scripts among them copied
//! unchanged from npm with their licences (`src/web/vendor/README.md`),
//! and `/commands.json`, the built-in slash commands its suggestions
//! offer. The page itself needs no token: `GET /?token=TOKEN` (the link
//! `agentbus serve` prints) sets the page's cookie (`auth::COOKIE`) and
//! redirects to the same address without the token, and the page's API
//! calls and streams carry the cookie. It never puts the token into a
//! page, a URL it answers with, or a log.
//!
//! Caching: every file but the page is served under `/assets/ID/PATH`,
//! where ID names this set of files (a hash of all of them), so a browser
//! keeps them for a year and a new agentbus (new files, new ID) is fetched
//! at once. The page itself (`/`, which names ID) is revalidated each time
//! by its ETag: a second load transfers the page's headers and nothing
//! else. Everything is compressed (brotli or gzip) when the browser says
//! it takes it.
//!
//! Debug builds read the files from the source tree at each request, so a
//! change to the page shows at the next reload without a rebuild.

use agentbus_engine::protocol::system::CommandEntry;
use agentbus_engine::runtime::{COMMANDS, SlashCommand};
use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::Embed;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::sync::Arc;

/// What the page may load and run: its own files only. No inline script or
/// style, no `eval`, no images from elsewhere (a reply's Markdown cannot
/// make the browser fetch an address of the model's choosing), no frames.
/// `data:` images are the thumbnails of the images a query carries (read
/// from the user's files or from its `user` event, never from a reply) and
/// the favicon the page draws.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The page's files. Markdown files are notes for the people who keep
/// them, not part of the page.
#[derive(Embed)]
#[folder = "src/web/"]
#[exclude = "*.md"]
struct Files;

/// What `index.html` writes where the assets' URL prefix goes.
const ASSETS_MARK: &str = "{{assets}}";

/// What `index.html` writes where the page's modules are to be named, so
/// the browser fetches them all at once instead of one import level at a
/// time.
const PRELOAD_MARK: &str = "{{modulepreload}}";

/// A year: what an asset whose URL names its content may be kept for.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The page's routes (no token needed). `/?token=` sets the cookie when
/// it is one of `tokens`.
pub fn routes<S: Clone + Send + Sync + 'static>(tokens: Arc<super::auth::Tokens>) -> Router<S> {
    Router::new()
        .route(
            "/",
            get(move |uri: Uri, request: HeaderMap| {
                let tokens = tokens.clone();
                async move { index(&tokens, &uri, &request) }
            }),
        )
        .route("/assets/{id}/{*path}", get(asset))
        .route("/commands.json", get(commands))
        .layer(tower_http::compression::CompressionLayer::new())
}

/// The ID of this set of files: the start of a hash of every file's path
/// and content hash, in path order.
fn files_id() -> String {
    let mut names: Vec<Cow<'static, str>> = Files::iter().collect();
    names.sort();
    let mut hasher = Sha256::new();
    for name in names {
        if let Some(file) = Files::get(&name) {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(file.metadata.sha256_hash());
        }
    }
    hex(&hasher.finalize()[..8])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The prefix of the assets' URLs: `/assets/ID`. Worked out once in a
/// release build (its files never change); at each call in a debug build
/// (they are read from the source tree).
fn assets_prefix() -> Cow<'static, str> {
    if cfg!(debug_assertions) {
        return Cow::Owned(format!("/assets/{}", files_id()));
    }
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    Cow::Borrowed(PREFIX.get_or_init(|| format!("/assets/{}", files_id())))
}

/// A `<link rel="modulepreload">` for each of the page's modules
/// (`js/*.js`), in name order.
fn module_preloads() -> String {
    let mut modules: Vec<Cow<'static, str>> = Files::iter()
        .filter(|name| name.starts_with("js/") && name.ends_with(".js"))
        .collect();
    modules.sort();
    modules
        .iter()
        .map(|name| format!("<link rel=\"modulepreload\" href=\"{ASSETS_MARK}/{name}\">"))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Whether the request's `If-None-Match` names `etag` (or `*`).
fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

/// `body` with `headers`, or a 304 with them when the browser has `etag`.
fn answer(
    request: &HeaderMap,
    etag: String,
    mut headers: Vec<(header::HeaderName, HeaderValue)>,
    body: Vec<u8>,
) -> Response {
    let fresh = not_modified(request, &etag);
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.push((header::ETAG, etag));
    }
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body.into_response()
    };
    for (name, value) in headers {
        response.headers_mut().insert(name, value);
    }
    response
}

/// Whether the request reached us over https (directly, or through a
/// proxy that says so).
fn over_https(uri: &Uri, request: &HeaderMap) -> bool {
    uri.scheme_str() == Some("https")
        || request
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// `/?token=TOKEN`: a 303 to the same address without `token`, setting the
/// cookie when TOKEN is right and clearing it (with `refused` added to the
/// query, for the page's "token refused" view) when it is not.
fn exchange(tokens: &super::auth::Tokens, uri: &Uri, request: &HeaderMap) -> Response {
    let mut given = None;
    let mut rest = Vec::new();
    if let Ok(parsed) = reqwest::Url::parse(&format!("http://page/?{}", uri.query().unwrap_or("")))
    {
        for (key, value) in parsed.query_pairs() {
            if key == "token" {
                given = Some(value.into_owned());
            } else if key != "refused" {
                rest.push((key.into_owned(), value.into_owned()));
            }
        }
    }
    let right = given.filter(|given| tokens.knows(given));
    if right.is_some() {
        tracing::debug!("the page's link: the token is right, its cookie set");
    } else {
        tracing::debug!("the page's link: a wrong token, the cookie cleared");
        rest.push(("refused".into(), "1".into()));
    }
    let location = match reqwest::Url::parse("http://page/") {
        Ok(mut clean) if !rest.is_empty() => {
            clean.query_pairs_mut().extend_pairs(rest);
            format!("/?{}", clean.query().unwrap_or(""))
        }
        _ => "/".to_string(),
    };
    let secure = if over_https(uri, request) {
        "; Secure"
    } else {
        ""
    };
    let cookie = if let Some(token) = right {
        format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/{secure}",
            super::auth::COOKIE,
            super::auth::cookie_value(&token)
        )
    } else {
        format!(
            "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}",
            super::auth::COOKIE
        )
    };
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(&location),
        HeaderValue::from_str(&cookie),
    ) {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn index(tokens: &super::auth::Tokens, uri: &Uri, request: &HeaderMap) -> Response {
    if super::auth::query_has_token(uri) {
        return exchange(tokens, uri, request);
    }
    let Some(file) = Files::get("index.html") else {
        return (StatusCode::NOT_FOUND, "the page is missing from this build").into_response();
    };
    let html = String::from_utf8_lossy(&file.data)
        .replace(PRELOAD_MARK, &module_preloads())
        .replace(ASSETS_MARK, &assets_prefix());
    let etag = format!("\"{}\"", hex(&Sha256::digest(html.as_bytes())[..8]));
    let headers = vec![
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        // Nothing the page links to needs to know where it came from.
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    answer(request, etag, headers, html.into_bytes())
}

/// The content type of a file of the page, by its name.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        // The licences (LICENSE-NAME) and anything else: plain text.
        _ => "text/plain; charset=utf-8",
    }
}

/// A file of the page. Kept a year when the URL names the current files;
/// revalidated when it names others (a page loaded before an upgrade gets
/// the files there are now, and keeps them no longer than a reload).
async fn asset(Path((id, path)): Path<(String, String)>, request: HeaderMap) -> Response {
    // Only names of the page's own files: no way up or out of the folder.
    let inside = path
        .split('/')
        .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'));
    let file = (inside && path != "index.html")
        .then(|| Files::get(&path))
        .flatten();
    let Some(file) = file else {
        return (StatusCode::NOT_FOUND, format!("no file {path} in the page")).into_response();
    };
    let current = assets_prefix().strip_prefix("/assets/") == Some(id.as_str());
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()[..8]));
    let headers = vec![
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(&path)),
        ),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(if current { IMMUTABLE } else { "no-cache" }),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
    ];
    answer(&request, etag, headers, file.data.into_owned())
}

/// The built-in slash commands, in `/help`'s order, as `/help` and a
/// session's `session_started` list commands (`command`, `description`,
/// `name`): the page offers them as the user types `/`, followed by the
/// session's custom commands from its `session_started` event.
async fn commands() -> impl IntoResponse {
    let entries: Vec<CommandEntry> = COMMANDS.iter().map(SlashCommand::entry).collect();
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        axum::Json(entries),
    )
}
