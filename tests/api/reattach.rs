//! Re-attaching to a turn (DESIGN §7): `GET /api/conversations/{id}/turns/{turn_id}/events`
//! with `Last-Event-ID` or `?after=` gives what the turn produced after that event, then
//! follows it live, on the process running it or on any other; a client that leaves does not
//! end the turn. Reconnecting with the last id seen never repeats an event nor skips text.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::budget::start_child_with;

const ANSWER: &str = "one two three four five six seven eight nine ten eleven twelve \
                      thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";

fn usage(i: u64, o: u64) -> Option<Usage> {
    Some(Usage::new(i, o))
}

/// The answer, streamed a word every `ms` milliseconds.
fn slow_answer(ms: u64) -> agentchat_tests::fake_upstream::Scripted {
    Reply::Text {
        text: ANSWER.into(),
        usage: usage(20, 20),
    }
    .chunk_delay(Duration::from_millis(ms))
}

/// One SSE event with its id.
#[derive(Debug, Clone)]
struct Ev {
    id: String,
    event: String,
    data: Value,
}

/// Reads an SSE response event by event.
struct Reader {
    resp: reqwest::Response,
    buf: String,
}

impl Reader {
    fn new(resp: reqwest::Response) -> Self {
        assert_eq!(resp.status(), 200);
        Self {
            resp,
            buf: String::new(),
        }
    }

    async fn next(&mut self) -> Option<Ev> {
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..i + 2).collect();
                let (mut id, mut event, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if let Some(event) = event {
                    let id = id.expect("every event has an id");
                    let data = serde_json::from_str(&data).unwrap();
                    return Some(Ev { id, event, data });
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.resp.chunk())
                .await
                .expect("the stream stalled")
                .unwrap()?;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events until `stop` says so (inclusive).
    async fn until(&mut self, stop: impl Fn(&[Ev]) -> bool) -> Vec<Ev> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
            if stop(&out) {
                break;
            }
        }
        out
    }

    async fn rest(&mut self) -> Vec<Ev> {
        self.until(|_| false).await
    }
}

fn text(events: &[Ev]) -> String {
    events
        .iter()
        .filter(|e| e.event == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect()
}

fn deltas(n: usize) -> impl Fn(&[Ev]) -> bool {
    move |v: &[Ev]| v.iter().filter(|e| e.event == "text_delta").count() >= n
}

/// Parses an id into an orderable place (`0` < `{step}.{pos}` < `end`).
fn place(id: &str) -> (u64, u64) {
    match id {
        "0" => (0, 0),
        "end" => (u64::MAX, 0),
        _ => {
            let (s, p) = id.split_once('.').unwrap();
            (s.parse().unwrap(), p.parse().unwrap())
        }
    }
}

/// Ids strictly increase across `parts` (reconnecting never repeats an event).
fn assert_increasing(parts: &[&[Ev]]) {
    let ids: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.iter())
        .map(|e| e.id.as_str())
        .collect();
    for w in ids.windows(2) {
        assert!(place(w[0]) < place(w[1]), "ids out of order: {ids:?}");
    }
}

fn events_url(conv: &str, turn: &str) -> String {
    format!("/api/conversations/{conv}/turns/{turn}/events")
}

