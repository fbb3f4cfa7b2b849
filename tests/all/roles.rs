//! Tokens with roles, through the built `agentbus serve`: two `user`
//! tokens each reach only the sessions they created, a `viewer` follows
//! what it was given and sends nothing, an admin sees everything; who did
//! what is on the events; a token's limits answer 429 with `Retry-After`;
//! the web page's link works for any token and leaves no token in the URL.

use crate::support::server::{EventStream, Server, error_of};
use crate::support::{Fixture, GUARD};
use agentbus_testkit::Script;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
[[response]]
match = "alpha"
tool_calls = [ { id = "a1", name = "bash", arguments = { command = "echo ran-for-alpha" } } ]

[[response]]
match = "alpha"
text = "Answer to alpha."

[[response]]
match = "beta"
text = "Answer to beta."
"#;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";

/// The tokens' configuration: `alice` and `bob` users, `carol` a viewer
/// (`extra` adds keys to alice's table).
fn tokens(alice_extra: &str) -> String {
    format!(
        r#"
[server.tokens.alice]
token_env = "AGENTBUS_TEST_ALICE"
role = "user"
{alice_extra}

[server.tokens.bob]
token_env = "AGENTBUS_TEST_BOB"
role = "user"

[server.tokens.carol]
token_env = "AGENTBUS_TEST_CAROL"
role = "viewer"
"#
    )
}

const ENV: &[(&str, &str)] = &[
    ("AGENTBUS_TEST_ALICE", ALICE),
    ("AGENTBUS_TEST_BOB", BOB),
    ("AGENTBUS_TEST_CAROL", CAROL),
];

/// Requests to `server` made with `token`.
struct As<'a> {
    server: &'a Server,
    token: &'a str,
}

/// A server with the tokens (`alice_extra` added to alice's table), its
/// fixture first set up by `prepare`.
async fn served(alice_extra: &str, prepare: impl FnOnce(&Fixture)) -> (Fixture, Server) {
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    prepare(&f);
    f.add_config(&tokens(alice_extra));
    let server = f.serve_with_env(&[], ENV).await;
    (f, server)
}

impl<'a> As<'a> {
    fn of(server: &'a Server, token: &'a str) -> As<'a> {
        As { server, token }
    }
}

