//! The web page at `/`: static files compiled into the binary (no build
//! step). The page itself needs no token; it reads `?token=` from its own
//! address and sends it with every API call.

use axum::http::header;
use axum::response::IntoResponse;

pub async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            // The token travels in the page's address: keep it out of
            // Referer headers.
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        include_str!("../web/index.html"),
    )
}

pub async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("../web/app.js"),
    )
}

pub async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("../web/style.css"),
    )
}
