"""API judges through the REAL anthropic / openai SDKs against httpx2.MockTransport or a local server.

The installed SDKs (anthropic 2.14, openai 3.57) are built on ``httpx2`` and type-check their
``http_client`` argument, so the mock transport is ``httpx2.MockTransport`` inside an
``httpx2.AsyncClient``. No request leaves the machine; no real key is used.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timezone

import httpx2
import pytest

from axon_eval.evidence import SqlStep, ToolStep, Turn
from axon_eval.judges import (
    JudgeRecord,
    MissingApiKey,
    Verdict,
    VerdictCache,
    VerdictParseError,
    build_judge,
    load_prompt,
    parse_verdict,
)
from axon_eval.judges._llm import parse_retry_after
from axon_eval.judges.anthropic_judge import AnthropicJudge
from axon_eval.judges.fake_server import FakeJudgeServer, anthropic_message_json, openai_completion_json
from axon_eval.judges.openai_judge import OpenAIJudge
from axon_eval.judges.prices import TokenUsage, cost_usd, price_table
from axon_eval.view import EvidenceView, build_views

FAKE_KEY = "sk-ant-test-not-a-real-key-123"
#: sha256 of prompts/judge_v1.md. Editing the prompt requires a new version file, not a new hash here.
JUDGE_V1_SHA256 = "5d297cf15da83622872db3be7557e36364e51b3845fe17d78c4d674e5ed2d822"
GOOD = {"intent_understood": 9, "sql_quality": 8, "result_relevance": 7, "answer_faithfulness": 9,
        "verdict": "good", "explanation": "Step 2 returned 4 tries for Harbour City and the answer says 4."}
CAPTURED = datetime(2026, 7, 20, 9, 0, tzinfo=timezone.utc)


def make_views(n: int = 1, *, answer: str | None = "Harbour City scored 4 tries.") -> list[EvidenceView]:
    turns = [Turn(schema_version=1, turn_id=f"t{i}", captured_at=CAPTURED, region="eu", surface="web",
                  client="c", question=f"How many tries did team {i} score?", answer=answer,
                  steps=[ToolStep(name="list_tables", status="ok", output=["tries"]),
                         SqlStep(sql=f"SELECT COUNT(*) FROM tries WHERE team = {i}", status="ok",
                                 columns=["n"], rows=[[4]], row_count=1)])
             for i in range(n)]
    return build_views(turns, 20)


class Recorder:
    """A MockTransport handler answering from a script; records every request it sees."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        if callable(item):
            return item(request)
        return item

    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def ok_message(verdict: dict | str = GOOD, **kw) -> httpx2.Response:
    text = verdict if isinstance(verdict, str) else json.dumps(verdict)
    return httpx2.Response(200, json=anthropic_message_json(text, model="claude-haiku-4-5", **kw))


def api_error(status: int, headers: dict | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers or {},
                           json={"type": "error", "error": {"type": "api_error", "message": f"status {status}"}})


@pytest.fixture
def anthropic_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)


def claude(handler: Recorder, **options) -> AnthropicJudge:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    options = {"max_retries": 0, "retry_attempts": 3, "backoff_base_s": 0.001, **options}
    return AnthropicJudge("claude-haiku-4-5", http_client=client, **options)


# -- prompt and verdict parsing -----------------------------------------------------------------------
def test_prompt_file_hash_is_pinned():
    prompt = load_prompt("judge_v1")
    assert prompt.sha256 == JUDGE_V1_SHA256, "judge_v1.md changed: add judge_v2.md instead of editing v1"
    text = prompt.text.lower()
    for rule in ("never use your own knowledge", "faithfulness first", "where it ended", "guardrail block",
                 "no sql was needed", "null", "data, never instructions", "all seven scorers", "no arithmetic"):
        assert rule in text, rule
    with pytest.raises(ValueError, match="available"):
        load_prompt("judge_v999")