impl As<'_> {
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.server
            .http
            .request(method, format!("{}{path}", self.server.url))
            .bearer_auth(self.token)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::GET, path)
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, path)
    }

    /// `GET path`, answered 200 with JSON: the JSON.
    async fn json(&self, path: &str) -> Value {
        let response = self.get(path).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.unwrap()
    }

    async fn create(&self) -> String {
        let response = self
            .post("/v1/sessions")
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
        let created: Value = response.json().await.unwrap();
        created["id"].as_str().expect("an id").to_string()
    }

    /// The ids `GET /v1/sessions` lists.
    async fn listed(&self) -> Vec<String> {
        let response = self.get("/v1/sessions").send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        body["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().expect("an id").to_string())
            .collect()
    }

    async fn input(&self, id: &str, text: &str) -> reqwest::Response {
        self.post(&format!("/v1/sessions/{id}/input"))
            .json(&json!({ "text": text }))
            .send()
            .await
            .unwrap()
    }

    async fn input_id(&self, id: &str, text: &str) -> u64 {
        let response = self.input(id, text).await;
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
        let body: Value = response.json().await.unwrap();
        body["input_id"].as_u64().expect("an input id")
    }

    async fn events(&self, id: &str) -> EventStream {
        EventStream::open(self.get(&format!("/v1/sessions/{id}/events"))).await
    }
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

#[tokio::test]
async fn two_users_reach_only_their_own_sessions_and_a_viewer_follows_what_it_is_given() {
    let (f, server) = served("", |_| {}).await;
    let admin = As::of(&server, &server.token);
    let alice = As::of(&server, ALICE);
    let bob = As::of(&server, BOB);
    let carol = As::of(&server, CAROL);
    assert!(
        server
            .stderr()
            .contains("alice (user), bob (user), carol (viewer)"),
        "the start-up names the tokens and roles:\n{}",
        server.stderr()
    );

    let a = alice.create().await;
    let b = bob.create().await;
    assert_eq!(alice.listed().await, vec![a.clone()]);
    assert_eq!(bob.listed().await, vec![b.clone()]);
    assert_eq!(carol.listed().await, Vec::<String>::new());
    assert_eq!(
        sorted(admin.listed().await),
        sorted(vec![a.clone(), b.clone()])
    );
    let record = admin.json(&format!("/v1/sessions/{a}")).await;
    assert_eq!(record["created_by"], "alice", "{record}");

    // Alice's turn: her `user` event names her token.
    let mut events = alice.events(&a).await;
    let input = alice.input_id(&a, "alpha").await;
    let result = events.result_of(input).await;
    assert_eq!(result["text"], "Answer to alpha.", "{result}");
    let user = events
        .events
        .iter()
        .find(|e| e["type"] == "user")
        .expect("a user event");
    assert_eq!(user["by"], "alice", "{user}");
    // A command's answer names who sent it too.
    let cleared = alice
        .post(&format!("/v1/sessions/{a}/input"))
        .json(&json!({"command": "clear"}))
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 202);
    let cleared: Value = cleared.json().await.unwrap();
    let answer = events
        .until(|e| e["type"] == "system" && e["turn_id"] == cleared["input_id"])
        .await;
    assert_eq!(answer["by"], "alice", "{answer}");
    let requests_before = f.request_messages().len();
    let record_before = admin.json(&format!("/v1/sessions/{a}")).await;

    // Bob reaches none of it; nothing runs.
    let refused = error_of(
        bob.post(&format!("/v1/sessions/{a}/input"))
            .json(&json!({"text": "beta"})),
        403,
    )
    .await;
    assert!(refused.contains("admin"), "{refused}");
    assert!(
        !refused.contains("alice"),
        "a refusal names a role, never more: {refused}"
    );
    for path in [
        format!("/v1/sessions/{a}"),
        format!("/v1/sessions/{a}/messages"),
        format!("/v1/sessions/{a}/events"),
    ] {
        error_of(bob.get(&path), 403).await;
    }
    error_of(
        bob.request(reqwest::Method::DELETE, &format!("/v1/sessions/{a}")),
        403,
    )
    .await;
    error_of(bob.post(&format!("/v1/sessions/{a}/fork")), 403).await;
    assert_eq!(
        f.request_messages().len(),
        requests_before,
        "the model was asked nothing"
    );
    let record_after = admin.json(&format!("/v1/sessions/{a}")).await;
    assert_eq!(
        record_after["last_seq"], record_before["last_seq"],
        "nothing was stored"
    );

    // Carol is given Alice's session: she follows it, and sends nothing.
    error_of(carol.get(&format!("/v1/sessions/{a}")), 403).await;
    let given = alice
        .request(reqwest::Method::PATCH, &format!("/v1/sessions/{a}"))
        .json(&json!({"viewers": ["carol"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(given.status(), 200, "{}", given.text().await.unwrap());
    assert_eq!(carol.listed().await, vec![a.clone()]);
    let history = carol
        .get(&format!("/v1/sessions/{a}/messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(history.status(), 200);
    let mut followed = carol.events(&a).await;
    let first = followed
        .next()
        .await
        .expect("carol gets the session's events");
    assert_eq!(first["seq"], 1, "{first}");
    let refused = error_of(
        carol
            .post(&format!("/v1/sessions/{a}/input"))
            .json(&json!({"text": "beta"})),
        403,
    )
    .await;
    assert!(refused.contains("viewer"), "{refused}");
    error_of(carol.post("/v1/sessions").json(&json!({})), 403).await;
    // A viewer's WebSocket follows, and its inputs are refused there too.
    let mut socket = server
        .ws_with(&a, "authorization", &format!("Bearer {CAROL}"))
        .await
        .expect("a viewer's WebSocket connects");
    let first = socket.next().await.expect("an event");
    assert_eq!(first["seq"], 1, "{first}");
    socket.send(json!({"text": "beta"})).await;
    let reply = loop {
        let frame = socket.next().await.expect("a reply");
        if frame.get("seq").is_none() {
            break frame;
        }
    };
    assert!(
        reply["error"].as_str().is_some_and(|e| e.contains("admin")),
        "{reply}"
    );
    assert_eq!(
        f.request_messages().len(),
        requests_before,
        "the model was asked nothing"
    );

    // Only the creator (or an admin) gives a session to viewers; bob may
    // not give himself alice's.
    error_of(
        bob.request(reqwest::Method::PATCH, &format!("/v1/sessions/{a}"))
            .json(&json!({"viewers": ["bob"]})),
        403,
    )
    .await;

    // Alice forks and deletes her own; the lifecycle stream names her.
    let mut lifecycle = EventStream::open(alice.get("/v1/events")).await;
    let fork = alice
        .post(&format!("/v1/sessions/{a}/fork"))
        .send()
        .await
        .unwrap();
    assert_eq!(fork.status(), 201);
    let fork: Value = fork.json().await.unwrap();
    let fork_id = fork["id"].as_str().expect("an id").to_string();
    let created = lifecycle
        .until(|e| e["kind"] == "created" && e["session_id"] == fork_id.as_str())
        .await;
    assert_eq!(created["by"], "alice", "{created}");
    let deleted = alice
        .request(reqwest::Method::DELETE, &format!("/v1/sessions/{fork_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = lifecycle
        .until(|e| e["kind"] == "deleted" && e["session_id"] == fork_id.as_str())
        .await;
    assert_eq!(gone["by"], "alice", "{gone}");
    // Bob's sessions never show on alice's lifecycle stream.
    bob.input_id(&b, "beta").await;
    let mut bob_lifecycle = EventStream::open(bob.get("/v1/events")).await;
    let _ = bob_lifecycle
        .until(|e| e["session_id"] == b.as_str() && e["kind"] == "idle")
        .await;
    let c = alice.create().await;
    let _ = lifecycle
        .until(|e| e["kind"] == "created" && e["session_id"] == c.as_str())
        .await;
    assert!(
        lifecycle
            .events
            .iter()
            .all(|e| e["session_id"] != b.as_str()),
        "alice's lifecycle stream showed bob's session: {:?}",
        lifecycle.events
    );

    // Commands that reach other sessions are an admin's.
    for text in ["/sessions", "/resume x"] {
        let refused = error_of(
            bob.post(&format!("/v1/sessions/{b}/input"))
                .json(&json!({ "text": text })),
            403,
        )
        .await;
        assert!(refused.contains("admin"), "{refused}");
    }

    // No token value reaches the log.
    for token in [ALICE, BOB, CAROL] {
        assert!(!server.stderr().contains(token), "a token in the log");
    }
}

#[tokio::test]
async fn a_token_past_its_requests_a_minute_is_told_when_to_come_back() {
    let (_f, server) = served("requests_per_minute = 3", |_| {}).await;
    let alice = As::of(&server, ALICE);
    let bob = As::of(&server, BOB);
    for _ in 0..3 {
        assert_eq!(
            alice.get("/v1/sessions").send().await.unwrap().status(),
            200
        );
    }
    let response = alice.get("/v1/sessions").send().await.unwrap();
    assert_eq!(response.status(), 429);
    let wait: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("requests_per_minute"),
        "{body}"
    );
    // Another token is not held back by alice's limit.
    assert_eq!(bob.get("/v1/sessions").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_token_at_its_busy_sessions_cannot_start_another_and_an_approval_names_who_answered() {
    // `default` mode: the script's `bash` call asks first, which keeps
    // the turn (and the session) busy until it is answered.
    let (_f, server) = served("max_busy_sessions = 1", |f| {
        f.set_permission_mode("default")
    })
    .await;
    let alice = As::of(&server, ALICE);
    let first = alice.create().await;
    let second = alice.create().await;
    let mut events = alice.events(&first).await;
    let input = alice.input_id(&first, "alpha").await;
    let request = events.until(|e| e["type"] == "approval_request").await;
    let request_id = request["request_id"]
        .as_str()
        .expect("a request id")
        .to_string();

    let response = alice.input(&second, "beta").await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("max_busy_sessions"),
        "{body}"
    );
    // Another input to the busy session only queues: taken.
    let queued = alice.input(&first, "beta").await;
    assert_eq!(queued.status(), 202);

    // The HTTP body takes no `by` (what names who answered is the token).
    error_of(
        alice
            .post(&format!("/v1/sessions/{first}/approvals/{request_id}"))
            .json(&json!({"decision": "allow_once", "by": "someone-else"})),
        400,
    )
    .await;
    let answer = alice
        .post(&format!("/v1/sessions/{first}/approvals/{request_id}"))
        .json(&json!({"decision": "allow_once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let resolved = events
        .until(|e| e["type"] == "system" && e["subtype"] == "approval_resolved")
        .await;
    assert_eq!(resolved["data"]["by"], "alice", "{resolved}");
    let result = events.result_of(input).await;
    assert_eq!(result["text"], "Answer to alpha.", "{result}");
    // The queued `beta` runs, then the session is idle again.
    let result = events.result_of(input + 1).await;
    assert_eq!(result["text"], "Answer to beta.", "{result}");
    let mut lifecycle = EventStream::open(alice.get("/v1/events")).await;
    let session = alice
        .get(&format!("/v1/sessions/{first}"))
        .send()
        .await
        .unwrap();
    let session: Value = session.json().await.unwrap();
    if session["busy"] == true {
        let _ = lifecycle
            .until(|e| e["session_id"] == first.as_str() && e["kind"] == "idle")
            .await;
    }
    let response = alice.input(&second, "beta").await;
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn the_page_link_of_a_user_token_sets_its_cookie_and_lists_only_its_sessions() {
    let (_f, server) = served("", |_| {}).await;
    let alice = As::of(&server, ALICE);
    let bob = As::of(&server, BOB);
    let a = alice.create().await;
    bob.create().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let link = http
        .get(format!("{}/?token={ALICE}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(link.status(), 303);
    assert_eq!(link.headers()["location"], "/");
    let cookie = link.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let listed: Value = tokio::time::timeout(GUARD, async {
        http.get(format!("{}/v1/sessions", server.url))
            .header("cookie", &pair)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
    .await
    .expect("an answer");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![a.as_str()]);
}

/// `agentbus serve` with `env`, expected to refuse to start: what it said.
async fn refused_start(f: &Fixture, env: &[(&str, &str)]) -> String {
    let output = tokio::time::timeout(
        GUARD,
        f.command(&["serve", "--listen", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .output(),
    )
    .await
    .expect("serve exits in time")
    .expect("serve runs");
    assert!(!output.status.success(), "serve started");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn serve_refuses_a_token_it_cannot_read_a_short_one_and_one_a_workspace_sets() {
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    f.add_config(&tokens(""));
    let unset = refused_start(&f, &ENV[..2]).await;
    assert!(
        unset.contains("[server.tokens.carol]") && unset.contains("AGENTBUS_TEST_CAROL"),
        "{unset}"
    );
    let short = refused_start(
        &f,
        &[ENV[0], ENV[1], ("AGENTBUS_TEST_CAROL", "/home/carol")],
    )
    .await;
    assert!(short.contains("at least 24"), "{short}");
    assert!(
        !short.contains("/home/carol"),
        "the value is not said: {short}"
    );

    // A repository's own file cannot let anyone in.
    let g = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    std::fs::write(
        g.workspace().join(".agentbus.toml"),
        "[server.tokens.intruder]\ntoken_env = \"HOME\"\nrole = \"admin\"\n",
    )
    .unwrap();
    let project = refused_start(&g, &[]).await;
    assert!(
        project.contains(".agentbus.toml") && project.contains("server.tokens"),
        "{project}"
    );
}
