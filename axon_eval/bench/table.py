"""Benchmark rows and the fixed-width table ``make bench`` prints.

A row is ``{"section", "name", "value", "unit", "target", "ok", **extra}``; ``ok`` is True/False when the row
has a target, None otherwise.
"""

from __future__ import annotations

from typing import Any

BenchRow = dict[str, Any]


def row(section: str, name: str, value: float, unit: str, target: str = "", ok: bool | None = None, **extra: Any) -> BenchRow:
    return {"section": section, "name": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


def format_table(rows: list[BenchRow]) -> str:
    """Fixed-width text table of benchmark rows (column widths fit the longest entry)."""
    cells = []
    for r in rows:
        value = f"{r['value']:,}" if isinstance(r["value"], int | float) else str(r["value"])
        cells.append((r["section"], r["name"], value, r["unit"], r["target"], {True: "yes", False: "NO", None: ""}[r["ok"]]))
    head = ("section", "benchmark", "value", "unit", "target", "ok")
    widths = [max(len(str(c[i])) for c in [head, *cells]) for i in range(len(head))]
    def fmt(c: tuple[str, ...]) -> str:
        return "  ".join(str(v).rjust(w) if i == 2 else str(v).ljust(w) for i, (v, w) in enumerate(zip(c, widths))).rstrip()
    lines = [fmt(head), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    lines.extend(fmt(c) for c in cells)
    return "\n".join(lines)