def test_parse_verdict_accepts_good_json_and_code_fences():
    assert parse_verdict(json.dumps(GOOD)) == Verdict(**GOOD)
    assert parse_verdict("```json\n" + json.dumps(GOOD) + "\n```").sql_quality == 8
    assert parse_verdict({**GOOD, "sql_quality": 8.0}).sql_quality == 8


@pytest.mark.parametrize(("patch", "field", "fragment"), [
    ({"sql_quality": 11}, "sql_quality", "out of range"),
    ({"intent_understood": -1}, "intent_understood", "out of range"),
    ({"result_relevance": 7.5}, "result_relevance", "whole number"),
    ({"result_relevance": "7"}, "result_relevance", "integer"),
    ({"intent_understood": True}, "intent_understood", "integer"),
    ({"intent_understood": None}, "intent_understood", "not null"),
    ({"verdict": "excellent"}, "verdict", "one of"),
    ({"explanation": " "}, "explanation", "non-empty"),
    ({"confidence": 0.9}, "confidence", "unknown field"),
])
def test_parse_verdict_names_the_bad_field(patch, field, fragment):
    with pytest.raises(VerdictParseError) as info:
        parse_verdict({**GOOD, **patch})
    assert info.value.field == field
    assert field in str(info.value) and fragment in str(info.value)


def test_parse_verdict_missing_field_and_bad_json():
    obj = dict(GOOD)
    del obj["sql_quality"]
    with pytest.raises(VerdictParseError, match="sql_quality: missing field"):
        parse_verdict(obj)
    with pytest.raises(VerdictParseError, match="not valid JSON"):
        parse_verdict('{"intent_understood": 9,')
    with pytest.raises(VerdictParseError, match="expected a JSON object"):
        parse_verdict("[1, 2]")


def test_faithfulness_rules_follow_the_captured_answer():
    with pytest.raises(VerdictParseError, match="answer was captured"):
        parse_verdict({**GOOD, "answer_faithfulness": None}, answer_captured=True)
    notes: list[str] = []
    verdict = parse_verdict(GOOD, answer_captured=False, notes=notes)
    assert verdict.answer_faithfulness is None
    assert notes and "coerced to null" in notes[0]


def test_judge_record_round_trip_and_exclusivity():
    rec = JudgeRecord(segment_id="t1#2", judge_id="x", model="m", prompt_version="judge_v1", sample_index=3,
                      verdict=Verdict(**GOOD), latency_ms=12.5, cost_usd=None, extra={"a": [1, 2]})
    assert JudgeRecord.from_json_line(rec.to_json_line()) == rec
    assert rec.judged and rec.subscores()["sql_quality"] == 8
    err = JudgeRecord(segment_id="t1", judge_id="x", model="m", prompt_version="v", error="boom")
    assert not err.judged and err.subscores() is None
    with pytest.raises(ValueError, match="exactly one of verdict or error"):
        JudgeRecord(segment_id="t1", judge_id="x", model="m", prompt_version="v")
    with pytest.raises(ValueError, match="exactly one of verdict or error"):
        JudgeRecord(segment_id="t1", judge_id="x", model="m", prompt_version="v", verdict=Verdict(**GOOD), error="e")


def test_prices_table_and_unknown_model():
    table = price_table()
    assert table.copied_on and "check" in table.note.lower()
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000,
                       cache_creation_tokens=1_000_000)
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(3 + 15 + 0.30 + 3.75)
    assert cost_usd("claude-sonnet-4-5-20250929", usage) == cost_usd("claude-sonnet-4-5", usage)
    assert cost_usd("claude-sonnet-4-5", usage, batch=True) == pytest.approx((3 + 15 + 0.30 + 3.75) / 2)
    assert cost_usd("my-local-llama", usage) is None


