//! Images attached to a query: what the model gets, what is stored, what
//! a profile without images refuses, and that the fold agrees.

use super::tests::{Harness, assert_history_valid, fresh_like, model_calls, persisted};
use super::{Input, restore};
use crate::protocol::{AgentMessage, Image, InputId, Message, SystemSubtype, UserInput};

fn png() -> Image {
    crate::images::from_bytes("pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap()
}

fn query_with_image(h: &mut Harness, text: &str) -> InputId {
    let input_id = h.state().next_input_id();
    h.feed(Input::Submit {
        input_id,
        input: UserInput::Query {
            text: text.into(),
            images: vec![png()],
            by: None,
        },
    });
    input_id
}

#[test]
fn a_querys_images_go_to_the_model_and_into_the_store() {
    let mut h = Harness::new();
    query_with_image(&mut h, "what is this?");
    let calls = model_calls(&h.effects);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].1.messages,
        [Message::User {
            text: "what is this?".into(),
            images: vec![png()],
        }]
    );
    let user = h
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentMessage::User(u) => Some(u),
            _ => None,
        })
        .unwrap();
    assert_eq!(user.images, [png()], "the user event keeps the image");
    h.answer(calls[0].0, "A picture.", &[]);
    let mut restored = fresh_like(h.state());
    restore(&mut restored, &persisted(&h));
    assert_eq!(
        restored.history,
        h.state().history,
        "a reload sends it again"
    );
    assert_history_valid(&restored.history);
}

#[test]
fn a_profile_without_images_gets_the_text_and_the_user_a_notice() {
    let mut h = Harness::new();
    h.state.model = "other".into();
    query_with_image(&mut h, "what is this?");
    let calls = model_calls(&h.effects);
    assert_eq!(calls[0].1.messages, [Message::user("what is this?")]);
    let notice = h
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message),
            _ => None,
        })
        .expect("a notice");
    assert!(
        notice.contains("pic.png")
            && notice.contains("`other`")
            && notice.contains("images = true")
            && notice.contains("[models.other]"),
        "{notice}"
    );
    let mut restored = fresh_like(h.state());
    restore(&mut restored, &persisted(&h));
    assert_eq!(restored.history, h.state().history);
}

#[test]
fn images_count_at_the_documented_estimate() {
    let with = Message::User {
        text: "x".into(),
        images: vec![png(), png()],
    };
    let without = Message::user("x");
    assert_eq!(
        crate::tokens::byte_bound(&with) - crate::tokens::byte_bound(&without),
        2 * crate::images::IMAGE_TOKENS
    );
}

#[test]
fn images_sent_with_a_command_are_left_out_with_a_notice() {
    let mut h = Harness::new();
    query_with_image(&mut h, "/usage");
    let notices: Vec<String> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        ["Not sent: 1 image — `/usage` is a command, and images go with a query."]
    );
    assert!(model_calls(&h.effects).is_empty());
}
