"""Reference grades recorded like every other judgement: the grade cache, the run folder, the
``grade-reference`` verb and its exit codes, and the Claude reference judge's tokens, cost and budget
against the local fake server (the real SDK, no key, no network)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings
from pathlib import Path

import pandas as pd
import pytest
from tests.test_reference import _heuristic_reply

from axon_eval.cli import main
from axon_eval.warehouses.shop import shop_database
from axon_eval.judges.cache import CacheCorruptionWarning
from axon_eval.judges.fake_server import FakeJudgeServer, anthropic_message_json
from axon_eval.judges.prices import TokenUsage, cost_usd
from axon_eval.reference import HeuristicReferenceJudge, load_questions
from axon_eval.reference.cache import GradeCache
from axon_eval.reference.claude import ClaudeReferenceJudge
from axon_eval.reference.evaluate import grade_set, load_responses
from axon_eval.reference.records import GradeRecord
from axon_eval.reference.run import grade_reference, make_judge
from axon_eval.runs import RunManifest

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "data" / "reference"
SHOP = shop_database(ROOT / "data")
QUESTIONS, RESPONSES, LABELS = REF / "questions.yaml", REF / "responses.jsonl", REF / "labels.csv"
#: what the fake server reports per call (anthropic_message_json's defaults)
FAKE_USAGE = TokenUsage(input_tokens=900, output_tokens=80, cache_read_tokens=1200)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_EVAL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("AXON_EVAL_CACHE", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _subset(question_ids):
    questions = [q for q in load_questions(QUESTIONS) if q.id in question_ids]
    return questions, [r for r in load_responses(RESPONSES) if r["question_id"] in question_ids]


def _folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith(".")) if parent.exists() else []


# -- the grade cache ------------------------------------------------------------------------------------------
class VariantHeuristic(HeuristicReferenceJudge):
    """Another judge configuration (same rules, another id): its grades must not be served the first's."""

    judge_id = "heuristic-reference/v1-variant"


def test_the_cache_reuses_a_grade_only_while_nothing_changed(tmp_path):
    questions, responses = _subset({"d_refund_rate", "g_revenue_gap"})
    with GradeCache(tmp_path / "grades.sqlite") as cache:
        first = grade_set(questions, responses, SHOP, HeuristicReferenceJudge(), cache=cache)
        assert not any(r.cached for r in first) and cache.n_grades() == len(responses)
        again = grade_set(questions, responses, SHOP, HeuristicReferenceJudge(), cache=cache)
        assert all(r.cached for r in again) and cache.stats.hits == len(responses)
        assert [r.model_dump(exclude={"cached"}) for r in again] == [r.model_dump(exclude={"cached"}) for r in first]

        # the response changed: graded again (one byte is enough), the others still reused
        edited = [dict(responses[0], response=responses[0]["response"] + " "), *responses[1:]]
        changed = grade_set(questions, edited, SHOP, HeuristicReferenceJudge(), cache=cache)
        assert [r.cached for r in changed] == [False] + [True] * (len(responses) - 1)
        assert changed[0].cache_key != first[0].cache_key

        # the judge configuration changed: nothing reused
        other = grade_set(questions, responses, SHOP, VariantHeuristic(), cache=cache)
        assert not any(r.cached for r in other) and {r.judge_id for r in other} == {VariantHeuristic.judge_id}

        # the evidence changed (one refund fewer in the warehouse): the refund question is graded again
        db = tmp_path / "shop.sqlite"
        shutil.copy(SHOP, db)
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM refunds WHERE rowid = (SELECT MIN(rowid) FROM refunds)")
        moved = grade_set(questions, responses, db, HeuristicReferenceJudge(), cache=cache)
        by_q = {q: {r.cached for r in moved if r.question_id == q} for q in ("d_refund_rate", "g_revenue_gap")}
        assert by_q == {"d_refund_rate": {False}, "g_revenue_gap": {True}}
        assert {r.evidence_sha256 for r in moved if r.question_id == "d_refund_rate"} != \
            {r.evidence_sha256 for r in first if r.question_id == "d_refund_rate"}


