"""The second held-out failure-class set, on the water-utility warehouse (issue 22): frozen, deterministic,
labels consistent.

The oracles here are independent of the generator: figures recomputed by separately written SQL against
a fresh warehouse (or by Python over the fetched rows), and the DESIGN §4 midpoint band written out
below (weights 0.30/0.25/0.25/0.20, bands 80/50; no turn of this set has a failed or missing step, so no
cap applies).
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns, split_segments, trajectory_facts
from axon_eval.fixtures.common import OPEN_PERIOD_RANGES
from axon_eval.fixtures.water import LABELS_FILE, TURNS_FILE, build_water_files, build_water_warehouse

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "turns"
CLASSES = {"fan_out", "units", "open_period", "wrong_row", "statistic", "left_join", "wrong_status",
           "mean_of_means", "date_column", "demonym", "currency_code", "plural", "derived_total", "row_count",
           "control"}


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


def test_rebuild_is_byte_identical_to_the_committed_set(tmp_path):
    summary = build_water_files(tmp_path)
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
    assert len(rows) == 3
    for r in rows:
        (step,) = by_id[r["turn_id"]].sql_steps
        assert step.row_count > len(step.rows) == 50
        assert str(step.row_count) in by_id[r["turn_id"]].answer


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


def test_the_data_readme_describes_the_set_and_says_the_labels_are_constructed(labels):
    text = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Water held-out set"):]
    assert "CONSTRUCTED" in section and f"{len(labels)} captured turns" in section
