//! Images attached to a query end to end: `run --image` in both wire
//! formats, validated by the scripted model as the real APIs validate them,
//! kept across a reload, and refused by a profile that does not take them.

use crate::support::*;
use agentbus_testkit::Script;
use serde_json::Value;

/// The start of a PNG: enough for the sniffing on both sides.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";

async fn fixture() -> Fixture {
    let script = Script::from_toml_str(
        "[[response]]\nmatch = \"[image: image/png]\"\ntext = \"I see a PNG.\"\n\
         [[response]]\nmatch = \"[image: image/png]\"\ntext = \"Still the PNG.\"\n\
         [[response]]\ntext = \"No image here.\"\n",
    )
    .expect("script");
    let fx = Fixture::with_script(script).await;
    std::fs::write(fx.workspace().join("pic.png"), PNG).expect("write pic.png");
    std::fs::write(fx.workspace().join("notes.txt"), "not an image").expect("write notes");
    fx
}

/// The last user message of request `index`.
fn last_user(fx: &Fixture, index: usize) -> Value {
    fx.request_messages()[index]
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .expect("a user message")
}

#[tokio::test]
async fn run_image_sends_an_image_url_part_and_a_reload_sends_it_again() {
    let fx = fixture().await;
    let out = fx
        .run(&["run", "--json", "--image", "pic.png", "what is this?"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["text"], "I see a PNG.");
    let user = of_type(&events, "user")[0];
    assert_eq!(user["images"][0]["media_type"], "image/png");
    assert_eq!(user["images"][0]["source"], "pic.png");
    let content = &last_user(&fx, 0)["content"];
    assert_eq!(content[0]["text"], "what is this?");
    let url = content[1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
    fx.assert_requests_valid();

    // The session reloaded from the store still holds the image.
    let again = fx.run(&["run", "-c", "and again?"]).await;
    assert_eq!(again.code(), Some(0), "stderr: {}", again.stderr);
    assert_eq!(again.stdout, ["No image here."]);
    let first_user = fx.request_messages()[1]
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    assert_eq!(first_user["content"][1]["type"], "image_url");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn run_image_sends_a_base64_image_block_over_anthropic() {
    let fx = fixture().await;
    let out = fx
        .run(&[
            "run",
            "--model",
            "scripted-anthropic",
            "--image",
            "pic.png",
            "what is this?",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, ["I see a PNG."]);
    let content = &last_user(&fx, 0)["content"];
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["source"]["type"], "base64");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["text"], "what is this?");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_profile_without_images_sends_the_text_and_says_why() {
    let fx = fixture().await;
    let out = fx
        .run(&[
            "run",
            "--json",
            "--model",
            "other",
            "--image",
            "pic.png",
            "what is this?",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["text"], "No image here.");
    let notice = of_type(&events, "system")
        .into_iter()
        .find(|e| e["subtype"] == "notice")
        .expect("a notice");
    let text = notice["message"].as_str().unwrap();
    assert!(
        text.contains("`other`") && text.contains("images = true") && text.contains("pic.png"),
        "{text}"
    );
    assert_eq!(last_user(&fx, 0)["content"], "what is this?");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_file_that_is_no_image_or_too_large_is_refused_before_anything_is_sent() {
    let fx = fixture().await;
    let out = fx.run(&["run", "--image", "notes.txt", "look"]).await;
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("notes.txt is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        out.stderr
    );
    let mut big = PNG.to_vec();
    big.resize(5 * 1024 * 1024 + 1, 0);
    std::fs::write(fx.workspace().join("big.png"), big).unwrap();
    let out = fx.run(&["run", "--image", "big.png", "look"]).await;
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("at most 5242880 bytes (5 MB)"),
        "{}",
        out.stderr
    );
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn switching_to_a_profile_without_images_sends_a_line_for_each_earlier_image() {
    let fx = fixture().await;
    let out = fx
        .run(&["run", "--image", "pic.png", "what is this?"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let switched = fx.run(&["run", "-c", "/model", "other"]).await;
    assert_eq!(switched.code(), Some(0), "stderr: {}", switched.stderr);
    let out = fx.run(&["run", "-c", "and now?"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let first_user = fx.request_messages()[1]
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    assert_eq!(
        first_user["content"],
        "what is this?\n\n[image left out: pic.png]"
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn an_at_mention_of_an_image_sends_the_image_and_a_reload_sends_it_again() {
    let fx = fixture().await;
    let out = fx.run(&["run", "--json", "what is in @pic.png?"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["text"], "I see a PNG.");
    let attached = of_type(&events, "system")
        .into_iter()
        .find(|e| e["subtype"] == "attached")
        .expect("an attached event");
    assert_eq!(
        attached["message"],
        format!("Attached pic.png (image/png, {} bytes).", PNG.len())
    );
    assert_eq!(attached["data"]["items"][0]["kind"], "image");
    let content = &last_user(&fx, 0)["content"];
    let text = content[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("what is in @pic.png?\n\n<attached-image path=\"pic.png\" />"),
        "{text}"
    );
    let url = content[1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
    fx.assert_requests_valid();

    let again = fx
        .run(&["run", "-c", "--model", "scripted-anthropic", "and now?"])
        .await;
    assert_eq!(again.code(), Some(0), "stderr: {}", again.stderr);
    assert_eq!(again.stdout, ["No image here."], "stderr: {}", again.stderr);
    let first_user = fx.request_messages()[1]
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    assert_eq!(first_user["content"][0]["type"], "image", "{first_user}");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn an_at_mention_of_a_text_file_named_like_an_image_is_a_notice() {
    let fx = fixture().await;
    std::fs::write(fx.workspace().join("fake.png"), "not an image").expect("write fake.png");
    let out = fx.run(&["run", "--json", "what is in @fake.png?"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let notice = of_type(&events, "system")
        .into_iter()
        .find(|e| e["subtype"] == "notice")
        .expect("a notice");
    assert_eq!(
        notice["message"],
        "@fake.png was not attached: fake.png is not a PNG, JPEG, GIF or WebP image"
    );
    assert_eq!(the_result(&events)["text"], "No image here.");
    fx.assert_requests_valid();
}
