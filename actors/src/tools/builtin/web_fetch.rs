//! The `web_fetch` tool: GETs an http(s) URL and returns the page as text,
//! HTML turned into Markdown (htmd, a maintained turndown.js port).
//!
//! Why it exists: every peer agent can read documentation on the web; a
//! `curl` through `bash` would return raw HTML and bypass the domain rules.
//!
//! What it keeps to, and must never do:
//! - only `http` and `https`, checked on the URL given and on every
//!   redirect; a redirect is followed only on the same host (never from
//!   https down to http), and a redirect to another host is returned to
//!   the model to fetch with a call of its own, so the permission rules
//!   (`web_fetch(domain:HOST)`) see every host contacted;
//! - only text: `text/*`, JSON, XML, JavaScript and the like; an image or
//!   another binary body is refused, naming its content type, before it is
//!   read;
//! - at most [`MAX_BODY_BYTES`] read of a body (the rest is left unread
//!   and the answer says so), the Markdown cut to `[tools] max_output_bytes`
//!   keeping its start;
//! - never when `[sandbox] network = false`: it says so instead;
//! - a time limit per request, its own User-Agent, and no proxy taken from
//!   the environment (the host the rules allowed is the host contacted).

use super::{BuiltinTool, ToolContext, ToolError, ToolOutput, blocking};
use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::Duration;
use url::Url;

/// The most bytes of a body read.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// Same-host redirects followed before giving up.
const MAX_REDIRECTS: usize = 10;
/// How long one request may take, from connecting to the end of the body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct WebFetch;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The http:// or https:// URL to fetch.
    pub url: String,
}

impl BuiltinTool for WebFetch {
    const NAME: &'static str = "web_fetch";
    const DESCRIPTION: &'static str = "Fetch an http:// or https:// URL and return its \
        text: HTML as Markdown; plain text, JSON, XML and JavaScript as they are; images and \
        other binary files are refused. Same-host redirects are followed; a redirect to another \
        host is returned to you, to fetch with another call. Long pages are cut, keeping their \
        start.";
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        web_fetch(params, ctx)
    }
}

