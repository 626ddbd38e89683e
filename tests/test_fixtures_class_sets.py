"""The checks every failure-class set must pass run once per set: frozen, deterministic, labels
consistent. Set-specific checks (figures recomputed by separately written SQL) stay in each set's file.

The oracles here are independent of the set files and their builder (:mod:`axon_eval.fixtures.labelled`): the committed
``data/turns`` files, the warehouse rebuilt from its seed and re-queried, and the DESIGN §4 midpoint band
written out below (weights 0.30/0.25/0.25/0.20, bands 80/50; no turn of these sets has a failed or missing
step, so no cap applies).
"""

from __future__ import annotations

import csv
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from axon_eval.evidence import Turn, load_turns, split_segments, trajectory_facts
from axon_eval.fixtures.common import OPEN_PERIOD_RANGES
from axon_eval.fixtures.labelled import build_set_files
from axon_eval.fixtures.labelled import spec as set_spec
from axon_eval.warehouses import hotel, learning, library, transit, water

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"
#: the failure classes every held-out set carries, each at least three times
ISSUE_CLASSES = ("fan_out", "units", "open_period", "wrong_row", "statistic", "demonym", "currency_code", "plural",
                 "derived_total", "row_count", "control")


@dataclass(frozen=True)
class HeldOutSet:
    """What the generic checks expect of one set: the least number of turns, each class's least count (and
    no class beyond them), the data/README heading, and how an answer writes a ``row_count``."""

    name: str
    module: ModuleType
    min_turns: int
    class_minimums: dict[str, int]
    readme_heading: str
    row_count_format: str


def _three(*classes: str) -> dict[str, int]:
    return dict.fromkeys(classes, 3)


TRANSIT = HeldOutSet("transit", transit, 44, _three(*ISSUE_CLASSES, "int_division", "nullable_count", "union_all"),
                     "## Transit held-out set", "{}")
WATER = HeldOutSet("water", water, 44,
                   _three(*ISSUE_CLASSES, "left_join", "wrong_status", "mean_of_means", "date_column"),
                   "## Water held-out set", "{}")
HOTEL = HeldOutSet("hotel", hotel, 48,
                   _three(*ISSUE_CLASSES, "nights_off_by_one", "having", "case_else", "coalesce_zero", "denominator"),
                   "## Hotel held-out set", "{:,}")
#: learning: its own classes at least twice each, its controls at least once
LEARNING = HeldOutSet("learning", learning, 56,
                      {**_three(*ISSUE_CLASSES), "control": 1,
                       **dict.fromkeys(("completion_population", "even_median", "month_boundary", "name_join",
                                        "case_split", "swapped_base"), 2)},
                      "## Learning held-out set", "{:,}")
HELD_OUT = [TRANSIT, WATER, HOTEL, LEARNING]
#: the library set (in-sample; its class mix and claims rule differ, see test_fixtures_library) shares the
#: build, so the build-level checks run on it too
BUILT = [*HELD_OUT, library]


def _name(s: HeldOutSet | ModuleType) -> str:
    return s.name if isinstance(s, HeldOutSet) else s.__name__.rsplit(".", 1)[1]


def _module(s: HeldOutSet | ModuleType) -> ModuleType:
    return s.module if isinstance(s, HeldOutSet) else s


held_out = pytest.mark.parametrize("spec", HELD_OUT, ids=_name)
built = pytest.mark.parametrize("spec", BUILT, ids=_name)


@cache
def _labels(name: str) -> tuple[dict[str, str], ...]:
    with (DATA / f"{name}_labels.csv").open(encoding="utf-8", newline="") as fh:
        return tuple(csv.DictReader(fh))


@cache
def _turns(name: str) -> tuple[Turn, ...]:
    loaded, invalid = load_turns(DATA / f"{name}_turns.jsonl")
    assert not invalid
    return tuple(loaded)


@pytest.fixture(scope="module")
def warehouse() -> Iterator[Callable[[HeldOutSet | ModuleType], sqlite3.Connection]]:
    """The rebuilt warehouse of a set (from its default seed), built on first use, closed at module end."""
    opened: dict[str, sqlite3.Connection] = {}

    def conn_of(spec: HeldOutSet | ModuleType) -> sqlite3.Connection:
        name = _name(spec)
        if name not in opened:
            opened[name] = getattr(_module(spec), f"build_{name}_warehouse")()
        return opened[name]

    yield conn_of
    for conn in opened.values():
        conn.close()


def test_the_file_names_are_the_ones_read_here():
    for s in BUILT:
        m, name = _module(s), _name(s)
        assert (m.TURNS_FILE, m.LABELS_FILE) == (f"{name}_turns.jsonl", f"{name}_labels.csv")


