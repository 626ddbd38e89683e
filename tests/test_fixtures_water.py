"""The second held-out failure-class set, on the water-utility warehouse: frozen, deterministic,
labels consistent.

The oracles here are independent of the set file: figures recomputed by separately written SQL against a
fresh warehouse (or by Python over the fetched rows). The checks every failure-class set shares (rebuild
byte-identical, one label per segment, the DESIGN §4 midpoint band, claims, open periods, row counts, the
README section) are in ``test_fixtures_class_sets``; this file keeps the set's own.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns
from axon_eval.warehouses.water import LABELS_FILE, TURNS_FILE, build_water_warehouse

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"


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
def answers(turns) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in turns:
        out.setdefault(t.question, []).append(t.answer)
    return out


@pytest.fixture(scope="module")
def conn():
    c = build_water_warehouse()
    yield c
    c.close()


def _one(conn, sql):
    return conn.execute(sql).fetchone()[0]


def _only(answers, question) -> str:
    (a,) = answers[question]
    return a


def test_derived_totals_are_the_sums_of_the_shown_rows(turns, labels):
    by_id = {t.turn_id: t for t in turns}
    for r in (r for r in labels if r["note"].startswith("derived_total:")):
        (step,) = by_id[r["turn_id"]].sql_steps
        total = sum(row[-1] for row in step.rows)
        answer = by_id[r["turn_id"]].answer
        assert f"{total:,}" in answer or f"{total / 1000:,.0f} thousand" in answer, (r["segment_id"], total)


def test_seeded_fan_outs_really_inflate_the_figure(answers, conn):
    """Oracle: the parent's figure computed here without the child join is not the stated one."""
    km = _one(conn, "SELECT ROUND(SUM(p.length_m) / 1000.0, 2) FROM pipes p JOIN districts d USING (district_id) "
                    "WHERE p.material = 'cast_iron' AND d.name = 'Old Quarry District'")
    a = _only(answers, "How many kilometres of cast-iron main are still in the ground in Old Quarry District?")
    assert f"{km:,} km" not in a
    assert f"{km:,} km" in _only(answers, "How much cast-iron main does Old Quarry District have, and how many "
                                          "work orders has it needed?")
    per_district = dict(conn.execute(
        "SELECT d.name, COUNT(*) FROM accounts a JOIN districts d USING (district_id) "
        "WHERE a.category = 'commercial' AND a.status = 'active' GROUP BY d.name").fetchall())
    a = _only(answers, "How many active commercial accounts does each district have?")
    assert f"Riverside District {per_district['Riverside District']}," not in a
    cap = _one(conn, "SELECT SUM(capacity_m3_per_day) FROM pumping_stations")
    a = _only(answers, "What is the combined daily capacity of the stations we deliver sodium hypochlorite to?")
    assert f"{cap:,} m³" not in a and "The 7 stations" in a


def test_unit_claims_are_the_unconverted_cell(answers, conn):
    litres = _one(conn, "SELECT SUM(r.volume_litres) FROM readings r JOIN meters m USING (meter_id) "
                        "JOIN accounts a USING (account_id) WHERE a.district_id = 5 "
                        "AND r.reading_date LIKE '2025-03-%'")
    a = _only(answers, "What volume of water did the March 2025 meter reads show for Saltmarsh District, in cubic metres?")
    assert f"{litres:,} m³" in a
    cents = _one(conn, "SELECT SUM(cost_cents) FROM work_orders WHERE kind = 'burst' AND opened_date LIKE '2024-%'")
    assert f"${cents:,}." in _only(answers, "What did repairing burst mains cost us in 2024?")
    metres = _one(conn, "SELECT ROUND(SUM(length_m), 1) FROM pipes WHERE material = 'asbestos_cement'")
    assert f"{metres:,} km" in _only(answers, "How much asbestos-cement main is left in the network?")


def test_open_periods_really_pick_up_other_periods_and_their_twins_do_not(answers, conn):
    bounded = _one(conn, "SELECT ROUND(SUM(r.volume_litres) / 1000.0, 1) FROM readings r JOIN meters m USING (meter_id) "
                         "JOIN accounts a USING (account_id) WHERE a.category = 'commercial' "
                         "AND r.reading_date LIKE '2024-%'")
    opened = _one(conn, "SELECT ROUND(SUM(r.volume_litres) / 1000.0, 1) FROM readings r JOIN meters m USING (meter_id) "
                        "JOIN accounts a USING (account_id) WHERE a.category = 'commercial' "
                        "AND r.reading_date >= '2024-01-01'")
    assert opened > bounded
    twins = answers["How many cubic metres did commercial meters record in 2024?"]
    assert len(twins) == 2
    assert any(f"{opened:,} m³" in a for a in twins) and any(f"{bounded:,} m³" in a for a in twins)
    q3 = _one(conn, "SELECT COUNT(*) FROM work_orders WHERE closed_date LIKE '2024-07-%' "
                    "OR closed_date LIKE '2024-08-%' OR closed_date LIKE '2024-09-%'")
    twins = answers["How many work orders did the crews close out in the third quarter of 2024?"]
    assert len(twins) == 2 and any(f"out {q3:,} work" in a for a in twins)
    june = _one(conn, "SELECT SUM(quantity_kg) FROM chemical_deliveries WHERE chemical = 'ferric chloride' "
                      "AND delivered_date LIKE '2024-06-%'")
    assert f"{june:,} kg" not in _only(answers, "How much ferric chloride was delivered in June 2024?")


def test_the_own_classes_really_change_the_figure(answers, conn):
    # a LEFT JOIN made inner: some districts really had no burst in April 2025, yet the answer says none did
    with_burst = _one(conn, "SELECT COUNT(DISTINCT p.district_id) FROM work_orders w JOIN pipes p USING (pipe_id) "
                            "WHERE w.kind = 'burst' AND w.opened_date LIKE '2025-04-%'")
    assert with_burst < 8
    assert "every district had at least one" in _only(
        answers, "Did any district get through April 2025 without a single burst main?")
    # the wrong status value
    suspended = _one(conn, "SELECT COUNT(*) FROM accounts WHERE district_id = 4 AND status = 'suspended'")
    a = _only(answers, "How many accounts in Northbank District are currently suspended?")
    assert not a.startswith(f"{suspended} ")
    # a mean of group means, against the plain mean over every sample (Python's statistics.fmean)
    chlorine = [r[0] for r in conn.execute("SELECT mg_per_l FROM quality_samples WHERE parameter = 'free_chlorine' "
                                           "AND sample_date LIKE '2024-%'")]
    a = _only(answers, "What was the average free-chlorine residual across all of our 2024 samples?")
    assert f"{statistics.fmean(chlorine):.3f} mg/L" not in a
    # the wrong date column
    closed_june = _one(conn, "SELECT COUNT(*) FROM work_orders WHERE closed_date LIKE '2025-06-%'")
    assert _only(answers, "How many work orders did we close in June 2025?") != f"We closed {closed_june} work orders in June 2025."


def test_the_median_twin_is_the_middle_bill_and_the_defect_is_not(answers, conn):
    bills = [r[0] for r in conn.execute("SELECT b.amount_cents FROM bills b JOIN accounts a USING (account_id) "
                                        "WHERE a.category = 'residential' AND b.issued_date LIKE '2024-%'")]
    median = f"${statistics.median(bills) / 100:,.2f}."
    twins = answers["What was the median residential water bill issued in 2024?"]
    assert len(twins) == 2 and sum(a.endswith(median) for a in twins) == 1
