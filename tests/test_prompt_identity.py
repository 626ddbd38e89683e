"""A language-model judge is identified by its prompt's text, not its file name.

Every judge here is the real anthropic / openai SDK talking HTTP to ``FakeJudgeServer`` on 127.0.0.1 (the
requests it answers are counted there, and the system prompts it received are kept by the responder). The
oracles are ``hashlib.sha256`` of the text written out here, the server's request count, and the calibration
record's staleness lines.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from axon_eval.judges import SpecError, VerdictCache, build_judge, load_prompt, with_prompt_file
from axon_eval.judges import _llm
from axon_eval.judges.fake_server import FakeJudgeServer, default_responder
from axon_eval.judges.prompt import JudgePrompt
from axon_eval.rubric import Rubric
from axon_eval.runs import evaluate
from axon_eval.stats.agreement import Estimate
from axon_eval.stats.calibration_record import calibration_record, calibration_status, staleness

from tests.test_judges_llm import make_views
from tests.test_runs import sample_lines, write_lines

MODEL = "claude-haiku-4-5"
PROMPT_ONE = "You grade a captured analytics turn. Reply with the JSON object the schema asks for.\n"
PROMPT_TWO = PROMPT_ONE + "Be strict about numbers that the rows do not support.\n"


def short_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class SystemPromptRecorder:
    """A fake-server responder that keeps the system prompt of every request, then answers as the default."""

    def __init__(self) -> None:
        self.systems: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, path: str, body: dict):
        system = body.get("system")
        text = system[0]["text"] if isinstance(system, list) else next(
            (m["content"] for m in body.get("messages", []) if m.get("role") == "system"), None)
        with self._lock:
            self.systems.append(text)
        return default_responder(path, body)


@pytest.fixture(autouse=True)
def no_endpoint_environment(monkeypatch):
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AXON_EVAL_KEY_HOSTS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def recorder():
    return SystemPromptRecorder()


@pytest.fixture()
def server(recorder):
    with FakeJudgeServer(lifetime_s=120, responder=recorder) as s:
        yield s


def fake_kappa(n: int = 80):
    from types import SimpleNamespace

    kappa = Estimate(name="kappa", value=0.85, ci=(0.75, 0.92), method="BCa", n=n, n_boot=2000, seed=0, confidence=0.95)
    return SimpleNamespace(kappa=kappa, n=n, constructed=False, judge_id=None)


# -- the identity --------------------------------------------------------------------------------------
def test_a_packaged_prompt_is_recorded_with_its_content_hash():
    local = "http://127.0.0.1:9"  # building opens no connection
    for spec, name in ((f"anthropic:{MODEL}@{local}", "judge_v1"), (f"anthropic:{MODEL}@{local}#free_text",
                                                                     "judge_v1_free_text"),
                       (f"openai:gpt-4o@{local}", "judge_v1")):
        judge = build_judge(spec)
        expected = f"{name}+{short_sha256(load_prompt(name).text)}"
        assert judge.prompt_version == expected and f"@{expected}," in judge.judge_id
        assert judge.provenance()["prompt_sha256"] == hashlib.sha256(load_prompt(name).text.encode()).hexdigest()


def test_an_edited_packaged_prompt_is_another_judge_with_another_cache_key(monkeypatch, server, tmp_path, recorder):
    """The bug: the id carried only the file name, so an edited prompt kept the old id, the old calibration
    stayed current and the cache served the old text's verdicts under the new one."""
    views = make_views(3)
    cache = VerdictCache(tmp_path / "cache.sqlite")
    before = build_judge(f"anthropic:{MODEL}@{server.url}")
    first = before.judge_many(views, cache=cache, progress=False)
    assert server.requests == 3 and all(r.judged for r in first)
    original = load_prompt("judge_v1")
    edited = original.text + "\nA new instruction.\n"

    def edited_load_prompt(version: str) -> JudgePrompt:
        if version == "judge_v1":
            return JudgePrompt("judge_v1", edited, hashlib.sha256(edited.encode("utf-8")).hexdigest())
        return load_prompt(version)

    monkeypatch.setattr(_llm, "load_prompt", edited_load_prompt)
    after = build_judge(f"anthropic:{MODEL}@{server.url}")
    assert after.judge_id != before.judge_id and after.prompt_version == f"judge_v1+{short_sha256(edited)}"
    again = after.judge_many(views, cache=cache, progress=False)
    assert server.requests == 6, "the cache served verdicts of the old prompt text under the edited one"
    assert not any(r.cached for r in again) and recorder.systems[-1] == edited
    old_record = calibration_record(fake_kappa(), {"judge_id": before.judge_id, "judge_model": MODEL,
                                                   "judge_endpoint": before.endpoint,
                                                   "prompt_version": before.prompt_version, "rubric_id": "r"})
    run_now = {"judge_id": after.judge_id, "judge_model": MODEL, "judge_endpoint": after.endpoint,
               "prompt_version": after.prompt_version, "rubric_id": "r"}
    allowed, reasons = calibration_status(old_record, run_now)
    assert not allowed and any(r.startswith("calibration stale: judge prompt differs") for r in reasons)
    cache.close()


