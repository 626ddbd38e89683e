"""What a run's judge was *not*: a simulated judge, or a server on this machine instead of the provider.

Every listing, trend and comparison of runs shows :func:`judge_disclosure`'s ``label`` beside the run, so
a reader never takes a simulated judge's numbers, or a local server's, for a real model's grading:

===============================================  =====================================================
``""``                                           a real judge (a provider's API, the heuristic, ...)
``"SIMULATED"``                                  the judge is simulated (``noise(...)``, ``simulated(...)``)
``"local server, not the provider"``             the judge called a server on this machine (loopback URL)
``"SIMULATED; local server, not the provider"``  both
===============================================  =====================================================

Read from a run manifest (the pydantic :class:`~axon_eval.runs.manifest.RunManifest` or its
``manifest.json`` dict) or any mapping of the same fields, e.g. a study's ``study.json``:

* simulated: the ``judge_id`` / ``judge_spec`` (or a ``judge_provenance`` entry's ``judge_id``) holds a
  marker of :data:`axon_eval.summaries.SIMULATED_MARKERS`, or the mapping says ``"simulated": true``;
* local server: ``judge_local`` is true, a ``judge_provenance`` entry is ``local`` or has a loopback
  ``endpoint``, ``judge_endpoint`` is a loopback URL, or the ``judge_id`` / ``judge_spec`` names one
  (``base=http://127.0.0.1:PORT``, ``@http://localhost:PORT``).

Pure: nothing is read from disk or the network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..summaries import is_simulated_judge
from ..urls import is_loopback_url

#: The label part of a simulated judge's run.
SIMULATED_LABEL = "SIMULATED"
#: The label part of a run judged against a server on this machine.
LOCAL_SERVER_LABEL = "local server, not the provider"
#: How the two parts are joined when both hold.
LABEL_SEPARATOR = "; "

_URL = re.compile(r"https?://(?:\[[0-9A-Fa-f:.]+\])?[^\s,;\[\]()\"'<>]*")


@dataclass(frozen=True)
class JudgeDisclosure:
    """What a run's judge was not. ``label`` is the text shown beside the run ("" when neither holds)."""

    simulated: bool
    local_server: bool
    #: ``"SIMULATED"``, ``"local server, not the provider"``, both joined by ``"; "``, or ``""``;
    #: derived from the two flags.
    label: str = field(init=False)

    def __post_init__(self) -> None:
        parts = [SIMULATED_LABEL] if self.simulated else []
        if self.local_server:
            parts.append(LOCAL_SERVER_LABEL)
        object.__setattr__(self, "label", LABEL_SEPARATOR.join(parts))

    def __bool__(self) -> bool:
        """True when there is something to disclose."""
        return self.simulated or self.local_server


def is_local_url(url: str | None) -> bool:
    """True when ``url`` (with or without a scheme) points at this machine: ``localhost``, a loopback
    address (``127.0.0.0/8``, ``::1``) or ``0.0.0.0``. False for ``None``, ``""`` and malformed text."""
    if not url:
        return False
    text = str(url).strip()
    return is_loopback_url(text if "//" in text else f"//{text}")


def _fields(manifest_like: Any) -> Mapping[str, Any]:
    if isinstance(manifest_like, Mapping):
        return manifest_like
    if hasattr(manifest_like, "model_dump"):
        return manifest_like.model_dump(mode="json")
    raise TypeError(f"judge_disclosure needs a RunManifest or a manifest mapping, not "
                    f"{type(manifest_like).__name__} {manifest_like!r:.80}")


def _truthy(value: Any) -> bool:
    """True for ``True`` and its JSON/CSV spellings (``"true"``, ``1``); False for missing and NaN."""
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes"}
    return value is True or (isinstance(value, (int, float)) and value == 1)


def judge_disclosure(manifest_like: Any) -> JudgeDisclosure:
    """What to disclose about the judge of the run ``manifest_like`` describes (see the module docstring).

    ``manifest_like`` is a :class:`~axon_eval.runs.manifest.RunManifest`, its ``manifest.json`` dict, or
    any mapping with some of the fields ``judge_id``, ``judge_spec``, ``judge_endpoint``, ``judge_local``,
    ``judge_provenance`` and ``simulated``; missing fields count as nothing to disclose. Raises
    ``TypeError`` naming the value for anything else.
    """
    m = _fields(manifest_like)
    provenance = [p for p in (m.get("judge_provenance") or ()) if isinstance(p, Mapping)]
    texts = [str(m.get(key) or "") for key in ("judge_id", "judge_spec")]
    texts += [str(p.get("judge_id") or "") for p in provenance]
    simulated = _truthy(m.get("simulated")) or is_simulated_judge(texts)
    local_server = (
        _truthy(m.get("judge_local"))
        or any(_truthy(p.get("local")) or is_local_url(p.get("endpoint")) for p in provenance)
        or is_local_url(m.get("judge_endpoint"))
        or any(is_local_url(url) for text in texts for url in _URL.findall(text))
    )
    return JudgeDisclosure(simulated=simulated, local_server=local_server)
