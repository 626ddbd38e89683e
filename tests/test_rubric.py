"""Rubric files: ``extends:`` a parent, subscore caps, and the packaged ``axon-v1-faithcap``."""

from __future__ import annotations

import pytest
import yaml

from axon_eval import Rubric
from axon_eval.rubric import resolve_extends


def test_faithcap_is_axon_v1_plus_only_the_faithfulness_cap():
    base, faithcap = Rubric.default(), Rubric.packaged("axon-v1-faithcap")
    assert faithcap.name == "axon-v1-faithcap"
    assert [(c.dimension, c.at_or_below, c.cap) for c in faithcap.subscore_caps] == [("answer_faithfulness", 3, 49)]
    assert faithcap.model_dump(exclude={"name", "subscore_caps"}) == base.model_dump(exclude={"name", "subscore_caps"})
    assert faithcap.id != base.id
    assert Rubric.resolve("axon-v1-faithcap") == faithcap


def test_faithpartial_caps_an_unfaithful_answer_at_the_top_of_partial():
    from axon_eval.scoring import score_turn
    base, cand = Rubric.default(), Rubric.packaged("axon-v1-faithpartial")
    assert [(c.dimension, c.at_or_below, c.cap) for c in cand.subscore_caps] == [("answer_faithfulness", 3, 79)]
    assert cand.model_dump(exclude={"name", "subscore_caps"}) == base.model_dump(exclude={"name", "subscore_caps"})
    assert cand.id not in (base.id, Rubric.packaged("axon-v1-faithcap").id)
    facts = {"all_sql_failed": False, "ended_on_failure": False, "no_tools": False}
    sub = dict(intent_understood=10, sql_quality=10, result_relevance=10)
    # 10*(0.3*10 + 0.25*10 + 0.25*10 + 0.2*3) = 86 good under axon-v1; capped at 79 partial
    assert (score_turn({**sub, "answer_faithfulness": 3}, facts, base).band) == "good"
    s3 = score_turn({**sub, "answer_faithfulness": 3}, facts, cand)
    assert (s3.raw_score, s3.score, s3.band) == (86.0, 79.0, "partial")
    s4 = score_turn({**sub, "answer_faithfulness": 4}, facts, cand)
    assert (s4.score, s4.band) == (88.0, "good")
    # null faithfulness (no answer captured) never triggers it
    assert score_turn({**sub, "answer_faithfulness": None}, facts, cand).score == 100.0


def test_extends_changes_only_what_differs(tmp_path):
    child = tmp_path / "heavier-intent.yaml"
    child.write_text(yaml.safe_dump({"extends": "axon-v1", "name": "heavier-intent",
                                     "weights": {"intent_understood": 0.35, "answer_faithfulness": 0.15}}))
    r = Rubric.from_yaml(child)
    assert r.weights.as_dict() == {"intent_understood": 0.35, "sql_quality": 0.25, "result_relevance": 0.25,
                                   "answer_faithfulness": 0.15}
    base = Rubric.default()
    assert (r.caps, r.bands, r.row_horizon, r.prompt_version) == (base.caps, base.bands, base.row_horizon,
                                                                   base.prompt_version)
    # Same numbers as building the variant in code.
    assert r.id == base.with_weights(r.weights).id


def test_extends_a_relative_path_and_chains(tmp_path):
    (tmp_path / "parent.yaml").write_text(yaml.safe_dump({"extends": "axon-v1-faithcap", "name": "parent",
                                                           "row_horizon": 50}))
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "child.yaml").write_text(yaml.safe_dump({"extends": "../parent.yaml", "name": "child",
                                                    "bands": {"good": 85}}))
    r = Rubric.from_yaml(sub / "child.yaml")
    assert (r.name, r.row_horizon, r.bands.good, r.bands.partial) == ("child", 50, 85, 50)
    assert r.subscore_caps == Rubric.packaged("axon-v1-faithcap").subscore_caps  # inherited through the chain


def test_child_list_replaces_the_parent_list(tmp_path):
    f = tmp_path / "no-cap.yaml"
    f.write_text(yaml.safe_dump({"extends": "axon-v1-faithcap", "name": "no-cap", "subscore_caps": []}))
    assert Rubric.from_yaml(f).id == Rubric.default().id


def test_unknown_parent_names_the_file_and_the_parent(tmp_path):
    f = tmp_path / "orphan.yaml"
    f.write_text(yaml.safe_dump({"extends": "axon-v9", "name": "orphan"}))
    with pytest.raises(ValueError, match=r"orphan\.yaml.*axon-v9.*axon-v1"):
        Rubric.from_yaml(f)
    g = tmp_path / "missing-file.yaml"
    g.write_text(yaml.safe_dump({"extends": "nowhere/parent.yaml", "name": "x"}))
    with pytest.raises(ValueError, match=r"missing-file\.yaml.*nowhere/parent\.yaml"):
        Rubric.from_yaml(g)