# -- Claude judge -----------------------------------------------------------------------------------
def test_claude_good_structured_response(anthropic_key):
    handler = Recorder(ok_message(input_tokens=1000, output_tokens=100, cache_read=2000, cache_creation=0))
    judge = claude(handler, max_tokens=700)
    view = make_views(1)[0]
    rec = judge.judge(view)
    assert rec.judged and rec.verdict == Verdict(**GOOD)
    assert rec.judge_id == "anthropic:claude-haiku-4-5@judge_v1,t=default"
    assert (rec.input_tokens, rec.output_tokens, rec.cache_read_tokens, rec.cache_creation_tokens) == (1000, 100, 2000, 0)
    assert rec.cost_usd == pytest.approx((1000 * 1.0 + 100 * 5.0 + 2000 * 0.10) / 1e6)
    assert rec.latency_ms is not None and rec.latency_ms >= 0
    assert rec.cache_key is not None and re.fullmatch(r"[0-9a-f]{64}", rec.cache_key)
    (request,) = handler.requests
    assert request.url.path == "/v1/messages"
    assert FAKE_KEY in (request.headers.get("x-api-key") or request.headers["authorization"])
    body = handler.bodies()[0]
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 700
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["text"] == load_prompt("judge_v1").text
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False
    assert view.text in body["messages"][0]["content"][0]["text"]
    assert "temperature" not in body
    assert FAKE_KEY not in rec.to_json_line() and FAKE_KEY not in repr(judge)


def test_claude_temperature_is_sent_when_set(anthropic_key):
    handler = Recorder(ok_message())
    judge = claude(handler, temperature=0.0)
    assert judge.judge_id.endswith(",t=0.0")
    assert judge.judge(make_views(1)[0]).judged
    assert handler.bodies()[0]["temperature"] == 0.0


@pytest.mark.parametrize("sdk_retries", [0, 2])
def test_claude_429_with_retry_after_then_success(anthropic_key, sdk_retries):
    handler = Recorder(api_error(429, {"retry-after": "0.01"}), ok_message())
    rec = claude(handler, max_retries=sdk_retries).judge(make_views(1)[0])
    assert rec.judged and len(handler.requests) == 2
    # with SDK retries the SDK absorbs the 429; without, our own loop does (tries == 2)
    assert rec.extra["tries"] == (2 if sdk_retries == 0 else 1)


def test_claude_500_until_retries_run_out_is_an_error_record(anthropic_key):
    handler = Recorder(api_error(500, {"retry-after-ms": "1"}))
    rec = claude(handler, max_retries=1, retry_attempts=2).judge(make_views(1)[0])
    assert not rec.judged and rec.verdict is None
    assert "HTTP 500" in rec.error and "gave up after 2 of 2 tries" in rec.error
    assert len(handler.requests) == 2 * (1 + 1)


def test_claude_non_retryable_400_fails_at_once(anthropic_key):
    handler = Recorder(api_error(400))
    rec = claude(handler).judge(make_views(1)[0])
    assert "HTTP 400" in rec.error and "not retryable" in rec.error
    assert len(handler.requests) == 1


def test_claude_connection_error_is_retried(anthropic_key):
    handler = Recorder(httpx2.ConnectError("connection refused"), ok_message())
    rec = claude(handler).judge(make_views(1)[0])
    assert rec.judged and len(handler.requests) == 2


def test_claude_malformed_json_is_an_error_record(anthropic_key):
    rec = claude(Recorder(ok_message('{"intent_understood": 9, "sql_quality": '))).judge(make_views(1)[0])
    assert not rec.judged and "unparseable verdict" in rec.error and "not valid JSON" in rec.error
    assert rec.extra["raw_output"].startswith('{"intent_understood"')
    assert rec.input_tokens is not None  # the call was made and is accounted for


def test_claude_out_of_range_subscore_names_the_field(anthropic_key):
    rec = claude(Recorder(ok_message({**GOOD, "result_relevance": 12}))).judge(make_views(1)[0])
    assert not rec.judged and "result_relevance" in rec.error and "12" in rec.error


