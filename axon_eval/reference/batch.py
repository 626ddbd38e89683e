"""``grade_reference(..., batch=True)``: the uncached responses graded through one Anthropic Message Batch.

The network part is evaluate's (:func:`axon_eval.runs.batch.run_batches`): ``custom_id`` = the grade key
(:func:`.records.grade_cache_key`, 64 hex characters); batch state files in the registry beside the cache
(``<cache folder>/batches/``, :func:`~axon_eval.runs.batch.registry_dir`) and the run folder's
``batch.json``, written *before* polling, so an interrupted run started again with the same inputs resumes
polling the same batch instead of paying again; a batch that was collected is marked so. This module only
turns responses into batch requests and batch results into :class:`~.grading.Judgement` s:

* a ``succeeded`` result is parsed like an online reply
  (:meth:`.claude.ClaudeReferenceJudge.judgement_from_message`), tokens from the result's usage, cost at
  the batch discount of ``judges/prices.yaml``, ``extra["batch_id"]``; the grade is then derived and
  cached by :func:`.run.grade_responses` exactly as online;
* ``errored``, ``expired`` and ``canceled`` results (and a request missing from the results) are error
  judgements, so error grades of kind ``judge`` naming the reason (never a fail, never cached);
* with ``max_cost_usd`` only the requests whose estimated batch-price cost fits are submitted, in input
  order; the rest are ``budget`` error grades.

Only the Claude reference judge can batch (:func:`batch_judge`); the heuristic makes no API call and is
refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runs.batch import run_batches
from .evidence import Evidence
from .grading import Judgement
from .spec import Question

KIND = "reference"


@dataclass
class BatchOptions:
    """Where a reference batch is recorded and how it is polled.

    registry : the batch registry folder (``None``: ``<cache folder>/batches``, which needs a cache).
    folder : the run folder (its ``batch.json``; ``manifest`` is written there), or ``None``.
    manifest : the run's :class:`~axon_eval.runs.manifest.RunManifest` (``batch`` is set), or ``None``.
    poll_interval / timeout : seconds between polls / before ``TimeoutError`` (the batch stays recorded).
    """

    registry: Path | None = None
    folder: Path | None = None
    manifest: Any = None
    poll_interval: float = 30.0
    timeout: float = 25 * 3600.0


def batch_judge(judge: Any) -> Any:
    """``judge`` when it can grade through Message Batches (a Claude reference judge), else ``ValueError``."""
    from .claude import ClaudeReferenceJudge

    if isinstance(judge, ClaudeReferenceJudge):
        return judge
    raise ValueError(f"batch mode needs an anthropic:<model> reference judge (Message Batches are an Anthropic API); "
                     f"{getattr(judge, 'judge_id', judge)!r} makes no API call: grade without --batch")


def judge_in_batch(judge: Any, pending: Sequence[tuple[Question, Evidence, str, str]],
                   estimates: Sequence[float | None], *, options: BatchOptions,
                   max_cost_usd: float | None = None) -> tuple[dict[str, Judgement], set[str]]:
    """Judge ``pending`` (``(question, evidence, response, grade key)``, input order) through the batch
    machinery; returns ``({key: judgement}, keys the budget kept from being submitted)``. Responses sharing a
    key share one request. ``estimates`` are the batch-price estimates of ``pending``."""
    judge = batch_judge(judge)
    if options.registry is None:
        raise ValueError("batch mode needs a registry folder for its state files (a grade cache or "
                         "BatchOptions.registry), so an interrupted batch can be resumed instead of paid twice")
    item_of: dict[str, tuple[Question, Evidence, str]] = {}
    estimate_of: dict[str, float] = {}
    for (q, ev, text, key), estimate in zip(pending, estimates, strict=True):
        if key not in item_of:
            item_of[key] = (q, ev, text)
            estimate_of[key] = estimate or 0.0
    over_budget: set[str] = set()

    def within_budget(todo: list[str]) -> list[str]:
        planned, kept = 0.0, []
        for key in todo:
            if planned + estimate_of[key] > max_cost_usd:
                over_budget.update(todo[len(kept):])
                break
            planned += estimate_of[key]
            kept.append(key)
        return kept

    judged: dict[str, Judgement] = {}

    def on_result(key: str, result: Any, batch_id: str) -> None:
        judged[key] = judge.judgement_from_batch_result(result, batch_id)

    run_batches(judge, list(item_of), lambda k: judge.reference_params(*item_of[k], for_batch=True), on_result,
                registry=Path(options.registry), folder=options.folder, manifest=options.manifest,
                poll_interval=options.poll_interval, timeout=options.timeout,
                select=within_budget if max_cost_usd is not None else None, kind=KIND)
    for key in item_of:
        if key not in judged and key not in over_budget:
            judged[key] = Judgement(None, error="judge error: no result for this request in any batch")
    return judged, over_budget


__all__ = ["BatchOptions", "batch_judge", "judge_in_batch"]
