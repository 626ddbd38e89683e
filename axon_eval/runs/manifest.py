"""``manifest.json``: what a run folder claims about itself, its statuses and the exit codes they map to.

Statuses
--------
``running``
    written first, before any work; a folder left ``running`` was killed hard.
``complete``
    every segment was judged (every sample of it, for a repeated judge).
``partial``
    some segments are unjudged (judge errors, or the cost budget ran out): they are rows with
    ``status == "unjudged"`` and their reason, never scores of 0.
``failed``
    no segment was judged, the input held no valid turn, or the run raised; what it had is kept.
``interrupted``
    stopped by Ctrl-C: what was judged is kept (results, verdicts, audit), the tokens and cost spent are
    recorded, and ``counts.planned_segments`` says how many segments the run set out to judge; running the
    same command again reuses the cached verdicts.

A run that failed because its disk filled says so in its error, with the space it needs to finish, and
``evaluate --resume`` finishes it once space is freed.

Spend: ``input_tokens`` ... ``cost_usd`` and ``verdicts_paid`` are the sums of the run's paid journals
(:mod:`~axon_eval.runs.journal`) over every attempt (a run killed, interrupted or failed, then
resumed), so no spend vanishes from the record; a Message Batches run, which writes no journal, records
its own sums.

Exit codes (the CLI's ``evaluate``, ``run``, ``rejudge``, ``rerun`` and ``make run`` all use these)
---------------------------------------------------------------------------------------------------
===  =====================================================================================
0    ``complete``: every segment judged (invalid input lines allowed unless ``--strict``)
1    the run or notebook raised (status ``failed`` with the error)
2    usage error: bad spec, unknown parameter, missing file, ...; nothing was written
3    ``partial``: some segments unjudged
4    ``failed`` because no segment was judged
5    the input holds no valid turn
6    ``--strict`` and at least one input line is invalid (the run itself may be complete)
130  ``interrupted`` (Ctrl-C): one line says how much was judged and where the folder is
===  =====================================================================================
"""

from __future__ import annotations

import contextlib
import platform
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from .io import iso, utc_now, write_json
from .provenance import redact_secrets

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_NONE_JUDGED = 4
EXIT_NO_VALID_TURNS = 5
EXIT_INVALID_LINES = 6
#: Ctrl-C (128 + SIGINT), as a shell reports a process stopped by it.
EXIT_INTERRUPTED = 130

RunStatus = Literal["running", "complete", "partial", "failed", "interrupted"]
#: ``failure`` values a failed manifest may carry (why it failed), used by :func:`exit_code`.
FailureKind = Literal["error", "none_judged", "no_valid_turns", "budget"]


class NoValidTurnsError(ValueError):
    """The evidence holds no valid turn (empty, or every line invalid): there is nothing to judge."""

    def __init__(self, source: str, n_invalid: int, first: list[str] | None = None) -> None:
        self.source = source
        self.n_invalid = n_invalid
        shown = "".join(f"\n  {line}" for line in (first or [])[:5])
        more = f"\n  ... and {n_invalid - 5} more" if n_invalid > 5 else ""
        what = "is empty" if n_invalid == 0 else f"has {n_invalid} invalid line(s) and no valid turn"
        super().__init__(f"{source} {what}: nothing to judge{shown}{more}")


class RunCounts(BaseModel):
    """Counts of a run, in segments (never samples).

    ``judged + unjudged == segments``; a segment is *judged* when every one of its samples was judged.
    ``samples`` is the number of results rows (segments x samples per segment); ``unjudged_samples`` of
    them failed. ``invalid``: input lines that could not be used. ``planned_segments``: the segments the
    run set out to judge (the input's, within its limit), recorded when it was interrupted before it had
    written them all (``None`` otherwise: then ``segments`` are all of them).
    """

    model_config = ConfigDict(extra="forbid")

    turns: int = 0
    segments: int = 0
    judged: int = 0
    unjudged: int = 0
    invalid: int = 0
    samples: int = 0
    unjudged_samples: int = 0
    planned_segments: int | None = None

    @model_serializer(mode="wrap")
    def _omit_unset_plan(self, handler: Any) -> dict[str, Any]:
        """``planned_segments`` is written only when recorded (an interrupted run), so a finished run's
        counts read as before."""
        data = handler(self)
        if data.get("planned_segments") is None:
            data.pop("planned_segments", None)
        return data

    @property
    def total(self) -> int:
        """The segments the run was to judge -- ``planned_segments`` when recorded, else ``segments``."""
        return self.segments if self.planned_segments is None else self.planned_segments


