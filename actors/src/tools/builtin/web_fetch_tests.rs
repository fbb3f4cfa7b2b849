//! `web_fetch` against a real HTTP server on this machine (axum): pages,
//! redirects, binary bodies, the size cap and `[sandbox] network`.

use super::web_fetch::{
    Kind, MAX_BODY_BYTES, Redirect, WebFetch, looks_binary, redirect, text_kind,
};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect as To};
use axum::routing::get;
use serde_json::json;
use std::net::SocketAddr;
use url::Url;

const PAGE: &str = "<!doctype html><html><head><title>Guide</title>\
    <style>body { color: red }</style><script>alert('no')</script></head>\
    <body><h1>Install</h1><p>Run <code>cargo add serde</code> and read \
    <a href=\"/more\">more</a>.</p><ul><li>one</li><li>two</li></ul></body></html>";

/// A server on 127.0.0.1 with every case the tests need.
async fn server() -> SocketAddr {
    let app = Router::new()
        .route(
            "/page",
            get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE) }),
        )
        .route("/moved", get(|| async { To::permanent("/page") }))
        .route(
            "/elsewhere",
            get(|| async { To::temporary("http://localhost:9/page") }),
        )
        .route("/ftp", get(|| async { To::temporary("ftp://127.0.0.1/x") }))
        .route(
            "/image",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', 0, 0],
                )
            }),
        )
        .route(
            "/json",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"a\": [1, 2]}",
                )
            }),
        )
        .route(
            "/big",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    "x".repeat(MAX_BODY_BYTES + 1000),
                )
            }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "<p>No such page</p>").into_response() }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn fetch(ctx: &ToolContext, url: String) -> Result<ToolOutput, ToolError> {
    WebFetch.call(json!({ "url": url }), ctx.clone()).await
}

fn ctx() -> ToolContext {
    ToolContext::new(std::env::temp_dir())
}

#[tokio::test]
async fn an_html_page_comes_back_as_markdown_without_scripts_or_styles() {
    let addr = server().await;
    let out = fetch(&ctx(), format!("http://{addr}/page")).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with(&format!(
            "URL: http://{addr}/page\nContent-Type: text/html\n"
        )),
        "{}",
        out.text
    );
    assert!(out.text.contains("# Install"), "{}", out.text);
    assert!(out.text.contains("Run `cargo add serde`"), "{}", out.text);
    assert!(out.text.contains("[more](/more)"), "{}", out.text);
    assert!(out.text.contains("one") && out.text.contains("two"));
    assert!(!out.text.contains("<h1>"), "{}", out.text);
    assert!(!out.text.contains("alert"), "{}", out.text);
    assert!(!out.text.contains("color: red"), "{}", out.text);
}

#[tokio::test]
async fn json_comes_back_as_it_is() {
    let addr = server().await;
    let out = fetch(&ctx(), format!("http://{addr}/json")).await.unwrap();
    assert!(out.text.ends_with("\n{\"a\": [1, 2]}"), "{}", out.text);
}

#[tokio::test]
async fn a_redirect_on_the_same_host_is_followed() {
    let addr = server().await;
    let out = fetch(&ctx(), format!("http://{addr}/moved")).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with(&format!("URL: http://{addr}/page\n")),
        "{}",
        out.text
    );
    assert!(out.text.contains("# Install"), "{}", out.text);
}

#[tokio::test]
async fn a_redirect_to_another_host_is_returned_not_followed() {
    let addr = server().await;
    let out = fetch(&ctx(), format!("http://{addr}/elsewhere"))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text
            .contains("redirected (307 Temporary Redirect) to http://localhost:9/page"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("call web_fetch with url \"http://localhost:9/page\""),
        "{}",
        out.text
    );
    assert!(!out.text.contains("Install"), "{}", out.text);
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    let addr = server().await;
    let err = fetch(&ctx(), format!("http://{addr}/ftp"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("its scheme is `ftp:`"), "{err}");
}

#[tokio::test]
async fn an_image_is_refused_naming_its_content_type() {
    let addr = server().await;
    let err = fetch(&ctx(), format!("http://{addr}/image"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is `image/png`, not text"), "{err}");
}

#[tokio::test]
async fn a_body_beyond_the_cap_is_cut_and_the_markdown_kept_to_the_output_limit() {
    let addr = server().await;
    let mut ctx = ctx();
    ctx.max_output_bytes = 2000;
    let out = fetch(&ctx, format!("http://{addr}/big")).await.unwrap();
    assert!(!out.is_error, "{}", &out.text[..200]);
    assert!(out.text.len() <= 2000, "{}", out.text.len());
    assert!(
        out.text.contains(&format!(
            "The body is longer than {MAX_BODY_BYTES} bytes; only its first {MAX_BODY_BYTES} were read."
        )),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("more bytes of the page not shown: the output limit is 2000 bytes"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn an_error_status_is_an_error_result_with_the_page() {
    let addr = server().await;
    let out = fetch(&ctx(), format!("http://{addr}/missing"))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.text.starts_with("HTTP 404 Not Found from"),
        "{}",
        out.text
    );
    assert!(out.text.contains("No such page"), "{}", out.text);
}

#[tokio::test]
async fn network_false_refuses_before_connecting_and_says_why() {
    let addr = server().await;
    let mut ctx = ctx();
    ctx.sandbox.network = false;
    let err = fetch(&ctx, format!("http://{addr}/page"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("[sandbox] network = false"), "{err}");
}

#[tokio::test]
async fn only_http_and_https_urls_are_taken() {
    for (url, says) in [
        ("file:///etc/passwd", "scheme `file:`"),
        ("ftp://example.com/x", "scheme `ftp:`"),
        ("docs.rs/serde", "not a URL"),
    ] {
        let err = fetch(&ctx(), url.to_string()).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { .. }),
            "{url}: {err}"
        );
        assert!(err.to_string().contains(says), "{url}: {err}");
    }
}

#[test]
fn redirects_are_followed_on_the_same_host_only_and_never_down_to_http() {
    let url = |s: &str| Url::parse(s).unwrap();
    assert_eq!(
        redirect(&url("http://a.dev/x"), &url("https://A.dev/y")),
        Redirect::Follow
    );
    assert_eq!(
        redirect(&url("http://a.dev/x"), &url("http://a.dev:8080/y")),
        Redirect::Follow
    );
    assert!(matches!(
        redirect(&url("https://a.dev/x"), &url("http://a.dev/y")),
        Redirect::Report(_)
    ));
    assert!(matches!(
        redirect(&url("https://a.dev/x"), &url("https://b.dev/x")),
        Redirect::Report(_)
    ));
    assert!(matches!(
        redirect(&url("https://a.dev/x"), &url("file:///etc/passwd")),
        Redirect::Refuse(_)
    ));
}

#[test]
fn text_types_are_read_and_others_are_not() {
    for mime in [
        "text/plain",
        "text/markdown",
        "text/css",
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/atom+xml",
        "application/javascript",
    ] {
        assert_eq!(text_kind(mime), Some(Kind::Text), "{mime}");
    }
    assert_eq!(text_kind("text/html"), Some(Kind::Html));
    for mime in [
        "image/png",
        "image/svg+xml",
        "application/pdf",
        "application/octet-stream",
        "video/mp4",
    ] {
        assert_eq!(text_kind(mime), None, "{mime}");
    }
    assert!(looks_binary(&[0x89, b'P', b'N', b'G', 0]));
    assert!(!looks_binary("héllo".as_bytes()));
}
