"""Judges: grade one rendered evidence view into a verdict (four subscores, a band, an explanation).

Build judges from a spec string with :func:`build_judge` (``heuristic``, ``anthropic:<model>``,
``openai:<model>[@<base_url>]``, ``repeat(...)``, ``ensemble(...)``, ``replay(...)``, ``noise(...)``);
judge views with ``judge.judge(view)`` or ``judge.judge_many(views, cache=VerdictCache(path))``.
"""

from .base import (
    Judge,
    JudgeRecord,
    MissingApiKey,
    Verdict,
    VerdictParseError,
    cache_key,
    parse_verdict,
    run_sync,
    verdict_json_schema,
)
from .cache import CacheCorruptionWarning, CacheStats, VerdictCache
from .prices import TokenUsage, cost_usd
from .prompt import JudgePrompt, load_prompt, load_prompt_file
from .registry import VALID_FORMS, SpecError, build_judge, parse_spec, with_prompt_file

__all__ = [
    "VALID_FORMS",
    "CacheCorruptionWarning",
    "CacheStats",
    "Judge",
    "JudgePrompt",
    "JudgeRecord",
    "MissingApiKey",
    "SpecError",
    "TokenUsage",
    "Verdict",
    "VerdictCache",
    "VerdictParseError",
    "build_judge",
    "cache_key",
    "cost_usd",
    "load_prompt",
    "load_prompt_file",
    "with_prompt_file",
    "parse_spec",
    "parse_verdict",
    "run_sync",
    "verdict_json_schema",
]
