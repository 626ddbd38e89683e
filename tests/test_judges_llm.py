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
from axon_eval.judges.fake_server import (
    FakeJudgeServer,
    anthropic_message_json,
    default_responder,
    openai_completion_json,
)
from axon_eval.judges.openai_judge import OpenAIJudge
from axon_eval.judges.prices import TokenUsage, cost_usd, price_table
from axon_eval.view import EvidenceView, build_views

FAKE_KEY = "sk-ant-test-not-a-real-key-123"
#: sha256 of prompts/judge_v1_free_text.md (same rule: a new version file, never an edit).
JUDGE_V1_FREE_TEXT_SHA256 = "206dbd04ce958a0f9145f6b3c24fb849a108b4ff8942bdb6d25f39076ef44668"
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


@pytest.fixture(autouse=True)
def no_endpoint_environment(monkeypatch):
    """The developer's shell must not steer these tests: no base URL or allowed-host variables."""
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AXON_EVAL_KEY_HOSTS", "ANTHROPIC_AUTH_TOKEN",
                 "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


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
    assert rec.judge_id == "anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default"
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
    assert rec.judge_id == "openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0"
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
    # nothing answers any more: refused, or (when the port was just released under load) closed unanswered
    with pytest.raises((client_lib.ConnectError, client_lib.RemoteProtocolError)):
        client_lib.post(url + "/v1/messages", json={}, timeout=1)


def test_benchmark_rows_small_run():
    from axon_eval.bench.llm import bench_claude_fake_server

    rows = bench_claude_fake_server(n=40, concurrency=20, delay_s=0.05)
    assert all(set(r) == {"section", "name", "value", "unit", "target", "ok"} for r in rows)
    by_name = {r["name"]: r for r in rows}
    second = next(r for name, r in by_name.items() if "second run through the cache" in name)
    assert second["value"] == 0 and second["ok"]
    judged = next(r for name, r in by_name.items() if "judged records" in name)
    assert judged["value"] == 40


# == endpoint provenance ===========================================================================
def test_base_url_from_the_environment_enters_the_judge_id_and_the_cache_key(monkeypatch, tmp_path):
    """The issue's bug: with ANTHROPIC_BASE_URL at the fake server the verdicts were recorded under the
    plain Claude id, and a later run against Claude got them from the cache. Now the endpoint is part of
    the id, so the later run misses the cache and asks the real endpoint; the canary key never reached the
    local server."""
    canary = "sk-ant-CANARY-provenance"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    views = make_views(3)
    cache = VerdictCache(tmp_path / "c.sqlite")
    with FakeJudgeServer(lifetime_s=30) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        fake = build_judge("anthropic:claude-haiku-4-5")
        assert fake.judge_id == f"anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default,base={server.url}"
        assert fake.endpoint == server.url and fake.endpoint_source == "env" and fake.endpoint_is_local
        records = fake.judge_many(views, cache=cache, progress=False)
        assert all(r.judged and r.judge_id == fake.judge_id for r in records) and server.requests == 3
        sent = [h.get("x-api-key") or h.get("authorization") for h in server.received_headers]
    assert all(canary not in (value or "") for value in sent), "the real key went to the local server"
    assert all("local-server-no-key" in value for value in sent)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    handler = Recorder(ok_message())
    real = claude(handler)
    assert real.judge_id == "anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default" and not real.endpoint_is_local
    again = real.judge_many(views, cache=cache, progress=False)
    assert not any(r.cached for r in again) and len(handler.requests) == 3, "fake verdicts served as Claude's"
    assert {r.cache_key for r in again}.isdisjoint({r.cache_key for r in records})


