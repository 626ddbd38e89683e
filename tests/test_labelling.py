"""Labelling: stratified sample, labelling pack without judge output, validated import, CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from axon_eval import runs
from axon_eval.calibration import labelling
from axon_eval.cli import main
from axon_eval.labels import load_labels
from axon_eval.rubric import DIMENSIONS

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LABELS = ROOT / "data" / "turns" / "labels.csv"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return runs.evaluate(SAMPLE, "heuristic", "axon-v1", out_dir=out, name="labelling", progress=False,
                         cache=False)


# -- sampling ----------------------------------------------------------------------------------------
def test_sample_is_proportional_with_a_minimum_and_design_weights(run):
    s = labelling.sample_for_labelling(run, 60, seed=1)
    judged = run.results[run.results["status"] == "judged"]
    sizes = judged.groupby(["band", "surface", "client"], observed=True).size()
    assert s.population == len(judged) and len(s.strata) == len(sizes)
    assert (s.strata["allocated"] >= 1).all() and (s.strata["allocated"] <= s.strata["population"]).all()
    for stratum, row in s.strata.iterrows():
        expected = min(row["population"], max(1, round(60 * row["population"] / len(judged))))
        assert row["allocated"] == expected, stratum
    counts = s.segments.groupby("stratum").size()
    assert (counts == s.strata["allocated"]).all()
    # design weight N_h / n_h: the weights add up to the run
    assert s.segments["weight"].sum() == pytest.approx(len(judged))
    assert s.segments["segment_id"].is_unique and set(s.segments["segment_id"]) <= set(judged["segment_id"])
    assert abs(s.n - 60) <= len(s.strata)


def test_sample_is_seeded(run):
    a = labelling.sample_for_labelling(run, 40, seed=1).segments["segment_id"].tolist()
    b = labelling.sample_for_labelling(run, 40, seed=1).segments["segment_id"].tolist()
    c = labelling.sample_for_labelling(run, 40, seed=2).segments["segment_id"].tolist()
    assert a == b and a != c
    d = labelling.sample_for_labelling(run, 40, seed=1).design()
    assert d["seed"] == 1 and d["stratify"] == ["band", "surface", "client"] and d["n"] == len(a)


def test_sample_refuses_unknown_stratifier(run):
    with pytest.raises(ValueError, match="cannot stratify"):
        labelling.sample_for_labelling(run, 10, ("band", "colour"))


# -- the pack --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pack(run, tmp_path_factory):
    s = labelling.sample_for_labelling(run, 30, seed=1)
    out = labelling.write_labelling_pack(s, run, tmp_path_factory.mktemp("pack") / "pack")
    return s, out


def test_pack_files_and_sheet(pack):
    s, out = pack
    with (out / "sheet.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["segment_id", *DIMENSIONS, "verdict", "rater", "comment"]
    assert [r[0] for r in rows[1:]] == s.segments["segment_id"].tolist()
    assert all(v == "" for r in rows[1:] for v in r[1:])
    design = json.loads((out / "design.json").read_text())
    assert design["seed"] == 1 and design["source_run"] and design["strata"] and len(design["segments"]) == s.n
    assert {"segment_id", "stratum", "weight", "answer_captured"} <= set(design["segments"][0])
    assert (out / "index.html").is_file()
    assert len(list((out / "segments").glob("*.html"))) == s.n


def test_pages_show_the_evidence_and_no_judge_output(run, pack):
    s, out = pack
    audit = {e["segment_id"]: e for e in run.iter_audit()}
    for sid in s.segments["segment_id"]:
        page = (out / "segments" / labelling.page_name(sid)).read_text()
        entry = audit[sid]
        explanation = entry["verdict"]["explanation"]
        assert explanation[:60] not in page
        for word in ("judge", "verdict", "explanation", "band", "subscore"):
            assert word not in page.lower().replace("verdict</code>", ""), (sid, word)
        assert f"{entry['score']['score']}" not in page.split("<h2>What the assistant did</h2>")[0]
        for step in entry["steps"]:
            if step.get("kind") == "sql" and step.get("status") == "ok":
                assert f"of {step['row_count']} rows" in page
        if entry["answer"] is None:
            assert "leave <code>answer_faithfulness</code> blank" in page
    index = (out / "index.html").read_text()
    assert "How to label" in index


def test_pack_folder_is_never_overwritten(run, pack):
    s, out = pack
    with pytest.raises(FileExistsError):
        labelling.write_labelling_pack(s, run, out)


# -- import ----------------------------------------------------------------------------------------------
def write_sheet(path: Path, rows: list[list[str]], header=None) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header or ["segment_id", *DIMENSIONS, "verdict", "rater", "comment"])
        w.writerows(rows)
    return path


KNOWN = {"a": True, "b": True, "n": False}  # segment id -> answer captured


def test_import_valid_rows_several_raters(tmp_path):
    sheet = write_sheet(tmp_path / "s.csv", [
        ["a", "8", "7", "6", "9", "good", "ann", ""],
        ["a", "7", "7", "5", "8", " Partial ", "bob", "line one\nline two"],
        ["n", "5", "5", "5", "", "partial", "ann", "no answer"],
    ])
    labels, problems = labelling.import_labels(sheet, KNOWN)
    assert problems == []
    assert len(labels) == 3 and labels.groupby("segment_id")["rater"].nunique()["a"] == 2
    assert labels.loc[1, "verdict"] == "partial" and pd.isna(labels.loc[2, "answer_faithfulness"])
    assert str(labels["intent_understood"].dtype) == "Int64"
    assert labels.loc[2, "source"].endswith(":5")  # the quoted comment spans lines 3-4


def test_import_reports_every_bad_row_with_its_line(tmp_path):
    sheet = write_sheet(tmp_path / "s.csv", [
        ["a", "8", "7", "6", "9", "good", "ann", ""],          # 2 ok
        ["zz", "8", "7", "6", "9", "good", "ann", ""],         # 3 unknown id
        ["b", "11", "7", "x", "9", "good", "ann", ""],         # 4 two bad subscores
        ["b", "8", "7", "6", "", "good", "ann", ""],           # 5 faithfulness required (answer captured)
        ["n", "8", "7", "6", "4", "good", "ann", ""],          # 6 faithfulness must be blank (no answer)
        ["b", "8", "7", "6", "5", "fine", "", ""],             # 7 verdict and rater
        ["a", "8", "7", "6", "9", "poor", "ann", ""],          # 8 duplicate (a, ann)
        ["b", "", "", "", "", "", "", ""],                     # 9 left blank
        ["b", "7.5", "7", "6", "5", "good", "cid", ""],        # 10 not an integer
    ])
    labels, problems = labelling.import_labels(sheet, KNOWN)
    assert labels["segment_id"].tolist() == ["a"]
    by_line = {}
    for p in problems:
        by_line.setdefault(p.line, []).append(p.column)
    assert by_line == {3: ["segment_id"], 4: ["intent_understood", "result_relevance"], 5: ["answer_faithfulness"],
                       6: ["answer_faithfulness"], 7: ["verdict", "rater"], 8: ["rater"], 9: ["*"],
                       10: ["intent_understood"]}
    text = [str(p) for p in problems]
    assert any("s.csv:4: intent_understood: expected an integer 0-10, got '11'" in t for t in text)
    assert any("already labelled at" in t and ":2" in t for t in text)
    assert any("no answer was captured" in t for t in text)


def test_import_missing_column_is_reported_on_the_header(tmp_path):
    sheet = write_sheet(tmp_path / "s.csv", [["a", "1", "2", "3", "good", "ann", ""]],
                        header=["segment_id", "intent_understood", "sql_quality", "result_relevance", "verdict",
                                "rater", "comment"])
    labels, problems = labelling.import_labels(sheet, KNOWN)
    assert labels.empty and len(problems) == 1 and problems[0].line == 1 and "answer_faithfulness" in problems[0].expected


# -- the constructed stand-in ------------------------------------------------------------------------------
def test_labels_from_constructed_stay_in_range_and_say_so():
    constructed = load_labels(LABELS)
    lab = labelling.labels_from_constructed(constructed, seed=0)
    assert len(lab) == 2 * len(constructed) and set(lab["rater"]) == {"constructed-a", "constructed-b"}
    merged = lab.merge(constructed, on="segment_id", suffixes=("", "_c"))
    for d in DIMENSIONS:
        has = merged[f"{d}_min"].notna()
        assert ((merged.loc[has, d] >= merged.loc[has, f"{d}_min"]) & (merged.loc[has, d] <= merged.loc[has, f"{d}_max"])).all()
        assert merged.loc[~has, d].isna().all()
    assert (merged["verdict"] == merged["verdict_c"]).all()
    assert "CONSTRUCTED" in lab.attrs["note"] and lab["comment"].str.contains("CONSTRUCTED").all()
    assert lab.equals(labelling.labels_from_constructed(constructed, seed=0))
    read, problems, constructed_flag = labelling.read_human_labels(LABELS)
    assert constructed_flag and problems == [] and len(read) == len(lab)


# -- CLI --------------------------------------------------------------------------------------------------
def test_cli_sample_and_import(run, tmp_path, capsys):
    out = tmp_path / "pack"
    assert main(["sample-for-labelling", str(run.run_dir), "--n", "20", "--stratify", "band,surface",
                 "--seed", "1", "--out", str(out)]) == 0
    assert (out / "sheet.csv").is_file()
    assert main(["sample-for-labelling", str(run.run_dir), "--n", "20", "--out", str(out)]) == 2  # pack exists
    assert main(["sample-for-labelling", str(run.run_dir), "--stratify", "nope", "--out", str(tmp_path / "x")]) == 2
    assert main(["sample-for-labelling", str(tmp_path / "missing"), "--out", str(tmp_path / "y")]) == 2

    design = json.loads((out / "design.json").read_text())
    rows = []
    for seg in design["segments"]:
        faith = "7" if seg["answer_captured"] else ""
        rows.append([seg["segment_id"], "8", "7", "6", faith, "good", "ann", ""])
    write_sheet(out / "sheet.csv", rows)
    capsys.readouterr()
    assert main(["import-labels", str(out / "sheet.csv")]) == 0
    imported = pd.read_csv(out / "sheet.imported.csv")
    assert len(imported) == len(rows)

    rows[0][1] = "12"
    write_sheet(out / "sheet.csv", rows)
    assert main(["import-labels", str(out / "sheet.csv"), "--run", str(run.run_dir), "--out", str(tmp_path / "l.csv")]) == 6
    err = capsys.readouterr().err
    assert "sheet.csv:2: intent_understood: expected an integer 0-10, got '12'" in err
    assert len(pd.read_csv(tmp_path / "l.csv")) == len(rows) - 1

    lonely = write_sheet(tmp_path / "lonely.csv", rows)
    assert main(["import-labels", str(lonely)]) == 2  # no design.json beside it and no --run