class RunManifest(BaseModel):
    """``manifest.json`` of a run folder. Times are UTC ISO-8601 (``...Z``). Paths are relative to the
    repository root when they lie inside it."""

    model_config = ConfigDict(extra="forbid")

    manifest_version: int = 2
    run_id: str
    status: RunStatus
    failure: FailureKind | None = None
    kind: Literal["evaluate", "rejudge", "rescore", "notebook", "compare", "drift", "study", "reference"]
    name: str
    judge_id: str | None = None
    judge_spec: str | None = None
    judge_model: str | None = None
    judge_endpoint: str | None = Field(default=None, description="base URL the judge called (no credentials)")
    judge_local: bool | None = Field(default=None, description="the judge ran against a server on this machine")
    judge_provenance: list[dict[str, Any]] = Field(default_factory=list,
                                                   description="per LLM judge: provider, model, endpoint, key source")
    prompt_version: str | None = None
    rubric_id: str | None = None
    rubric_name: str | None = None
    rubric: dict[str, Any] | None = Field(default=None, description="name, version, weights, caps, bands, "
                                          "row_horizon, prompt_version")
    git_commit: str = "unknown"
    git_dirty: bool | Literal["unknown"] = "unknown"
    git_diff: str | None = Field(default=None, description="file in the run folder holding the dirty tree's diff")
    python: str = Field(default_factory=lambda: platform.python_version())
    packages: dict[str, str | None] = Field(default_factory=dict)
    input_files: dict[str, str] = Field(default_factory=dict, description="path -> SHA-256")
    turns_file: str | None = Field(default=None, description="the evidence file (a key of input_files)")
    workdir: str | None = Field(default=None, description="legacy (manifest v1): absolute working directory")
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
    verdicts_paid: int | None = Field(default=None, description="judgements paid for over every attempt (the "
                                      "paid journals, which the tokens and cost_usd above sum)")
    cache_write_failures: int | None = Field(default=None, description="verdicts the verdict cache failed to "
                                             "store (kept in the run's own verdicts and journal)")
    estimated_cost_usd: float | None = Field(default=None, description="estimate printed before a paid run")
    max_cost_usd: float | None = None
    batch: dict[str, Any] | None = Field(default=None, description="Message Batches: ids, status, pricing")
    source_run: str | None = None
    notebook: dict[str, Any] | None = None
    partitions: dict[str, Any] | None = Field(
        default=None, description="a partitioned run: partition bytes, engine, slots, partitions done/count")
    host: str | None = Field(default=None, description="the machine of the process that runs the run")
    pid: int | None = Field(default=None, description="the process that runs the run (while running)")
    heartbeat_at: str | None = Field(default=None, description="UTC time the running process last said it is alive")
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


def status_for(counts: RunCounts) -> tuple[RunStatus, FailureKind | None]:
    """The finished status of a run with these counts (see the module docstring)."""
    if counts.segments == 0 or counts.judged == 0:
        return "failed", ("no_valid_turns" if counts.turns == 0 else "none_judged")
    if counts.unjudged:
        return "partial", None
    return "complete", None


