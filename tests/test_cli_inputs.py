"""What the command line says about the inputs it is given and where it writes, through ``python -m
axon_eval`` in-process (``axon_eval.cli.main``): a folder where a file is expected, a labelling sheet that
is empty or binary, invalid input counted in lines with their problems beside them, and one root for runs
whatever folder ``evaluate`` is started from."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from axon_eval.cli import main
from axon_eval.rubric import DIMENSIONS
from axon_eval.runs import io as runs_io

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
SHEET_HEADER = ["segment_id", *DIMENSIONS, "verdict", "rater", "comment"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv(runs_io.RUNS_DIR_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv(runs_io.CACHE_ENV, str(tmp_path / "cache.sqlite"))


def _folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []


# -- a folder where a file is expected ----------------------------------------------------------------
@pytest.mark.parametrize("verb", [
    ["evaluate", "--judge", "heuristic", "--turns", "{dir}"],
    ["validate", "{dir}"],
    ["run", str(ROOT / "notebooks" / "01_evaluate.ipynb"), "-p", "turns_file", "{dir}"],
    ["grade-reference", "--questions", "{dir}"],
])
def test_a_folder_given_as_an_input_file_is_called_a_folder(verb, tmp_path, capsys):
    folder = tmp_path / "evidence"
    folder.mkdir()
    code = main([part.replace("{dir}", str(folder)) for part in verb])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert str(folder) in err and ("is a directory" in err or "is a folder" in err), err
    assert "expected" in err and "does not exist" not in err, err
    assert not _folders(tmp_path / "runs")


def test_a_missing_input_file_still_says_it_does_not_exist(tmp_path, capsys):
    assert main(["evaluate", "--judge", "heuristic", "--turns", str(tmp_path / "nope.jsonl")]) == 2
    assert f"{tmp_path / 'nope.jsonl'} does not exist" in capsys.readouterr().err


# -- import-labels refuses an empty or binary sheet -----------------------------------------------------
@pytest.fixture()
def pack(tmp_path, capsys):
    """A labelling pack of a small heuristic run: its folder (with design.json) and the run."""
    assert main(["evaluate", "--judge", "heuristic", "--turns", str(SAMPLE), "--limit", "12", "--quiet"]) == 0
    (run,) = _folders(tmp_path / "runs")
    out = tmp_path / "pack"
    assert main(["sample-for-labelling", str(run), "--n", "4", "--out", str(out)]) == 0
    capsys.readouterr()
    return out


@pytest.mark.parametrize(("name", "content", "says"), [
    ("empty.csv", b"", "is empty"),
    ("blank.csv", b"\n\n  \n", "is empty"),
    ("binary.csv", bytes(range(256)) * 4, "is not a text file"),
    ("latin1.csv", ",".join(SHEET_HEADER).encode() + b"\nseg\xe9,1,2,3,4,good,ann,\n", "is not a text file"),
])
def test_import_labels_refuses_an_empty_or_binary_sheet_naming_it(name, content, says, pack, capsys):
    sheet = pack / name
    sheet.write_bytes(content)
    before = sorted(p.name for p in pack.iterdir())
    assert main(["import-labels", str(sheet)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(sheet) in err and says in err, err
    assert sorted(p.name for p in pack.iterdir()) == before, "nothing may be written"


def test_import_labels_refuses_a_sheet_with_only_a_header(pack, capsys):
    sheet = pack / "header_only.csv"
    with sheet.open("w", newline="") as fh:
        csv.writer(fh).writerow(SHEET_HEADER)
    assert main(["import-labels", str(sheet)]) == 2
    err = capsys.readouterr().err
    assert str(sheet) in err and "no label rows" in err
    assert not (pack / "header_only.imported.csv").exists()


def test_import_labels_on_a_folder_says_it_is_one(pack, capsys):
    assert main(["import-labels", str(pack)]) == 2
    err = capsys.readouterr().err
    assert f"{pack} is a directory" in err


# -- invalid input: lines, with problems counted separately ----------------------------------------------
def test_invalid_input_is_counted_in_lines_with_the_problems_beside_them(tmp_path, capsys):
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:30]
    mutated, bad_lines, problems = [], 0, 0
    for i, line in enumerate(lines):
        d = json.loads(line)
        if i % 3 == 0:  # two problems on one line
            d["question"], d["region"] = "", ""
            bad_lines, problems = bad_lines + 1, problems + 2
        elif i % 3 == 1:  # one problem
            d["client"] = 5
            bad_lines, problems = bad_lines + 1, problems + 1
        mutated.append(json.dumps(d))
    path = tmp_path / "mutated.jsonl"
    path.write_text("\n".join(mutated) + "\n", encoding="utf-8")
    for quiet in (["--quiet"], []):
        code = main(["evaluate", "--judge", "heuristic", "--turns", str(path), "--no-cache", *quiet])
        captured = capsys.readouterr()
        text = captured.out + captured.err
        assert code == 0
        assert f"invalid input lines: {bad_lines} ({problems} problems)" in text
        counted = [line for line in text.splitlines() if "invalid input line(s)" in line]
        if quiet:
            assert f"  {bad_lines} invalid input line(s) ({problems} problems): listed in" in text, counted
        else:
            shown = [line for line in text.splitlines() if line.startswith("  INVALID line ")]
            assert len(shown) == 5  # five lines shown, each with all of its problems
            rest_problems = problems - sum(line.count("; ") + 1 for line in shown)
            assert f"  and {bad_lines - 5} more invalid input line(s) ({rest_problems} problems): listed in" in text
        assert f"{bad_lines} invalid input line(s)" in counted[-1]  # the status line counts lines too
        assert not any(f"{problems} invalid input line" in line for line in counted), counted


# -- one root for runs ---------------------------------------------------------------------------------------
@pytest.fixture()
def checkout(tmp_path, monkeypatch):
    """A stand-in for the repository checkout the package runs from (so no test writes into the real
    runs/), with a subfolder, and no ``$AXON_EVAL_RUNS_DIR``."""
    repo = tmp_path / "checkout"
    (repo / "axon_eval").mkdir(parents=True)
    (repo / "notebooks").mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'axon-eval'\n")
    monkeypatch.setattr(runs_io, "package_checkout", lambda: repo)
    monkeypatch.delenv(runs_io.RUNS_DIR_ENV)
    return repo


def _evaluate_from(folder: Path, monkeypatch, capsys) -> str:
    monkeypatch.chdir(folder)
    assert main(["evaluate", "--judge", "heuristic", "--turns", str(SAMPLE), "--limit", "2", "--quiet"]) == 0
    return capsys.readouterr().out


def test_evaluate_from_a_subfolder_of_the_repository_writes_the_repositorys_runs(checkout, monkeypatch, capsys):
    out = _evaluate_from(checkout / "notebooks", monkeypatch, capsys)
    (run,) = _folders(checkout / "runs")
    assert not (checkout / "notebooks" / "runs").exists()
    assert f"run folder: {run}" in out
    assert f"runs root:  {checkout / 'runs'} (the repository's runs/)" in out
    monkeypatch.chdir(checkout)  # index at the top of the repository finds it
    assert main(["index"]) == 0
    assert run.name in capsys.readouterr().out


def test_evaluate_outside_the_repository_writes_runs_here_and_says_so(checkout, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = _evaluate_from(elsewhere, monkeypatch, capsys)
    (run,) = _folders(elsewhere / "runs")
    assert not (checkout / "runs").exists()
    assert f"runs root:  {elsewhere / 'runs'} (./runs: the working directory is outside the repository" in out
    assert "AXON_EVAL_RUNS_DIR" in out and f"index {elsewhere / 'runs'}" in out


def test_the_runs_variable_wins_everywhere(checkout, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(runs_io.RUNS_DIR_ENV, str(tmp_path / "shared"))
    out = _evaluate_from(checkout / "notebooks", monkeypatch, capsys)
    assert len(_folders(tmp_path / "shared")) == 1 and not (checkout / "runs").exists()
    assert f"runs root:  {tmp_path / 'shared'} ($AXON_EVAL_RUNS_DIR)" in out
