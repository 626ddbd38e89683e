"""Evaluation runs: run folders, manifests, resume, re-judge, re-score, summaries, report, safety.

The judges here are small real ``Judge`` subclasses defined in this file (deterministic verdicts derived
from the segment id), so the tests do not depend on any particular judge implementation.
"""

from __future__ import annotations

import json
import re
import math
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import cli
from axon_eval.judges.base import Judge, JudgeRecord, Verdict
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.runs import (
    RESULT_COLUMNS,
    InputChangedError,
    MixedResultsError,
    evaluate,
    file_sha256,
    load_run,
    new_run_dir,
    redact_secrets,
    rejudge,
    rescore,
    summarise,
)
from axon_eval.reporting import save_run_figures
from axon_eval.reporting.report import write_report
from axon_eval import summaries

CANARY = "sk-ant-canary-0123456789abcdef0123456789"
SCORE_COLUMNS = ["segment_id", "sample_index", *DIMENSIONS, "raw_score", "score", "band", "judge_verdict",
                 "caps_applied", "notes", "status", "error", "judge_id", "rubric_id", "view_sha256"]


# -- evidence ------------------------------------------------------------------------------------------
def turn_line(i: int, *, status: str = "ok", answer: str | None = "There were 4 tries.", n_rows: int = 3,
              question: str | None = None, steps: list | None = None) -> str:
    """One evidence line: turn ``t<i>`` with one SQL step of ``n_rows`` rows (or the given steps)."""
    if steps is None:
        ok = status == "ok"
        steps = [{"kind": "sql", "sql": f"SELECT team, tries FROM finals WHERE year = {2000 + i}", "status": status,
                  "error": None if ok else "relation does not exist",
                  "columns": ["team", "tries"] if ok else [],
                  "rows": [[f"team-{k}", k] for k in range(n_rows)] if ok else [],
                  "row_count": n_rows if ok else None}]
    return json.dumps({"schema_version": 1, "turn_id": f"t{i:03d}", "captured_at": "2026-07-20T09:14:03Z",
                       "region": "eu" if i % 2 else "us", "surface": ("web", "slack", "mcp")[i % 3],
                       "client": f"client-{'abc'[i % 3]}", "question": question or f"How many tries in final {i}?",
                       "answer": answer, "steps": steps})


