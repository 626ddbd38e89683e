"""``grade-reference --batch``: reference grading through one resumable Anthropic Message Batch.

Every judge here is the real SDK talking HTTP to ``FakeJudgeServer`` on 127.0.0.1 (its Message Batches
endpoints); nothing of ours is mocked. The batch machinery is evaluate's (``axon_eval.runs.batch``), so these
tests mirror ``test_trust_llm.py``'s batch tests: the batch price, the cache, resuming instead of paying
twice, the budget, and the refusal of a judge that cannot batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.test_reference import _heuristic_reply

from axon_eval.cli import main
from axon_eval.warehouses.shop import shop_database
from axon_eval.judges.fake_server import FakeJudgeServer
from axon_eval.judges.prices import TokenUsage, cost_usd, price_table
from axon_eval.reference import load_questions, prepare_evidence
from axon_eval.reference.evaluate import load_responses
from axon_eval.reference.records import GradeRecord
from axon_eval.reference.run import grade_reference, make_judge
from axon_eval.runs import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, RunManifest

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "data" / "reference"
QUESTIONS, RESPONSES, LABELS = REF / "questions.yaml", REF / "responses.jsonl", REF / "labels.csv"
#: what the fake server reports per request (anthropic_message_json's defaults): fixed, not a model's usage
FAKE_USAGE = TokenUsage(input_tokens=900, output_tokens=80, cache_read_tokens=1200)
MODEL = "claude-haiku-4-5"
TWO = ["d_refund_rate", "d_on_time_rate"]  # 6 responses


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_EVAL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("AXON_EVAL_CACHE", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _serve(reply=_heuristic_reply, **options):
    return FakeJudgeServer(responder=lambda path, body: reply(path, body, json), lifetime_s=120, **options)


def _folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith(".")) if parent.exists() else []


def _records(folder: Path) -> list[GradeRecord]:
    return [GradeRecord.from_json_line(line) for line in (folder / "grades.jsonl").read_text().splitlines()]


def test_a_batch_run_grades_everything_at_the_batch_price_and_a_second_run_is_served_from_the_cache(tmp_path,
                                                                                                      capsys):
    per_request = cost_usd(MODEL, FAKE_USAGE, batch=True)
    assert per_request == pytest.approx(cost_usd(MODEL, FAKE_USAGE) * price_table().batch_discount)
    out = tmp_path / "runs"
    args = ["grade-reference", "--out", str(out), "--labels", str(LABELS), "--question", TWO[0], "--question", TWO[1]]
    with _serve() as server:
        spec = f"claude:{MODEL}@{server.url}"
        assert main([*args, "--judge", spec, "--batch"]) == EXIT_OK
        assert server.paths.count("/v1/messages/batches") == 1 and "/v1/messages" not in server.paths
        requests_after_first = server.requests
        # the same grading again: every grade from the cache, no request at all
        assert main([*args, "--judge", spec, "--batch"]) == EXIT_OK
        assert server.requests == requests_after_first
        # the same grading online (another cache): the same grades at twice the price
        online = grade_reference(QUESTIONS, RESPONSES, spec, labels_file=LABELS, question_ids=TWO,
                                 out_dir=tmp_path / "online", cache=tmp_path / "online.sqlite")
    printed = capsys.readouterr()
    assert "batch:      submitted ['msgbatch_fake" in printed.out
    assert "estimated cost of grading 6 response(s)" in printed.err
    first, second = _folders(out)
    m = RunManifest.read(first)
    assert m.status == "complete" and m.params["batch"] is True
    assert len(m.batch["submitted"]) == 1 and m.batch["requests"] == 6 and m.batch["resumed"] == []
    batch_id = m.batch["submitted"][0]
    assert Path(m.batch["registry"]) == out / ".cache" / "batches"
    state = json.loads((first / "batch.json").read_text())
    assert state["status"] == "collected" and state["batch_id"] == batch_id and state["kind"] == "reference"
    assert len(state["keys"]) == 6 and json.loads((out / ".cache" / "batches" / f"{batch_id}.json").read_text()) == state
    records = _records(first)
    assert all(r.graded and not r.cached and r.extra["batch_id"] == batch_id and r.latency_ms is None
               and (r.input_tokens, r.output_tokens, r.cache_read_tokens) == (900, 80, 1200)
               and r.cost_usd == pytest.approx(per_request) and r.cache_key in state["keys"] for r in records)
    assert (m.input_tokens, m.output_tokens) == (6 * 900, 6 * 80)
    assert m.cost_usd == pytest.approx(6 * per_request) == pytest.approx(online.manifest.cost_usd * 0.5)
    assert 0 < m.estimated_cost_usd == pytest.approx(online.manifest.estimated_cost_usd * 0.5)
    assert [(r.response_id, r.grade) for r in records] == [(r.response_id, r.grade) for r in online.records]
    again = RunManifest.read(second)
    assert (again.cache_hits, again.cache_misses, again.cost_usd) == (6, 0, None)
    assert again.batch["submitted"] == [] and again.batch["resumed"] == [] and not (second / "batch.json").exists()
    assert all(r.cached for r in _records(second))


def test_an_interrupted_batch_run_resumes_polling_instead_of_paying_twice(tmp_path):
    out, cache = tmp_path / "runs", tmp_path / "cache.sqlite"
    with _serve(batch_polls=10_000) as server:  # the batch will not end while the first run waits
        judge = f"claude:{MODEL}@{server.url}"
        with pytest.raises(TimeoutError, match="resumes polling"):
            grade_reference(QUESTIONS, RESPONSES, judge, question_ids=TWO, out_dir=out, cache=cache, batch=True,
                            batch_poll_s=0.01, batch_timeout_s=0.3)
        (failed,) = _folders(out)
        fm = RunManifest.read(failed)
        assert fm.status == "failed" and len(fm.batch["submitted"]) == 1
        batch_id = json.loads((failed / "batch.json").read_text())["batch_id"]
        assert fm.batch["submitted"] == [batch_id]
        assert json.loads((tmp_path / "batches" / f"{batch_id}.json").read_text())["status"] == "submitted"
        server.batch_polls = 1
        again = grade_reference(QUESTIONS, RESPONSES, judge, question_ids=TWO, out_dir=out, cache=cache, batch=True,
                                batch_poll_s=0.01)
        assert server.paths.count("/v1/messages/batches") == 1, "the second run submitted a second batch"
        assert "/v1/messages" not in server.paths
        third = grade_reference(QUESTIONS, RESPONSES, judge, question_ids=TWO, out_dir=out, cache=cache, batch=True,
                                batch_poll_s=0.01)
        assert server.paths.count("/v1/messages/batches") == 1
    m = again.manifest
    assert m.status == "complete" and m.batch["resumed"] == [batch_id] and m.batch["submitted"] == []
    assert m.cost_usd == pytest.approx(6 * cost_usd(MODEL, FAKE_USAGE, batch=True))
    assert all(r.graded and r.extra["batch_id"] == batch_id for r in again.records)
    assert json.loads((tmp_path / "batches" / f"{batch_id}.json").read_text())["status"] == "collected"
    assert third.manifest.cache_hits == 6 and third.manifest.batch["resumed"] == []


def test_the_heuristic_judge_with_batch_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["grade-reference", "--out", str(out), "--batch"]) == EXIT_USAGE
    assert "batch mode needs an anthropic:<model> reference judge" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ValueError, match="batch mode needs"):
        grade_reference(QUESTIONS, RESPONSES, "heuristic", out_dir=out, batch=True)
    assert not out.exists()


def test_the_budget_bounds_what_a_batch_submits(tmp_path):
    questions = [q for q in load_questions(QUESTIONS) if q.id == "d_refund_rate"]
    responses = [r for r in load_responses(RESPONSES) if r["question_id"] == "d_refund_rate"]
    with _serve() as server:
        judge = make_judge(f"claude:{MODEL}@{server.url}")
        ev = prepare_evidence(questions[0], shop_database(ROOT / "data"))
        est = [judge.estimate_cost_usd(questions[0], ev, r["response"], batch=True) for r in responses]
        assert est[0] == pytest.approx(judge.estimate_cost_usd(questions[0], ev, responses[0]["response"]) * 0.5)
        budget = est[0] + est[1] + 1e-9  # room for two requests at the batch price, not for the third
        run = grade_reference(QUESTIONS, RESPONSES, judge, question_ids=["d_refund_rate"], out_dir=tmp_path,
                              cache=False, max_cost_usd=budget, batch=True, batch_poll_s=0.01)
        assert server.paths.count("/v1/messages/batches") == 1
    m = run.manifest
    assert m.batch["requests"] == 2 and m.status == "partial" and m.estimated_cost_usd > budget
    assert m.cost_usd <= budget
    assert [r.graded for r in run.records] == [True, True, False]
    stopped = run.records[2]
    assert stopped.error_kind == "budget" and "max_cost_usd budget" in stopped.error and stopped.cost_usd is None
    assert any("budget" in w for w in m.warnings)


def test_errored_batch_requests_are_judge_errors_never_fails_and_are_asked_again(tmp_path):
    def flaky(path, body, _json):
        if "7.3%" in body["messages"][0]["content"]:  # d_refund_rate#out
            return 529, {}, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return _heuristic_reply(path, body, _json)

    args = {"question_ids": ["d_refund_rate"], "out_dir": tmp_path / "runs", "cache": tmp_path / "c.sqlite",
            "batch": True, "batch_poll_s": 0.01}
    with _serve(flaky) as server:
        run = grade_reference(QUESTIONS, RESPONSES, f"claude:{MODEL}@{server.url}", **args)
        assert run.manifest.status == "partial"
        bad = {r.response_id: r for r in run.records}["d_refund_rate#out"]
        assert bad.grade == "error" and bad.error_kind == "judge"
        assert "batch request errored: overloaded_error: Overloaded" in bad.error
        assert bad.extra["batch_id"] == run.manifest.batch["submitted"][0] and bad.cost_usd is None
        # never cached: the next run submits a new batch holding only that request
        again = grade_reference(QUESTIONS, RESPONSES, f"claude:{MODEL}@{server.url}", **args)
        assert server.paths.count("/v1/messages/batches") == 2
    assert again.manifest.batch["requests"] == 1 and again.manifest.cache_hits == 2


def test_expired_and_canceled_results_are_error_judgements_naming_the_reason():
    from anthropic.types.messages import (
        MessageBatchCanceledResult,
        MessageBatchExpiredResult,
    )

    judge = make_judge(f"claude:{MODEL}@http://127.0.0.1:9")
    for result, word in ((MessageBatchExpiredResult(type="expired"), "expired"),
                         (MessageBatchCanceledResult(type="canceled"), "canceled"), (None, "missing")):
        judged = judge.judgement_from_batch_result(result, "msgbatch_x")
        assert judged.output is None and word in judged.error and judged.extra == {"batch_id": "msgbatch_x"}
        assert judged.cost_usd is None  # an expired request is not billed: unknown, never a made-up 0


def test_batch_mode_exit_code_of_a_partial_batch_via_the_cli(tmp_path):
    def refuse_one(path, body, _json):
        if "7.3%" in body["messages"][0]["content"]:
            return 400, {}, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
        return _heuristic_reply(path, body, _json)

    with _serve(refuse_one) as server:
        code = main(["grade-reference", "--out", str(tmp_path / "runs"), "--question", "d_refund_rate", "--batch",
                     "--judge", f"claude:{MODEL}@{server.url}", "--no-cache"])
    assert code == EXIT_PARTIAL
