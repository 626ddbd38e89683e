"""What every check returns (:class:`CheckResult`) and the trajectory facts they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .evidence_index import Evidence


# =============================================================================================
# Check results
# =============================================================================================
@dataclass
class CheckResult:
    """One dimension's subscore (0-10, or ``None``) with the findings that explain it."""

    score: int | None
    findings: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)


def _clamp(x: float) -> int:
    return int(max(0, min(10, round(x))))


def _facts(evidence: Evidence) -> dict[str, bool]:
    executed = [s for s in evidence.steps if s.step.status in ("ok", "error", "timeout")]
    failed = [s.step.status in ("error", "timeout") for s in executed]
    return {"all_failed": bool(executed) and all(failed),
            "ended_on_failure": bool(executed) and failed[-1],
            "only_blocked": bool(evidence.steps) and not executed}