@built
def test_rebuild_is_byte_identical_to_the_committed_set(spec, tmp_path):
    m, name = _module(spec), _name(spec)
    summary = build_set_files(tmp_path, set_spec(name))[0]
    for file in (m.TURNS_FILE, m.LABELS_FILE):
        assert (tmp_path / "turns" / file).read_bytes() == (DATA / file).read_bytes(), file
    assert summary["turns"] == len(_labels(name))
    if isinstance(spec, HeldOutSet):
        assert summary["turns"] >= spec.min_turns


@built
def test_every_segment_is_labelled_exactly_once(spec):
    turns, labels = _turns(_name(spec)), _labels(_name(spec))
    segments = [s.segment_id for t in turns for s in split_segments(t)]
    assert len(segments) == len(turns)  # one segment per turn
    assert sorted(segments) == sorted(r["segment_id"] for r in labels)
    assert len({r["segment_id"] for r in labels}) == len(labels)


@held_out
def test_about_half_correct_and_every_class_often_enough(spec):
    labels = _labels(spec.name)
    assert len(labels) >= spec.min_turns
    good = sum(r["verdict"] == "good" for r in labels)
    assert abs(good - (len(labels) - good)) <= 1
    counts = Counter(r["note"].split(":", 1)[0] for r in labels)
    assert set(counts) == set(spec.class_minimums)
    short = {c: counts[c] for c, least in spec.class_minimums.items() if counts[c] < least}
    assert not short, (short, counts)
    # correct answers are exactly the clean rows, labelled good
    assert all((r["defect"] == "clean") == (r["verdict"] == "good") for r in labels)


@built
def test_labels_pass_the_midpoint_band_check(spec):
    """Oracle: the DESIGN §4 score at the range midpoints, written out here, bands to the verdict."""
    by_id = {t.turn_id: t for t in _turns(_name(spec))}
    for r in _labels(_name(spec)):
        facts = trajectory_facts(by_id[r["turn_id"]])
        assert not (facts.all_sql_failed or facts.ended_on_failure or facts.no_tools)
        mid = {d: (int(r[f"{d}_min"]) + int(r[f"{d}_max"])) / 2
               for d in ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")}
        score = 10 * (0.30 * mid["intent_understood"] + 0.25 * mid["sql_quality"]
                      + 0.25 * mid["result_relevance"] + 0.20 * mid["answer_faithfulness"])
        band = "good" if score >= 80 else "partial" if score >= 50 else "poor"
        assert band == r["verdict"], (r["segment_id"], score, r["note"])


@held_out
def test_claims_appear_in_the_answers_and_only_misstated_answers_carry_them(spec):
    by_id = {t.turn_id: t for t in _turns(spec.name)}
    for r in _labels(spec.name):
        claims = [c for c in r["unsupported_claims"].split(";") if c]
        for c in claims:
            assert c in by_id[r["turn_id"]].answer, (r["segment_id"], c)
        assert bool(claims) == (r["defect"] in {"unit_mismatch", "wrong_row"}), r["segment_id"]
        if claims:  # answer-only defects: the misstated ranges
            assert (int(r["answer_faithfulness_min"]), int(r["answer_faithfulness_max"])) == (0, 3)
            assert r["verdict"] == "partial"


@built
def test_open_period_rows_carry_the_rule_of_every_set(spec):
    rows = [r for r in _labels(_name(spec)) if r["note"].startswith("open_period:")]
    assert len(rows) >= 3
    for r in rows:
        for dim, col in (("intent", "intent_understood"), ("sql", "sql_quality"), ("relevance", "result_relevance")):
            assert (int(r[f"{col}_min"]), int(r[f"{col}_max"])) == OPEN_PERIOD_RANGES[dim]
        assert r["verdict"] == "partial"


@built
def test_every_ok_step_reruns_against_the_rebuilt_warehouse(spec, warehouse):
    turns, conn = _turns(_name(spec)), warehouse(spec)
    steps = 0
    for t in turns:
        for s in t.sql_steps:
            assert s.status == "ok", t.turn_id
            rows = [list(r) for r in conn.execute(s.sql).fetchall()]
            assert len(rows) == s.row_count, t.turn_id
            assert rows[: len(s.rows)] == [list(r) for r in s.rows], t.turn_id
            steps += 1
    assert steps == len(turns)


@held_out
def test_row_count_answers_use_more_rows_than_are_stored(spec):
    by_id = {t.turn_id: t for t in _turns(spec.name)}
    rows = [r for r in _labels(spec.name) if r["note"].startswith("row_count:")]
    assert len(rows) == 3
    for r in rows:
        (step,) = by_id[r["turn_id"]].sql_steps
        assert step.row_count > len(step.rows) == 50
        assert spec.row_count_format.format(step.row_count) in by_id[r["turn_id"]].answer, r["segment_id"]


@held_out
def test_the_data_readme_describes_the_set_and_says_the_labels_are_constructed(spec):
    text = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    section = text[text.index(spec.readme_heading):]
    assert "CONSTRUCTED" in section and f"{len(_labels(spec.name))} captured turns" in section
