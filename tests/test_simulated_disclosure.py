"""``index`` and ``trend`` say what was simulated: a run of a simulated judge (``noise(heuristic, ...)``) is
marked SIMULATED and a run judged against the local fake server (``anthropic:...@http://127.0.0.1:PORT``,
or ``ANTHROPIC_BASE_URL`` pointing at it) is marked "local server, not the provider", in the note column,
the ``--json`` output, every trend row and point, and a headline line.

The runs are real: the CLI's ``evaluate`` with the heuristic judge, the noise wrapper around it, and the
Anthropic judge through the real SDK against :class:`~axon_eval.judges.fake_server.FakeJudgeServer` on
127.0.0.1 (with a fake key in the environment, which a loopback server never receives).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from axon_eval.cli import main
from axon_eval.judges.fake_server import FakeJudgeServer
from axon_eval.reporting.estimates import trend_figure
from axon_eval.runs import index
from axon_eval.runs.trend import trend
from tests.test_runs import sample_lines, write_lines

FAKE_KEY = "sk-ant-test-not-a-real-key-123"
NOISE_SPEC = "noise(heuristic, sd=1, seed=0)"
SIMULATED = "SIMULATED"
LOCAL = "local server, not the provider"
REPO = Path(__file__).resolve().parents[1]


def evaluate_cli(turns: Path, judge: str, out: Path) -> Path:
    """``python -m axon_eval evaluate`` (through ``main``) with ``judge``; the new run folder."""
    before = set(out.iterdir()) if out.exists() else set()
    assert main(["evaluate", "--turns", str(turns), "--judge", judge, "--out", str(out), "--no-cache",
                 "--quiet"]) == 0
    (folder,) = [p for p in set(out.iterdir()) - before if not p.name.startswith(".")]
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Run folders under one root: ``heuristic``, ``noise_a``/``noise_b`` (the same simulated judge),
    ``fake_spec`` (the fake server named in the spec) and ``fake_env`` (named by ``ANTHROPIC_BASE_URL``)."""
    base = tmp_path_factory.mktemp("disclosure")
    turns = write_lines(base / "turns.jsonl", sample_lines(6))
    out = base / "runs"
    made = {"heuristic": evaluate_cli(turns, "heuristic", out),
            "noise_a": evaluate_cli(turns, NOISE_SPEC, out),
            "noise_b": evaluate_cli(turns, NOISE_SPEC, out)}
    with pytest.MonkeyPatch.context() as mp, FakeJudgeServer(lifetime_s=120) as server:
        mp.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        mp.delenv("ANTHROPIC_BASE_URL", raising=False)
        made["fake_spec"] = evaluate_cli(turns, f"anthropic:claude-haiku-4-5@{server.url}", out)
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        made["fake_env"] = evaluate_cli(turns, "anthropic:claude-haiku-4-5", out)
    return made


def row_of(lines: list[str], folder: Path) -> str:
    """The one line of a printed table that is ``folder``'s row (its first cell is the folder's name)."""
    (line,) = [line.strip() for line in lines if line.strip().startswith(folder.name + " ")]
    return line


def note_of(line: str) -> str:
    """The note column of an ``index`` table row: what follows the judged column's ``k of n``."""
    return re.search(r" \d+ of \d+ *(.*)$", line).group(1)


