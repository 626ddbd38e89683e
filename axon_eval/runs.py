"""Evaluation runs: judge every segment, score it, and keep the whole run as dated evidence.

A *run* is one folder ``<out>/<UTC YYYY-MM-DD>T<HHMMSS>Z_<name>_<judge slug>/`` that is never
overwritten (a clash gets ``-2``, ``-3``, ... appended) and holds:

``params.json``       the parameters the run was started with (never any environment value)
``manifest.json``     :class:`RunManifest`: status, judge, rubric, git commit, package versions, input
                      file hashes, times, counts, cache hits, tokens and cost, source run
``results.parquet``   one row per judged segment (and judge sample): see :data:`RESULT_COLUMNS`
``verdicts.jsonl``    every :class:`~axon_eval.judges.base.JudgeRecord`, one ``model_dump_json()`` a line
                      (what ``replay(<run>)`` reads)
``audit.jsonl``       per segment: the full scoring arithmetic (``TurnScore.to_dict()``), the trajectory
                      facts, the SQL and rows the judge saw (the view's steps) and the view's SHA-256
``invalid.jsonl``     every input line that could not be used, with its reason
``figures/``          PNG figures

Every file is written atomically (temporary file + ``os.replace``). The manifest is written first with
``"status": "running"``; a run that raises midway (including ``KeyboardInterrupt``) is kept, with what
it had, and marked ``"failed"`` with the error.

Resume: judged verdicts go to the SQLite verdict cache (``<out>/.cache/verdicts.sqlite``, or the file
named by ``AXON_EVAL_CACHE``) the moment they are made, so starting an interrupted run again with the
same inputs and judge pays for no verdict twice and produces the same results.

Unjudged segments (judge errors) are rows with ``status == "unjudged"``, ``NaN`` scores and the error
text: never a 0, never dropped. Evidence SQL is data here: nothing in this module executes it.

API keys are read by the judges from the environment and are never written: params and manifest are
scrubbed of any value of an environment variable whose name looks like a secret before writing.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import platform
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from .evidence import InvalidTurn, Turn, load_turns, split_segments, trajectory_facts
from .rubric import CAP_FACTS, DIMENSIONS, Rubric
from .scoring import TurnScore, score_turn
from .summaries import MixedResultsError, format_summary, summarise
from .view import EvidenceView, render_view

if TYPE_CHECKING:  # pragma: no cover
    from .judges.base import Judge, JudgeRecord
    from .judges.cache import VerdictCache

__all__ = [
    "CACHE_ENV",
    "RESULT_COLUMNS",
    "RUNS_DIR_ENV",
    "InputChangedError",
    "MixedResultsError",
    "Run",
    "RunManifest",
    "default_cache_path",
    "default_runs_dir",
    "evaluate",
    "file_sha256",
    "format_summary",
    "git_info",
    "load_run",
    "new_run_dir",
    "package_versions",
    "redact_secrets",
    "rejudge",
    "rescore",
    "summarise",
]

#: Environment variable naming the default parent folder of run folders (default ``runs``).
RUNS_DIR_ENV = "AXON_EVAL_RUNS_DIR"
#: Environment variable naming the verdict cache file (default ``<runs dir>/.cache/verdicts.sqlite``).
CACHE_ENV = "AXON_EVAL_CACHE"
#: Packages whose versions every manifest records.
RECORDED_PACKAGES: tuple[str, ...] = ("axon_eval", "pandas", "numpy", "anthropic", "openai", "papermill",
                                      "pydantic", "sqlglot")
#: Columns of ``results.parquet``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "segment_id", "turn_id", "segment_index", "n_segments", "sample_index", "captured_at", "region",
    "surface", "client", "question", "answer_captured",
    *DIMENSIONS,
    "raw_score", "score", "band", "judge_verdict", "verdict_matches_band", "caps_applied", "notes",
    "explanation",
    *CAP_FACTS, "recovered_errors", "n_steps", "n_sql_executed",
    "judge_id", "model", "prompt_version", "rubric_id", "status", "error", "view_sha256", "cached",
    "latency_ms", "cost_usd",
)
_FLOAT_COLUMNS = (*DIMENSIONS, "raw_score", "score", "latency_ms", "cost_usd")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
_MIN_SECRET_LEN = 8
REDACTED = "<redacted>"
#: Permissions of written files (``mkstemp`` would leave them owner-only).
_FILE_MODE = 0o644


class InputChangedError(RuntimeError):
    """The input file a run recorded no longer has the recorded SHA-256 (or is gone)."""


# ============================================================================================
# Small I/O helpers
# ============================================================================================
def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(ts: datetime) -> str:
    """UTC ISO-8601 with a ``Z`` suffix, to the second."""
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_runs_dir(root: str | Path | None = None) -> Path:
    """``$AXON_EVAL_RUNS_DIR`` when set, else ``<root>/runs`` (``root`` defaults to the working directory)."""
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env)
    return Path(root) / "runs" if root is not None else Path("runs")


def default_cache_path(out_dir: str | Path | None = None) -> Path:
    """``$AXON_EVAL_CACHE`` when set, else ``<out_dir>/.cache/verdicts.sqlite``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return Path(out_dir if out_dir is not None else default_runs_dir()) / ".cache" / "verdicts.sqlite"


