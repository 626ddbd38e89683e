"""Partitioned runs on a real ``dask.distributed`` local cluster (process workers; no mock of the engine).

* A partitioned run equals the single-process run on the same evidence (results sorted by segment,
  latency aside; the invalid lines, with their line numbers, whatever partition they fall in; the manifest
  counts, the sum of the parts).
* A worker killed mid-run is rescheduled and the run completes with nothing lost or paid twice: the fake
  judge server counts the verdicts it delivered, per view.
* The driver killed with SIGKILL (its whole process group, as a lost machine) leaves a run that ``index``
  shows as interrupted; ``evaluate --resume`` completes it in place and no verdict is paid twice.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.cli import main
from axon_eval.evidence import plan_byte_ranges
from axon_eval.runs import CACHE_ENV, RUNS_DIR_ENV
from axon_eval.runs.partitioned import cross_partition_duplicates, scan_partition

from .held_server import HeldServer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
#: Columns that may differ between two runs of the same evidence (timing, cache provenance).
VOLATILE = ("latency_ms", "cached")

pytestmark = pytest.mark.slow


def evidence_with_problems(path: Path) -> Path:
    """The bundled sample with bad lines spread over the file and a turn repeated far from its first line
    (so the repeat falls in another partition)."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    out = []
    for k, line in enumerate(lines):
        out.append(line)
        if k in (3, 40, 77):
            out.append('{"schema_version": 1, "turn_id": "broken-%d", "steps": "not a list"}' % k)
        if k == 60:
            out.append("not json at all")
    out.append(lines[2])  # a duplicate of the third turn
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def sorted_results(run: runs.Run) -> pd.DataFrame:
    frame = run.results.drop(columns=[c for c in VOLATILE if c in run.results.columns])
    return frame.sort_values(["segment_id", "sample_index"]).reset_index(drop=True)


def test_the_partition_plan_cuts_lines_and_finds_repeats_across_partitions(tmp_path):
    evidence = evidence_with_problems(tmp_path / "turns.jsonl")
    ranges = plan_byte_ranges(evidence, 15_000)
    assert len(ranges) > 3 and ranges[0].start == 0 and ranges[-1].end == evidence.stat().st_size
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:], strict=False))
    data = evidence.read_bytes()
    assert all(data[r.start - 1:r.start] == b"\n" for r in ranges[1:])  # every cut is after a newline
    n_lines = data.count(b"\n")
    assert [r.first_line for r in ranges] == [1 + data[:r.start].count(b"\n") for r in ranges]
    skip = cross_partition_duplicates([scan_partition(str(evidence), r) for r in ranges])
    (last,) = skip.values()
    assert last == {n_lines: 3}  # the repeat on the last line was first seen on line 3


def test_a_partitioned_run_equals_the_single_process_run(tmp_path):
    evidence = evidence_with_problems(tmp_path / "turns.jsonl")
    single = runs.evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", name="single", progress=False,
                           cache=False)
    parted = runs.evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", name="parted", progress=False,
                           cache=False, workers=2, partition_bytes=15_000)
    assert parted.manifest.partitions["count"] > 3 and parted.manifest.partitions["engine"] == "dask.distributed"
    assert len(list((parted.run_dir / "results").glob("part-*.parquet"))) == parted.manifest.partitions["count"]
    pd.testing.assert_frame_equal(sorted_results(runs.load_run(parted.run_dir)), sorted_results(single))
    # bad lines are reported once, with their line numbers, whatever partition they fall in
    assert runs.load_run(parted.run_dir).invalid == runs.load_run(single.run_dir).invalid
    assert any("duplicate turn_id" in r["message"] for r in runs.load_run(single.run_dir).invalid)
    assert parted.manifest.counts == single.manifest.counts
    parts = [json.loads(p.read_text())["counts"] for p in sorted((parted.run_dir / "parts").glob("part-*.json"))]
    assert sum(p["segments"] for p in parts) == parted.manifest.counts.segments
    assert sum(p["judged"] for p in parts) == parted.manifest.counts.judged
    verdicts = (parted.run_dir / "verdicts.jsonl").read_text().splitlines()
    assert len(verdicts) == parted.manifest.counts.samples


