"""Tests of the e-commerce warehouse and the out-of-domain judge set (axon_eval.warehouses.shop / .ood)."""

from __future__ import annotations

import csv
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from axon_eval.evidence import load_turns, split_segments, trajectory_facts
from axon_eval.fixtures.common import Label, expected_band
from axon_eval.fixtures.capture import MAX_STORED_ROWS
from axon_eval.fixtures.ood import FAMILIES, OOD_LABEL_COLUMNS, build_ood_files
from axon_eval.warehouses.shop import ANCHORS, SHOP_TABLES, check_anchors
from axon_eval.warehouses.sports import table_contents
from axon_eval.labels import LABEL_COLUMNS, load_labels
from axon_eval.warehouses.shop import shop_database

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SHOP = shop_database(DATA)  # expanded from the committed shop.sqlite.gz
OOD_TURNS = DATA / "turns" / "ood_turns.jsonl"
OOD_LABELS = DATA / "turns" / "ood_labels.csv"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ood")
    build_ood_files(out)
    return out


@pytest.fixture(scope="module")
def turns():
    loaded, invalid = load_turns(OOD_TURNS)
    assert invalid == [], [str(i) for i in invalid]
    return {t.turn_id: t for t in loaded}


@pytest.fixture(scope="module")
def labels() -> list[dict[str, str]]:
    with OOD_LABELS.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _shop():
    return sqlite3.connect(f"file:{SHOP}?mode=ro", uri=True)


# --- determinism -----------------------------------------------------------------------------
def test_rebuild_is_byte_identical_to_the_committed_set(rebuilt: Path):
    for rel in ("turns/ood_turns.jsonl", "turns/ood_labels.csv", "warehouse/shop.sqlite.gz"):
        assert (rebuilt / rel).read_bytes() == (DATA / rel).read_bytes(), f"{rel} differs from a rebuild"
    assert table_contents(rebuilt / "warehouse" / "shop.sqlite") == table_contents(SHOP)


def test_second_rebuild_is_identical(rebuilt: Path, tmp_path: Path):
    build_ood_files(tmp_path)
    for rel in ("turns/ood_turns.jsonl", "turns/ood_labels.csv", "warehouse/shop.sqlite", "warehouse/shop.sqlite.gz"):
        assert (tmp_path / rel).read_bytes() == (rebuilt / rel).read_bytes(), rel


# --- the warehouse ---------------------------------------------------------------------------
def test_shop_warehouse_is_small_read_only_and_has_the_business():
    assert SHOP.stat().st_size < 6 * 1024 * 1024
    assert SHOP.with_name("shop.sqlite.gz").stat().st_size < 2 * 1024 * 1024  # what the repository carries
    conn = _shop()
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert set(SHOP_TABLES) <= names
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM orders")
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        assert one("SELECT COUNT(*) FROM categories WHERE name = 'Tanks & Kits'") == 1
        assert one("SELECT MIN(order_date) FROM orders") <= "2023-01-31"
        assert one("SELECT MAX(order_date) FROM orders") >= "2024-12-01"  # two years of trade
        states = {r[0] for r in conn.execute("SELECT DISTINCT state FROM customers")}
        assert "TX" in states and all(re.fullmatch(r"[A-Z]{2}", s) for s in states) and len(states) == 51
        assert one("SELECT COUNT(*) FROM refunds WHERE amount >= 0") == 0
        assert one("SELECT COUNT(*) FROM monthly_pnl WHERE net_income < 0") >= 3
        assert one("SELECT COUNT(*) FROM orders WHERE order_total <> ROUND(order_total)") > 1000  # cents
        assert one("SELECT COUNT(*) FROM shipments WHERE delivered_date > promised_date") > 100
        assert one("SELECT COUNT(*) FROM inventory_daily WHERE stockout = 1") > 1000
        assert one("SELECT COUNT(*) FROM inventory_daily WHERE (on_hand = 0) <> (stockout = 1)") == 0
        assert one("SELECT MIN(holding_cost_per_unit_month) FROM product_variants") > 0
        assert one("SELECT COUNT(DISTINCT channel_id) FROM marketing_spend") == 4
        # finance's net income is the sum of its lines; attribution is a narrower scope than revenue
        assert one("""SELECT COUNT(*) FROM monthly_pnl WHERE ABS(net_income - (gross_sales + discounts
                      + shipping_income + refunds + cogs + marketing + fulfilment + overhead + write_offs)) > 0.011""") == 0
        assert one("SELECT SUM(attributed_revenue) FROM order_attribution") < \
            one("SELECT SUM(order_total) FROM orders WHERE status = 'completed'")
        assert one("SELECT COUNT(*) FROM order_items oi JOIN orders o ON o.order_id = oi.order_id "
                   "WHERE ABS(oi.line_total - oi.quantity * oi.unit_price) > 0.005") == 0
    finally:
        conn.close()
    assert check_anchors(SHOP)["recall_month_net_income"] == ANCHORS["recall_month_net_income"] == -1250000.5


