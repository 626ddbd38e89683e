"""Numeric claims checked by code: the reported token is a figure written in the response, it parses
(sign, separators, k/M/bn, %, pp), the declared unit converts to the reference unit, and the difference
is within tolerance. Pure.

The token is found in the response after normalisation (:func:`axon_eval.figures.normalise_text`:
``7.10 %``, ``7.10 per cent`` and ``7.10%`` are one token) or as the same figure (same value, shown
precision and kind: ``1.2 million`` for ``1.2M``); a token that is neither is ``token_missing``.

Tolerance rule, in order:

1. the explicit absolute tolerance of the reference value when the question gives one:
   ``|converted - reference| <= tolerance``;
2. else the displayed precision of the claim (:func:`axon_eval.figures.displayed_match`): the reference
   rounded to the claim's shown digits must give the claim, ``|converted - reference| <= h`` with ``h``
   half a unit of its last digit (times its scale: ``$490.6k`` -> 50); an abbreviation is rounded,
   never truncated (``$1M`` does not show 1,999,999). When that holds but the claim is not within the
   relative fallback (1% of the reference, :data:`~axon_eval.figures.RELATIVE_TOLERANCE`) the check is
   ``imprecise``: shown too coarsely to verify (``$1M`` for 1,400,000), neither verified nor wrong;
3. else (a spelled number, no displayed precision) the relative fallback, 1% of the reference.

``error`` is ``None`` for a verified claim, else one of :data:`FAILURES` (the response is wrong),
:data:`NOT_VERIFIED` (the judge cited a token the code cannot check: its output does not verify) or
``imprecise``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..figures import (IMPRECISE, MATCH, RELATIVE_TOLERANCE, describe_imprecision, displayed_match,
                       normalise_text, same_value, shows, within_relative)
from ..judges.heuristic.text import NumberMention, extract_numbers
from .spec import ReferenceValue

#: errors that mean the response's figure is wrong (the grade fails)
FAILURES = ("unit", "sign", "scale", "out_of_tolerance")
#: errors that mean the judge cited a token the code cannot check (the judge output does not verify)
NOT_VERIFIED = ("token_missing", "unparseable")
#: the error of a claim that rounds to the reference but is too coarse to verify (review required)
IMPRECISE_ERROR = IMPRECISE

#: declared unit -> (reference units it converts to, factor into the reference unit)
_CONVERT: dict[str, dict[str, float]] = {
    "percent": {"percent": 1.0},
    "pp": {"percent": 1.0},
    "bps": {"percent": 0.01},
    "fraction": {"percent": 100.0},
    "currency": {"currency": 1.0},
    "count": {"count": 1.0, "days": 1.0},
    "days": {"days": 1.0, "count": 1.0},
}
_SCALES = (10.0, 100.0, 1000.0, 1e6, 0.1, 0.01, 0.001, 1e-6)


@dataclass(frozen=True)
class NumericCheck:
    reference_id: str
    token: str
    declared_unit: str
    reference: float | None
    reported: float | None
    converted: float | None
    rule: str
    tolerance: float | None
    difference: float | None
    within_tolerance: bool
    #: None when within tolerance, else token_missing | unparseable (:data:`NOT_VERIFIED`), unit | sign |
    #: scale | out_of_tolerance (:data:`FAILURES`) or imprecise
    error: str | None = None
    #: for an imprecise check, why the claim is too coarse (its half-unit against the reference)
    note: str = ""

    @property
    def failed(self) -> bool:
        """The response's figure is wrong (sign, scale, unit, out of tolerance)."""
        return self.error in FAILURES

    @property
    def imprecise(self) -> bool:
        """The figure rounds to the reference but is shown too coarsely to verify it."""
        return self.error == IMPRECISE_ERROR

    @property
    def not_verified(self) -> bool:
        """The judge's token is not a figure of the response (or not one figure): nothing was checked."""
        return self.error in NOT_VERIFIED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_token(token: str) -> NumberMention | None:
    """The single number written in ``token`` (the whole token), else None."""
    found = [m for m in extract_numbers(token) if not m.ordinal]
    if len(found) != 1:
        return None
    m = found[0]
    return m if m.token.strip() == token.strip() or token.strip().startswith(m.token) else None


