"""Tests of the bundled sample data and its deterministic generator (axon_eval.fixtures)."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from axon_eval.events import assemble_turns
from axon_eval.evidence import load_turns, split_segments, trajectory_facts
from axon_eval.fixtures import build_all
from axon_eval.fixtures.build import LABEL_COLUMNS
from axon_eval.fixtures.horizon import HORIZON_LABEL_COLUMNS, KINDS, POSITIONS, position_range
from axon_eval.simulator.scenarios import DEFECT_TAGS
from axon_eval.warehouses.sports import table_contents

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
WAREHOUSE = DATA / "warehouse" / "sports.sqlite"
TURNS = DATA / "turns" / "sample_turns.jsonl"
LABELS = DATA / "turns" / "labels.csv"
EVENTS = DATA / "events" / "sample_events.jsonl"
HORIZON_TURNS = DATA / "turns" / "horizon_turns.jsonl"
HORIZON_LABELS = DATA / "turns" / "horizon_labels.csv"
GENERATED_TEXT = [
    "turns/sample_turns.jsonl", "turns/labels.csv", "events/sample_events.jsonl",
    "turns/horizon_turns.jsonl", "turns/horizon_labels.csv", "README.md", "warehouse/README.md",
]


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build_all(out)
    return out


@pytest.fixture(scope="module")
def turns():
    loaded, invalid = load_turns(TURNS)
    assert invalid == [], [str(i) for i in invalid]
    return loaded


@pytest.fixture(scope="module")
def labels() -> list[dict[str, str]]:
    with LABELS.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- determinism -----------------------------------------------------------------------------
def test_rebuild_is_deterministic_and_matches_committed_data(rebuilt: Path):
    assert table_contents(rebuilt / "warehouse" / "sports.sqlite") == table_contents(WAREHOUSE)
    for rel in GENERATED_TEXT:
        assert (rebuilt / rel).read_bytes() == (DATA / rel).read_bytes(), f"{rel} differs from a rebuild"


def test_second_rebuild_is_identical(rebuilt: Path, tmp_path: Path):
    build_all(tmp_path)
    assert table_contents(tmp_path / "warehouse" / "sports.sqlite") == \
        table_contents(rebuilt / "warehouse" / "sports.sqlite")
    for rel in GENERATED_TEXT:
        assert (tmp_path / rel).read_bytes() == (rebuilt / rel).read_bytes()


# --- warehouse -------------------------------------------------------------------------------
def test_warehouse_shape_and_scores_consistent_with_events():
    assert WAREHOUSE.stat().st_size < 5 * 1024 * 1024
    conn = sqlite3.connect(f"file:{WAREHOUSE}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT COUNT(*) FROM seasons").fetchone()[0] >= 4
        assert conn.execute("SELECT COUNT(*) FROM teams").fetchone()[0] >= 12
        stages = {r[0] for r in conn.execute("SELECT DISTINCT stage FROM matches")}
        assert stages == {"pool", "quarter-final", "semi-final", "final"}
        kinds = {r[0] for r in conn.execute("SELECT DISTINCT event_type FROM match_events")}
        assert kinds == {"try", "conversion", "penalty", "drop_goal", "yellow_card", "red_card"}
        points = ("CASE e.event_type WHEN 'try' THEN 5 WHEN 'conversion' THEN 2 "
                  "WHEN 'penalty' THEN 3 WHEN 'drop_goal' THEN 3 ELSE 0 END")
        for side in ("home", "away"):
            bad = conn.execute(f"""
                SELECT COUNT(*) FROM matches m WHERE m.{side}_score <> (
                    SELECT COALESCE(SUM({points}), 0) FROM match_events e
                    WHERE e.match_id = m.match_id AND e.team_id = m.{side}_team_id)""").fetchone()[0]
            assert bad == 0
        # conversions never outnumber tries for a side in a match
        assert conn.execute("""
            SELECT COUNT(*) FROM (
              SELECT match_id, team_id, SUM(event_type = 'try') AS t, SUM(event_type = 'conversion') AS c
              FROM match_events GROUP BY match_id, team_id) WHERE c > t""").fetchone()[0] == 0
        # at least one side scored exactly seven tries
        assert conn.execute("""
            SELECT COUNT(*) FROM (SELECT match_id, team_id FROM match_events WHERE event_type = 'try'
                                  GROUP BY match_id, team_id HAVING COUNT(*) = 7)""").fetchone()[0] >= 1
        # knockout matches are never drawn
        assert conn.execute(
            "SELECT COUNT(*) FROM matches WHERE stage <> 'pool' AND home_score = away_score").fetchone()[0] == 0
    finally:
        conn.close()


# --- captured turns --------------------------------------------------------------------------
def test_turns_validate_and_cover_the_axes(turns):
    assert len(turns) >= 80
    assert {t.region for t in turns} == {"eu", "us"}
    assert {"web", "slack", "mcp"} <= {t.surface for t in turns}
    assert len({t.client for t in turns}) >= 4
    for t in turns:
        assert re.fullmatch(r"(eu|us)-\d{4}", t.turn_id)
        assert (t.captured_at.year, t.captured_at.month) == (2026, 7)
        assert (t.answer is None) == (t.surface == "mcp")


def test_ok_sql_reproduces_against_the_warehouse(turns):
    conn = sqlite3.connect(f"file:{WAREHOUSE}?mode=ro", uri=True)
    try:
        n = 0
        for t in turns:
            for step in t.sql_steps:
                if step.status == "ok":
                    cur = conn.execute(step.sql)
                    rows = [list(r) for r in cur.fetchall()]
                    assert [d[0] for d in cur.description] == step.columns, t.turn_id
                    assert step.row_count == len(rows), t.turn_id
                    assert len(step.rows) == min(len(rows), 50), t.turn_id
                    assert rows[:len(step.rows)] == step.rows, t.turn_id
                    n += 1
                elif step.status == "error":
                    with pytest.raises(sqlite3.Error) as exc:
                        conn.execute(step.sql).fetchall()
                    assert str(exc.value) == step.error, t.turn_id
                else:
                    assert step.rows == [] and step.error
        assert n >= 60
    finally:
        conn.close()


def test_every_scenario_and_defect_tag_appears_at_least_three_times(labels):
    per_turn = {r["turn_id"]: r["scenario"] for r in labels}
    counts = Counter(per_turn.values())
    for tag in DEFECT_TAGS:
        assert counts[tag] >= 3, (tag, counts[tag])


def test_labels_cover_every_segment_exactly_once(turns, labels):
    with LABELS.open(newline="", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == LABEL_COLUMNS
    expected = [s.segment_id for t in turns for s in split_segments(t)]
    got = [r["segment_id"] for r in labels]
    assert sorted(got) == sorted(expected) and len(set(got)) == len(got)
    by_id = {t.turn_id: t for t in turns}
    for r in labels:
        turn = by_id[r["turn_id"]]
        assert r["verdict"] in {"good", "partial", "poor"}
        for dim in ("intent_understood", "sql_quality", "result_relevance"):
            lo, hi = int(r[f"{dim}_min"]), int(r[f"{dim}_max"])
            assert 0 <= lo <= hi <= 10
        if turn.answer is None:
            assert r["answer_faithfulness_min"] == r["answer_faithfulness_max"] == ""
            assert r["unsupported_claims"] == ""
        else:
            assert 0 <= int(r["answer_faithfulness_min"]) <= int(r["answer_faithfulness_max"]) <= 10
        for claim in filter(None, r["unsupported_claims"].split(";")):
            assert claim in turn.answer, (r["segment_id"], claim)


def test_scenarios_have_their_defining_trajectories(turns, labels):
    scenario = {r["turn_id"]: r["scenario"] for r in labels}
    seen = Counter()
    for t in turns:
        s, facts = scenario[t.turn_id], trajectory_facts(t)
        if s == "no_tools":
            assert t.steps == [] and facts.no_tools
        if s == "all_sql_failed":
            assert facts.all_sql_failed and t.answer and re.search(r"\d", t.answer)
        if s == "unrecovered_failure":
            assert facts.ended_on_failure and not facts.all_sql_failed
        if s == "recovered_timeout":
            assert any(st.status == "timeout" for st in t.sql_steps)
            assert t.sql_steps[-1].status == "ok" and facts.recovered_errors >= 1
        if s == "guardrail_block":
            assert any(st.status == "blocked" for st in t.sql_steps)
        if s == "schema_discovery":
            assert t.steps and not t.sql_steps
        if s == "beyond_horizon":
            assert max(st.row_count for st in t.sql_steps) >= 25
        if s == "bundled":
            assert len(split_segments(t)) >= 2
        if s == "prompt_injection":
            text = (t.answer or "") + json.dumps([st.rows for st in t.sql_steps])
            assert "ignore previous instructions" in text.lower()
        if t.surface == "mcp":
            seen[s] += 1
    assert len(seen) >= 5  # mcp captures spread over several scenarios


# --- event stream ----------------------------------------------------------------------------
def test_event_stream_assembles_to_the_stored_turns(turns):
    events = [json.loads(line) for line in EVENTS.read_text(encoding="utf-8").splitlines() if line]
    result = assemble_turns(events)
    assert result.invalid == []
    by_id = {t.turn_id: t for t in turns}
    assert len(result.turns) >= 10
    for t in result.turns:
        assert t == by_id[t.turn_id]
    assert any(len(split_segments(t)) > 1 for t in result.turns)
    assert any(t.surface == "mcp" for t in result.turns)
    assert len(result.incomplete) == 1
    assert result.incomplete[0].turn_id not in by_id


# --- separation of labels and judges ---------------------------------------------------------
def test_no_judge_reads_labels_or_imports_fixtures():
    judges = ROOT / "axon_eval" / "judges"
    pattern = re.compile(r"labels\.csv|axon_eval\.fixtures|from\s+\.\.fixtures|from\s+\.\.\s+import\s+fixtures")
    offenders = [str(p) for p in judges.rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".yaml", ".txt"}
                 and pattern.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert offenders == []


def test_other_seeds_build_a_different_valid_sample(tmp_path: Path):
    """The held-out sample of `make bench` (other seeds, same templates) validates and differs."""
    from axon_eval.bench.heuristic import HELD_OUT_SEEDS

    from axon_eval.simulator import build_held_out

    summary = build_held_out(tmp_path, HELD_OUT_SEEDS)
    assert summary["seeds"]["scenario"] == HELD_OUT_SEEDS.scenario
    # the horizon set's rows are those of the committed warehouse: it is not built on another one, and the
    # READMEs (which describe the committed data) are not written
    assert "horizon" not in summary and not (tmp_path / "turns" / "horizon_turns.jsonl").exists()
    assert not (tmp_path / "README.md").exists()
    turns, invalid = load_turns(tmp_path / "turns" / "sample_turns.jsonl")
    assert not invalid and len(turns) == summary["turns"]
    committed = {t.question for t in load_turns(DATA / "turns" / "sample_turns.jsonl")[0]}
    # schema, guardrail and no-tools templates repeat their wording; the rest take new values
    assert len({t.question for t in turns} - committed) >= len(turns) // 3


# --- the horizon set -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def horizon():
    turns, invalid = load_turns(HORIZON_TURNS)
    assert invalid == [], [str(i) for i in invalid]
    with HORIZON_LABELS.open(newline="", encoding="utf-8") as fh:
        labels = list(csv.DictReader(fh))
    return {t.turn_id: t for t in turns}, labels


def test_horizon_set_has_every_kind_at_every_position_over_5_to_5000_rows(horizon):
    turns, labels = horizon
    assert len(turns) >= 60 and len(labels) == len(turns)
    cells = Counter((r["kind"], r["decisive_position"]) for r in labels)
    assert cells == {(k, p): 4 for k in KINDS for p in POSITIONS}
    counts = [int(r["row_count"]) for r in labels]
    assert min(counts) <= 10 and 4000 <= max(counts) <= 5000
    assert sum(c > 1000 for c in counts) >= 8 and sum(c <= 20 for c in counts) >= 4
    # a committed file of reasonable size even with every row of 5,000-row results stored
    assert HORIZON_TURNS.stat().st_size < 10 * 1024 * 1024


def test_horizon_labels_cover_every_turn_once_with_consistent_columns(horizon):
    turns, labels = horizon
    with HORIZON_LABELS.open(newline="", encoding="utf-8") as fh:
        assert tuple(next(csv.reader(fh))) == HORIZON_LABEL_COLUMNS
    assert sorted(r["segment_id"] for r in labels) == sorted(turns)
    for r in labels:
        turn = turns[r["turn_id"]]
        assert [s.segment_id for s in split_segments(turn)] == [r["segment_id"]]
        assert r["defect"] == r["kind"]
        assert (r["verdict"] == "good") == (r["kind"] == "correct_unseen_row")
        assert (r["source_row"] != "") == (r["kind"] == "unseen_row_figure")
        for claim in filter(None, r["unsupported_claims"].split(";")):
            assert claim in turn.answer, (r["segment_id"], claim)
        assert bool(r["unsupported_claims"]) == (r["kind"] in ("fabricated_value", "unseen_row_figure"))


def test_horizon_rows_are_what_the_sql_returns_and_all_are_stored(horizon):
    turns, _ = horizon
    conn = sqlite3.connect(f"file:{WAREHOUSE}?mode=ro", uri=True)
    try:
        for t in turns.values():
            (step,) = t.sql_steps
            cur = conn.execute(step.sql)
            assert [d[0] for d in cur.description] == step.columns, t.turn_id
            assert [list(r) for r in cur.fetchall()] == step.rows, t.turn_id
            assert step.row_count == len(step.rows), t.turn_id
    finally:
        conn.close()


def _number(text: str) -> float:
    return float(re.search(r"\d[\d,]*", text).group(0).replace(",", ""))


def test_horizon_decisive_rows_sit_where_the_labels_say_and_hold_what_the_kind_says(horizon):
    turns, labels = horizon
    for r in labels:
        turn, pos, row_no = turns[r["turn_id"]], r["decisive_position"], int(r["decisive_row"])
        rows = turn.sql_steps[0].rows
        strings = [c for row in rows for c in row if isinstance(c, str)]
        numbers = {float(c) for row in rows for c in row if isinstance(c, int | float)}
        if r["kind"] == "dropped_category":
            member, where, n_correct = re.search(r"; (.+) would be row (\d+) of the (\d+) rows", r["note"]).groups()
            assert int(where) == row_no and int(n_correct) > len(rows)
            assert row_no - 1 in position_range(pos, int(n_correct)), r["segment_id"]
            assert member in turn.question and not any(member in s for s in strings), r["segment_id"]
            continue
        assert row_no - 1 in position_range(pos, len(rows)), (r["segment_id"], pos, row_no, len(rows))
        decisive = rows[row_no - 1]
        named = [c for c in decisive if isinstance(c, str) and (c in turn.question or c in turn.answer)]
        assert named, (r["segment_id"], decisive)  # the question or answer names the decisive row
        (claim,) = [c for c in r["unsupported_claims"].split(";") if c] or [None]
        if r["kind"] == "fabricated_value":
            if re.fullmatch(r"[\d,]+ \w+", claim):
                assert _number(claim) not in numbers, r["segment_id"]
            else:
                assert not any(claim in s for s in strings), r["segment_id"]
        elif r["kind"] == "unseen_row_figure":
            value = _number(claim)
            source = rows[int(r["source_row"]) - 1]
            assert value in {float(c) for c in source if isinstance(c, int | float)}, r["segment_id"]
            assert value not in {float(c) for c in decisive if isinstance(c, int | float)}, r["segment_id"]