def sample_lines(n: int = 12) -> list[str]:
    lines = []
    for i in range(n):
        status = "error" if i % 5 == 4 else "ok"
        answer = None if i % 4 == 3 else f"Answer {i}."
        lines.append(turn_line(i, status=status, answer=answer, n_rows=30 if i == 1 else 3))
    # a bundled turn (two questions -> two segments) and a turn with no tools at all
    lines.append(turn_line(90, question="1. How many tries? 2. Who scored them?"))
    lines.append(turn_line(91, steps=[]))
    return lines


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# -- judges ------------------------------------------------------------------------------------------
class ScriptedJudge(Judge):
    """Deterministic verdicts from the segment id; counts the verdicts it actually produced."""

    model = "scripted-model"
    prompt_version = "judge_v1"

    def __init__(self, judge_id: str = "scripted/v1", *, fail: frozenset[str] = frozenset(), offset: int = 0) -> None:
        self.judge_id = judge_id
        self.fail = fail
        self.offset = offset
        self.calls = 0

    def verdict_for(self, view) -> Verdict:
        n = sum(map(ord, view.segment_id)) + self.offset
        return Verdict(intent_understood=10 - n % 4, sql_quality=(n // 3) % 11, result_relevance=(n // 7) % 11,
                       answer_faithfulness=None if view.answer is None else (n // 5) % 11,
                       verdict=("good", "partial", "poor")[n % 3],
                       explanation=f"rows show {view.segment_id} <b>not markup</b>")

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        if view.segment_id in self.fail:
            return self.error_record(view, sample_index, f"judge could not grade {view.segment_id}: HTTP 529")
        self.calls += 1
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index,
                           verdict=self.verdict_for(view), input_tokens=100, output_tokens=20, cost_usd=0.001)


class SimulatedCrash(BaseException):
    """Stands for the process dying (Ctrl-C, OOM kill): not an ordinary judgement failure."""


class CrashingJudge(ScriptedJudge):
    """Gives ``crash_after`` verdicts, then every further call crashes the run."""

    def __init__(self, crash_after: int, **kw) -> None:
        super().__init__(**kw)
        self.crash_after = crash_after

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        if self.calls >= self.crash_after:
            raise SimulatedCrash(f"simulated crash after {self.crash_after} verdicts")
        return await super().ajudge(view, sample_index)


@pytest.fixture()
def evidence(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "turns.jsonl", sample_lines())


def run_eval(evidence: Path, judge: Judge, out: Path, **kw):
    return evaluate(evidence, judge, Rubric.default(), out_dir=out, progress=False, **kw)


# -- the run folder ----------------------------------------------------------------------------------
def test_evaluate_writes_a_complete_run_folder(tmp_path, evidence):
    judge = ScriptedJudge(fail=frozenset({"t002"}))
    res = evaluate(evidence, judge, "axon-v1", out_dir=tmp_path / "runs", name="unit", progress=False,
                   params={"note": "unit test"}, seed=7)
    folder = res.run_dir
    assert folder.parent == tmp_path / "runs"
    assert folder.name.endswith("_unit_scripted-v1") and folder.name[10] == "T" and folder.name[17] == "Z"
    for name in ("params.json", "manifest.json", "results/part-00000.parquet", "verdicts.jsonl", "audit.jsonl",
                 "invalid.jsonl"):
        assert (folder / name).is_file(), name
    assert not list((folder / "figures").glob("*.png")), "runs draw nothing: the caller asks reporting"
    save_run_figures(res)
    assert sorted(p.name for p in (folder / "figures").glob("*.png")) == [
        "caps.png", "dimensions.png", "score_distribution.png", "verdict_vs_band.png"]
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")], "temporary files left behind"

    m = json.loads((folder / "manifest.json").read_text())
    # t002's judgement failed: the run is partial (exit code 3), not complete
    assert m["status"] == "partial" and m["kind"] == "evaluate" and m["name"] == "unit"
    assert m["judge_id"] == "scripted/v1" and m["judge_model"] == "scripted-model"
    assert m["prompt_version"] == "judge_v1"
    rubric = Rubric.default()
    assert m["rubric_id"] == rubric.id and m["rubric_name"] == "axon-v1"
    assert m["rubric"]["weights"] == rubric.weights.as_dict() and m["rubric"]["row_horizon"] == 20
    assert m["rubric"]["caps"] == rubric.caps.as_dict()
    # every runtime dependency of pyproject.toml is recorded, with its installed version
    import tomllib
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.match(r"[A-Za-z0-9._-]+", d).group(0).lower() for d in declared}
    assert {n.lower() for n in m["packages"]} == names | {"axon_eval"}
    assert m["packages"]["scipy"] and m["packages"]["statsmodels"] and m["packages"]["pyarrow"]
    assert m["git_commit"] and m["git_dirty"] in (True, False, "unknown")
    # outside the repository a path stays absolute; inside it, it is relative to the root (tested below)
    assert m["input_files"] == {str(evidence.resolve()): file_sha256(evidence)}
    assert m["turns_file"] == str(evidence.resolve())
    assert m["seed"] == 7 and m["params"]["note"] == "unit test" and m["params"]["seed"] == 7
    assert m["started_at"].endswith("Z") and m["ended_at"].endswith("Z")
    # 14 turns, the bundled one splits in two -> 15 segments; t002 failed at the judge
    assert m["counts"] == {"turns": 14, "segments": 15, "judged": 14, "unjudged": 1, "invalid": 0,
                           "samples": 15, "unjudged_samples": 1}
    assert m["cache_hits"] == 0 and m["cache_misses"] == 15
    assert m["input_tokens"] == 1400 and m["output_tokens"] == 280
    assert m["cost_usd"] == pytest.approx(0.014)
    assert json.loads((folder / "params.json").read_text())["note"] == "unit test"

    results = pd.read_parquet(folder / "results")
    assert list(results.columns) == list(RESULT_COLUMNS)
    assert len(results) == 15 and results["segment_id"].is_unique
    assert set(results.loc[results["turn_id"] == "t090", "segment_id"]) == {"t090#1", "t090#2"}
    bad = results.set_index("segment_id").loc["t002"]
    assert bad["status"] == "unjudged" and "HTTP 529" in bad["error"]
    assert math.isnan(bad["score"]) and math.isnan(bad["raw_score"]) and pd.isna(bad["band"])
    good = results[results["status"] == "judged"]
    assert good["score"].notna().all() and good["error"].isna().all()
    # no answer captured -> faithfulness NaN, not 0
    assert results.set_index("segment_id").loc["t003", "answer_faithfulness"] != 0
    assert math.isnan(results.set_index("segment_id").loc["t003", "answer_faithfulness"])
    no_tools = results.set_index("segment_id").loc["t091"]
    assert no_tools["no_tools"] and no_tools["score"] <= 40 and "no_tools" in no_tools["caps_applied"]

    verdict_lines = (folder / "verdicts.jsonl").read_text().splitlines()
    records = [JudgeRecord.model_validate_json(line) for line in verdict_lines]
    assert [r.segment_id for r in records] == results["segment_id"].tolist()

    audit = [json.loads(line) for line in (folder / "audit.jsonl").read_text().splitlines()]
    t001 = next(a for a in audit if a["segment_id"] == "t001")
    assert t001["score"]["score"] == results.set_index("segment_id").loc["t001", "score"]
    assert set(t001["score"]) >= {"subscores", "nominal_weights", "effective_weights", "contributions",
                                  "raw_score", "caps", "notes", "band"}
    sql = t001["steps"][0]
    assert sql["sql"].startswith("SELECT team, tries") and len(sql["rows"]) == 20 and sql["row_count"] == 30
    assert len(t001["view_sha256"]) == 64 and t001["row_horizon"] == 20