def test_spec_url_is_used_and_env_url_is_overridden(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    with FakeJudgeServer(lifetime_s=30) as server:
        judge = build_judge(f"anthropic:claude-haiku-4-5@{server.url}/")
        assert judge.endpoint == server.url and judge.endpoint_source == "spec" and judge.base_url == server.url
        assert judge.judge(make_views(1)[0]).judged and server.paths == ["/v1/messages"]


@pytest.mark.parametrize(("url", "expected"), [
    ("http://127.0.0.1:8123", "http://127.0.0.1:8123"),
    ("http://127.0.0.1:8123/", "http://127.0.0.1:8123"),
    ("HTTPS://Proxy.Example.COM:443/v1/", "https://proxy.example.com/v1"),
    ("http://host:80/v1", "http://host/v1"),
    ("https://user:pa55@gw.example.com/v1?api_key=k3y&x=1#frag", "https://gw.example.com/v1"),
    ("https://token@gw.example.com", "https://gw.example.com"),
    ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
])
def test_sanitize_url_keeps_identity_and_drops_credentials(url, expected):
    from axon_eval.judges._llm import sanitize_url

    assert sanitize_url(url) == expected


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://u:s3cret@host/x", "http://", "http://h:99999",
                                 "s3cret-user:s3cret@host"])
def test_invalid_urls_are_refused_without_showing_credentials(url):
    from axon_eval.judges._llm import InvalidEndpoint, sanitize_url

    with pytest.raises(InvalidEndpoint) as info:
        sanitize_url(url)
    assert "s3cret" not in str(info.value)


def test_redact_urls_masks_userinfo_and_query_values_in_any_text():
    from axon_eval.judges._llm import redact_urls

    text = "repeat(openai:m@https://me:pw-CANARY@gw.example.com/v1?key=CANARY2&v=2#free_text, 3) and http://ok/x"
    shown = redact_urls(text)
    assert "CANARY" not in shown
    assert shown == ("repeat(openai:m@https://<redacted>@gw.example.com/v1?key=<redacted>&v=<redacted>#free_text, 3)"
                     " and http://ok/x")
    assert redact_urls("no url here: a@b?c") == "no url here: a@b?c"


def test_credentials_in_a_url_never_reach_ids_specs_records_or_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-real")
    handler = Recorder(api_error(500))
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    spec = "openai:gpt-4o@https://me:pw-CANARY@gw.example.com/v1?token=tok-CANARY"
    judge = build_judge(spec, http_client=client, max_retries=0, retry_attempts=1)
    record = judge.judge(make_views(1)[0])
    assert handler.requests[0].url.host == "gw.example.com"  # the SDK still got the URL as given
    for text in (judge.judge_id, judge.spec, repr(judge), json.dumps(judge.provenance()), record.to_json_line()):
        assert "CANARY" not in text, text
    assert judge.spec == "openai:gpt-4o@https://<redacted>@gw.example.com/v1?token=<redacted>"
    assert judge.judge_id == "openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0,base=https://gw.example.com/v1"


def test_provider_default_endpoint_keeps_the_old_id(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-real")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1/")
    judge = build_judge("openai:gpt-4o")
    assert judge.judge_id == "openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0"
    assert judge.endpoint == "https://api.openai.com/v1" and judge.endpoint_source == "env"


def test_provenance_is_small_and_never_holds_the_key(monkeypatch):
    from axon_eval.judges._llm import judge_provenance

    canary = "sk-ant-CANARY-prov"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    claude_judge = build_judge("anthropic:claude-haiku-4-5")
    assert claude_judge.provenance() == {
        "provider": "anthropic", "model": "claude-haiku-4-5", "endpoint": "https://api.anthropic.com",
        "endpoint_source": "default", "local": False, "key_source": "env", "key_rule": "provider endpoint",
        "mode": "structured", "prompt_version": "judge_v1+5d297cf15da8", "prompt_name": "judge_v1",
        "prompt_sha256": JUDGE_V1_SHA256, "prompt_file": None,
        "judge_id": "anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default"}
    nested = build_judge("ensemble(repeat(anthropic:claude-haiku-4-5@http://localhost:9/, 2), "
                         "noise(openai:m@https://gw.example.com/v1#free_text, sd=1), reducer=majority)")
    found = judge_provenance(nested)
    assert [(p["provider"], p["endpoint"], p["local"], p["key_source"], p["mode"]) for p in found] == [
        ("anthropic", "http://localhost:9", True, "dummy", "structured"),
        ("openai", "https://gw.example.com/v1", False, "none", "free_text")]
    assert canary not in json.dumps(found)


