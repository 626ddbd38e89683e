"""One typed options record for an evaluation: built and validated once, one source of defaults.

``runs.evaluate(turns, options)`` and ``runs.evaluate(turns, judge, rubric, **keywords)`` are the same
run; an unknown or mistyped option fails before anything is written, naming the option and what it
accepts; the CLI and ``rejudge`` take their defaults from :data:`axon_eval.runs.options.DEFAULTS`.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest

from axon_eval.cli import build_parser
from axon_eval.runs import evaluate, rejudge
from axon_eval.runs.options import DEFAULTS, EvaluationOptions

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"


def test_the_defaults_are_the_documented_ones():
    # written out from the CLI's --help and the evaluate docstring, not read from the record
    assert (DEFAULTS.concurrency, DEFAULTS.chunk_size, DEFAULTS.seed, DEFAULTS.name) == (8, 512, 0, "evaluate")
    assert (DEFAULTS.limit, DEFAULTS.row_horizon, DEFAULTS.max_cost_usd, DEFAULTS.cache) == (None, None, None, None)
    assert (DEFAULTS.batch, DEFAULTS.batch_poll_s, DEFAULTS.batch_timeout_s) == (False, 30.0, 90000.0)
    assert (DEFAULTS.kind, DEFAULTS.progress, DEFAULTS.compress_audit) == ("evaluate", True, False)


def test_an_unknown_option_names_itself_the_closest_and_every_valid_one():
    with pytest.raises(TypeError) as err:
        EvaluationOptions.build(limt=3)
    text = str(err.value)
    assert "'limt'" in text and "did you mean 'limit'?" in text
    assert all(name in text for name in ("concurrency", "max_cost_usd", "row_horizon", "chunk_size"))
    with pytest.raises(TypeError, match="'figures'"):  # runs draw nothing: no such option any more
        evaluate(SAMPLE, "heuristic", figures=True)


@pytest.mark.parametrize(("values", "named", "accepted"), [
    ({"limit": -1}, "limit", "greater than or equal to 0"),
    ({"concurrency": 0}, "concurrency", "greater than or equal to 1"),
    ({"concurrency": True}, "concurrency", "whole number"),
    ({"chunk_size": 2.5}, "chunk_size", "whole number"),
    ({"max_cost_usd": "ten"}, "max_cost_usd", "valid number"),
    ({"max_cost_usd": -0.5}, "max_cost_usd", "greater than or equal to 0"),
    ({"kind": "rescore"}, "kind", "'evaluate' or 'rejudge'"),
    ({"batch_poll_s": 0}, "batch_poll_s", "greater than 0"),
])
def test_a_bad_value_names_the_option_what_it_accepts_and_what_was_given(values, named, accepted):
    with pytest.raises(ValueError) as err:
        EvaluationOptions.build(**values)
    text = str(err.value)
    assert f"evaluation option {named!r}" in text and accepted in text
    assert f"got {next(iter(values.values()))!r}" in text


def test_unknown_or_bad_options_write_nothing(tmp_path):
    with pytest.raises(TypeError):
        evaluate(SAMPLE, "heuristic", out_dir=tmp_path, concurency=2)
    with pytest.raises(ValueError):
        evaluate(SAMPLE, "heuristic", out_dir=tmp_path, limit=-2)
    assert not list(tmp_path.iterdir())


def test_keywords_lay_over_a_record_and_the_record_is_immutable():
    base = EvaluationOptions.build(judge="heuristic", limit=3, seed=5)
    over = EvaluationOptions.build(base, limit=4)
    assert (over.judge, over.limit, over.seed, base.limit) == ("heuristic", 4, 5, 3)
    with pytest.raises(Exception):
        base.limit = 9  # type: ignore[misc]


def test_evaluate_with_a_record_equals_evaluate_with_keywords(tmp_path):
    options = EvaluationOptions.build(judge="heuristic", rubric="axon-v1", limit=4, seed=3, progress=False,
                                      cache=False, out_dir=tmp_path / "a", name="opts")
    by_record = evaluate(SAMPLE, options)
    by_keywords = evaluate(SAMPLE, "heuristic", "axon-v1", limit=4, seed=3, progress=False, cache=False,
                           out_dir=tmp_path / "b", name="opts")
    assert by_record.manifest.seed == by_keywords.manifest.seed == 3
    assert by_record.manifest.counts.turns == by_keywords.manifest.counts.turns == 4
    timing = ["latency_ms", "judged_at"]  # wall-clock facts of each judgement, not results
    pd.testing.assert_frame_equal(by_record.results.drop(columns=timing, errors="ignore"),
                                  by_keywords.results.drop(columns=timing, errors="ignore"))


def test_the_cli_and_rejudge_take_their_defaults_from_the_record():
    args = build_parser().parse_args(["evaluate", "--turns", "x.jsonl", "--judge", "heuristic"])
    assert (args.concurrency, args.chunk_size, args.seed, args.name, args.limit, args.max_cost_usd) == (
        DEFAULTS.concurrency, DEFAULTS.chunk_size, DEFAULTS.seed, DEFAULTS.name, DEFAULTS.limit,
        DEFAULTS.max_cost_usd)
    again = build_parser().parse_args(["rejudge", "somewhere", "--judge", "heuristic"])
    assert again.concurrency == DEFAULTS.concurrency
    signature = inspect.signature(rejudge).parameters
    for name in ("concurrency", "progress", "batch", "max_cost_usd"):
        assert signature[name].default == getattr(DEFAULTS, name), name
