"""The failure-class set on the library warehouse: its class mix and seeded figures.

The build-level checks it shares with the held-out sets (rebuild byte-identical, one label per segment,
the midpoint band, open periods, every step re-run) are in ``test_fixtures_class_sets``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from axon_eval.warehouses.library import LABELS_FILE, TURNS_FILE, build_library_warehouse

DATA = Path(__file__).resolve().parent.parent / "data" / "turns"


def test_half_correct_at_least_40_and_every_class_present():
    with (DATA / LABELS_FILE).open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 40
    good = sum(r["verdict"] == "good" for r in rows)
    assert abs(good - (len(rows) - good)) <= 1
    classes = {r["note"].split(":", 1)[0] for r in rows}
    assert {"fan_out", "units", "open_period", "wrong_row", "statistic", "demonym", "currency_code",
            "plural", "derived_total", "row_count"} <= classes


def test_fan_out_figures_really_are_inflated():
    """Oracle: the de-duplicated figure, computed independently here, is smaller than the stated one."""
    conn = build_library_warehouse()
    try:
        true_area = conn.execute("SELECT SUM(floor_area_m2) FROM branches WHERE city = 'Ashford'").fetchone()[0]
        true_members = conn.execute("SELECT COUNT(*) FROM members m JOIN branches b ON b.branch_id = m.branch_id "
                                    "WHERE b.name = 'Harbour Branch'").fetchone()[0]
    finally:
        conn.close()
    answers = [json.loads(line)["answer"] for line in (DATA / TURNS_FILE).open(encoding="utf-8")]
    assert any(f"{true_area:,}" not in a and "Ashford branches cover" in a for a in answers)
    assert true_area == 6400 + 1850 + 990
    stated = next(a for a in answers if a.startswith("Harbour Branch has"))
    assert f"{true_members:,}" not in stated
