"""The offline heuristic reference judge: every criterion assessed by code from the response text and
the reference values (no model). Named ``heuristic-reference/v1``.

* ``value`` criteria: the numbers of the response whose unit fits the reference (percent or not) are
  candidates; the one closest to the reference (allowing for a flipped sign or a power-of-ten slip) is
  reported as the claim, and the criterion passes only when code finds it within tolerance;
* ``phrases`` criteria: pass with the first sentence holding a phrase of every group, else fail;
* ``forecast`` criteria: an effect with a stated assumption passes; a projected figure with no stated
  assumption is unverifiable from the evidence; no effect at all fails.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import lru_cache

from ..judges.heuristic.text import extract_numbers, split_sentences
from .evidence import Evidence
from .grading import Assessment, Judgement, JudgeOutput, NumericClaim
from .numeric import check_claim
from .spec import Criterion, Question

_ASSUMPTION = ("assum", "if ", "provided", "proxy", "estimate")


def _sentences(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in split_sentences(text) if text[a:b].strip()]


_SLIPS = (1.0, 10.0, 100.0, 1000.0, 1e6, 0.1, 0.01, 0.001, 1e-6)


def _closeness(x: float, ref: float) -> float:
    """Distance in orders of magnitude, allowing a power-of-ten slip (at a cost of 0.05) and a flipped
    sign (0.001), so a mis-scaled or mis-signed copy of the figure is still recognised as the claim."""
    if ref == 0 or x == 0:
        return abs(x - ref)
    best = min(abs(math.log10(abs(x) * s / abs(ref))) + (0.0 if s == 1.0 else 0.05) for s in _SLIPS)
    return min(best, 9.0) + (0.0 if (x > 0) == (ref > 0) else 0.001)


@lru_cache(maxsize=1)
def heuristic_reference_code() -> str:
    """Short SHA-256 of this module's source: part of the judge's prompt version and configuration, so an
    edited rule is never served a grade cached by the previous code."""
    from .records import source_sha256

    return source_sha256("axon_eval.reference.heuristic")[:10]


class HeuristicReferenceJudge:
    """Code only: no model, no tokens, no cost (``cost_usd`` stays ``None``: no API call was made)."""

    judge_id = "heuristic-reference/v1"
    model = "heuristic-reference"

    @property
    def prompt_version(self) -> str:
        return f"heuristic-reference-v1+{heuristic_reference_code()}"

    def config(self) -> dict[str, str]:
        return {"judge_id": self.judge_id, "code": heuristic_reference_code()}

    def estimate_cost_usd(self, question: Question, evidence: Evidence, response: str) -> float | None:
        """Free: ``None`` (no API call)."""
        return None

    def judge_many(self, requests: Sequence[tuple[Question, Evidence, str]], *,
                   concurrency: int = 1) -> list[Judgement]:
        """One :class:`Judgement` per ``(question, evidence, response)``, in order (``concurrency`` unused:
        the rules run in microseconds)."""
        out = []
        for question, evidence, response in requests:
            start = time.perf_counter()
            try:
                output = self.assess(question, evidence, response)
            except Exception as exc:  # a rule that crashes is a visible judge error, never a grade
                out.append(Judgement(None, error=f"judge error: {type(exc).__name__}: {exc}",
                                     latency_ms=(time.perf_counter() - start) * 1000.0))
                continue
            out.append(Judgement(output, latency_ms=(time.perf_counter() - start) * 1000.0))
        return out

    def assess(self, question: Question, evidence: Evidence, response: str) -> JudgeOutput:
        out = JudgeOutput(self.judge_id)
        sentences = _sentences(response)
        for c in question.criteria:
            if c.kind == "value":
                out.assessments.append(self._value(c, question, evidence, response, sentences, out))
            elif c.kind == "phrases":
                out.assessments.append(self._phrases(c, sentences))
            else:
                out.assessments.append(self._forecast(c, sentences))
        return out

    # -- criteria ------------------------------------------------------------------------------------------
    def _value(self, c: Criterion, q: Question, ev: Evidence, response: str, sentences: list[str],
               out: JudgeOutput) -> Assessment:
        value = q.value(c.value or "")
        ref = ev.values[value.id]
        pct = value.unit == "percent"
        taken = {c.token for c in out.claims}  # a figure already claimed for another value is not reused
        cands = [m for m in extract_numbers(response) if not m.ordinal and not m.word and not m.is_year
                 and (m.kind in ("percent", "pp", "bps")) == pct and m.token not in taken]
        if not cands:
            return Assessment(c.id, "fail", reason=f"no {value.unit} figure for {value.name} in the response")
        best = min(cands, key=lambda m: (_closeness(m.value, ref), m.start))
        unit = (best.kind or "percent") if pct else value.unit
        out.claims.append(NumericClaim(best.token, value.id, unit))
        check = check_claim(response, best.token, value, ref, unit)
        quote = next((s for s in sentences if best.token in s), best.token)
        if check.within_tolerance or check.imprecise:  # code turns an imprecise pass into review_required
            return Assessment(c.id, "pass", quote=quote)
        return Assessment(c.id, "fail", reason=f"{value.name}: reported {best.token} against reference {ref:g} "
                                               f"({check.error}, {check.rule})")

    def _phrases(self, c: Criterion, sentences: list[str]) -> Assessment:
        for s in sentences:
            low = s.lower()
            if all(any(p.lower() in low for p in group) for group in c.groups):
                return Assessment(c.id, "pass", quote=s)
        return Assessment(c.id, "fail", reason=f"missing: {c.text}")

    def _forecast(self, c: Criterion, sentences: list[str]) -> Assessment:
        effect = [s for s in sentences if all(any(p.lower() in s.lower() for p in g) for g in c.groups)]
        if not effect:
            return Assessment(c.id, "fail", reason=f"missing: {c.text}")
        for s in effect:
            if any(w in s.lower() for w in _ASSUMPTION):
                return Assessment(c.id, "pass", quote=s)
        return Assessment(c.id, "unverifiable", quote=effect[0],
                          reason="a projected effect with no stated assumption cannot be checked against the evidence")