async fn wait_until_ended(app: &TestApp, token: &str, conv: &str) -> Value {
    for _ in 0..200 {
        let c = app.conversation(token, conv).await;
        if c["active_turn"].is_null() {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the turn did not end");
}

#[tokio::test]
async fn reattaching_on_the_same_process_mid_answer_gives_the_rest_exactly_once() {
    let fake = FakeUpstream::start().await;
    fake.push(slow_answer(40));
    let (app, [s]) = TestApp::builder()
        .openai(&fake)
        .start_as(["reloader"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let mut first = Reader::new(app.send_message(&s.access, &conv, "count").await);
    let seen = first.until(deltas(4)).await;
    drop(first);
    assert_eq!(seen[0].event, "turn_start");
    assert_eq!(seen[0].id, "0");
    let turn = seen[0].data["message_id"].as_str().unwrap().to_owned();
    let last = seen.last().unwrap().id.clone();

    let running = app.conversation(&s.access, &conv).await;
    assert_eq!(running["active_turn"]["id"], turn.as_str(), "{running}");
    let r = app
        .get_as(&s.access, &events_url(&conv, &turn))
        .header("Last-Event-ID", &last)
        .send()
        .await
        .unwrap();
    let rest = Reader::new(r).rest().await;
    assert_increasing(&[&seen, &rest]);
    // Followed live, delta by delta, not as one block at the end.
    assert!(
        rest.iter().filter(|e| e.event == "text_delta").count() > 3,
        "{rest:?}"
    );
    assert_eq!(format!("{}{}", text(&seen), text(&rest)), ANSWER);
    let done = rest.last().unwrap();
    assert_eq!((done.event.as_str(), done.id.as_str()), ("done", "end"));
    assert_eq!(done.data["finish_reason"], "stop");
    let stored = wait_until_ended(&app, &s.access, &conv).await;
    assert_eq!(stored["messages"][1]["content"], ANSWER);
    assert_eq!(stored["messages"][1]["id"], done.data["message_id"]);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_answer_leaves_a_complete_stored_answer() {
    let fake = FakeUpstream::start().await;
    fake.push(slow_answer(20));
    // A disconnect is noticed when the next keep-alive cannot be written.
    let (app, [s]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.sse_keep_alive = Duration::from_millis(50))
        .start_as(["leaver"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let mut r = Reader::new(app.send_message(&s.access, &conv, "go").await);
    r.until(deltas(2)).await;
    drop(r);
    let stored = wait_until_ended(&app, &s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2, "{stored}");
    assert_eq!(m[1]["status"], "complete", "{stored}");
    assert_eq!(m[1]["content"], ANSWER);
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (0, 0));
}

#[tokio::test]
async fn an_ended_turn_is_replayed_with_the_live_ids_by_header_or_query() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "call_1".into(),
            "calculator".into(),
            r#"{"expression": "6*7"}"#.into(),
        )],
        usage: usage(30, 5),
    });
    fake.push(Reply::Text {
        text: "it is forty-two".into(),
        usage: usage(40, 6),
    });
    let (app, [s]) = TestApp::builder()
        .openai(&fake)
        .start_as(["replayer"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let live = Reader::new(app.send_message(&s.access, &conv, "6*7?").await)
        .rest()
        .await;
    let turn = live[0].data["message_id"].as_str().unwrap().to_owned();
    let names: Vec<&str> = live.iter().map(|e| e.event.as_str()).collect();
    assert!(names.contains(&"tool_result"), "{names:?}");

    // From the start: one text per step, every other event as it was, with the live ids.
    let replay = Reader::new(
        app.get_as(&s.access, &events_url(&conv, &turn))
            .send()
            .await
            .unwrap(),
    )
    .rest()
    .await;
    assert_increasing(&[&replay]);
    assert_eq!(text(&replay), text(&live));
    let non_text = |v: &[Ev]| -> Vec<(String, String, Value)> {
        v.iter()
            .filter(|e| e.event != "text_delta")
            .map(|e| (e.id.clone(), e.event.clone(), e.data.clone()))
            .collect()
    };
    let (mut a, mut b) = (non_text(&live), non_text(&replay));
    // A tool's duration is stored to the millisecond, as it was sent.
    for (_, _, d) in a.iter_mut().chain(b.iter_mut()) {
        d.as_object_mut().unwrap().remove("duration_ms");
    }
    assert_eq!(a, b);
    let last_delta = |v: &[Ev]| {
        v.iter()
            .rfind(|e| e.event == "text_delta")
            .unwrap()
            .id
            .clone()
    };
    assert_eq!(last_delta(&live), last_delta(&replay));

    // After an id in the middle of the last step's text: the rest of it, once.
    let cut = live
        .iter()
        .find(|e| e.event == "text_delta" && e.id.starts_with("2."))
        .unwrap()
        .clone();
    let by_header = app
        .get_as(&s.access, &events_url(&conv, &turn))
        .header("Last-Event-ID", &cut.id)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let by_query = app
        .get_as(
            &s.access,
            &format!("{}?after={}", events_url(&conv, &turn), cut.id),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Right after the end the turn may still be in its process's memory, which gives the
    // text as it was streamed, or read from Postgres, which gives it as one piece: either
    // way the same text after the cut, then its usage and the end.
    for body in [&by_header, &by_query] {
        let rest = parse_sse(body);
        let rest_text: String = streamed_text(&rest);
        assert_eq!(
            format!("{}{rest_text}", cut.data["text"].as_str().unwrap()),
            "it is forty-two"
        );
        let mut kinds: Vec<&str> = rest.iter().map(|e| e.event.as_str()).collect();
        kinds.dedup();
        assert_eq!(kinds, ["text_delta", "usage", "done"]);
    }
    // After the end: nothing more.
    let after_end = app
        .get_as(
            &s.access,
            &format!("{}?after=end", events_url(&conv, &turn)),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(after_end.status(), 200);
    assert!(parse_sse(&after_end.text().await.unwrap()).is_empty());
    // The JSON form of an ended turn is its summary.
    let summary: Value = app
        .get_as(&s.access, &events_url(&conv, &turn))
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(summary["content"], "it is forty-two");
    assert_eq!(summary["finish_reason"], "stop");
}

#[tokio::test]
async fn another_users_turn_and_bad_ids_are_refused() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::Text {
        text: "private".into(),
        usage: usage(5, 1),
    });
    let (app, [owner, thief]) = TestApp::builder()
        .openai(&fake)
        .start_as(["owner", "thief"])
        .await;
    let conv = app.new_conversation(&owner.access).await;
    let events = app.chat(&owner.access, &conv, "secret").await;
    let turn = events[0].data["message_id"].as_str().unwrap().to_owned();
    let r = app
        .get_as(&thief.access, &events_url(&conv, &turn))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    // The thief's own conversation with the owner's turn id: still not theirs.
    let own = app.new_conversation(&thief.access).await;
    let r = app
        .get_as(&thief.access, &events_url(&own, &turn))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    let r = app
        .get_as(
            &owner.access,
            &events_url(&conv, &uuid::Uuid::new_v4().to_string()),
        )
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    for bad in ["x", "1", "0.3", &"9".repeat(100)] {
        let r = app
            .get_as(&owner.access, &events_url(&conv, &turn))
            .header("Last-Event-ID", bad)
            .send()
            .await
            .unwrap();
        expect_error(r, 400, "invalid_last_event_id").await;
    }
    let r = app
        .get_as(&owner.access, &events_url(&conv, &turn))
        .send()
        .await
        .unwrap();
    assert_eq!(
        streamed_text(&parse_sse(&r.text().await.unwrap())),
        "private"
    );
}

#[tokio::test]
async fn another_process_replays_the_committed_steps_and_follows_the_turn_to_its_end() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "call_1".into(),
            "calculator".into(),
            r#"{"expression": "6*7"}"#.into(),
        )],
        usage: usage(30, 5),
    });
    fake.push(slow_answer(60));
    let app = TestApp::builder().openai(&fake).start().await;
    let child = start_child_with(&app.database_url, &fake.base_url_openai(), &[]);
    let mut other = TestApp::builder().database(&app.database_url).start().await;
    other.address = child.address.clone();
    let s = app.signed_up("roamer").await;
    let conv = app.new_conversation(&s.access).await;

    // The turn runs on the other process; its client goes away mid-answer.
    let mut first = Reader::new(other.send_message(&s.access, &conv, "6*7?").await);
    let seen = first
        .until(|v| {
            v.iter().any(|e| e.event == "tool_result")
                && v.iter().filter(|e| e.event == "text_delta").count() >= 3
        })
        .await;
    drop(first);
    let turn = seen[0].data["message_id"].as_str().unwrap().to_owned();
    let last = seen.last().unwrap().id.clone();
    assert!(last.starts_with("2."), "{last}");

    // This process: from the client's last id, and another client from the start.
    let url = events_url(&conv, &turn);
    let resumed = app
        .get_as(&s.access, &url)
        .header("Last-Event-ID", &last)
        .send()
        .await
        .unwrap();
    let mut fresh = Reader::new(app.get_as(&s.access, &url).send().await.unwrap());
    // The committed tool step comes from Postgres while the answer is still being written.
    let mut whole = fresh
        .until(|v| v.iter().any(|e| e.event == "tool_result"))
        .await;
    let running = app.conversation(&s.access, &conv).await;
    assert_eq!(running["active_turn"]["id"], turn.as_str(), "{running}");
    let (rest, more) = tokio::join!(async { Reader::new(resumed).rest().await }, fresh.rest());
    whole.extend(more);
    assert_increasing(&[&seen, &rest]);
    assert_eq!(format!("{}{}", text(&seen), text(&rest)), ANSWER);
    assert_eq!(rest.last().unwrap().event, "done");
    assert_eq!(rest.last().unwrap().data["finish_reason"], "stop");

    // The fresh client has the whole turn, with the ids the running process gave it.
    assert_increasing(&[&whole]);
    assert_eq!(text(&whole), ANSWER);
    let id_of = |v: &[Ev], name: &str| v.iter().find(|e| e.event == name).unwrap().id.clone();
    for name in ["turn_start", "tool_call", "tool_result"] {
        assert_eq!(id_of(&seen, name), id_of(&whole, name), "{name}");
    }
    assert_eq!(rest.last().unwrap().data, whole.last().unwrap().data);
    let stored = wait_until_ended(&app, &s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m.last().unwrap()["content"], ANSWER, "{stored}");
    assert_eq!(json!(m.len()), json!(4));
}
