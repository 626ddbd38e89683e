"""Ctrl-C during a run, driven for real: SIGINT is sent to a ``python -m axon_eval`` subprocess while its judge
waits on the local fake server, at a point where exactly ``K`` judgements have been answered.

The fake server answers the first ``K`` message requests at once and holds every later one until the test
releases it, so when the ``concurrency + K``-th request arrives the first ``K`` verdicts are back in the
judge (a request is sent only when an earlier one has finished) and the rest are still waiting: the run
has judged exactly ``K`` segments when the signal lands. Everything is written under ``tmp_path``.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from axon_eval.cli import main
from axon_eval.runs import CACHE_ENV, RUNS_DIR_ENV

from .held_server import HeldServer

ROOT = Path(__file__).resolve().parents[1]
TURNS = ROOT / "data" / "turns" / "sample_turns.jsonl"
LIMIT = 20  # valid turns judged (their segments are the run's total)
K = 3  # judgements answered before the interrupt
CONCURRENCY = 4


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update({RUNS_DIR_ENV: str(tmp_path / "runs"), CACHE_ENV: str(tmp_path / "cache.sqlite")})
    return env


def _interrupt(command: list[str], held: HeldServer, tmp_path: Path) -> tuple[int, str, str]:
    """Start ``python -m axon_eval <command>``, send SIGINT once ``CONCURRENCY + K`` requests have
    arrived, and return ``(exit code, stdout, stderr)``."""
    proc = subprocess.Popen([sys.executable, "-m", "axon_eval", *command], cwd=ROOT, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        held.wait_for(CONCURRENCY + K)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def _segments_within_limit(tmp_path: Path) -> int:
    """The oracle for the total: a complete offline heuristic run over the same turns and limit."""
    out = tmp_path / "oracle"
    with redirect_stdout(io.StringIO()):
        code = main(["evaluate", "--turns", str(TURNS), "--judge", "heuristic", "--limit", str(LIMIT),
                     "--out", str(out), "--no-cache", "--quiet"])
    assert code == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return json.loads((folder / "manifest.json").read_text())["counts"]["segments"]


def _check_interrupted_folder(folder: Path, total: int) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["failure"] is None
    counts = manifest["counts"]
    assert counts["judged"] == K and counts["planned_segments"] == total, counts
    results = pd.read_parquet(folder / "results")
    assert (results["status"] == "judged").sum() == K == results["segment_id"].nunique()
    verdicts = [json.loads(line) for line in (folder / "verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == K and not any(v["cached"] for v in verdicts)
    # what was spent is recorded: the manifest's totals are the sums over what the run holds
    assert manifest["cost_usd"] == pytest.approx(results["cost_usd"].sum()) and manifest["cost_usd"] > 0
    for field in ("input_tokens", "output_tokens"):
        assert manifest[field] == sum(v[field] for v in verdicts) > 0, field
    return manifest


def _index_row(root: Path, folder: Path) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(["index", str(root)]) == 0
    (row,) = [line for line in buffer.getvalue().splitlines() if line.startswith(folder.name)]
    return row


@pytest.mark.slow
def test_ctrl_c_during_evaluate_prints_one_line_keeps_the_folder_and_records_what_was_spent(tmp_path):
    total = _segments_within_limit(tmp_path)
    assert total > CONCURRENCY + K
    with HeldServer(answered=K) as held:
        spec = f"anthropic:claude-haiku-4-5@{held.url}"
        command = ["evaluate", "--turns", str(TURNS), "--judge", spec, "--limit", str(LIMIT),
                   "--concurrency", str(CONCURRENCY), "--quiet"]
        code, out, err = _interrupt(command, held, tmp_path)
        assert code == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
        lines = [line for line in err.splitlines() if line.startswith("interrupted")]
        assert lines == [f"interrupted: {K} of {total} segments judged; `python -m axon_eval evaluate --resume "
                         f"{folder}` finishes it in place, or run the same command again to reuse cached verdicts "
                         f"(folder {folder} is kept, marked interrupted)"], err
        assert err.rstrip().splitlines()[-1] == lines[0]
        _check_interrupted_folder(folder, total)
        row = _index_row(tmp_path / "runs", folder)
        assert " interrupted " in row and f" {K} of {total} " in row, row

        # running the same command again reuses the verdicts the interrupted run paid for
        held.release()
        again = subprocess.run([sys.executable, "-m", "axon_eval", *command], cwd=ROOT, env=_env(tmp_path),
                               capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    (rerun,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and p != folder and not p.name.startswith(".")]
    second = json.loads((rerun / "manifest.json").read_text())
    assert second["status"] == "complete" and second["counts"]["judged"] == total
    assert second["cache_hits"] == K, second


@pytest.mark.slow
def test_ctrl_c_during_a_notebook_run_interrupts_the_kernel_and_names_the_folder(tmp_path):
    total = _segments_within_limit(tmp_path)
    with HeldServer(answered=K) as held:
        command = ["run", "notebooks/01_evaluate.ipynb", "-p", "judge", f"anthropic:claude-haiku-4-5@{held.url}",
                   "-p", "limit", str(LIMIT), "--quiet"]
        # the notebook judges with the default concurrency (8)
        held_concurrency = 8
        proc = subprocess.Popen([sys.executable, "-m", "axon_eval", *command], cwd=ROOT, env=_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            held.wait_for(held_concurrency + K)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        arrived_at_interrupt = held.arrived
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert err.rstrip().splitlines()[-1] == (
        f"interrupted: {K} of {total} segments judged; run the same command again to reuse cached verdicts "
        f"(folder {folder} is kept, marked interrupted)"), err
    manifest = _check_interrupted_folder(folder, total)
    assert manifest["notebook"]["executed"], manifest["notebook"]
    assert (folder / "01_evaluate.ipynb").is_file()
    assert arrived_at_interrupt <= held_concurrency + K + 1, "the kernel kept sending after Ctrl-C"
    assert f" {K} of {total} " in _index_row(tmp_path / "runs", folder)