# == keys ===========================================================================================
def mock_judge(cls, url: str, handler: Recorder, **options):
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return cls("m", base_url=url, http_client=client, **{"max_retries": 0, "retry_attempts": 1, **options})


def openai_ok() -> httpx2.Response:
    return httpx2.Response(200, json=openai_completion_json(json.dumps(GOOD)))


def sent_credentials(request: httpx2.Request) -> list[str]:
    return [v for k, v in request.headers.items() if k.lower() in ("authorization", "x-api-key")]


@pytest.fixture
def canaries(monkeypatch):
    values = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-keys", "OPENAI_API_KEY": "sk-openai-CANARY-keys",
              "ANTHROPIC_AUTH_TOKEN": "tok-CANARY-auth", "OPENAI_ORG_ID": "org-CANARY",
              "OPENAI_PROJECT_ID": "proj-CANARY"}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_a_local_server_gets_the_dummy_key_not_the_real_one(canaries):
    with FakeJudgeServer(lifetime_s=30) as server:
        a = build_judge(f"anthropic:claude-haiku-4-5@{server.url}")
        o = build_judge(f"openai:local@{server.url}/v1")
        assert a.judge(make_views(1)[0]).judged and o.judge(make_views(1)[0]).judged
    assert (a.key_source, o.key_source) == ("dummy", "dummy")
    anthropic_headers, openai_headers = server.received_headers
    assert "local-server-no-key" in (anthropic_headers.get("x-api-key") or anthropic_headers["authorization"])
    assert openai_headers["authorization"] == "Bearer no-key-needed"
    for headers in server.received_headers:
        assert not any("CANARY" in v for v in headers.values()), headers


@pytest.mark.parametrize("cls", [AnthropicJudge, OpenAIJudge])
def test_a_host_that_is_not_allowed_gets_no_key_at_all(canaries, cls):
    handler = Recorder(ok_message() if cls is AnthropicJudge else openai_ok())
    judge = mock_judge(cls, "https://proxy.example.com/v1", handler)
    assert judge.key_source == "none"
    assert judge.judge(make_views(1)[0]).judged
    (request,) = handler.requests
    assert request.url.host == "proxy.example.com"
    assert sent_credentials(request) == []
    assert not any("CANARY" in v for v in request.headers.values()), dict(request.headers)


@pytest.mark.parametrize("cls", [AnthropicJudge, OpenAIJudge])
def test_the_provider_host_over_plain_http_gets_no_key(canaries, cls):
    host = "api.anthropic.com" if cls is AnthropicJudge else "api.openai.com"
    handler = Recorder(ok_message() if cls is AnthropicJudge else openai_ok())
    judge = mock_judge(cls, f"http://{host}/v1", handler)
    assert judge.key_source == "none" and judge.judge(make_views(1)[0]).judged
    assert sent_credentials(handler.requests[0]) == []


@pytest.mark.parametrize("how", ["env", "option", "env-with-port"])
def test_an_allowed_host_gets_the_key(canaries, monkeypatch, how):
    handler = Recorder(openai_ok())
    options = {}
    if how == "env":
        monkeypatch.setenv("AXON_EVAL_KEY_HOSTS", " other.example.com , Proxy.Example.com ")
    elif how == "env-with-port":
        monkeypatch.setenv("AXON_EVAL_KEY_HOSTS", "proxy.example.com:443")
    else:
        options["allow_key_hosts"] = ["proxy.example.com"]
    judge = mock_judge(OpenAIJudge, "https://proxy.example.com/v1", handler, **options)
    assert judge.key_source == "env" and "allowed" in judge.key_rule
    assert judge.judge(make_views(1)[0]).judged
    assert sent_credentials(handler.requests[0]) == [f"Bearer {canaries['OPENAI_API_KEY']}"]
    # the account headers still stay with OpenAI itself
    assert "openai-organization" not in handler.requests[0].headers


