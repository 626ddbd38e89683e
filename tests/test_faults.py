"""Faults reproduced for real: runs killed (SIGKILL) and interrupted (SIGINT to the process group) at a known
point, a verdict cache on a full file system, a runs folder on a full file system.

The judge is the Anthropic judge talking to the package's local fake server through its SDK
(:class:`tests.held_server.HeldServer`: it answers the first requests, holds the rest until released, and
counts the verdicts it delivered per view), so "paid twice" and "spend recorded" are checked against what
the server delivered. A full disk is a small ``tmpfs`` mounted for the test (root only: the test is
skipped, saying why, when the file system cannot be mounted).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.runs import CACHE_ENV, RUNS_DIR_ENV

from .held_server import HeldServer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LIMIT = 20

pytestmark = pytest.mark.slow


def _env(tmp_path: Path, cache: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DASK_"))}
    env.update({RUNS_DIR_ENV: str(tmp_path / "runs"), CACHE_ENV: str(cache or tmp_path / "cache.sqlite"),
                "ANTHROPIC_API_KEY": "test-key-not-real"})
    return env


def _folder(runs_dir: Path) -> Path:
    (folder,) = [p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return folder


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _oracle_segments(tmp_path: Path, evidence: Path = SAMPLE, limit: int | None = LIMIT) -> set[str]:
    """The segments a complete run judges: an offline heuristic run over the same turns and limit."""
    run = runs.evaluate(evidence, "heuristic", out_dir=tmp_path / "oracle", progress=False, cache=False,
                        limit=limit)
    return set(run.results["segment_id"])


def _unit_cost(folder: Path) -> float:
    """The cost of one verdict of the fake server (its usage is the same for every request)."""
    costs = runs.load_run(folder).results["cost_usd"].dropna()
    assert len(costs) and costs.max() == pytest.approx(costs.min())
    return float(costs.max())


def _check_paid_once_and_recorded(folder: Path, server: HeldServer, segments: set[str]) -> None:
    """Every segment judged, every view delivered once, and the manifest's spend is what was delivered."""
    manifest = _manifest(folder)
    assert manifest["status"] == "complete", manifest.get("error")
    results = runs.load_run(folder).results
    assert set(results["segment_id"]) == segments and (results["status"] == "judged").all()  # nothing lost
    assert len(server.delivered) == len(segments)
    assert max(server.delivered.values()) == 1, "a verdict was delivered (paid) twice"
    paid = sum(server.delivered.values())
    assert manifest["verdicts_paid"] == paid
    assert manifest["cost_usd"] == pytest.approx(paid * _unit_cost(folder))  # every attempt's spend


def _resume(folder: Path, tmp_path: Path, *extra: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--resume", str(folder), "--quiet", *extra],
                          cwd=ROOT, env=_env(tmp_path, cache), capture_output=True, text=True, timeout=600)


