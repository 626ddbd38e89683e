"""Benchmarks of the labelling studio, the ``studio`` section of ``make bench``.

On a SIMULATED pack of :data:`N_SEGMENTS` segments written here (seeded; each segment a question, two
SQL steps of 20 rows and an answer; three raters with an overlap of :data:`OVERLAP`; building it is not
timed):

* **serve ready**: from constructing the server (reading the assignment, indexing the evidence,
  repairing and reading the journal) to the first ``/api/session`` answer. Target
  :data:`TARGET_READY_SECONDS`.
* **next page p99**: ``GET /api/item/<position>`` over one keep-alive connection, :data:`REQUESTS`
  positions spread over the queue. Target :data:`TARGET_PAGE_MS` at the 99th percentile.
* **save-ack p99**: ``POST /api/label`` until its answer, the ``fsync`` included. Target
  :data:`TARGET_SAVE_MS`.
* **status**: ``label status`` on 3 raters x 500 overlap labels (SIMULATED labels: a shared true
  verdict each rater keeps with probability 0.7): reading the journals, progress, kappa per pair and
  alpha of the verdicts and the four dimensions, each with its bootstrap interval (500 resamples).
  Target :data:`TARGET_STATUS_SECONDS`.

``quick=True`` shrinks the sizes (for tests); the targets are then not judged.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .table import row

SECTION = "studio"
N_SEGMENTS = 10_000
OVERLAP = 500
REQUESTS = 300
TARGET_READY_SECONDS = 2.0
TARGET_PAGE_MS = 100.0
TARGET_SAVE_MS = 50.0
TARGET_STATUS_SECONDS = 1.0
RATERS = ("r1", "r2", "r3")


def simulated_pack(folder: Path, n_segments: int, overlap: int, seed: int = 0) -> Path:
    """A SIMULATED pack the studio can serve (design, assignment, evidence, guide; no run needed)."""
    from ..judges.prompt import load_prompt
    from ..studio.assignment import plan_assignment
    from ..studio.blind import blind_item, rubric_guide

    rng = np.random.default_rng(seed)
    ids = [f"sim-{i:05d}" for i in range(n_segments)]
    pi = rng.uniform(0.05, 1.0, n_segments)
    design = {"source_run": None, "segments": [{"segment_id": s, "weight": float(1 / p), "inclusion_probability": float(p),
                                                "answer_captured": True} for s, p in zip(ids, pi, strict=True)]}
    (folder / "studio").mkdir(parents=True)
    (folder / "labels").mkdir()
    (folder / "design.json").write_text(json.dumps(design))
    a = plan_assignment(ids, list(RATERS), overlap, seed)
    (folder / "assignment.json").write_text(json.dumps(a.to_json()))
    with open(folder / "studio" / "evidence.jsonl", "w", encoding="utf-8") as fh:
        for i, sid in enumerate(ids):
            step = {"kind": "sql", "sql": f"SELECT team, SUM(points) FROM results WHERE season = {2000 + i % 25} GROUP BY team",
                    "status": "ok", "columns": ["team", "points"],
                    "rows": [[f"team {k}", int(rng.integers(0, 90))] for k in range(20)], "row_count": 40}
            entry = {"segment_id": sid, "question": f"Which team scored most in season {2000 + i % 25}?",
                     "n_segments": 1, "segment_index": 1, "surface": "web", "steps": [step, dict(step)],
                     "answer": f"team {i % 20} scored most."}
            fh.write(json.dumps(blind_item(entry)) + "\n")
    (folder / "studio" / "guide.json").write_text(json.dumps(rubric_guide(load_prompt("judge_v1").text)))
    return folder


def simulated_labels(pack: Path, overlap: list[str], seed: int = 0) -> None:
    """SIMULATED labels of every rater on the overlap, written as journal lines."""
    from ..rubric import BANDS, DIMENSIONS

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, len(overlap))
    for rater in RATERS:
        with open(pack / "labels" / f"{rater}.jsonl", "w", encoding="utf-8") as fh:
            for k, sid in enumerate(overlap):
                v = int(truth[k]) if rng.random() < 0.7 else int(rng.integers(0, 3))
                scores = {d: int(np.clip(10 - 4 * v + rng.integers(-2, 3), 0, 10)) for d in DIMENSIONS}
                fh.write(json.dumps({"id": f"{rater}-{k:06d}", "segment_id": sid, "rater": rater, "kind": "label",
                                     **scores, "verdict": BANDS[v], "comment": "", "seconds": 20.0}) + "\n")


def _p99(values: list[float]) -> float:
    return float(np.percentile(values, 99))


def bench_studio(quick: bool = False) -> list[dict[str, Any]]:
    """The studio rows (module docstring)."""
    from ..studio.collect import latest_labels
    from ..studio.pack import read_assignment
    from ..studio.server import StudioApp
    from ..studio.status import overlap_agreement, rater_progress

    n, overlap, requests = (300, 50, 40) if quick else (N_SEGMENTS, OVERLAP, REQUESTS)
    judged = not quick
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pack = simulated_pack(Path(tmp) / "pack", n, overlap)
        t0 = time.perf_counter()
        app = StudioApp(pack, "r1", port=0)
        app.start()
        conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
        headers = {"Authorization": f"Bearer {app.token}", "Host": f"127.0.0.1:{app.port}"}
        conn.request("GET", "/api/session", headers=headers)
        total = json.loads(conn.getresponse().read())["progress"]["total"]
        ready = time.perf_counter() - t0
        rows.append(row(SECTION, f"label serve ready ({n:,} segments)", round(ready, 3), "s",
                        f"<= {TARGET_READY_SECONDS}", ready <= TARGET_READY_SECONDS if judged else None))
        pages, saves = [], []
        positions = np.linspace(0, total - 1, requests).astype(int)
        for k, pos in enumerate(positions):
            t = time.perf_counter()
            conn.request("GET", f"/api/item/{int(pos)}", headers=headers)
            item = json.loads(conn.getresponse().read())
            pages.append((time.perf_counter() - t) * 1000)
            body = json.dumps({"id": f"bench-{k:08d}", "position": int(pos), "segment_id": item["evidence"]["segment_id"],
                               "scores": dict.fromkeys(("intent_understood", "sql_quality", "result_relevance",
                                                        "answer_faithfulness"), 7), "verdict": "good", "seconds": 12.0})
            t = time.perf_counter()
            conn.request("POST", "/api/label", body=body, headers={**headers, "Content-Type": "application/json"})
            answer = conn.getresponse()
            answer.read()
            saves.append((time.perf_counter() - t) * 1000)
            if answer.status != 200:
                raise RuntimeError(f"a save was refused: HTTP {answer.status}")
        conn.close()
        app.stop()
        rows.append(row(SECTION, f"next page p99 ({requests} pages)", round(_p99(pages), 2), "ms",
                        f"<= {TARGET_PAGE_MS:g}", _p99(pages) <= TARGET_PAGE_MS if judged else None))
        rows.append(row(SECTION, f"save acknowledged p99, fsync included ({requests} saves)", round(_p99(saves), 2), "ms",
                        f"<= {TARGET_SAVE_MS:g}", _p99(saves) <= TARGET_SAVE_MS if judged else None))
        a = read_assignment(pack)
        simulated_labels(pack, list(a.overlap))
        t = time.perf_counter()
        labels = latest_labels(pack)
        rater_progress(labels, a.queues, a.overlap)
        overlap_agreement(labels, a.overlap)
        status = time.perf_counter() - t
        rows.append(row(SECTION, f"label status, 3 raters x {overlap} overlap (SIMULATED labels)", round(status, 3), "s",
                        f"<= {TARGET_STATUS_SECONDS:g}", status <= TARGET_STATUS_SECONDS if judged else None))
    return rows