def test_claude_truncated_by_max_tokens_is_an_error_record(anthropic_key):
    rec = claude(Recorder(ok_message('{"intent_understood": 9', stop_reason="max_tokens")),
                 max_tokens=16).judge(make_views(1)[0])
    assert not rec.judged and "truncated" in rec.error and "max_tokens=16" in rec.error


def test_claude_faithfulness_given_without_answer_is_coerced_with_a_note(anthropic_key):
    rec = claude(Recorder(ok_message(GOOD))).judge(make_views(1, answer=None)[0])
    assert rec.judged and rec.verdict.answer_faithfulness is None
    assert any("coerced to null" in n for n in rec.extra["notes"])


def test_claude_judge_many_keeps_order_and_never_raises(anthropic_key):
    views = make_views(6)

    def answer(request: httpx2.Request) -> httpx2.Response:
        text = json.loads(request.content)["messages"][0]["content"][0]["text"]
        if "team 3" in text:
            return api_error(400)
        return ok_message({**GOOD, "sql_quality": int(re.search(r"team (\d)", text).group(1))})

    records = claude(Recorder(answer)).judge_many(views, concurrency=3, progress=False)
    assert [r.segment_id for r in records] == [v.segment_id for v in views]
    assert [r.verdict.sql_quality if r.judged else None for r in records] == [0, 1, 2, None, 4, 5]


def test_sync_judge_works_inside_a_running_event_loop(anthropic_key):
    handler = Recorder(ok_message())
    judge = claude(handler)
    views = make_views(2)

    async def notebook_cell():
        return judge.judge(views[0]), judge.judge_many(views, progress=False)

    single, many = asyncio.run(notebook_cell())
    assert single.judged and all(r.judged for r in many) and len(handler.requests) == 3


def test_cache_hit_on_second_run_makes_zero_requests(anthropic_key, tmp_path):
    handler = Recorder(ok_message())
    views = make_views(5)
    cache = VerdictCache(tmp_path / "v.sqlite")
    first = claude(handler).judge_many(views, cache=cache, progress=False)
    assert len(handler.requests) == 5 and not any(r.cached for r in first)
    second = claude(handler).judge_many(views, cache=cache, progress=False)
    assert len(handler.requests) == 5, "the second run must not make any HTTP request"
    assert all(r.cached for r in second)
    assert [r.verdict for r in second] == [r.verdict for r in first]
    assert cache.stats.hits == 5 and cache.stats.misses == 5


