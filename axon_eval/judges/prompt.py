"""Versioned judge prompts, loaded by version name from ``axon_eval/judges/prompts/<version>.md``.

A prompt file is immutable once used: changing its text means adding a new file with a new version
name (``judge_v2``) and pointing the rubric's ``prompt_version`` at it. The test suite pins the SHA-256
of each released prompt, so an edit without a version bump fails.

Each version has a structured form (``<version>.md``: the reply is the JSON object the output schema
requires) and may have a free-text form (``<version>_free_text.md``: the same rubric, the reply in prose
stating the four grades and the verdict, parsed by code). A judge in ``mode="free_text"`` loads
``<version>`` + :data:`FREE_TEXT_SUFFIX`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

_VERSION_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Appended to a prompt version to name its free-text form (``judge_v1`` -> ``judge_v1_free_text``).
FREE_TEXT_SUFFIX = "_free_text"


@dataclass(frozen=True)
class JudgePrompt:
    """A loaded system prompt: ``version`` name, ``text`` and hex ``sha256`` of the UTF-8 text."""

    version: str
    text: str
    sha256: str


def available_prompt_versions() -> list[str]:
    folder = resources.files("axon_eval.judges") / "prompts"
    return sorted(p.name.removesuffix(".md") for p in folder.iterdir() if p.name.endswith(".md"))


@lru_cache(maxsize=16)
def load_prompt(version: str) -> JudgePrompt:
    """Load the prompt ``version``; ``ValueError`` naming the available versions when it does not exist."""
    if not _VERSION_NAME.match(version or ""):
        raise ValueError(f"invalid prompt version name {version!r}")
    ref = resources.files("axon_eval.judges") / "prompts" / f"{version}.md"
    if not ref.is_file():
        raise ValueError(f"no judge prompt {version!r}; available: {available_prompt_versions()}")
    text = ref.read_text(encoding="utf-8")
    return JudgePrompt(version, text, hashlib.sha256(text.encode("utf-8")).hexdigest())
