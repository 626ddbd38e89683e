"""The held-out failure-class set on the transit warehouse: frozen, deterministic, labels consistent.

The oracles here are independent of the set file: figures recomputed by separately written SQL against a
fresh warehouse. The checks every failure-class set shares (rebuild byte-identical, one label per segment, the
DESIGN §4 midpoint band, claims, open periods, row counts, the README section) are in
``test_fixtures_class_sets``; this file keeps the set's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns
from axon_eval.warehouses.transit import TURNS_FILE, build_transit_warehouse

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"


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
