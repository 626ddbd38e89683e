"""The held-out failure-class set on the transit warehouse (issue 22): frozen, deterministic, labels consistent.

The oracles here are independent of the generator: figures recomputed by separately written SQL against
a fresh warehouse, and the DESIGN §4 midpoint band written out below (weights 0.30/0.25/0.25/0.20,
bands 80/50; no turn of this set has a failed or missing step, so no cap applies).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns, split_segments, trajectory_facts
from axon_eval.fixtures.common import OPEN_PERIOD_RANGES
from axon_eval.fixtures.transit import LABELS_FILE, TURNS_FILE, build_transit_files, build_transit_warehouse

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"
CLASSES = {"fan_out", "units", "open_period", "wrong_row", "statistic", "int_division", "nullable_count",
           "union_all", "demonym", "currency_code", "plural", "derived_total", "row_count", "control"}


@pytest.fixture(scope="module")
def labels() -> list[dict[str, str]]:
    with (DATA / LABELS_FILE).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def turns():
    loaded, invalid = load_turns(DATA / TURNS_FILE)
    assert not invalid
    return loaded


@pytest.fixture(scope="module")
def answers(turns) -> dict[str, str]:
    return {t.question: t.answer for t in turns}


@pytest.fixture(scope="module")
def conn():
    c = build_transit_warehouse()
    yield c
    c.close()


def _one(conn, sql):
    return conn.execute(sql).fetchone()[0]


def test_rebuild_is_byte_identical_to_the_committed_set(tmp_path):
    summary = build_transit_files(tmp_path)
    for name in (TURNS_FILE, LABELS_FILE):
        assert (tmp_path / "turns" / name).read_bytes() == (DATA / name).read_bytes(), name
    assert summary["turns"] >= 44


def test_every_segment_is_labelled_exactly_once(turns, labels):
    segments = [s.segment_id for t in turns for s in split_segments(t)]
    assert len(segments) == len(turns)  # one segment per turn
    assert sorted(segments) == sorted(r["segment_id"] for r in labels)
    assert len({r["segment_id"] for r in labels}) == len(labels)


def test_about_half_correct_and_every_class_at_least_three_times(labels):
    assert len(labels) >= 44
    good = sum(r["verdict"] == "good" for r in labels)
    assert abs(good - (len(labels) - good)) <= 1
    counts = Counter(r["note"].split(":", 1)[0] for r in labels)
    assert set(counts) == CLASSES
    assert min(counts.values()) >= 3, counts
    # correct answers are exactly the clean rows, labelled good
    assert all((r["defect"] == "clean") == (r["verdict"] == "good") for r in labels)


def test_labels_pass_the_midpoint_band_check(turns, labels):
    """Oracle: the DESIGN §4 score at the range midpoints, written out here, bands to the verdict."""
    by_id = {t.turn_id: t for t in turns}
    for r in labels:
        facts = trajectory_facts(by_id[r["turn_id"]])
        assert not (facts.all_sql_failed or facts.ended_on_failure or facts.no_tools)
        mid = {d: (int(r[f"{d}_min"]) + int(r[f"{d}_max"])) / 2
               for d in ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")}
        score = 10 * (0.30 * mid["intent_understood"] + 0.25 * mid["sql_quality"]
                      + 0.25 * mid["result_relevance"] + 0.20 * mid["answer_faithfulness"])
        band = "good" if score >= 80 else "partial" if score >= 50 else "poor"
        assert band == r["verdict"], (r["segment_id"], score, r["note"])


def test_claims_appear_in_the_answers_and_only_misstated_answers_carry_them(turns, labels):
    by_id = {t.turn_id: t for t in turns}
    for r in labels:
        claims = [c for c in r["unsupported_claims"].split(";") if c]
        for c in claims:
            assert c in by_id[r["turn_id"]].answer, (r["segment_id"], c)
        assert bool(claims) == (r["defect"] in {"unit_mismatch", "wrong_row"}), r["segment_id"]


def test_open_period_rows_carry_the_rule_of_every_set(labels):
    rows = [r for r in labels if r["note"].startswith("open_period:")]
    assert len(rows) >= 3
    for r in rows:
        for dim, col in (("intent", "intent_understood"), ("sql", "sql_quality"), ("relevance", "result_relevance")):
            assert (int(r[f"{col}_min"]), int(r[f"{col}_max"])) == OPEN_PERIOD_RANGES[dim]
        assert r["verdict"] == "partial"


def test_every_ok_step_reruns_against_the_rebuilt_warehouse(turns, conn):
    steps = 0
    for t in turns:
        for s in t.sql_steps:
            assert s.status == "ok", t.turn_id
            rows = [list(r) for r in conn.execute(s.sql).fetchall()]
            assert len(rows) == s.row_count, t.turn_id
            assert rows[: len(s.rows)] == [list(r) for r in s.rows], t.turn_id
            steps += 1
    assert steps == len(turns)


def test_row_count_answers_use_more_rows_than_are_stored(turns, labels):
    by_id = {t.turn_id: t for t in turns}
    rows = [r for r in labels if r["note"].startswith("row_count:")]
    for r in rows:
        (step,) = by_id[r["turn_id"]].sql_steps
        assert step.row_count > len(step.rows) == 50
        assert str(step.row_count) in by_id[r["turn_id"]].answer


def test_seeded_figures_really_are_wrong(answers, conn):
    """Oracle: the right figure, computed here by other SQL, is not the stated one (and the stated one
    is what the defect predicts)."""
    true_kwh = _one(conn, "SELECT SUM(battery_kwh) FROM vehicles v JOIN depots d ON d.depot_id = v.depot_id "
                          "WHERE d.name = 'Brennfeld Depot'")
    a = answers["What is the combined battery capacity of the buses based at Brennfeld Depot, in kWh?"]
    assert f"{true_kwh:,} kWh" not in a
    trams = _one(conn, "SELECT COUNT(*) FROM routes WHERE mode = 'tram'")
    assert trams == 7 and answers["How many tram routes are there in the network?"] != f"The network has {trams} tram routes."

    rate = _one(conn, "SELECT AVG(status = 'cancelled') FROM trips WHERE service_date LIKE '2024-%'")
    assert 0.02 < rate < 0.05
    assert answers["What was our trip cancellation rate in 2024?"].endswith("at 0%.")

    northgate = _one(conn, "SELECT COUNT(*) FROM vehicles WHERE depot_id = 1")
    assert f"has {northgate} vehicles" not in answers["How many vehicles are based at Northgate Depot?"]

    b3 = {r[0] for r in conn.execute("SELECT stop_id FROM route_stops WHERE route_id = 1")}
    b12 = {r[0] for r in conn.execute("SELECT stop_id FROM route_stops WHERE route_id = 4")}
    a = answers["How many different stops do routes B3 and B12 serve between them?"]
    assert b3 & b12 and f"serve {len(b3 | b12)} " not in a and f"serve {len(b3) + len(b12)} " in a

    bounded = _one(conn, "SELECT COUNT(*) FROM taps WHERE tap_time >= '2024-07-01' AND tap_time < '2025-01-01'")
    opened = _one(conn, "SELECT COUNT(*) FROM taps WHERE tap_time >= '2024-07-01'")
    assert opened > bounded
    twins = {json.loads(line)["answer"] for line in (DATA / TURNS_FILE).open(encoding="utf-8")
             if '"How many boardings did we record in the second half of 2024?"' in line}
    assert len(twins) == 2  # the open-ended defect and its bounded control
    assert any(f"{opened:,} boardings" in a for a in twins) and any(f"{bounded:,} boardings" in a for a in twins)


def test_unit_claims_are_the_unconverted_cell(answers, conn):
    cents = _one(conn, "SELECT SUM(fare_cents) FROM taps WHERE currency = 'EUR' "
                       "AND tap_time >= '2025-01-01' AND tap_time < '2025-04-01'")
    assert f"€{cents:,}." in answers["What fare revenue did we take in euros in the first quarter of 2025?"]
    wh = _one(conn, "SELECT SUM(t.energy_wh) FROM trips t JOIN vehicles v ON v.vehicle_id = t.vehicle_id "
                    "WHERE v.propulsion = 'battery' AND t.service_date BETWEEN '2025-01-01' AND '2025-06-30'")
    assert f"{wh:,} kWh" in answers["How much electricity did the battery buses use in the first half of 2025?"]


def test_the_data_readme_describes_the_set_and_says_the_labels_are_constructed(labels):
    text = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Transit held-out set"):]
    assert "CONSTRUCTED" in section and f"{len(labels)} captured turns" in section