def test_loaded_run_matches_what_evaluate_returned(tmp_path, evidence):
    res = run_eval(evidence, ScriptedJudge(), tmp_path)
    run = load_run(res.run_dir)
    pd.testing.assert_frame_equal(run.results, res.results)
    assert run.manifest == res.manifest
    assert [r.segment_id for r in run.verdicts] == [r.segment_id for r in res.verdicts]
    assert run.audit == json.loads(json.dumps(res.audit))


def test_run_folders_are_never_overwritten(tmp_path, evidence):
    from datetime import datetime, timezone

    now = datetime(2026, 7, 20, 9, 14, 3, tzinfo=timezone.utc)
    a = new_run_dir(tmp_path, "evaluate", "anthropic:claude-x", now=now)
    b = new_run_dir(tmp_path, "evaluate", "anthropic:claude-x", now=now)
    assert a.name == "2026-07-20T091403Z_evaluate_anthropic-claude-x"
    assert b.name == a.name + "-2"
    res = run_eval(evidence, ScriptedJudge(), tmp_path)
    with pytest.raises(FileExistsError, match="never overwritten"):
        run_eval(evidence, ScriptedJudge(), tmp_path, run_dir=res.run_dir)


# -- re-score and re-judge ---------------------------------------------------------------------------
def test_rescore_with_the_same_rubric_reproduces_scores_exactly(tmp_path, evidence):
    judge = ScriptedJudge(fail=frozenset({"t005"}))
    source = run_eval(evidence, judge, tmp_path)
    calls = judge.calls
    again = rescore(source.run_dir, Rubric.default())
    assert judge.calls == calls
    assert again.run_dir != source.run_dir and again.run_dir.parent == source.run_dir.parent
    pd.testing.assert_frame_equal(again.results[SCORE_COLUMNS], source.results[SCORE_COLUMNS])
    m = again.manifest
    # t005 stays unjudged in the rescore, so it is partial like its source
    assert m.kind == "rescore" and m.source_run == str(source.run_dir) and m.status == "partial"
    assert m.cache_hits == 0 and m.cache_misses == 0 and m.cost_usd == 0.0
    assert m.input_files == source.manifest.input_files
    assert load_run(again.run_dir).manifest.source_run == str(source.run_dir)


def test_rescore_under_another_rubric_changes_only_the_arithmetic(tmp_path, evidence):
    source = run_eval(evidence, ScriptedJudge(), tmp_path)
    flat = Rubric.default().with_weights({d: 0.25 for d in DIMENSIONS}, name="flat")
    other = rescore(source.run_dir, flat)
    assert other.manifest.rubric_id == flat.id != source.manifest.rubric_id
    assert (other.results["rubric_id"] == flat.id).all()
    assert other.results[list(DIMENSIONS)].equals(source.results[list(DIMENSIONS)])
    assert not other.results["raw_score"].equals(source.results["raw_score"])
    horizon = rescore(source.run_dir, Rubric.default().replace(row_horizon=5))
    assert any("row_horizon" in w for w in horizon.manifest.warnings)


def test_rejudge_uses_the_recorded_evidence_and_names_its_source(tmp_path, evidence):
    source = run_eval(evidence, ScriptedJudge(), tmp_path, limit=6)
    other_judge = ScriptedJudge("scripted/v2", offset=1)
    again = rejudge(source.run_dir, other_judge, progress=False)
    assert other_judge.calls == len(source.results)  # same limit, same segments
    assert again.manifest.kind == "rejudge" and again.manifest.source_run == str(source.run_dir)
    assert again.manifest.judge_id == "scripted/v2" and again.manifest.rubric_id == source.manifest.rubric_id
    assert again.results["segment_id"].tolist() == source.results["segment_id"].tolist()
    assert again.results["view_sha256"].tolist() == source.results["view_sha256"].tolist()
    assert again.manifest.input_files == source.manifest.input_files
    # the evidence file changed since: refuse
    with evidence.open("a") as fh:
        fh.write(turn_line(500) + "\n")
    with pytest.raises(InputChangedError, match="SHA-256"):
        rejudge(source.run_dir, other_judge, progress=False)