# -- index ---------------------------------------------------------------------------------------------
def test_index_notes_say_simulated_and_local_server_not_only_the_judge_column(runs):
    root = runs["heuristic"].parent
    done = subprocess.run([sys.executable, "-m", "axon_eval", "index", str(root)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["run", "kind", "status", "judge", "rubric", "judged", "note"]
    assert note_of(row_of(lines, runs["heuristic"])) == ""
    for key in ("noise_a", "noise_b"):
        assert note_of(row_of(lines, runs[key])) == SIMULATED
    for key in ("fake_spec", "fake_env"):
        line = row_of(lines, runs[key])
        assert "anthropic:claude-haiku-4-..." in line  # the judge column is clipped before the URL
        assert note_of(line) == LOCAL
    assert "1 of 5 run(s)" not in done.stdout
    assert "2 of 5 run(s) judged by a SIMULATED judge" in done.stdout
    assert "2 of 5 run(s) judged against a local server, not the provider" in done.stdout
    assert lines[-1].startswith("5 run folder(s)")


def test_index_json_and_frame_carry_the_disclosure(runs, capsys):
    root = runs["heuristic"].parent
    assert main(["index", str(root), "--json"]) == 0
    records = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    frame = index(root).set_index("run_id")
    expected = {"heuristic": (False, False, ""), "noise_a": (True, False, SIMULATED),
                "noise_b": (True, False, SIMULATED), "fake_spec": (False, True, LOCAL),
                "fake_env": (False, True, LOCAL)}
    for key, (simulated, local, label) in expected.items():
        record = records[runs[key].name]
        assert (record["simulated"], record["local_server"], record["judge_disclosure"]) == (simulated, local, label)
        assert tuple(frame.loc[runs[key].name, ["simulated", "local_server", "judge_disclosure"]]) == \
            (simulated, local, label)


def test_index_marks_a_study_that_says_it_is_simulated(runs, tmp_path, capsys):
    study = shutil.copytree(runs["heuristic"], tmp_path / "runs" / runs["heuristic"].name)
    (study / "study.json").write_text(json.dumps({"study": "judge-noise", "simulated": True}), encoding="utf-8")
    assert main(["index", str(tmp_path / "runs")]) == 0
    line = row_of(capsys.readouterr().out.splitlines(), study)
    assert note_of(line) == f"{SIMULATED}; study judge-noise"


# -- trend ---------------------------------------------------------------------------------------------
def test_trend_marks_each_simulated_run_and_says_so_in_a_headline(runs, capsys):
    folders = [runs["heuristic"], runs["noise_a"], runs["noise_b"]]
    assert main(["trend", *map(str, folders), "--allow-mixed", "--n-boot", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"SIMULATED: 2 of 3 run(s) in this trend were judged by a simulated judge (generated noise "
                        f"around another judge's verdicts, not a model's grading): {runs['noise_a'].name}, "
                        f"{runs['noise_b'].name}")
    assert lines[1].split()[-1] == "judge_disclosure"
    assert row_of(lines, runs["noise_a"]).endswith(SIMULATED) and row_of(lines, runs["noise_b"]).endswith(SIMULATED)
    assert SIMULATED not in row_of(lines, runs["heuristic"])
    assert not any(line.startswith("LOCAL SERVER") for line in lines)


def test_a_trend_of_one_simulated_judge_needs_no_allow_mixed_and_marks_every_point(runs, capsys):
    folders = [runs["noise_a"], runs["noise_b"]]
    assert main(["trend", *map(str, folders), "--by", "surface", "--n-boot", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SIMULATED: 2 of 2 run(s) in this trend")
    points = [line.strip() for line in lines if line.strip().startswith(tuple(f.name + " " for f in folders))]
    assert len(points) == 6 and all(line.endswith(SIMULATED) for line in points)  # 3 surfaces x 2 runs
    assert main(["trend", *map(str, folders), "--json", "--n-boot", "20"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["simulated_runs"] == [f.name for f in folders] and payload["local_server_runs"] == []
    assert payload["rows"] and all(r["simulated"] and r["judge_disclosure"] == SIMULATED for r in payload["rows"])


def test_a_trend_of_local_server_runs_says_so(runs, capsys):
    folders = [runs["fake_spec"], runs["fake_env"]]
    assert main(["trend", *map(str, folders), "--n-boot", "20"]) == 0  # both ids carry base=<the server>
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"LOCAL SERVER: 2 of 2 run(s) in this trend were judged against a local server, not the "
                        f"provider (not a real model's verdicts): {folders[0].name}, {folders[1].name}")
    assert all(row_of(lines, f).endswith(LOCAL) for f in folders)
    assert main(["trend", *map(str, folders), "--json", "--n-boot", "20"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["local_server_runs"] == [f.name for f in folders] and payload["simulated_runs"] == []
    assert all(r["local_server"] and not r["simulated"] and r["judge_disclosure"] == LOCAL for r in payload["rows"])


def test_a_trend_of_a_real_judge_discloses_nothing(runs, capsys):
    assert main(["trend", str(runs["heuristic"]), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert SIMULATED not in out and LOCAL not in out and "LOCAL SERVER" not in out
    assert "judge_disclosure" not in out
    assert out.splitlines()[0].split()[:2] == ["run_id", "run_date"]


def test_the_trend_figure_labels_simulated_and_local_points(runs):
    table = trend([runs["heuristic"], runs["noise_a"], runs["fake_spec"]], allow_mixed=True, n_boot=20)
    fig = trend_figure(table)
    labels = [text.get_text() for ax in fig.axes for text in ax.texts]
    assert labels == [SIMULATED, LOCAL] * 2  # two panels, one point of each per panel
    assert fig._suptitle.get_text().splitlines()[1] == \
        f"{SIMULATED} judge: 1 of 3 run(s); {LOCAL}: 1 of 3 run(s) (marked)"
