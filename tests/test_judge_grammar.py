"""One judge grammar for every verb: ``grade-reference`` takes the ``anthropic:<model>[@<base_url>]`` leaf that
``evaluate`` takes (``claude:`` is an alias of it in both), through the command line against the local fake
server; and every verb's ``--help`` is plain text, not reStructuredText."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.test_reference import _heuristic_reply

from axon_eval.cli import main
from axon_eval.cli.main import build_parser
from axon_eval.judges import build_judge
from axon_eval.judges.fake_server import FakeJudgeServer
from axon_eval.reference import make_judge

ROOT = Path(__file__).resolve().parents[1]
MODEL = "claude-haiku-4-5"
ONE_QUESTION = ["--question", "d_refund_rate"]
#: reStructuredText markup that must not reach a terminal: roles, double-backtick literals
REST_MARKUP = re.compile(r"``|:(?:func|mod|class|data|meth|attr|exc):`")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_EVAL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("AXON_EVAL_CACHE", str(tmp_path / "cache.sqlite"))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _manifests(out: Path) -> list[dict]:
    return [json.loads((p / "manifest.json").read_text()) for p in sorted(out.iterdir()) if p.is_dir()]


def test_grade_reference_takes_the_anthropic_leaf_of_every_other_verb_and_claude_as_its_alias(tmp_path, capsys):
    out = tmp_path / "graded"
    with FakeJudgeServer(responder=lambda path, body: _heuristic_reply(path, body, json), lifetime_s=120) as server:
        spec = f"anthropic:{MODEL}@{server.url}"
        assert build_judge(spec).model == MODEL  # the spec evaluate accepts...
        assert main(["grade-reference", "--out", str(out), *ONE_QUESTION, "--judge", spec]) == 0  # ...grades
        calls = server.requests
        assert calls > 0
        # the alias names the same judge: every grade comes from the cache, nothing is sent again
        assert main(["grade-reference", "--out", str(out), *ONE_QUESTION, "--judge",
                     f"claude:{MODEL}@{server.url}"]) == 0
        assert server.requests == calls
        # #structured is the reference judge's only mode: accepted, the same judge again
        assert main(["grade-reference", "--out", str(out), *ONE_QUESTION, "--judge", f"{spec}#structured"]) == 0
        assert server.requests == calls
    first, second, third = _manifests(out)
    assert first["judge_id"] == second["judge_id"] == third["judge_id"]
    assert first["judge_spec"].startswith(f"anthropic:{MODEL}@")
    assert (second["cache_hits"], second["cache_misses"]) == (calls, 0)
    assert first["status"] == second["status"] == "complete"


def test_evaluate_takes_the_claude_alias_as_the_same_judge(tmp_path):
    with FakeJudgeServer(lifetime_s=120) as server:
        alias, canonical = build_judge(f"claude:{MODEL}@{server.url}"), build_judge(f"anthropic:{MODEL}@{server.url}")
        assert alias.judge_id == canonical.judge_id and alias.model == MODEL
        code = main(["evaluate", "--turns", str(ROOT / "data" / "turns" / "sample_turns.jsonl"), "--limit", "2",
                     "--judge", f"claude:{MODEL}@{server.url}", "--out", str(tmp_path / "runs"), "--quiet"])
    assert code == 0
    (manifest,) = _manifests(tmp_path / "runs")
    assert manifest["judge_id"] == canonical.judge_id and manifest["status"] == "complete"


@pytest.mark.parametrize(("spec", "expected"), [
    ("anthropic:", "unknown reference judge 'anthropic:'"),
    ("anthropic:@http://127.0.0.1:9", "needs anthropic:<model>"),
    (f"anthropic:{MODEL}@", "needs anthropic:<model>"),
    (f"anthropic:{MODEL}#free_text", "needs structured output"),
    (f"anthropic:{MODEL}#prose", "unknown judging mode 'prose'"),
    ("openai:gpt-4o@http://127.0.0.1:9/v1", "Anthropic API only"),
    (f"repeat(anthropic:{MODEL}, 2)", "unknown reference judge"),
    ("gpt:4", "unknown reference judge 'gpt:4'"),
])
def test_a_bad_reference_judge_is_one_line_naming_it_and_the_valid_forms(spec, expected, tmp_path, capsys):
    assert main(["grade-reference", "--out", str(tmp_path / "out"), "--judge", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err and "anthropic:<model>[@<base_url>]" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=re.escape(expected)):
        make_judge(spec)


def _help_texts() -> dict[str, str]:
    parser = build_parser()
    verbs = next(a for a in parser._actions if a.dest == "verb").choices  # the sub-command parsers
    return {name: sub.format_help() for name, sub in verbs.items()}


def test_grade_reference_help_is_plain_text(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["grade-reference", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert not REST_MARKUP.search(text), REST_MARKUP.search(text)
    assert "\n::" not in text and "anthropic:<model>[@<base_url>]" in text and "claude:<model>" in text
    assert "axon_eval.reference.run.grade_reference" in text  # a role's target stays, as plain text


def test_no_verb_prints_restructuredtext_in_its_help():
    marked = {name: REST_MARKUP.search(text).group(0) for name, text in _help_texts().items()
              if REST_MARKUP.search(text)}
    assert not marked, marked
