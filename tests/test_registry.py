"""Judge registry: spec parsing (nested, balanced parentheses), building, and the unknown-spec message."""

from __future__ import annotations

import importlib.util

import pytest

from axon_eval.judges import VALID_FORMS, JudgeRecord, SpecError, Verdict, build_judge, parse_spec
from axon_eval.judges.anthropic_judge import AnthropicJudge
from axon_eval.judges.openai_judge import OpenAIJudge
from axon_eval.judges.registry import Call, Leaf, Quoted
from axon_eval.judges.wrappers import EnsembleJudge, NoiseJudge, RepeatJudge, ReplayJudge

HAS_HEURISTIC = importlib.util.find_spec("axon_eval.judges.heuristic") is not None


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-real")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-not-real")
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AXON_EVAL_KEY_HOSTS"):
        monkeypatch.delenv(name, raising=False)


def test_parse_nested_spec_tree():
    tree = parse_spec("ensemble( repeat(noise(anthropic:claude-haiku-4-5, sd=1.5, seed=7), 3),"
                      " openai:llama@http://127.0.0.1:8000/v1 , reducer = median )")
    assert tree == Call("ensemble", [
        Call("repeat", [Call("noise", [Leaf("anthropic:claude-haiku-4-5")], {"sd": "1.5", "seed": "7"}), Leaf("3")]),
        Leaf("openai:llama@http://127.0.0.1:8000/v1")], {"reducer": "median"})
    assert parse_spec("replay('runs/a, b (old)')") == Call("replay", [Quoted("runs/a, b (old)")])


def test_build_leaves_and_options():
    claude = build_judge("anthropic:claude-haiku-4-5", max_tokens=300, temperature=0.2)
    assert isinstance(claude, AnthropicJudge) and claude.max_tokens == 300
    assert claude.judge_id == "anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=0.2"
    assert claude.spec == "anthropic:claude-haiku-4-5"
    oa = build_judge("openai:gpt-4o")
    assert isinstance(oa, OpenAIJudge) and oa.base_url is None and oa.judge_id == "openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0"
    local = build_judge("openai:qwen2.5-7b@http://localhost:8000/v1")
    assert local.model == "qwen2.5-7b" and local.base_url == "http://localhost:8000/v1"


def test_build_nested_wrappers():
    judge = build_judge("ensemble(repeat(anthropic:claude-haiku-4-5, 2), "
                        "noise(openai:gpt-4o, sd=1, seed=3), reducer=majority)", max_tokens=200)
    assert isinstance(judge, EnsembleJudge) and judge.reducer == "majority"
    rep, noise = judge.members
    assert isinstance(rep, RepeatJudge) and rep.n == 2 and isinstance(rep.inner, AnthropicJudge)
    assert rep.inner.max_tokens == 200 and noise.inner.max_tokens == 200
    assert isinstance(noise, NoiseJudge) and noise.sd == 1.0 and noise.seed == 3
    assert judge.judge_id == ("ensemble(reducer=majority)[repeat(n=2)[anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default], "
                              "noise(sd=1.0,seed=3)[openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0]]")
    assert build_judge("repeat(openai:gpt-4o, n=4)").n == 4
    assert build_judge("ensemble(openai:a, openai:b)").reducer == "mean"


def test_build_replay(tmp_path):
    rec = JudgeRecord(segment_id="t1", judge_id="heuristic", model="code", prompt_version="judge_v1",
                      verdict=Verdict(intent_understood=5, sql_quality=5, result_relevance=5, answer_faithfulness=5,
                                      verdict="partial", explanation="x"))
    run = tmp_path / "run, one"
    run.mkdir()
    (run / "verdicts.jsonl").write_text(rec.to_json_line() + "\n")
    judge = build_judge(f"replay('{run}')")
    assert isinstance(judge, ReplayJudge) and judge.replayed_judge_ids == ["heuristic"]


@pytest.mark.skipif(not HAS_HEURISTIC, reason="axon_eval/judges/heuristic.py not present yet")
def test_build_heuristic_lazily():
    judge = build_judge("heuristic")  # the fitted offline judge, named by its coefficient file's hash
    assert judge.judge_id.startswith("heuristic-fitted[") and judge.judge_id == build_judge("heuristic-fitted").judge_id
    assert build_judge("noise(heuristic, sd=1.0, seed=7)").judge_id == f"noise(sd=1.0,seed=7)[{judge.judge_id}]"
    assert build_judge("heuristic-rules").judge_id == "heuristic-rules"


