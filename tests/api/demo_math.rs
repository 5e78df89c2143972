//! The demo model's arithmetic (issue 42.10): the whole expression goes to the calculator,
//! so "(17*23)+sqrt(144)" is answered 403, not 391; a function the calculator does not know
//! is said, not skipped.

use agentchat_tests::*;

#[tokio::test]
async fn the_demo_passes_the_whole_expression_to_the_calculator() {
    let (app, [s]) = TestApp::builder().start_as(["mathematician"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app
        .chat(&s.access, &conv, "What is (17*23)+sqrt(144)?")
        .await;
    let call = events
        .iter()
        .find(|e| e.event == "tool_call")
        .expect("a tool call");
    assert_eq!(call.data["name"], "calculator", "{:?}", call.data);
    assert_eq!(
        call.data["arguments"]["expression"], "(17*23)+sqrt(144)",
        "{:?}",
        call.data
    );
    let text = streamed_text(&events);
    assert!(text.contains("403"), "{text}");
    assert!(!text.contains("391"), "{text}");

    let conv = app.new_conversation(&s.access).await;
    let events = app
        .chat(&s.access, &conv, "What is (17*23)+cbrt(27)?")
        .await;
    assert!(
        events.iter().all(|e| e.event != "tool_call"),
        "no fragment is computed"
    );
    let text = streamed_text(&events);
    assert!(text.contains("cannot") && text.contains("cbrt"), "{text}");
}
