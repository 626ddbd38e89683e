"""The third held-out failure-class set, on the hotel group's warehouse: frozen, deterministic,
labels consistent.

The oracles here are independent of the set file: figures recomputed by separately written SQL against a
fresh warehouse (or by Python over the fetched rows: ``statistics``, ``datetime``). The checks every
failure-class set shares (rebuild byte-identical, one label per segment, the DESIGN §4 midpoint band, claims,
open periods, row counts, the README section) are in ``test_fixtures_class_sets``; this file keeps the set's
own.
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns
from axon_eval.warehouses.hotel import LABELS_FILE, TURNS_FILE, build_hotel_warehouse

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
    c = build_hotel_warehouse()
    yield c
    c.close()


def _one(conn, sql):
    return conn.execute(sql).fetchone()[0]


def _only(answers, question) -> str:
    (a,) = answers[question]
    return a


def test_the_warehouse_keeps_its_own_invariants(conn):
    """Nights are check_out - check_in (Python's date arithmetic); room charges are one per night."""
    for ci, co, n in conn.execute("SELECT check_in, check_out, nights FROM bookings LIMIT 2000"):
        assert (date.fromisoformat(co) - date.fromisoformat(ci)).days == n
    room_charges = Counter(r[0] for r in conn.execute("SELECT booking_id FROM folio_charges WHERE category = 'room'"))
    completed = dict(conn.execute("SELECT booking_id, nights FROM bookings WHERE status = 'completed'").fetchall())
    assert room_charges == Counter(completed)
    assert _one(conn, "SELECT MAX(check_out) FROM bookings WHERE status = 'completed'") <= "2025-06-30"


def test_derived_totals_are_the_sums_of_the_shown_rows(turns, labels):
    by_id = {t.turn_id: t for t in turns}
    found = 0
    for r in labels:
        if not (r["note"].startswith("derived_total:") or "the total is the two rows' sum" in r["note"]):
            continue
        (step,) = by_id[r["turn_id"]].sql_steps
        assert step.row_count == len(step.rows)  # every term is in the rows
        total = round(sum(row[-1] for row in step.rows), 2)
        answer = by_id[r["turn_id"]].answer
        assert any(form in answer for form in (f"{total:,}", f"€{total:,.2f}", f"{total:,.1f} hours")), (r["segment_id"], total)
        found += 1
    assert found == 4


def test_seeded_fan_outs_really_inflate_the_figure(answers, conn):
    """Oracle: the parent's figure computed here without the child join is not the stated one."""
    nights = _one(conn, "SELECT SUM(b.nights) FROM bookings b JOIN hotels h USING (hotel_id) "
                        "WHERE h.name = 'Villa Ceres Florence' AND b.check_in LIKE '2024-%' "
                        "AND EXISTS (SELECT 1 FROM folio_charges f WHERE f.booking_id = b.booking_id AND f.category = 'spa')")
    a = _only(answers, "How many room-nights did spa-using guests account for at Villa Ceres Florence in 2024?")
    assert f" {nights:,} room-nights" not in a
    adults = _one(conn, "SELECT SUM(adults) FROM bookings b JOIN hotels h USING (hotel_id) WHERE h.name = 'Hotel Isar Munich' "
                        "AND b.status = 'completed' AND b.check_in LIKE '2025-03-%'")
    a = _only(answers, "How many adult guests did Hotel Isar Munich host in March 2025?")
    assert f"hosted {adults:,} adult" not in a
    kwh = _one(conn, "SELECT ROUND(SUM(energy_kwh), 1) FROM energy_days e JOIN hotels h USING (hotel_id) "
                     "WHERE h.name = 'Casa Alba Seville' AND e.day LIKE '2025-06-%'")
    shifts = _one(conn, "SELECT COUNT(*) FROM housekeeping_shifts s JOIN hotels h USING (hotel_id) "
                        "WHERE h.name = 'Casa Alba Seville' AND s.shift_date LIKE '2025-06-%'")
    a = _only(answers, "What was Casa Alba Seville's electricity use in June 2025, and how many housekeeping shifts did it run?")
    assert f"{kwh:,} kWh" not in a and f"ran {shifts} housekeeping shifts" in a
    # the fan-out-safe twin states the plain figure
    lyon = _one(conn, "SELECT ROUND(SUM(energy_kwh), 1) FROM energy_days e JOIN hotels h USING (hotel_id) "
                      "WHERE h.name = 'Hotel Meridiane Lyon' AND e.day LIKE '2025-06-%'")
    assert f"{lyon:,} kWh" in _only(answers, "What was Hotel Meridiane Lyon's electricity use in June 2025, and how many "
                                             "housekeeping shifts did it run?")


def test_unit_claims_are_the_unconverted_cell(answers, conn):
    cents = _one(conn, "SELECT SUM(f.amount_cents) FROM folio_charges f JOIN bookings b USING (booking_id) "
                       "WHERE b.hotel_id = 1 AND f.category = 'minibar' AND f.charge_date LIKE '2024-%'")
    assert f"€{cents:,} " in _only(answers, "What did the minibars at Hotel Aurora Lisbon bring in during 2024?")
    minutes = _one(conn, "SELECT SUM(minutes_worked) FROM housekeeping_shifts WHERE hotel_id = 9 AND shift_date LIKE '2025-05-%'")
    assert f"{minutes:,} hours" in _only(answers, "How many hours of housekeeping did Casa Alba Seville use in May 2025?")
    scores = [r[0] for r in conn.execute("SELECT score FROM reviews WHERE submitted_date LIKE '2024-%'")]
    share = sum(s >= 9 for s in scores) / len(scores)
    assert _only(answers, "What proportion of the reviews submitted in 2024 gave us a 9 or a 10?").startswith(f"{share:.3f}%")
    # the converted twin: minutes / 60 in the SQL, stated as hours
    lyon = sum(r[0] for r in conn.execute("SELECT minutes_worked FROM housekeeping_shifts WHERE hotel_id = 10 "
                                          "AND shift_date LIKE '2025-05-%'")) / 60
    assert f"{lyon:,.1f} hours" in _only(answers, "How many hours of housekeeping did Hotel Meridiane Lyon use in May 2025?")


def test_open_periods_really_pick_up_other_periods_and_their_twins_do_not(answers, conn):
    july = _one(conn, "SELECT COUNT(*) FROM bookings WHERE hotel_id = 3 AND booked_date LIKE '2024-07-%'")
    opened = _one(conn, "SELECT COUNT(*) FROM bookings WHERE hotel_id = 3 AND booked_date >= '2024-07-01'")
    assert opened > july
    twins = answers["How many bookings did Villa Ceres Florence take in July 2024?"]
    assert len(twins) == 2 and any(f"took {july:,} " in a for a in twins) and any(f"took {opened:,} " in a for a in twins)
    q4 = _one(conn, "SELECT COUNT(*) FROM housekeeping_shifts WHERE shift_date BETWEEN '2024-10-01' AND '2024-12-31'")
    twins = answers["How many housekeeping shifts did we staff across the group in Q4 2024?"]
    assert len(twins) == 2 and sum(f"staffed {q4:,} " in a for a in twins) == 1
    zurich = [r[0] for r in conn.execute("SELECT r.score FROM reviews r JOIN bookings b USING (booking_id) "
                                         "WHERE b.hotel_id = 8 AND r.submitted_date LIKE '2024-%'")]
    twins = answers["What did Solenne Zurich Lakeside average on guest reviews in 2024?"]
    assert len(twins) == 2 and sum(f"({len(zurich)} reviews)" in a for a in twins) == 1
    h1 = _one(conn, "SELECT SUM(f.amount_cents) FROM folio_charges f JOIN bookings b USING (booking_id) WHERE b.hotel_id = 3 "
                    "AND f.category = 'spa' AND f.charge_date BETWEEN '2025-01-01' AND '2025-06-30'") / 100
    assert f"€{h1:,.2f}" not in _only(answers, "How much spa revenue did Villa Ceres Florence take in the first half of 2025?")


def test_wrong_rows_are_not_at_the_asked_end(answers, conn):
    newest = conn.execute("SELECT name FROM hotels ORDER BY opened_year DESC LIMIT 1").fetchone()[0]
    assert not _only(answers, "Which is the newest hotel in the group?").startswith(newest)
    months = Counter(r[0][5:7] for r in conn.execute("SELECT check_in FROM bookings WHERE hotel_id = 2 "
                                                      "AND status = 'completed' AND check_in LIKE '2024-%'"))
    assert months.most_common(1)[0][0] != "01"
    assert _only(answers, "Which month of 2024 was the busiest for arrivals at Solenne Porto Ribeira?").startswith("January")


def test_the_own_classes_really_change_the_figure(answers, conn):
    # nights off by one: the stored nights (check_out - check_in) against the stated figure
    nights = _one(conn, "SELECT SUM(nights) FROM bookings WHERE hotel_id = 5 AND status = 'completed' "
                        "AND check_in BETWEEN '2025-01-01' AND '2025-03-31'")
    assert f"sold {nights:,} room-nights" not in _only(answers, "How many room-nights did Solenne Berlin Mitte sell in Q1 2025?")
    # a HAVING on room-nights: fewer hotels really had more than 1,000 stays
    stays = Counter(r[0] for r in conn.execute("SELECT hotel_id FROM bookings WHERE status = 'completed' "
                                               "AND check_in LIKE '2024-%'"))
    qualifying = sum(n > 1000 for n in stays.values())
    assert qualifying < 10
    assert _only(answers, "Which hotels had more than 1,000 completed stays in 2024?").startswith("10 hotels")
    # a CASE that drops phone bookings into ELSE
    direct = _one(conn, "SELECT COUNT(*) FROM bookings WHERE channel IN ('website', 'phone') AND check_in LIKE '2024-%'")
    a = _only(answers, "How did bookings for 2024 stays split between our direct channels (website and phone) and intermediaries?")
    assert f"{direct:,} bookings came direct" not in a
    # COALESCE as zero: the plain mean over the reviews (statistics.fmean) is far above the stated one
    scores = [r[0] for r in conn.execute("SELECT r.score FROM reviews r JOIN bookings b USING (booking_id) WHERE b.hotel_id = 2 "
                                         "AND b.status = 'completed' AND b.check_in LIKE '2024-%'")]
    a = _only(answers, "What was the average guest score for completed 2024 stays at Solenne Porto Ribeira?")
    assert f"{statistics.fmean(scores):.2f}" not in a
    # the wrong denominator: cancelled over every booking
    status = Counter(r[0] for r in conn.execute("SELECT status FROM bookings WHERE check_in LIKE '2024-%'"))
    rate = 100 * status["cancelled"] / sum(status.values())
    assert not _only(answers, "What percentage of bookings for 2024 stays were cancelled?").startswith(f"{rate:.1f}%")
    status23 = Counter(r[0] for r in conn.execute("SELECT status FROM bookings WHERE check_in LIKE '2023-%'"))
    rate23 = 100 * status23["cancelled"] / sum(status23.values())
    assert _only(answers, "What percentage of bookings for 2023 stays were cancelled?").startswith(f"{rate23:.1f}%")


def test_the_statistic_twins_compute_what_is_asked(answers, conn):
    nights = [r[0] for r in conn.execute("SELECT nights FROM bookings WHERE hotel_id = 6 AND status = 'completed'")]
    mode = statistics.mode(nights)
    assert f"is {mode} nights" in _only(answers, "What is the most common length of stay at Hotel Isar Munich?")
    seville = [r[0] for r in conn.execute("SELECT nights FROM bookings WHERE hotel_id = 9 AND status = 'completed'")]
    assert f"is {statistics.mode(seville)} nights" not in _only(answers, "What is the most common length of stay at Casa Alba Seville?")
    months = Counter(r[0][:7] for r in conn.execute("SELECT booked_date FROM bookings WHERE booked_date BETWEEN '2025-04-01' AND '2025-06-30'"))
    running = months["2025-04"] + months["2025-05"]
    assert f"{running:,} by the end of May" in _only(
        answers, "What was the cumulative number of bookings taken by the end of each month of Q2 2025?")