# -- prompt files outside the package ------------------------------------------------------------------
def test_a_prompt_file_is_sent_and_identified_by_its_text(server, tmp_path, recorder):
    views = make_views(2)
    first_path = tmp_path / "strict_grader.md"
    first_path.write_text(PROMPT_ONE, encoding="utf-8")
    cache = VerdictCache(tmp_path / "cache.sqlite")
    judge = build_judge(f"anthropic:{MODEL}@{server.url}", prompt_file=first_path)
    assert judge.prompt_version == f"file:strict_grader+{short_sha256(PROMPT_ONE)}"
    assert judge.judge_id == f"anthropic:{MODEL}@file:strict_grader+{short_sha256(PROMPT_ONE)},t=default,base={server.url}"
    assert judge.provenance()["prompt_file"] == str(first_path.resolve())
    judge.judge_many(views, cache=cache, progress=False)
    assert server.requests == 2 and recorder.systems == [PROMPT_ONE, PROMPT_ONE]

    # the same text under another path is the same prompt: served from the cache, no request
    copy = tmp_path / "elsewhere" / "strict_grader.md"
    copy.parent.mkdir()
    copy.write_text(PROMPT_ONE, encoding="utf-8")
    same = build_judge(f"anthropic:{MODEL}@{server.url}", prompt_file=copy)
    assert same.judge_id == judge.judge_id
    assert all(r.cached for r in same.judge_many(views, cache=cache, progress=False)) and server.requests == 2

    # the file edited: another id, every view asked again with the new text
    first_path.write_text(PROMPT_TWO, encoding="utf-8")
    edited = build_judge(f"anthropic:{MODEL}@{server.url}", prompt_file=first_path)
    assert edited.judge_id != judge.judge_id and edited.prompt_version.endswith("+" + short_sha256(PROMPT_TWO))
    records = edited.judge_many(views, cache=cache, progress=False)
    assert not any(r.cached for r in records) and server.requests == 4 and recorder.systems[-2:] == [PROMPT_TWO] * 2
    cache.close()


def test_the_spec_form_and_the_option_build_the_same_judge(tmp_path, server):
    path = tmp_path / "my prompt, v2 (draft).md"  # a comma and parentheses: the path must be quoted
    path.write_text(PROMPT_ONE, encoding="utf-8")
    by_option = build_judge(f"openai:gpt-4o@{server.url}/v1", prompt_file=path)
    spec = with_prompt_file(f"openai:gpt-4o@{server.url}/v1", path)
    assert spec == f"prompt(openai:gpt-4o@{server.url}/v1, file='{path}')"
    by_spec = build_judge(spec)
    assert by_spec.judge_id == by_option.judge_id and by_spec.prompt.text == PROMPT_ONE and by_spec.spec == spec
    assert by_spec.judge(make_views(1)[0]).judged
    nested = build_judge(f"prompt(ensemble(anthropic:{MODEL}@{server.url}, openai:gpt-4o@{server.url}/v1), "
                         f"file='{path}')")
    assert all(m.prompt.text == PROMPT_ONE for m in nested.members)
    assert with_prompt_file("heuristic", None) == "heuristic"


