"""The options of one evaluation, as one typed record built and validated once (:class:`EvaluationOptions`).

``runs.evaluate(turns, options)`` takes it; ``runs.evaluate(turns, judge, rubric, limit=8, ...)`` builds it
from keyword arguments (:meth:`EvaluationOptions.build`), so the CLI, notebook 01, ``rejudge``/``rerun``
and the API share one source of defaults: the field defaults below. An unknown option is a ``TypeError``
naming it, the closest valid name and every valid one; a value of the wrong type or range is a
``ValueError`` naming the option, what was given and what is accepted (the choices of a closed set).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class EvaluationOptions(BaseModel):
    """Everything but the evidence that shapes an evaluation run (see :func:`axon_eval.runs.evaluate`).

    judge: a judge object or spec string (``heuristic``, ``anthropic:<model>``, ...); rubric: a Rubric, a
    packaged name or a YAML path (``None``: ``axon-v1``); row_horizon: replaces the rubric's row horizon
    (rows, >= 1); cache: a ``VerdictCache``, a path, ``None`` (the default cache) or ``False`` (none);
    concurrency: judgements in flight (>= 1); limit: the first N valid turns (>= 0, ``None``: all); seed:
    recorded in the manifest; chunk_size: segments per step (>= 1); batch / batch_poll_s /
    batch_timeout_s: Anthropic Message Batches and their polling (seconds, > 0); max_cost_usd: the
    budget in US dollars (>= 0, ``None``: none); output: out_dir, run_dir, name, params, input_files,
    compress_audit, progress; kind / source_run: what made the run (``rejudge`` sets them); workers /
    scheduler / client: a partitioned run on a new local Dask cluster of that many worker processes, on
    an existing scheduler's cluster, or through a ``distributed.Client`` already made (``None``, and no
    ``$DASK_SCHEDULER_ADDRESS``: one process); partition_bytes: the evidence file's partition size
    (bytes, cut on line boundaries; default :func:`~axon_eval.runs.partitioned.default_partition_bytes`).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    judge: Any = None
    rubric: Any = None
    row_horizon: int | None = Field(default=None, ge=1)
    cache: Any = None
    concurrency: int = Field(default=8, ge=1)
    limit: int | None = Field(default=None, ge=0)
    seed: int = 0
    chunk_size: int = Field(default=512, ge=1)
    batch: bool = False
    batch_poll_s: float = Field(default=30.0, gt=0)
    batch_timeout_s: float = Field(default=25 * 3600.0, gt=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    out_dir: str | Path | None = None
    run_dir: str | Path | None = None
    name: str = "evaluate"
    params: Mapping[str, Any] | None = None
    input_files: tuple[str | Path, ...] = ()
    compress_audit: bool = False
    progress: bool = True
    kind: Literal["evaluate", "rejudge"] = "evaluate"
    source_run: str | None = None
    workers: int | None = Field(default=None, ge=1)
    scheduler: str | None = None
    client: Any = None
    partition_bytes: int | None = Field(default=None, ge=1)

    @field_validator("row_horizon", "concurrency", "limit", "seed", "chunk_size", "workers", "partition_bytes",
                     mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        """A count is a whole number: ``True`` or ``2.5`` is refused (pydantic would take ``True`` as 1)."""
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("expected a whole number")
        return value

    @field_validator("max_cost_usd", "batch_poll_s", "batch_timeout_s", mode="before")
    @classmethod
    def _real_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, float) and math.isnan(value)):
            raise ValueError("expected a number")
        return value

    @classmethod
    def names(cls) -> list[str]:
        """Every option name, in declaration order."""
        return list(cls.model_fields)

    @classmethod
    def build(cls, options: EvaluationOptions | None = None, **values: Any) -> EvaluationOptions:
        """``options`` (default: every default) with ``values`` laid over it, validated once.

        Raises
        ------
        TypeError
            An unknown name (the message gives the closest valid one).
        ValueError
            A bad value (the message names the option).
        """
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, cls.model_fields, n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise TypeError(f"unknown evaluation option(s) {', '.join(hints)}; valid options: "
                            f"{', '.join(cls.model_fields)}")
        base = {k: getattr(options, k) for k in cls.model_fields} if options is not None else {}
        merged = {**base, **values}
        if isinstance(merged.get("input_files"), str | Path):
            merged["input_files"] = (merged["input_files"],)
        elif merged.get("input_files") is not None and not isinstance(merged["input_files"], tuple):
            merged["input_files"] = tuple(merged["input_files"])
        try:
            return cls(**merged)
        except ValidationError as exc:
            raise ValueError("; ".join(_describe(e) for e in exc.errors())) from None


def _describe(error: Mapping[str, Any]) -> str:
    """One pydantic error as ``option 'limit': <what is accepted>, got -1``."""
    name = ".".join(str(p) for p in error.get("loc", ())) or "?"
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    return f"evaluation option {name!r}: {message}, got {error.get('input')!r}"


#: The defaults every caller shares (the CLI's argument defaults are read from here).
DEFAULTS = EvaluationOptions()