def written_in(response: str, token: str) -> bool:
    """Is ``token`` a figure written in ``response``? Either its normalised text is the normalised text of
    a number of the response, or it parses to the same figure as one (same value, shown precision, kind
    and spelling: ``7.10 per cent`` for ``7.10%``, ``1.2 million`` for ``1.2M``). A whole number only:
    ``42`` is not in ``420`` nor in ``-42``."""
    if not token.strip():
        return False
    mentions = extract_numbers(response)
    wanted = normalise_text(token)
    if any(normalise_text(m.token) == wanted for m in mentions):
        return True
    claim = parse_token(token)
    return claim is not None and any(
        same_value(m.value, claim.value) and same_value(m.tolerance, claim.tolerance) and m.kind == claim.kind
        and m.word == claim.word and not m.ordinal for m in mentions)


def _fail(value: ReferenceValue, token: str, unit: str, reference: float | None, error: str,
          reported: float | None = None) -> NumericCheck:
    return NumericCheck(value.id, token, unit, reference, reported, None, "", None, None, False, error)


def check_claim(response: str, token: str, value: ReferenceValue, reference: float,
                declared_unit: str) -> NumericCheck:
    """Check one numeric claim: ``token`` as reported in ``response``, mapped to ``value`` (reference
    figure ``reference``) in ``declared_unit``."""
    if not written_in(response, token):
        return _fail(value, token, declared_unit, reference, "token_missing")
    m = parse_token(token)
    if m is None:
        return _fail(value, token, declared_unit, reference, "unparseable")
    factors = _CONVERT.get(declared_unit, {})
    written_pct = m.kind in ("percent", "pp", "bps")
    if value.unit not in factors or written_pct != (declared_unit in ("percent", "pp", "bps")) \
            or (m.kind and m.kind != declared_unit and not (m.kind == "percent" and declared_unit == "pp")):
        return _fail(value, token, declared_unit, reference, "unit", m.value)
    converted = m.value * factors[value.unit]
    note = ""
    if value.tolerance is not None:
        rule, tol = f"explicit absolute tolerance {value.tolerance:g}", float(value.tolerance)
        within, error = shows(converted, tol, reference), None
    elif not m.word:
        rule, tol = "displayed precision", m.tolerance * factors[value.unit]
        status = displayed_match(converted, tol, reference)
        within, error = status == MATCH, (IMPRECISE_ERROR if status == IMPRECISE else None)
        if error:
            note = describe_imprecision(token.strip(), tol, reference)
    else:
        rule = f"{100 * RELATIVE_TOLERANCE:g}% relative (no displayed precision)"
        tol = RELATIVE_TOLERANCE * abs(reference)
        within, error = within_relative(converted, reference), None
    diff = converted - reference
    if not within and error is None:
        slack = max(tol, RELATIVE_TOLERANCE * abs(reference))
        if reference != 0 and abs(-converted - reference) <= slack:
            error = "sign"
        elif reference != 0 and any(abs(converted * s - reference) <= max(tol * s, RELATIVE_TOLERANCE * abs(reference))
                                    for s in _SCALES):
            error = "scale"
        else:
            error = "out_of_tolerance"
    return NumericCheck(value.id, token, declared_unit, reference, m.value, converted, rule, tol,
                        round(diff, 6), within, error, note)


def check_value(token: str, reference: float, unit: str, *, tolerance: float | None = None,
                declared_unit: str | None = None) -> NumericCheck:
    """:func:`check_claim` of a bare token (the response is the token itself): for worked examples."""
    value = ReferenceValue(id="example", name="example", unit=unit, sql="SELECT NULL", tolerance=tolerance)
    return check_claim(token, token, value, reference, declared_unit or unit)