def test_a_limit_takes_the_first_valid_turns_of_the_file(tmp_path):
    evidence = evidence_with_problems(tmp_path / "turns.jsonl")
    single = runs.evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", name="s", progress=False, cache=False,
                           limit=25)
    parted = runs.evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", name="p", progress=False, cache=False,
                           limit=25, partition_bytes=15_000, workers=1)
    pd.testing.assert_frame_equal(sorted_results(runs.load_run(parted.run_dir)), sorted_results(single))


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DASK_"))}
    env.update({RUNS_DIR_ENV: str(tmp_path / "runs"), CACHE_ENV: str(tmp_path / "cache.sqlite"),
                "ANTHROPIC_API_KEY": "test-key-not-real"})
    return env


def test_a_killed_worker_is_rescheduled_and_nothing_is_lost_or_paid_twice(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    answered = 4
    with HeldServer(answered, on_release="overloaded") as server, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                         memory_limit=0) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        spec = f"anthropic:claude-haiku-4-5@{server.url}"
        done: dict = {}

        def run() -> None:
            done["run"] = runs.evaluate(SAMPLE, spec, out_dir=tmp_path / "runs", name="killed", progress=False,
                                        client=client, partition_bytes=8_000, limit=30, concurrency=2, chunk_size=2)

        thread = threading.Thread(target=run)
        thread.start()
        server.wait_for(answered + 2)  # the first verdicts are delivered; one request per worker is held
        os.kill(next(iter(pids.values())), signal.SIGKILL)  # a worker dies with its request unanswered
        server.release()
        thread.join(600)
        assert not thread.is_alive()
    run = done["run"]
    oracle = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "oracle", progress=False, cache=False, limit=30)
    assert run.manifest.status == "complete" and run.manifest.counts.judged == oracle.manifest.counts.segments
    assert set(run.results["segment_id"]) == set(oracle.results["segment_id"])  # nothing lost
    assert len(server.delivered) == oracle.manifest.counts.segments
    assert max(server.delivered.values()) == 1, "a verdict was delivered (paid) twice"


def _index_status(root: Path, folder: Path) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(["index", str(root), "--json"]) == 0
    (row,) = [r for r in json.loads(buffer.getvalue()) if r["run_id"] == folder.name]
    return row["status"]


def test_a_driver_killed_with_sigkill_resumes_in_place_and_pays_no_verdict_twice(tmp_path):
    answered = 6
    with HeldServer(answered, on_release="overloaded") as server:
        spec = f"anthropic:claude-haiku-4-5@{server.url}"
        command = [sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge", spec,
                   "--limit", "30", "--workers", "2", "--partition-bytes", "8000", "--concurrency", "2",
                   "--chunk-size", "2", "--quiet"]
        proc = subprocess.Popen(command, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            server.wait_for(answered + 2)
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its cluster: a lost machine
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
        assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
        assert _index_status(tmp_path / "runs", folder) == "interrupted"
        server.release()
        resumed = subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--resume", str(folder),
                                  "--workers", "2", "--quiet"], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                                 text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    manifest = json.loads((folder / "manifest.json").read_text())
    oracle = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "oracle", progress=False, cache=False, limit=30)
    assert manifest["status"] == "complete" and manifest["counts"]["judged"] == oracle.manifest.counts.segments
    assert any(w.startswith("resumed at") for w in manifest["warnings"])
    assert len(server.delivered) == oracle.manifest.counts.segments
    assert max(server.delivered.values()) == 1, "a verdict was delivered (paid) twice"
    assert _index_status(tmp_path / "runs", folder) == "complete"
    assert set(runs.load_run(folder).results["segment_id"]) == set(oracle.results["segment_id"])