def test_errors_are_not_cached(anthropic_key, tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite")
    failing = Recorder(api_error(400))
    view = make_views(1)[0]
    assert not claude(failing).judge_many([view], cache=cache, progress=False)[0].judged
    assert len(cache) == 0
    ok = Recorder(ok_message())
    assert claude(ok).judge_many([view], cache=cache, progress=False)[0].judged
    assert len(ok.requests) == 1 and len(cache) == 1


def test_missing_api_key_fails_when_the_judge_is_built(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKey, match="ANTHROPIC_API_KEY"):
        build_judge("anthropic:claude-sonnet-4-5")
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY"):
        build_judge("openai:gpt-4o")
    # a local OpenAI-compatible server needs no key: a dummy is sent
    assert build_judge("openai:llama-3@http://127.0.0.1:8000/v1").judge_id.endswith("base=http://127.0.0.1:8000/v1")


# -- Message Batches ------------------------------------------------------------------------------------
def test_claude_batch_with_succeeded_errored_expired_and_canceled(anthropic_key):
    views = make_views(4)
    state = {"polls": 0, "custom_ids": []}
    batch_json = {"id": "msgbatch_test1", "type": "message_batch", "created_at": "2026-07-20T09:00:00Z",
                  "expires_at": "2026-07-21T09:00:00Z",
                  "request_counts": {"processing": 4, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}}

    def handler(request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            body = json.loads(request.content)
            state["custom_ids"] = [r["custom_id"] for r in body["requests"]]
            assert all(r["params"]["system"][0]["cache_control"] == {"type": "ephemeral"} for r in body["requests"])
            return httpx2.Response(200, json={**batch_json, "processing_status": "in_progress"})
        if request.method == "GET" and path == "/v1/messages/batches/msgbatch_test1":
            state["polls"] += 1
            if state["polls"] < 2:
                return httpx2.Response(200, json={**batch_json, "processing_status": "in_progress"})
            return httpx2.Response(200, json={**batch_json, "processing_status": "ended",
                                              "ended_at": "2026-07-20T09:05:00Z",
                                              "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_test1/results"})
        if request.method == "GET" and path == "/v1/messages/batches/msgbatch_test1/results":
            ids = state["custom_ids"]
            lines = [  # out of order on purpose
                {"custom_id": ids[3], "result": {"type": "canceled"}},
                {"custom_id": ids[2], "result": {"type": "expired"}},
                {"custom_id": ids[1], "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "invalid_request_error", "message": "bad schema"}}}},
                {"custom_id": ids[0], "result": {"type": "succeeded", "message": anthropic_message_json(
                    json.dumps(GOOD), input_tokens=1000, output_tokens=100, cache_read=0)}},
            ]
            return httpx2.Response(200, content="\n".join(json.dumps(x) for x in lines).encode())
        return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})

    judge = AnthropicJudge("claude-haiku-4-5", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
                           max_retries=0)
    records = judge.judge_batch(views, poll_interval=0.001, timeout=10)
    assert [r.segment_id for r in records] == [v.segment_id for v in views]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid) for cid in state["custom_ids"])
    assert state["custom_ids"] == [judge.cache_key(v, 0) for v in views]
    ok, errored, expired, canceled = records
    assert ok.judged and ok.verdict == Verdict(**GOOD)
    assert ok.cost_usd == pytest.approx((1000 * 1.0 + 100 * 5.0) / 1e6 * 0.5)
    assert "errored" in errored.error and "bad schema" in errored.error
    assert "expired" in expired.error and "canceled" in canceled.error
    assert {r.extra["batch_id"] for r in records} == {"msgbatch_test1"}
    assert state["polls"] >= 2


def test_claude_batch_uses_the_cache_and_deduplicates_identical_views(anthropic_key, tmp_path):
    seen: list[str] = []
    submitted: list[list[str]] = []
    ended = {"id": "msgbatch_2", "type": "message_batch", "created_at": "2026-07-20T09:00:00Z",
             "expires_at": "2026-07-21T09:00:00Z", "processing_status": "ended",
             "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_2/results",
             "request_counts": {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 0}}

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.method == "POST":
            submitted.append([r["custom_id"] for r in json.loads(request.content)["requests"]])
            return httpx2.Response(200, json=ended)
        if request.url.path.endswith("/results"):
            lines = [{"custom_id": cid, "result": {"type": "succeeded", "message": anthropic_message_json(json.dumps(GOOD))}}
                     for cid in submitted[-1]]
            return httpx2.Response(200, content="\n".join(json.dumps(x) for x in lines).encode())
        return httpx2.Response(200, json=ended)

    a, b = make_views(2)
    twin = EvidenceView(**{**a.__dict__, "segment_id": "twin"})
    judge = AnthropicJudge("claude-haiku-4-5", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
                           max_retries=0)
    cache = VerdictCache(tmp_path / "c.sqlite")
    first = judge.judge_batch([a, twin, b], cache=cache, poll_interval=0.001)
    assert [r.segment_id for r in first] == ["t0", "twin", "t1"] and all(r.judged for r in first)
    assert len(submitted) == 1 and len(submitted[0]) == 2, "identical views share one batch request"
    n_requests = len(seen)
    second = judge.judge_batch([a, twin, b], cache=cache, poll_interval=0.001)
    assert len(seen) == n_requests and all(r.cached for r in second)


# -- OpenAI-compatible judge ------------------------------------------------------------------------------
def openai_judge(handler: Recorder, monkeypatch, **options) -> OpenAIJudge:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-not-real")
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAIJudge("gpt-4o", http_client=client, **{"max_retries": 0, "backoff_base_s": 0.001, **options})


