"""The rugby sample's simulator: the committed seeds redraw the bundled sample's set file byte for byte,
other seeds draw another valid sample, and a build from the committed file refuses other seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon_eval.fixtures import build_all
from axon_eval.fixtures.build import INCOMPLETE_TURN_FILE, FixtureSeeds
from axon_eval.fixtures.labelled import SETS_DIR, load_set
from axon_eval.simulator import draw_sample_set
from axon_eval.simulator.__main__ import main


def _draw(folder: Path, seeds: FixtureSeeds) -> Path:
    return draw_sample_set(folder / "sets", seeds, folder / "sports.sqlite")


def test_the_committed_seeds_redraw_the_committed_sample_file(tmp_path):
    drawn = _draw(tmp_path, FixtureSeeds())
    for name in ("sample.jsonl", INCOMPLETE_TURN_FILE):
        assert (drawn / name).read_bytes() == (SETS_DIR / name).read_bytes(), name


def test_other_seeds_draw_another_sample_that_validates(tmp_path):
    seeds = FixtureSeeds(warehouse=777, scenario=11, timing=12, assignment=13, events=14)
    drawn = _draw(tmp_path, seeds)
    cases = load_set(drawn / "sample.jsonl")  # every label check of the set format passes
    committed = load_set(SETS_DIR / "sample.jsonl")
    assert len(cases) == len(committed)
    # schema, guardrail and no-tools templates repeat their wording; the rest take new values
    new = {case.question for case, _ in cases} - {case.question for case, _ in committed}
    assert len(new) >= len(cases) // 3


def test_a_build_from_the_committed_file_refuses_the_seeds_it_was_not_drawn_with(tmp_path):
    with pytest.raises(ValueError, match=r"scenario seed 11: the bundled sample is data .*python -m axon_eval\.simulator"):
        build_all(tmp_path, FixtureSeeds(scenario=11))


def test_the_command_needs_an_out_folder_or_the_committed_redraw(capsys):
    with pytest.raises(SystemExit) as err:
        main([])
    assert err.value.code == 2 and "expected --out DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--write-committed", "--scenario-seed", "3"])
    assert "committed seeds" in capsys.readouterr().err


def test_a_warehouse_a_template_cannot_be_drawn_on_is_refused_by_name(tmp_path, capsys):
    """Warehouse seed 1102 has no match in which one side scored seven tries, which the LIMIT 5 template
    needs: the command says so rather than failing on an empty choice."""
    assert main(["--scenario-seed", "102", "--warehouse-seed", "1102", "--out", str(tmp_path / "held")]) == 2
    err = capsys.readouterr().err
    assert "no match in which one side scored seven tries" in err and "another warehouse seed" in err


def test_a_season_with_no_clear_top_five_asks_for_a_shorter_list(tmp_path):
    """Warehouse seed 1105 ties the fifth and sixth try scorers of every season: the top-scorer questions
    ask for the top four or three instead, and the labels still pass every check of the set format."""
    seeds = FixtureSeeds(warehouse=1105, scenario=105)
    cases = load_set(_draw(tmp_path, seeds) / "sample.jsonl")
    # the bundled intent-miss case lists another season's scorers on purpose: its list need not be a clear cut
    asked = [case.question for case, _ in cases
             if case.family != "bundled" and "try scorers" in case.question and "top" in case.question]
    assert asked and all("top four" in q for q in asked)