# --- the captured turns ----------------------------------------------------------------------
def test_the_file_validates_with_load_turns_and_is_large_enough(turns):
    assert len(turns) >= 60
    assert all(re.fullmatch(r"shop-\d{4}", tid) for tid in turns)
    assert {t.surface for t in turns.values()} == {"web", "slack", "mcp"}
    for t in turns.values():
        assert (t.answer is None) == (t.surface == "mcp")


def test_every_statement_reexecutes_to_its_stored_rows_and_count(turns):
    conn = _shop()
    n_ok = 0
    try:
        for t in turns.values():
            for step in t.sql_steps:
                if step.status == "ok":
                    cur = conn.execute(step.sql)
                    rows = [list(r) for r in cur.fetchall()]
                    assert [d[0] for d in cur.description] == step.columns, t.turn_id
                    assert step.row_count == len(rows), t.turn_id
                    assert step.rows == rows[:MAX_STORED_ROWS], t.turn_id
                    n_ok += 1
                elif step.status == "error":
                    with pytest.raises(sqlite3.Error) as exc:
                        conn.execute(step.sql).fetchall()
                    assert str(exc.value) == step.error, t.turn_id
                else:  # timeout (really interrupted when captured) or blocked (never run)
                    assert step.rows == [] and step.error and step.row_count == 0
    finally:
        conn.close()
    assert n_ok >= 60