def test_extends_needs_a_name_and_rejects_cycles(tmp_path):
    with pytest.raises(ValueError, match="own 'name'"):
        Rubric.from_dict({"extends": "axon-v1", "row_horizon": 30}, source="inline")
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump({"extends": "b.yaml", "name": "a"}))
    b.write_text(yaml.safe_dump({"extends": "a.yaml", "name": "b"}))
    with pytest.raises(ValueError, match="cycle"):
        Rubric.from_yaml(a)


def test_merged_rubric_is_still_validated(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump({"extends": "axon-v1", "name": "bad", "weights": {"intent_understood": 0.5}}))
    with pytest.raises(ValueError, match=r"(?s)bad\.yaml.*sum to 1"):
        Rubric.from_yaml(f)


def test_mapping_without_extends_is_unchanged():
    data = {"name": "x", "weights": {}}
    assert resolve_extends(data) is data


@pytest.mark.parametrize("cap,msg", [
    ({"dimension": "vibes", "at_or_below": 3, "cap": 49}, "not one of"),
    ({"dimension": "answer_faithfulness", "at_or_below": 11, "cap": 49}, "less than or equal to 10"),
    ({"dimension": "answer_faithfulness", "at_or_below": 3, "cap": 149}, "less than or equal to 100"),
])
def test_bad_subscore_caps_are_clear_errors(cap, msg):
    with pytest.raises(ValueError, match=msg):
        Rubric.default().replace(subscore_caps=[cap])


def test_duplicate_subscore_caps_are_rejected():
    cap = {"dimension": "answer_faithfulness", "at_or_below": 3, "cap": 49}
    with pytest.raises(ValueError, match="declared twice"):
        Rubric.default().replace(subscore_caps=[cap, {**cap, "cap": 40}])


def test_rubric_with_subscore_caps_round_trips_through_yaml(tmp_path):
    r = Rubric.packaged("axon-v1-faithcap")
    f = tmp_path / "dumped.yaml"
    f.write_text(r.to_yaml())
    assert Rubric.from_yaml(f) == r and Rubric.from_yaml(f).id == r.id


def test_with_weights_keeps_subscore_caps():
    r = Rubric.packaged("axon-v1-faithcap").with_weights({"intent_understood": 0.25, "sql_quality": 0.25,
                                                           "result_relevance": 0.25, "answer_faithfulness": 0.25})
    assert r.subscore_caps and r.name == "axon-v1-faithcap"


# -- loading errors: one line naming the file and what was expected ----------------------------------------
def _one_line_error(path):
    from axon_eval.rubric import RubricError

    with pytest.raises(RubricError) as err:
        Rubric.resolve(str(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert isinstance(err.value, ValueError)  # the CLI maps ValueError to exit 2
    return message


def test_malformed_yaml_is_one_line_with_its_position(tmp_path):
    # Before: a yaml.scanner traceback (exit 1).
    f = tmp_path / "malformed.yaml"
    f.write_text("name: [x\n  weights: : :\n")
    message = _one_line_error(f)
    assert "not valid YAML at line 2" in message and "expected a mapping" in message


def test_binary_and_empty_files_are_one_line(tmp_path):
    f = tmp_path / "binary.yaml"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    assert "not a text YAML file" in _one_line_error(f)
    g = tmp_path / "nul.yaml"
    g.write_bytes(b"name: a\x00b\n")
    assert "not valid YAML" in _one_line_error(g)
    e = tmp_path / "empty.yaml"
    e.write_text("")
    assert "got an empty file" in _one_line_error(e)
    assert "no such rubric file" in _one_line_error(tmp_path / "absent.yaml")


def test_weight_sum_error_is_one_line_naming_field_and_expectation(tmp_path):
    # Before: a multi-line pydantic ValidationError dump.
    f = tmp_path / "heavy.yaml"
    f.write_text(yaml.safe_dump({"extends": "axon-v1", "name": "heavy", "weights": {"intent_understood": 0.5},
                                 "caps": {"no_tools": -4}}))
    message = _one_line_error(f)
    assert "weights: weights must sum to 1, got 1.2" in message
    assert "caps.no_tools: Input should be greater than or equal to 0 (got -4)" in message


def test_a_broken_parent_names_the_parent_file(tmp_path):
    (tmp_path / "parent.yaml").write_text("weights: {intent_understood: [\n")
    child = tmp_path / "child.yaml"
    child.write_text(yaml.safe_dump({"extends": "parent.yaml", "name": "child"}))
    message = _one_line_error(child)
    assert "parent.yaml: not valid YAML" in message


def test_cli_exits_2_with_one_line_for_a_malformed_rubric(tmp_path, capsys):
    from axon_eval import cli

    f = tmp_path / "malformed.yaml"
    f.write_text("name: [x\n")
    code = cli.main(["evaluate", "--turns", "data/turns/sample_turns.jsonl", "--judge", "heuristic",
                     "--rubric", str(f), "--out", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: {f}: not valid YAML")