def test_an_allowed_host_and_port_does_not_allow_other_ports(canaries, monkeypatch):
    monkeypatch.setenv("AXON_EVAL_KEY_HOSTS", "proxy.example.com:8443")
    judge = mock_judge(OpenAIJudge, "https://proxy.example.com/v1", Recorder(openai_ok()))
    assert judge.key_source == "none"
    with pytest.raises(ValueError, match="AXON_EVAL_KEY_HOSTS.*'proxy.example.com/v1' is not a host name"):
        monkeypatch.setenv("AXON_EVAL_KEY_HOSTS", "proxy.example.com/v1")
        mock_judge(OpenAIJudge, "https://proxy.example.com/v1", Recorder(openai_ok()))


def test_the_provider_endpoint_still_gets_the_key_and_account_headers(canaries):
    handler = Recorder(openai_ok())
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    judge = OpenAIJudge("gpt-4o", http_client=client, max_retries=0)
    assert judge.judge(make_views(1)[0]).judged
    request = handler.requests[0]
    assert request.url.host == "api.openai.com"
    assert sent_credentials(request) == [f"Bearer {canaries['OPENAI_API_KEY']}"]
    assert request.headers["openai-organization"] == canaries["OPENAI_ORG_ID"]


@pytest.mark.parametrize("cls", [AnthropicJudge, OpenAIJudge])
def test_a_401_from_a_host_without_key_says_which_variable_to_set(canaries, cls):
    handler = Recorder(api_error(401))
    judge = mock_judge(cls, "https://gw.example.com/v1", handler)
    record = judge.judge(make_views(1)[0])
    assert not record.judged and "HTTP 401" in record.error
    assert "no key was sent to https://gw.example.com/v1" in record.error
    assert "set AXON_EVAL_KEY_HOSTS=gw.example.com" in record.error and judge.api_key_env in record.error
    assert "CANARY" not in record.to_json_line()


def test_a_401_from_a_local_server_names_the_dummy_key(canaries):
    judge = mock_judge(AnthropicJudge, "http://127.0.0.1:9/", Recorder(api_error(401)))
    record = judge.judge(make_views(1)[0])
    assert "dummy key 'local-server-no-key'" in record.error and "AXON_EVAL_KEY_HOSTS=127.0.0.1" in record.error