def test_prompt_file_errors_name_the_problem(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(PROMPT_ONE, encoding="utf-8")
    with pytest.raises(SpecError, match="the heuristic judge has no prompt"):
        build_judge(f"prompt(heuristic, file={path})")
    with pytest.raises(SpecError, match="the heuristic judge has no prompt"):
        build_judge("heuristic", prompt_file=path)
    with pytest.raises(SpecError, match="prompt needs prompt"):
        build_judge(f"prompt(anthropic:{MODEL})")
    with pytest.raises(SpecError, match="conflicts with the prompt file"):
        build_judge(f"prompt(anthropic:{MODEL}@http://127.0.0.1:9, file={path})", prompt_file=tmp_path / "other.md")
    with pytest.raises(ValueError, match=r"prompt file .*missing\.md.* does not exist"):
        build_judge(f"anthropic:{MODEL}@http://127.0.0.1:9", prompt_file=tmp_path / "missing.md")
    (tmp_path / "blank.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="is blank"):
        build_judge(f"anthropic:{MODEL}@http://127.0.0.1:9", prompt_file=tmp_path / "blank.md")
    from axon_eval.reference import make_judge

    with pytest.raises(ValueError, match="takes no prompt_file"):  # the reference judge has one prompt
        make_judge(f"claude:{MODEL}@http://127.0.0.1:9", prompt_file=path)


# -- runs: the manifest, the rubric's prompt and the calibration record -------------------------------
def test_a_run_records_the_prompt_identity_and_an_edited_file_makes_its_calibration_stale(tmp_path, server):
    evidence = write_lines(tmp_path / "turns.jsonl", sample_lines(4))
    path = tmp_path / "grader.md"
    path.write_text(PROMPT_ONE, encoding="utf-8")
    spec = with_prompt_file(f"anthropic:{MODEL}@{server.url}", path)
    cache = tmp_path / "cache.sqlite"
    first = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=cache, progress=False)
    m1 = first.manifest
    assert m1.status == "complete" and m1.prompt_version == f"file:grader+{short_sha256(PROMPT_ONE)}"
    assert m1.judge_provenance[0]["prompt_file"] == str(path.resolve())
    assert m1.judge_provenance[0]["prompt_sha256"] == hashlib.sha256(PROMPT_ONE.encode()).hexdigest()
    assert any("the rubric names prompt 'judge_v1' but the judge uses file:grader+" in w for w in m1.warnings)
    record = calibration_record(fake_kappa(), m1)
    assert calibration_status(record, m1) == (True, [])
    asked = server.requests

    path.write_text(PROMPT_TWO, encoding="utf-8")
    second = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=cache, progress=False)
    m2 = second.manifest
    assert server.requests == asked + m2.counts.segments, "verdicts of the old prompt text were served"
    lines = staleness(record, m2)
    assert [line.split(" differs")[0] for line in lines] == ["calibration stale: judge id",
                                                             "calibration stale: judge prompt"]
    assert calibration_status(record, m2)[0] is False
    saved = json.loads((Path(second.run_dir) / "manifest.json").read_text())
    assert saved["prompt_version"] == f"file:grader+{short_sha256(PROMPT_TWO)}"


def test_the_cli_takes_a_prompt_file_for_evaluate_and_rejudge(tmp_path, server, recorder, capsys):
    from axon_eval import cli
    from axon_eval.runs import EXIT_OK, load_run

    evidence = write_lines(tmp_path / "turns.jsonl", sample_lines(3))
    path = tmp_path / "cli_grader.md"
    path.write_text(PROMPT_ONE, encoding="utf-8")
    out = tmp_path / "runs"
    spec = f"anthropic:{MODEL}@{server.url}"
    assert cli.main(["evaluate", "--turns", str(evidence), "--judge", spec, "--prompt-file", str(path),
                     "--out", str(out), "--quiet", "--no-cache"]) == EXIT_OK
    (first,) = sorted(out.iterdir())
    m = load_run(first).manifest
    assert m.prompt_version == f"file:cli_grader+{short_sha256(PROMPT_ONE)}"
    assert m.judge_spec == f"prompt({spec}, file='{path}')" and set(recorder.systems) == {PROMPT_ONE}
    path.write_text(PROMPT_TWO, encoding="utf-8")
    assert cli.main(["rejudge", str(first), "--judge", spec, "--prompt-file", str(path), "--quiet",
                     "--no-cache"]) == EXIT_OK
    rejudged = load_run(next(p for p in sorted(out.iterdir()) if p != first)).manifest
    assert rejudged.prompt_version == f"file:cli_grader+{short_sha256(PROMPT_TWO)}" and recorder.systems[-1] == PROMPT_TWO
    assert cli.main(["evaluate", "--turns", str(evidence), "--judge", "heuristic", "--prompt-file", str(path),
                     "--out", str(out), "--quiet"]) == 2
    assert "has no prompt" in capsys.readouterr().err