def test_error_grades_are_never_cached_and_a_corrupt_entry_is_a_miss(tmp_path):
    questions, responses = _subset({"g_broken_reference", "d_refund_rate"})
    with GradeCache(tmp_path / "grades.sqlite") as cache:
        records = grade_set(questions, responses, SHOP, HeuristicReferenceJudge(), cache=cache)
        broken = [r for r in records if r.question_id == "g_broken_reference"]
        assert broken and all(r.grade == "error" and r.error_kind == "evidence" and "no such column" in r.error
                              for r in broken)
        assert cache.n_grades() == len(records) - len(broken)
        with pytest.raises(ValueError, match="refusing to cache an error grade"):
            cache.put_grade("k", broken[0])
        good = next(r for r in records if r.graded)
        cache._conn().execute("UPDATE reference_grades SET record_json = '{oops' WHERE key = ?", (good.cache_key,))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert cache.get_grade(good.cache_key) is None
        assert any(issubclass(w.category, CacheCorruptionWarning) for w in caught) and cache.stats.corrupt == 1
        with pytest.warns(CacheCorruptionWarning):
            regraded = grade_set(questions, responses, SHOP, HeuristicReferenceJudge(), cache=cache)
        assert next(r for r in regraded if r.response_id == good.response_id).cached is False
        assert cache.get_grade(good.cache_key) is not None  # overwritten by the re-graded record


# -- the run folder -------------------------------------------------------------------------------------------
def test_a_run_folder_is_written_with_a_valid_manifest_and_a_second_run_is_served_by_the_cache(tmp_path):
    run = grade_reference(QUESTIONS, RESPONSES, "heuristic", labels_file=LABELS, out_dir=tmp_path)
    m = RunManifest.read(run.run_dir)
    assert run.run_dir.parent == tmp_path and run.run_dir.name.endswith("_reference_heuristic")
    assert (m.status, m.failure, m.kind, m.name, m.judge_id) == ("complete", None, "reference", "reference",
                                                                  "heuristic-reference/v1")
    assert m.counts.turns == 75 and m.counts.invalid == 3 and m.counts.judged == 72 and m.counts.unjudged == 0
    assert set(m.input_files) >= {"data/reference/questions.yaml", "data/reference/responses.jsonl",
                                  "data/reference/labels.csv"}
    assert any(p.endswith("shop.sqlite") for p in m.input_files)
    assert all(len(h) == 64 for h in m.input_files.values())
    assert m.params["judge"] == "heuristic" and m.cache_misses == 72 and m.cache_hits == 0
    assert m.cost_usd is None and m.input_tokens is None  # no API call: unknown, never a made-up 0
    assert any("g_broken_reference" in w for w in m.warnings)
    for name in ("params.json", "grades.parquet", "grades.jsonl", "evidence.jsonl", "agreement.json", "report.html"):
        assert (run.run_dir / name).is_file(), name
    table = pd.read_parquet(run.run_dir / "grades.parquet")
    assert len(table) == 75 and {"grade", "expected_grade", "outcome", "split", "cached", "cost_usd"} <= set(table)
    records = [GradeRecord.from_json_line(line) for line in (run.run_dir / "grades.jsonl").read_text().splitlines()]
    assert len(records) == 75 and all(r.judge_id == "heuristic-reference/v1" and r.model and r.prompt_version
                                      for r in records)
    assert all(r.latency_ms is not None and len(r.cache_key) == 64 for r in records if r.graded)
    agreement = json.loads((run.run_dir / "agreement.json").read_text())
    assert agreement["heldout"]["false_pass"] == 0 and agreement == run.agreement
    evidence = [json.loads(line) for line in (run.run_dir / "evidence.jsonl").read_text().splitlines()]
    assert len(evidence) == 25 and sum(e["error"] is not None for e in evidence) == 1
    page = (run.run_dir / "report.html").read_text()
    assert "Agreement with the constructed labels" in page and "no such column: returned_units" in page

    second = grade_reference(QUESTIONS, RESPONSES, "heuristic", labels_file=LABELS, out_dir=tmp_path)
    assert second.run_dir != run.run_dir and len(_folders(tmp_path)) == 2  # never overwritten
    assert (second.manifest.cache_hits, second.manifest.cache_misses) == (72, 0)
    assert second.table["cached"].sum() == 72 and second.agreement == run.agreement
    with pytest.raises(FileExistsError, match="never overwritten"):
        grade_reference(QUESTIONS, RESPONSES, "heuristic", run_dir=run.run_dir)
    # its own kind: never taken for an evaluation by rerun, drift anchors or comparisons
    from axon_eval.runs import rerun
    with pytest.raises(ValueError, match="'reference' run.*grade-reference"):
        rerun(run.run_dir, out_dir=tmp_path / "rerun")


class ExplodingJudge(HeuristicReferenceJudge):
    """A judge whose transport breaks mid-run (not a judgement error: the run itself raises)."""

    def judge_many(self, requests, *, concurrency=1):
        raise OSError("disk on fire")