# -- 1.1 a single-process run killed in its first seconds -------------------------------------------
@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_a_run_killed_in_its_first_seconds_resumes_without_paying_again(tmp_path, cached):
    answered = 5
    segments = _oracle_segments(tmp_path)
    with HeldServer(answered, on_release="overloaded") as server:
        command = [sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge",
                   f"anthropic:claude-haiku-4-5@{server.url}", "--limit", str(LIMIT), "--concurrency", "2",
                   "--quiet", *([] if cached else ["--no-cache"])]
        proc = subprocess.Popen(command, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            server.wait_for(answered + 2)  # five verdicts delivered, inside the first chunk; two held
            proc.kill()  # SIGKILL: no handler runs, long before the first heartbeat
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        folder = _folder(tmp_path / "runs")
        killed = _manifest(folder)
        assert killed["status"] == "running"
        # what the resume needs was recorded before the first request
        assert (killed["cache_path"] is not None) == cached
        assert not (folder / "verdicts.jsonl").exists()  # the journals are the partial files the kill left
        server.release()  # the held requests are answered with an error: never paid
        resumed = _resume(folder, tmp_path, *([] if cached else ["--no-cache"]))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    _check_paid_once_and_recorded(folder, server, segments)


# -- 1.3 spend over every attempt ------------------------------------------------------------------------
def test_the_spend_of_an_interrupted_attempt_stays_in_the_record_after_the_resume(tmp_path):
    answered = 4
    segments = _oracle_segments(tmp_path)
    # the requests in flight at Ctrl-C are cancelled by the run; the server then answers them with an
    # error, so they are not paid (a provider might bill them: they are the only ones a resume re-sends)
    with HeldServer(answered, on_release="overloaded") as server:
        command = [sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge",
                   f"anthropic:claude-haiku-4-5@{server.url}", "--limit", str(LIMIT), "--concurrency", "2",
                   "--quiet", "--no-cache"]
        proc = subprocess.Popen(command, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            server.wait_for(answered + 2)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        folder = _folder(tmp_path / "runs")
        first = _manifest(folder)
        unit = first["cost_usd"] / answered
        assert first["verdicts_paid"] == answered and first["cost_usd"] > 0
        server.release()
        resumed = _resume(folder, tmp_path, "--no-cache")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    _check_paid_once_and_recorded(folder, server, segments)
    final = _manifest(folder)
    assert final["cost_usd"] == pytest.approx(unit * len(segments))  # the first attempt's is not lost
    verdicts = [json.loads(line) for line in (folder / "verdicts.jsonl").read_text().splitlines()]
    assert final["input_tokens"] == sum(v["input_tokens"] for v in verdicts)


# -- 1.4 and 1.3: Ctrl-C at the terminal during a partitioned run ---------------------------------------
def test_ctrl_c_at_the_terminal_stops_a_partitioned_run_cleanly_and_records_every_paid_verdict(tmp_path):
    answered, limit = 8, 40
    segments = _oracle_segments(tmp_path, limit=limit)
    with HeldServer(answered) as server:
        command = [sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge",
                   f"anthropic:claude-haiku-4-5@{server.url}", "--limit", str(limit), "--workers", "2",
                   "--partition-bytes", "8000", "--concurrency", "4", "--chunk-size", "2", "--quiet"]
        proc = subprocess.Popen(command, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            server.wait_for(answered + 1)
            time.sleep(1.0)  # every request slot is taken by a held request
            at_signal = server.arrived
            os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the driver and every worker
            folder = _folder(tmp_path / "runs")
            deadline = time.monotonic() + 60
            while not (folder / "parts" / ".stop").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            server.release()  # the requests in flight are answered: paid, so they must be recorded
            _out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == 130, err[-3000:]
        assert server.arrived == at_signal, "a request was sent after Ctrl-C"
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
        lines = [line for line in err.splitlines() if line.strip()]
        assert [line for line in lines if "interrupted" in line.lower()] == [lines[-1]], err[-3000:]
        assert lines[-1].startswith("interrupted: ") and f"--resume {folder}" in lines[-1]
        manifest = _manifest(folder)
        assert manifest["status"] == "interrupted"
        records = {int(p.stem.split("-")[1]): json.loads(p.read_text())
                   for p in (folder / "parts").glob("part-*.json")}
        assert manifest["partitions"]["finished"] == sorted(records)  # every finished partition is recorded
        assert manifest["counts"]["judged"] == sum(r["counts"]["judged"] for r in records.values())
        paid = sum(server.delivered.values())
        assert paid == at_signal  # every request in flight was answered
        assert manifest["verdicts_paid"] == paid  # including the partitions that did not finish
        assert manifest["counts"]["judged"] < paid
        resumed = _resume(folder, tmp_path, "--workers", "2")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    _check_paid_once_and_recorded(folder, server, segments)


# -- small file systems ------------------------------------------------------------------------------
@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A ``tmpfs`` of ``size`` mounted at ``path`` for the test (skipped, saying why, when it cannot be)."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small file system cannot be mounted here (mount -t tmpfs needs root): "
                    f"{(mounted.stderr or mounted.stdout).strip()[:200]}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` with a file, leaving about ``leave`` bytes free; returns the file."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        left = max(0, free - leave)
        while left > 0:
            try:
                left -= os.write(fd, b"\0" * min(left, 1 << 16))
            except OSError:
                break
    finally:
        os.close(fd)
    return filler


# -- 1.2 a verdict cache whose writes fail -------------------------------------------------------------
def test_a_cache_on_a_full_disk_keeps_every_paid_verdict_and_counts_the_failed_writes(tmp_path):
    segments = _oracle_segments(tmp_path)
    with small_disk(tmp_path / "cachedisk", "1m") as disk:
        cache = disk / "verdicts.sqlite"
        from axon_eval.judges.cache import VerdictCache

        VerdictCache(cache).close()  # the cache exists; then its disk fills
        fill(disk)
        with HeldServer(None) as server:
            done = subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge",
                                   f"anthropic:claude-haiku-4-5@{server.url}", "--limit", str(LIMIT),
                                   "--concurrency", "4", "--quiet"], cwd=ROOT, env=_env(tmp_path, cache),
                                  capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]  # complete: no paid verdict became an unjudged row
    assert "Traceback" not in done.stderr
    folder = _folder(tmp_path / "runs")
    _check_paid_once_and_recorded(folder, server, segments)
    manifest = _manifest(folder)
    assert manifest["cache_write_failures"] == len(segments)
    said = [line for line in done.stderr.splitlines() if "cache" in line.lower()]
    assert len(said) == 1 and f"{len(segments)} verdict(s) could not be stored" in said[0], done.stderr  # once


class _FailingCache:
    """A cache whose every write raises as SQLite does on a full disk."""

    def __init__(self) -> None:
        from axon_eval.judges.cache import CacheStats

        self.stats = CacheStats()
        self.path = Path("failing.sqlite")

    def get(self, key: str):
        self.stats.misses += 1

    def put(self, key, record, *, view_sha256=None):
        import sqlite3

        raise sqlite3.OperationalError("database or disk is full")


def test_a_cache_write_that_raises_never_turns_a_verdict_into_an_unjudged_row(tmp_path):
    with HeldServer(None) as server:
        run = runs.evaluate(SAMPLE, f"anthropic:claude-haiku-4-5@{server.url}", out_dir=tmp_path / "runs",
                            progress=False, cache=_FailingCache(), limit=6, concurrency=2)
    assert run.manifest.status == "complete" and run.manifest.counts.unjudged == 0
    assert run.manifest.cache_write_failures == run.manifest.counts.segments
    assert sum("database or disk is full" in w for w in run.manifest.warnings) == 1


def test_a_cache_that_cannot_be_created_on_a_full_disk_is_one_line(tmp_path):
    with small_disk(tmp_path / "cachedisk", "256k") as disk:
        fill(disk)
        done = subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge",
                               "heuristic", "--limit", "5", "--quiet"], cwd=ROOT,
                              env=_env(tmp_path, disk / "sub" / "verdicts.sqlite"), capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr
    assert sum("cache" in line.lower() for line in done.stderr.splitlines()) == 1, done.stderr