def test_allowed_host_without_a_key_fails_at_build_time_and_other_hosts_need_none(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY.*gw.example.com"):
        build_judge("openai:m@https://gw.example.com/v1", allow_key_hosts="gw.example.com")
    assert build_judge("openai:m@https://other.example.com/v1").key_source == "none"


# == free-text mode ===================================================================================
def test_free_text_prompt_file_hash_is_pinned_and_keeps_the_rubric():
    prompt = load_prompt("judge_v1_free_text")
    assert prompt.sha256 == JUDGE_V1_FREE_TEXT_SHA256, "edit = new version file, not a new hash here"
    structured = load_prompt("judge_v1").text
    rubric = structured[structured.index("# Ground rules"):structured.index("# The verdict")]
    assert rubric.replace("- null: only when", "- not applicable: only when") in prompt.text
    assert "json" not in prompt.text.lower().split("# how to write your reply")[1].replace(
        "do not reply with json", "")
    assert '"verdict: good"' in prompt.text.lower()


FREE_TEXT_OK = [
    ("Intent understood: 9/10. Step 2 filters on the 2024 final.\nSQL quality: 8/10.\nResult relevance: 7/10.\n"
     "Answer faithfulness: 9/10.\nVerdict: good", (9, 8, 7, 9, "good")),
    ("intent_understood = 9\nsql_quality = 3\nresult_relevance = 2\nanswer_faithfulness = 1\nverdict = poor",
     (9, 3, 2, 1, "poor")),
    ("| dimension | grade |\n|---|---|\n| intent_understood | 9 |\n| sql_quality | 8 |\n| result_relevance | 7 |\n"
     "| answer_faithfulness | 6 |\n\nOverall verdict: **partial**", (9, 8, 7, 6, "partial")),
    ("**Intent understood** - nine out of ten: the agent asked about 2024.\n**SQL quality** - 8/10, step 3 "
     "joins on team_id.\nI give result relevance 7 out of 10; 7/10 for result relevance overall.\n"
     "Answer faithfulness: 5 of 10.\nMy verdict is partial.", (9, 8, 7, 5, "partial")),
    ("The intent was clear, and I rate intent understood at 9/10 because step 2 filters on season 2024. "
     "The SQL quality gets a 6 since the join duplicates rows. Relevance: 5. Answer faithfulness is 3 - the "
     "answer states 5 tries but the rows show 4. Overall, I would rate this turn as poor.", (9, 6, 5, 3, "poor")),
    ("Intent understood - 9, the agent looked at step 2 for 2024.\nSQL quality: 7\nResult relevance: 7\n"
     "Answer faithfulness: 10\nVerdict: good", (9, 7, 7, 10, "good")),
    ('{"intent_understood": 9, "sql_quality": 8, "result_relevance": 7, "answer_faithfulness": 9, '
     '"verdict": "good", "explanation": "fine"}', (9, 8, 7, 9, "good")),
    ("### Intent understood\n8/10 for intent understood.\n### SQL quality\nSQL quality: 0/10, no SQL ran.\n"
     "Result relevance: 0 out of ten.\nFaithfulness of the answer: 2/10.\nOverall: poor", (8, 0, 0, 2, "poor")),
]


@pytest.mark.parametrize(("text", "expected"), FREE_TEXT_OK)
def test_free_text_parser_reads_many_phrasings(text, expected):
    from axon_eval.judges.base import parse_free_text_verdict

    v = parse_free_text_verdict(text)
    assert (v.intent_understood, v.sql_quality, v.result_relevance, v.answer_faithfulness, v.verdict) == expected
    assert v.explanation == text.strip()


FREE_TEXT_BAD = [
    ("", "<text>", "empty"),
    ("I cannot grade this turn.", "intent_understood", "no grade found"),
    ("Intent understood: 9\nSQL quality: 7-8\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "sql_quality", "a range"),
    ("Intent understood: 4/5\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "intent_understood", "scale other than 0-10"),
    ("Intent understood: 9\nSQL quality: 7\nResult relevance: 7\nVerdict: good", "answer_faithfulness",
     "no grade found"),
    ("Intent understood: 9\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: not good",
     "verdict", "negated"),
    ("Intent understood: 9\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\n"
     "Verdict: good/partial/poor", "verdict", "lists several bands"),
    ("Intent understood: 9\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nLooks fine.",
     "verdict", "no verdict"),
    ("Intent understood: 9\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good\n"
     "On reflection, verdict: partial", "verdict", "different verdicts"),
    ("Intent understood: 9\nSQL quality: 7 (step 2)\nLater: SQL quality 6\nResult relevance: 7\n"
     "Answer faithfulness: 9\nVerdict: good", "sql_quality", "different grades"),
    ("Intent understood: -1\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "intent_understood", "out of range"),
    ("Intent understood: 11/10\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "intent_understood", "out of range"),
    ("Intent understood: 7.5\nSQL quality: 7\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "intent_understood", "whole number"),
    ("Intent understood: 9\nSQL quality: null\nResult relevance: 7\nAnswer faithfulness: 9\nVerdict: good",
     "sql_quality", "no grade found"),
]


@pytest.mark.parametrize(("text", "field", "fragment"), FREE_TEXT_BAD)
def test_free_text_parser_refuses_unparseable_replies(text, field, fragment):
    from axon_eval.judges.base import parse_free_text_verdict

    with pytest.raises(VerdictParseError) as info:
        parse_free_text_verdict(text)
    assert info.value.field == field and fragment in str(info.value)


def test_free_text_parser_applies_the_faithfulness_rules():
    from axon_eval.judges.base import parse_free_text_verdict

    base = "Intent understood: 9/10\nSQL quality: 8/10\nResult relevance: 7/10\n"
    na = base + "Answer faithfulness: not applicable, no answer was captured.\nVerdict: good"
    assert parse_free_text_verdict(na, answer_captured=False).answer_faithfulness is None
    assert parse_free_text_verdict(base + "Verdict: good", answer_captured=False).answer_faithfulness is None
    with pytest.raises(VerdictParseError, match="answer was captured"):
        parse_free_text_verdict(na, answer_captured=True)
    notes: list[str] = []
    graded = base + "Answer faithfulness: 9/10\nVerdict: good"
    assert parse_free_text_verdict(graded, answer_captured=False, notes=notes).answer_faithfulness is None
    assert notes and "coerced to null" in notes[0]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_free_text_mode_end_to_end_against_the_fake_server(monkeypatch, tmp_path, provider):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bodies: list[dict] = []

    def responder(path, body):
        bodies.append(body)
        return default_responder(path, body)

    views = make_views(3) + make_views(1, answer=None)
    cache = VerdictCache(tmp_path / "c.sqlite")
    with FakeJudgeServer(lifetime_s=30, responder=responder) as server:
        url = server.url if provider == "anthropic" else server.url + "/v1"
        free = build_judge(f"{provider}:m@{url}#free_text")
        structured = build_judge(f"{provider}:m@{url}")
        free_records = free.judge_many(views, cache=cache, progress=False)
        structured_records = structured.judge_many(views, cache=cache, progress=False)
        assert server.requests == 8, "modes must not share cache entries"
    assert free.mode == "free_text" and free.prompt_version == "judge_v1_free_text+206dbd04ce95"
    assert ",mode=free_text," in free.judge_id and "mode=" not in structured.judge_id
    assert all(r.judged and r.prompt_version == "judge_v1_free_text+206dbd04ce95" for r in free_records)
    assert [r.verdict.subscores() for r in free_records] == [r.verdict.subscores() for r in structured_records]
    assert free_records[-1].verdict.answer_faithfulness is None
    assert "Verdict: good" in free_records[0].verdict.explanation
    schema_key = "output_config" if provider == "anthropic" else "response_format"
    assert [schema_key in b for b in bodies] == [False] * 4 + [True] * 4
    system = bodies[0]["system"][0]["text"] if provider == "anthropic" else bodies[0]["messages"][0]["content"]
    assert system == load_prompt("judge_v1_free_text").text


def test_free_text_reply_that_cannot_be_parsed_is_an_error_record_and_not_cached(anthropic_key, tmp_path):
    handler = Recorder(ok_message("The turn looks reasonable overall; the SQL seems fine."))
    judge = claude(handler, mode="free_text")
    cache = VerdictCache(tmp_path / "c.sqlite")
    (record,) = judge.judge_many(make_views(1), cache=cache, progress=False)
    assert not record.judged and record.verdict is None
    assert record.error.startswith("unparseable free-text reply: intent_understood: no grade found")
    assert record.extra["raw_output"].startswith("The turn looks reasonable")
    assert len(cache) == 0
    assert "output_config" not in handler.bodies()[0]


def test_mode_options_are_validated():
    with pytest.raises(ValueError, match="unknown judging mode 'prose'"):
        AnthropicJudge("m", base_url="http://127.0.0.1:9", mode="prose")
    with pytest.raises(ValueError, match="free-text prompt; use mode='free_text'"):
        AnthropicJudge("m", base_url="http://127.0.0.1:9", prompt_version="judge_v1_free_text")
    assert AnthropicJudge("m", base_url="http://127.0.0.1:9", mode=None).mode == "structured"
    same = AnthropicJudge("m", base_url="http://127.0.0.1:9", prompt_version="judge_v1_free_text", mode="free_text")
    assert same.prompt_version == "judge_v1_free_text+206dbd04ce95"
    with pytest.raises(ValueError, match="needs the file prompts/judge_v9_free_text.md"):
        AnthropicJudge("m", base_url="http://127.0.0.1:9", prompt_version="judge_v9", mode="free_text")
