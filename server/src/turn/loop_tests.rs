//! The loop's parts against a scripted provider (no HTTP, no database: these paths touch
//! neither).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::StreamExt;
use uuid::Uuid;

use crate::cluster::control::{StopReason, TurnControl};
use crate::db::models::budget::Hold;
use crate::llm::{
    self, ChatRequest, EventStream, LlmError, LlmProvider, StreamEvent, ToolCall, ToolChoice,
};
use crate::tools::Registry;
use crate::turn::engine::{PreparedTurn, TurnEngine, Who};
use crate::turn::events::{FinishReason, TurnEvent};
use crate::turn::plan::Plan;
use crate::turn::step::attempt::ModelOutcome;
use crate::turn::step::commit::{Ending, TurnRecord};
use crate::turn::step::{Answer, Step};

/// Answers each call with the next scripted list of events; `None` in a script means the
/// stream then stays open forever.
struct Scripted(Mutex<Vec<Vec<Option<StreamEvent>>>>);

#[async_trait]
impl LlmProvider for Scripted {
    fn provider_name(&self) -> &'static str {
        "scripted"
    }

    fn server_address(&self) -> Option<String> {
        None
    }

    async fn stream_chat(&self, _: ChatRequest) -> Result<EventStream, LlmError> {
        let script = self.0.lock().unwrap().remove(0);
        let items: Vec<_> = script.into_iter().map_while(|e| e.map(Ok)).collect();
        Ok(futures_util::stream::iter(items)
            .chain(futures_util::stream::pending())
            .boxed())
    }
}

fn agent(scripts: Vec<Vec<Option<StreamEvent>>>) -> std::io::Result<TurnEngine> {
    let settings = crate::config::Settings::default();
    let catalogue = crate::catalogue::Catalogue::fixed(
        Arc::new(settings.clone()),
        crate::catalogue::Snapshot::single(Arc::new(Scripted(Mutex::new(scripts))), &settings.llm),
    );
    let workspaces = crate::files::WorkspaceStore::new(
        std::env::temp_dir().join(format!("agentchat-loop-{}", Uuid::new_v4())),
        Default::default(),
    )?;
    Ok(TurnEngine {
        pool: crate::db::build_pool(&settings.database).unwrap(),
        breakers: catalogue.breakers().clone(),
        catalogue,
        tools: Registry::new(),
        settings: Arc::new(settings.llm.clone()),
        clock: crate::budget::system_clock(),
        http: crate::tools::HttpToolConfig::default(),
        metrics: Arc::new(crate::metrics::Metrics::new().unwrap()),
        turns: Default::default(),
        process_id: Uuid::new_v4(),
        durable: Default::default(),
        mcp: crate::tools::mcp::McpManager::new(
            None,
            16 * 1024,
            crate::tools::mcp::McpLimits::default(),
        ),
        tool_set: Default::default(),
        history: Default::default(),
        workspaces: Arc::new(workspaces),
    })
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "demo".into(),
        messages: Vec::new(),
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(100),
        temperature: None,
    }
}

fn completed(calls: Vec<ToolCall>, usage: Option<llm::Usage>) -> Option<StreamEvent> {
    Some(StreamEvent::Completed {
        tool_calls: calls,
        usage,
        response_model: None,
        finish_reason: llm::FinishReason::Stop,
    })
}

fn prepared(agent: &TurnEngine) -> PreparedTurn {
    let hold = Hold {
        id: Uuid::nil(),
        user_id: Uuid::new_v4(),
        period: crate::budget::Period::Month,
        period_start: chrono::Utc::now(),
        amount: 1000,
        money: None,
    };
    PreparedTurn {
        who: Who {
            turn_id: Uuid::new_v4(),
            user_id: hold.user_id,
            username: "u".into(),
            conversation_id: Uuid::new_v4(),
            user_message_id: Uuid::new_v4(),
            outstanding: Default::default(),
        },
        plan: Plan::new(
            agent.settings.model.clone(),
            Default::default(),
            agent.tools.clone(),
            None,
        ),
        input: Vec::new(),
        first_call: (hold, 100),
        start: None,
        wants_title: false,
    }
}

