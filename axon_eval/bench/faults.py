"""The fault table of ``make bench``: runs killed at five moments, resumed, and what that cost.

A paid run (the Anthropic judge, through its SDK, against the package's local fake server,
:class:`~axon_eval.judges.fake_server.FakeJudgeServer`) is SIGKILLed with its whole process group (the
driver and, for a partitioned run, every worker: a lost machine) at a chosen moment, then finished with
``evaluate --resume``. The server counts the verdicts it delivered per view. At the moment of a kill it
answers no further request: the requests then in flight are held, and answered with an error once the
process is dead (no verdict: nothing paid), so every verdict delivered reached a run that could record it.

The five moments: at the first request (nothing delivered yet), after the first verdict, after a quarter
and after three quarters of the views' verdicts, and a kill at half-way followed by a second kill while
resuming, at three quarters. Each is run single-process (``SINGLE_TURNS`` turns, concurrency 2) and
partitioned (``--workers 2``, ``PARTITIONED_TURNS`` turns in partitions of ``PARTITION_BYTES``).

Each row: ``value`` = views re-paid (verdicts delivered more than once; goal 0: the requests in flight at
a kill are never paid here), ``segments_lost`` (segments of a complete run missing from the finished
run's results, or not judged; goal 0), and ``spend_recorded_usd`` (the manifest's ``cost_usd`` after the
last resume) against ``spend_paid_usd`` (verdicts delivered x the fake server's price per verdict; goal
equal, to 1e-9 relative), with ``in_flight`` (requests held at each kill) and ``verdicts_delivered``.

``python -m axon_eval.bench.faults`` prints the rows (about two minutes on two cores, most of it starting
the partitioned runs' local clusters).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .runs import ROOT, SAMPLE

#: Turns judged by the single-process and the partitioned runs, the partitioned run's partition size
#: (bytes) and request limit.
SINGLE_TURNS = 20
PARTITIONED_TURNS = 40
PARTITION_BYTES = 8000
CONCURRENCY = 2
#: Seconds a held run is given to fill its request slots before the kill.
SETTLE_S = 0.6
#: The moments of the table: (label, fractions of the views delivered at each kill, in order).
MOMENTS: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("at the first request", (0.0,)),
    ("after the first verdict", (-1.0,)),  # -1: exactly one verdict
    ("a quarter of the verdicts delivered", (0.25,)),
    ("three quarters delivered", (0.75,)),
    ("at half-way, then again while resuming at three quarters", (0.5, 0.75)),
)


class KillServer:
    """The fake judge server with a switch: while ``hold_after(n)`` is on, requests after the ``n``-th
    delivered verdict are held; :meth:`release` answers the held ones with an overloaded error (no verdict)
    and lets later requests through. ``delivered`` counts the verdicts delivered per view; ``held`` the
    requests being held now."""

    def __init__(self) -> None:
        from ..judges.fake_server import FakeJudgeServer

        self.lock = threading.Condition()
        self.delivered: dict[str, int] = {}
        self.arrived = 0
        self.held = 0
        self.limit: int | None = None
        self.released = threading.Event()
        self.released.set()
        self.server = FakeJudgeServer(responder=self.respond, lifetime_s=3600)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def total(self) -> int:
        return sum(self.delivered.values())

    def reset(self) -> None:
        """Forget what was delivered (a new row: its run has its own cache)."""
        with self.lock:
            self.delivered, self.arrived = {}, 0

    def hold_after(self, n: int) -> None:
        with self.lock:
            self.limit = n
            self.released = threading.Event()

    def release(self) -> None:
        with self.lock:
            self.limit = None
            self.released.set()

    def respond(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        import hashlib

        from ..judges.fake_server import _error, default_responder

        view = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.arrived += 1
            released = self.released
            hold = self.limit is not None and self.total >= self.limit
            if hold:
                self.held += 1
            else:
                self.delivered[view] = self.delivered.get(view, 0) + 1  # counted as it is answered
            self.lock.notify_all()
        if hold:
            released.wait(600)
            with self.lock:
                self.held -= 1
            return _error(529, "overloaded_error", "held at the kill: no verdict")
        return default_responder(path, body)

    def wait_held(self, timeout: float = 300.0) -> None:
        """Wait until a request is held (the limit is reached), then :data:`SETTLE_S` for the others."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.held == 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no request was held within {timeout:g} s ({self.total} delivered)")
                self.lock.wait(left)
        time.sleep(SETTLE_S)

    def __enter__(self) -> KillServer:
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self.server.stop()


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DASK_"))}
    env.update({"AXON_EVAL_RUNS_DIR": str(work / "runs"), "AXON_EVAL_CACHE": str(work / "cache.sqlite"),
                "ANTHROPIC_API_KEY": "bench-key-not-real"})
    return env


