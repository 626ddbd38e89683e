"""``evaluate(..., batch=True)``: every uncached view of a run as one Anthropic Message Batch, resumable.

Message Batches cost half the normal price (``batch_discount`` in ``judges/prices.yaml``) and finish
within 24 hours. A batch that was submitted is paid for, so it must never be submitted twice:

1. the run's views are rendered and their verdict-cache keys computed (``custom_id`` = the key);
2. keys already in the verdict cache are served from it;
3. **resume**: every batch state file of this judge in the batch registry (``<cache folder>/batches/``)
   that is not yet collected and holds some of the still-missing keys is polled and collected first;
4. the keys still missing are submitted as one batch; its state (batch id, judge id, keys, time) is
   written to the registry and to the run folder's ``batch.json`` *before* polling starts, so an
   interrupted run, started again with the same inputs, resumes polling that batch instead of paying
   again;
5. results are matched by ``custom_id``; succeeded requests become records priced at the batch rate and
   are stored in the verdict cache; errored, expired or cancelled requests become error records
   (unjudged segments, never 0).

With ``max_cost_usd``, only the requests whose estimated batch-price cost (:mod:`.budget`) fits in the
budget are submitted, in input order; the rest are unjudged rows that say the budget stopped them.

Unlike the streamed path, batch mode holds the run's views in memory until the batch is collected (one
batch takes at most 100,000 requests, so this is bounded by the API's own limit).

Only ``anthropic:<model>`` and ``repeat(anthropic:<model>, n)`` judges can batch; other judges are refused
with a clear error before anything is written.

The generic part (the registry, state files, resume by keys, submit / poll / collect through the SDK) is
:func:`run_batches`; it knows nothing of views or verdicts and is shared with reference grading
(``axon_eval.reference.batch``), whose ``custom_id`` is the grade key.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..view import EvidenceView
from .budget import estimate_view_cost
from .io import atomic_write_text, iso, utc_now, write_json

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import JudgeRecord
    from .writer import Usage
    from .manifest import RunManifest


def batch_leaf(judge: Any) -> tuple[Any, int]:
    """``(anthropic leaf judge, samples per view)`` of a judge that can batch, else ``ValueError``."""
    from ..judges.anthropic_judge import AnthropicJudge

    if isinstance(judge, AnthropicJudge):
        return judge, 1
    inner = getattr(judge, "inner", None)
    if type(judge).__name__ == "RepeatJudge" and isinstance(inner, AnthropicJudge):
        return inner, int(judge.n)
    raise ValueError(f"batch mode needs an anthropic:<model> or repeat(anthropic:<model>, n) judge, got "
                     f"{getattr(judge, 'judge_id', judge)!r}")


def registry_dir(cache: Any, folder: Path) -> Path:
    """Where batch state files live: beside the verdict cache, else in the run folder's parent."""
    cache_path = getattr(cache, "path", None)
    base = Path(cache_path).parent if cache_path is not None else folder.parent / ".cache"
    path = base / "batches"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _read_states(registry: Path, judge_id: str) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in sorted(registry.glob("*.json")):
        try:
            state = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if state.get("judge_id") == judge_id and state.get("status") != "collected":
            out.append((p, state))
    return out


def _write_state(path: Path, state: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(state, indent=2) + "\n")


async def _poll_and_collect(leaf: Any, batch_id: str, poll_interval: float, timeout: float) -> dict[str, Any]:
    """Poll batch ``batch_id`` until it ends, then return ``{custom_id: result}``."""
    client = leaf.client()
    batch = await client.messages.batches.retrieve(batch_id)
    deadline = time.monotonic() + timeout
    while batch.processing_status != "ended":
        if time.monotonic() >= deadline:
            raise TimeoutError(f"batch {batch_id} did not end within {timeout:.0f} s; it is still recorded and "
                               "a restarted run resumes polling it")
        await asyncio.sleep(poll_interval)
        batch = await client.messages.batches.retrieve(batch_id)
    results: dict[str, Any] = {}
    async for line in await client.messages.batches.results(batch_id):
        results[line.custom_id] = line.result
    return results


async def _submit(leaf: Any, requests: list[dict[str, Any]]) -> str:
    batch = await leaf.client().messages.batches.create(requests=requests)
    return str(batch.id)


PRICING_NOTE = "Message Batches: batch_discount of judges/prices.yaml applied to every cost"