/// A turn's steps with nobody following (no turn needed for a model call).
fn who() -> Who {
    Who {
        turn_id: Uuid::nil(),
        user_id: Uuid::nil(),
        username: "u".into(),
        conversation_id: Uuid::nil(),
        user_message_id: Uuid::nil(),
        outstanding: Default::default(),
    }
}

#[tokio::test]
async fn text_is_forwarded_and_missing_usage_is_counted_locally() -> std::io::Result<()> {
    let a = agent(vec![vec![
        Some(StreamEvent::TextDelta("hello ".into())),
        Some(StreamEvent::TextDelta("there".into())),
        completed(Vec::new(), None),
    ]])?;
    let tx = crate::turn::turn_log::TurnLog::new(Uuid::nil());
    let (who, control) = (who(), TurnControl::default());
    let outcome = Step::new(&a, &who, &tx, &control)
        .call(request(), 321, None, Default::default())
        .await
        .outcome;
    let ModelOutcome::Completed { text, usage, .. } = outcome else {
        panic!("not completed");
    };
    assert_eq!(text, "hello there");
    assert_eq!(usage.input_tokens, 321);
    assert!(usage.output_tokens > 0);
    let crate::turn::turn_log::Read::Events(events) = tx.read_after(None, 0, 100) else {
        panic!("nothing recorded");
    };
    let deltas: Vec<_> = events
        .into_iter()
        .map(|(id, e)| match e {
            TurnEvent::TextDelta { text } => (id.to_sse(), text),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        deltas,
        [
            ("1.6".to_owned(), "hello ".to_owned()),
            ("1.11".into(), "there".into())
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_stopped_call_keeps_what_was_streamed_and_says_why() -> std::io::Result<()> {
    let a = agent(vec![vec![
        Some(StreamEvent::TextDelta("half".into())),
        None,
    ]])?;
    let tx = crate::turn::turn_log::TurnLog::new(Uuid::nil());
    let control = TurnControl::default();
    let stopper = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        stopper.stop(StopReason::Shutdown);
    });
    let who = who();
    let outcome = Step::new(&a, &who, &tx, &control)
        .call(request(), 10, None, Default::default())
        .await
        .outcome;
    let ModelOutcome::Stopped { text, reason } = outcome else {
        panic!("not stopped");
    };
    assert_eq!((text.as_str(), reason), ("half", StopReason::Shutdown));
    Ok(())
}

#[tokio::test]
async fn the_same_tool_failing_twice_ends_the_turn_and_results_follow_their_calls(
) -> std::io::Result<()> {
    let a = agent(Vec::new())?;
    let turn = prepared(&a);
    let tx = crate::turn::turn_log::TurnLog::new(Uuid::nil());
    let mut record = TurnRecord::default();
    let mut history = Vec::new();
    let mut failures = HashMap::new();
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "no_such_tool".into(),
        arguments: "{}".into(),
    };
    let control = TurnControl::default();
    let step = Step::new(&a, &turn.who, &tx, &control);
    for (round, id) in ["c1", "c2"].into_iter().enumerate() {
        let calls = vec![call(id)];
        let stored: Vec<_> = calls
            .iter()
            .map(crate::turn::context::StoredToolCall::from_call)
            .collect();
        let answer = Answer {
            text: String::new(),
            calls,
            stored,
        };
        let ending = step
            .tools(&turn.plan, answer, &mut record, &mut history, &mut failures)
            .await;
        match round {
            0 => assert!(ending.is_none()),
            _ => assert!(matches!(
                ending,
                Some(Ending::Finished(FinishReason::ToolFailures))
            )),
        }
    }
    // Each call is followed by its result, bound by id, in the model input and the record.
    let ids: Vec<_> = history
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone()))
        .collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(history[1].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(history[3].tool_call_id.as_deref(), Some("c2"));
    assert_eq!(record.messages.len(), 2);
    assert_eq!(record.audit.len(), 2);
    Ok(())
}