def test_a_run_that_raises_keeps_its_folder_marked_failed(tmp_path):
    with pytest.raises(OSError, match="disk on fire"):
        grade_reference(QUESTIONS, RESPONSES, ExplodingJudge(), out_dir=tmp_path, cache=False)
    (folder,) = _folders(tmp_path)
    m = RunManifest.read(folder)
    assert m.status == "failed" and m.failure == "error" and "disk on fire" in m.error


# -- the CLI verb ---------------------------------------------------------------------------------------------
def test_grade_reference_verb_and_its_exit_codes(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["grade-reference", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "heldout     18 responses (6 questions): false pass 0" in text and "72 miss(es)" in text
    assert main(["grade-reference", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cache_hits"] == 72 and summary["agreement"]["overall"]["false_pass"] == 0
    assert main(["grade-reference", "--out", str(out), "--strict"]) == 6  # evidence could not be prepared
    assert main(["grade-reference", "--out", str(out), "--question", "g_broken_reference"]) == 4  # none graded
    n = len(_folders(out))
    # usage errors: nothing written
    assert main(["grade-reference", "--out", str(out), "--question", "no_such_question"]) == 2
    assert main(["grade-reference", "--out", str(out), "--judge", "gpt:4"]) == 2
    assert main(["grade-reference", "--out", str(out), "--questions", str(tmp_path / "missing.yaml")]) == 2
    assert main(["grade-reference", "--out", str(out), "--judge", "claude:claude-haiku-4-5",
                 "--max-cost-usd", "1", "--concurrency", "0"]) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["grade-reference", "--out", str(out), "--responses", str(empty)]) == 5
    assert len(_folders(out)) == n
    err = capsys.readouterr().err
    assert "unknown question id(s): ['no_such_question']" in err and "unknown reference judge 'gpt:4'" in err


def test_the_provider_endpoint_without_a_key_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["grade-reference", "--out", str(tmp_path), "--judge", "claude:claude-haiku-4-5"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err and not _folders(tmp_path)


# -- the Claude reference judge: tokens, cost, budget, errors ---------------------------------------------------
def _serve(reply):
    return FakeJudgeServer(responder=lambda path, body: reply(path, body, json), lifetime_s=60)


def test_claude_reference_run_records_tokens_and_cost_and_prints_the_estimate(tmp_path, capsys):
    per_call = cost_usd("claude-haiku-4-5", FAKE_USAGE)
    args = ["grade-reference", "--out", str(tmp_path), "--question", "d_refund_rate", "--question", "d_on_time_rate"]
    with _serve(_heuristic_reply) as server:
        url = server.url
        code = main([*args, "--judge", f"claude:claude-haiku-4-5@{url}"])
        calls = server.requests
        # the same judge configuration again: every grade from the cache, nothing paid
        assert main([*args, "--judge", f"claude:claude-haiku-4-5@{url}"]) == 0
        assert server.requests == calls
    captured = capsys.readouterr()
    assert code == 0 and calls == 6
    assert "estimated cost of grading 6 response(s) with anthropic:claude-haiku-4-5@reference_v1" in captured.err
    first, second = _folders(tmp_path)
    m = RunManifest.read(first)
    assert m.judge_local is True and m.judge_endpoint == url and m.estimated_cost_usd > 0
    assert m.judge_provenance[0]["key_source"] == "dummy"
    assert (m.input_tokens, m.output_tokens, m.cache_read_tokens) == (6 * 900, 6 * 80, 6 * 1200)
    assert m.cost_usd == pytest.approx(6 * per_call)
    records = [GradeRecord.from_json_line(line) for line in (first / "grades.jsonl").read_text().splitlines()]
    assert all(r.input_tokens == 900 and r.output_tokens == 80 and r.cost_usd == pytest.approx(per_call)
               and r.extra["request_id"] and r.latency_ms > 0 and not r.cached for r in records)
    assert {r.response_id: r.grade for r in records}["d_on_time_rate#close"] == "fail"
    again = RunManifest.read(second)
    assert (again.cache_hits, again.cache_misses, again.cost_usd, again.estimated_cost_usd) == (6, 0, None, None)

    with _serve(_heuristic_reply) as other:  # another endpoint is another judge: nothing reused
        assert main([*args, "--judge", f"claude:claude-haiku-4-5@{other.url}"]) == 0
        assert other.requests == 6


def test_a_budget_stops_grading_before_it_is_exceeded(tmp_path):
    questions, responses = _subset({"d_refund_rate"})
    per_call = cost_usd("claude-haiku-4-5", FAKE_USAGE)
    with _serve(_heuristic_reply) as server:
        judge = make_judge(f"claude:claude-haiku-4-5@{server.url}")
        from axon_eval.reference import prepare_evidence

        ev = prepare_evidence(questions[0], SHOP)
        est = [judge.estimate_cost_usd(questions[0], ev, r["response"]) for r in responses]
        budget = per_call + est[1] + 1e-7  # room for two calls, not for the third
        run = grade_reference(QUESTIONS, RESPONSES, judge, question_ids=["d_refund_rate"], out_dir=tmp_path,
                              max_cost_usd=budget, concurrency=1)
        assert server.requests == 2
    grades = [r.grade for r in run.records]
    stopped = run.records[2]
    assert grades[:2] != ["error", "error"] and stopped.grade == "error" and stopped.error_kind == "budget"
    assert "max_cost_usd budget" in stopped.error and stopped.cost_usd is None
    assert run.manifest.status == "partial" and run.manifest.cost_usd <= budget
    assert any("budget" in w for w in run.manifest.warnings)
    with pytest.raises(ValueError, match="no price for"):  # a budget cannot be kept for an unpriced model
        grade_reference(QUESTIONS, RESPONSES, ClaudeReferenceJudge("claude-fake", base_url="http://127.0.0.1:9"),
                        out_dir=tmp_path, max_cost_usd=1.0)


def test_unparseable_or_truncated_replies_are_error_grades_never_fails_and_are_retried(tmp_path, capsys):
    def mixed(path, body, _json):
        text = body["messages"][0]["content"]
        if "7.3%" in text:  # d_refund_rate#out: prose instead of JSON
            return 200, {}, anthropic_message_json("The answer looks about right to me.")
        if "7.0989%" in text:  # d_refund_rate#exact: cut off by the token limit
            return 200, {}, anthropic_message_json('{"assessments": [', stop_reason="max_tokens")
        return _heuristic_reply(path, body, _json)

    args = ["grade-reference", "--out", str(tmp_path), "--question", "d_refund_rate", "--concurrency", "1"]
    with _serve(mixed) as server:
        assert main([*args, "--judge", f"claude:claude-haiku-4-5@{server.url}"]) == 3  # partial
        assert server.requests == 3
        # errors are not cached: on the next run the two are asked again, the pass is reused
        assert main([*args, "--judge", f"claude:claude-haiku-4-5@{server.url}"]) == 3
        assert server.requests == 5
    folder = _folders(tmp_path)[0]
    table = pd.read_parquet(folder / "grades.parquet").set_index("response_id")
    assert table.loc["d_refund_rate#rounded", "grade"] == "pass"
    bad = table.loc[["d_refund_rate#out", "d_refund_rate#exact"]]
    assert set(bad["grade"]) == {"error"} and set(bad["error_kind"]) == {"judge"}
    assert "unparseable reply" in bad.loc["d_refund_rate#out", "reasons"]
    assert "truncated by the token limit" in bad.loc["d_refund_rate#exact", "reasons"]
    assert (bad["input_tokens"] == 900).all()  # the failed calls' tokens and cost are still recorded
    assert "false fail 0" in capsys.readouterr().out  # an error is not counted as a fail


def test_a_rehearsal_against_the_default_fake_server_sends_every_grade_to_review(tmp_path):
    """The fake server's own reference reply: schema-valid, every criterion unverifiable, so nothing passes."""
    with FakeJudgeServer(lifetime_s=60) as server:
        run = grade_reference(QUESTIONS, RESPONSES, f"claude:claude-haiku-4-5@{server.url}",
                              question_ids=["d_refund_rate", "g_broken_reference"], out_dir=tmp_path)
        assert server.requests == 3  # the broken question's responses never reach the judge
    grades = {r.response_id: (r.grade, r.error_kind) for r in run.records}
    assert [g for g, _ in grades.values()].count("review_required") == 3
    assert {k for g, k in grades.values() if g == "error"} == {"evidence"}
    assert run.manifest.status == "complete" and run.manifest.input_tokens == 3 * 900


def test_a_notebook_folder_whose_manifest_cannot_be_read_is_noted_not_ignored(tmp_path):
    """grade_reference into a notebook's folder keeps the manifest there; an unreadable one is replaced and
    the replacement says so (before, the read error was swallowed)."""
    folder = tmp_path / "2026-01-01T000000Z_nb"
    folder.mkdir()
    (folder / "manifest.json").write_text("not json at all", encoding="utf-8")
    run = grade_reference(QUESTIONS, RESPONSES, "heuristic", question_ids=["d_refund_rate"], run_dir=folder,
                          cache=False, report=False)
    assert run.manifest.status == "complete" and run.manifest.kind == "reference"
    (note,) = [w for w in RunManifest.read(folder).warnings if "could not be read" in w]
    assert "2026-01-01T000000Z_nb" in note
