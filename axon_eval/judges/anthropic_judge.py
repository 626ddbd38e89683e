"""Claude judge: ``anthropic:<model>[@<base_url>][#free_text]`` through ``anthropic.AsyncAnthropic`` (SDK 2.x).

Request (``client.messages.create``):

* ``system``: the versioned prompt (``prompts/<version>.md``) as one text block carrying
  ``cache_control: {"type": "ephemeral"}``, so the shared prefix is written to the prompt cache once
  and read back on later calls (``usage.cache_creation_input_tokens`` / ``cache_read_input_tokens``);
* ``messages``: one user message with a short preamble and the rendered evidence view;
* ``output_config={"format": {"type": "json_schema", "schema": verdict_json_schema()}}``: structured
  outputs. The reply text is parsed by our own :func:`parse_verdict` (range checks: the API does not
  enforce ``minimum``/``maximum``);
* ``temperature`` and ``max_tokens`` are parameters; ``stop_reason == "max_tokens"`` gives an error record.
  SDK 2.14's ``messages.create`` has no typed sampling arguments (``temperature`` was removed from its
  signature and from the batch request type), so the default is ``temperature=None`` = not sent (the
  model's default sampling; ``judge_id`` says ``t=default``). A number is sent as a raw body field
  (``extra_body`` / the batch ``params``); a model that rejects it answers HTTP 400, which becomes a
  non-retryable error record.

Free-text mode (``mode="free_text"``, spec ``anthropic:<model>#free_text``): the system prompt is
``prompts/<version>_free_text.md``, no ``output_config`` is sent, and the prose reply is parsed by
:func:`~.base.parse_free_text_verdict` (an unparseable reply is an error record).

Endpoint and key (rules in :mod:`._llm`): the endpoint is ``base_url`` (spec
``anthropic:<model>@<url>``), else ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``; a
non-default endpoint enters the judge id (``,base=<url>``). ``ANTHROPIC_API_KEY`` is read from the
environment when the judge is built and sent only to ``api.anthropic.com`` (https) or to a host allowed
by ``allow_key_hosts`` / ``AXON_EVAL_KEY_HOSTS`` (missing there -> :class:`MissingApiKey` before any
work); a loopback endpoint gets the dummy key ``"local-server-no-key"``; any other endpoint gets no key
(the ``Authorization`` / ``X-Api-Key`` headers are removed, and the SDK's own credential discovery is
bypassed). The key is never written to records, logs or reprs.

Large runs: :meth:`AnthropicJudge.judge_batch` uses Message Batches (``custom_id`` = the verdict cache
key, 64 hex characters, which satisfies the API's ``^[a-zA-Z0-9_-]{1,64}$``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import anthropic

from ..view import EvidenceView
from ._llm import USER_PREAMBLE, Completion, LLMJudge
from .base import JudgeRecord, verdict_json_schema
from .prices import TokenUsage

LOCAL_DUMMY_KEY = "local-server-no-key"


def _completion_from_message(message: Any) -> Completion:
    text = "".join(getattr(b, "text", "") for b in (message.content or []) if getattr(b, "type", None) == "text")
    usage = message.usage
    tokens = TokenUsage(
        input_tokens=int(usage.input_tokens or 0),
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=int(usage.cache_read_input_tokens or 0),
        cache_creation_tokens=int(usage.cache_creation_input_tokens or 0),
    )
    stop = message.stop_reason
    refusal = (text or "stop_reason=refusal") if stop == "refusal" else None
    return Completion(text=text or None, stop_reason=stop, truncated=stop == "max_tokens", usage=tokens,
                      refusal=refusal, request_id=getattr(message, "_request_id", None) or message.id)


class AnthropicJudge(LLMJudge):
    """``anthropic:<model>[@<base_url>][#free_text]``; see the module docstring. Options as
    :class:`~._llm.LLMJudge` (``temperature`` defaults to ``None``: not sent)."""

    provider = "anthropic"
    connection_errors = (anthropic.APIConnectionError,)
    default_base_url = "https://api.anthropic.com"
    base_url_env = "ANTHROPIC_BASE_URL"
    api_key_env = "ANTHROPIC_API_KEY"
    provider_key_hosts = frozenset({"api.anthropic.com"})
    dummy_key = LOCAL_DUMMY_KEY

    def __init__(self, model: str, **options: Any) -> None:
        options.setdefault("temperature", None)
        super().__init__(model, **options)

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicJudge({self.judge_id!r})"

    def _new_client(self, http_client: Any) -> anthropic.AsyncAnthropic:
        kwargs = self._client_kwargs(http_client)
        if self._api_key is None:
            # An explicit (empty) key stops the SDK from reading ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN or a
            # profile; omitting both auth headers sends no credential at all.
            kwargs["api_key"] = ""
            kwargs["default_headers"] = {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}
        return anthropic.AsyncAnthropic(**kwargs)

    def _status_of(self, exc: BaseException) -> int | None:
        return exc.status_code if isinstance(exc, anthropic.APIStatusError) else None

    def request_params(self, view: EvidenceView, *, for_batch: bool = False) -> dict[str, Any]:
        """The ``messages.create`` keyword arguments for ``view``; with ``for_batch`` the ``params`` of a
        batch request (a plain body, so a temperature is a top-level field instead of ``extra_body``).
        Free-text mode sends no ``output_config``."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": self.prompt.text, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": USER_PREAMBLE + view.text}]}],
        }
        if self.mode == "structured":
            params["output_config"] = {"format": {"type": "json_schema", "schema": verdict_json_schema()}}
        return self._with_temperature(params, for_batch=for_batch)

    def _with_temperature(self, params: dict[str, Any], *, for_batch: bool) -> dict[str, Any]:
        """``params`` with the temperature, when one is set: a plain field in a batch request, and sent
        through ``extra_body`` online (SDK 2.14's ``messages.create`` has no typed ``temperature``; see
        the module docstring)."""
        if self.temperature is not None:
            if for_batch:
                params["temperature"] = self.temperature
            else:
                params["extra_body"] = {"temperature": self.temperature}
        return params

    async def _complete(self, view: EvidenceView) -> Completion:
        message = await self.client().messages.create(**self.request_params(view))
        return _completion_from_message(message)

    # -- Message Batches -------------------------------------------------------------------------------
    async def ajudge_batch(self, views: Sequence[EvidenceView], *, samples: int = 1, cache: Any = None,
                           poll_interval: float = 30.0, timeout: float = 24 * 3600.0) -> list[JudgeRecord]:
        """Judge ``views`` (x ``samples``) through one Message Batch; records in input order.

        Cache hits are served without submitting. Requests are deduplicated by cache key (identical
        views share one request). The batch is polled every ``poll_interval`` seconds until
        ``processing_status == "ended"``; results arrive in any order and are matched by
        ``custom_id``. ``errored``, ``expired`` and ``canceled`` results, and requests missing from the
        results, become error records. If ``timeout`` seconds pass first, the batch is cancelled and
        the unfinished requests become error records. Submission failures give error records for all.
        Every record carries ``extra["batch_id"]``; costs use the batch discount.
        """
        jobs = [(v, s) for v in views for s in range(samples)]
        keys = [self.cache_key(v, s) for v, s in jobs]
        out: list[JudgeRecord | None] = [None] * len(jobs)
        pending: dict[str, list[int]] = {}
        for i, ((view, s), key) in enumerate(zip(jobs, keys, strict=True)):
            hit = cache.get(key) if cache is not None else None
            if hit is not None:
                out[i] = hit.model_copy(update={"segment_id": view.segment_id, "cached": True, "cache_key": key})
            else:
                pending.setdefault(key, []).append(i)
        if not pending:
            return [r for r in out if r is not None]
        client = self.client()
        start = time.perf_counter()
        try:
            requests = [{"custom_id": key, "params": self.request_params(jobs[idx[0]][0], for_batch=True)}
                        for key, idx in pending.items()]
            batch = await client.messages.batches.create(requests=requests)
            batch_id = batch.id
            deadline = time.monotonic() + timeout
            while batch.processing_status != "ended":
                if time.monotonic() >= deadline:
                    await client.messages.batches.cancel(batch_id)
                    batch = await client.messages.batches.retrieve(batch_id)
                    if batch.processing_status != "ended":
                        raise TimeoutError(f"batch {batch_id} did not end within {timeout} s; cancel requested")
                    break
                await asyncio.sleep(poll_interval)
                batch = await client.messages.batches.retrieve(batch_id)
            results_host = urlsplit(batch.results_url or "").hostname
            if results_host is not None and results_host.lower() != self._endpoint_host:
                raise RuntimeError(f"batch {batch_id}: results_url names host {results_host!r}, not the judge's "
                                   f"endpoint {self.endpoint}; refusing to send credentials there")
            results: dict[str, Any] = {}
            async for line in await client.messages.batches.results(batch_id):
                results[line.custom_id] = line.result
        except Exception as exc:
            message = f"message batch failed: {self.describe_error(exc)}"
            for idx in pending.values():
                for i in idx:
                    view, s = jobs[i]
                    out[i] = self.error_record(view, s, message)
            return [r for r in out if r is not None]
        finally:
            await self.aclose()
        wall_ms = (time.perf_counter() - start) * 1000.0
        for key, idx in pending.items():
            result = results.get(key)
            for i in idx:
                view, s = jobs[i]
                extra = {"batch_id": batch_id, "batch_wall_ms": round(wall_ms, 1)}
                if result is None:
                    rec = self.error_record(view, s, f"request {key} missing from the results of batch {batch_id}",
                                            extra=extra)
                elif result.type == "succeeded":
                    rec = self.record_from_completion(view, s, _completion_from_message(result.message),
                                                      latency_ms=None, batch=True, extra=extra)
                elif result.type == "errored":
                    err = result.error.error
                    rec = self.error_record(view, s, f"batch request errored: {err.type}: {err.message}",
                                            extra=extra)
                else:  # expired | canceled
                    rec = self.error_record(view, s, f"batch request {result.type} (batch {batch_id})", extra=extra)
                if rec.judged and cache is not None:
                    cache.put(key, rec, view_sha256=view.sha256)
                out[i] = rec
        return [r for r in out if r is not None]

    def judge_batch(self, views: Sequence[EvidenceView], *, samples: int = 1, cache: Any = None,
                    poll_interval: float = 30.0, timeout: float = 24 * 3600.0) -> list[JudgeRecord]:
        """Synchronous :meth:`ajudge_batch`."""
        from .base import run_sync

        return run_sync(lambda: self.ajudge_batch(views, samples=samples, cache=cache,
                                                  poll_interval=poll_interval, timeout=timeout))