# -- resume ------------------------------------------------------------------------------------------
def test_crash_then_resume_pays_for_no_verdict_twice_and_equals_an_uninterrupted_run(tmp_path, evidence):
    k = 5
    out = tmp_path / "runs"
    crashing = CrashingJudge(crash_after=k)
    with pytest.raises(SimulatedCrash):
        run_eval(evidence, crashing, out, concurrency=1, chunk_size=2)
    assert crashing.calls == k
    failed_dir = next(out.glob("*_evaluate_*"))
    failed = json.loads((failed_dir / "manifest.json").read_text())
    assert failed["status"] == "failed" and "SimulatedCrash" in failed["error"] and failed["ended_at"]
    assert len((failed_dir / "verdicts.jsonl").read_text().splitlines()) == 4  # two finished chunks kept

    resumed_judge = ScriptedJudge()  # same judge id and behaviour: the process restarted
    resumed = run_eval(evidence, resumed_judge, out)
    n = len(resumed.results)
    assert resumed_judge.calls == n - k, "a verdict was paid for twice"
    assert crashing.calls + resumed_judge.calls == n
    assert resumed.manifest.cache_hits == k and resumed.manifest.cache_misses == n - k
    assert int(resumed.results["cached"].sum()) == k
    assert resumed.manifest.input_tokens == 100 * (n - k)  # cached verdicts cost nothing now
    assert resumed.run_dir != failed_dir

    fresh = run_eval(evidence, ScriptedJudge(), tmp_path / "elsewhere", cache=False)
    pd.testing.assert_frame_equal(resumed.results[SCORE_COLUMNS], fresh.results[SCORE_COLUMNS])


def test_judge_errors_are_not_cached_and_are_retried_on_the_next_run(tmp_path, evidence):
    flaky = ScriptedJudge(fail=frozenset({"t001", "t004"}))
    first = run_eval(evidence, flaky, tmp_path)
    assert first.manifest.counts.unjudged == 2
    healed = ScriptedJudge()
    second = run_eval(evidence, healed, tmp_path)
    assert healed.calls == 2 and second.manifest.counts.unjudged == 0


# -- summaries ---------------------------------------------------------------------------------------
def test_summaries_refuse_mixed_judges_unless_asked(tmp_path, evidence):
    a = run_eval(evidence, ScriptedJudge("scripted/v1"), tmp_path).results
    b = run_eval(evidence, ScriptedJudge("scripted/v2", offset=3), tmp_path).results
    mixed = pd.concat([a, b], ignore_index=True)
    with pytest.raises(MixedResultsError, match="scripted/v1.*scripted/v2"):
        summarise(mixed)
    with pytest.raises(MixedResultsError):
        summaries.band_table(mixed)
    s = summarise(mixed, allow_mixed=True)
    assert s["mixed"] and "allow_mixed=True" in s["mixed"] and s["judge_ids"] == ["scripted/v1", "scripted/v2"]
    assert "MIXED RESULTS" in summaries.format_summary(s)
    rubric_mix = a.assign(rubric_id=["x"] * 3 + ["y"] * (len(a) - 3))
    with pytest.raises(MixedResultsError, match="rubric ids"):
        summarise(rubric_mix)


def test_summary_counts_unjudged_separately_and_never_as_zero(tmp_path, evidence):
    res = run_eval(evidence, ScriptedJudge(fail=frozenset({"t000", "t006"})), tmp_path)
    s = res.summary()
    judged = res.results[res.results["status"] == "judged"]
    assert s["segments"] == 15 and s["judged"] == 13 and s["unjudged"] == 2
    assert sum(s["band_counts"].values()) == 13
    assert s["score"]["mean"] == pytest.approx(judged["score"].mean())
    assert s["score"]["min"] == judged["score"].min()
    assert [u["segment_id"] for u in s["unjudged_items"]] == ["t000", "t006"]
    assert all("HTTP 529" in u["error"] for u in s["unjudged_items"])
    low = summaries.lowest_scores(res.results, 1).iloc[0]
    assert low["score"] == judged["score"].min() and low["reason"]


def test_summary_tables_are_pure_functions_of_the_frame(tmp_path, evidence):
    res = run_eval(evidence, ScriptedJudge(), tmp_path)
    results = res.results.copy()
    before = results.copy()
    bands = summaries.band_table(results)
    assert list(bands.index) == ["good", "partial", "poor"] and bands["count"].sum() == len(results)
    caps = summaries.cap_table(results)
    assert caps.loc["no_tools", "applied"] == 1 and caps.loc["all_sql_failed", "triggered"] == 2
    table = summaries.verdict_crosstab(results)
    assert table.loc["total", "total"] == len(results)
    by_region = summaries.breakdown(results, "region")
    assert by_region["segments"].sum() == len(results)
    with pytest.raises(ValueError, match="not a results column"):
        summaries.breakdown(results, "planet")
    worst = summaries.worst_segments(results, 5)
    assert worst["score"].is_monotonic_increasing and len(worst) == 5
    pd.testing.assert_frame_equal(results, before)