def test_a_budget_holds_across_workers_and_the_run_says_it_stopped(tmp_path, monkeypatch):
    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    with HeldServer(None) as server:
        spec = f"anthropic:claude-haiku-4-5@{server.url}"
        full = runs.evaluate(SAMPLE, spec, out_dir=tmp_path / "full", progress=False, cache=False, limit=30,
                             concurrency=2)
        budget = 0.5 * full.manifest.cost_usd
        capped = runs.evaluate(SAMPLE, spec, out_dir=tmp_path / "capped", progress=False, cache=False, limit=30,
                               concurrency=2, workers=2, partition_bytes=8_000, max_cost_usd=budget)
    per_view = float(full.results["cost_usd"].max())
    parts = [json.loads(p.read_text()) for p in sorted((capped.run_dir / "parts").glob("part-*.json"))]
    largest_partition = per_view * max(p["counts"]["segments"] for p in parts)
    judged = capped.results[capped.results["status"] == "judged"]
    assert capped.manifest.cost_usd <= budget + 1e-12  # never over the budget
    assert capped.manifest.cost_usd >= budget - largest_partition  # within one partition's cost of it
    assert capped.manifest.status == "partial" and 0 < len(judged) < len(capped.results)
    assert any("max_cost_usd budget" in w for w in capped.manifest.warnings)
    assert (capped.results.loc[capped.results["status"] != "judged", "error"]
            .str.startswith("not judged: the max_cost_usd budget").all())


def test_a_large_partitioned_run_is_summarised_from_merged_sums_without_loading_it(tmp_path, monkeypatch, capsys):
    from axon_eval.cli import runs as cli_runs
    from axon_eval.stats.intervals import headline_table

    monkeypatch.setattr(cli_runs, "MERGED_SUMMARY_ABOVE", 10)  # the sample stands in for a large run
    monkeypatch.setattr(runs.Run, "results", property(lambda self: pytest.fail("the CLI loaded the results")))
    code = main(["evaluate", "--turns", str(SAMPLE), "--judge", "heuristic", "--workers", "1", "--partition-bytes",
                 "20000", "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "headline figures (merged from 6 partitions' sums" in out
    monkeypatch.undo()
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert not (folder / "report.html").exists()
    merged = pd.DataFrame(json.loads((folder / "headline.json").read_text())["rows"]).set_index("figure")
    memory = headline_table(runs.load_run(folder).results).set_index("figure")
    assert (merged["estimate"] - memory["estimate"]).abs().max() < 1e-9
    assert (merged["n"] == memory["n"]).all() and (merged["n_clusters"] == memory["n_clusters"]).all()


def test_a_client_the_notebook_already_made_is_used(tmp_path):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit=0) as cluster, Client(cluster):
        run = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "runs", progress=False, cache=False, limit=10)
    assert run.manifest.partitions["engine"] == "dask.distributed" and run.manifest.status == "complete"
    alone = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "runs", progress=False, cache=False, limit=10)
    assert alone.manifest.partitions is None  # the client is closed: one process again


def test_the_request_limit_bounds_partitions_only_for_a_judge_that_sends_requests():
    from axon_eval.runs.partitioned import partitions_in_flight

    assert partitions_in_flight(64, 8, sends_requests=False) == (64, 8)  # the offline judge: every core
    assert partitions_in_flight(64, 8, sends_requests=True) == (8, 1)  # 8 requests at most across the cluster
    assert partitions_in_flight(2, 8, sends_requests=True) == (2, 4)
    assert partitions_in_flight(4, 1, sends_requests=True) == (1, 1)
    for slots in range(1, 20):
        for concurrency in range(1, 20):
            k, each = partitions_in_flight(slots, concurrency, sends_requests=True)
            assert k * each <= concurrency and k <= slots
