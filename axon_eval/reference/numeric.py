"""Numeric claims checked by code: the reported token parses (sign, separators, k/M/bn, %, pp), the
declared unit converts to the reference unit, and the difference is within tolerance. Pure.

Tolerance rule, in order: the explicit absolute tolerance of the reference value when the question gives
one; else the displayed precision of the claim (half a unit of its last digit; an abbreviated ``490.6k``
may also be truncated); else (a spelled number, no displayed precision) 1% of the reference.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..judges.heuristic.text import NumberMention, extract_numbers
from .spec import ReferenceValue

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
    #: None when within tolerance, else token_missing | unparseable | unit | sign | scale | out_of_tolerance
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _norm_space(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2212", "-").replace("\u2013", "-"))


def parse_token(token: str) -> NumberMention | None:
    """The single number written in ``token`` (the whole token), else None."""
    found = [m for m in extract_numbers(token) if not m.ordinal]
    if len(found) != 1:
        return None
    m = found[0]
    return m if m.token.strip() == token.strip() or token.strip().startswith(m.token) else None


def _fail(value: ReferenceValue, token: str, unit: str, reference: float | None, error: str,
          reported: float | None = None) -> NumericCheck:
    return NumericCheck(value.id, token, unit, reference, reported, None, "", None, None, False, error)


def check_claim(response: str, token: str, value: ReferenceValue, reference: float,
                declared_unit: str) -> NumericCheck:
    """Check one numeric claim: ``token`` as reported in ``response``, mapped to ``value`` (reference
    figure ``reference``) in ``declared_unit``."""
    # the token must be a whole number as written in the response ("42" is not in "420" nor in "-42")
    written = {_norm_space(m.token) for m in extract_numbers(response)}
    if not token or _norm_space(token.strip()) not in written:
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
    if value.tolerance is not None:
        rule, tol = f"explicit absolute tolerance {value.tolerance:g}", float(value.tolerance)
    elif not m.word:
        rule, tol = "displayed precision", m.tolerance * factors[value.unit]
    else:
        rule, tol = "1% relative (no displayed precision)", 0.01 * abs(reference)
    diff = converted - reference
    within = abs(diff) <= tol + 1e-9
    if not within and m.abbreviated and value.tolerance is None:
        # a truncated abbreviation: the reference may sit up to one displayed unit beyond it
        within = (converted >= 0) == (reference >= 0) and 0 <= abs(reference) - abs(converted) <= 2 * tol + 1e-9
    error = None
    if not within:
        slack = max(tol, 0.01 * abs(reference))
        if reference != 0 and abs(-converted - reference) <= slack:
            error = "sign"
        elif reference != 0 and any(abs(converted * s - reference) <= max(tol * s, 0.01 * abs(reference))
                                    for s in _SCALES):
            error = "scale"
        else:
            error = "out_of_tolerance"
    return NumericCheck(value.id, token, declared_unit, reference, m.value, converted, rule, tol,
                        round(diff, 6), within, error)


def check_value(token: str, reference: float, unit: str, *, tolerance: float | None = None,
                declared_unit: str | None = None) -> NumericCheck:
    """:func:`check_claim` of a bare token (the response is the token itself): for worked examples."""
    value = ReferenceValue(id="example", name="example", unit=unit, sql="SELECT NULL", tolerance=tolerance)
    return check_claim(token, token, value, reference, declared_unit or unit)