def exit_code(manifest: RunManifest, *, strict: bool = False) -> int:
    """The process exit code for a finished run (table in the module docstring)."""
    if manifest.status == "failed":
        return {"no_valid_turns": EXIT_NO_VALID_TURNS, "none_judged": EXIT_NONE_JUDGED}.get(
            manifest.failure or "error", EXIT_ERROR)
    if manifest.status == "partial":
        return EXIT_PARTIAL
    if manifest.status == "interrupted":
        return EXIT_INTERRUPTED
    if manifest.status == "running":  # a finished call never leaves this; treat as an error
        return EXIT_ERROR
    if strict and manifest.counts.invalid:
        return EXIT_INVALID_LINES
    return EXIT_OK


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run whose folder is kept, marked ``interrupted`` (a ``KeyboardInterrupt``, so code
    that does not know it still stops). ``judged`` of ``total`` segments were judged (``None``: unknown);
    ``cached``: whether the verdicts judged so far are in the verdict cache, so running again reuses them.
    :meth:`line` is the one line the command line prints."""

    def __init__(self, run_dir: str | Path, judged: int | None = None, total: int | None = None, *,
                 cached: bool = True, resumable: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.judged = judged
        self.total = total
        self.cached = cached
        self.resumable = resumable
        super().__init__(self.line())

    def line(self) -> str:
        """``interrupted: <k> of <n> segments judged; run the same command again ... (folder <X> is kept,
        marked interrupted)``; for a run ``evaluate --resume`` can finish, that command first."""
        done = ("" if self.judged is None else
                f" {self.judged} of {self.total if self.total is not None else '?'} segments judged;")
        again = ("run the same command again to reuse cached verdicts" if self.cached else
                 "run the same command again to judge them (nothing was cached: --no-cache)")
        if self.resumable:
            again = f"`python -m axon_eval evaluate --resume {self.run_dir}` finishes it in place, or {again}"
        return f"interrupted:{done} {again} (folder {self.run_dir} is kept, marked interrupted)"

    @classmethod
    def from_manifest(cls, run_dir: str | Path, manifest: RunManifest | None) -> RunInterrupted:
        """The interruption of the run in ``run_dir`` as its manifest records it (counts unknown without
        one, or when it never counted a segment)."""
        if manifest is None or not (manifest.counts.segments or manifest.counts.planned_segments):
            return cls(run_dir)
        return cls(run_dir, manifest.counts.judged, manifest.counts.total,
                   cached=manifest.cache_path is not None)


# -- is a running run still alive? ---------------------------------------------------------------------
#: A running run whose heartbeat is older than this (seconds) and whose process cannot be checked (it
#: ran on another machine) is shown as interrupted.
HEARTBEAT_STALE_S = 15 * 60


def process_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this machine."""
    import os

    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


def mark_alive(manifest: RunManifest) -> None:
    """Record this process (host and pid) as the one running the run, with a fresh heartbeat."""
    import os
    import socket
    from datetime import datetime, timezone

    manifest.host, manifest.pid = socket.gethostname(), os.getpid()
    manifest.heartbeat_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def effective_status(manifest: RunManifest, *, now: Any = None) -> str:
    """The manifest's status, except that a ``running`` run whose recorded process is gone (this host)
    or whose heartbeat is older than :data:`HEARTBEAT_STALE_S` (another host) is ``interrupted``: killed
    without finishing (``kill -9``, a lost machine). A run recorded before processes were recorded
    stays ``running``."""
    import socket
    from datetime import datetime, timezone

    if manifest.status != "running" or not manifest.pid:
        return manifest.status
    if manifest.host == socket.gethostname():
        return "running" if process_alive(manifest.pid) else "interrupted"
    beat = manifest.heartbeat_at or manifest.started_at
    try:
        then = datetime.fromisoformat(str(beat).replace("Z", "+00:00"))
    except ValueError:
        return "running"
    age = ((now or datetime.now(timezone.utc)) - then).total_seconds()
    return "interrupted" if age > HEARTBEAT_STALE_S else "running"


def read_existing_manifest(folder: Path) -> tuple[RunManifest | None, str | None]:
    """The manifest already in ``folder`` (the notebook runner's, or a study's) and ``None``, or ``None``
    and a warning saying why it could not be read (it is then replaced, and the run says so); ``(None,
    None)`` when there is none."""
    if not (folder / "manifest.json").exists():
        return None, None
    try:
        return RunManifest.read(folder), None
    except Exception as exc:  # a broken manifest is reported in the one that replaces it, never ignored
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
        return None, (f"the manifest.json already in {folder.name} could not be read ({reason.strip()}); it was "
                      "replaced, so what it recorded (the notebook, its parameters) is missing here")


def fail_run(folder: Path, manifest: RunManifest, exc: BaseException) -> None:
    """Mark a run failed, keeping whatever it had (never raises over the original error)."""
    manifest.status = "failed"
    manifest.failure = "no_valid_turns" if isinstance(exc, NoValidTurnsError) else "error"
    manifest.error = redact_secrets(f"{type(exc).__name__}: {exc}".strip())
    manifest.ended_at = iso(utc_now())
    with contextlib.suppress(Exception):
        manifest.write(folder)
