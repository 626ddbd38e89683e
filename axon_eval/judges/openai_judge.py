"""OpenAI-compatible judge: ``openai:<model>[@<base_url>][#free_text]`` through ``openai.AsyncOpenAI``.

Request: ``client.chat.completions.create`` with a system message (the versioned prompt), a user
message (preamble + rendered evidence view) and ``response_format={"type": "json_schema",
"json_schema": {"name": "verdict", "schema": verdict_json_schema(), "strict": True}}``. Same records,
retries, range checks and truncation handling as the Claude judge (``finish_reason == "length"`` ->
error record; a ``refusal`` -> error record).

Free-text mode (``mode="free_text"``, spec ``openai:<model>[@<base_url>]#free_text``): the system
message is ``prompts/<version>_free_text.md``, no ``response_format`` is sent, and the prose reply is
parsed by :func:`~.base.parse_free_text_verdict` (an unparseable reply is an error record).

Endpoint and key (rules in :mod:`._llm`): the endpoint is ``base_url`` (spec ``openai:<model>@<url>``),
else ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``; a non-default endpoint enters the judge id
(``,base=<url>``). ``OPENAI_API_KEY`` is sent only to ``api.openai.com`` (https) or to a host allowed by
``allow_key_hosts`` / ``AXON_EVAL_KEY_HOSTS`` (missing there -> :class:`MissingApiKey` at build time).
A loopback server (vLLM, llama.cpp, Ollama, LM Studio on this machine usually need no key) gets the
dummy key ``"no-key-needed"``; any other server gets no ``Authorization`` header at all. Off the
provider's endpoint the ``OpenAI-Organization`` / ``OpenAI-Project`` headers (from ``OPENAI_ORG_ID`` /
``OPENAI_PROJECT_ID``) are not sent either.

Tokens: OpenAI's ``prompt_tokens`` include cached tokens; the record's ``input_tokens`` is
``prompt_tokens - cached_tokens`` and ``cache_read_tokens`` is ``cached_tokens`` (no cache writes).
"""

from __future__ import annotations

from typing import Any

import openai

from ..view import EvidenceView
from ._llm import USER_PREAMBLE, Completion, LLMJudge
from .base import verdict_json_schema
from .prices import TokenUsage

DUMMY_KEY_FOR_BASE_URL = "no-key-needed"
#: Given to the SDK (which insists on a key) when no key is sent; removed from every request.
NO_KEY_PLACEHOLDER = "no-key-sent"


class OpenAIJudge(LLMJudge):
    """``openai:<model>[@<base_url>][#free_text]``; options as :class:`~._llm.LLMJudge`."""

    provider = "openai"
    connection_errors = (openai.APIConnectionError,)
    default_base_url = "https://api.openai.com/v1"
    base_url_env = "OPENAI_BASE_URL"
    api_key_env = "OPENAI_API_KEY"
    provider_key_hosts = frozenset({"api.openai.com"})
    dummy_key = DUMMY_KEY_FOR_BASE_URL

    def __repr__(self) -> str:
        return f"OpenAIJudge({self.judge_id!r})"

    def _new_client(self, http_client: Any) -> openai.AsyncOpenAI:
        kwargs = self._client_kwargs(http_client)
        if self._api_key is None:
            kwargs["api_key"] = NO_KEY_PLACEHOLDER
        return openai.AsyncOpenAI(**kwargs)

    def _request_headers(self) -> dict[str, Any]:
        """Per-request header overrides: no account headers off the provider, no auth when no key."""
        headers: dict[str, Any] = {}
        if self._endpoint_host not in self.provider_key_hosts:
            headers.update({"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()})
        if self._api_key is None:
            headers["Authorization"] = openai.Omit()
        return headers

    def _status_of(self, exc: BaseException) -> int | None:
        return exc.status_code if isinstance(exc, openai.APIStatusError) else None

    def request_params(self, view: EvidenceView) -> dict[str, Any]:
        """The ``chat.completions.create`` keyword arguments for ``view`` (free-text mode: no
        ``response_format``), with the header overrides of the key rules as ``extra_headers``."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "messages": [{"role": "system", "content": self.prompt.text},
                         {"role": "user", "content": USER_PREAMBLE + view.text}],
        }
        if self.mode == "structured":
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "verdict", "schema": verdict_json_schema(), "strict": True}}
        headers = self._request_headers()
        if headers:
            params["extra_headers"] = headers
        return params

    async def _complete(self, view: EvidenceView) -> Completion:
        response = await self.client().chat.completions.create(**self.request_params(view))
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        cached = 0
        if usage is not None and usage.prompt_tokens_details is not None:
            cached = int(usage.prompt_tokens_details.cached_tokens or 0)
        tokens = TokenUsage(
            input_tokens=max(0, int(usage.prompt_tokens or 0) - cached) if usage else 0,
            output_tokens=int(usage.completion_tokens or 0) if usage else 0,
            cache_read_tokens=cached,
        )
        if choice is None:
            return Completion(text=None, stop_reason=None, truncated=False, usage=tokens, request_id=response.id)
        message = choice.message
        return Completion(text=message.content, stop_reason=choice.finish_reason,
                          truncated=choice.finish_reason == "length", usage=tokens,
                          refusal=getattr(message, "refusal", None), request_id=response.id)