def test_openai_good_response_and_token_accounting(monkeypatch):
    handler = Recorder(httpx2.Response(200, json=openai_completion_json(json.dumps(GOOD), prompt_tokens=3000,
                                                                        completion_tokens=90, cached_tokens=2048)))
    rec = openai_judge(handler, monkeypatch).judge(make_views(1)[0])
    assert rec.judged and rec.verdict == Verdict(**GOOD)
    assert rec.judge_id == "openai:gpt-4o@judge_v1,t=0.0"
    assert (rec.input_tokens, rec.cache_read_tokens, rec.output_tokens) == (952, 2048, 90)
    assert rec.cost_usd == pytest.approx((952 * 2.5 + 2048 * 1.25 + 90 * 10) / 1e6)
    body = handler.bodies()[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["messages"][0]["role"] == "system" and body["temperature"] == 0.0
    assert handler.requests[0].url.path == "/v1/chat/completions"


def test_openai_length_refusal_and_retry(monkeypatch):
    view = make_views(1)[0]
    truncated = Recorder(httpx2.Response(200, json=openai_completion_json('{"intent', finish_reason="length")))
    assert "truncated" in openai_judge(truncated, monkeypatch).judge(view).error
    refused = Recorder(httpx2.Response(200, json=openai_completion_json(None, refusal="I cannot help")))
    assert "refused" in openai_judge(refused, monkeypatch).judge(view).error
    flaky = Recorder(api_error(429, {"retry-after": "0"}), api_error(503),
                     httpx2.Response(200, json=openai_completion_json(json.dumps(GOOD))))
    rec = openai_judge(flaky, monkeypatch).judge(view)
    assert rec.judged and rec.extra["tries"] == 3 and len(flaky.requests) == 3


def test_retry_after_header_parsing():
    assert parse_retry_after(httpx2.Headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx2.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx2.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert parse_retry_after(httpx2.Headers({})) is None


# -- local fake server (real sockets) -----------------------------------------------------------------------
def test_claude_and_openai_against_the_local_fake_server(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    views = make_views(8) + make_views(1, answer=None)
    with FakeJudgeServer(delay_s=0.01, lifetime_s=30) as server:
        judge = build_judge("anthropic:claude-haiku-4-5", base_url=server.url)
        records = judge.judge_many(views, concurrency=4, progress=False, cache=VerdictCache(tmp_path / "c.sqlite"))
        assert all(r.judged for r in records) and server.requests == 9
        assert records[-1].verdict.answer_faithfulness is None
        oa = build_judge(f"openai:local-model@{server.url}/v1")
        assert oa.judge(views[0]).judged
        assert server.paths[-1] == "/v1/chat/completions"


def test_fake_server_stops_by_itself_and_has_a_request_budget():
    import time

    import httpx2 as client_lib

    server = FakeJudgeServer(lifetime_s=0.5, max_requests=1).start()
    url = server.url
    assert client_lib.post(url + "/v1/messages", json={"messages": []}).status_code == 200
    assert client_lib.post(url + "/v1/messages", json={"messages": []}).status_code == 503
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            _ = server.url
        except RuntimeError:
            break
        time.sleep(0.05)
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    with pytest.raises(client_lib.ConnectError):
        client_lib.post(url + "/v1/messages", json={}, timeout=1)


def test_benchmark_rows_small_run():
    from axon_eval.bench_llm import bench_claude_fake_server

    rows = bench_claude_fake_server(n=40, concurrency=20, delay_s=0.05)
    assert all(set(r) == {"section", "name", "value", "unit", "target", "ok"} for r in rows)
    by_name = {r["name"]: r for r in rows}
    second = next(r for name, r in by_name.items() if "second run through the cache" in name)
    assert second["value"] == 0 and second["ok"]
    judged = next(r for name, r in by_name.items() if "judged records" in name)
    assert judged["value"] == 40
