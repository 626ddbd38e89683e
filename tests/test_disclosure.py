"""``judge_disclosure``: what a run's judge was not (simulated, a local server instead of the provider)."""

from __future__ import annotations

import dataclasses

import pytest

from axon_eval.runs.disclosure import JudgeDisclosure, is_local_url, judge_disclosure
from axon_eval.runs.manifest import RunManifest

FAKE_SERVER_ID = "anthropic:claude-haiku-4-5@judge_v1,t=default,base=http://127.0.0.1:40123"
CLAUDE_ID = "anthropic:claude-haiku-4-5@judge_v1,t=default"
NOISE_ID = "noise(heuristic@v3,sd=1.0,seed=0)"


def manifest(**fields) -> RunManifest:
    return RunManifest(run_id="r1", status="complete", kind="evaluate", name="r1",
                       started_at="2026-07-20T09:00:00Z", **fields)


def test_a_real_judge_discloses_nothing():
    for m in (manifest(judge_id="heuristic@v3", judge_spec="heuristic"),
              {"judge_id": CLAUDE_ID, "judge_spec": "anthropic:claude-haiku-4-5", "judge_local": False,
               "judge_endpoint": "https://api.anthropic.com"},
              {}):
        got = judge_disclosure(m)
        assert got == JudgeDisclosure(simulated=False, local_server=False)
        assert got.label == "" and not got


def test_a_simulated_judge_is_labelled_simulated():
    for m in (manifest(judge_id=NOISE_ID, judge_spec="noise(heuristic, sd=1, seed=0)"),
              {"judge_id": "simulated(heuristic@v3,flip=0.1)"},
              {"judge_id": "replayed", "simulated": True}):  # a study.json
        got = judge_disclosure(m)
        assert (got.simulated, got.local_server, got.label) == (True, False, "SIMULATED")


@pytest.mark.parametrize("fields", [
    {"judge_id": FAKE_SERVER_ID},
    {"judge_spec": "anthropic:claude-haiku-4-5@http://localhost:8080"},
    {"judge_id": CLAUDE_ID, "judge_endpoint": "http://127.0.0.1:40123"},
    {"judge_id": CLAUDE_ID, "judge_local": True},
    {"judge_id": CLAUDE_ID, "judge_provenance": [{"provider": "anthropic", "endpoint": "http://[::1]:9000"}]},
    {"judge_id": "mean(a,b)", "judge_provenance": [{"provider": "openai", "endpoint": "http://box:1", "local": True}]},
])
def test_a_run_against_a_server_on_this_machine_is_labelled_local(fields):
    got = judge_disclosure(fields)
    assert (got.simulated, got.local_server, got.label) == (False, True, "local server, not the provider")


def test_a_simulated_judge_on_a_local_server_says_both():
    got = judge_disclosure(manifest(judge_id=f"noise({FAKE_SERVER_ID},sd=1.0,seed=0)", judge_local=True))
    assert got.label == "SIMULATED; local server, not the provider"
    assert dataclasses.asdict(got) == {"simulated": True, "local_server": True,
                                       "label": "SIMULATED; local server, not the provider"}


def test_a_manifest_json_dict_and_the_model_agree():
    m = manifest(judge_id=FAKE_SERVER_ID, judge_endpoint="http://127.0.0.1:40123", judge_local=True)
    assert judge_disclosure(m) == judge_disclosure(m.model_dump(mode="json"))


def test_the_disclosure_is_frozen_and_a_non_manifest_is_refused_by_name():
    with pytest.raises(dataclasses.FrozenInstanceError):
        judge_disclosure({}).label = "x"  # type: ignore[misc]
    with pytest.raises(TypeError, match="'heuristic'"):
        judge_disclosure("heuristic")


def test_is_local_url():
    assert is_local_url("http://127.0.0.1:8080") and is_local_url("localhost:11434") and is_local_url("http://[::1]")
    assert not is_local_url("https://api.anthropic.com") and not is_local_url(None) and not is_local_url("")
    assert not is_local_url("http://10.0.0.5:8000")
