"""Numbers shown to people: the one place that decides how a share, a figure or a missing value reads.

Used by the HTML report, the notebooks' displayed tables and the command line, so that every table a
person reads follows the same rules:

* a share (a proportion in [0, 1]) reads as a percentage, ``0.639 -> "64%"`` (one decimal below 10%:
  ``0.0309 -> "3.1%"``);
* any other number shows :data:`SIGNIFICANT_DIGITS` significant digits in plain decimal notation, at most
  :data:`MAX_DECIMALS` decimals, integers without a decimal point and thousands separated:
  ``0.61635 -> "0.616"``, ``77.53 -> "77.5"``, ``8.8247 -> "8.82"``, ``12345.6 -> "12,346"``; never
  scientific notation (``4.09e-15 -> "0"``: below the last shown decimal is zero for a reader);
* a missing value (``None``, ``NaN``, ``pd.NA``) reads as :data:`MISSING` (``"n/a"``) or a caller's
  phrase such as ``"not reported"``; never ``None`` or ``nan``;
* an estimate with its interval reads one way everywhere (:func:`fmt_estimate`): ``"77.5 (72.0 to 82.4)"``,
  the three numbers with the same decimals; shares ``"64% (54% to 73%)"``; a difference with its sign,
  ``"-1.70 (-2.61 to -0.80)"``, and a difference of shares in percentage points, ``"+2.1 (-3.1 to +7.4)"``;
* a value compared with a limit (a gate's bound against its threshold) reads by the same rule, with
  more digits only when the rule would show two different values alike (:func:`fmt_compared`:
  ``49.996`` against ``50`` reads ``"49.996"`` and ``"50"``, not ``"50"`` and ``"50"``).

The command line, the HTML pages and the notebooks format every share and every estimate through
these functions and no other (a test runs every verb that prints figures and checks its output
against the rule).

Notebooks show every table through :func:`styled`, a pandas ``Styler`` that applies these rules cell by
cell (shares as percentages, numbers to three significant digits, an estimate and its bounds merged into
one ``"77.5 (72.0 to 82.4)"`` column, a missing value as :data:`DASH` with a note under the table,
columns without any value left out and named in that note).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

#: Significant digits of a number that is not a share.
SIGNIFICANT_DIGITS = 3
#: Decimals never exceed this (so a tiny float reads as 0, never as 4.09e-15).
MAX_DECIMALS = 3
#: What a missing value reads as.
MISSING = "n/a"
#: What a missing value reads as in a notebook table (:func:`styled`), explained in the table's caption.
DASH = "–"
#: Column names read as shares (proportions in [0, 1]) by :func:`people_table` unless told otherwise.
SHARE_COLUMN = re.compile(r"(^|[_ ])(share|shares|accuracy|agreement|rate|in_range|in range|proportion)([_ ]|$)"
                          r"|^share|_share$")


def is_missing(value: Any) -> bool:
    """True for ``None``, ``pd.NA``, ``pd.NaT`` and a float NaN."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def fmt_number(value: Any, digits: int = SIGNIFICANT_DIGITS, *, missing: str = MISSING,
               max_decimals: int = MAX_DECIMALS) -> str:
    """``value`` with ``digits`` significant digits (at most ``max_decimals`` decimals), plain notation.

    Decimals = ``clamp(digits - 1 - floor(log10 |x|), 0, max_decimals)``; trailing zeros after the point
    are kept only up to that count (``0.5 -> "0.5"``, ``0.50 -> "0.5"``). Integers (and integral floats
    of 1,000 or more) read without a point; thousands are separated by commas. A value that rounds to
    zero reads ``"0"`` (never ``"-0"``). Booleans read ``yes``/``no``; text is returned as it is.
    """
    if is_missing(value):
        return missing
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if not isinstance(value, float | np.floating):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return str(value)
    x = float(value)
    if math.isinf(x):
        return "infinite" if x > 0 else "minus infinite"
    if x == 0:
        return "0"
    decimals = min(max(digits - 1 - math.floor(math.log10(abs(x))), 0), max_decimals)
    rounded = round(x, decimals)
    if rounded == 0:
        return "0"
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_share(value: Any, *, missing: str = MISSING) -> str:
    """A proportion in [0, 1] as a percentage: whole percents from 10% to 99%, one decimal below 10% and
    above 99% (``0.0309 -> "3.1%"``, ``0.9990 -> "99.9%"``), so a share that is not 0 or 1 never reads
    ``0%`` or ``100%``; a nonzero share below 0.1% reads ``"<0.1%"`` and one above 99.9% ``">99.9%"``."""
    if is_missing(value):
        return missing
    p = 100 * float(value)
    if p == 0:
        return "0%"
    if p == 100:
        return "100%"
    if 0 < p < 0.1:
        return "<0.1%"
    if 99.9 < p < 100:
        return ">99.9%"
    if abs(p) < 10 or 99 < p < 100:
        return f"{p:.1f}%".replace(".0%", "%")
    return f"{p:.0f}%"