def batch_info(registry: Path) -> dict[str, Any]:
    """What a manifest's ``batch`` records before any batch was resumed or submitted."""
    return {"registry": str(registry), "resumed": [], "submitted": [], "requests": 0, "pricing": PRICING_NOTE}


def run_batches(leaf: Any, keys: Sequence[str], params_of: Callable[[str], dict[str, Any]],
                on_result: Callable[[str, Any, str], None], *, registry: Path, folder: Path | None = None,
                manifest: Any = None, poll_interval: float = 30.0, timeout: float = 25 * 3600.0,
                select: Callable[[list[str]], list[str]] | None = None, kind: str | None = None) -> dict[str, Any]:
    """The shared core of batch mode: get a result for every key of ``keys`` (``custom_id`` s, in input
    order, no duplicates) without ever paying twice; returns the ``info`` dict a manifest records
    (``registry``, ``resumed`` / ``submitted`` batch ids, ``requests`` submitted, ``pricing``).

    1. every uncollected state file of ``leaf.judge_id`` in ``registry`` holding some key still without a
       result is polled and collected first (resume), then marked ``collected``;
    2. the keys still without a result, narrowed by ``select`` (the budget; it returns the keys to submit),
       are submitted as one batch of ``{"custom_id": key, "params": params_of(key)}``; its state is written
       to ``registry`` and ``folder/batch.json`` before polling;
    3. every result is handed to ``on_result(key, result, batch_id)`` (``result`` is the SDK's result
       object: ``.type`` succeeded / errored / expired / canceled); keys not in ``keys`` are ignored.

    ``manifest.batch`` (when given) is set to ``info`` and written to ``folder`` as soon as a batch is
    resumed or submitted. Polling past ``timeout`` raises ``TimeoutError``; the state stays ``submitted``,
    so a restarted run resumes it. Runs its own event loop (:func:`~axon_eval.judges.base.run_sync`).
    """
    from ..judges.base import run_sync

    wanted = set(keys)
    done: set[str] = set()
    info = batch_info(registry)

    def record_info() -> None:
        if manifest is not None:
            manifest.batch = info
            if folder is not None:
                manifest.write(folder)

    async def collect(batch_id: str) -> None:
        results = await _poll_and_collect(leaf, batch_id, poll_interval, timeout)
        for key, result in results.items():
            if key in wanted:
                on_result(key, result, batch_id)
                done.add(key)

    async def network() -> None:
        try:
            for path, state in _read_states(registry, leaf.judge_id):
                if not (wanted - done).intersection(state.get("keys", [])):
                    continue
                info["resumed"].append(state["batch_id"])
                record_info()
                await collect(state["batch_id"])
                state.update(status="collected", collected_at=iso(utc_now()))
                _write_state(path, state)
            todo = [k for k in keys if k not in done]
            if select is not None:
                todo = select(todo)
            if todo:
                requests = [{"custom_id": k, "params": params_of(k)} for k in todo]
                batch_id = await _submit(leaf, requests)
                state = {"batch_id": batch_id, "judge_id": leaf.judge_id,
                         "run": str(folder) if folder is not None else None, "keys": todo,
                         "status": "submitted", "submitted_at": iso(utc_now())}
                if kind is not None:
                    state["kind"] = kind
                state_path = registry / f"{batch_id}.json"
                _write_state(state_path, state)  # before polling: an interruption now resumes, never resubmits
                if folder is not None:
                    write_json(folder / "batch.json", state)
                info["submitted"].append(batch_id)
                info["requests"] = len(requests)
                record_info()
                await collect(batch_id)
                state.update(status="collected", collected_at=iso(utc_now()))
                _write_state(state_path, state)
                if folder is not None:
                    write_json(folder / "batch.json", state)
        finally:
            await leaf.aclose()

    if keys:
        run_sync(network)
    if manifest is not None:
        manifest.batch = info
    return info


def _record(leaf: Any, view: EvidenceView, sample: int, result: Any, batch_id: str) -> JudgeRecord:
    from ..judges.anthropic_judge import _completion_from_message

    extra = {"batch_id": batch_id}
    if result is None:
        return leaf.error_record(view, sample, f"request missing from the results of batch {batch_id}", extra=extra)
    if result.type == "succeeded":
        return leaf.record_from_completion(view, sample, _completion_from_message(result.message),
                                           latency_ms=None, batch=True, extra=extra)
    if result.type == "errored":
        err = result.error.error
        return leaf.error_record(view, sample, f"batch request errored: {err.type}: {err.message}", extra=extra)
    return leaf.error_record(view, sample, f"batch request {result.type} (batch {batch_id})", extra=extra)