def _killed(command: Sequence[str], server: KillServer, work: Path, at: int) -> int:
    """Run ``command`` until ``at`` verdicts are delivered (and a request is held), SIGKILL its process
    group; returns the requests in flight (held) at the kill."""
    server.hold_after(at)
    proc = subprocess.Popen(list(command), cwd=ROOT, env=_env(work), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        server.wait_held()
        in_flight = server.held
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        server.release()
    return in_flight


def _folder(work: Path) -> Path:
    (folder,) = [p for p in (work / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return folder


def one_row(engine: str, label: str, fractions: Sequence[float], server: KillServer, work: Path,
            segments: set[str]) -> dict[str, Any]:
    """Kill a run at ``fractions`` of its views delivered (the first kill is of the run, the later ones of
    its resumes), resume it to the end and measure the row (module docstring)."""
    from ..runs import load_run

    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    limit = SINGLE_TURNS if engine == "single process" else PARTITIONED_TURNS
    workers = [] if engine == "single process" else ["--workers", "2"]
    start = [sys.executable, "-m", "axon_eval", "evaluate", "--turns", str(SAMPLE), "--judge", spec, "--limit",
             str(limit), "--concurrency", str(CONCURRENCY), "--quiet", *workers,
             *([] if not workers else ["--partition-bytes", str(PARTITION_BYTES), "--chunk-size", "2"])]
    server.reset()
    base = server.total
    in_flight = []
    for k, fraction in enumerate(fractions):
        at = base + (1 if fraction < 0 else int(fraction * len(segments)))
        command = start if k == 0 else [sys.executable, "-m", "axon_eval", "evaluate", "--resume",
                                        str(_folder(work)), "--quiet", *workers]
        in_flight.append(_killed(command, server, work, at))
    folder = _folder(work)
    done = subprocess.run([sys.executable, "-m", "axon_eval", "evaluate", "--resume", str(folder), "--quiet",
                           *workers], cwd=ROOT, env=_env(work), capture_output=True, text=True, timeout=900)
    manifest = json.loads((folder / "manifest.json").read_text())
    results = load_run(folder).results if done.returncode in (0, 3) else None
    judged = set() if results is None else set(results.loc[results["status"] == "judged", "segment_id"])
    views = {v: n for v, n in server.delivered.items()}
    repaid = sum(n - 1 for n in views.values() if n > 1)
    costs = [] if results is None else [c for c in results["cost_usd"].dropna() if c > 0]
    unit = max(costs) if costs else float("nan")
    paid = (server.total - base) * unit
    recorded = float(manifest.get("cost_usd") or 0.0)
    lost = len(segments - judged)
    ok = (done.returncode == 0 and repaid == 0 and lost == 0
          and math.isclose(recorded, paid, rel_tol=1e-9, abs_tol=1e-12))
    name = (f"{engine}, SIGKILL {label}: {lost} segment(s) lost, spend recorded ${recorded:.5f} of "
            f"${paid:.5f} paid")
    return {"section": "faults", "name": name, "value": repaid, "unit": "views re-paid",
            "target": "0; lost 0; recorded = paid", "ok": ok, "engine": engine, "moment": label,
            "segments": len(segments), "segments_lost": lost, "spend_recorded_usd": round(recorded, 9),
            "spend_paid_usd": round(paid, 9), "in_flight": in_flight, "verdicts_delivered": server.total - base,
            "exit": done.returncode, **({"stderr": done.stderr[-500:]} if done.returncode else {})}


def bench_faults(moments: Sequence[tuple[str, Sequence[float]]] = MOMENTS,
                 engines: Sequence[str] = ("single process", "--workers 2")) -> list[dict[str, Any]]:
    """The fault table (module docstring): one row per engine and moment, in a temporary folder."""
    from ..runs import evaluate

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="axon-bench-faults-") as tmp:
        oracle = {}
        for engine in engines:
            limit = SINGLE_TURNS if engine == "single process" else PARTITIONED_TURNS
            run = evaluate(SAMPLE, "heuristic", out_dir=Path(tmp) / "oracle", progress=False, cache=False,
                           limit=limit)
            oracle[engine] = set(run.results["segment_id"])
        with KillServer() as server:
            for engine in engines:
                for k, (label, fractions) in enumerate(moments):
                    work = Path(tmp) / f"{engine.replace(' ', '-').strip('-')}-{k}"
                    work.mkdir()
                    try:
                        rows.append(one_row(engine, label, fractions, server, work, oracle[engine]))
                    except Exception as exc:  # a broken row is reported, the others still run
                        rows.append({"section": "faults", "name": f"{engine}, SIGKILL {label}: failed: "
                                     f"{type(exc).__name__}: {exc}", "value": float("nan"), "unit": "views re-paid",
                                     "target": "0; lost 0; recorded = paid", "ok": False})
    return rows


def main(argv: list[str] | None = None) -> int:
    rows = bench_faults()
    for r in rows:
        flag = "ok" if r["ok"] else "MISS"
        print(f"[{flag:4}] {r['name']}: {r['value']} {r['unit']} (in flight {r.get('in_flight')})")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