def shared_decimals(values: Iterable[Any], digits: int = SIGNIFICANT_DIGITS, max_decimals: int = MAX_DECIMALS) -> int:
    """The decimals that give the largest of ``values`` (in absolute value) ``digits`` significant digits,
    at most ``max_decimals``: what an estimate and its bounds share so that they read alike
    (``77.5, 72.0, 82.4``; ``0.616, 0.486, 0.739``). Missing and zero values are ignored."""
    finite = [abs(float(v)) for v in values if not is_missing(v) and not isinstance(v, str)
              and math.isfinite(float(v)) and float(v) != 0]
    if not finite:
        return 0
    return min(max(digits - 1 - math.floor(math.log10(max(finite))), 0), max_decimals)


def _fixed(value: Any, decimals: int) -> str:
    rounded = round(float(value), decimals)
    return f"{rounded if rounded != 0 else 0.0:,.{decimals}f}"  # never "-0.0"


def _needed(values: Iterable[Any], decimals: int) -> int:
    """The fewest decimals, up to ``decimals``, that show every one of ``values`` rounded to ``decimals``
    without loss: trailing zeros all of them share are dropped (``0.50, 0.74`` rather than ``0.500, 0.740``)."""
    needed = 0
    for v in values:
        text = f"{round(float(v), decimals):.{decimals}f}"
        if "." in text:
            needed = max(needed, len(text.split(".")[1].rstrip("0")))
    return needed


def _signed(text: str, value: Any) -> str:
    """``text`` with a ``+`` before a positive value (a value that reads as zero gets no sign)."""
    return f"+{text}" if float(value) > 0 and text.strip("0.,") != "" else text


def fmt_signed(value: Any, *, share: bool = False, digits: int = SIGNIFICANT_DIGITS, missing: str = MISSING) -> str:
    """A difference with its sign: :func:`fmt_number` with ``+`` before a positive value (``+1.6``,
    ``-0.58``, ``0``); a difference of shares (``share``) in percentage points, ``0.021 -> "+2.1"`` (the
    caller names the unit)."""
    if is_missing(value):
        return missing
    x = 100 * float(value) if share else float(value)
    return _signed(fmt_number(x, digits), x)


def fmt_estimate(estimate: Any, low: Any, high: Any, *, share: bool = False, signed: bool = False,
                 digits: int = SIGNIFICANT_DIGITS, missing: str = MISSING) -> str:
    """An estimate with its interval, the one way every headline reads: ``"77.5 (72.0 to 82.4)"``,
    ``"0.616 (0.486 to 0.739)"``, shares ``"64% (54% to 73%)"``. The three numbers share their decimals
    (:func:`shared_decimals`: ``digits`` significant digits on the largest, then the trailing zeros all
    three share dropped), so ``72`` reads ``72.0`` beside ``82.4`` and ``0.5`` reads ``0.50`` beside
    ``0.74``; shares are percentages (:func:`fmt_share`). A difference (``signed``) carries its signs,
    ``"-1.70 (-2.61 to -0.80)"``; a difference of shares (``signed`` and ``share``) reads in percentage
    points, ``"+2.1 (-3.1 to +7.4)"`` (the caller names the unit). Without an interval only the estimate
    is shown; a missing estimate reads ``missing``."""
    if is_missing(estimate):
        return missing
    if share and not signed:
        head = fmt_share(estimate)
        return head if is_missing(low) or is_missing(high) else f"{head} ({fmt_share(low)} to {fmt_share(high)})"
    if is_missing(low) or is_missing(high):
        return fmt_signed(estimate, share=share, digits=digits) if signed else fmt_number(estimate, digits)
    head, lo_text, hi_text = estimate_parts(estimate, low, high, share=share, signed=signed, digits=digits)
    return f"{head} ({lo_text} to {hi_text})"


