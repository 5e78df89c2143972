//! Tests of the context assembly (`context.rs`).

use super::*;
use crate::domain::MessageStatus;
use serde_json::json;

fn sys() -> Opening {
    Opening::system_only("sys")
}

fn msg(role: &str, content: &str, calls: Option<Value>, call_id: Option<&str>) -> Message {
    let role = match role {
        "user" => MessageRole::User,
        "assistant" => MessageRole::Assistant,
        _ => MessageRole::Tool,
    };
    Message {
        id: uuid::Uuid::new_v4(),
        seq: 0,
        conversation_id: uuid::Uuid::nil(),
        role,
        content: content.into(),
        tool_calls: calls,
        tool_call_id: call_id.map(Into::into),
        attachments: None,
        citations: None,
        status: MessageStatus::Complete,
        status_reason: None,
        model: None,
        input_tokens: None,
        output_tokens: None,
        duration_ms: None,
        created_at: chrono::Utc::now(),
    }
}

#[test]
fn keeps_pairs_and_drops_orphans() {
    let history = vec![
        msg("user", "hi", None, None),
        msg(
            "assistant",
            "",
            Some(json!([{"id":"a","name":"calculator","arguments":{"expression":"1+1"}}])),
            None,
        ),
        msg("tool", "{\"success\":true}", None, Some("a")),
        // Cut short: call without result.
        msg(
            "assistant",
            "partial",
            Some(json!([{"id":"b","name":"calculator","arguments":{}}])),
            None,
        ),
        msg("tool", "orphan", None, Some("zzz")),
    ];
    let out = assemble(&sys(), &history, ChatMessage::user("next"), 100_000, 100);
    let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(out[2].tool_calls[0].arguments, r#"{"expression":"1+1"}"#);
    assert_eq!(out[3].tool_call_id.as_deref(), Some("a"));
    assert!(out[4].tool_calls.is_empty());
    assert_eq!(out[4].content, "partial");
}

#[test]
fn attached_files_are_named_to_the_model_and_survive_a_resume() {
    let mut asked = msg("user", "summarise", None, None);
    asked.attachments = Some(json!([{"path": "notes.txt", "bytes": 1229}]));
    let note = "summarise\n\nAttached files in your workspace (read them with your file \
                tools):\n- notes.txt (1.2 KB)";
    let out = assemble(
        &sys(),
        std::slice::from_ref(&asked),
        ChatMessage::user("next"),
        100_000,
        100,
    );
    assert_eq!(out[1].content, note);
    let resumed = assemble_resumed(&sys(), &[asked], &Earlier::default(), 100_000, 100);
    assert_eq!(resumed.last().map(|m| m.content.as_str()), Some(note));
}

#[test]
fn trims_oldest_whole_units_first() {
    let big = "x".repeat(8000);
    let history = vec![
        msg("user", &big, None, None),
        msg(
            "assistant",
            "",
            Some(json!([{"id":"a","name":"t","arguments":{}}])),
            None,
        ),
        msg("tool", &big, None, Some("a")),
        msg("user", "recent", None, None),
    ];
    let out = assemble(&sys(), &history, ChatMessage::user("now"), 1500, 100);
    let contents: Vec<&str> = out.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["sys", "recent", "now"]);
}

#[test]
fn notes_follow_the_system_prompt_as_the_users_message_and_are_kept() {
    let opening = Opening {
        system: "sys".into(),
        notes: Some("My saved notes: likes tea".into()),
    };
    let history = vec![msg("user", &"x".repeat(8000), None, None)];
    let out = assemble(&opening, &history, ChatMessage::user("now"), 1500, 100);
    let got: Vec<(Role, &str)> = out.iter().map(|m| (m.role, m.content.as_str())).collect();
    assert_eq!(
        got,
        [
            (Role::System, "sys"),
            (Role::User, "My saved notes: likes tea"),
            (Role::User, "now")
        ]
    );
}

#[test]
fn images_carried_again_ride_with_their_message_and_count_against_the_window() {
    let pic = crate::llm::ImagePart {
        path: "pic.png".into(),
        media_type: "image/png".into(),
        data: "AAAA".into(),
        width: 1092,
        height: 1092,
        bytes: 3,
        tokens: 1590,
    };
    let asked = msg("user", "what is this?", None, None);
    let history = vec![asked.clone(), msg("user", "recent", None, None)];
    let earlier = Earlier::showing(asked.id, vec![pic.clone()]);
    let now = || ChatMessage::user("now");
    let out = assemble_seeing(&sys(), &history, &earlier, now(), 100_000, 100);
    assert_eq!(out[1].content, "what is this?");
    assert_eq!(out[1].images, [pic]);
    assert!(out[2].images.is_empty() && out[3].images.is_empty());
    // Room for the text of both, not for the image: the older unit goes whole.
    let out = assemble_seeing(&sys(), &history, &earlier, now(), 1200, 100);
    let contents: Vec<&str> = out.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["sys", "recent", "now"]);
    let out = assemble(&sys(), &history, now(), 1200, 100);
    assert_eq!(out.len(), 4);
}
