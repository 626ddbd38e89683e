"""Runs a researcher can trust: honest statuses and exit codes, bad input reported not crashed,
reproducibility facts, rerun and compare, bounded streaming.

Each test here failed before the change that made it pass (statuses were ``complete`` for all-unjudged
runs, empty inputs wrote folders, one bad byte rejected a file, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from axon_eval import cli
from axon_eval.rubric import DIMENSIONS, Rubric
from axon_eval.runs import (
    EXIT_INVALID_LINES,
    EXIT_NO_VALID_TURNS,
    EXIT_NONE_JUDGED,
    EXIT_OK,
    EXIT_PARTIAL,
    NoValidTurnsError,
    compare_runs,
    evaluate,
    exit_code,
    index,
    load_run,
    rerun,
    rescore,
)
from axon_eval.reporting.comparison import write_comparison
from axon_eval.runs.evaluate import record_git
from axon_eval.runs.manifest import RunManifest
from axon_eval.runs.provenance import redact_secrets, redact_text
from axon_eval.scoring import score_frame

from tests.test_runs import ScriptedJudge, sample_lines, turn_line, write_lines

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def evidence(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "turns.jsonl", sample_lines())


class AllFailJudge(ScriptedJudge):
    async def ajudge(self, view, sample_index: int = 0):
        return self.error_record(view, sample_index, "HTTP 529 overloaded")


def _evaluate(path: Path, judge, out: Path, **kw):
    # no verdict cache unless asked: the scripted judges share an id, and a cached verdict would hide
    # the failure a test plants
    kw.setdefault("cache", False)
    return evaluate(path, judge, Rubric.default(), out_dir=out, progress=False, **kw)


# -- statuses and exit codes -------------------------------------------------------------------------
def test_status_and_exit_code_follow_the_judged_share(tmp_path, evidence):
    complete = _evaluate(evidence, ScriptedJudge(), tmp_path / "runs")
    assert complete.manifest.status == "complete" and exit_code(complete.manifest) == EXIT_OK
    partial = _evaluate(evidence, ScriptedJudge(fail=frozenset({"t003"})), tmp_path / "runs")
    assert partial.manifest.status == "partial" and exit_code(partial.manifest) == EXIT_PARTIAL
    none = _evaluate(evidence, AllFailJudge(), tmp_path / "runs")
    assert none.manifest.status == "failed" and none.manifest.failure == "none_judged"
    assert exit_code(none.manifest) == EXIT_NONE_JUDGED
    # the unjudged rows are still all there, with their reason
    assert len(none.results) == none.manifest.counts.segments == 15
    assert none.results["error"].str.contains("HTTP 529").all()


def test_empty_input_writes_no_folder_and_exits_5(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    out = tmp_path / "runs"
    with pytest.raises(NoValidTurnsError, match="empty"):
        _evaluate(empty, ScriptedJudge(), out)
    assert not out.exists() or not any(out.iterdir())
    code = cli.main(["evaluate", "--turns", str(empty), "--judge", "heuristic", "--out", str(out), "--quiet"])
    assert code == EXIT_NO_VALID_TURNS
    err = capsys.readouterr().err
    assert "nothing to judge" in err and "Traceback" not in err
    assert not out.exists() or not any(p for p in out.iterdir() if not p.name.startswith("."))


def test_only_invalid_lines_lists_them_and_exits_5(tmp_path, capsys):
    bad = write_lines(tmp_path / "bad.jsonl", ["{not json", '{"schema_version": 1}'])
    code = cli.main(["evaluate", "--turns", str(bad), "--judge", "heuristic", "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT_NO_VALID_TURNS and "line 1" in err and "line 2" in err


def test_cli_exit_codes_partial_strict_and_complete(tmp_path, capsys):
    lines = sample_lines(4) + ["{broken"]
    path = write_lines(tmp_path / "turns.jsonl", lines)
    out = str(tmp_path / "runs")
    assert cli.main(["evaluate", "--turns", str(path), "--judge", "heuristic", "--out", out, "--quiet"]) == EXIT_OK
    assert cli.main(["evaluate", "--turns", str(path), "--judge", "heuristic", "--out", out, "--quiet",
                     "--strict"]) == EXIT_INVALID_LINES
    # a judge spec that fails every judgement: openai against a closed loopback port
    failing = "openai:m@http://127.0.0.1:9/v1"
    code = cli.main(["evaluate", "--turns", str(path), "--judge", failing, "--out", out, "--quiet", "--no-cache"])
    assert code == EXIT_NONE_JUDGED
    assert "status: failed" in capsys.readouterr().err


# -- bad input -----------------------------------------------------------------------------------------
def test_validate_missing_folder_and_binary_files_give_one_line_errors(tmp_path, capsys):
    assert cli.main(["validate", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "missing.jsonl: no such evidence file" in err and "Traceback" not in err
    assert cli.main(["validate", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 40)
    assert cli.main(["validate", str(binary)]) == EXIT_NO_VALID_TURNS
    captured = capsys.readouterr()
    assert "not UTF-8" in captured.out and "Traceback" not in captured.err


def test_one_bad_byte_costs_only_its_line(tmp_path):
    lines = [turn_line(i).encode() for i in range(3)]
    lines.insert(1, turn_line(50).encode().replace(b"How many", b"How \xff many"))
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    from axon_eval import load_turns

    turns, invalid = load_turns(path)
    assert [t.turn_id for t in turns] == ["t000", "t001", "t002"]
    assert len(invalid) == 1 and invalid[0].line == 2 and "byte 0xff" in invalid[0].message


def test_piping_the_cli_into_head_ends_quietly(tmp_path):
    path = write_lines(tmp_path / "turns.jsonl", sample_lines(12))
    proc = subprocess.run(f"{sys.executable} -m axon_eval schema | head -c 10 > /dev/null; "
                          f"{sys.executable} -m axon_eval validate {path} --json | head -n 1 > /dev/null",
                          shell=True, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "BrokenPipeError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# -- reproducibility -------------------------------------------------------------------------------------
def test_dirty_tree_saves_its_diff_and_warns(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (repo / "weights.yaml").write_text("a: 1\n")
    git("add", ".")
    git("commit", "-qm", "init")
    (repo / "weights.yaml").write_text("a: 2\n")
    (repo / "new_file.py").write_text("x = 1\n")
    folder = tmp_path / "run"
    folder.mkdir()
    manifest = RunManifest(run_id="r", status="running", kind="evaluate", name="n", started_at="2026-01-01T00:00:00Z")
    record_git(folder, manifest, repo)
    assert manifest.git_dirty is True and manifest.git_diff == "git.diff"
    diff = (folder / "git.diff").read_text()
    assert "-a: 1" in diff and "+a: 2" in diff and "# untracked: new_file.py" in diff
    assert "dirty" in manifest.warnings[0] and "WARNING" in capsys.readouterr().err


def test_url_credentials_and_secret_values_are_redacted(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    text = "openai:m@https://alice:s3cr3t@llm.internal:8443/v1?api_key=abc123&x=1 and tok-0123456789"
    clean = redact_text(text)
    assert "s3cr3t" not in clean and "alice" not in clean and "abc123" not in clean and "tok-0123" not in clean
    assert "llm.internal:8443/v1" in clean and "x=<redacted>" in clean  # every query value is masked
    assert redact_secrets({"spec": text})["spec"] == clean


def test_rerun_of_an_evaluate_run_is_identical(tmp_path, evidence):
    first = _evaluate(evidence, "heuristic", tmp_path / "runs")
    new_dir, comparison = rerun(first.run_dir)
    assert new_dir != first.run_dir and comparison.identical
    assert comparison.results.n_compared == len(first.results) and comparison.results.max_abs_delta == 0


def test_rerun_cli_of_a_notebook_run_accepts_its_own_params_json(tmp_path, capfd):
    out = tmp_path / "runs"
    assert cli.main(["run", "notebooks/01_evaluate.ipynb", "-f", "notebooks/params/smoke.yaml", "--out", str(out),
                     "--quiet", "--no-html"]) == EXIT_OK
    # the kernel runs over IPC sockets: no "Kernel is running over TCP without encryption" noise
    assert "without encryption" not in capfd.readouterr().err
    (first,) = [p for p in out.iterdir() if not p.name.startswith(".")]
    params = json.loads((first / "params.json").read_text())
    assert "concurrency" not in params and params["limit"] == 8  # exactly the notebook's parameters
    assert cli.main(["rerun", str(first)]) == EXIT_OK
    text = capfd.readouterr().out
    assert "IDENTICAL" in text


# -- compare -------------------------------------------------------------------------------------------
def test_compare_two_runs_with_one_changed_weight(tmp_path, evidence):
    base = _evaluate(evidence, ScriptedJudge(), tmp_path / "runs")
    heavier = Rubric.default().with_weights({"intent_understood": 0.20, "sql_quality": 0.25,
                                             "result_relevance": 0.25, "answer_faithfulness": 0.30})
    other = rescore(base.run_dir, heavier)
    c = compare_runs(base.run_dir, other.run_dir, seed=3)
    judged = base.results[base.results["status"] == "judged"]
    expected = score_frame(judged, heavier)["score"].to_numpy() - judged["score"].to_numpy()
    got = c.deltas.set_index("segment_id").loc[judged["segment_id"], "delta"].to_numpy()
    np.testing.assert_allclose(got, expected)
    assert c.n_compared == len(judged) and len(c.unjudged) == 0
    assert c.mean_delta == pytest.approx(expected.mean())
    assert c.mean_delta_ci[0] <= c.mean_delta <= c.mean_delta_ci[1]
    from scipy.stats import wilcoxon

    assert c.wilcoxon_p == pytest.approx(wilcoxon(expected[expected != 0]).pvalue)
    assert int(c.transitions.to_numpy().sum()) == len(judged)
    bands_a = judged["band"].astype(str).to_numpy()
    bands_b = score_frame(judged, heavier)["band"].astype(str).to_numpy()
    assert c.n_band_changes == int((bands_a != bands_b).sum())
    top = c.deltas.iloc[0]
    assert abs(top["delta"]) == pytest.approx(np.abs(expected).max())
    assert "0.3*" in top["arithmetic_b"] and "0.2*" in top["arithmetic_a"] or "0.2*" in top["arithmetic_b"]
    assert not c.identical
    folder = write_comparison(c, tmp_path / "cmp")
    assert (folder / "compare.html").stat().st_size > 1000 and (folder / "comparison.json").exists()
    assert RunManifest.read(folder).kind == "compare"


def test_compare_refuses_different_evidence_unless_asked(tmp_path, evidence):
    a = _evaluate(evidence, ScriptedJudge(), tmp_path / "runs")
    other = write_lines(tmp_path / "other.jsonl", sample_lines(5))
    b = _evaluate(other, ScriptedJudge(), tmp_path / "runs")
    with pytest.raises(ValueError, match="different evidence"):
        compare_runs(a.run_dir, b.run_dir)
    c = compare_runs(a.run_dir, b.run_dir, allow_different_evidence=True)
    assert len(c.unmatched_a) == len(a.results) - len(b.results) and not c.unmatched_b and not c.identical


def test_index_lists_every_run_with_its_status(tmp_path, evidence):
    out = tmp_path / "runs"
    _evaluate(evidence, ScriptedJudge(), out)
    _evaluate(evidence, AllFailJudge(), out)
    broken = out / "2099-01-01T000000Z_broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    frame = index(out)
    assert len(frame) == 3
    assert sorted(frame["status"]) == ["complete", "failed", "unreadable"]
    assert frame.loc[frame["status"] == "complete", "segments"].item() == 15


# -- streaming -------------------------------------------------------------------------------------------
def test_small_chunks_give_the_same_run_as_one_chunk(tmp_path, evidence):
    one = _evaluate(evidence, ScriptedJudge(), tmp_path / "a", chunk_size=10_000, cache=False)
    many = _evaluate(evidence, ScriptedJudge(), tmp_path / "b", chunk_size=2, cache=False, compress_audit=True)
    cols = ["segment_id", "sample_index", *DIMENSIONS, "score", "band", "status"]
    pd.testing.assert_frame_equal(one.results[cols], many.results[cols])
    pd.testing.assert_frame_equal(load_run(many.run_dir).results[cols], one.results[cols])
    assert (many.run_dir / "audit.jsonl.gz").exists() and not (many.run_dir / "audit.jsonl").exists()
    assert [a["segment_id"] for a in load_run(many.run_dir).iter_audit()] == list(one.results["segment_id"])
    assert one.manifest.counts == many.manifest.counts
    assert not [p for p in many.run_dir.rglob(".*partial")], "partial files left behind"
    # rescoring a compressed-audit run works and reproduces it
    again = rescore(many.run_dir, Rubric.default())
    pd.testing.assert_frame_equal(again.results[cols], many.results[cols])


def test_a_failed_run_keeps_what_it_had(tmp_path, evidence):
    from tests.test_runs import CrashingJudge, SimulatedCrash

    with pytest.raises(SimulatedCrash):
        _evaluate(evidence, CrashingJudge(crash_after=5), tmp_path / "runs", chunk_size=3, cache=False,
                  concurrency=1)
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    m = RunManifest.read(folder)
    assert m.status == "failed" and m.failure == "error" and "SimulatedCrash" in m.error
    kept = pd.read_parquet(folder / "results")
    assert 3 <= len(kept) <= 5 and kept["status"].eq("judged").all()


# -- samples and members held honestly ----------------------------------------------------------
def test_an_ensemble_run_keeps_every_member_and_flags_disagreement_on_the_numbers(tmp_path, evidence):
    spec = "ensemble(heuristic, simulate(heuristic, sd=2, seed=4), reducer=mean)"
    run = _evaluate(evidence, spec, tmp_path / "runs")
    members = load_run(run.run_dir).members
    assert members is not None and len(members) == 2 * len(run.results)
    assert set(members["member"]) == {0, 1}
    judged = run.results[run.results["status"] == "judged"]
    for d in DIMENSIONS:
        per_segment = members.groupby("segment_id")[d].agg(lambda v: v.max() - v.min())
        expected = per_segment.loc[judged["segment_id"]].to_numpy()
        np.testing.assert_allclose(judged[f"range_{d}"].to_numpy(), expected)
    wide = judged[[f"range_{d}" for d in DIMENSIONS]].max(axis=1) >= 2
    assert judged.loc[wide, "disagreement"].all()
    assert judged["disagreement"].notna().all()


def test_a_repeated_run_counts_segments_not_samples(tmp_path, evidence):
    run = _evaluate(evidence, "repeat(simulate(heuristic, sd=1, seed=1), 3)", tmp_path / "runs")
    c = run.manifest.counts
    assert c.segments == 15 and c.samples == 45 and c.judged == 15
    summary = run.summary()
    assert summary["segments"] == 15 and summary["judged"] == 15
    from axon_eval.summaries import format_summary

    assert "judged: 15" in format_summary(summary)


def test_the_fake_judge_server_verb_starts_and_stops(capsys):
    assert cli.main(["fake-judge-server", "--port", "0", "--lifetime", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "http://127.0.0.1:" in out and "ANTHROPIC_BASE_URL" in out


def test_the_evaluation_notebook_on_an_empty_file_fails_with_exit_5(tmp_path):
    from axon_eval.runs.notebook import run_notebook

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    # checked before the kernel starts: nothing is written, the CLI exits 5
    with pytest.raises(NoValidTurnsError, match="empty"):
        run_notebook(ROOT / "notebooks" / "01_evaluate.ipynb", {"turns_file": str(empty), "labels_file": None},
                     out_dir=tmp_path / "runs", export_html=False)
    assert not (tmp_path / "runs").exists()
    assert cli.main(["run", "notebooks/01_evaluate.ipynb", "-p", "turns_file", str(empty), "-p", "labels_file",
                     "null", "--out", str(tmp_path / "runs")]) == EXIT_NO_VALID_TURNS
    assert not (tmp_path / "runs").exists()


def test_a_cold_evaluate_of_distinct_copies_misses_the_cache_on_every_segment(tmp_path):
    """What the bench's "cold" figure promises: replicated copies render distinct views, so an
    empty cache gives as many misses as segments and no hits."""
    from axon_eval.bench.runs import replicate_sample

    evidence = replicate_sample(180, tmp_path / "copies.jsonl")  # the 90-turn sample twice
    run = evaluate(evidence, "heuristic", Rubric.default(), out_dir=tmp_path / "runs", cache=tmp_path / "c.sqlite",
                   progress=False)
    assert run.manifest.cache_hits == 0
    assert run.manifest.cache_misses == run.manifest.counts.segments == len(run.results)
    assert run.results["view_sha256"].is_unique
    # ... and the marks change no judgement: each copy scores exactly as its original
    results = run.results.assign(original=run.results["segment_id"].str.replace(r"-r\d{4}", "", regex=True))
    columns = [*DIMENSIONS, "score", "judge_verdict"]
    assert (results.groupby("original")[columns].nunique(dropna=False) == 1).all().all()