def estimate_parts(estimate: Any, low: Any, high: Any, *, share: bool = False, signed: bool = False,
                   digits: int = SIGNIFICANT_DIGITS) -> tuple[str, str, str]:
    """The three texts of :func:`fmt_estimate` apart, for a table with the estimate and its interval in
    columns of their own: ``(estimate, low, high)`` with the shared decimals (``77.5``, ``72.0``,
    ``82.4``; ``69.0`` beside ``65.6 to 72.0``, never ``69``). Shares that are not differences read as
    percentages (:func:`fmt_share`); a missing bound leaves the estimate by :func:`fmt_number`."""
    if share and not signed:
        return fmt_share(estimate), fmt_share(low), fmt_share(high)
    if is_missing(estimate) or is_missing(low) or is_missing(high):
        head = fmt_signed(estimate, share=share, digits=digits) if signed else fmt_number(estimate, digits)
        return head, fmt_number(low, digits), fmt_number(high, digits)
    scale = 100.0 if share else 1.0
    values = [scale * float(v) for v in (estimate, low, high)]
    decimals = _needed(values, shared_decimals(values, digits))
    texts = [_fixed(v, decimals) for v in values]
    if signed:
        texts = [_signed(t, v) for t, v in zip(texts, values, strict=True)]
    return texts[0], texts[1], texts[2]


def fmt_compared(value: Any, limit: Any, *, share: bool = False, signed: bool = False,
                 missing: str = MISSING) -> tuple[str, str]:
    """``value`` and the ``limit`` it is compared with, as text by the rule (:func:`fmt_share` for a
    share, :func:`fmt_signed` for a difference, else :func:`fmt_number`); when the rule would show two
    different values alike (``0.4996`` and ``0.5`` both ``"50%"``), both get more decimals, up to three
    more, until they differ, so a reader sees which side of the limit the value is on."""
    def text(x: Any, extra: int) -> str:
        if is_missing(x):
            return missing
        if signed:
            return fmt_signed(x, share=share, digits=SIGNIFICANT_DIGITS + extra)
        if share:
            if not extra:
                return fmt_share(x)
            return f"{100 * float(x):.{extra}f}".rstrip("0").rstrip(".") + "%"
        return fmt_number(x, SIGNIFICANT_DIGITS + extra, max_decimals=MAX_DECIMALS + extra)

    shown = (text(value, 0), text(limit, 0))
    extra = 0
    while shown[0] == shown[1] and not is_missing(value) and not is_missing(limit) \
            and float(value) != float(limit) and extra < 3:
        extra += 1
        shown = (text(value, extra), text(limit, extra))
    return shown


def fmt_interval(low: Any, high: Any, *, share: bool = False, digits: int = SIGNIFICANT_DIGITS,
                 missing: str = "not defined") -> str:
    """An interval ``"low to high"``: as shares when ``share`` (``"54% to 73%"``), else both ends with the
    same decimals (``digits`` significant digits on the larger, shared trailing zeros dropped:
    ``"72.0 to 82.4"``, ``"0.50 to 0.74"``); ``missing`` when either end is missing. The interval part of
    :func:`fmt_estimate`."""
    if is_missing(low) or is_missing(high):
        return missing
    if share:
        return f"{fmt_share(low)} to {fmt_share(high)}"
    decimals = _needed((low, high), shared_decimals((low, high), digits))
    return f"{_fixed(low, decimals)} to {_fixed(high, decimals)}"


def fmt_value(value: Any, *, share: bool = False, missing: str = MISSING) -> str:
    """:func:`fmt_share` when ``share``, else :func:`fmt_number`."""
    return fmt_share(value, missing=missing) if share else fmt_number(value, missing=missing)


def is_share_column(name: Any) -> bool:
    """Whether a column name says it holds shares (``share_good``, ``accuracy``, ``in_range_sql_quality``,
    ``band_agreement``, ``claim_catch_rate``, ``band flip rate (sampled)``...)."""
    return bool(SHARE_COLUMN.search(str(name)))


