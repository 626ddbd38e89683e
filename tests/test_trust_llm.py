"""Runs with the Claude and OpenAI-compatible judges against the local fake server: the endpoint
is part of the evidence, keys never reach a file, Message Batches resume instead of paying twice, and the
cost budget stops a run before it is exceeded.

Every judge here is the real SDK talking HTTP to ``FakeJudgeServer`` on 127.0.0.1; nothing of ours is
mocked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon_eval import cli
from axon_eval.judges import build_judge
from axon_eval.judges.fake_server import FakeJudgeServer
from axon_eval.reporting import save_run_figures
from axon_eval.reporting.report import write_report
from axon_eval.rubric import Rubric
from axon_eval.runs.notebook import run_notebook
from axon_eval.runs import EXIT_OK, EXIT_PARTIAL, evaluate, load_run
from axon_eval.runs.manifest import RunManifest

from tests.test_runs import sample_lines, write_lines

CANARY_ANTHROPIC = "sk-ant-canary-5f0c1d2e3b4a59687766554433221100"
CANARY_OPENAI = "sk-openai-canary-99887766554433221100ffeeddccbbaa"
CANARY_URL_PASSWORD = "urlpass-canary-0a1b2c3d4e5f"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def server():
    with FakeJudgeServer(lifetime_s=300) as s:
        yield s


@pytest.fixture()
def evidence(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "turns.jsonl", sample_lines(6))


def _files_under(*folders: Path) -> list[Path]:
    return [p for f in folders if f.exists() for p in f.rglob("*") if p.is_file()]


def test_a_run_against_a_local_server_says_so_and_never_shares_the_real_judges_cache(tmp_path, evidence, server,
                                                                                     monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_ANTHROPIC)
    cache = tmp_path / "cache.sqlite"
    run = evaluate(evidence, "anthropic:claude-haiku-4-5", Rubric.default(), out_dir=tmp_path / "runs",
                   cache=cache, progress=False)
    m = run.manifest
    assert m.status == "complete" and m.judge_local is True and m.judge_endpoint == server.url
    assert f"base={server.url}" in m.judge_id
    assert any("local server" in w for w in m.warnings)
    assert m.judge_provenance and m.judge_provenance[0]["key_source"] == "dummy"
    report = write_report(run.run_dir).read_text()
    first_page = report[: report.find("<table")] if "<table" in report else report
    assert "local server" in first_page and server.url in first_page
    # the same model without the server: a different judge id, so not one cached verdict is served
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    real = build_judge("anthropic:claude-haiku-4-5")
    assert real.judge_id != m.judge_id and "base=" not in real.judge_id
    from axon_eval.judges.cache import VerdictCache

    with VerdictCache(cache) as vc:
        view_keys = [real.cache_key(v, 0) for v in _views(evidence)]
        assert all(vc.get(k) is None for k in view_keys)


def _views(evidence: Path):
    from axon_eval import load_turns, split_segments
    from axon_eval.view import render_view

    turns, _ = load_turns(evidence)
    return [render_view(s, 20) for t in turns for s in split_segments(t)]


def test_keys_never_reach_a_file_or_a_server_they_were_not_meant_for(tmp_path, evidence, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    monkeypatch.setenv("AXON_EVAL_CACHE", str(tmp_path / "cache" / "verdicts.sqlite"))
    out = tmp_path / "runs"
    host_port = server.url.removeprefix("http://")
    specs = [f"anthropic:claude-haiku-4-5@{server.url}",
             f"openai:gpt-4o-mini@http://user:{CANARY_URL_PASSWORD}@{host_port}/v1"]
    for spec in specs:
        run = evaluate(evidence, spec, Rubric.default(), out_dir=out, progress=False,
                       params={"note": f"spec was {spec}"})
        assert run.manifest.status == "complete", run.manifest.error
        save_run_figures(run)
        write_report(run.run_dir)
    # a notebook run with the canary in its parameters and the CLI's evaluate and report verbs
    nb = run_notebook(ROOT / "notebooks" / "01_evaluate.ipynb",
                      {"judge": specs[1], "turns_file": str(evidence), "limit": 3, "run_name": "canary"},
                      out_dir=out, export_html=True)
    assert nb.status == "complete", nb.error
    assert cli.main(["evaluate", "--turns", str(evidence), "--judge", specs[0], "--out", str(out), "--quiet"]) == EXIT_OK
    assert cli.main(["report", str(nb.run_dir)]) == EXIT_OK
    files = _files_under(out, tmp_path / "cache")
    assert any(p.suffix == ".ipynb" for p in files) and any(p.name == "verdicts.sqlite" for p in files)
    for path in files:
        data = path.read_bytes()
        for canary in (CANARY_ANTHROPIC, CANARY_OPENAI, CANARY_URL_PASSWORD):
            assert canary.encode() not in data, f"{canary[:12]}... written to {path}"
    # a loopback server got the dummy key, never the user's
    for headers in server.received_headers:
        sent = " ".join(f"{k}: {v}" for k, v in headers.items())
        assert CANARY_ANTHROPIC not in sent and CANARY_OPENAI not in sent and CANARY_URL_PASSWORD not in sent


def test_batch_mode_judges_through_one_batch_at_the_batch_price(tmp_path, evidence, server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    batch = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=tmp_path / "c1.sqlite",
                     progress=False, batch=True, batch_poll_s=0.01)
    assert batch.manifest.status == "complete"
    assert len(batch.manifest.batch["submitted"]) == 1 and batch.manifest.batch["requests"] == len(batch.results)
    assert server.paths.count("/v1/messages/batches") == 1 and "/v1/messages" not in server.paths
    online = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=tmp_path / "c2.sqlite",
                      progress=False)
    assert batch.manifest.cost_usd == pytest.approx(online.manifest.cost_usd * 0.5)
    saved = json.loads((batch.run_dir / "batch.json").read_text())
    assert saved["status"] == "collected" and saved["batch_id"] == batch.manifest.batch["submitted"][0]


def test_an_interrupted_batch_run_resumes_polling_instead_of_paying_twice(tmp_path, evidence, server):
    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    cache = tmp_path / "cache.sqlite"
    server.batch_polls = 10_000  # the batch will not end while the first run waits
    with pytest.raises(TimeoutError):
        evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=cache, progress=False,
                 batch=True, batch_poll_s=0.01, batch_timeout_s=0.3)
    (failed,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    assert RunManifest.read(failed).status == "failed"
    batch_id = json.loads((failed / "batch.json").read_text())["batch_id"]
    server.batch_polls = 1
    again = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=cache, progress=False,
                     batch=True, batch_poll_s=0.01)
    assert again.manifest.status == "complete"
    assert again.manifest.batch["resumed"] == [batch_id] and again.manifest.batch["submitted"] == []
    assert server.paths.count("/v1/messages/batches") == 1, "the second run submitted a second batch"
    # and a third run is served entirely from the verdict cache
    third = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=cache, progress=False,
                     batch=True, batch_poll_s=0.01)
    assert third.manifest.cache_hits == len(third.results) and third.manifest.batch["submitted"] == []


def test_batch_mode_refuses_a_judge_that_cannot_batch(tmp_path, evidence):
    with pytest.raises(ValueError, match="batch mode needs"):
        evaluate(evidence, "heuristic", out_dir=tmp_path / "runs", batch=True, progress=False)
    assert not (tmp_path / "runs").exists()


def test_the_budget_stops_a_paid_run_before_it_is_exceeded(tmp_path, evidence, server, capsys):
    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    code = cli.main(["evaluate", "--turns", str(evidence), "--judge", spec, "--out", str(tmp_path / "runs"),
                     "--quiet", "--no-cache", "--max-cost-usd", "0.004", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert "estimated cost" in err
    assert code == EXIT_PARTIAL
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    run = load_run(folder)
    assert run.manifest.cost_usd <= 0.004 and run.manifest.estimated_cost_usd > 0.004
    stopped = run.results[run.results["status"] == "unjudged"]
    assert len(stopped) >= 1 and stopped["error"].str.contains("max_cost_usd").all()
    assert any("budget" in w for w in run.manifest.warnings)


def test_the_budget_also_bounds_a_batch(tmp_path, evidence, server):
    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    run = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=False, progress=False,
                   batch=True, batch_poll_s=0.01, max_cost_usd=0.004, limit=4)
    assert run.manifest.status == "partial" and run.manifest.estimated_cost_usd > 0.004
    assert run.manifest.batch["requests"] < len(run.results)
    assert run.manifest.cost_usd <= 0.004
    stopped = run.results[run.results["status"] == "unjudged"]
    assert len(stopped) and stopped["error"].str.contains("max_cost_usd").all()


def test_a_budget_for_a_model_without_a_price_is_refused_before_anything_is_written(tmp_path, evidence, server):
    with pytest.raises(ValueError, match="no price for"):
        evaluate(evidence, f"anthropic:claude-unknown-9@{server.url}", Rubric.default(), out_dir=tmp_path / "runs",
                 progress=False, max_cost_usd=1.0)
    assert not (tmp_path / "runs").exists()


def test_the_rubric_pins_the_prompt_of_a_judge_built_from_its_spec(tmp_path, evidence, server):
    """The prompt version is part of the rubric (and its id): a spec judged under a rubric naming
    ``judge_v2`` uses judge_v2; a judge object built elsewhere with another prompt is a manifest warning."""
    spec = f"anthropic:claude-haiku-4-5@{server.url}"
    v2 = Rubric.default().replace(prompt_version="judge_v2")
    assert v2.id != Rubric.default().id
    run = evaluate(evidence, spec, v2, out_dir=tmp_path / "runs", cache=False, progress=False)
    m = run.manifest
    # the recorded prompt is its identity: name + the first 12 hex of the text's SHA-256 (pinned in
    # tests/test_heuristic_general.py)
    assert m.status == "complete" and m.prompt_version == "judge_v2+9ca1e47f2eac" and "@judge_v2+9ca1e47f2eac," in m.judge_id
    assert not any("the rubric names prompt" in w for w in m.warnings)
    # the default rubric still names judge_v1, so the default behaviour is unchanged
    default = evaluate(evidence, spec, Rubric.default(), out_dir=tmp_path / "runs", cache=False, progress=False)
    assert default.manifest.prompt_version == "judge_v1+5d297cf15da8"
    mismatched = evaluate(evidence, build_judge(spec), v2, out_dir=tmp_path / "runs", cache=False, progress=False)
    assert any("the rubric names prompt 'judge_v2' but the judge uses judge_v1" in w
               for w in mismatched.manifest.warnings)