# -- 3 a full disk under the runs folder -----------------------------------------------------------------
def _whole_files(folder: Path) -> None:
    """No file under a final name is torn: every JSON line parses, every results part reads."""
    for name in ("verdicts.jsonl", "audit.jsonl"):
        path = folder / name
        if path.exists():
            text = path.read_text()
            assert text == "" or text.endswith("\n"), f"{name} ends in a torn line"
            for line in text.splitlines():
                json.loads(line)
    for part in sorted((folder / "results").glob("part-*.parquet")):
        pd.read_parquet(part)


@pytest.mark.parametrize("workers", [None, 2], ids=["single-process", "workers-2"])
def test_a_full_disk_fails_the_run_in_one_line_and_resume_finishes_it_once_space_is_freed(tmp_path, workers):
    from axon_eval.bench.runs import replicate_sample

    evidence = replicate_sample(450, tmp_path / "turns.jsonl")
    segments = _oracle_segments(tmp_path, evidence, limit=None)
    with small_disk(tmp_path / "disk", "3m") as disk:
        filler = fill(disk, leave=1200 * 1024)  # room for a part of the run only
        extra = [] if workers is None else ["--workers", str(workers), "--partition-bytes", "100000"]
        done = subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(evidence), "--judge",
                               "heuristic", "--out", str(disk / "runs"), "--no-cache", "--quiet", *extra], cwd=ROOT,
                              env=_env(tmp_path), capture_output=True, text=True, timeout=600)
        assert done.returncode == 1, done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        folder = _folder(disk / "runs")
        errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and done.stderr.rstrip().splitlines()[-1] == errors[0], done.stderr
        assert errors[0].startswith(f"error: no space left on the disk holding {folder} (")
        assert "free is needed to finish" in errors[0] and f"evaluate --resume {folder}" in errors[0]
        manifest = _manifest(folder)
        assert manifest["status"] == "failed" and "Errno 28" in manifest["error"]
        _whole_files(folder)
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            assert main(["index", str(disk / "runs"), "--json"]) == 0
        assert json.loads(buffer.getvalue())[0]["status"] == "failed"  # not "interrupted"

        filler.unlink()  # space is freed: the file system grows
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        resumed = _resume(folder, tmp_path, *([] if workers is None else ["--workers", str(workers)]))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        manifest = _manifest(folder)
        assert manifest["status"] == "complete" and manifest["counts"]["judged"] == len(segments)
        assert set(runs.load_run(folder).results["segment_id"]) == segments
        _whole_files(folder)
        assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # nothing left aside


# -- 5 the fault table of make bench ------------------------------------------------------------------
def test_the_fault_tables_row_for_a_kill_at_the_first_request_meets_its_goals():
    from axon_eval.bench.faults import MOMENTS, bench_faults

    (row,) = bench_faults(MOMENTS[:1], ("single process",))
    assert row["ok"], row
    assert row["value"] == 0 and row["segments_lost"] == 0 and row["in_flight"] == [2]
    assert row["spend_recorded_usd"] == pytest.approx(row["spend_paid_usd"]) and row["spend_paid_usd"] > 0