def people_table(frame: pd.DataFrame, *, shares: Iterable[str] | None = None, keep: Iterable[str] = (),
                 missing: str = MISSING, digits: int = SIGNIFICANT_DIGITS) -> pd.DataFrame:
    """A copy of ``frame`` with every cell as the text a person reads (index and columns unchanged).

    ``shares``: the columns holding proportions (default: the columns whose name says so,
    :func:`is_share_column`); ``keep``: columns left exactly as they are. Numbers go through
    :func:`fmt_number` with ``digits``, shares through :func:`fmt_share`, missing values become
    ``missing``; text stays text.
    """
    share_cols = set(shares) if shares is not None else {c for c in frame.columns if is_share_column(c)}
    kept = set(keep)
    out = pd.DataFrame(index=frame.index)
    for column in frame.columns:
        values = frame[column]
        if column in kept:
            out[column] = values
            continue
        share = column in share_cols
        out[column] = [fmt_share(v, missing=missing) if share and not isinstance(v, str)
                       else fmt_number(v, digits, missing=missing) for v in values]
    return out


def people_series(values: dict[str, Any], *, shares: Iterable[str] | None = None, name: str = "value",
                  missing: str = MISSING) -> pd.DataFrame:
    """A mapping of named figures as a one-column table of text (shares as :func:`people_table` reads
    them from their names unless ``shares`` is given)."""
    share_keys = set(shares) if shares is not None else {k for k in values if is_share_column(k)}
    return pd.DataFrame({name: [fmt_share(v, missing=missing) if k in share_keys and not isinstance(v, str)
                                else fmt_number(v, missing=missing) for k, v in values.items()]},
                        index=list(values))


# -- notebook tables ---------------------------------------------------------------------------------------
#: Suffixes of the columns holding an estimate's lower and upper bound, tried in order for each column
#: (``kappa`` with ``kappa_lo`` / ``kappa_hi``, ``icc1`` with ``icc1_ci_low`` / ``icc1_ci_high``, ...);
#: ``estimate`` (or ``value``) also pairs with plain ``lo`` / ``hi`` and ``ci_low`` / ``ci_high``.
BOUND_SUFFIXES: tuple[tuple[str, str], ...] = (("_lo", "_hi"), ("_ci_low", "_ci_high"), ("_ci_lo", "_ci_hi"),
                                               ("_low", "_high"))


def interval_columns(frame: pd.DataFrame) -> dict[Any, tuple[Any, Any]]:
    """Estimate column -> (lower, upper) bound columns found in ``frame`` by :data:`BOUND_SUFFIXES`, plus
    ``estimate``/``value`` with ``lo``/``hi`` or ``ci_low``/``ci_high``; an estimate whose ``<name>_ci``
    column holds ``[lo, hi]`` pairs maps to ``(<name>_ci, None)``."""
    cols = list(frame.columns)
    found: dict[Any, tuple[Any, Any]] = {}
    for c in cols:
        if not isinstance(c, str):
            continue
        for lo_suffix, hi_suffix in BOUND_SUFFIXES:
            if f"{c}{lo_suffix}" in cols and f"{c}{hi_suffix}" in cols:
                found[c] = (f"{c}{lo_suffix}", f"{c}{hi_suffix}")
                break
        else:
            if c in ("estimate", "value"):
                for lo, hi in (("lo", "hi"), ("ci_low", "ci_high")):
                    if lo in cols and hi in cols:
                        found[c] = (lo, hi)
                        break
            if c not in found and f"{c}_ci" in cols and frame[f"{c}_ci"].map(
                    lambda v: isinstance(v, list | tuple | np.ndarray) and len(v) == 2 or is_missing(v)).all():
                found[c] = (f"{c}_ci", None)
    return found


def _cell(value: Any, *, share: bool, digits: int, missing: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(_cell(v, share=share, digits=digits, missing=missing) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v, share=share, digits=digits, missing=missing)}" for k, v in value.items())
    if share and not isinstance(value, bool | np.bool_) and not is_missing(value):
        try:
            return fmt_share(float(value), missing=missing)
        except (TypeError, ValueError):
            return str(value)
    return fmt_number(value, digits, missing=missing)


