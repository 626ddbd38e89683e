"""Labels files that cannot be trusted are refused before a decision: a broken labels file (wrong columns,
binary, semicolon-separated, empty, no usable row) is one line and exit 2 from ``gate --corrected`` and
``compare --labels``, never a verdict on n = 0 nor a comparison folder; duplicate (segment, rater) rows
are bad rows of ``import-labels`` (or replaced by the later file with ``--replace``) and refused by the
readers; ``plan-labels`` checks a share's units before it reads a run.

Everything runs through the real CLI entry point on runs of the bundled sample with the offline
heuristic judge.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.calibration.corrected import run_labels
from axon_eval.calibration.labelling import SHEET_COLUMNS, LabelsFileError
from axon_eval.cli import main
from axon_eval.labels import LABEL_COLUMNS, load_labels

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/turns/sample_turns.jsonl"
LABELS = ROOT / "data/turns/labels.csv"


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("labels-input-runs")
    base = runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="base", progress=False, seed=0).run_dir
    harsher = runs.rescore(base, "axon-v1-faithcap", out_dir=out, name="harsher").run_dir
    return {"base": base, "harsher": harsher}


def write_rows(path: Path, rows: list[list[str]], header: list[str] | tuple[str, ...] = SHEET_COLUMNS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def sheet_rows(constructed: pd.DataFrame, ids: list[str], rater: str = "ann", bump: int = 0) -> list[list[str]]:
    """Sheet rows for ``ids`` from the constructed labels' lower bounds (``bump`` added to intent)."""
    by = constructed.set_index("segment_id")
    rows = []
    for sid in ids:
        r = by.loc[sid]
        faith = "" if pd.isna(r["answer_faithfulness_min"]) else str(int(r["answer_faithfulness_min"]))
        rows.append([sid, str(min(int(r["intent_understood_min"]) + bump, 10)), str(int(r["sql_quality_min"])),
                     str(int(r["result_relevance_min"])), faith, r["verdict"], rater, ""])
    return rows


def broken_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """Each broken labels file and what its one-line error must say."""
    folder.mkdir(exist_ok=True)
    wrong = folder / "wrongcols.csv"
    wrong.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    binary = folder / "binary.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    semi = folder / "semicolon.csv"
    semi.write_text(LABELS.read_text(encoding="utf-8").replace(",", ";"), encoding="utf-8")
    empty = folder / "empty.csv"
    empty.write_bytes(b"")
    header_only = write_rows(folder / "header_only.csv", [])
    return {"wrongcols": (wrong, "not a labels file"), "binary": (binary, "not a UTF-8 CSV labels sheet"),
            "semicolon": (semi, "semicolon"), "empty": (empty, "is empty"),
            "header_only": (header_only, "no label rows")}


def one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


# -- a broken labels file ------------------------------------------------------------------------------
def test_a_broken_labels_file_is_one_line_and_exit_2_from_gate_and_compare(sample_runs, tmp_path, capsys):
    for kind, (path, says) in broken_files(tmp_path / "bad").items():
        check_refused(kind, path, says, sample_runs, tmp_path / kind, capsys)


def check_refused(kind: str, path: Path, says: str, sample_runs: dict, tmp_path: Path, capsys) -> None:
    base, harsher = str(sample_runs["base"]), str(sample_runs["harsher"])

    code = main(["gate", base, "--min-mean-score", "1", "--corrected", "--labels", str(path), "--n-boot", "100"])
    captured = capsys.readouterr()
    assert code == 2, (kind, captured)
    line = one_error_line(captured.err)
    assert str(path) in line and says in line, (kind, line)
    assert "codec can't decode" not in line
    assert "gate" not in captured.out and "PASS" not in captured.out and "FAIL" not in captured.out
    if kind in ("wrongcols", "semicolon"):  # the expected columns, from the reader's schema
        assert str(list(SHEET_COLUMNS)) in line and str(list(LABEL_COLUMNS)) in line

    out = tmp_path / "comparisons"
    code = main(["compare", base, harsher, "--labels", str(path), "--out", str(out), "--n-boot", "100"])
    captured = capsys.readouterr()
    assert code == 2, (kind, captured)
    line = one_error_line(captured.err)
    assert str(path) in line and says in line, (kind, line)
    assert not out.exists() or not any(out.iterdir()), "no comparison folder may be written"
    assert "comparison folder" not in captured.out