async fn web_fetch(params: Params, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let url = parse_url(&params.url)?;
    if !ctx.sandbox.network {
        return Err(ToolError::failed(format!(
            "Not fetched: network access is turned off for this session ([sandbox] \
             network = false in the configuration), so web_fetch cannot reach {}. Work \
             without it, or ask the user to allow network access.",
            url
        )));
    }
    let cancel = ctx.cancel.clone();
    tokio::select! {
        fetched = fetch(url, &ctx) => fetched,
        () = cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

/// `text` as a URL web_fetch may fetch.
fn parse_url(text: &str) -> Result<Url, ToolError> {
    let invalid = |detail: String| ToolError::InvalidArguments {
        tool: WebFetch::NAME.to_string(),
        detail,
    };
    let url = Url::parse(text.trim()).map_err(|e| {
        invalid(format!(
            "`url` is not a URL ({e}); expected an absolute http:// or https:// URL"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "`url` has the scheme `{}:`; only http:// and https:// URLs can be fetched",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("`url` names no host".to_string()));
    }
    Ok(url)
}

/// The one HTTP client of web_fetch: no redirects of its own (they are
/// checked here), no proxy from the environment.
fn client() -> Result<reqwest::Client, ToolError> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    // reqwest is built without a default TLS provider: ring's, as the
    // providers use.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .user_agent(concat!(
            "agentbus/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        .build()
        .map_err(|e| ToolError::failed(format!("could not set up the HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

async fn fetch(start: Url, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let client = client()?;
    let mut url = start;
    for _ in 0..=MAX_REDIRECTS {
        let response = client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/markdown, text/plain, application/json, application/xml;q=0.9, \
                 */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| ToolError::failed(format!("could not fetch {url}: {}", chain(&e))))?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let next = location
                .to_str()
                .ok()
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    ToolError::failed(format!(
                        "{url} redirected ({status}) to a location that is not a URL: {location:?}"
                    ))
                })?;
            match redirect(&url, &next) {
                Redirect::Follow => {
                    url = next;
                    continue;
                }
                Redirect::Report(why) => {
                    return Ok(ToolOutput::ok(format!(
                        "{url} redirected ({status}) to {next}, {why}. It was not followed: to \
                         read it, call web_fetch with url \"{next}\"."
                    )));
                }
                Redirect::Refuse(why) => {
                    return Err(ToolError::failed(format!(
                        "{url} redirected ({status}) to {next}, which web_fetch cannot follow: \
                         {why}"
                    )));
                }
            }
        }
        return read(url, response, ctx).await;
    }
    Err(ToolError::failed(format!(
        "{url}: more than {MAX_REDIRECTS} redirects on the same host; giving up"
    )))
}

/// What to do about a redirect from `from` to `to`.
#[derive(Debug, PartialEq)]
pub(super) enum Redirect {
    Follow,
    /// Tell the model the new URL (the permission rules see it then).
    Report(&'static str),
    Refuse(String),
}

pub(super) fn redirect(from: &Url, to: &Url) -> Redirect {
    if !matches!(to.scheme(), "http" | "https") {
        return Redirect::Refuse(format!(
            "its scheme is `{}:`, and only http:// and https:// are fetched",
            to.scheme()
        ));
    }
    let same_host = from
        .host_str()
        .zip(to.host_str())
        .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b));
    if !same_host {
        return Redirect::Report("another host");
    }
    if from.scheme() == "https" && to.scheme() == "http" {
        return Redirect::Report("the same host without TLS (http://)");
    }
    Redirect::Follow
}

/// The body of `response` (for `url`), as the model reads it.
async fn read(
    url: Url,
    mut response: reqwest::Response,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let status = response.status();
    let content_type = content_type(response.headers());
    let kind = match content_type.as_deref() {
        Some(mime) => Some(text_kind(mime).ok_or_else(|| {
            ToolError::failed(format!(
                "Not read: {url} is `{mime}`, not text. web_fetch reads only text (HTML, \
                 Markdown, plain text, JSON, XML, JavaScript and the like), never images or \
                 other binary files."
            ))
        })?),
        None => None,
    };
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ToolError::failed(format!("could not read {url}: {}", chain(&e))))?
    {
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    drop(response);
    let kind = match kind {
        Some(kind) => kind,
        // No content type: text only when it looks like text.
        None if looks_binary(&body) => {
            return Err(ToolError::failed(format!(
                "Not read: {url} has no content type and its body is not text; web_fetch reads \
                 only text (HTML, Markdown, plain text, JSON, XML, JavaScript and the like)."
            )));
        }
        None if sniff_html(&body) => Kind::Html,
        None => Kind::Text,
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    let text = match kind {
        Kind::Html => blocking(WebFetch::NAME, move || Ok(to_markdown(&text))).await?,
        Kind::Text => text,
    };
    let mut head = format!("URL: {url}\n");
    if let Some(mime) = &content_type {
        head.push_str(&format!("Content-Type: {mime}\n"));
    }
    let mut notes = Vec::new();
    if cut {
        notes.push(format!(
            "The body is longer than {MAX_BODY_BYTES} bytes; only its first {MAX_BODY_BYTES} \
             were read."
        ));
    }
    let budget = ctx.max_output_bytes.saturating_sub(head.len() + 200);
    let shown = if text.len() > budget {
        let end = floor_char_boundary(&text, budget);
        notes.push(format!(
            "[... {} more bytes of the page not shown: the output limit is {} bytes]",
            text.len() - end,
            ctx.max_output_bytes
        ));
        &text[..end]
    } else {
        text.as_str()
    };
    let mut out = head;
    out.push('\n');
    out.push_str(shown.trim_end());
    for note in notes {
        out.push_str("\n\n");
        out.push_str(&note);
    }
    if status.is_success() {
        Ok(ToolOutput::ok(out))
    } else {
        Ok(ToolOutput::error(format!(
            "HTTP {status} from {url}\n{out}"
        )))
    }
}

/// What a text body is turned into.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    Html,
    Text,
}

/// The media type of a response, lower-case, without parameters.
fn content_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let mime = value.split(';').next()?.trim().to_ascii_lowercase();
    (!mime.is_empty()).then_some(mime)
}

/// How a body of media type `mime` is read, or `None` when it is not text.
pub(super) fn text_kind(mime: &str) -> Option<Kind> {
    if mime == "text/html" || mime == "application/xhtml+xml" {
        return Some(Kind::Html);
    }
    let (kind, subtype) = mime.split_once('/')?;
    let texty = kind == "text"
        || subtype.ends_with("+json")
        || subtype.ends_with("+xml")
        || matches!(
            subtype,
            "json"
                | "xml"
                | "javascript"
                | "ecmascript"
                | "x-javascript"
                | "x-sh"
                | "x-shellscript"
                | "toml"
                | "yaml"
                | "x-yaml"
                | "x-ndjson"
                | "graphql"
                | "sql"
        );
    (kind == "text" || kind == "application").then_some(())?;
    texty.then_some(Kind::Text)
}

/// A body without a content type that is not text: NUL bytes, or not
/// UTF-8 in its first few KiB.
pub(super) fn looks_binary(body: &[u8]) -> bool {
    let start = &body[..body.len().min(8192)];
    if start.contains(&0) {
        return true;
    }
    match std::str::from_utf8(start) {
        Ok(_) => false,
        // Cut in the middle of a character at the end is still text.
        Err(e) => e.error_len().is_some(),
    }
}

fn sniff_html(body: &[u8]) -> bool {
    let start = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let start = start.trim_start();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// An HTML page as Markdown, without its scripts, styles and other parts
/// that are not text.
fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head",
        ])
        .build();
    match converter.convert(html) {
        Ok(markdown) => markdown,
        // html5ever reads any text; should it fail, the page as it is.
        Err(_) => html.to_string(),
    }
}

/// An error and its causes, joined: reqwest's own message is terse.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