def judged_in_batch(judge: Any, chunks: Iterable[tuple[list[Any], list[EvidenceView], int]], *, cache: Any,
                    folder: Path, manifest: RunManifest, usage: Usage, poll_interval: float = 30.0,
                    timeout: float = 25 * 3600.0,
                    max_cost_usd: float | None = None) -> Iterator[tuple[list[Any], list[JudgeRecord], int]]:
    """Every chunk of ``chunks`` judged through one resumable Message Batch (module docstring).

    Nothing is sent before the first chunk is asked for; then every chunk is read, the batch is
    resumed or submitted and collected, and the chunks are handed on one by one as ``(items, records,
    n_turns)``, for :func:`~.judging.score_and_write` to score and write (``usage``, to which it adds
    each chunk, is read for the spend a budget message reports).
    """
    from .writer import BUDGET_ERROR

    leaf, samples = batch_leaf(judge)
    chunk_list = list(chunks)
    jobs = [(v, s) for _items, views, _n in chunk_list for v in views for s in range(samples)]
    keys = [leaf.cache_key(v, s) for v, s in jobs]
    ready, over_budget = _collect(leaf, jobs, keys, cache=cache, folder=folder, manifest=manifest, usage=usage,
                                  poll_interval=poll_interval, timeout=timeout, max_cost_usd=max_cost_usd)
    k = 0
    used: set[str] = set()
    for items, views, n_turns in chunk_list:
        records = []
        for view in views:
            for s in range(samples):
                key = keys[k]
                rec = ready.get(key)
                if rec is None and key in over_budget:
                    rec = leaf.error_record(view, s, BUDGET_ERROR.format(budget=max_cost_usd, spent=usage.spent))
                elif rec is None:
                    rec = leaf.error_record(view, s, "no result for this request in any batch")
                elif key in used:  # identical views share one request: its cost is counted once
                    rec = rec.model_copy(update={"segment_id": view.segment_id, "cached": True})
                elif rec.segment_id != view.segment_id:
                    rec = rec.model_copy(update={"segment_id": view.segment_id})
                used.add(key)
                records.append(rec)
                k += 1
        yield items, records, n_turns


def _collect(leaf: Any, jobs: Sequence[tuple[EvidenceView, int]], keys: Sequence[str], *, cache: Any, folder: Path,
             manifest: RunManifest, usage: Usage, poll_interval: float, timeout: float,
             max_cost_usd: float | None) -> tuple[dict[str, JudgeRecord], set[str]]:
    """The record of every key of ``jobs`` (``(view, sample)``, keyed by ``keys``) that the verdict cache
    or a batch holds (:func:`run_batches`: resumed first, the rest submitted within the budget), and the
    keys the budget left unsent."""
    ready: dict[str, JudgeRecord] = {}
    for (view, _s), key in zip(jobs, keys, strict=True):
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            ready[key] = hit.model_copy(update={"segment_id": view.segment_id, "cached": True, "cache_key": key})
    job_of = {}
    for job, key in zip(jobs, keys, strict=True):
        job_of.setdefault(key, job)
    missing = {k for k in keys if k not in ready}
    order = {}
    for i, key in enumerate(keys):
        order.setdefault(key, i)
    over_budget: set[str] = set()

    def within_budget(todo: list[str]) -> list[str]:
        """The prefix of ``todo`` whose estimated cost fits the budget; the rest are marked over budget."""
        planned = usage.spent
        kept = []
        for key in todo:
            cost = estimate_view_cost(leaf, job_of[key][0], batch=True) or 0.0
            if planned + cost > max_cost_usd:
                over_budget.update(todo[len(kept):])
                break
            planned += cost
            kept.append(key)
        return kept

    def on_result(key: str, result: Any, batch_id: str) -> None:
        view, s = job_of[key]
        rec = _record(leaf, view, s, result, batch_id)
        if rec.judged and cache is not None:
            cache.put(key, rec.model_copy(update={"cache_key": key}), view_sha256=view.sha256)
        ready[key] = rec

    todo_keys = sorted(missing, key=order.__getitem__)
    run_batches(leaf, todo_keys, lambda k: leaf.request_params(job_of[k][0], for_batch=True), on_result,
                registry=registry_dir(cache, folder), folder=folder, manifest=manifest,
                poll_interval=poll_interval, timeout=timeout,
                select=within_budget if max_cost_usd is not None else None)
    return ready, over_budget
