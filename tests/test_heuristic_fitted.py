"""The fitted offline judge (spec ``heuristic-fitted``): signals on hand-built views in three domains,
the coefficient file and the judge id, the registry spec through a run, and the leave-one-domain-out
figures against hand-computed values."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from axon_eval.evidence import Turn, split_segments
from axon_eval.judges import build_judge
from axon_eval.judges.heuristic.fitted import (
    DEFAULT_COEFFICIENTS,
    FittedHeuristicJudge,
    FittedModel,
    fit_model,
    load_model,
    save_model,
)
from axon_eval.judges.heuristic.signals import (
    FAMILIES,
    SIGNAL_NAMES,
    SIGNALS,
    extract_signals,
    signals_for,
)
from axon_eval.rubric import DIMENSIONS
from axon_eval.stats.lodo import (
    ablation,
    expected_calibration_error,
    goals_met,
    harmful_families,
    lodo_figures,
    lodo_predictions,
    roc_auc,
)
from axon_eval.view import render_view

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"


def make_view(question, steps, answer="The answer."):
    turn = Turn.model_validate({
        "schema_version": 1, "turn_id": "f-1", "captured_at": "2026-07-01T00:00:00Z", "region": "eu",
        "surface": "web", "client": "c", "question": question, "answer": answer, "steps": steps})
    return render_view(split_segments(turn)[0], 20)


def sql(text, columns, rows, row_count=None, status="ok", error=None):
    return {"kind": "sql", "sql": text, "status": status, "error": error, "columns": columns, "rows": rows,
            "row_count": (len(rows) if row_count is None else row_count) if status == "ok" else None}


def signals(question, steps, answer="The answer."):
    return extract_signals(make_view(question, steps, answer))


# =============================================================================================
# The catalogue
# =============================================================================================
def test_every_signal_is_documented_with_a_family_and_dimension():
    assert len(SIGNAL_NAMES) == len(set(SIGNAL_NAMES))
    for s in SIGNALS:
        assert s.doc and s.family in FAMILIES and s.dimensions
        assert set(s.dimensions) <= set(DIMENSIONS)
    assert "complexity" in FAMILIES and "stacked" in FAMILIES
    for dim in DIMENSIONS:
        assert signals_for(dim)


def test_signals_have_no_missing_values():
    out = signals("How many rooms?", [])
    assert list(out) == list(SIGNAL_NAMES)
    assert all(np.isfinite(v) for v in out.values())


# =============================================================================================
# Signals on hand-built views: hotel, retail, transit
# =============================================================================================
@pytest.mark.parametrize("question,statement", [
    ("How many stays did Villa Ceres have in 2024?", "SELECT COUNT(*) FROM bookings WHERE year = 2024"),
    ("What was the total revenue of the Lisbon store in 2024?", "SELECT SUM(amount) FROM orders WHERE y = 2024"),
    ("How many trips ran on route 7 in May 2025?", "SELECT COUNT(*) FROM trips WHERE route_id = 7"),
])
def test_final_failure_and_recovery(question, statement):
    failed = signals(question, [sql(statement, [], [], status="error", error="no such column")])
    assert failed["final_failed"] == 1 and failed["all_failed"] == 1 and failed["recovered"] == 0
    assert failed["empty_result"] == 1
    recovered = signals(question, [sql(statement, [], [], status="error", error="boom"), sql(statement, ["n"], [[3]])])
    assert recovered["final_failed"] == 0 and recovered["all_failed"] == 0 and recovered["recovered"] == 1
    timeout = signals(question, [sql(statement, ["n"], [[3]]), sql(statement, [], [], status="timeout")])
    assert timeout["final_failed"] == 1 and timeout["all_failed"] == 0
    none = signals(question, [])
    assert none["no_sql"] == 1 and none["final_failed"] == 0


@pytest.mark.parametrize("table", ["hotels", "products", "stops"])
def test_probe_as_last_statement(table):
    probe = signals("What is the average rating?", [sql(f"SELECT * FROM {table} LIMIT 5", ["a"], [[1], [2]])])
    assert probe["final_probe"] == 1
    schema = signals("What is the average rating?", [sql("SELECT name FROM sqlite_master", ["name"], [[table]])])
    assert schema["final_probe"] == 1
    real = signals("What is the average rating?", [sql(f"SELECT AVG(r) FROM {table} WHERE x = 1", ["a"], [[4.2]])])
    assert real["final_probe"] == 0


@pytest.mark.parametrize("column", ["occupancy_pct", "discount_share", "on_time_percent"])
def test_empty_null_and_impossible_results(column):
    q = "What was the figure in 2024?"
    empty = signals(q, [sql("SELECT x FROM t WHERE y = 2024", [column], [])])
    assert empty["empty_result"] == 1 and empty["single_null"] == 0
    null = signals(q, [sql("SELECT MAX(x) FROM t WHERE y = 2024", [column], [[None]])])
    assert null["single_null"] == 1 and null["null_share"] == 1.0 and null["empty_result"] == 0
    over = signals(q, [sql("SELECT x FROM t WHERE y = 2024", [column], [[140.0]])])
    assert over["impossible_value"] == 1
    fine = signals(q, [sql("SELECT x FROM t WHERE y = 2024", [column], [[40.0]])])
    assert fine["impossible_value"] == 0
    negative = signals(q, [sql("SELECT n FROM t WHERE y = 2024", ["booking_count"], [[-3]])])
    assert negative["impossible_value"] == 1


@pytest.mark.parametrize("rows", [[["Rome", 3], ["Rome", 3], ["Lyon", 1]],
                                  [["Lisbon store", 10], ["Lisbon store", 10], ["Porto store", 4]],
                                  [["Route 7", 2], ["Route 7", 2], ["Route 9", 8]]])
def test_duplicate_rows_and_list_shape(rows):
    out = signals("List each name with its count", [sql("SELECT name, n FROM t", ["name", "n"], rows)])
    assert out["duplicate_share"] == pytest.approx(1 / 3)
    assert out["many_expected_one_row"] == 0
    one = signals("List each name with its count", [sql("SELECT name, n FROM t", ["name", "n"], rows[:1])])
    assert one["many_expected_one_row"] == 1


@pytest.mark.parametrize("question", ["What is the busiest hotel?", "How many orders were returned?",
                                      "What was the longest delay on route 7?"])
def test_one_value_asked_many_rows_returned(question):
    many = signals(question, [sql("SELECT a, b FROM t", ["a", "b"], [[1, 2], [3, 4]], row_count=40)])
    assert many["one_expected_many_rows"] == 1
    one = signals(question, [sql("SELECT a, b FROM t", ["a", "b"], [[1, 2]])])
    assert one["one_expected_many_rows"] == 0


@pytest.mark.parametrize("question,good_sql,bad_sql", [
    ("How many stays did Villa Ceres Florence have in 2024?",
     "SELECT COUNT(*) FROM b JOIN h ON h.id = b.h WHERE h.name = 'Villa Ceres Florence' AND b.d >= '2024-01-01'",
     "SELECT COUNT(*) FROM b JOIN h ON h.id = b.h WHERE h.name = 'Solenne Porto'"),
    ("What did the Lisbon Riverside store sell in 2023?",
     "SELECT SUM(x) FROM o WHERE store = 'Lisbon Riverside' AND strftime('%Y', d) = '2023'",
     "SELECT SUM(x) FROM o WHERE store = 'Lisbon Riverside'"),
    ("How many trips did route 42 run in 2025?",
     "SELECT COUNT(*) FROM trips WHERE route_id = 42 AND d BETWEEN '2025-01-01' AND '2025-12-31'",
     "SELECT COUNT(*) FROM trips WHERE route_id = 41 AND d BETWEEN '2025-01-01' AND '2025-12-31'"),
])
def test_question_literals_in_conditions(question, good_sql, bad_sql):
    good = signals(question, [sql(good_sql, ["n"], [[5]])])
    assert good["literal_coverage"] == 1.0 and good["literals_missing"] == 0
    bad = signals(question, [sql(bad_sql, ["n"], [[5]])])
    assert bad["literal_coverage"] < 1.0 and bad["literals_missing"] >= 1


@pytest.mark.parametrize("question,honoured,ignored", [
    ("What share of 2024 stays were cancelled?",
     "SELECT 1.0 * SUM(c) / COUNT(*) FROM b WHERE y = 2024", "SELECT SUM(c) FROM b WHERE y = 2024"),
    ("What was the average basket value per store?",
     "SELECT store, AVG(v) FROM o GROUP BY store", "SELECT store, v FROM o"),
    ("Which route had the most delays?",
     "SELECT route, COUNT(*) AS n FROM d GROUP BY route ORDER BY n DESC LIMIT 1",
     "SELECT route FROM d"),
])
def test_derived_measure_cue_mismatch_count(question, honoured, ignored):
    assert signals(question, [sql(honoured, ["a", "b"], [["x", 1], ["y", 2]])])["cue_mismatch"] == 0
    assert signals(question, [sql(ignored, ["a", "b"], [["x", 1], ["y", 2]])])["cue_mismatch"] >= 1


@pytest.mark.parametrize("first,second", [([[12]], [[12]]), ([[3.5]], [[3.5]]), ([[140]], [[140]])])
def test_agreement_across_attempts(first, second):
    q = "How many were there in 2024?"
    same = signals(q, [sql("SELECT COUNT(*) FROM a WHERE y = 2024", ["n"], first),
                       sql("SELECT COUNT(id) FROM a WHERE y = 2024", ["n"], second)])
    assert same["retry_agrees"] == 1 and same["retry_disagrees"] == 0
    assert same["ok_attempts"] == pytest.approx(np.log1p(2))
    other = signals(q, [sql("SELECT COUNT(*) FROM a WHERE y = 2024", ["n"], first),
                        sql("SELECT COUNT(*) FROM a WHERE y = 2023", ["n"], [[first[0][0] + 1]])])
    assert other["retry_disagrees"] == 1 and other["retry_agrees"] == 0


@pytest.mark.parametrize("question,columns,rows,good,bad", [
    ("How many stays did Villa Ceres have in 2024?", ["stays"], [[247]], "Villa Ceres had 247 stays in 2024.",
     "Villa Ceres had 912 stays in 2024."),
    ("What did the Lisbon store sell in 2024?", ["revenue"], [[18200.5]], "The Lisbon store sold 18,200.50 in 2024.",
     "The Lisbon store sold 31,000.00 in 2024."),
    ("How many trips did route 7 run in 2025?", ["trips"], [[1380]], "Route 7 ran 1,380 trips in 2025.",
     "Route 7 ran 2,215 trips in 2025."),
])
def test_answer_faithfulness_share(question, columns, rows, good, bad):
    step = [sql("SELECT COUNT(*) FROM t WHERE y = 2024", columns, rows)]
    ok = signals(question, step, good)
    assert ok["claims_supported_share"] == 1.0 and ok["claims_unsupported"] == 0 and ok["answer_missing"] == 0
    wrong = signals(question, step, bad)
    assert wrong["claims_unsupported"] >= 1 and wrong["claims_supported_share"] < 1.0
    missing = signals(question, step, None)
    assert missing["answer_missing"] == 1 and missing["h_faithfulness"] == 1.0


@pytest.mark.parametrize("statement,joins,nesting", [
    ("SELECT COUNT(*) FROM bookings", 0, 0),
    ("SELECT s.name, SUM(o.v) FROM orders o JOIN stores s ON s.id = o.s JOIN regions r ON r.id = s.r GROUP BY s.name", 2, 0),
    ("WITH t AS (SELECT route, COUNT(*) n FROM trips GROUP BY route) SELECT * FROM t WHERE n > "
     "(SELECT AVG(n) FROM t)", 0, 2),
])
def test_complexity_family(statement, joins, nesting):
    out = signals("How many?", [sql(statement, ["n"], [[1]])])
    assert out["n_joins"] == joins and out["nesting"] == nesting
    assert out["sql_length"] == pytest.approx(np.log1p(len(statement.split())))


def test_stacked_signals_are_the_rule_judges_outputs():
    from axon_eval.judges.heuristic import HeuristicJudge

    view = make_view("How many stays did Villa Ceres have in 2024?",
                     [sql("SELECT COUNT(*) FROM t WHERE y = 2024", ["stays"], [[247]])], "247 stays.")
    verdict, _ = HeuristicJudge().assess(view)
    out = extract_signals(view)
    assert out["h_intent"] == verdict.intent_understood / 10 and out["h_sql"] == verdict.sql_quality / 10
    assert out["h_good"] == float(verdict.verdict == "good")


# =============================================================================================
# The model, its file and the judge id
# =============================================================================================
def tiny_frame(seed=0, n=40, domains=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        good = i % 2 == 0
        row = {name: 0.0 for name in SIGNAL_NAMES}
        row.update({"h_good": float(good), "h_intent": 0.9 if good else 0.5, "claims_unsupported": float(not good),
                    "sql_length": float(rng.normal(3, 0.5)), "answer_missing": 0.0})
        row.update({"domain": domains[i % len(domains)], "segment_id": f"s{i}", "verdict": "good" if good else "partial",
                    "good": good, "all_sql_failed": False, "ended_on_failure": False, "no_tools": False,
                    "rule_score": 90.0 if good else 60.0, "rule_verdict": "good" if good else "partial"})
        for d in DIMENSIONS:
            row[f"{d}_min"], row[f"{d}_max"] = (8.0, 10.0) if good else (3.0, 6.0)
        rows.append(row)
    return pd.DataFrame(rows)


def test_packaged_file_hash_is_in_the_judge_id():
    raw = DEFAULT_COEFFICIENTS.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    judge = FittedHeuristicJudge()
    assert judge.judge_id == f"heuristic-fitted[{digest[:10]}]"
    model, file_hash = load_model()
    assert file_hash == digest
    assert len(model.training["data_sha256"]) == 64
    assert 10 <= model.n_parameters <= 100  # tens of parameters, not thousands


def test_a_refit_on_a_tiny_frame_is_another_judge(tmp_path):
    model = fit_model(tiny_frame())
    path = tmp_path / "mine.json"
    digest = save_model(model, path)
    judge = FittedHeuristicJudge(path)
    assert judge.judge_id == f"heuristic-fitted[{digest[:10]}]" != FittedHeuristicJudge().judge_id
    assert FittedModel.from_dict(json.loads(path.read_text())).to_json() == path.read_text()
    other = fit_model(tiny_frame(seed=1))
    assert other.sha256 != model.sha256 and other.training["data_sha256"] != model.training["data_sha256"]
    built = build_judge(f"heuristic-fitted(file={path})")
    assert built.judge_id == judge.judge_id


def test_fitted_model_separates_the_tiny_frame():
    frame = tiny_frame()
    pred = fit_model(frame).predict(frame)
    assert roc_auc(pred["p_good"], frame["good"]) == 1.0
    assert (pred["verdict"] == np.where(frame["good"], "good", "partial")).all()
    assert pred["intent_understood"][frame["good"]].min() > pred["intent_understood"][~frame["good"]].max()


def test_judge_records_and_unsure_explanations():
    judge = FittedHeuristicJudge()
    view = make_view("How many stays did Villa Ceres have in 2024?",
                     [sql("SELECT COUNT(*) FROM t WHERE y = 2024", ["stays"], [[247]])], "Villa Ceres had 247 stays.")
    rec = judge.judge(view)
    assert rec.error is None and rec.judge_id == judge.judge_id
    details = rec.extra["heuristic_fitted"]
    assert 0 <= details["p_not_good"] <= 1 and set(details["signals"]) == set(SIGNAL_NAMES)
    assert rec.verdict.explanation.startswith("unsure:") == details["unsure"]
    missing = judge.judge(make_view("How many stays?", [sql("SELECT COUNT(*) FROM t", ["n"], [[3]])], None))
    assert missing.verdict.answer_faithfulness is None


def test_unsure_is_said_in_the_explanation():
    judge = FittedHeuristicJudge()
    text = judge._explain("partial", 0.55, 0.1, True, [("claims_unsupported", 0.8), ("h_good", -0.3)],
                          judge.rules.assess(make_view("How many?", [])), 70.0, "partial")
    assert text.startswith("unsure: P(not good) is 0.55") and "claims_unsupported (+0.80)" in text


def test_registry_spec_through_a_run(tmp_path):
    from axon_eval import runs

    run = runs.evaluate(SAMPLE, "heuristic-fitted", out_dir=tmp_path / "runs", progress=False, limit=6)
    results = run.results
    assert len(results) >= 6
    assert set(results["judge_id"]) == {FittedHeuristicJudge().judge_id}
    assert results["judge_verdict"].isin(["good", "partial", "poor"]).all()


# =============================================================================================
# Leave-one-domain-out figures against hand-computed values
# =============================================================================================
def test_roc_auc_by_hand():
    # positives 0.9, 0.4; negatives 0.4, 0.1: pairs (0.9>0.4, 0.9>0.1, 0.4=0.4 tie, 0.4>0.1) = 3.5 / 4
    assert roc_auc([0.9, 0.4, 0.4, 0.1], [True, True, False, False]) == pytest.approx(0.875)
    assert roc_auc([0.1, 0.9], [True, False]) == 0.0
    assert np.isnan(roc_auc([0.1, 0.2], [True, True]))
    assert roc_auc([np.nan, 0.3, 0.2], [False, True, False]) == 1.0


def test_ece_by_hand():
    # bins of 0.1: {0.05: y 0} -> |0.05 - 0| ; {0.95, 0.95: y 1, 0} -> |0.95 - 0.5|
    assert expected_calibration_error([0.05, 0.95, 0.95], [False, True, False]) == pytest.approx(
        (0.05 + 2 * 0.45) / 3)


def test_lodo_figures_by_hand():
    pred = pd.DataFrame({
        "domain": ["a"] * 4 + ["b"] * 4,
        "segment_id": [f"s{i}" for i in range(8)],
        "good": [True, True, False, False, True, False, True, False],
        "label_verdict": ["good", "good", "partial", "poor", "good", "partial", "good", "partial"],
        "p_good": [0.9, 0.4, 0.4, 0.1, 0.8, 0.2, 0.3, 0.9],
        "score": [90, 80, 70, 10, 85, 60, 50, 75],
        "verdict": ["good", "partial", "partial", "poor", "good", "partial", "partial", "good"],
    })
    table = lodo_figures(pred, n_boot=50, seed=1).set_index("domain")
    assert table.loc["a", "auc_p_good"] == pytest.approx(0.875)
    assert table.loc["a", "auc_score"] == pytest.approx(1.0)
    # domain b: positives 0.8, 0.3 against negatives 0.2, 0.9: 2 of 4 pairs ordered
    assert table.loc["b", "auc_p_good"] == pytest.approx(0.5)
    # domain a: agreement 3/4; marginals judge (1 good, 2 partial, 1 poor), labels (2, 1, 1):
    # p_e = (1*2 + 2*1 + 1*1) / 16 = 5/16; kappa = (3/4 - 5/16) / (11/16) = 7/11
    assert table.loc["a", "kappa"] == pytest.approx(7 / 11)
    assert table.loc["a", "good_kept"] == 0.5
    assert table.loc["pooled", "n"] == 8
    low, high = table.loc["pooled", "auc_p_good_low"], table.loc["pooled", "auc_p_good_high"]
    assert low <= table.loc["pooled", "auc_p_good"] <= high
    again = lodo_figures(pred, n_boot=50, seed=1)
    assert again["auc_p_good_low"].tolist() == lodo_figures(pred, n_boot=50, seed=1)["auc_p_good_low"].tolist()
    goals = goals_met(lodo_figures(pred, n_boot=0))
    assert goals["domain_auc_min"]["domain"] == "b" and not goals["domain_auc_min"]["met"]
    # no defect column: no equivalent rewrites, so the figure is undefined and its goal not met
    assert np.isnan(table.loc["pooled", "equivalent_good"]) and not goals["equivalent_good"]["met"]


def test_equivalent_rewrites_judged_good_by_hand():
    pred = pd.DataFrame({
        "domain": ["a"] * 4 + ["b"] * 4,
        "segment_id": [f"s{i}" for i in range(8)],
        "good": [True, True, True, False, True, True, False, True],
        "label_verdict": ["good", "good", "good", "partial", "good", "good", "partial", "good"],
        "defect": ["clean", "equivalent_alias", "equivalent_cte", "wrong_table",
                   "equivalent_count", "clean", "missing_clause", "equivalent_subquery"],
        "p_good": [0.9, 0.8, 0.3, 0.1, 0.2, 0.9, 0.2, 0.4],
        "score": [90, 85, 60, 20, 55, 90, 40, 60],
        "verdict": ["good", "good", "partial", "partial", "partial", "good", "partial", "partial"],
        "rule_score": [90, 90, 90, 20, 90, 90, 40, 60],
        "rule_verdict": ["good", "good", "good", "partial", "good", "good", "partial", "partial"],
    })
    table = lodo_figures(pred, n_boot=20).set_index("domain")
    # a: rewrites s1 (good), s2 (partial) -> 1/2; b: s4 (partial) and s7 (partial) -> 0/2; pooled 1/4
    assert table.loc["a", "n_equivalent"] == 2 and table.loc["a", "equivalent_good"] == 0.5
    assert table.loc["b", "equivalent_good"] == 0.0 and table.loc["pooled", "equivalent_good"] == 0.25
    # the rule judge beside on the same rows: s1, s2, s4 good, s7 partial -> 3/4
    assert table.loc["pooled", "rule_equivalent_good"] == 0.75
    goals = goals_met(table.reset_index())
    assert goals["equivalent_good"] == {"value": 0.25, "n": 4, "goal": ">= 0.9", "met": False}


def test_the_default_is_the_fitted_judge_and_the_rule_judge_keeps_its_own_name():
    from axon_eval.judges.heuristic import HeuristicJudge
    from axon_eval.judges.heuristic.fitted import FittedHeuristicJudge

    rules, default, fitted = build_judge("heuristic-rules"), build_judge("heuristic"), build_judge("heuristic-fitted")
    assert type(default) is FittedHeuristicJudge and default.judge_id == fitted.judge_id
    assert default.judge_id.startswith("heuristic-fitted[") and default.prompt_version == fitted.prompt_version
    assert type(rules) is HeuristicJudge and rules.judge_id == "heuristic-rules"
    assert rules.prompt_version != default.prompt_version  # no verdict of one is ever served as the other's
    assert build_judge("heuristic-rules(lexicon=retail)").judge_id == "heuristic-rules[lexicon=retail]"
    # a lexicon changes the signals the fitted judge reads, so it is part of its id too
    retail = build_judge("heuristic(lexicon=retail)")
    assert retail.judge_id == default.judge_id[:-1] + ",lexicon=retail]" and retail.rules.lexicon.name == "retail"
    view = make_view("How many stays did Villa Ceres have in 2024?",
                     [sql("SELECT COUNT(*) FROM t WHERE y = 2024", ["stays"], [[247]])], "247 stays.")
    assert default.judge(view).verdict == fitted.judge(view).verdict
    assert rules.judge(view).judge_id == "heuristic-rules"
    for bad in ("heuristic-rules(lexicon=nope)", "heuristic(lexicon=nope)", "heuristic-rules(file=x.json)"):
        with pytest.raises(ValueError, match="lexicon"):
            build_judge(bad)


def test_lodo_never_scores_a_domain_with_its_own_model():
    frame = tiny_frame()
    seen = []

    def spy(train, signals):
        seen.append(set(train["domain"]))
        return fit_model(train, signals)

    pred = lodo_predictions(frame, fit=spy)
    assert sorted(map(sorted, seen)) == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert len(pred) == len(frame) and set(pred["segment_id"]) == set(frame["segment_id"])


def test_ablation_rows_and_harmful_families():
    table = ablation(tiny_frame())
    assert table["family"].tolist()[0] == "none" and set(table["family"][1:]) == set(FAMILIES)
    fake = pd.DataFrame({"family": ["none", "x", "y"], "delta_auc_p_good": [0.0, 0.01, -0.05]})
    assert harmful_families(fake) == ["x"]


# =============================================================================================
# The packaged coefficients and the command that writes them
# =============================================================================================
def test_packaged_coefficients_were_fitted_on_the_current_default_data():
    """The judge id carries the coefficient file's hash and the file the hashes of the data it was fitted
    on: those must be the default labelled sets as they are now (a changed or added set needs a refit)."""
    from axon_eval.calibration.training import labelled_sets

    model, _ = load_model()
    recorded = {s["file"]: s["sha256"] for s in model.training["sources"]}
    current = {}
    for s in labelled_sets():
        for path in (s.turns, s.labels):
            current[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    assert recorded == current
    assert set(model.training["domains"]) == {s.domain for s in labelled_sets()}
    assert model.training["n"] == sum(model.training["domains"].values())


def test_fit_heuristic_writes_a_file_whose_hash_is_the_printed_judge_id(tmp_path, capsys):
    import shutil

    from axon_eval.cli import main

    data = tmp_path / "sets"
    data.mkdir()
    for name in ("library", "learning"):
        for suffix in ("_turns.jsonl", "_labels.csv"):
            shutil.copy(ROOT / "data" / "turns" / f"{name}{suffix}", data / f"{name}{suffix}")
    out = tmp_path / "mine.json"
    assert main(["fit-heuristic", "--data", str(data), "--out", str(out), "--n-boot", "20"]) == 0
    text = capsys.readouterr().out
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert f"judge id: heuristic-fitted[{digest[:10]}]" in text
    assert "labelled sets: learning (62), library (45); 107 segments" in text
    # the rule judge beside under its own name, the rewrites' goal, the in-sample figures labelled so
    assert "heuristic-rules AUC score" in text and "equivalent_good: n/a (n 0)" in text
    assert "| library (in-sample) |" in text
    model, _ = load_model(out)
    assert model.training["domains"] == {"learning": 62, "library": 45}
    assert {s["file"] for s in model.training["sources"]} == {
        "learning_turns.jsonl", "learning_labels.csv", "library_turns.jsonl", "library_labels.csv"}
    assert build_judge(f"heuristic-fitted(file={out})").judge_id == f"heuristic-fitted[{digest[:10]}]"


# ---------------------------------------------------------------------------------------------
# the bootstrap's figures for every resample at once, against scikit-learn per resample
# ---------------------------------------------------------------------------------------------
def _resampled_prediction_frame(n: int, seed: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, (40, n))
    cols = {"good": rng.random(n) < 0.4, "p": rng.random(n), "score": np.round(rng.random(n) * 20) * 5,
            "verdict": rng.choice(["good", "partial", "poor"], n), "label": rng.choice(["good", "partial", "poor"], n),
            "rewrite": rng.random(n) < 0.3}
    return idx, cols


@pytest.mark.parametrize("n", [3, 17, 240])
def test_the_batched_bootstrap_figures_match_scikit_learn_on_every_resample(n):
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    from axon_eval.stats.lodo import _auc_rows, _ece_rows, _kappa_rows, _kept_rows, expected_calibration_error

    idx, c = _resampled_prediction_frame(n, n)
    auc, kappa = _auc_rows(c["score"], c["good"], idx), _kappa_rows(c["verdict"], c["label"], idx)
    ece, kept = _ece_rows(c["p"], c["good"], idx), _kept_rows(c["verdict"] == "good", c["rewrite"], idx)
    for row, i in enumerate(idx):
        y = c["good"][i]
        if y.all() or not y.any():
            assert np.isnan(auc[row])
        else:
            assert auc[row] == pytest.approx(roc_auc_score(y, c["score"][i]), abs=1e-12)
        a, b = c["verdict"][i], c["label"][i]
        if len(set(a)) == len(set(b)) == 1 and set(a) == set(b):
            assert np.isnan(kappa[row])  # chance agreement 1: undefined
        else:
            assert kappa[row] == pytest.approx(cohen_kappa_score(a, b, labels=["good", "partial", "poor"]), abs=1e-12)
        assert ece[row] == pytest.approx(expected_calibration_error(c["p"][i], y), abs=1e-12)
        among = c["rewrite"][i]
        expect = (a[among] == "good").mean() if among.any() else np.nan
        assert kept[row] == pytest.approx(expect, abs=1e-12, nan_ok=True)


def test_the_batched_bootstrap_draws_the_same_resamples_as_the_loop():
    from axon_eval.stats.lodo import _auc_rows, bootstrap_interval, roc_auc

    _idx, c = _resampled_prediction_frame(150, 5)
    loop = bootstrap_interval(lambda i: roc_auc(c["p"][i], c["good"][i]), 150, n_boot=300, seed=3)
    batched = bootstrap_interval(lambda i: roc_auc(c["p"][i], c["good"][i]), 150, n_boot=300, seed=3,
                                 batched=lambda m: _auc_rows(c["p"], c["good"], m))
    assert batched == pytest.approx(loop, abs=1e-12)
