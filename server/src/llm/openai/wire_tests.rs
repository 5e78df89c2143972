//! Tests of the OpenAI wire format: typed parsing refuses what a hand walk would miss.

use super::*;

#[test]
fn a_misspelt_field_type_is_an_error_not_a_none() {
    let bad = r#"{"choices":[{"delta":{"content":5}}]}"#;
    assert!(serde_json::from_str::<ChatCompletionChunk>(bad).is_err());
    let ok = r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}"#;
    let c: ChatCompletionChunk = serde_json::from_str(ok).unwrap();
    assert_eq!(c.choices[0].delta.content.as_deref(), Some("hi"));
}

#[test]
fn content_parts_and_object_arguments_are_read() {
    let m: RequestMessage = serde_json::from_str(
        r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{}}]}"#,
    )
    .unwrap();
    match m.content {
        Some(Content::Parts(p)) => {
            assert!(matches!(&p[0], ContentPart::Text { text } if text == "a"));
            assert!(matches!(p[1], ContentPart::Unsupported));
        }
        other => panic!("{other:?}"),
    }
    let c: ToolCall =
        serde_json::from_str(r#"{"function":{"name":"f","arguments":{"k":1}}}"#).unwrap();
    assert_eq!(c.function.arguments, r#"{"k":1}"#);
    assert_eq!(c.kind, "function");
    assert!(c.id.is_none());
}

#[test]
fn a_chunk_serializes_a_null_finish_reason_and_omits_empty_fields() {
    let c = ChatCompletionChunk {
        object: "chat.completion.chunk".into(),
        choices: vec![ChunkChoice::default()],
        ..Default::default()
    };
    let v = serde_json::to_value(&c).unwrap();
    assert!(v["choices"][0]["finish_reason"].is_null());
    assert!(v["choices"][0].get("finish_reason").is_some());
    assert!(v.get("usage").is_none() && v.get("error").is_none());
    assert_eq!(v["choices"][0]["delta"], serde_json::json!({}));
}
