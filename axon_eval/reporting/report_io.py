"""Reading a run folder for its audit report, streamed: the results columns, JSON lines, the audit entries kept.

:func:`stream_audit` reads ``audit.jsonl`` (or gzip ``audit.jsonl.gz``) one line at a time and yields
only the entries of the wanted segments, reading a line's segment id from its first key without
parsing the rest when it can; memory grows with the wanted segments, not with the file. Unreadable
lines are skipped and named, never a crash.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ..rubric import CAP_FACTS, DIMENSIONS
from ..runs.io import read_results, results_files


#: Results columns the report reads (the long ``explanation`` text is read from the audit instead).
REPORT_COLUMNS: tuple[str, ...] = (
    "segment_id", "turn_id", "segment_index", "n_segments", "sample_index", "region", "surface", "client",
    "question", *DIMENSIONS, "raw_score", "score", "band", "judge_verdict", "verdict_matches_band",
    "caps_applied", "notes", *CAP_FACTS, "recovered_errors", "n_steps", "n_sql_executed", "judge_id",
    "model", "prompt_version", "rubric_id", "status", "error", "disagreement", *(f"range_{d}" for d in DIMENSIONS),
)
_AUDIT_SEGMENT_ID = re.compile(r'^\s*\{\s*"segment_id"\s*:\s*("(?:[^"\\]|\\.)*")')


def read_report_results(folder: Path) -> pd.DataFrame:
    """The columns of the run's results dataset the report uses (:data:`REPORT_COLUMNS` present in it),
    every part in order; an empty frame with those columns when the run wrote none (e.g. a failed run)."""
    files = results_files(folder)
    if not files:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in (*DIMENSIONS, "raw_score", "score") else object)
                             for c in REPORT_COLUMNS})
    import pyarrow.parquet as pq

    present = set(pq.read_schema(files[0]).names)
    return read_results(folder, columns=[c for c in REPORT_COLUMNS if c in present])  # the runs' bounded reader


def read_jsonl_records(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Every JSON line of ``path`` (none when absent); unreadable lines are skipped and named in
    ``problems``."""
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                problems.append(f"{path.name} line {n} could not be read ({exc.msg}); it is left out")
    return records


def stream_audit(path: Path, wanted: set[str], problems: list[str]) -> Iterator[dict[str, Any]]:
    """The entries of an audit file (``.jsonl``, or gzip ``.jsonl.gz``) whose ``segment_id`` is in
    ``wanted``, read one line at a time.

    A line's segment id is read from its first key without parsing the whole line when it can be, so
    the lines of other segments cost little. Unreadable lines are skipped and named in ``problems``.
    """
    if not path.exists():
        if wanted:
            problems.append(f"{path.name} is missing: the worst segments' evidence cannot be shown")
        return
    opened = (gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.suffix == ".gz"
              else path.open(encoding="utf-8", errors="replace"))
    with opened as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            head = _AUDIT_SEGMENT_ID.match(line)
            if head is not None:
                try:
                    if json.loads(head.group(1)) not in wanted:
                        continue
                except json.JSONDecodeError:
                    pass
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{path.name} line {n} could not be read ({exc.msg}); it is left out")
                continue
            if isinstance(entry, dict) and entry.get("segment_id") in wanted:
                yield entry