# -- bad input, report -------------------------------------------------------------------------------
def test_bad_evidence_lines_are_listed_in_results_summary_and_report(tmp_path):
    lines = sample_lines(6)
    lines.insert(2, "{this is not json")
    lines.insert(4, json.dumps({"schema_version": 1, "turn_id": "broken", "region": "eu"}))
    lines.append(turn_line(1))  # duplicate turn id
    evidence = write_lines(tmp_path / "turns.jsonl", lines)
    res = run_eval(evidence, ScriptedJudge(fail=frozenset({"t000"})), tmp_path / "runs")
    invalid = [json.loads(line) for line in (res.run_dir / "invalid.jsonl").read_text().splitlines()]
    assert {i["line"] for i in invalid} == {3, 5, len(lines)}
    # counts are of bad lines (3), not of problems: line 5 misses several fields, one record each
    assert res.manifest.counts.invalid == 3 and len(invalid) > 3
    assert any("duplicate turn_id" in i["message"] for i in invalid)
    s = res.summary()
    assert s["invalid"] == 3 and s["invalid_problems"] == len(invalid)
    assert {i["line"] for i in s["invalid_items"]} == {3, 5, len(lines)}
    text = summaries.format_summary(s)
    assert "INVALID line 3" in text and "UNJUDGED t000" in text

    report = write_report(res.run_dir)
    assert report == res.run_dir / "report.html"
    page = report.read_text()
    assert "Invalid input lines (" in page and "not valid JSON" in page and "duplicate turn_id" in page
    assert "Unjudged segments (1)" in page and "judge could not grade t000: HTTP 529" in page
    assert "effective weight" in page and "SELECT team, tries FROM finals WHERE year = 2001" in page


def test_report_escapes_every_piece_of_evidence(tmp_path):
    nasty = "<script>alert('x')</script>"
    steps = [{"kind": "sql", "sql": f"SELECT '{nasty}' AS note", "status": "ok", "columns": ["note"],
              "rows": [[nasty]], "row_count": 1}]
    evidence = write_lines(tmp_path / "turns.jsonl",
                           [turn_line(1, question=f"What is {nasty}?", answer=f"It is {nasty}", steps=steps)])
    res = run_eval(evidence, ScriptedJudge(), tmp_path / "runs")
    page = write_report(res.run_dir).read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>not markup</b>" not in page and "&lt;b&gt;not markup&lt;/b&gt;" in page


# -- safety ------------------------------------------------------------------------------------------
def test_api_keys_are_never_written_to_a_run(tmp_path, evidence, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY + "-openai")
    res = run_eval(evidence, ScriptedJudge(fail=frozenset({"t001"})), tmp_path / "runs",
                   params={"leaked_by_mistake": f"key={CANARY}"})
    write_report(res.run_dir)
    again = rescore(res.run_dir, Rubric.default())
    assert res.manifest.params["leaked_by_mistake"] == "key=<redacted>"
    for folder in (res.run_dir, again.run_dir):
        for path in folder.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), f"API key written to {path}"
    assert redact_secrets({"a": [CANARY]}) == {"a": ["<redacted>"]}


def test_evaluation_never_executes_evidence_sql(tmp_path, monkeypatch):
    """Evidence SQL is data: a destructive statement is rendered and judged, never run anywhere."""
    import sqlite3

    executed: list[str] = []
    real_connect = sqlite3.connect

    class Spy(sqlite3.Connection):
        def execute(self, sql, *args):  # noqa: D401 - sqlite3 signature
            executed.append(sql)
            return super().execute(sql, *args)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **{**k, "factory": Spy}))
    steps = [{"kind": "sql", "sql": "DROP TABLE finals_canary_xyz", "status": "ok", "columns": [], "rows": [],
              "row_count": 0}]
    evidence = write_lines(tmp_path / "turns.jsonl", [turn_line(1, steps=steps)])
    res = run_eval(evidence, ScriptedJudge(), tmp_path / "runs")
    assert res.manifest.counts.judged == 1
    assert executed, "the verdict cache should have used sqlite"
    assert not [s for s in executed if "finals_canary_xyz" in s]


