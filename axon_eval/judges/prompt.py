"""Versioned judge prompts, loaded by version name from ``axon_eval/judges/prompts/<version>.md``.

A prompt file is immutable once used: changing its text means adding a new file with a new version
name (``judge_v2``) and pointing the rubric's ``prompt_version`` at it. The test suite pins the SHA-256
of each released prompt, so an edit without a version bump fails.

Each version has a structured form (``<version>.md``: the reply is the JSON object the output schema
requires) and may have a free-text form (``<version>_free_text.md``: the same rubric, the reply in prose
stating the four grades and the verdict, parsed by code). A judge in ``mode="free_text"`` loads
``<version>`` + :data:`FREE_TEXT_SUFFIX`.

Identity: a prompt is its text. A judge records the prompt as ``<name>+<hash>`` (:attr:`JudgePrompt.identity`),
``<hash>`` the first :data:`PROMPT_HASH_CHARS` hex characters of the SHA-256 of the UTF-8 text, e.g.
``judge_v1+5d297cf15da8``. That string is the judge's ``prompt_version`` and sits in its ``judge_id``, so
the verdict cache key, a calibration record's staleness check and every report see an edited text as
another prompt, whatever its file is called. A prompt may also come from a file outside the package
(:func:`load_prompt_file`, the judge option ``prompt_file`` and the spec form ``prompt(<spec>,
file=<path>)``); its name is ``file:<file stem>`` and its identity the same ``+<hash>``, so two files with
the same text are the same prompt and an edited file is a new one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

_VERSION_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Appended to a prompt version to name its free-text form (``judge_v1`` -> ``judge_v1_free_text``).
FREE_TEXT_SUFFIX = "_free_text"


#: Hex characters of the prompt text's SHA-256 in a judge's prompt identity (12 hex = 48 bits -- two different
#: texts share a prefix with probability about 2**-48 per pair).
PROMPT_HASH_CHARS = 12
#: Prefix of the name of a prompt read from a file outside the package (``file:<stem>``).
FILE_PROMPT_PREFIX = "file:"


@dataclass(frozen=True)
class JudgePrompt:
    """A loaded system prompt: ``version`` name, ``text``, hex ``sha256`` of the UTF-8 text, and ``path``
    (the file it was read from when it is outside the package, else ``None``)."""

    version: str
    text: str
    sha256: str
    path: str | None = None

    @property
    def short_hash(self) -> str:
        """The first :data:`PROMPT_HASH_CHARS` hex characters of :attr:`sha256`."""
        return self.sha256[:PROMPT_HASH_CHARS]

    @property
    def identity(self) -> str:
        """``<version>+<short_hash>``: the prompt version a judge records (see the module docstring)."""
        return f"{self.version}+{self.short_hash}"


def text_sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_name(identity: str) -> str:
    """The name part of a prompt identity (``judge_v1+5d297cf15da8`` -> ``judge_v1``); a bare name is returned
    as it is."""
    name, plus, digest = identity.rpartition("+")
    return name if plus and re.fullmatch(r"[0-9a-f]+", digest) else identity


def available_prompt_versions() -> list[str]:
    """The names of the prompts shipped with the package, sorted."""
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
    return JudgePrompt(version, text, text_sha256(text))


def load_prompt_file(path: str | Path) -> JudgePrompt:
    """The prompt in the file ``path`` (UTF-8 text), named ``file:<stem>``. Read on every call (no cache): an
    edited file is a new prompt. ``ValueError`` naming the path when it is missing, not a file, not UTF-8 or
    blank."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"prompt file {str(file)!r} does not exist or is not a file; expected a UTF-8 text file "
                         "holding the judge's system prompt")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"prompt file {str(file)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ValueError(f"prompt file {str(file)!r} is blank; expected the judge's system prompt")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", file.stem).strip("-") or "prompt"
    return JudgePrompt(FILE_PROMPT_PREFIX + stem, text, text_sha256(text), str(file.resolve()))
