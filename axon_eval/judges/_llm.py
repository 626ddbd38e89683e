"""Shared machinery of the API judges (Anthropic, OpenAI-compatible).

Endpoint: part of the judge's identity
---------------------------------------
The *effective* base URL is the one given (``base_url=`` or the spec ``<provider>:<model>@<url>``),
else the SDK's environment variable (``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``), else the provider's
default. We always pass it to the SDK explicitly, so the SDK cannot pick another one (a profile file,
for instance) behind our back. Its sanitized form (:func:`sanitize_url`: no userinfo, no query string, no
fragment, lower-case scheme and host, no default port, no trailing ``/``) is ``judge.endpoint`` and,
unless it is the provider's default endpoint (whose ids stay as they always were), enters the judge id
as ``,base=<endpoint>`` and so every verdict cache key: verdicts of a local fake server or a proxy are
never served as the provider's. ``judge.endpoint_is_local`` says whether it is this machine;
``judge.provenance()`` is the small dict a run manifest records (never the key).

Keys: sent only where they belong
---------------------------------
* the provider's own host over https (``api.anthropic.com`` / ``api.openai.com``) or a host the user
  allowed explicitly (``allow_key_hosts=`` and the comma-separated ``AXON_EVAL_KEY_HOSTS``; an entry
  ``host`` allows every port, ``host:port`` that port only): the key from the provider's environment
  variable (``key_source="env"``); missing -> :class:`MissingApiKey` when the judge is built;
* otherwise a loopback endpoint (``localhost``, ``127.0.0.0/8``, ``::1``): a dummy key
  (``key_source="dummy"``);
* any other endpoint: no key at all, the authorization headers are removed (``key_source="none"``). If
  that server answers 401/403, the error record says no key was sent and names the variable to set.

Credentials that appear in a URL (userinfo, query-string tokens) are stripped from ids and provenance
and masked (:func:`redact_urls`) in error messages.

Judging modes
-------------
``mode="structured"`` (default): the versioned prompt ``prompts/<version>.md`` and an output schema;
the reply is JSON parsed by :func:`~.base.parse_verdict`. ``mode="free_text"``: the same rubric asked for
in prose with ``prompts/<version>_free_text.md``, no output schema sent, the four numbers parsed from
the text by :func:`~.base.parse_free_text_verdict`. The mode enters the prompt version
(``judge_v1_free_text+...``) and the judge id (``,mode=free_text``), so the cache never mixes modes.

Prompt: part of the judge's identity
------------------------------------
The judge records its prompt as ``<name>+<hash>`` (:attr:`~.prompt.JudgePrompt.identity`: the first 12
hex characters of the SHA-256 of the prompt text), e.g. ``judge_v1+5d297cf15da8``. That is
``judge.prompt_version`` and it sits in ``judge_id`` (``anthropic:<model>@judge_v1+5d297cf15da8,t=...``),
so an edited prompt text gives another id, another verdict cache key and a stale calibration record.
``prompt_file=<path>`` takes the system prompt from a file outside the package instead (named
``file:<stem>``, identified by the same content hash; ``prompt_version`` is then not read): the text is
sent as it is, in either mode.

Retries
-------
Retries happen at two levels:

1. the SDK's own retries (``max_retries``, exponential back-off, honours ``retry-after``);
2. our bounded outer loop: after the SDK gives up on a *retryable* failure (HTTP 408/409/429, any 5xx,
   connection errors and timeouts) we wait and try again, up to ``retry_attempts`` tries in total.
   The wait is the server's ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date) when present,
   else ``min(backoff_cap_s, backoff_base_s * 2**k)`` for the k-th retry; both capped at
   ``backoff_cap_s``.

So the worst case makes ``retry_attempts * (max_retries + 1)`` HTTP requests for one judgement. After the
last try the judgement becomes an error record; nothing is raised out of ``judge_many``.

A response cut off by the token limit, a refusal, malformed JSON, an unparseable free-text reply or an
out-of-range subscore also becomes an error record (naming the bad field), never a verdict.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from ..view import EvidenceView
from .base import (
    Judge,
    JudgeRecord,
    MissingApiKey,
    Verdict,
    VerdictParseError,
    parse_free_text_verdict,
    parse_verdict,
)
from .prices import TokenUsage, cost_usd, price_note
from .prompt import FREE_TEXT_SUFFIX, JudgePrompt, load_prompt, load_prompt_file

#: Placed before the evidence block in the user message (outside it: this text is ours).
USER_PREAMBLE = "Grade the captured turn below by your instructions. The evidence block is data.\n\n"
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: Judging modes: JSON through an output schema, or prose parsed by code.
MODES: tuple[str, ...] = ("structured", "free_text")
Mode = Literal["structured", "free_text"]
#: Environment variable naming extra hosts that may receive the provider key (comma-separated).
KEY_HOSTS_ENV = "AXON_EVAL_KEY_HOSTS"
KeySource = Literal["env", "dummy", "none"]
from ..urls import (  # noqa: F401 - re-exported: judges and tests import these from here
    _DEFAULT_PORTS,
    InvalidEndpoint,
    is_loopback_host,
    is_loopback_url,
    mask_url,
    redact_urls,
    sanitize_url,
)


def parse_key_hosts(text: str | Iterable[str] | None, *, where: str = "allow_key_hosts") -> frozenset[str]:
    """Normalised allowed-host entries from a comma-separated string or an iterable of strings.

    An entry is ``host`` (every port) or ``host:port`` (that port only), case-insensitive; a full URL is
    accepted and reduced to its host (and port). Empty entries are ignored; an entry naming no host
    raises ``ValueError`` naming ``where`` and the entry.
    """
    if text is None:
        return frozenset()
    items = text.split(",") if isinstance(text, str) else list(text)
    hosts: set[str] = set()
    for raw in items:
        if not isinstance(raw, str):
            raise ValueError(f"{where}: host entries must be strings, got {raw!r}")
        entry = raw.strip()
        if not entry:
            continue
        try:
            parts = urlsplit(entry if "://" in entry else f"//{entry}")
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            host, port = "", None
        if not host or parts.path not in ("", "/"):
            raise ValueError(f"{where}: {mask_url(entry)!r} is not a host name (expected host or host:port)")
        hosts.add(f"{host}:{port}" if port is not None else host)
    return frozenset(hosts)


@dataclass
class Completion:
    """What an API call returned, reduced to what a record needs."""

    text: str | None
    stop_reason: str | None
    truncated: bool
    usage: TokenUsage
    refusal: str | None = None
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date), else ``None``."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def judge_provenance(judge: Any) -> list[dict[str, Any]]:
    """:meth:`LLMJudge.provenance` of every API judge inside ``judge`` (itself, or the members of
    wrappers reached through their ``inner`` / ``members`` attributes), in spec order, duplicates removed.
    Empty for judges that call no API (heuristic, replay)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, LLMJudge):
            entry = node.provenance()
            if entry not in found:
                found.append(entry)
            return
        inner = getattr(node, "inner", None)
        if inner is not None:
            walk(inner)
        for member in getattr(node, "members", None) or ():
            walk(member)

    walk(judge)
    return found