# -- CLI ---------------------------------------------------------------------------------------------
def test_cli_evaluate_rescore_rejudge_report(tmp_path, evidence, capsys):
    source = run_eval(evidence, ScriptedJudge(), tmp_path / "src")
    out = tmp_path / "cli"
    code = cli.main(["evaluate", "--turns", str(evidence), "--judge", f"replay({source.run_dir})",
                     "--out", str(out), "--limit", "4", "--name", "cli-eval", "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0
    folder = Path(printed.splitlines()[0].removeprefix("run folder: ").strip())
    assert folder.parent == out and "_cli-eval_replay" in folder.name
    assert "bands:" in printed and "judged:" in printed
    # a headless evaluate writes the audit report too
    assert (folder / "report.html").is_file() and f"report:     {folder / 'report.html'}" in printed
    run = load_run(folder)
    assert run.manifest.counts.turns == 4 and run.manifest.params["limit"] == 4

    assert cli.main(["rescore", str(folder), "--rubric", "axon-v1"]) == 0
    rescored = Path(capsys.readouterr().out.splitlines()[0].split()[2])
    assert load_run(rescored).manifest.source_run == str(folder)

    assert cli.main(["rejudge", str(folder), "--judge", f"replay({source.run_dir})", "--quiet"]) == 0
    rejudged = Path(capsys.readouterr().out.splitlines()[0].split()[2])
    assert load_run(rejudged).manifest.kind == "rejudge"

    assert cli.main(["report", str(folder)]) == 0
    assert (folder / "report.html").exists() and "report:" in capsys.readouterr().out

    assert cli.main(["evaluate", "--turns", str(evidence), "--judge", "no-such-judge", "--out", str(out)]) == 2
    assert "invalid judge spec" in capsys.readouterr().err
    assert cli.main(["rescore", str(tmp_path / "nope"), "--rubric", "axon-v1"]) == 2
    assert "no manifest.json" in capsys.readouterr().err


class RaisingJudge(ScriptedJudge):
    """A judge with a bug on one segment: an ordinary exception is a judgement failure, not a crash."""

    async def ajudge(self, view, sample_index: int = 0) -> JudgeRecord:
        if view.segment_id == "t003":
            raise KeyError("explanation")
        return await super().ajudge(view, sample_index)


def test_an_ordinary_judge_exception_leaves_the_segment_unjudged(tmp_path, evidence):
    res = run_eval(evidence, RaisingJudge(), tmp_path)
    assert res.manifest.status == "partial"
    row = res.results.set_index("segment_id").loc["t003"]
    assert row["status"] == "unjudged" and "KeyError" in row["error"] and math.isnan(row["score"])
    assert res.manifest.counts.unjudged == 1 and res.manifest.counts.judged == 14


def test_several_judge_samples_give_one_row_per_segment_and_sample(tmp_path, evidence):
    judge = ScriptedJudge()
    judge.default_samples = 2
    res = run_eval(evidence, judge, tmp_path)
    assert len(res.results) == 30 and res.manifest.counts.segments == 15
    samples = res.results.groupby("segment_id")["sample_index"].apply(lambda s: tuple(sorted(s)))
    assert set(samples) == {(0, 1)}
    s = res.summary()
    assert s["segments"] == 15 and s["rows"] == 30 and "several judge samples" in summaries.format_summary(s)
    again = rescore(res.run_dir, Rubric.default())
    pd.testing.assert_frame_equal(again.results[SCORE_COLUMNS], res.results[SCORE_COLUMNS])


def test_a_run_folder_whose_manifest_cannot_be_read_is_noted_in_the_new_manifest(tmp_path, evidence):
    """The notebook runner writes a ``running`` manifest first; evaluate into that folder keeps its notebook
    record. A manifest it cannot read is replaced, and the replacement says so (it was silently dropped)."""
    folder = tmp_path / "runs" / "2026-01-01T000000Z_nb"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"run_id": "x", "status": "running"', encoding="utf-8")
    run = run_eval(evidence, ScriptedJudge(), tmp_path / "runs", run_dir=folder)
    assert run.manifest.status == "complete"
    (note,) = [w for w in run.manifest.warnings if "could not be read" in w]
    assert "2026-01-01T000000Z_nb" in note and "ValidationError" in note
    assert note in json.loads((folder / "manifest.json").read_text())["warnings"]


def test_study_differences_ignore_run_folder_names_and_provenance_keys():
    from axon_eval.runs.derive import study_differences

    a = {"study": "s", "source_run": "runs/2026-01-01T000000Z_src_heuristic", "cache_hits": 3,
         "rows": [1, 2.5], "candidate": {"rescored_run": "runs/2026-01-01T000001Z_rescore-src_heuristic", "n": 4}}
    b = {"study": "s", "source_run": "runs/2026-02-02T101010Z_src_heuristic-2", "cache_hits": 0,
         "rows": [1, 2.5], "candidate": {"rescored_run": "runs/2026-02-02T101011Z_rescore-src_heuristic", "n": 4}}
    assert study_differences(a, b) == []
    b["rows"] = [1, 2.75]
    b["candidate"]["n"] = 5
    b["extra"] = True
    assert study_differences(a, b) == ["candidate.n: 4 -> 5", "extra: only in B", "rows[1]: 2.5 -> 2.75"]


def test_a_study_manifest_records_its_rubric_name(tmp_path, evidence):
    from axon_eval.runs.study import study_folder, write_study

    source = run_eval(evidence, ScriptedJudge(), tmp_path / "runs")
    folder = study_folder(None, "a-study", out_dir=tmp_path / "runs")
    write_study(folder, {"n": 1}, study="a-study", simulated=False, source_run=source.run_dir,
                rubric_id=source.manifest.rubric_id)
    m = json.loads((folder / "manifest.json").read_text())
    assert (m["rubric_id"], m["rubric_name"]) == (Rubric.default().id, "axon-v1")
    # no source run: the packaged rubric with that id names it
    other = study_folder(None, "b-study", out_dir=tmp_path / "runs")
    write_study(other, {"n": 1}, study="b-study", simulated=False, rubric_id=Rubric.packaged("axon-v1-faithcap").id)
    assert json.loads((other / "manifest.json").read_text())["rubric_name"] == "axon-v1-faithcap"
    # a rubric id nothing names stays unnamed rather than guessed
    third = study_folder(None, "c-study", out_dir=tmp_path / "runs")
    write_study(third, {"n": 1}, study="c-study", simulated=False, rubric_id="0123456789ab")
    assert json.loads((third / "manifest.json").read_text())["rubric_name"] is None


def test_derived_runs_record_their_source_relative_to_the_repository(tmp_path, evidence, monkeypatch):
    """Paths inside the repository are recorded relative to it, whatever form the caller gave them in."""
    from axon_eval.reporting.comparison import write_comparison
    from axon_eval.runs.compare import compare_runs

    root = tmp_path / "repo"
    (root / "runs").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(root)
    source = run_eval(evidence, ScriptedJudge(), root / "runs")
    absolute = source.run_dir.resolve()
    rel = f"runs/{absolute.name}"
    rescored = rescore(absolute, Rubric.default())
    assert rescored.manifest.source_run == rel and rescored.manifest.params["source_run"] == rel
    rejudged = rejudge(absolute, ScriptedJudge(), progress=False)
    assert rejudged.manifest.source_run == rel and rejudged.manifest.params["source_run"] == rel
    folder = write_comparison(compare_runs(absolute, rescored.run_dir.resolve()), root / "runs")
    m = json.loads((folder / "manifest.json").read_text())
    assert m["params"]["run_a"] == rel and m["source_run"] == rel
    assert json.loads((folder / "comparison.json").read_text())["run_b"] == f"runs/{rescored.run_dir.name}"


# -- what the CLI shows people ---------------------------------------------------------------------------
def _help_texts(parser) -> list[str]:
    import argparse

    texts = [t for t in (parser.description, parser.epilog) if t]
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            texts.append(action.help)
        if isinstance(action, argparse._SubParsersAction):
            texts += [choice.help for choice in action._choices_actions if choice.help]
            for sub in action.choices.values():
                texts += _help_texts(sub)
    return texts


def test_help_mentions_no_issue_numbers():
    texts = _help_texts(cli.build_parser())
    assert len(texts) > 100
    assert [t for t in texts if re.search(r"\bissues?\b", t, re.IGNORECASE)] == []


def test_compare_names_rows_by_segment_and_sample_and_shows_numbers_for_people(tmp_path, evidence):
    from axon_eval.runs import compare_runs
    from axon_eval.runs.compare import p_value, signed

    judge_a, judge_b = ScriptedJudge(), ScriptedJudge(offset=1)
    judge_a.default_samples = judge_b.default_samples = 2
    a = run_eval(evidence, judge_a, tmp_path / "a")
    b = run_eval(evidence, judge_b, tmp_path / "b")
    text = compare_runs(a.run_dir, b.run_dir).format(top=40)
    changed = [line for line in text.splitlines() if line.startswith("  segment ")]
    assert changed and all(re.fullmatch(r"  segment t\d{3}(#\d)?, sample [01]: [+-][\d.]+", line) for line in changed)
    assert "#0" not in text and "#1:" not in text and "None" not in text
    assert not re.search(r"\de[-+]\d", text), "no scientific notation"
    assert re.search(r"band changes: \d+ of 15 segments \(\d+(\.\d)?%\)", text)  # 30 rows, 2 samples each
    # one sample per segment: rows are named by segment only
    single = compare_runs(run_eval(evidence, ScriptedJudge(), tmp_path / "c").run_dir,
                          run_eval(evidence, ScriptedJudge(offset=1), tmp_path / "d").run_dir).format()
    assert re.search(r"^  segment t\d{3}: [+-]", single, re.MULTILINE) and ", sample" not in single
    # the formatting rules, against hand-written values
    assert [p_value(x) for x in (4.09e-15, 0.000999, 0.001, 0.0123, 0.875)] == \
        ["< 0.001", "< 0.001", "= 0.001", "= 0.012", "= 0.88"]
    assert [signed(x) for x in (1.6, -0.578, 12.54, 0.0, -0.004, 0.04)] == ["+1.6", "-0.58", "+12.5", "0", "0", "+0.04"]


def test_index_prints_a_readable_table_and_json_carries_every_column(tmp_path, evidence, capsys):
    from axon_eval.runs.catalog import INDEX_COLUMNS

    out = tmp_path / "runs"
    run_eval(evidence, ScriptedJudge(fail=frozenset({"t001"})), out)
    broken = out / "2026-01-01T000000Z_broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{")
    assert cli.main(["index", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "kind", "status", "judge", "rubric", "judged", "note"]
    row = next(line for line in lines if "_scripted" in line)
    assert row.split()[1:6] == ["evaluate", "partial", "scripted/v1", "axon-v1", "14"] and "14 of 15" in row
    bad = next(line for line in lines if "_broken" in line)
    assert "unreadable" in bad and ("ValidationError" in bad or "JSON" in bad)
    assert not any(word in " ".join(lines) for word in ("None", "nan", "NaN"))
    assert lines[-1].startswith("2 run folder(s)")
    assert cli.main(["index", str(out), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 2 and all(set(r) == set(INDEX_COLUMNS) for r in records)


def test_the_summary_lists_a_few_items_quiet_lists_none_and_the_budget_is_one_line(tmp_path, evidence):
    from axon_eval.runs.writer import BUDGET_ERROR
    from axon_eval.cli.runs import ITEMS_SHOWN, summary_lines

    failing = frozenset(f"t{i:03d}" for i in range(8))
    run = run_eval(evidence, ScriptedJudge(fail=failing), tmp_path / "runs")
    loud = summary_lines(run.summary(), run.results, run.run_dir)
    assert len([line for line in loud if "UNJUDGED" in line]) == ITEMS_SHOWN
    assert f"  and {8 - ITEMS_SHOWN} more unjudged segment(s): listed in {run.run_dir / 'results'}" \
        " (status, error)" in loud
    quiet = summary_lines(run.summary(), run.results, run.run_dir, quiet=True)
    assert not [line for line in quiet if "UNJUDGED" in line]
    assert f"  8 unjudged segment(s): listed in {run.run_dir / 'results'} (status, error)" in quiet
    # segments a budget stopped: one line with their count, never one line each
    message = BUDGET_ERROR.format(budget=0.004, spent=0.0012)
    summary = run.summary()
    summary["unjudged_items"] = [{"segment_id": f"t{i:03d}", "error": message} for i in range(12)]
    lines = summary_lines(summary, run.results, run.run_dir, max_cost_usd=0.004)
    assert [line for line in lines if "max_cost_usd" in line] == [
        f"budget: the max_cost_usd budget of $0.004 stopped judging: 12 segment(s) unjudged, listed in "
        f"{run.run_dir / 'results'} (status, error)"]


def test_the_summary_names_the_segments_an_ensemble_flagged(tmp_path, evidence, capsys):
    from axon_eval.judges.wrappers import EnsembleJudge
    from axon_eval.cli.runs import disagreement_lines

    run = run_eval(evidence, EnsembleJudge([ScriptedJudge(), ScriptedJudge("scripted/v2", offset=5)]), tmp_path)
    flagged = run.results.loc[run.results["disagreement"].astype(bool), "segment_id"].tolist()
    judged = run.results.loc[run.results["status"] == "judged", "segment_id"].nunique()
    assert 0 < len(flagged) < judged
    line, where = disagreement_lines(run.results)
    cut = line.index("): ") + 1
    head, named = line[:cut], line[cut + 2:]
    assert head == f"ensemble disagreement: {len(flagged)} of {judged} judged segments flagged " \
                   f"({round(100 * len(flagged) / judged)}%)"
    from axon_eval.cli.runs import DISAGREEMENT_SHOWN

    parts = named.split(", ")
    shown = flagged[:DISAGREEMENT_SHOWN]
    assert [part.split(" (")[0] for part in parts[:len(shown)]] == shown
    assert parts[len(shown):] == ([f"and {len(flagged) - len(shown)} more"] if len(flagged) > len(shown) else [])
    first = run.results.set_index("segment_id").loc[flagged[0]]
    widest = max(DIMENSIONS, key=lambda d: first[f"range_{d}"])
    assert named.startswith(f"{flagged[0]} ({widest} range {first[f'range_{widest}']:g})")
    assert "members.parquet" in where
    # a judge that is not an ensemble has no such line
    assert disagreement_lines(run_eval(evidence, ScriptedJudge(), tmp_path / "plain").results) == []


def test_a_budget_stop_prints_one_line_not_one_per_segment(tmp_path, evidence, capsys):
    from axon_eval.judges.fake_server import FakeJudgeServer

    with FakeJudgeServer(lifetime_s=120) as server:
        code = cli.main(["evaluate", "--turns", str(evidence), "--judge", f"anthropic:claude-haiku-4-5@{server.url}",
                         "--out", str(tmp_path / "runs"), "--no-cache", "--max-cost-usd", "0.004",
                         "--concurrency", "1"])
    captured = capsys.readouterr()
    assert code == 3
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    stopped = load_run(folder).results.query("status == 'unjudged'")["segment_id"].nunique()
    assert stopped >= 5
    assert [line for line in captured.out.splitlines() if "max_cost_usd" in line] == [
        f"budget: the max_cost_usd budget of $0.004 stopped judging: {stopped} segment(s) unjudged, listed in "
        f"{folder / 'results'} (status, error)"]
    assert "UNJUDGED" not in captured.out
    assert [line for line in captured.err.splitlines() if "max_cost_usd" in line and "estimated cost" not in line] == []
    assert "estimated cost" in captured.err and "$0.0040" not in captured.err


def test_a_broken_rubric_file_is_a_one_line_usage_error(tmp_path, evidence, capsys):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nweights: [1, 2\n")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("name: x\nweights: {a: 1}\n")
    out = tmp_path / "runs"
    for rubric in (broken, wrong):
        assert cli.main(["evaluate", "--turns", str(evidence), "--judge", "heuristic", "--rubric", str(rubric),
                         "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {rubric}") and len(err.strip().splitlines()) == 1, err
        assert cli.main(["run", "notebooks/01_evaluate.ipynb", "-p", "rubric", str(rubric), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {rubric}") and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