def slugify(text: str, max_len: int = 48) -> str:
    """Lower-case ``[a-z0-9.-]`` slug of ``text`` (``anthropic:claude-x`` -> ``anthropic-claude-x``)."""
    slug = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-.")
    slug = re.sub(r"-{2,}", "-", slug)[:max_len].strip("-.")
    return slug or "x"


def new_run_dir(out_dir: str | Path, name: str, judge: str | None = None, *,
                now: datetime | None = None) -> Path:
    """Create and return a fresh run folder ``<out_dir>/<YYYY-MM-DD>T<HHMMSS>Z_<name>[_<judge>]``.

    The folder is created with ``mkdir(exist_ok=False)``, so an existing folder is never reused: a clash
    (two runs in the same second) gets ``-2``, ``-3``, ... appended.
    """
    ts = (now or utc_now()).astimezone(timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    base = f"{ts}_{slugify(name)}" + (f"_{slugify(judge)}" if judge else "")
    parent = Path(out_dir)
    parent.mkdir(parents=True, exist_ok=True)
    for k in range(1, 10_000):
        candidate = parent / (base if k == 1 else f"{base}-{k}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RuntimeError(f"could not create a fresh run folder for {base!r} under {parent}")  # pragma: no cover


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (Paths and numpy scalars converted, NaN -> null)."""
    return _scrub_nan(json.loads(json.dumps(value, default=_json_default)))


def _scrub_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _scrub_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_nan(v) for v in value]
    return value


def write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False, default=_json_default) for r in rows]
    return atomic_write_text(path, "".join(line + "\n" for line in lines))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    with p.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_parquet(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write ``frame`` as Parquet atomically (serialised in memory, then :func:`atomic_write_bytes`)."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return atomic_write_bytes(path, buffer.getvalue())


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if _SECRET_NAME.search(k) and v and len(v) >= _MIN_SECRET_LEN},
                  key=len, reverse=True)


def redact_secrets(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of ``value`` (JSON-like) where every occurrence of a secret-looking environment value
    (variables named ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...) is ``<redacted>``."""
    secrets = _secret_values(environ)
    if not secrets:
        return value

    def scrub(v: Any) -> Any:
        if isinstance(v, str):
            for s in secrets:
                if s in v:
                    v = v.replace(s, REDACTED)
            return v
        if isinstance(v, dict):
            return {scrub(k): scrub(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [scrub(x) for x in v]
        return v

    return scrub(value)


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`RECORDED_PACKAGES` (``None`` when not installed)."""
    out: dict[str, str | None] = {}
    for name in RECORDED_PACKAGES:
        dist = "axon-eval" if name == "axon_eval" else name
        try:
            out[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info(path: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool}`` of the repository holding ``path`` (default: this package).

    ``dirty`` counts modified, staged and untracked files. Outside a repository, or without git,
    both are ``"unknown"``.
    """
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=20, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(where), "status", "--porcelain"], capture_output=True,
                                text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": "unknown"}
    return {"commit": commit or "unknown", "dirty": bool(status.strip())}


# ============================================================================================
# Manifest and run objects
# ============================================================================================
class RunCounts(BaseModel):
    """Segment counts of a run: ``judged + unjudged == results rows``; ``invalid`` input lines."""

    model_config = ConfigDict(extra="forbid")

    turns: int = 0
    segments: int = 0
    judged: int = 0
    unjudged: int = 0
    invalid: int = 0


class RunManifest(BaseModel):
    """``manifest.json`` of a run folder. Times are UTC ISO-8601 (``...Z``)."""

    model_config = ConfigDict(extra="forbid")

    manifest_version: int = 1
    run_id: str
    status: Literal["running", "complete", "failed"]
    kind: Literal["evaluate", "rejudge", "rescore", "notebook"]
    name: str
    judge_id: str | None = None
    judge_spec: str | None = None
    judge_model: str | None = None
    prompt_version: str | None = None
    rubric_id: str | None = None
    rubric_name: str | None = None
    rubric: dict[str, Any] | None = Field(default=None, description="name, version, weights, caps, bands, "
                                          "row_horizon, prompt_version")
    git_commit: str = "unknown"
    git_dirty: bool | Literal["unknown"] = "unknown"
    python: str = Field(default_factory=lambda: platform.python_version())
    packages: dict[str, str | None] = Field(default_factory=dict)
    input_files: dict[str, str] = Field(default_factory=dict, description="path -> SHA-256")
    turns_file: str | None = Field(default=None, description="the evidence file (a key of input_files)")
    workdir: str = Field(default_factory=lambda: os.getcwd())
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    started_at: str
    ended_at: str | None = None
    counts: RunCounts = Field(default_factory=RunCounts)
    cache_path: str | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None
    source_run: str | None = None
    notebook: dict[str, Any] | None = None
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None

    def write(self, folder: str | Path) -> Path:
        """Atomically write ``manifest.json`` into ``folder`` (secrets scrubbed)."""
        return write_json(Path(folder) / "manifest.json", redact_secrets(self.model_dump(mode="json")))

    @classmethod
    def read(cls, folder: str | Path) -> RunManifest:
        path = Path(folder) / "manifest.json"
        if not path.exists():
            raise FileNotFoundError(f"{folder} is not a run folder: no manifest.json")
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


@dataclass
class Run:
    """A run folder's contents: what :func:`evaluate`, :func:`rejudge` and :func:`rescore` return and
    what :func:`load_run` reads back."""

    run_dir: Path
    manifest: RunManifest
    params: dict[str, Any]
    results: pd.DataFrame
    verdicts: list[JudgeRecord]
    audit: list[dict[str, Any]]
    invalid: list[dict[str, Any]]

    @property
    def figures_dir(self) -> Path:
        return self.run_dir / "figures"

    def summary(self, *, allow_mixed: bool = False) -> dict[str, Any]:
        """:func:`summarise` of this run's results, with its invalid lines."""
        return summarise(self.results, invalid=self.invalid, allow_mixed=allow_mixed)


def empty_results() -> pd.DataFrame:
    return _results_frame([])


def load_run(folder: str | Path) -> Run:
    """Read a run folder: manifest, params, results (empty frame when absent, e.g. a failed run),
    verdict records, audit records and invalid lines."""
    from .judges.base import JudgeRecord

    folder = Path(folder)
    manifest = RunManifest.read(folder)
    params_path = folder / "params.json"
    params = json.loads(params_path.read_text(encoding="utf-8")) if params_path.exists() else {}
    results_path = folder / "results.parquet"
    results = pd.read_parquet(results_path) if results_path.exists() else empty_results()
    verdicts_path = folder / "verdicts.jsonl"
    verdicts: list[JudgeRecord] = []
    if verdicts_path.exists():
        with verdicts_path.open(encoding="utf-8") as fh:
            verdicts = [JudgeRecord.model_validate_json(line) for line in fh if line.strip()]
    return Run(run_dir=folder, manifest=manifest, params=params, results=results, verdicts=verdicts,
               audit=read_jsonl(folder / "audit.jsonl"), invalid=read_jsonl(folder / "invalid.jsonl"))


# ============================================================================================
# Segments as scored items
# ============================================================================================
def _step_json(step: Any) -> dict[str, Any]:
    return step.model_dump(mode="json")


@dataclass(frozen=True)
class _Item:
    """Everything about one segment that scoring, results and audit need (without the judge)."""

    segment_id: str
    turn_id: str
    segment_index: int
    n_segments: int
    captured_at: str
    region: str
    surface: str
    client: str
    question: str
    answer: str | None
    facts: dict[str, Any]
    steps: list[dict[str, Any]]
    view_sha256: str
    row_horizon: int

    @classmethod
    def from_view(cls, view: EvidenceView, turn: Turn, facts: dict[str, Any]) -> _Item:
        return cls(segment_id=view.segment_id, turn_id=turn.turn_id, segment_index=view.segment_index,
                   n_segments=view.n_segments, captured_at=iso(turn.captured_at), region=turn.region,
                   surface=turn.surface, client=turn.client, question=view.question, answer=view.answer,
                   facts=facts, steps=[_step_json(s) for s in view.steps], view_sha256=view.sha256,
                   row_horizon=view.row_horizon)

    @classmethod
    def from_audit(cls, entry: Mapping[str, Any]) -> _Item:
        return cls(**{k: entry[k] for k in cls.__dataclass_fields__})

    def base(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _record_notes(record: JudgeRecord) -> list[str]:
    notes = record.extra.get("notes") if isinstance(record.extra, dict) else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def _score_pair(item: _Item, record: JudgeRecord, rubric: Rubric) -> tuple[dict[str, Any], dict[str, Any]]:
    """One results row and one audit entry for a segment and one of its judge records."""
    ts: TurnScore | None = None
    error = record.error
    if record.judged:
        assert record.verdict is not None
        try:
            ts = score_turn(record.verdict.subscores(), item.facts, rubric, judge_verdict=record.verdict.verdict)
        except ValueError as exc:  # a verdict the scorer cannot use: unjudged, with the reason
            error = f"verdict could not be scored: {exc}"
    status = "judged" if ts is not None else "unjudged"
    verdict = record.verdict
    notes = (ts.notes if ts is not None else []) + _record_notes(record)
    row: dict[str, Any] = {
        "segment_id": item.segment_id, "turn_id": item.turn_id, "segment_index": item.segment_index,
        "n_segments": item.n_segments, "sample_index": record.sample_index, "captured_at": item.captured_at,
        "region": item.region, "surface": item.surface, "client": item.client, "question": item.question,
        "answer_captured": item.answer is not None,
    }
    for d in DIMENSIONS:
        value = ts.subscores[d] if ts is not None else None
        row[d] = float(value) if value is not None else np.nan
    row.update({
        "raw_score": ts.raw_score if ts is not None else np.nan,
        "score": ts.score if ts is not None else np.nan,
        "band": ts.band if ts is not None else None,
        "judge_verdict": verdict.verdict if verdict is not None else None,
        "verdict_matches_band": ts.verdict_matches_band if ts is not None else None,
        "caps_applied": ";".join(ts.caps_applied) if ts is not None else "",
        "notes": "; ".join(notes),
        "explanation": verdict.explanation if verdict is not None else None,
    })
    for f in CAP_FACTS:
        row[f] = bool(item.facts[f])
    row.update({
        "recovered_errors": int(item.facts.get("recovered_errors", 0) or 0),
        "n_steps": int(item.facts.get("n_steps", len(item.steps))),
        "n_sql_executed": int(item.facts.get("n_sql_executed", 0)),
        "judge_id": record.judge_id, "model": record.model, "prompt_version": record.prompt_version,
        "rubric_id": rubric.id, "status": status, "error": error if status == "unjudged" else None,
        "view_sha256": item.view_sha256, "cached": bool(record.cached),
        "latency_ms": record.latency_ms if record.latency_ms is not None else np.nan,
        "cost_usd": record.cost_usd if record.cost_usd is not None else np.nan,
    })
    audit = {
        **item.base(),
        "sample_index": record.sample_index,
        "status": status,
        "error": row["error"],
        "judge_id": record.judge_id,
        "rubric_id": rubric.id,
        "verdict": verdict.model_dump(mode="json") if verdict is not None else None,
        "score": ts.to_dict() if ts is not None else None,
    }
    return row, audit


def _results_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for c in _FLOAT_COLUMNS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype("float64")
    for c in ("segment_index", "n_segments", "sample_index", "recovered_errors", "n_steps", "n_sql_executed"):
        frame[c] = frame[c].astype("int64")
    for c in (*CAP_FACTS, "answer_captured", "cached"):
        frame[c] = frame[c].astype(bool)
    frame["verdict_matches_band"] = frame["verdict_matches_band"].astype("boolean")
    return frame


def _score_all(items: Sequence[_Item], records: Sequence[JudgeRecord], samples: int,
               rubric: Rubric) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    rows, audit = [], []
    for i, record in enumerate(records):
        item = items[i // samples]
        if record.segment_id != item.segment_id:
            raise RuntimeError(f"judge returned records out of order: record {i} is for "
                               f"{record.segment_id!r}, expected {item.segment_id!r}")
        row, entry = _score_pair(item, record, rubric)
        rows.append(row)
        audit.append(entry)
    return _results_frame(rows), audit


# ============================================================================================
# Judges, caches
# ============================================================================================
def resolve_judge(judge: Judge | str) -> Judge:
    """A judge object, or one built from a spec string by :func:`axon_eval.judges.build_judge`."""
    if isinstance(judge, str):
        from .judges import build_judge

        return build_judge(judge)
    for attr in ("judge_id", "model", "prompt_version", "judge_many"):
        if not hasattr(judge, attr):
            raise TypeError(f"{judge!r} is not a judge: it has no {attr!r}")
    return judge


def judge_label(judge: Any) -> str:
    """The spec a judge was built from, else its id (used in folder names)."""
    return str(getattr(judge, "spec", None) or judge.judge_id)


@contextlib.contextmanager
def _open_cache(cache: Any, out_dir: Path) -> Iterator[Any]:
    """``cache``: a VerdictCache (used as is), a path, ``None``/``True`` (default path) or ``False`` (none)."""
    if cache is False:
        yield None
        return
    if cache is None or cache is True or isinstance(cache, str | Path):
        from .judges.cache import VerdictCache

        path = default_cache_path(out_dir) if cache is None or cache is True else Path(cache)
        opened = VerdictCache(path)
        try:
            yield opened
        finally:
            opened.close()
        return
    yield cache


def _cache_counts(cache: Any) -> tuple[int, int] | None:
    stats = getattr(cache, "stats", None)
    if stats is None:
        return None
    return int(getattr(stats, "hits", 0)), int(getattr(stats, "misses", 0))


def _sum_known(values: Iterable[Any]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _usage(records: Sequence[JudgeRecord]) -> dict[str, Any]:
    """Tokens and cost of the calls made in this run (cached records cost nothing now)."""
    fresh = [r for r in records if not r.cached]
    return {
        "input_tokens": _sum_known(r.input_tokens for r in fresh),
        "output_tokens": _sum_known(r.output_tokens for r in fresh),
        "cache_read_tokens": _sum_known(r.cache_read_tokens for r in fresh),
        "cache_creation_tokens": _sum_known(r.cache_creation_tokens for r in fresh),
        "cost_usd": _sum_known(r.cost_usd for r in fresh),
    }


# ============================================================================================
# Writing a run
# ============================================================================================
def _prepare_dir(run_dir: str | Path | None, out_dir: Path, name: str, judge: str | None,
                 started: datetime) -> tuple[Path, dict[str, Any] | None]:
    """The run folder to write (fresh, or a given one that holds no results yet) and any notebook info
    already in its manifest (written there by :mod:`axon_eval.runner`)."""
    if run_dir is None:
        return new_run_dir(out_dir, name, judge, now=started), None
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    taken = [p.name for p in (folder / "results.parquet", folder / "verdicts.jsonl") if p.exists()]
    if taken:
        raise FileExistsError(f"run folder {folder} already holds {taken}; runs are never overwritten")
    notebook = None
    if (folder / "manifest.json").exists():
        with contextlib.suppress(Exception):
            notebook = RunManifest.read(folder).notebook
    return folder, notebook


def _rubric_record(rubric: Rubric) -> dict[str, Any]:
    return rubric.model_dump(mode="json")


def _fail(folder: Path, manifest: RunManifest, exc: BaseException, records: Sequence[Any],
          invalid: Sequence[dict[str, Any]]) -> None:
    """Mark a run failed, keeping whatever it had (never raises over the original error)."""
    with contextlib.suppress(Exception):
        write_jsonl(folder / "verdicts.jsonl", [r.model_dump_json() for r in records])
        write_jsonl(folder / "invalid.jsonl", invalid)
    manifest.status = "failed"
    manifest.error = redact_secrets(f"{type(exc).__name__}: {exc}".strip())
    manifest.ended_at = iso(utc_now())
    with contextlib.suppress(Exception):
        manifest.write(folder)


def _write_outputs(folder: Path, results: pd.DataFrame, records: Sequence[JudgeRecord],
                   audit: Sequence[dict[str, Any]], invalid: Sequence[dict[str, Any]], rubric: Rubric,
                   figures: bool) -> None:
    write_jsonl(folder / "verdicts.jsonl", [r.model_dump_json() for r in records])
    write_jsonl(folder / "invalid.jsonl", invalid)
    write_jsonl(folder / "audit.jsonl", audit)
    write_parquet(folder / "results.parquet", results)
    (folder / "figures").mkdir(exist_ok=True)
    if figures:
        from . import plots

        plots.save_standard_figures(results, rubric, folder / "figures")


def _counts(n_turns: int, results: pd.DataFrame, n_invalid: int) -> RunCounts:
    judged = int((results["status"] == "judged").sum())
    return RunCounts(turns=n_turns, segments=int(results["segment_id"].nunique()), judged=judged,
                     unjudged=len(results) - judged, invalid=n_invalid)


def _invalid_dicts(invalid: Iterable[InvalidTurn | Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [i.to_dict() if isinstance(i, InvalidTurn) else dict(i) for i in invalid]


def evaluate(
    turns: Sequence[Turn] | str | Path,
    judge: Judge | str,
    rubric: Rubric | str | Path | None = None,
    *,
    invalid: Iterable[InvalidTurn | Mapping[str, Any]] = (),
    out_dir: str | Path | None = None,
    name: str = "evaluate",
    params: Mapping[str, Any] | None = None,
    input_files: Iterable[str | Path] = (),
    cache: VerdictCache | str | Path | bool | None = None,
    concurrency: int = 8,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = True,
    row_horizon: int | None = None,
    run_dir: str | Path | None = None,
    figures: bool = True,
    chunk_size: int = 512,
    kind: Literal["evaluate", "rejudge"] = "evaluate",
    source_run: str | None = None,
) -> Run:
    """Judge and score every segment of ``turns`` and write a run folder; returns the :class:`Run`.

    Parameters
    ----------
    turns : valid turns (with their ``invalid`` records), or the path of an evidence file, which is
        loaded here (its invalid lines are kept and its SHA-256 recorded).
    judge : a :class:`~axon_eval.judges.base.Judge` or a spec string (``heuristic``, ``anthropic:<model>``,
        ...). Its ``judge_many`` is called through the verdict cache.
    rubric : a Rubric, a packaged rubric name or a YAML path (default ``axon-v1``); ``row_horizon``
        replaces its row horizon (which changes the rubric id).
    invalid : invalid input lines to carry into the run (``invalid.jsonl``, manifest counts, summaries).
    out_dir : parent of the run folder (default ``$AXON_EVAL_RUNS_DIR`` or ``runs``).
    run_dir : write into this folder instead of a fresh one (the notebook runner creates it); it must not
        hold results already.
    params : parameters to record in ``params.json`` (e.g. a notebook's parameters); merged over the
        call's own (turns_file, judge, rubric, row_horizon, limit, seed, name, concurrency).
    input_files : files whose SHA-256 is recorded (the evidence file first).
    cache : a ``VerdictCache``, a path, ``None`` (default ``<out_dir>/.cache/verdicts.sqlite`` or
        ``$AXON_EVAL_CACHE``) or ``False`` (no cache).
    limit : judge only the first ``limit`` valid turns (all of their segments); invalid lines are
        always all reported.
    seed : recorded in the manifest and params. The run itself is deterministic given the judge;
        stochastic judges carry their own seed in their spec (``noise(heuristic, sd=1, seed=3)``).
    figures : write the standard figures (score distribution, dimensions, caps) into ``figures/``.
    chunk_size : segments judged per ``judge_many`` call (progress granularity; verdicts of finished
        chunks are kept in a failed run's ``verdicts.jsonl``).

    A segment whose judgement failed is kept as ``status == "unjudged"`` with its error and ``NaN``
    scores. Any exception after the folder exists marks the manifest ``failed`` and is re-raised.
    """
    started = utc_now()
    rubric = Rubric.resolve(rubric)
    if row_horizon is not None:
        rubric = rubric.replace(row_horizon=int(row_horizon))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
    judge = resolve_judge(judge)
    files = [Path(p) for p in input_files]
    invalid_list = _invalid_dicts(invalid)
    if isinstance(turns, str | Path):
        path = Path(turns)
        turn_list, bad = load_turns(path)
        invalid_list = _invalid_dicts(bad) + invalid_list
        files = [path, *[f for f in files if f != path]]
    else:
        turn_list = list(turns)
    for t in turn_list:
        if not isinstance(t, Turn):
            raise TypeError(f"turns must be Turn objects or an evidence file path; got {type(t).__name__}")
    if limit is not None:
        turn_list = turn_list[: int(limit)]
    if out_dir is not None:
        out = Path(out_dir)
    elif run_dir is not None:
        out = Path(run_dir).parent
    else:
        out = default_runs_dir()
    call_params = {
        "turns_file": str(files[0]) if files else None,
        "judge": judge_label(judge),
        "rubric": rubric.label,
        "row_horizon": rubric.row_horizon,
        "limit": None if limit is None else int(limit),
        "seed": seed,
        "name": name,
        "concurrency": concurrency,
    }
    merged_params = to_jsonable({**call_params, **dict(params or {})})
    input_hashes = {str(f): file_sha256(f) for f in files}

    folder, notebook = _prepare_dir(run_dir, out, name, judge_label(judge), started)
    git = git_info()
    manifest = RunManifest(
        run_id=folder.name, status="running", kind=kind, name=name, judge_id=judge.judge_id,
        judge_spec=getattr(judge, "spec", None), judge_model=judge.model, prompt_version=judge.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=_rubric_record(rubric),
        git_commit=git["commit"], git_dirty=git["dirty"], packages=package_versions(),
        input_files=input_hashes, turns_file=str(files[0]) if files else None,
        params=redact_secrets(merged_params), seed=seed, started_at=iso(started),
        counts=RunCounts(turns=len(turn_list), invalid=len(invalid_list)), source_run=source_run,
        notebook=notebook,
    )
    records: list[JudgeRecord] = []
    try:
        write_json(folder / "params.json", redact_secrets(merged_params))
        manifest.write(folder)
        (folder / "figures").mkdir(exist_ok=True)
        items: list[_Item] = []
        views: list[EvidenceView] = []
        for turn in turn_list:
            facts = trajectory_facts(turn).to_dict()
            for segment in split_segments(turn):
                view = render_view(segment, rubric.row_horizon)
                views.append(view)
                items.append(_Item.from_view(view, turn, facts))
        with _open_cache(cache, out) as cache_obj:
            cache_file = getattr(cache_obj, "path", None) if cache_obj is not None else None
            manifest.cache_path = str(cache_file) if cache_file is not None else None
            before = _cache_counts(cache_obj)
            bar = _progress(len(views), judge.judge_id, progress)
            try:
                for start in range(0, len(views), chunk_size):
                    chunk = views[start:start + chunk_size]
                    records.extend(judge.judge_many(chunk, concurrency=concurrency, cache=cache_obj,
                                                    progress=False))
                    if bar is not None:
                        bar.update(len(chunk))
            finally:
                if bar is not None:
                    bar.close()
            after = _cache_counts(cache_obj)
        samples = (len(records) // len(views)) if views else 1
        if views and samples * len(views) != len(records):
            raise RuntimeError(f"judge returned {len(records)} records for {len(views)} views")
        results, audit = _score_all(items, records, samples, rubric)
        _write_outputs(folder, results, records, audit, invalid_list, rubric, figures)
        if before is not None and after is not None:
            manifest.cache_hits, manifest.cache_misses = after[0] - before[0], after[1] - before[1]
        elif cache_obj is not None:
            manifest.cache_hits = sum(r.cached for r in records)
            manifest.cache_misses = len(records) - manifest.cache_hits
        for key, value in _usage(records).items():
            setattr(manifest, key, value)
        manifest.counts = _counts(len(turn_list), results, len(invalid_list))
        manifest.status = "complete"
        manifest.ended_at = iso(utc_now())
        manifest.write(folder)
    except BaseException as exc:
        _fail(folder, manifest, exc, records, invalid_list)
        raise
    return Run(run_dir=folder, manifest=manifest, params=manifest.params, results=results,
               verdicts=records, audit=audit, invalid=invalid_list)


def _progress(total: int, label: str, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"judging [{label}]", unit="segment")


# ============================================================================================
# Re-judge and re-score
# ============================================================================================
def _locate_input(recorded: str, workdir: str) -> Path:
    p = Path(recorded)
    if p.is_absolute() or p.exists():
        return p
    return Path(workdir) / p


def rejudge(
    run_folder: str | Path,
    judge: Judge | str,
    *,
    rubric: Rubric | str | Path | None = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    cache: VerdictCache | str | Path | bool | None = None,
    concurrency: int = 8,
    progress: bool = True,
    figures: bool = True,
) -> Run:
    """Judge the same captured evidence as ``run_folder`` again with another ``judge``: a new run.

    The evidence file recorded in the source run is re-read and must still have the recorded SHA-256
    (``InputChangedError`` otherwise). The source's rubric (row horizon included) and ``limit`` are
    reused unless ``rubric`` is given. The new run's manifest names the source in ``source_run``.
    """
    source = RunManifest.read(run_folder)
    turns_file = source.turns_file
    if not turns_file or turns_file not in source.input_files:
        raise InputChangedError(f"run {run_folder} recorded no evidence file with a hash "
                                f"(turns_file={turns_file!r}, input_files={list(source.input_files)}); "
                                "cannot re-judge its evidence")
    path = _locate_input(turns_file, source.workdir)
    if not path.exists():
        raise InputChangedError(f"evidence file {turns_file!r} of run {run_folder} is gone (looked at {path})")
    actual, expected = file_sha256(path), source.input_files[turns_file]
    if actual != expected:
        raise InputChangedError(f"evidence file {path} changed since run {run_folder}: SHA-256 {actual} "
                                f"!= recorded {expected}")
    if rubric is None:
        if source.rubric is None:
            raise ValueError(f"run {run_folder} recorded no rubric; pass one")
        rubric_obj = Rubric.model_validate(source.rubric)
    else:
        rubric_obj = Rubric.resolve(rubric)
    turns, invalid = load_turns(path)
    folder = Path(run_folder)
    params = {k: v for k, v in source.params.items() if k not in {"run_dir"}}
    params.update({"source_run": str(folder)})
    return evaluate(
        turns, judge, rubric_obj, invalid=invalid,
        out_dir=out_dir if out_dir is not None else folder.parent,
        name=name or f"rejudge-{source.name}", params=params, input_files=[path],
        cache=cache, concurrency=concurrency, limit=source.params.get("limit"), seed=source.seed or 0,
        progress=progress, figures=figures, kind="rejudge", source_run=str(folder),
    )


def rescore(
    run_folder: str | Path,
    rubric: Rubric | str | Path,
    *,
    out_dir: str | Path | None = None,
    name: str | None = None,
    figures: bool = True,
) -> Run:
    """Score the stored verdicts of ``run_folder`` under ``rubric``: a new run, no judge calls at all.

    Segments, trajectory facts and evidence come from the source's ``audit.jsonl``, verdicts from its
    ``verdicts.jsonl``. Rescoring with the same rubric reproduces the source's scores exactly. A rubric
    with another row horizon or prompt version is allowed but noted in ``manifest.warnings``: the
    verdicts were given on the source's views.
    """
    started = utc_now()
    rubric = Rubric.resolve(rubric)
    source = load_run(run_folder)
    sm = source.manifest
    if sm.status != "complete":
        raise ValueError(f"run {run_folder} has status {sm.status!r}; only a complete run can be rescored")
    items_by_key = {(a["segment_id"], a["sample_index"]): _Item.from_audit(a) for a in source.audit}
    missing = [(r.segment_id, r.sample_index) for r in source.verdicts
               if (r.segment_id, r.sample_index) not in items_by_key]
    if missing:
        raise ValueError(f"run {run_folder}: verdicts without audit entries: {missing[:5]}")
    warnings: list[str] = []
    if sm.rubric is not None:
        src_rubric = Rubric.model_validate(sm.rubric)
        if src_rubric.row_horizon != rubric.row_horizon:
            warnings.append(f"rubric row_horizon {rubric.row_horizon} differs from the {src_rubric.row_horizon} "
                            "rows the judge saw; verdicts were not re-judged")
        if src_rubric.prompt_version != rubric.prompt_version:
            warnings.append(f"rubric prompt_version {rubric.prompt_version!r} differs from the judge's "
                            f"{src_rubric.prompt_version!r}; verdicts were not re-judged")
    name = name or f"rescore-{sm.name}"
    out = Path(out_dir) if out_dir is not None else source.run_dir.parent
    folder = new_run_dir(out, name, sm.judge_spec or sm.judge_id, now=started)
    git = git_info()
    params = {**{k: v for k, v in source.params.items() if k != "run_dir"},
              "rubric": rubric.label, "row_horizon": rubric.row_horizon, "name": name,
              "source_run": str(source.run_dir)}
    manifest = RunManifest(
        run_id=folder.name, status="running", kind="rescore", name=name, judge_id=sm.judge_id,
        judge_spec=sm.judge_spec, judge_model=sm.judge_model, prompt_version=sm.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=_rubric_record(rubric),
        git_commit=git["commit"], git_dirty=git["dirty"], packages=package_versions(),
        input_files=dict(sm.input_files), turns_file=sm.turns_file, params=redact_secrets(to_jsonable(params)), seed=sm.seed,
        started_at=iso(started), counts=RunCounts(turns=sm.counts.turns, invalid=len(source.invalid)),
        source_run=str(source.run_dir), warnings=warnings, cache_hits=0, cache_misses=0, cost_usd=0.0,
    )
    try:
        write_json(folder / "params.json", manifest.params)
        manifest.write(folder)
        rows, audit = [], []
        for record in source.verdicts:
            row, entry = _score_pair(items_by_key[(record.segment_id, record.sample_index)], record, rubric)
            rows.append(row)
            audit.append(entry)
        results = _results_frame(rows)
        _write_outputs(folder, results, source.verdicts, audit, source.invalid, rubric, figures)
        manifest.counts = _counts(sm.counts.turns, results, len(source.invalid))
        manifest.status = "complete"
        manifest.ended_at = iso(utc_now())
        manifest.write(folder)
    except BaseException as exc:
        _fail(folder, manifest, exc, source.verdicts, source.invalid)
        raise
    return Run(run_dir=folder, manifest=manifest, params=manifest.params, results=results,
               verdicts=list(source.verdicts), audit=audit, invalid=list(source.invalid))
