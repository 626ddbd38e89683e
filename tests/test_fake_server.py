"""The local fake judge server: prose vs JSON answers, recorded headers, Message Batches (raw HTTP and
``AnthropicJudge.judge_batch`` through the real SDK) and the command line users rehearse with."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from axon_eval.judges import VerdictCache, build_judge
from axon_eval.judges.anthropic_judge import AnthropicJudge
from axon_eval.judges.base import parse_free_text_verdict
from axon_eval.judges.fake_server import FakeJudgeServer, default_responder, default_verdict, free_text_reply, main
from tests.test_judges_llm import make_views

ROOT = Path(__file__).resolve().parents[1]
CANARY = "sk-ant-CANARY-fake-server-test"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AXON_EVAL_KEY_HOSTS", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)


def batch_request(custom_id: str, text: str = "How many tries?", structured: bool = True) -> dict:
    params = {"model": "claude-haiku-4-5", "max_tokens": 100,
              "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    if structured:
        params["output_config"] = {"format": {"type": "json_schema", "schema": {}}}
    return {"custom_id": custom_id, "params": params}


# -- message routes ---------------------------------------------------------------------------------------
def test_structured_requests_get_json_and_free_text_requests_get_prose():
    with FakeJudgeServer(lifetime_s=30) as server:
        structured = httpx2.post(server.url + "/v1/messages", json={
            "messages": [], "output_config": {"format": {"type": "json_schema"}}}).json()
        prose = httpx2.post(server.url + "/v1/messages", json={"messages": []}).json()
        chat_json = httpx2.post(server.url + "/v1/chat/completions", json={
            "messages": [], "response_format": {"type": "json_schema"}}).json()
        chat_prose = httpx2.post(server.url + "/v1/chat/completions", json={"messages": []}).json()
    expected = default_verdict("")
    assert json.loads(structured["content"][0]["text"]) == expected
    assert json.loads(chat_json["choices"][0]["message"]["content"]) == expected
    for text in (prose["content"][0]["text"], chat_prose["choices"][0]["message"]["content"]):
        assert not text.lstrip().startswith("{")
        verdict = parse_free_text_verdict(text)
        assert (verdict.intent_understood, verdict.sql_quality, verdict.result_relevance,
                verdict.answer_faithfulness, verdict.verdict) == (9, 8, 8, 9, "good")


def test_free_text_reply_says_not_applicable_without_an_answer():
    verdict = {**default_verdict(""), "answer_faithfulness": None}
    text = free_text_reply(verdict)
    assert "not applicable" in text
    assert parse_free_text_verdict(text, answer_captured=False).answer_faithfulness is None


def test_received_headers_are_recorded_per_request():
    with FakeJudgeServer(lifetime_s=30) as server:
        httpx2.post(server.url + "/v1/messages", json={}, headers={"x-api-key": "first"})
        httpx2.get(server.url + "/v1/messages/batches", headers={"authorization": "Bearer second"})
    assert server.methods == ["POST", "GET"]
    assert server.paths == ["/v1/messages", "/v1/messages/batches"]
    assert server.received_headers[0]["x-api-key"] == "first"
    assert server.received_headers[1]["authorization"] == "Bearer second"
    assert "x-api-key" not in server.received_headers[1]


def test_unknown_routes_answer_404_in_the_api_error_shape():
    with FakeJudgeServer(lifetime_s=30) as server:
        response = httpx2.get(server.url + "/v1/models")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


# -- Message Batches over raw HTTP ---------------------------------------------------------------------------
def test_batch_lifecycle_ends_after_the_configured_polls():
    with FakeJudgeServer(lifetime_s=30, batch_polls=2) as server:
        base = server.url + "/v1/messages/batches"
        created = httpx2.post(base, json={"requests": [batch_request("a"), batch_request("b")]}).json()
        assert created["type"] == "message_batch" and created["processing_status"] == "in_progress"
        assert created["request_counts"]["processing"] == 2 and created["results_url"] is None
        batch_id = created["id"]
        early = httpx2.get(f"{base}/{batch_id}/results")
        assert early.status_code == 400 and "still processing" in early.json()["error"]["message"]
        assert httpx2.get(f"{base}/{batch_id}").json()["processing_status"] == "in_progress"
        ended = httpx2.get(f"{base}/{batch_id}").json()
        assert ended["processing_status"] == "ended" and ended["ended_at"]
        assert ended["request_counts"] == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 0}
        assert ended["results_url"] == f"{base}/{batch_id}/results"
        results = httpx2.get(ended["results_url"])
        lines = [json.loads(line) for line in results.text.splitlines()]
        assert sorted(r["custom_id"] for r in lines) == ["a", "b"]
        assert all(r["result"]["type"] == "succeeded" for r in lines)
        assert json.loads(lines[0]["result"]["message"]["content"][0]["text"])["verdict"] == "good"
        listed = httpx2.get(base).json()
        assert [b["id"] for b in listed["data"]] == [batch_id] and listed["has_more"] is False


def test_batch_ends_after_the_configured_seconds():
    with FakeJudgeServer(lifetime_s=30, batch_polls=1000, batch_seconds=0.2) as server:
        base = server.url + "/v1/messages/batches"
        batch_id = httpx2.post(base, json={"requests": [batch_request("a")]}).json()["id"]
        assert httpx2.get(f"{base}/{batch_id}").json()["processing_status"] == "in_progress"
        time.sleep(0.25)
        assert httpx2.get(f"{base}/{batch_id}").json()["processing_status"] == "ended"


def test_batch_cancel_and_errors():
    def responder(path, body):
        if "refuse me" in json.dumps(body):
            return 400, {}, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad params"}}
        return default_responder(path, body)

    with FakeJudgeServer(lifetime_s=30, batch_polls=5, responder=responder) as server:
        base = server.url + "/v1/messages/batches"
        bad_id = httpx2.post(base, json={"requests": [batch_request("not ok!")]})
        assert bad_id.status_code == 400 and "custom_id" in bad_id.json()["error"]["message"]
        dup = httpx2.post(base, json={"requests": [batch_request("a"), batch_request("a")]})
        assert dup.status_code == 400 and "duplicate" in dup.json()["error"]["message"]
        assert httpx2.post(base, json={"requests": []}).status_code == 400
        assert httpx2.get(f"{base}/msgbatch_nope").status_code == 404

        batch_id = httpx2.post(base, json={"requests": [batch_request("x"), batch_request("y")]}).json()["id"]
        canceling = httpx2.post(f"{base}/{batch_id}/cancel").json()
        assert canceling["processing_status"] == "canceling" and canceling["cancel_initiated_at"]
        ended = httpx2.get(f"{base}/{batch_id}").json()
        assert ended["processing_status"] == "ended" and ended["request_counts"]["canceled"] == 2
        lines = [json.loads(x) for x in httpx2.get(ended["results_url"]).text.splitlines()]
        assert {r["result"]["type"] for r in lines} == {"canceled"}

        mixed = httpx2.post(base, json={"requests": [batch_request("ok"), batch_request("bad", "refuse me")]}).json()
        for _ in range(5):
            state = httpx2.get(f"{base}/{mixed['id']}").json()
        assert state["request_counts"]["succeeded"] == 1 and state["request_counts"]["errored"] == 1
        by_id = {json.loads(x)["custom_id"]: json.loads(x)["result"]
                 for x in httpx2.get(state["results_url"]).text.splitlines()}
        assert by_id["bad"]["error"]["error"]["message"] == "bad params"


# -- AnthropicJudge.judge_batch end to end through the SDK --------------------------------------------------
def test_judge_batch_end_to_end_against_the_fake_server(tmp_path):
    views = make_views(4) + make_views(1, answer=None)
    cache = VerdictCache(tmp_path / "c.sqlite")
    with FakeJudgeServer(lifetime_s=30, batch_polls=2) as server:
        judge = build_judge(f"anthropic:claude-haiku-4-5@{server.url}", max_retries=0)
        records = judge.judge_batch(views, cache=cache, poll_interval=0.01, timeout=20)
        assert [r.segment_id for r in records] == [v.segment_id for v in views]
        assert all(r.judged for r in records), [r.error for r in records]
        assert records[-1].verdict.answer_faithfulness is None
        assert {r.extra["batch_id"] for r in records} == {next(iter(server.batches))}
        assert all(r.judge_id.endswith(f",base={server.url}") for r in records)
        # one create, polls until ended (2), the SDK's results() retrieves once more, then the JSONL
        assert server.methods[0] == "POST" and server.paths[0] == "/v1/messages/batches"
        assert server.paths[-1].endswith("/results")
        submitted = len(server.paths)
        # no real key ever reaches the local server, on any batch route
        assert all(CANARY not in json.dumps(h) for h in server.received_headers)
        again = judge.judge_batch(views, cache=cache, poll_interval=0.01, timeout=20)
        assert len(server.paths) == submitted and all(r.cached for r in again)


def test_judge_batch_in_free_text_mode_sends_no_schema_and_parses_prose():
    views = make_views(2)
    with FakeJudgeServer(lifetime_s=30, batch_polls=1) as server:
        judge = build_judge(f"anthropic:claude-haiku-4-5@{server.url}#free_text", max_retries=0)
        records = judge.judge_batch(views, poll_interval=0.01, timeout=20)
        (batch,) = server.batches.values()
    assert all(r.judged and r.prompt_version == "judge_v1_free_text+206dbd04ce95" for r in records)
    assert all("mode=free_text" in r.judge_id for r in records)
    assert records[0].verdict.sql_quality == 8 and "Verdict: good" in records[0].verdict.explanation
    message = batch.results[0]["result"]["message"]["content"][0]["text"]
    assert message.startswith("Intent understood:")


def test_judge_batch_timeout_cancels_and_reports_each_request():
    views = make_views(2)
    with FakeJudgeServer(lifetime_s=30, batch_polls=10_000) as server:
        judge = AnthropicJudge("claude-haiku-4-5", base_url=server.url, max_retries=0)
        records = judge.judge_batch(views, poll_interval=0.01, timeout=0.05)
        assert any(p.endswith("/cancel") for p in server.paths)
    assert not any(r.judged for r in records)
    assert all("canceled" in r.error for r in records)


def test_judge_batch_refuses_a_results_url_on_another_host():
    """A server that points results at another host must not receive the request (it carries the key)."""
    views = make_views(1)
    with FakeJudgeServer(lifetime_s=30, batch_polls=0) as server:
        original = server._batch_json

        def elsewhere(batch):
            body = original(batch)
            if body["results_url"]:
                body["results_url"] = body["results_url"].replace("127.0.0.1", "collector.example.com")
            return body

        server._batch_json = elsewhere  # the fake server misbehaves, the judge is real
        judge = AnthropicJudge("claude-haiku-4-5", base_url=server.url, max_retries=0)
        (record,) = judge.judge_batch(views, poll_interval=0.01, timeout=5)
    assert not record.judged and "collector.example.com" in record.error and "refusing" in record.error


# -- command line ------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    """Wait for the process and read the rest of its output (through the same buffered pipes that
    ``start_cli`` read the first line from; ``communicate`` would bypass their buffers)."""
    proc.wait(timeout=20)
    return proc.stdout.read(), proc.stderr.read()


def start_cli(*args: str) -> tuple[subprocess.Popen, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.Popen([sys.executable, "-m", "axon_eval.judges.fake_server", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [proc.stdout.readline()]
    match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", lines[0])
    assert match, lines[0] + proc.stderr.read()
    return proc, match.group(1), lines


def test_cli_serves_prints_instructions_and_stops_after_its_lifetime():
    port = free_port()
    proc, url, first = start_cli("--port", str(port), "--lifetime", "3", "--batch-polls", "1")
    try:
        assert url == f"http://127.0.0.1:{port}"
        response = httpx2.post(url + "/v1/messages", json={"messages": [], "output_config": {}})
        assert response.status_code == 200
        out, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(first) + out
    assert proc.returncode == 0, err
    assert f"ANTHROPIC_BASE_URL={url}" in text and f"OPENAI_BASE_URL={url}/v1" in text
    assert f"anthropic:claude-haiku-4-5@{url}" in text and "#free_text" in text
    assert f",base={url}" in text and "1 requests served" in text


def test_cli_stops_cleanly_on_ctrl_c():
    proc, url, _ = start_cli("--port", "0")
    try:
        # a loaded 2-core machine occasionally drops the very first connection to a fresh process; the
        # server must answer within three tries
        for attempt in range(3):
            try:
                response = httpx2.post(url + "/v1/chat/completions", json={"messages": []})
                break
            except httpx2.RemoteProtocolError:
                if attempt == 2:
                    raise
                time.sleep(0.2)
        assert response.status_code == 200
        proc.send_signal(signal.SIGINT)
        out, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err


def test_main_in_process_and_its_errors(capsys):
    assert main(["--port", "0", "--lifetime", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "listening on http://127.0.0.1:" in out and "stopped after its lifetime" in out
    assert main(["--delay", "-1"]) == 2
    assert "--delay must be >= 0" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["--port", str(port), "--lifetime", "0.1"]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port 0" in err


def test_rehearsal_spec_from_the_instructions_judges_offline(tmp_path):
    """What the CLI tells a user to run works: the printed spec judges through the server with no key."""
    with FakeJudgeServer(lifetime_s=30) as server:
        from axon_eval.judges.fake_server import rehearsal_instructions

        spec = re.search(r"judge spec, Claude:\s+(\S+)", rehearsal_instructions(server.url)).group(1)
        judge = build_judge(spec)
        assert judge.endpoint_is_local and judge.key_source == "dummy"
        record = judge.judge(make_views(1)[0])
        url = server.url
    assert record.judged and record.judge_id == f"anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default,base={url}"
