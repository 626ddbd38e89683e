"""The labelled sets on real public sample databases (TPC-H, nycflights13): the set files validate, the
build is deterministic, the execution labels agree with an independent engine (duckdb), every edit class
is present, and the equivalent rewrites are present and labelled correct."""

from __future__ import annotations

import csv
import json
import random
import sqlite3
import tomllib
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from axon_eval.calibration.training import labelled_sets
from axon_eval.evidence import load_turns
from axon_eval.fixtures.realdb import (
    HERE, SET_FILES, RealDbError, build_all, load_set, same_result, warehouse_path,
)
from axon_eval.warehouses.realdb import expand
from axon_eval.labels import LABEL_COLUMNS, load_labels

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
REALDB = DATA / "realdb"
SETS = [load_set(HERE / f) for f in SET_FILES]
ERROR_CLASSES = {"wrong_attribute", "wrong_table", "wrong_join_condition", "wrong_filter_value", "wrong_aggregate",
                 "missing_clause", "subquery", "operator", "distinct"}
EQUIVALENT_CLASSES = {"equivalent_alias", "equivalent_cte", "equivalent_count", "equivalent_subquery",
                      "equivalent_formulation"}


def _labels(name: str) -> list[dict[str, str]]:
    with (REALDB / f"{name}_labels.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("realdb")
    build_all(out, warehouses=DATA)
    return out


def test_set_files_have_the_fields_and_each_candidate_a_class_and_reason():
    for spec in SETS:
        assert spec["set"] and spec["warehouse"].endswith(".sqlite.gz") and spec["decoys"]
        for q in spec["questions"]:
            assert q["question"] and q["gold"] and q["params"]
            for c in q["candidates"]:
                assert c["class"] and c["sql"] and c["reason"]


def test_a_candidate_without_a_reason_is_refused(tmp_path):
    text = (HERE / "tpch.yaml").read_text(encoding="utf-8").replace("reason: the same inner joins", "because: x", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(RealDbError, match=r"bad\.yaml \(question revenue_nation_year\): candidate 0 .*reason"):
        load_set(bad)


def test_two_builds_are_identical_and_match_the_committed_files(rebuilt, tmp_path):
    build_all(tmp_path, warehouses=DATA)
    for spec in SETS:
        for suffix in ("_turns.jsonl", "_labels.csv"):
            name = f"{spec['set']}{suffix}"
            assert (tmp_path / "realdb" / name).read_bytes() == (rebuilt / "realdb" / name).read_bytes(), name
            assert (rebuilt / "realdb" / name).read_bytes() == (REALDB / name).read_bytes(), name


def test_outputs_are_valid_evidence_and_labels_read_as_training_domains():
    for spec in SETS:
        turns, invalid = load_turns(REALDB / f"{spec['set']}_turns.jsonl")
        assert invalid == []
        labels = load_labels(REALDB / f"{spec['set']}_labels.csv")
        assert list(labels.columns[: len(LABEL_COLUMNS)]) == list(LABEL_COLUMNS)
        assert [t.turn_id for t in turns] == list(labels["segment_id"])
        for t, claims in zip(turns, labels["claims"]):
            assert all(c in t.answer for c in claims)
    domains = {s.domain for s in labelled_sets()}
    assert {"tpch", "flights"} <= domains
    assert {"tpch", "flights"}.isdisjoint({s.domain for s in labelled_sets(DATA / "turns")})


def test_every_edit_class_and_equivalent_rewrites_are_present_and_rewrites_labelled_correct():
    rows = [r for spec in SETS for r in _labels(spec["set"])]
    classes = Counter(r["defect"] for r in rows)
    assert ERROR_CLASSES <= set(classes), ERROR_CLASSES - set(classes)
    assert EQUIVALENT_CLASSES <= set(classes), EQUIVALENT_CLASSES - set(classes)
    assert {"answer_wrong_figure", "answer_name_not_in_rows", "clean"} <= set(classes)
    equivalent = [r for r in rows if r["defect"].startswith("equivalent_")]
    assert len(equivalent) >= 100
    assert all(r["verdict"] == "good" for r in equivalent)
    broken = [r for r in rows if r["scenario"] == "edit"]
    assert sum(r["verdict"] != "good" for r in broken) > 0.8 * len(broken)
    assert len(rows) >= 1000


def _duck_rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[list]:
    return [list(r) for r in con.execute(sql).fetchall()]


@pytest.mark.parametrize("spec", SETS, ids=lambda s: s["set"])
def test_labels_agree_with_an_independent_engine(spec, tmp_path):
    """Re-execute a seeded sample of candidates with duckdb on the same data and compare with the gold."""
    db = expand(warehouse_path(DATA, spec), tmp_path / "w.sqlite")
    con = duckdb.connect()
    src = sqlite3.connect(db)
    for (table,) in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        df = pd.read_sql_query(f"SELECT * FROM {table}", src)
        con.register(f"{table}_df", df)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM {table}_df")
    src.close()
    turns = [json.loads(line) for line in (REALDB / f"{spec['set']}_turns.jsonl").read_text().splitlines()]
    labels = {r["segment_id"]: r for r in _labels(spec["set"])}
    golds = {t["turn_id"].rsplit("-", 1)[0]: t for t in turns if labels[t["turn_id"]]["defect"] == "clean"}
    ordered = {q["id"].replace("_", "-"): q["ordered"] for q in spec["questions"]}
    rng = random.Random(20261210)
    sample = rng.sample([t for t in turns if not labels[t["turn_id"]]["defect"].startswith("answer_")], 60)
    checked = agreed = 0
    for t in sample:
        prefix = t["turn_id"].rsplit("-", 1)[0]
        qid = prefix.split("-", 1)[1].rsplit("-", 1)[0]
        try:
            gold = _duck_rows(con, golds[prefix]["steps"][0]["sql"])
            cand = _duck_rows(con, t["steps"][0]["sql"])
        except duckdb.Error:
            continue  # SQLite-only syntax (strftime, julianday, boolean AVG): not comparable here
        checked += 1
        duck_good = same_result(gold, cand, ordered[qid])
        agreed += duck_good == (labels[t["turn_id"]]["verdict"] == "good")
    assert checked >= 25
    assert agreed / checked >= 0.9, (agreed, checked)


def test_the_set_files_and_warehouses_are_packaged_or_committed():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["axon_eval"]
    for f in SET_FILES:
        assert any(fnmatch(f"fixtures/realdb/{f}", p) for p in patterns), f
    for spec in SETS:
        assert warehouse_path(DATA, spec).is_file()
