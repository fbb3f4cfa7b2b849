//! The web page at `/`: static files compiled into the binary (no build
//! step: its script is the ES modules of `src/web/js/`, served under
//! `/js/` as they are), the two third-party scripts it uses (`/vendor/`:
//! marked and DOMPurify, copied unchanged from npm, with their licences;
//! see `src/web/vendor/README.md`), and `/commands.json`, the built-in
//! slash commands its suggestions offer. The page itself needs no token; it
//! reads `?token=` from its own address and sends it with every API call.

use agentbus_actors::protocol::system::CommandEntry;
use agentbus_actors::runtime::{COMMANDS, SlashCommand};
use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

/// What the page may load and run: its own files only. No inline script or
/// style, no `eval`, no images from elsewhere (a reply's Markdown cannot
/// make the browser fetch an address of the model's choosing), no frames.
/// `data:` images are the thumbnails of the images a query carries (read
/// from the user's files or from its `user` event, never from a reply).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// One compiled-in file: its path, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// Everything the page loads besides `/` itself.
const ASSETS: &[Asset] = &[
    Asset {
        path: "/js/main.js",
        content_type: JS,
        body: include_str!("../web/js/main.js"),
    },
    Asset {
        path: "/js/api.js",
        content_type: JS,
        body: include_str!("../web/js/api.js"),
    },
    Asset {
        path: "/js/approvals.js",
        content_type: JS,
        body: include_str!("../web/js/approvals.js"),
    },
    Asset {
        path: "/js/assistant.js",
        content_type: JS,
        body: include_str!("../web/js/assistant.js"),
    },
    Asset {
        path: "/js/composer.js",
        content_type: JS,
        body: include_str!("../web/js/composer.js"),
    },
    Asset {
        path: "/js/connection.js",
        content_type: JS,
        body: include_str!("../web/js/connection.js"),
    },
    Asset {
        path: "/js/diff.js",
        content_type: JS,
        body: include_str!("../web/js/diff.js"),
    },
    Asset {
        path: "/js/dom.js",
        content_type: JS,
        body: include_str!("../web/js/dom.js"),
    },
    Asset {
        path: "/js/format.js",
        content_type: JS,
        body: include_str!("../web/js/format.js"),
    },
    Asset {
        path: "/js/images.js",
        content_type: JS,
        body: include_str!("../web/js/images.js"),
    },
    Asset {
        path: "/js/layout.js",
        content_type: JS,
        body: include_str!("../web/js/layout.js"),
    },
    Asset {
        path: "/js/markdown.js",
        content_type: JS,
        body: include_str!("../web/js/markdown.js"),
    },
    Asset {
        path: "/js/plan.js",
        content_type: JS,
        body: include_str!("../web/js/plan.js"),
    },
    Asset {
        path: "/js/rewind.js",
        content_type: JS,
        body: include_str!("../web/js/rewind.js"),
    },
    Asset {
        path: "/js/sessions.js",
        content_type: JS,
        body: include_str!("../web/js/sessions.js"),
    },
    Asset {
        path: "/js/state.js",
        content_type: JS,
        body: include_str!("../web/js/state.js"),
    },
    Asset {
        path: "/js/status.js",
        content_type: JS,
        body: include_str!("../web/js/status.js"),
    },
    Asset {
        path: "/js/suggestions.js",
        content_type: JS,
        body: include_str!("../web/js/suggestions.js"),
    },
    Asset {
        path: "/js/switches.js",
        content_type: JS,
        body: include_str!("../web/js/switches.js"),
    },
    Asset {
        path: "/js/tools.js",
        content_type: JS,
        body: include_str!("../web/js/tools.js"),
    },
    Asset {
        path: "/js/transcript.js",
        content_type: JS,
        body: include_str!("../web/js/transcript.js"),
    },
    Asset {
        path: "/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../web/style.css"),
    },
    Asset {
        path: "/vendor/marked.min.js",
        content_type: JS,
        body: include_str!("../web/vendor/marked.min.js"),
    },
    Asset {
        path: "/vendor/purify.min.js",
        content_type: JS,
        body: include_str!("../web/vendor/purify.min.js"),
    },
    Asset {
        path: "/vendor/LICENSE-marked",
        content_type: TEXT,
        body: include_str!("../web/vendor/LICENSE-marked"),
    },
    Asset {
        path: "/vendor/LICENSE-dompurify",
        content_type: TEXT,
        body: include_str!("../web/vendor/LICENSE-dompurify"),
    },
    Asset {
        path: "/vendor/LICENSE-dompurify-MPL",
        content_type: TEXT,
        body: include_str!("../web/vendor/LICENSE-dompurify-MPL"),
    },
];

/// The page's routes (no token needed).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new()
        .route("/", get(index))
        .route("/commands.json", get(commands));
    for asset in ASSETS {
        let (content_type, body) = (asset.content_type, asset.body);
        router = router.route(
            asset.path,
            get(move || async move {
                (
                    [
                        (header::CONTENT_TYPE, content_type),
                        (header::CACHE_CONTROL, "no-cache"),
                        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                    ],
                    body,
                )
            }),
        );
    }
    router
}

async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            // The token travels in the page's address: keep it out of
            // Referer headers.
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        include_str!("../web/index.html"),
    )
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