@pytest.mark.parametrize(("spec", "problem"), [
    ("claude", "unknown judge 'claude'"),
    ("anthropic:", "unknown judge"),
    ("gemini:pro", "unknown judge 'gemini:pro'"),
    ("bagging(openai:a, openai:b)", "unknown wrapper bagging"),
    ("repeat(openai:a, 3", "expected ',' or ')'"),
    ("repeat(openai:a, 3))", "unexpected ')'"),
    ("repeat(openai:a)", "repeat needs"),
    ("repeat(openai:a, three)", "must be an integer"),
    ("repeat(openai:a, 0)", ">= 1"),
    ("ensemble(openai:a)", "at least 2"),
    ("ensemble(openai:a, openai:b, reducer=mode)", "unknown ensemble reducer 'mode'"),
    ("ensemble(openai:a, openai:b, weights=1)", "unknown keyword 'weights'"),
    ("noise(openai:a)", "needs sd="),
    ("noise(openai:a, sd=-1)", "sd must be >= 0"),
    ("noise(openai:a, sd=x)", "must be a number"),
    ("replay(repeat(openai:a, 2))", "not a judge spec"),
    ("replay('unterminated)", "unterminated"),
    ("openai:m@", "needs openai:<model>"),
    ("anthropic:m@", "needs anthropic:<model>"),
    ("anthropic:m#prose", "unknown judging mode 'prose'"),
    ("openai:m@http://localhost:8000/v1#", "unknown judging mode ''"),
    ("openai:m@localhost:8000/v1", "must start with http:// or https://"),
    ("anthropic:m@http://:80", "names no host"),
    ("", "empty spec"),
])
def test_bad_specs_raise_value_error_listing_valid_forms(spec, problem):
    with pytest.raises(ValueError) as info:
        build_judge(spec)
    assert isinstance(info.value, SpecError)
    message = str(info.value)
    assert problem in message
    for form in VALID_FORMS:
        assert form in message


def test_api_leaves_take_an_endpoint_and_a_mode():
    claude = build_judge("anthropic:claude-haiku-4-5@http://127.0.0.1:8123")
    assert isinstance(claude, AnthropicJudge) and claude.model == "claude-haiku-4-5"
    assert claude.judge_id == "anthropic:claude-haiku-4-5@judge_v1+5d297cf15da8,t=default,base=http://127.0.0.1:8123"
    assert claude.endpoint_is_local and claude.key_source == "dummy"
    free = build_judge("anthropic:claude-haiku-4-5#free_text")
    assert free.mode == "free_text"
    assert free.judge_id == "anthropic:claude-haiku-4-5@judge_v1_free_text+206dbd04ce95,t=default,mode=free_text"
    both = build_judge("openai:qwen@http://localhost:8000/v1#free_text")
    assert (both.model, both.endpoint, both.mode) == ("qwen", "http://localhost:8000/v1", "free_text")
    explicit = build_judge("openai:gpt-4o#structured")
    assert explicit.mode == "structured" and explicit.judge_id == "openai:gpt-4o@judge_v1+5d297cf15da8,t=0.0"


def test_mode_option_reaches_every_api_leaf_and_conflicts_are_refused():
    judge = build_judge("ensemble(anthropic:claude-haiku-4-5, openai:gpt-4o#free_text)", mode="free_text")
    assert [m.mode for m in judge.members] == ["free_text", "free_text"]
    with pytest.raises(SpecError, match="asks for mode 'free_text' but the option mode='structured'"):
        build_judge("anthropic:claude-haiku-4-5#free_text", mode="structured")


def test_url_credentials_are_masked_in_spec_errors_and_in_the_recorded_spec():
    spec = "repeat(openai:m@https://me:pw-CANARY@gw.example.com/v1?key=CANARY2, 2)"
    judge = build_judge(spec)
    assert "CANARY" not in judge.spec and "CANARY" not in judge.judge_id
    assert judge.spec == "repeat(openai:m@https://<redacted>@gw.example.com/v1?key=<redacted>, 2)"
    for bad in ("repeat(openai:m@https://me:pw-CANARY@gw.example.com/v1?key=CANARY2, zero)",
                "openai:m@ftp://me:pw-CANARY@gw.example.com",
                "openai:m@me:pw-CANARY@gw.example.com"):
        with pytest.raises(SpecError) as info:
            build_judge(bad)
        assert "CANARY" not in str(info.value) and "CANARY" not in info.value.spec
