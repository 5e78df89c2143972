"""Drives AgentChat's /v1 API with the official `openai` Python SDK, one scenario per run.

Run by the Rust API suite (tests/api/openai_sdk.rs), which starts the server on a fake
upstream, queues the model's replies and checks the server side. Environment:
OPENAI_BASE_URL (http://host:port/v1), OPENAI_API_KEY (an `ack_` key), AGENTCHAT_MODEL.
Prints `ok <scenario>` and exits 0, or raises (exit 1) saying what was wrong.
"""

import json
import os
import sys

import openai

MODEL = os.environ["AGENTCHAT_MODEL"]


def client():
    # No retries: a refusal must surface as the SDK's exception, not as a wait.
    return openai.OpenAI(max_retries=0, timeout=30)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def agentchat(obj):
    extra = obj.model_extra or {}
    return extra.get("agentchat") or {}


def plain():
    r = client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello"}]
    )
    expect(r.object == "chat.completion", r.object)
    expect(r.choices[0].message.content == "Hello from the fake model", r.choices[0].message)
    expect(r.choices[0].finish_reason == "stop", r.choices[0].finish_reason)
    expect(r.usage.prompt_tokens == 11 and r.usage.completion_tokens == 5, r.usage)
    expect(r.usage.total_tokens == 16, r.usage)
    expect(r.model == MODEL, r.model)
    expect(agentchat(r).get("conversation_id"), r.model_extra)


def stream_usage():
    chunks = list(
        client().chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Stream please"},
            ],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    expect(text == "streamed words arrive one by one", repr(text))
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    expect(finishes == ["stop"], finishes)
    last = chunks[-1]
    expect(last.choices == [] and last.usage is not None, last)
    expect(last.usage.prompt_tokens == 11 and last.usage.completion_tokens == 5, last.usage)
    expect(all(c.object == "chat.completion.chunk" for c in chunks), "object")
    expect(len({c.id for c in chunks}) == 1, "one id for the whole stream")


def server_tool():
    r = client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is 6*7?"}]
    )
    expect(r.choices[0].message.content == "It is 42.", r.choices[0].message)
    expect(not r.choices[0].message.tool_calls, "server tools are not the client's to run")
    events = agentchat(r).get("events", [])
    results = [e for e in events if e.get("type") == "tool_result"]
    expect(len(results) == 1 and results[0]["name"] == "calculator", events)
    expect(results[0]["success"] is True and results[0]["data"]["result"] == 42, results)
    # The same in a stream: the activity rides on chunks ordinary clients ignore.
    chunks = list(
        client().chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "And 2+2?"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    expect(text == "It is 4.", repr(text))
    kinds = [agentchat(c).get("type") for c in chunks if agentchat(c).get("type")]
    expect(kinds == ["tool_call", "tool_result", "done"], kinds)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def client_tool():
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    first = client().chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
    choice = first.choices[0]
    expect(choice.finish_reason == "tool_calls", choice.finish_reason)
    calls = choice.message.tool_calls
    expect(len(calls) == 1 and calls[0].function.name == "get_weather", calls)
    expect(json.loads(calls[0].function.arguments) == {"city": "Paris"}, calls[0].function)
    # The client runs its tool and continues, streaming this time.
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": "sunny, 21 C"})
    chunks = list(
        client().chat.completions.create(
            model=MODEL, messages=messages, tools=[WEATHER], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    expect(text == "Sunny in Paris.", repr(text))
    # A streamed tool call arrives as `tool_calls` deltas too.
    chunks = list(
        client().chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "And Rome?"}], tools=[WEATHER], stream=True
        )
    )
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    expect(len(deltas) == 1 and deltas[0].function.name == "get_weather", deltas)
    expect(json.loads(deltas[0].function.arguments) == {"city": "Rome"}, deltas)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    expect(finishes == ["tool_calls"], finishes)


def forbidden_tool():
    r = client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Fetch example.com"}]
    )
    events = agentchat(r).get("events", [])
    results = [e for e in events if e.get("type") == "tool_result"]
    expect(len(results) == 1 and results[0]["name"] == "http_get", events)
    expect(results[0]["success"] is False and "not_permitted" in results[0]["error"], results)
    expect(r.choices[0].message.content == "I may not fetch pages.", r.choices[0].message)


def revoked_key():
    try:
        client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, e.status_code)
        expect(e.body and e.body.get("code") == "invalid_api_key", e.body)
        return
    raise AssertionError("a revoked key was accepted")


def budget_exhausted():
    try:
        client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    except openai.RateLimitError as e:
        expect(e.status_code == 429, e.status_code)
        expect(e.body and e.body.get("code") == "insufficient_quota", e.body)
        expect(e.body.get("type") == "insufficient_quota", e.body)
        expect(int(e.response.headers["retry-after"]) > 0, e.response.headers)
        return
    raise AssertionError("a call past the budget was answered")


def unknown_model():
    try:
        client().chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    except openai.NotFoundError as e:
        expect(e.status_code == 404, e.status_code)
        expect(e.body and e.body.get("code") == "model_not_found", e.body)
        return
    raise AssertionError("an unknown model was accepted")


def models():
    ids = [m.id for m in client().models.list()]
    expect(MODEL in ids, ids)


SCENARIOS = {
    f.__name__: f
    for f in [plain, stream_usage, server_tool, client_tool, forbidden_tool, revoked_key,
              budget_exhausted, unknown_model, models]
}

if __name__ == "__main__":
    name = sys.argv[1]
    SCENARIOS[name]()
    print(f"ok {name}")
