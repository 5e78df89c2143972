//! The agent's own eyes on its work (issue 44 item 4): a chart the code interpreter saves is
//! given back to a model that reads images, as an image part of the tool result (Anthropic:
//! inside the tool_result; OpenAI: a user message of image parts after the tool messages),
//! and named in a note to a model that does not.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use serde_json::{json, Value};

use crate::images::{b64, seeing_catalogue};

const PLOT: &str = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
plt.plot([1, 3, 2])\nplt.savefig('/mnt/data/outputs/chart.png')\n";

#[tokio::test]
async fn a_chart_the_interpreter_saves_is_shown_to_a_model_that_reads_images() {
    let fake = FakeUpstream::start().await;
    let ws = std::env::temp_dir().join(format!(
        "agentchat-img-ws-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let (app, [_admin, u]) = crate::code_interpreter::granted(&fake, ws)
        .settings(seeing_catalogue(&fake))
        .start_as(["boss", "plotter"])
        .await;
    for (n, model) in ["eyes", "claude", "blind"].into_iter().enumerate() {
        fake.push(Reply::tool_call(
            "t1",
            "run_python",
            json!({"code": PLOT}).to_string(),
        ));
        fake.push(Reply::text("a rising then falling line"));
        let conv = app
            .create_conversation_with(&u.access, json!({"model": model}))
            .await;
        let events = app.chat(&u.access, &conv, "plot it and look").await;
        let result = &events
            .iter()
            .find(|e| e.event == "tool_result")
            .unwrap()
            .data;
        assert_eq!(result["success"], true, "{result}");
        let path = result["data"]["files"][0]["path"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(path.ends_with("chart.png"), "{result}");
        let r = app
            .get_as(&u.access, &format!("/api/files/{path}"))
            .send()
            .await
            .unwrap();
        let png = b64(&r.bytes().await.unwrap());
        let messages = fake.requests()[2 * n + 1]["body"]["messages"].clone();
        let messages = messages.as_array().unwrap();
        match model {
            "eyes" => {
                let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
                let after = &messages[tool + 1];
                assert_eq!(after["role"], "user", "{messages:?}");
                assert_eq!(
                    after["content"][1],
                    json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}})
                );
                assert!(messages[tool]["content"].is_string());
            }
            "claude" => {
                let results: Vec<&Value> = messages
                    .iter()
                    .flat_map(|m| m["content"].as_array().into_iter().flatten())
                    .filter(|b| b["type"] == "tool_result")
                    .collect();
                let content = results[0]["content"].as_array().unwrap();
                assert_eq!(content[0]["type"], "text");
                assert_eq!(
                    content[1],
                    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
                );
            }
            _ => {
                let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
                let text = tool["content"].as_str().unwrap();
                assert!(
                    text.contains("which this model cannot see") && text.contains(&path),
                    "{text}"
                );
                assert!(
                    !messages.iter().any(|m| m["content"].is_array()),
                    "{messages:?}"
                );
            }
        }
    }
}
