"""axon_eval.stats.panels: panels against a real ensemble run, known answers (n_eff, variance halving,
duplicated members), kappa SE against statsmodels, reducers against scipy/statistics, cost, escalation."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon_eval.evidence import load_turns
from axon_eval.judges import build_judge
from axon_eval.judges.prices import TokenUsage, cost_usd, price_table
from axon_eval.labels import load_labels
from axon_eval.rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from axon_eval.scoring import score_frame
from axon_eval.stats.agreement import cohens_kappa
from axon_eval.stats.panels import (
    PANEL_COLUMNS,
    SIMULATED_NOTE,
    SIMULATED_PREFIX,
    TARGET_KAPPA,
    kappa_statistic,
    kappa_tables,
    mean_offdiagonal,
    n_effective,
    panel_detail,
    panel_labels,
    panel_study,
    panels_benchmark_inputs,
    pareto_optimal,
    prepare_members,
    recommend,
    reduce_votes,
    simulated_members,
    trust_or_escalate,
)
from axon_eval.view import build_views

NO_FACTS = {f: False for f in CAP_FACTS}


def member_rows(member: str, values, verdicts, *, segments=None, sample: int = 0, facts=None, **extra) -> pd.DataFrame:
    """A members-table block: ``values`` (S, 4) (NaN = null), ``verdicts`` S band names (None = failed)."""
    values = np.asarray(values, dtype=float)
    segments = segments if segments is not None else [f"s{i:05d}" for i in range(len(values))]
    frame = pd.DataFrame({"member": member, "segment_id": segments, "sample": sample,
                          **{d: values[:, j] for j, d in enumerate(DIMENSIONS)},
                          "verdict": list(verdicts), **(facts or NO_FACTS)})
    for k, v in extra.items():
        frame[k] = v
    return frame


def point_labels(values, verdicts, segments=None) -> pd.DataFrame:
    """Constructed-format labels with point ranges ``[v, v]``."""
    values = np.asarray(values, dtype=float)
    segments = segments if segments is not None else [f"s{i:05d}" for i in range(len(values))]
    frame = pd.DataFrame({"segment_id": segments, "verdict": list(verdicts)})
    for j, d in enumerate(DIMENSIONS):
        frame[f"{d}_min"] = values[:, j]
        frame[f"{d}_max"] = values[:, j]
    return frame


# -- the panel is the ensemble -----------------------------------------------------------------------------
MEMBER_SPECS = ("heuristic", "simulate(heuristic, sd=1.5, seed=1)", "simulate(heuristic, sd=2, corr=0, seed=2)")


@pytest.fixture(scope="module")
def sample_views():
    turns, _invalid = load_turns("data/turns/sample_turns.jsonl")
    return build_views(turns, Rubric.default())


@pytest.fixture(scope="module")
def sample_members(sample_views):
    """The three members judged over the bundled sample, as a members table (one row per record)."""
    rows = []
    for spec in MEMBER_SPECS:
        judge = build_judge(spec)
        for view, rec in zip(sample_views, judge.judge_many(sample_views), strict=True):
            subs = rec.subscores()
            rows.append({"member": judge.judge_id, "segment_id": rec.segment_id, "turn_id": view.turn_id,
                         "sample": rec.sample_index,
                         **{d: (np.nan if subs[d] is None else subs[d]) for d in DIMENSIONS},
                         "verdict": rec.verdict.verdict, **{f: bool(getattr(view.facts, f)) for f in CAP_FACTS},
                         "cost_usd": rec.cost_usd, "latency_s": rec.latency_ms / 1000})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("reducer", "n_members"), [("mean", 3), ("median", 3), ("majority", 3),
                                                    ("mean", 2), ("majority", 2)])
def test_a_panel_equals_a_real_ensemble_run_of_the_same_members(sample_views, sample_members, reducer, n_members):
    specs = MEMBER_SPECS[:n_members]
    ensemble = build_judge(f"ensemble({', '.join(specs)}, reducer={reducer})")
    records = ensemble.judge_many(sample_views)
    judged = pd.DataFrame([{**{d: (np.nan if r.subscores()[d] is None else r.subscores()[d]) for d in DIMENSIONS},
                            **{f: bool(getattr(v.facts, f)) for f in CAP_FACTS}, "segment_id": r.segment_id,
                            "verdict": r.verdict.verdict,
                            "max_range": max((s["range"] for s in r.extra["spread"].values() if s), default=0.0),
                            "verdicts_differ": r.extra["verdicts_differ"]}
                           for v, r in zip(sample_views, records, strict=True)])
    run = score_frame(judged, Rubric.default())  # how a run scores the ensemble's record

    ms = prepare_members(sample_members)
    ids = [m.judge_id for m in ensemble.members]
    panel = panel_detail(ms, ids, reducer).set_index("segment_id").loc[run["segment_id"]]
    for d in DIMENSIONS:
        np.testing.assert_array_equal(panel[d].to_numpy(dtype=float), run[d].to_numpy(dtype=float), err_msg=d)
    np.testing.assert_array_equal(panel["score"].to_numpy(), run["score"].to_numpy())
    assert panel["band"].tolist() == run["band"].astype(str).tolist()
    assert panel["verdict"].tolist() == run["verdict"].tolist()
    np.testing.assert_array_equal(panel["max_range"].to_numpy(), run["max_range"].to_numpy(dtype=float))
    assert panel["verdicts_differ"].tolist() == run["verdicts_differ"].tolist()
    # and the study's agreement figure for that panel is the agreement of the ensemble run with the labels
    labels = load_labels("data/turns/labels.csv")
    study = panel_study(sample_members, labels, confirm_n_boot=None)
    row = study.panels[study.panels["panel_id"] == f"{reducer}[{', '.join(ids)}] x1"].iloc[0]
    merged = run.merge(labels[["segment_id", "verdict"]], on="segment_id", suffixes=("", "_label"))
    assert row["band_kappa"] == pytest.approx(cohens_kappa(merged["band"].astype(str), merged["verdict_label"]))
    assert row["verdict_kappa"] == pytest.approx(cohens_kappa(merged["verdict"], merged["verdict_label"]))
    assert row["n"] == len(merged)


# -- known answers -----------------------------------------------------------------------------------------
def test_n_eff_of_equicorrelated_members_by_hand_and_by_variance():
    k, rho = 4, 0.4
    corr = np.full((k, k), rho) + np.eye(k) * (1 - rho)
    assert mean_offdiagonal(corr, np.array([[0, 1, 2, 3]]))[0] == pytest.approx(0.4)
    assert n_effective(4, 0.4) == pytest.approx(4 / 2.2)  # 1 + 3 * 0.4 = 2.2
    assert n_effective(3, 1.0) == pytest.approx(1.0) and n_effective(5, 0.0) == 5 and n_effective(1, 0.9) == 1
    # the meaning: var(mean of k errors) = var(one error) / n_eff, checked on equicorrelated draws
    rng = np.random.default_rng(7)
    n = 40_000
    shared = rng.standard_normal(n)
    errors = np.sqrt(rho) * shared[None, :] + np.sqrt(1 - rho) * rng.standard_normal((k, n))
    ratio = errors[0].var() / errors.mean(axis=0).var()
    assert ratio == pytest.approx(n_effective(k, rho), rel=0.04)
    # and through the study: members = label + those errors (continuous subscores around 5)
    label = np.full((n, 4), 5.0)
    frames = [member_rows(f"m{m}", label + errors[m][:, None] * [1, 1, 1, 1] * 0.8, ["partial"] * n)
              for m in range(k)]
    ms = prepare_members(pd.concat(frames))
    study = panel_study(ms, point_labels(label, ["partial"] * n), max_size=4, reducers=("mean",),
                        escalation_grid=(), confirm_n_boot=None)
    assert study.diagnostics.n_eff(["m0", "m1", "m2", "m3"], target="intent_understood") == \
        pytest.approx(4 / 2.2, rel=0.03)
    row = study.panels[study.panels["k"] == 4].iloc[0]
    assert row["n_eff"] == pytest.approx(4 / 2.2, rel=0.03)


def test_two_independent_members_with_equal_noise_halve_the_error_variance():
    rng = np.random.default_rng(11)
    n = 30_000
    label = np.full((n, 4), 5.0)
    a = label + rng.normal(0, 1.0, (n, 4))
    b = label + rng.normal(0, 1.0, (n, 4))
    ms = prepare_members(pd.concat([member_rows("a", a, ["partial"] * n), member_rows("b", b, ["partial"] * n)]))
    single = panel_detail(ms, ["a"], "single")
    pair = panel_detail(ms, ["a", "b"], "mean")
    for d in DIMENSIONS:
        ratio = (pair[d] - 5).var() / (single[d] - 5).var()
        assert ratio == pytest.approx(0.5, abs=0.025), d
    study = panel_study(ms, point_labels(label, ["partial"] * n), max_size=2, reducers=("mean",),
                        escalation_grid=(), confirm_n_boot=None)
    assert study.diagnostics.n_eff(["a", "b"]) == pytest.approx(2.0, abs=0.05)


def test_a_duplicated_member_adds_cost_and_no_agreement(sample_members):
    labels = load_labels("data/turns/labels.csv")
    # the offline judge, under a short member name (its judge id carries its coefficients' hash)
    heur = sample_members[sample_members["member"] == build_judge("heuristic").judge_id].assign(member="heuristic")
    copy = heur.assign(member="heuristic-copy")
    study = panel_study(pd.concat([heur, copy]), labels, declared_cost=None, confirm_n_boot=None)
    p = study.panels.set_index("panel_id")
    alone, pair = p.loc["single[heuristic] x1"], p.loc["mean[heuristic, heuristic-copy] x1"]
    for col in ("band_kappa", "band_kappa_lo", "verdict_kappa", "mae", "score_mae", "false_pass_rate"):
        assert pair[col] == pytest.approx(alone[col]), col
    assert pair["rho_bar"] == pytest.approx(1.0) and pair["n_eff"] == pytest.approx(1.0)
    # the heuristic records cost_usd 0.0; give the two a price to see the cost double
    priced = pd.concat([heur.assign(cost_usd=0.002), copy.assign(cost_usd=0.002)])
    p2 = panel_study(priced, labels, confirm_n_boot=None).panels.set_index("panel_id")
    assert p2.loc["mean[heuristic, heuristic-copy] x1", "cost_per_1k_turns"] == \
        pytest.approx(2 * p2.loc["single[heuristic] x1", "cost_per_1k_turns"])
    assert not p2.loc["mean[heuristic, heuristic-copy] x1", "pareto"]


# -- pieces against independent oracles ------------------------------------------------------------------
def test_kappa_tables_match_statsmodels():
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    rng = np.random.default_rng(3)
    tables = rng.integers(0, 40, (25, 3, 3)) + np.eye(3, dtype=int) * rng.integers(10, 60, (25, 1, 1))
    kappa, se = kappa_tables(tables)
    for t, kv, sv in zip(tables, kappa, se, strict=True):
        res = sm_kappa(t, return_results=True)
        assert kv == pytest.approx(res["kappa"]) and sv == pytest.approx(res["std_kappa"])
    undefined, _ = kappa_tables(np.array([[[5, 0, 0], [0, 0, 0], [0, 0, 0]], np.zeros((3, 3))]))
    assert np.isnan(undefined).all()


def test_kappa_statistic_of_a_replicate_is_the_kappa_of_the_expanded_data():
    a = np.array([0, 0, 1, 2, 2, 1, 0, 2])
    b = np.array([0, 1, 1, 2, 1, 1, 0, 0])
    weights = np.array([[1, 1, 1, 1, 1, 1, 1, 1], [2, 0, 1, 3, 0, 1, 1, 0]], dtype=float)
    got = kappa_statistic(a * 3 + b, weights)
    for w, value in zip(weights, got, strict=True):
        rep = np.repeat(np.arange(8), w.astype(int))
        assert value == pytest.approx(cohens_kappa([BANDS[i] for i in a[rep]], [BANDS[i] for i in b[rep]]))


def test_reducers_on_a_hand_table():
    # three votes on one segment: (8, 6, 6, 4) good, (8, 10, 6, 6) partial, (5, 2, 8, null) partial
    votes = np.array([[[8, 6, 6, 4]], [[8, 10, 6, 6]], [[5, 2, 8, np.nan]]], dtype=float)
    verdicts = np.array([[0], [1], [1]])
    expect = {"mean": [7, 6, round(20 / 3, 6), 5], "median": [8, 6, 6, 5], "majority": [8, 2, 6, 4],
              "min_faithfulness": [7, 6, round(20 / 3, 6), 4]}
    for reducer, values in expect.items():
        reduced, verdict = reduce_votes(votes, verdicts, reducer)
        np.testing.assert_allclose(reduced[0], values, err_msg=reducer)
        assert verdict[0] == 1  # majority partial
    four = np.array([[[1, 9, 4, 4]], [[2, 3, 5, 2]], [[6, 3, 5, 8]], [[10, 0, 6, np.nan]]], dtype=float)
    reduced, verdict = reduce_votes(four, np.array([[0], [0], [2], [2]]), "trimmed")
    np.testing.assert_allclose(reduced[0], [(2 + 6) / 2, 3, 5, round(14 / 3, 6)])  # faithfulness: 3 votes, none cut
    assert verdict[0] == 2  # a tie goes to the worse band
    none, no_verdict = reduce_votes(np.full((2, 1, 4), np.nan), np.array([[-1], [-1]]), "mean")
    assert np.isnan(none).all() and no_verdict[0] == -1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10), st.none()), min_size=1, max_size=9))
def test_reducers_match_scipy_statistics_and_the_counter_rule(raw):
    from scipy.stats import trim_mean

    vals = np.array([np.nan if v is None else float(v) for v in raw])
    votes = np.repeat(vals[:, None, None], 4, axis=2)
    verdicts = np.zeros((len(vals), 1), dtype=int)
    present = [float(v) for v in raw if v is not None]
    for reducer in ("mean", "median", "trimmed", "majority", "min_faithfulness"):
        got = reduce_votes(votes, verdicts, reducer)[0][0]
        if not present:
            assert np.isnan(got).all()
            continue
        if reducer == "mean":
            want = [statistics.fmean(present)] * 4
        elif reducer == "median":
            want = [statistics.median(present)] * 4
        elif reducer == "trimmed":
            want = [trim_mean(present, 0.25)] * 4
        elif reducer == "majority":
            counts = Counter(present)
            want = [min(v for v, c in counts.items() if c == max(counts.values()))] * 4
        else:
            want = [statistics.fmean(present)] * 3 + [min(present)]
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=reducer)


def test_pareto_optimal_by_hand():
    cost = [1.0, 2.0, 2.0, 3.0, 0.5, np.nan, 4.0, 3.0]
    kappa = [0.6, 0.7, 0.65, 0.7, 0.5, 0.99, 0.8, 0.7]
    # 0.5@0.5 yes; 0.6@1 yes; 0.7@2 yes; 0.65@2 dominated; 0.7@3 dominated by 0.7@2; NaN never; 0.8@4 yes
    assert pareto_optimal(cost, kappa).tolist() == [True, True, False, False, True, False, True, False]
    assert pareto_optimal([1.0, 1.0], [0.5, 0.5]).tolist() == [True, True]


def panels_table(rows):
    base = {c: 0.0 for c in PANEL_COLUMNS}
    base.update(members=("a",), reducer="mean", k=1, samples=1, n_votes=1, n=100, n_unscored=0,
                n_labelled_not_good=50, n_labelled_good=50, simulated=False, pareto=False, reaches_target=False)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_recommend_the_cheapest_reaching_the_target_or_the_best_within_a_budget():
    panels = panels_table([
        {"panel_id": "A", "cost_per_1k_turns": 1.0, "band_kappa_lo": 0.65},
        {"panel_id": "B", "cost_per_1k_turns": 2.0, "band_kappa_lo": 0.72},
        {"panel_id": "C", "cost_per_1k_turns": 3.0, "band_kappa_lo": 0.80},
        {"panel_id": "D", "cost_per_1k_turns": np.nan, "band_kappa_lo": 0.95}])
    rec = recommend(panels, target=0.7)
    assert rec.chosen.panel_id == "B" and rec.runner_up.panel_id == "C"
    assert "$1.00 more per 1,000 turns" in rec.runner_up_reason
    assert recommend(panels, target=0.75).runner_up.panel_id == "B"  # the only other candidate misses it
    assert "misses the target" in recommend(panels, target=0.75).runner_up_reason
    none = recommend(panels, target=0.9)
    assert none.chosen is None and none.runner_up.panel_id == "C" and "no panel reaches" in none.reason
    budget = recommend(panels, budget=2.5)
    assert budget.chosen.panel_id == "B" and budget.runner_up.panel_id == "A"
    assert "lower band_kappa_lo (0.65 vs 0.72)" in budget.runner_up_reason
    assert recommend(panels, budget=0.5).chosen is None
    json.dumps(budget.to_json())


def test_escalation_shares_and_the_agreement_on_what_is_left():
    # 8 segments, two members; they differ by 3 points on segments 0-1, by 1 on 2, verdicts differ on 3
    label = np.array([[9, 9, 9, 9]] * 4 + [[2, 2, 2, 2]] * 4, dtype=float)
    lv = ["good"] * 4 + ["poor"] * 4
    a = label.copy()
    b = label.copy()
    a[0] = [3, 3, 3, 3]          # a wrong on 0: scores poor, b right
    b[0] = [6, 6, 6, 6]
    a[1] = [9, 9, 9, 9]
    b[1] = [6, 9, 9, 9]
    b[2] = [8, 9, 9, 9]
    a[4] = b[4] = [6, 6, 6, 6]  # both wrong the same way on 4 (partial, labelled poor): never escalated
    va, vb = list(lv), list(lv)
    vb[3] = "partial"
    members = pd.concat([member_rows("a", a, va), member_rows("b", b, vb)])
    study = panel_study(members, point_labels(label, lv), max_size=2, reducers=("mean",),
                        escalation_grid=(1, 3, math.inf), confirm_n_boot=None)
    esc = study.escalation.set_index("t")
    assert esc.loc[3.0, "n_escalated"] == 3          # 0 and 1 (range 3), 3 (verdicts)
    assert esc.loc[1.0, "n_escalated"] == 4          # and 2 (range 1)
    assert esc.loc[math.inf, "n_escalated"] == 1     # verdicts only
    assert esc.loc[3.0, "share_escalated"] == pytest.approx(3 / 8)
    detail = panel_detail(prepare_members(members), ["a", "b"], "mean")
    left = detail[(detail["max_range"] < 3) & ~detail["verdicts_differ"]]
    assert left["segment_id"].tolist() == ["s00002", "s00004", "s00005", "s00006", "s00007"]
    want = cohens_kappa(left["band"], [lv[int(s[1:])] for s in left["segment_id"]])
    assert 0 < want < 1 and esc.loc[3.0, "band_kappa"] == pytest.approx(want)
    assert esc.loc[3.0, "n_left"] == 5
    trust = trust_or_escalate(study.escalation, study.panels, target=-1.0)
    assert (trust.loc[trust["panel_id"] == "mean[a, b] x1", "share_escalated"] == 0).all()


def test_false_pass_false_fail_mae_and_the_distance_to_a_range():
    # labels: ranges [6, 8] on all dims; member at 9 -> distance 1; at 7 -> 0
    seg = ["s0", "s1", "s2", "s3"]
    lab = pd.DataFrame({"segment_id": seg, "verdict": ["good", "partial", "poor", "good"]})
    for d in DIMENSIONS:
        lab[f"{d}_min"], lab[f"{d}_max"] = 6, 8
    vals = np.array([[9] * 4, [9] * 4, [7] * 4, [3] * 4], dtype=float)  # good, good, partial, poor
    study = panel_study(member_rows("m", vals, ["good", "good", "partial", "poor"], segments=seg), lab,
                        confirm_n_boot=None, escalation_grid=())
    row = study.panel("single[m] x1")
    assert row.mae == pytest.approx((1 + 1 + 0 + 3) / 4)
    assert row.false_pass_rate == pytest.approx(1 / 2)  # of s1, s2 (partial, poor) s1 scored good
    assert row.false_fail_rate == pytest.approx(1 / 2)  # of s0, s3 (good) s3 scored poor
    assert row.n_labelled_not_good == 2 and row.n_labelled_good == 2


def test_costs_from_recorded_usd_priced_tokens_declared_or_unknown_and_per_1000_turns():
    seg = ["t1#1", "t1#2", "t2#1", "t2#2"]  # 2 turns of 2 segments: 2 calls per turn and sample
    vals = np.full((4, 4), 7.0)
    v = ["partial"] * 4
    model = next(iter(price_table().models))
    frames = [member_rows("rec", vals, v, segments=seg, cost_usd=0.01),
              member_rows("tok", vals, v, segments=seg, input_tokens=1000, output_tokens=100, model=model),
              member_rows("dec", vals, v, segments=seg),
              member_rows("unk", vals, v, segments=seg)]
    ms = prepare_members(pd.concat(frames), declared_cost={"dec": 0.5})
    per_call = dict(zip(ms.members, ms.cost_per_call, strict=True))
    assert per_call["rec"] == pytest.approx(0.01)
    assert per_call["tok"] == pytest.approx(cost_usd(model, TokenUsage(input_tokens=1000, output_tokens=100)))
    assert per_call["dec"] == 0.5 and math.isnan(per_call["unk"])
    assert ms.cost_source[:3] == ("recorded cost_usd", f"tokens x price table (copied {price_table().copied_on})",
                                  "declared")
    assert any("'unk'" in note and "unknown" in note for note in ms.notes)
    study = panel_study(ms, point_labels(vals, v, seg), max_size=2, confirm_n_boot=None, escalation_grid=())
    p = study.panels.set_index("panel_id")
    assert p.loc["single[rec] x1", "cost_per_1k_turns"] == pytest.approx(1000 * 0.01 * 2)
    assert p.loc["mean[rec, dec] x1", "cost_per_1k_turns"] == pytest.approx(1000 * (0.01 + 0.5) * 2)
    assert math.isnan(p.loc["mean[rec, unk] x1", "cost_per_1k_turns"]) and not p.loc["mean[rec, unk] x1", "pareto"]
    with pytest.raises(ValueError, match="declared_cost names member"):
        prepare_members(pd.concat(frames), declared_cost={"nobody": 1.0})


def test_latency_is_the_slowest_member_and_samples_pool_into_votes():
    vals = np.array([[6, 6, 6, 6], [8, 8, 8, 8]], dtype=float)
    a0 = member_rows("a", vals, ["partial", "good"], latency_s=[1.0, 3.0], cost_usd=0.01)
    a1 = member_rows("a", vals + 2, ["good", "good"], sample=1, latency_s=[2.0, 1.0], cost_usd=0.01)
    b0 = member_rows("b", vals, ["partial", "good"], latency_s=[4.0, 1.0], cost_usd=0.01)
    ms = prepare_members(pd.concat([a0, a1, b0]))
    assert ms.n_samples.tolist() == [2, 1]
    assert panel_detail(ms, ["a", "b"], "mean")["latency_s"].tolist() == [4.0, 3.0]
    two = panel_detail(ms, ["a"], "mean", samples=2)
    assert two["intent_understood"].tolist() == [7.0, 9.0] and two["latency_s"].tolist() == [2.0, 3.0]
    study = panel_study(ms, point_labels(vals, ["partial", "good"]), confirm_n_boot=None)
    p = study.panels.set_index("panel_id")
    assert p.loc["mean[a] x2", "cost_per_1k_turns"] == pytest.approx(2 * p.loc["single[a] x1", "cost_per_1k_turns"])
    assert "mean[a, b] x2" not in p.index  # b holds one sample
    assert p.loc["mean[a, b] x1", "latency_s"] == pytest.approx(3.5)
    with pytest.raises(ValueError, match="hold fewer samples"):
        panel_detail(ms, ["a", "b"], "mean", samples=2)
    with pytest.raises(ValueError, match="not defined for 2 vote"):
        panel_detail(ms, ["a", "b"], "median")


def test_panel_counts_follow_the_reducer_rules():
    members, labels = panels_benchmark_inputs(3, 200, 0)
    study = panel_study(members, labels, confirm_n_boot=None)
    # 3 singles; 3 pairs x (mean, majority, min_faithfulness); 1 triple x (mean, median, majority, min_f.)
    assert len(study.panels) == 3 + 3 * 3 + 4
    assert set(study.panels.loc[study.panels["k"] == 3, "reducer"]) == {"mean", "median", "majority",
                                                                       "min_faithfulness"}
    four, labels4 = panels_benchmark_inputs(4, 100, 1)
    assert "trimmed" in set(panel_study(four, labels4, confirm_n_boot=None).panels["reducer"])
    assert panel_study(four, labels4, confirm_n_boot=None).panels["panel_id"].is_unique


# -- input checks ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("change", "match"), [
    (lambda f: f.assign(verdict=["great", "good"]), "verdict = 'great'"),
    (lambda f: f.assign(sql_quality=[11.0, 5.0]), "sql_quality = 11.0"),
    (lambda f: f.assign(intent_understood=[np.nan, 5.0]), "intent_understood = nan; expected a number on a judged"),
    (lambda f: f.assign(verdict=[None, "good"]), "expected a verdict on a row with subscores"),
    (lambda f: pd.concat([f, f.iloc[[0]]]), "one row per \\(member, segment_id, sample\\)"),
    (lambda f: pd.concat([f, f.iloc[[0]].assign(member="b", no_tools=True)]), "cap facts of segment 's00000' differ"),
    (lambda f: f.assign(sample=[0, 2]).iloc[[1]], "holds samples \\[2\\]"),
    (lambda f: f.assign(no_tools=[None, False]), "no_tools = None"),
    (lambda f: f.drop(columns=["verdict"]), "lacks column"),
])
def test_bad_members_tables_are_reported_with_row_column_and_value(change, match):
    frame = member_rows("a", [[5, 5, 5, 5], [6, 6, 6, 6]], ["partial", "good"])
    with pytest.raises(ValueError, match=match):
        prepare_members(change(frame))


def test_a_failed_member_is_left_out_and_all_failed_is_unscored():
    vals = np.array([[6, 6, 6, 6], [np.nan] * 4], dtype=float)
    a = member_rows("a", vals, ["partial", None])
    b = member_rows("b", [[8, 8, 8, 8], [np.nan] * 4], ["good", None])
    detail = panel_detail(prepare_members(pd.concat([a, b])), ["a", "b"], "mean")
    assert detail["intent_understood"].iloc[0] == 7 and detail["band"].iloc[1] is None
    study = panel_study(pd.concat([a, b]), point_labels([[7] * 4, [7] * 4], ["partial", "partial"]),
                        confirm_n_boot=None)
    assert study.panel("mean[a, b] x1").n_unscored == 1


def test_panel_labels_from_constructed_and_human_labels():
    constructed = panel_labels(load_labels("data/turns/labels.csv"))
    row = constructed.loc["us-0001"]  # intent 8-10, faithfulness 6-9, partial
    assert (row["lo_intent_understood"], row["hi_intent_understood"], row["mid_intent_understood"]) == (8, 10, 9)
    assert row["mid_answer_faithfulness"] == 7.5 and row["code"] == 1 and constructed.attrs["note"]
    human = pd.DataFrame({"segment_id": ["x", "x", "y"], "rater": ["r1", "r2", "r1"],
                          "intent_understood": [6, 9, 2], "sql_quality": [5, 5, 1], "result_relevance": [4, 6, 1],
                          "answer_faithfulness": [np.nan, 8, 0], "verdict": ["good", "partial", "poor"]})
    h = panel_labels(human)
    assert h.loc["x", "mid_intent_understood"] == 7.5 and h.loc["x", "lo_answer_faithfulness"] == 8
    assert h.loc["x", "verdict"] == "partial" and h.loc["x", "n_raters"] == 2  # tie -> the worse band
    with pytest.raises(ValueError, match="verdict 'fine'"):
        panel_labels(human.assign(verdict=["fine", "good", "poor"]))


# -- simulated members -------------------------------------------------------------------------------------
def test_simulated_members_have_their_characters_and_the_blind_pair_counts_as_fewer_judges(sample_members):
    labels = load_labels("data/turns/labels.csv")
    # the offline judge, under a short member name (its judge id carries its coefficients' hash)
    heur = sample_members[sample_members["member"] == build_judge("heuristic").judge_id].assign(member="heuristic")
    sim = simulated_members(heur, labels, seed=5, n_samples=3)
    assert sim["member"].str.startswith(SIMULATED_PREFIX).all() and sim["simulated"].all()
    assert sim.attrs["label"] == "SIMULATED"
    again = simulated_members(heur.iloc[::-1], labels, seed=5, n_samples=3)
    key = ["member", "segment_id", "sample"]
    pd.testing.assert_frame_equal(sim.sort_values(key).reset_index(drop=True),
                                  again.sort_values(key).reset_index(drop=True))
    ms = prepare_members(sim)
    lab = panel_labels(labels)
    mids = lab.loc[list(ms.segment_ids), [f"mid_{d}" for d in DIMENSIONS]].to_numpy()
    err = ms.values[:, 0] - mids[None]
    bias = dict(zip(ms.members, np.nanmean(err, axis=(1, 2)), strict=True))
    assert bias["simulated:lenient"] > 0.8 and bias["simulated:harsh"] < -0.8
    spread = dict(zip(ms.members, np.nanstd(err, axis=(1, 2)), strict=True))
    assert spread["simulated:noisy"] > spread["simulated:lenient"]
    study = panel_study(sim, labels, declared_cost={m: 0.001 for m in ms.members}, max_size=2,
                        confirm_n_boot=None)
    corr = study.diagnostics.matrix("answer_faithfulness")
    assert corr.loc["simulated:blind_a", "simulated:blind_b"] > 0.3 + corr.loc["simulated:lenient", "simulated:harsh"]
    assert study.diagnostics.n_eff(["simulated:blind_a", "simulated:blind_b"], "answer_faithfulness") < 1.6
    assert SIMULATED_NOTE in study.notes and study.panels["simulated"].all()


# -- the study record ----------------------------------------------------------------------------------------
def test_study_json_has_no_nan_and_the_recommendation_is_confirmed_by_the_bootstrap(sample_members):
    labels = load_labels("data/turns/labels.csv")
    study = panel_study(sample_members, labels, confirm_n_boot=200, target=0.3)
    payload = study.to_json()
    text = json.dumps(payload, allow_nan=False)
    assert "NaN" not in text
    rec = study.recommendation
    assert rec.chosen is not None and rec.chosen.panel_id in rec.confirmation
    conf = rec.confirmation[rec.chosen.panel_id]
    assert conf["n_boot"] == 200 and conf["method"] == "cluster bootstrap percentile"
    assert conf["estimate"] == pytest.approx(rec.chosen.band_kappa) and conf["lo"] <= conf["estimate"] <= conf["hi"]
    n_turns = sample_members["turn_id"].nunique()
    assert conf["n_clusters"] == n_turns < conf["n"]  # bundled turns are resampled whole
    assert payload["n_panels"] == len(study.panels) and study.frontier()["pareto"].all()
    assert rec.chosen.band_kappa_lo >= 0.3 and rec.chosen.pareto
    assert TARGET_KAPPA == 0.7
    assert set(study.members["member"]) == set(sample_members["member"])
