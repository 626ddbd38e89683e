"""OpenAI-compatible judge: ``openai:<model>[@<base_url>]`` through ``openai.AsyncOpenAI``.

Request: ``client.chat.completions.create`` with a system message (the versioned prompt), a user
message (preamble + rendered evidence view) and ``response_format={"type": "json_schema",
"json_schema": {"name": "verdict", "schema": verdict_json_schema(), "strict": True}}``. Same records,
retries, range checks and truncation handling as the Claude judge (``finish_reason == "length"`` ->
error record; a ``refusal`` -> error record).

Key: ``OPENAI_API_KEY`` from the environment. When a ``base_url`` is given (vLLM, llama.cpp, Ollama,
LM Studio and other local OpenAI-compatible servers usually need no key) and the variable is unset, the
dummy key ``"no-key-needed"`` is sent. Without both, :class:`MissingApiKey` is raised at build time.

Tokens: OpenAI's ``prompt_tokens`` include cached tokens; the record's ``input_tokens`` is
``prompt_tokens - cached_tokens`` and ``cache_read_tokens`` is ``cached_tokens`` (no cache writes).
"""

from __future__ import annotations

import os
from typing import Any

import openai

from ..view import EvidenceView
from ._llm import USER_PREAMBLE, Completion, LLMJudge
from .base import MissingApiKey, verdict_json_schema
from .prices import TokenUsage

DUMMY_KEY_FOR_BASE_URL = "no-key-needed"


class OpenAIJudge(LLMJudge):
    """``openai:<model>[@<base_url>]``; options as :class:`~._llm.LLMJudge`."""

    provider = "openai"
    connection_errors = (openai.APIConnectionError,)

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            if not self.base_url:
                raise MissingApiKey(
                    f"judge {self.judge_id!r} needs the OPENAI_API_KEY environment variable (or a base_url "
                    "of an OpenAI-compatible server that needs no key)")
            key = DUMMY_KEY_FOR_BASE_URL
        self._api_key = key

    def __repr__(self) -> str:
        return f"OpenAIJudge({self.judge_id!r})"

    def _new_client(self, http_client: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(**self._client_kwargs(http_client))

    def _status_of(self, exc: BaseException) -> int | None:
        return exc.status_code if isinstance(exc, openai.APIStatusError) else None

    def request_params(self, view: EvidenceView) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "messages": [{"role": "system", "content": self.prompt.text},
                         {"role": "user", "content": USER_PREAMBLE + view.text}],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "verdict", "schema": verdict_json_schema(), "strict": True}},
        }

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