def test_labels_have_the_sample_format_and_cover_every_segment_once(turns, labels):
    with OOD_LABELS.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert header == OOD_LABEL_COLUMNS == list(LABEL_COLUMNS)
    with (DATA / "turns" / "labels.csv").open(newline="", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == header
    df = load_labels(OOD_LABELS)  # validates ranges and verdicts
    assert len(df) == len(labels)
    expected = [s.segment_id for t in turns.values() for s in split_segments(t)]
    got = [r["segment_id"] for r in labels]
    assert sorted(got) == sorted(expected) and len(set(got)) == len(got)
    for r in labels:
        turn = turns[r["turn_id"]]
        if turn.answer is None:
            assert r["answer_faithfulness_min"] == r["answer_faithfulness_max"] == ""
            assert r["unsupported_claims"] == ""
        for claim in filter(None, r["unsupported_claims"].split(";")):
            assert claim in turn.answer, (r["segment_id"], claim)
        assert re.match(r"[a-z_]+: ", r["note"]), r["note"]  # phrasing feature first
        # the verdict is the band of the range midpoints under the scoring rules
        rng = lambda d: (int(r[f"{d}_min"]), int(r[f"{d}_max"]))  # noqa: E731
        faith = None if r["answer_faithfulness_min"] == "" else rng("answer_faithfulness")
        label = Label(r["defect"], rng("intent_understood"), rng("sql_quality"), rng("result_relevance"),
                      faith, r["verdict"])
        assert expected_band(label, turn) == r["verdict"], r["segment_id"]


def test_defect_families_each_appear_several_times(labels):
    turn_family = Counter({r["turn_id"]: r["scenario"] for r in labels}.values())
    assert set(turn_family) == set(FAMILIES)
    for family in FAMILIES:
        assert turn_family[family] >= 3, (family, turn_family[family])
    defects = Counter(r["defect"] for r in labels)
    # open_period is no seeded family: the label correction of 2026-12-01 (data/README.md, "Label changes")
    # gave it to segments of the families they were built as
    assert set(defects) == set(FAMILIES) - {"bundled"} | {"open_period"}
    for defect, n in defects.items():
        assert n >= 3, (defect, n)
    verdicts = Counter(r["verdict"] for r in labels)
    assert min(verdicts[v] for v in ("good", "partial", "poor")) >= 10


def test_families_have_their_defining_trajectories(turns, labels):
    family = {r["turn_id"]: r["scenario"] for r in labels}
    for t in turns.values():
        f, facts = family[t.turn_id], trajectory_facts(t)
        if f == "no_tools":
            assert t.steps == [] and facts.no_tools and t.answer
        if f == "no_sql":
            assert t.steps and not t.sql_steps and re.search(r"\d", t.answer)
        if f == "all_sql_failed":
            assert facts.all_sql_failed
        if f == "unrecovered_failure":
            assert facts.ended_on_failure and not facts.all_sql_failed
        if f == "recovered_timeout":
            assert facts.recovered_errors >= 1 and t.sql_steps[-1].status == "ok"
        if f == "guardrail_block":
            assert any(s.status == "blocked" for s in t.sql_steps)
        if f == "schema_discovery":
            assert t.steps and not t.sql_steps
        if f == "beyond_horizon":
            assert max(s.row_count for s in t.sql_steps) >= 25
        if f == "bundled":
            assert len(split_segments(t)) >= 2
        if f == "prompt_injection":
            text = (t.answer or "") + repr([s.rows for s in t.sql_steps])
            assert "ignore previous instructions" in text.lower()


def _by_feature(turns, labels, feature: str, verdict: str | None = None):
    out = []
    for r in labels:
        if r["note"].startswith(feature + ":") and (verdict is None or r["verdict"] == verdict):
            out.append((r, turns[r["turn_id"]]))
    return out


def test_the_listed_cases_are_present_with_correct_and_defective_forms(turns, labels):
    sqls = lambda t: " ".join(s.sql for s in t.sql_steps)  # noqa: E731
    # a state code in WHERE for a question naming the state: correct
    tx = [t for r, t in _by_feature(turns, labels, "state_code", "good")
          if "c.state = 'TX'" in sqls(t) and "Texas" in t.question]
    assert tx
    # "net loss of $1,250,000.50" against the cell -1250000.5: correct
    loss = [t for r, t in _by_feature(turns, labels, "loss_wording", "good")
            if t.answer and "net loss of $1,250,000.50" in t.answer
            and any(-1250000.5 in row for s in t.sql_steps for row in s.rows)]
    assert loss
    # a half-open month range for "in March 2024": correct (and a wrong month: intent miss)
    march = [t for r, t in _by_feature(turns, labels, "month_filter", "good")
             if ">= '2024-03-01' AND order_date < '2024-04-01'" in sqls(t) and "March 2024" in t.question]
    assert march
    assert _by_feature(turns, labels, "month_filter", "poor")
    # scale suffixes and accounting negatives read right: correct
    suffixed = [t.answer for r, t in _by_feature(turns, labels, "scale_suffix", "good") if t.answer]
    assert any(re.search(r"\$\d+(\.\d)?M\b", a) for a in suffixed)
    assert any(re.search(r"\$\d+K\b", a) for a in suffixed)
    assert any(re.search(r"\d\.\dbn\b", a) for a in suffixed)
    assert any(re.search(r"\(\d{1,3}(,\d{3})*\.\d\d\)", t.answer or "")
               for r, t in _by_feature(turns, labels, "accounting_negative", "good"))
    assert any("percentage points" in (t.answer or "")
               for r, t in _by_feature(turns, labels, "percentage_points", "good"))
    # "top 5" answered with LIMIT 3: incomplete
    limit3 = [r for r, t in _by_feature(turns, labels, "top_n") if r["defect"] == "incomplete_set"
              and "LIMIT 3" in sqls(t) and re.search(r"top (5|five)", t.question, re.I)]
    assert len(limit3) >= 2
    # a data question answered without SQL: a defect, both with and without tool steps
    nosql = [r for r in labels if r["defect"] in ("no_tools", "no_sql")]
    assert {r["defect"] for r in nosql} == {"no_tools", "no_sql"}
    assert all(r["verdict"] == "poor" and int(r["sql_quality_max"]) <= 2 for r in nosql)
    # an invented figure in a 37-row result with 20 rows shown: fabricated
    fab37 = [r for r, t in _by_feature(turns, labels, "unseen_rows")
             if r["defect"] == "fabricated_figure" and t.sql_steps[0].row_count == 37]
    assert len(fab37) >= 2
    for r in fab37:
        t = turns[r["turn_id"]]
        cells = [c for row in t.sql_steps[0].rows for c in row]
        (claim,) = r["unsupported_claims"].split(";")
        value = float(re.sub(r"[^\d.]", "", claim))
        assert all(not (isinstance(c, int | float) and abs(c - value) < 0.5) for c in cells)