def _label(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_label(v) for v in value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        return value
    return fmt_number(value)


def styled(frame: pd.DataFrame | pd.Series, *, shares: Iterable[Any] | None = None, keep: Iterable[Any] = (),
           intervals: Mapping[Any, tuple[Any, Any]] | None = None, missing: str = DASH,
           digits: int = SIGNIFICANT_DIGITS, caption: str | None = None, index: bool | None = None,
           drop_empty: bool = True) -> Any:
    """A notebook table as people read it: a pandas ``Styler`` of ``frame`` (a Series becomes one column).

    * every number through :func:`fmt_number` (``digits`` significant digits, no scientific notation),
      every share through :func:`fmt_share` (``shares``: those columns; default: the columns whose name
      says so, :func:`is_share_column`; a ``kind`` column reading ``"share"`` makes its row's estimate and
      bounds shares); booleans read yes/no; lists and mappings are joined; text stays text; ``keep``:
      columns shown exactly as they are;
    * an estimate and its bounds become one column ``"<name> (interval)"`` reading
      ``"77.5 (72.0 to 82.4)"`` (:func:`fmt_estimate`; ``intervals`` maps estimate -> (lower, upper)
      columns, default :func:`interval_columns`), and the bound columns are left out;
    * a missing value reads ``missing`` (``"–"``), and the caption says what it means; columns without any
      value are left out (``drop_empty``) and named in the caption;
    * numeric row and column labels are formatted too; the default integer index is hidden (``index``:
      force showing or hiding it).
    """
    data = frame.to_frame() if isinstance(frame, pd.Series) else frame.copy()
    kept = set(keep)
    notes: list[str] = [caption] if caption else []
    empty = [c for c in data.columns if c not in kept and data[c].map(is_missing).all()] if drop_empty and len(data) else []
    if empty:
        data = data.drop(columns=empty)
        notes.append("no value in " + ", ".join(str(c) for c in empty) + " (left out)")
    share_cols = set(shares) if shares is not None else {c for c in data.columns if is_share_column(c)}
    row_share = (data["kind"].astype(str) == "share").to_numpy() if "kind" in data.columns else np.zeros(len(data), bool)
    pairs = dict(intervals) if intervals is not None else interval_columns(data)
    for est, (lo_col, hi_col) in pairs.items():
        if est not in data.columns or est in kept:
            continue
        share = est in share_cols
        if hi_col is None:
            bounds = [tuple(v) if isinstance(v, list | tuple | np.ndarray) else (None, None) for v in data[lo_col]]
        else:
            bounds = list(zip(data[lo_col], data[hi_col], strict=True))
        text = [fmt_estimate(v, lo, hi, share=share or bool(rs), digits=digits, missing=missing)
                for v, (lo, hi), rs in zip(data[est], bounds, row_share, strict=True)]
        position = list(data.columns).index(est)
        data = data.drop(columns=[c for c in (est, lo_col, hi_col) if c is not None])
        data.insert(min(position, len(data.columns)), f"{est} (interval)", text)
        kept.add(f"{est} (interval)")
    out = pd.DataFrame(index=data.index)
    for c in data.columns:
        if c in kept:
            out[c] = data[c].map(lambda v: missing if is_missing(v) else v)
            continue
        share = c in share_cols
        out[c] = [_cell(v, share=share or bool(rs) and c in ("estimate", "lo", "hi"), digits=digits, missing=missing)
                  for v, rs in zip(data[c], row_share, strict=True)]
    if (out == missing).to_numpy().any():
        notes.append(f"{missing}: no value (missing, not zero)")
    out.index = pd.Index([_label(v) for v in out.index], name=out.index.name) if not isinstance(
        out.index, pd.MultiIndex) else out.index.map(_label)
    out.columns = pd.Index([_label(v) for v in out.columns], name=out.columns.name) if not isinstance(
        out.columns, pd.MultiIndex) else out.columns.map(_label)
    styler = out.style
    if notes:
        styler = styler.set_caption("; ".join(notes))
    hide = (isinstance(frame.index, pd.RangeIndex) and not isinstance(frame, pd.Series)) if index is None else not index
    return styler.hide(axis="index") if hide else styler