def test_run_labels_raises_one_value_error_naming_the_file(sample_runs, tmp_path):
    for path, says in broken_files(tmp_path / "bad").values():
        with pytest.raises(LabelsFileError) as info:
            run_labels(sample_runs["base"], path)
        assert isinstance(info.value, ValueError)
        message = str(info.value)
        assert "\n" not in message and str(path) in message and says in message


def test_a_labels_file_without_a_usable_row_for_the_run_is_refused_with_the_count(sample_runs, tmp_path, capsys):
    # the right columns, but segment ids of another run: every row is bad for this run
    sheet = write_rows(tmp_path / "other_run.csv", [[f"zz-{i:04d}", "8", "7", "6", "9", "good", "ann", ""]
                                                    for i in range(3)])
    code = main(["gate", str(sample_runs["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(sheet),
                 "--n-boot", "100"])
    captured = capsys.readouterr()
    assert code == 2 and "gate" not in captured.out
    line = one_error_line(captured.err)
    assert str(sheet) in line and "no usable label row: 3 bad row(s)" in line
    assert f"the first: {sheet}:2: segment_id" in line and "'zz-0000'" in line
    # a pack folder whose sheet was never filled: every row is blank
    pack = tmp_path / "pack"
    assert main(["sample-for-labelling", str(sample_runs["base"]), "--n", "5", "--out", str(pack)]) == 0
    capsys.readouterr()
    with pytest.raises(LabelsFileError, match=r"no usable label row: \d+ bad row\(s\), the first: .*blank"):
        run_labels(sample_runs["base"], pack)


# -- duplicate labels ----------------------------------------------------------------------------------
@pytest.fixture()
def pack(sample_runs, tmp_path, capsys):
    """A labelling pack of the sample run, its sheet filled by rater ann, and the constructed labels."""
    out = tmp_path / "pack"
    assert main(["sample-for-labelling", str(sample_runs["base"]), "--n", "8", "--seed", "1", "--out", str(out)]) == 0
    constructed = load_labels(LABELS)
    ids = json.loads((out / "design.json").read_text())["segments"]
    write_rows(out / "sheet.csv", sheet_rows(constructed, [s["segment_id"] for s in ids]))
    capsys.readouterr()
    return out, constructed, [s["segment_id"] for s in ids]


def test_a_corrected_copy_imported_into_a_pack_is_a_bad_row_naming_both_files(pack, capsys):
    out, constructed, ids = pack
    assert main(["import-labels", str(out / "sheet.csv")]) == 0
    fixed = write_rows(out / "sheet-fixed.csv", sheet_rows(constructed, ids, bump=1))
    capsys.readouterr()
    assert main(["import-labels", str(fixed)]) == 6
    captured = capsys.readouterr()
    bad = [line for line in captured.err.splitlines() if line.startswith("BAD ROW")]
    assert len(bad) == len(ids)
    assert all(str(fixed) in line and "sheet.csv:" in line and "--replace" in line for line in bad), bad
    assert f"{len(ids)} bad row(s)" in captured.out
    imported = pd.read_csv(out / "sheet.imported.csv")
    assert not imported.duplicated(["segment_id", "rater"]).any() and len(imported) == len(ids)

    # --replace: the later file's rows replace the earlier ones, and the command says how many
    assert main(["import-labels", str(fixed), "--replace"]) == 0
    captured = capsys.readouterr()
    assert f"{len(ids)} row(s) replaced" in captured.out and "0 bad row(s)" in captured.out
    imported = pd.read_csv(out / "sheet.imported.csv")
    assert not imported.duplicated(["segment_id", "rater"]).any() and len(imported) == len(ids)
    assert imported["source"].str.contains("sheet-fixed.csv").all()
    assert main(["import-labels", str(fixed), "--replace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["replaced"] == 0  # importing the same file again replaces its own rows


def test_duplicates_across_files_on_the_command_line(pack, tmp_path, capsys):
    out, constructed, ids = pack
    fixed = write_rows(out / "sheet-fixed.csv", sheet_rows(constructed, ids[:3], bump=1))
    target = tmp_path / "labels.csv"
    assert main(["import-labels", str(out / "sheet.csv"), str(fixed), "--out", str(target)]) == 6
    captured = capsys.readouterr()
    bad = [line for line in captured.err.splitlines() if line.startswith("BAD ROW")]
    assert len(bad) == 3 and all(f"{fixed}:" in line and f"{out / 'sheet.csv'}:" in line for line in bad), bad
    assert "3 bad row(s)" in captured.out
    # with --replace the later file on the command line wins
    assert main(["import-labels", str(out / "sheet.csv"), str(fixed), "--out", str(target), "--replace"]) == 0
    captured = capsys.readouterr()
    assert "3 row(s) replaced" in captured.out
    imported = pd.read_csv(target)
    assert len(imported) == len(ids) and not imported.duplicated(["segment_id", "rater"]).any()
    later = imported.set_index("segment_id").loc[ids[:3]]
    assert later["source"].str.startswith(str(fixed)).all()


def test_duplicates_within_one_file_are_bad_rows_naming_the_lines_even_with_replace(pack, tmp_path, capsys):
    out, constructed, ids = pack
    rows = sheet_rows(constructed, ids)
    rows.append(sheet_rows(constructed, ids[:1], bump=1)[0])  # line len(ids) + 2 repeats line 2
    sheet = write_rows(out / "sheet.csv", rows)
    for extra in ([], ["--replace"]):
        assert main(["import-labels", str(sheet), "--out", str(tmp_path / "l.csv"), *extra]) == 6
        bad = [line for line in capsys.readouterr().err.splitlines() if line.startswith("BAD ROW")]
        assert bad == [f"BAD ROW {sheet}:{len(ids) + 2}: rater: expected one row per segment and rater (already "
                       f"labelled at {sheet}:2), got 'ann' (segment {ids[0]})"], bad


def test_readers_refuse_duplicate_labels(sample_runs, pack, tmp_path, capsys):
    out, constructed, ids = pack
    rows = sheet_rows(constructed, ids)
    dup = write_rows(tmp_path / "dup.imported.csv", rows + sheet_rows(constructed, ids[:2], bump=1))
    code = main(["gate", str(sample_runs["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(dup),
                 "--n-boot", "100"])
    captured = capsys.readouterr()
    assert code == 2 and "gate" not in captured.out
    line = one_error_line(captured.err)
    assert str(dup) in line and "2 duplicate (segment, rater) row(s)" in line and "--replace" in line
    with pytest.raises(LabelsFileError, match="duplicate"):
        labelling.read_human_labels(dup, labelling.known_from_results(runs.load_run(sample_runs["base"]).results))


# -- plan-labels checks a share's units first ----------------------------------------------------------
@pytest.mark.parametrize(("args", "says"), [
    (["--figure", "share_poor", "--half-width", "5"], "0.03 means 3 percentage points"),
    (["--figure", "share_good", "--half-width", "1.5"], "0.03 means 3 percentage points"),
    (["--figure", "share_poor", "--half-width", "0"], "positive"),
    (["--figure", "share_poor", "--half-width", "-0.05"], "positive"),
    (["--figure", "mean_score", "--half-width", "-2"], "positive"),
])
def test_plan_labels_refuses_a_half_width_in_the_wrong_units_before_reading_the_run(args, says, sample_runs,
                                                                                    tmp_path, capsys):
    for run in (str(sample_runs["base"]), str(tmp_path / "no-such-run")):  # checked before the run is read
        assert main(["plan-labels", run, *args, "--correlation", "0.5"]) == 2
        captured = capsys.readouterr()
        line = one_error_line(captured.err)
        assert "--half-width" in line and says in line and args[-1] in line, line
        assert captured.out == ""


def test_plan_labels_refuses_a_share_difference_in_percentage_points(sample_runs, capsys):
    base = str(sample_runs["base"])
    assert main(["plan-labels", base, base, "--figure", "share_poor", "--detect-difference", "3",
                 "--correlation", "0.5"]) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert "--detect-difference 3" in line and "0.03 means 3 percentage points" in line and captured.out == ""
    assert main(["plan-labels", base, base, "--figure", "share_poor", "--detect-difference", "0.03",
                 "--correlation", "0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "paired"


def test_constructed_labels_of_other_segments_are_refused_not_read_as_n_0(sample_runs, tmp_path, capsys):
    other = tmp_path / "other_labels.csv"
    frame = pd.read_csv(LABELS, dtype=str, keep_default_na=False)
    frame["segment_id"] = "zz-" + frame["segment_id"]
    frame.to_csv(other, index=False)
    code = main(["gate", str(sample_runs["base"]), "--min-mean-score", "1", "--corrected", "--labels", str(other),
                 "--n-boot", "100"])
    captured = capsys.readouterr()
    assert code == 2 and "gate" not in captured.out
    line = one_error_line(captured.err)
    assert str(other) in line and f"none of its {2 * len(frame)} label row(s)" in line and "judged segment" in line
    folder = tmp_path / "not-a-pack"
    folder.mkdir()
    with pytest.raises(LabelsFileError, match="expected a labelling pack folder or a labels file"):
        run_labels(sample_runs["base"], folder)
