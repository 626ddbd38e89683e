"""Every signal of the fitted offline judge on hand-built segments in three domains.

The cases are data (``tests/data/signal_cases.yaml``): a hotel group, a retail shop and a city transit
operator, each with a clean turn and the failure each signal names. Their expected values are worked
out by hand from the signal's definition; this file checks them and checks that every signal of the
catalogue is pinned in at least three domains.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from axon_eval.judges.heuristic.signals import SIGNAL_NAMES, extract_signals
from tests.test_heuristic_fitted import make_view

CASES_FILE = Path(__file__).parent / "data" / "signal_cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CASES_FILE.read_text())
MIN_DOMAINS = 3


def _step(s: dict[str, Any]) -> dict[str, Any]:
    if "tool" in s:
        return {"kind": "tool", "name": s["tool"], "status": "ok", "output": s["output"], "args": {}}
    status = s.get("status", "ok")
    if status != "ok":
        return {"kind": "sql", "sql": s["sql"], "status": status, "error": f"{status} (hand-built)",
                "columns": [], "rows": [], "row_count": None}
    return {"kind": "sql", "sql": s["sql"], "status": "ok", "error": None, "columns": s["columns"],
            "rows": s["rows"], "row_count": s.get("row_count", len(s["rows"]))}


def _view(case: dict[str, Any]):
    return make_view(case["question"], [_step(s) for s in case["steps"]], case["answer"])


def _answering_sql(case: dict[str, Any]) -> str:
    """The statement the signals read: the last successful one (every case's last ok step is substantive)."""
    ok = [s["sql"] for s in case["steps"] if "sql" in s and s.get("status", "ok") == "ok"]
    return ok[-1]


def _expected(case: dict[str, Any], name: str, value: Any) -> tuple[str, float]:
    """The comparison and the hand-computed number a case's ``expect`` entry stands for."""
    if isinstance(value, dict):
        (op, bound), = value.items()
        return op, float(bound)
    if name == "sql_length" and value == "words":
        return "eq", math.log1p(len(_answering_sql(case).split()))
    if name == "ok_attempts":
        return "eq", math.log1p(value)
    return "eq", float(value)


def test_the_case_file_is_well_formed():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids repeat"
    for c in CASES:
        assert set(c) == {"id", "domain", "question", "steps", "answer", "expect"}, c["id"]
        unknown = set(c["expect"]) - set(SIGNAL_NAMES)
        assert not unknown, f"{c['id']}: no such signal {sorted(unknown)}"


def test_every_signal_is_pinned_in_three_domains():
    domains: dict[str, set[str]] = defaultdict(set)
    for c in CASES:
        for name in c["expect"]:
            domains[name].add(c["domain"])
    thin = {name: sorted(domains[name]) for name in SIGNAL_NAMES if len(domains[name]) < MIN_DOMAINS}
    assert not thin, f"signals pinned in fewer than {MIN_DOMAINS} domains: {thin}"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_signal_values_on_hand_built_cases(case):
    out = extract_signals(_view(case))
    wrong = {}
    for name, value in case["expect"].items():
        op, want = _expected(case, name, value)
        got = out[name]
        ok = {"eq": math.isclose(got, want, rel_tol=0, abs_tol=1e-9), "ge": got >= want, "lt": got < want}[op]
        if not ok:
            wrong[name] = f"{got!r}, expected {op} {want!r}"
    assert not wrong, f"{case['id']}: {wrong}"


@pytest.mark.parametrize("domain", sorted({c["domain"] for c in CASES}))
def test_the_failure_cases_move_their_signal_off_the_clean_value(domain):
    """Each failure case differs from its domain's clean turn on a signal it pins: no case is inert."""
    clean = next(c for c in CASES if c["domain"] == domain and c["id"].split("-", 1)[1].startswith("clean"))
    base = extract_signals(_view(clean))
    for c in CASES:
        if c["domain"] != domain or c is clean:
            continue
        out = extract_signals(_view(c))
        assert any(not math.isclose(out[n], base[n], abs_tol=1e-9) for n in c["expect"]), c["id"]