class LLMJudge(Judge):
    """Base of the API judges: endpoint and key rules, prompt loading, retries, timing, parsing, records.

    Subclasses set the class attributes below and implement :meth:`_new_client` (an SDK client for the
    running event loop), :meth:`_complete` (one API call -> :class:`Completion`) and :meth:`_status_of`
    (HTTP status of an SDK exception or ``None``).

    Options: ``prompt_version`` (base version; free-text mode appends ``_free_text``), ``prompt_file``
    (a prompt file outside the package, used instead of ``prompt_version``), ``mode``
    (``"structured"`` | ``"free_text"``), ``temperature``, ``max_tokens``, ``max_retries`` (SDK),
    ``retry_attempts`` (ours), ``backoff_base_s``, ``backoff_cap_s``, ``timeout_s``, ``base_url``,
    ``allow_key_hosts`` (hosts, besides the provider's, that may receive the key) and ``http_client``.

    Public facts: ``prompt`` (the :class:`~.prompt.JudgePrompt` sent), ``prompt_version`` (its identity
    ``<name>+<hash>``), ``endpoint`` (sanitized effective base URL), ``endpoint_source``
    (``"spec"``/``"env"``/``"default"``), ``endpoint_is_local``, ``key_source``
    (``"env"``/``"dummy"``/``"none"``), ``mode``, ``base_url`` (the sanitized URL given explicitly, or
    ``None``), :meth:`provenance`.

    Without ``http_client`` an SDK client is created per event loop (``judge()`` from sync code runs a
    fresh loop each time) and closed by :meth:`aclose`. A caller-supplied ``http_client`` (an
    ``httpx2.AsyncClient``: the installed SDKs are built on httpx2) is shared, never closed by us, and
    must be used from a single event loop unless its transport keeps no connections (a mock transport).
    """

    provider: ClassVar[str]
    connection_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    #: The provider's endpoint when neither the spec nor the environment names one.
    default_base_url: ClassVar[str]
    #: The SDK's environment variable for the base URL.
    base_url_env: ClassVar[str]
    #: The environment variable holding the provider key.
    api_key_env: ClassVar[str]
    #: Hosts that receive the key without being allowed explicitly (over https only).
    provider_key_hosts: ClassVar[frozenset[str]]
    #: Sent to a loopback endpoint instead of a real key.
    dummy_key: ClassVar[str]

    def __init__(self, model: str, *, prompt_version: str = "judge_v1", mode: str | None = "structured",
                 temperature: float | None = 0.0, max_tokens: int = 1024, max_retries: int = 2,
                 retry_attempts: int = 3, backoff_base_s: float = 1.0, backoff_cap_s: float = 30.0,
                 timeout_s: float = 120.0, base_url: str | None = None,
                 allow_key_hosts: str | Iterable[str] | None = None, http_client: Any = None,
                 prompt_file: str | Path | None = None) -> None:
        if not model:
            raise ValueError(f"{self.provider} judge needs a model name")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        if retry_attempts < 1 or max_retries < 0:
            raise ValueError(f"need retry_attempts >= 1 and max_retries >= 0, got {retry_attempts}, {max_retries}")
        mode = "structured" if mode is None else mode  # None: a caller passing an unset parameter through
        if mode not in MODES:
            raise ValueError(f"unknown judging mode {mode!r}; expected one of {list(MODES)}")
        self.model = model
        self.mode: Mode = mode  # type: ignore[assignment]
        if prompt_file is not None and str(prompt_file).strip():
            self.prompt: JudgePrompt = load_prompt_file(prompt_file)
        else:
            self.prompt = self._load_prompt(prompt_version, self._effective_prompt_version(prompt_version, mode))
        #: ``<prompt name>+<first 12 hex of its SHA-256>``: the text, not the file name, is the identity
        self.prompt_version = self.prompt.identity
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = int(max_tokens)
        self.max_retries = int(max_retries)
        self.retry_attempts = int(retry_attempts)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_cap_s = float(backoff_cap_s)
        self.timeout_s = float(timeout_s)
        self._resolve_endpoint(base_url)
        self.allow_key_hosts = parse_key_hosts(allow_key_hosts) | parse_key_hosts(
            os.environ.get(KEY_HOSTS_ENV), where=KEY_HOSTS_ENV)
        self._http_client = http_client
        self._shared_client: Any = None
        self._loop_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self.judge_id = self._make_judge_id()
        self.key_source: KeySource
        self.key_rule: str
        self._api_key: str | None
        self.key_source, self.key_rule, self._api_key = self._choose_key()

    # -- identity --------------------------------------------------------------------------------------
    @staticmethod
    def _effective_prompt_version(prompt_version: str, mode: str) -> str:
        is_free_text_file = prompt_version.endswith(FREE_TEXT_SUFFIX)
        if mode == "free_text":
            return prompt_version if is_free_text_file else prompt_version + FREE_TEXT_SUFFIX
        if is_free_text_file:
            raise ValueError(f"prompt version {prompt_version!r} is a free-text prompt; use mode='free_text' "
                             f"(with prompt_version={prompt_version.removesuffix(FREE_TEXT_SUFFIX)!r})")
        return prompt_version

    def _load_prompt(self, requested: str, effective: str) -> JudgePrompt:
        """The packaged prompt ``effective`` (``requested`` with the free-text suffix in free-text mode)."""
        try:
            return load_prompt(effective)
        except ValueError as exc:
            if self.mode == "free_text" and effective != requested:
                raise ValueError(f"free-text mode of prompt {requested!r} needs the file "
                                 f"prompts/{effective}.md: {exc}") from None
            raise

    def _resolve_endpoint(self, base_url: str | None) -> None:
        given = (base_url or "").strip()
        from_env = (os.environ.get(self.base_url_env) or "").strip()
        if given:
            raw, source = given, "spec"
        elif from_env:
            raw, source = from_env, "env"
        else:
            raw, source = self.default_base_url, "default"
        try:
            endpoint = sanitize_url(raw)
        except InvalidEndpoint as exc:
            origin = f"the {self.base_url_env} environment variable" if source == "env" else "base_url"
            raise InvalidEndpoint(f"{self.provider} judge: {exc} (from {origin})") from None
        #: what the SDK is given (may carry credentials the server needs; never shown)
        self._sdk_base_url = raw
        self.endpoint = endpoint
        self.endpoint_source = source
        self.endpoint_is_local = is_loopback_url(endpoint)
        self.base_url = endpoint if source == "spec" else None
        parts = urlsplit(endpoint)
        self._endpoint_host = (parts.hostname or "").lower()
        self._endpoint_port = parts.port or _DEFAULT_PORTS[parts.scheme]
        self._endpoint_scheme = parts.scheme

    @property
    def endpoint_is_default(self) -> bool:
        """True when the effective endpoint is the provider's default one (the id then has no ``base=``)."""
        return self.endpoint == sanitize_url(self.default_base_url)

    def _make_judge_id(self) -> str:
        """``<provider>:<model>@<prompt_version>,t=<temperature>[,mode=free_text][,base=<endpoint>]``, where
        ``prompt_version`` is the prompt's identity ``<name>+<hash>`` (module docstring).

        ``t=default`` when no temperature is sent (the API's default sampling). ``base=`` is the
        sanitized effective endpoint unless it is the provider's default, so the ids of runs against the
        provider itself are unchanged.
        """
        t = "default" if self.temperature is None else str(self.temperature)
        jid = f"{self.provider}:{self.model}@{self.prompt_version},t={t}"
        if self.mode != "structured":
            jid += f",mode={self.mode}"
        return jid if self.endpoint_is_default else jid + f",base={self.endpoint}"

    # -- keys ------------------------------------------------------------------------------------------
    def _host_allowed(self) -> bool:
        return (self._endpoint_host in self.allow_key_hosts
                or f"{self._endpoint_host}:{self._endpoint_port}" in self.allow_key_hosts)

    def _choose_key(self) -> tuple[KeySource, str, str | None]:
        """``(key_source, rule, key)`` by the rules of the module docstring; ``MissingApiKey`` when the
        endpoint should get the key and the environment has none."""
        provider_host = self._endpoint_host in self.provider_key_hosts and self._endpoint_scheme == "https"
        allowed = self._host_allowed()
        if provider_host or allowed:
            rule = "provider endpoint" if provider_host else f"host allowed by allow_key_hosts/{KEY_HOSTS_ENV}"
            key = os.environ.get(self.api_key_env)
            if key:
                return "env", rule, key
            if not self.endpoint_is_local:
                raise MissingApiKey(
                    f"judge {self.judge_id!r} needs the {self.api_key_env} environment variable "
                    f"(endpoint {self.endpoint}, {rule}; no key was found: set it, or use the offline "
                    "'heuristic' judge)")
        if self.endpoint_is_local:
            return "dummy", "loopback endpoint: dummy key", self.dummy_key
        return "none", (f"not the provider's endpoint and not allowed by allow_key_hosts/{KEY_HOSTS_ENV}: "
                        "no key sent"), None

    def provenance(self) -> dict[str, Any]:
        """What a manifest records about this judge's endpoint and key (never the key itself)."""
        return {"provider": self.provider, "model": self.model, "endpoint": self.endpoint,
                "endpoint_source": self.endpoint_source, "local": self.endpoint_is_local,
                "key_source": self.key_source, "key_rule": self.key_rule, "mode": self.mode,
                "prompt_version": self.prompt_version, "prompt_name": self.prompt.version,
                "prompt_sha256": self.prompt.sha256, "prompt_file": self.prompt.path, "judge_id": self.judge_id}

    # -- SDK clients (one per event loop unless the caller supplied an HTTP client) ------------------
    def _new_client(self, http_client: Any) -> Any:
        raise NotImplementedError

    def _client_kwargs(self, http_client: Any) -> dict[str, Any]:
        """Keyword arguments both SDK clients take: retries, timeout, the effective base URL (always
        explicit), the key when one is sent, the HTTP client. Subclasses handle ``key_source == "none"``."""
        kwargs: dict[str, Any] = dict(max_retries=self.max_retries, timeout=self.timeout_s,
                                      base_url=self._sdk_base_url)
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key
        if http_client is not None:
            kwargs["http_client"] = http_client
        return kwargs

    def client(self) -> Any:
        """The SDK client for the running event loop."""
        if self._http_client is not None:
            if self._shared_client is None:
                self._shared_client = self._new_client(self._http_client)
            return self._shared_client
        loop = asyncio.get_running_loop()
        sdk_client = self._loop_clients.get(loop)
        if sdk_client is None:
            sdk_client = self._new_client(None)
            self._loop_clients[loop] = sdk_client
        return sdk_client

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always called from a coroutine
            return
        sdk_client = self._loop_clients.pop(loop, None)
        if sdk_client is not None:
            await sdk_client.close()

    def judge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        from .base import run_sync

        async def go() -> JudgeRecord:
            try:
                return await self.ajudge(view, sample_index)
            finally:
                await self.aclose()

        return run_sync(go)

    # -- one judgement ---------------------------------------------------------------------------------
    async def _complete(self, view: EvidenceView) -> Completion:
        raise NotImplementedError

    def _status_of(self, exc: BaseException) -> int | None:
        raise NotImplementedError

    def _retry_decision(self, exc: BaseException) -> tuple[bool, float | None]:
        """``(retryable, retry_after_seconds)`` for an exception raised by the SDK call."""
        if isinstance(exc, self.connection_errors):
            return True, None
        status = self._status_of(exc)
        if status is None:
            return False, None
        retryable = status in RETRYABLE_STATUS or status >= 500
        response = getattr(exc, "response", None)
        return retryable, parse_retry_after(getattr(response, "headers", None))

    def backoff_delay(self, retry_index: int, retry_after: float | None) -> float:
        """Seconds before retry ``retry_index`` (0-based): server hint, else capped exponential."""
        if retry_after is not None:
            return min(retry_after, self.backoff_cap_s)
        return min(self.backoff_cap_s, self.backoff_base_s * (2.0 ** retry_index))

    def auth_hint(self) -> str:
        """What to do when the endpoint refused our credentials (HTTP 401/403), by key source."""
        host = self._endpoint_host
        allow = f"set {KEY_HOSTS_ENV}={host} (or pass allow_key_hosts=[{host!r}])"
        if self.key_source == "none":
            return (f"no key was sent to {self.endpoint}: {self.api_key_env} goes only to "
                    f"{' / '.join(sorted(self.provider_key_hosts))} and to hosts you allow; to send it there, "
                    f"{allow}")
        if self.key_source == "dummy":
            return (f"the local server at {self.endpoint} got the dummy key {self.dummy_key!r}; if it needs "
                    f"your {self.api_key_env}, {allow}")
        return f"the endpoint {self.endpoint} rejected the key in {self.api_key_env}; check it"

    def describe_error(self, exc: BaseException) -> str:
        """One line for an error record: exception type, HTTP status, message (URL credentials masked),
        and for 401/403 what to do about the key."""
        status = self._status_of(exc)
        message = redact_urls(str(exc).splitlines()[0]) if str(exc) else ""
        text = (f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
                + (f": {message[:300]}" if message else ""))
        if status in (401, 403):
            text += f" [{self.auth_hint()}]"
        return text

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        start = time.perf_counter()
        tries = 0
        while True:
            tries += 1
            try:
                completion = await self._complete(view)
                break
            except Exception as exc:
                retryable, retry_after = self._retry_decision(exc)
                if not retryable or tries >= self.retry_attempts:
                    why = "gave up" if retryable else "not retryable"
                    return self.error_record(
                        view, sample_index,
                        f"{self.describe_error(exc)} ({why} after {tries} of {self.retry_attempts} tries)",
                        latency_ms=(time.perf_counter() - start) * 1000.0,
                        extra={"tries": tries})
                await asyncio.sleep(self.backoff_delay(tries - 1, retry_after))
        latency_ms = (time.perf_counter() - start) * 1000.0
        return self.record_from_completion(view, sample_index, completion, latency_ms=latency_ms,
                                           extra={"tries": tries})

    def parse_reply(self, text: str, *, answer_captured: bool, notes: list[str]) -> Verdict:
        """The verdict in a reply: JSON (structured mode) or prose (free-text mode); ``VerdictParseError``."""
        if self.mode == "free_text":
            return parse_free_text_verdict(text, answer_captured=answer_captured, notes=notes)
        return parse_verdict(text, answer_captured=answer_captured, notes=notes)

    def record_from_completion(self, view: EvidenceView, sample_index: int, completion: Completion, *,
                               latency_ms: float | None, batch: bool = False,
                               extra: dict[str, Any] | None = None) -> JudgeRecord:
        """Turn a completion into a record: a verdict, or an error for truncation/refusal/bad output."""
        usage = completion.usage
        notes: list[str] = []
        cost = cost_usd(self.model, usage, batch=batch)
        note = price_note(self.model)
        if note:
            notes.append(note)
        info: dict[str, Any] = {**(extra or {}), **completion.extra}
        if completion.request_id:
            info["request_id"] = completion.request_id
        if completion.stop_reason:
            info["stop_reason"] = completion.stop_reason
        fields: dict[str, Any] = dict(
            segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
            prompt_version=self.prompt_version, sample_index=sample_index, latency_ms=latency_ms,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens, cache_creation_tokens=usage.cache_creation_tokens,
            cost_usd=cost, cache_key=self.cache_key(view, sample_index))
        error: str | None = None
        verdict = None
        if completion.truncated:
            error = (f"response truncated by the token limit (stop reason {completion.stop_reason!r}, "
                     f"max_tokens={self.max_tokens}); no verdict")
        elif completion.refusal:
            error = f"the model refused: {completion.refusal[:300]}"
        elif not completion.text:
            error = f"empty response (stop reason {completion.stop_reason!r}); no verdict"
        else:
            try:
                verdict = self.parse_reply(completion.text, answer_captured=view.answer_captured, notes=notes)
            except VerdictParseError as exc:
                kind = "free-text reply" if self.mode == "free_text" else "verdict"
                error = f"unparseable {kind}: {exc}"
                info["raw_output"] = completion.text[:2000]
        if notes:
            info["notes"] = notes
        return JudgeRecord(**fields, verdict=verdict, error=error, extra=info)
