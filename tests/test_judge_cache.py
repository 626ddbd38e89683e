"""Verdict cache: keys, reuse only on a full match, corruption, concurrent writers (threads, processes)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from axon_eval.evidence import SCHEMA_VERSION, SqlStep, Turn
from axon_eval.judges import CacheCorruptionWarning, Judge, JudgeRecord, Verdict, VerdictCache, cache_key
from axon_eval.view import EvidenceView, build_views

CAPTURED = datetime(2026, 7, 20, 9, 0, tzinfo=timezone.utc)


def make_views(n: int, horizon: int = 20) -> list[EvidenceView]:
    turns = [Turn(schema_version=1, turn_id=f"t{i}", captured_at=CAPTURED, region="eu", surface="web", client="c",
                  question=f"How many orders in store {i}?", answer=f"{i} orders.",
                  steps=[SqlStep(sql=f"SELECT {i}", status="ok", columns=["n"], rows=[[i]] * 30, row_count=30)])
             for i in range(n)]
    return build_views(turns, horizon)


class CountingJudge(Judge):
    """A small real judge: fixed verdict, counts how often it is actually asked."""

    def __init__(self, prompt_version: str = "judge_v1", name: str = "counting") -> None:
        self.model = "code"
        self.prompt_version = prompt_version
        self.judge_id = f"{name}@{prompt_version}"
        self.calls = 0

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        self.calls += 1
        verdict = Verdict(intent_understood=8, sql_quality=7, result_relevance=6, answer_faithfulness=5,
                          verdict="partial", explanation=f"fixed verdict for {view.segment_id}")
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index, verdict=verdict,
                           cache_key=self.cache_key(view, sample_index))


def record(i: int, judge_id: str = "j", sample_index: int = 0) -> JudgeRecord:
    return JudgeRecord(segment_id=f"s{i}", judge_id=judge_id, model="m", prompt_version="judge_v1",
                       sample_index=sample_index,
                       verdict=Verdict(intent_understood=i % 11, sql_quality=5, result_relevance=5,
                                       answer_faithfulness=None, verdict="poor", explanation=f"record {i}"))


def test_key_changes_with_every_part():
    base = ("judge", "judge_v1", "a" * 64, 0, SCHEMA_VERSION)
    key = cache_key(*base)
    assert len(key) == 64 and key == cache_key(*base)
    for i, changed in enumerate(["judge2", "judge_v2", "b" * 64, 1, SCHEMA_VERSION + 1]):
        parts = list(base)
        parts[i] = changed
        assert cache_key(*parts) != key


def test_second_run_hits_and_makes_no_calls(tmp_path):
    views = make_views(4)
    cache = VerdictCache(tmp_path / "c.sqlite")
    judge = CountingJudge()
    first = judge.judge_many(views, cache=cache, progress=False)
    second = judge.judge_many(views, cache=cache, progress=False)
    assert judge.calls == 4
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    assert [r.verdict for r in first] == [r.verdict for r in second]
    assert cache.stats.as_dict() == {"hits": 4, "misses": 4, "writes": 4, "corrupt": 0}
    # a new cache object on the same file (a later process) still hits
    reopened = VerdictCache(tmp_path / "c.sqlite")
    CountingJudge().judge_many(views, cache=reopened, progress=False)
    assert reopened.stats.hits == 4


def test_changed_prompt_version_view_or_sample_misses(tmp_path):
    views = make_views(2)
    cache = VerdictCache(tmp_path / "c.sqlite")
    CountingJudge("judge_v1").judge_many(views, cache=cache, progress=False)
    other_prompt = CountingJudge("judge_v2")
    other_prompt.judge_many(views, cache=cache, progress=False)
    assert other_prompt.calls == 2, "a changed prompt version must miss the cache"
    other_judge = CountingJudge("judge_v1", name="other")
    other_judge.judge_many(views, cache=cache, progress=False)
    assert other_judge.calls == 2
    other_view = CountingJudge("judge_v1")
    other_view.judge_many(make_views(2, horizon=5), cache=cache, progress=False)
    assert other_view.calls == 2, "a different rendered view (row horizon) must miss"
    more_samples = CountingJudge("judge_v1")
    more_samples.judge_many(views, cache=cache, progress=False, samples=2)
    assert more_samples.calls == 2, "sample 0 hits, sample 1 misses"


def test_hit_is_relabelled_for_an_identical_view_of_another_segment(tmp_path):
    cache = VerdictCache(tmp_path / "c.sqlite")
    judge = CountingJudge()
    (view,) = make_views(1)
    judge.judge_many([view], cache=cache, progress=False)
    twin = EvidenceView(**{**view.__dict__, "segment_id": "other-turn", "turn_id": "other-turn"})
    (hit,) = judge.judge_many([twin], cache=cache, progress=False)
    assert hit.cached and hit.segment_id == "other-turn" and judge.calls == 1


def test_corrupt_entry_is_warned_rejudged_and_overwritten(tmp_path):
    path = tmp_path / "c.sqlite"
    views = make_views(2)
    cache = VerdictCache(path)
    judge = CountingJudge()
    judge.judge_many(views, cache=cache, progress=False)
    key = judge.cache_key(views[0], 0)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE verdicts SET record_json = ? WHERE key = ?", ('{"segment_id": "t0", "verd', key))
    with pytest.warns(CacheCorruptionWarning, match="corrupt entry"):
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judge.calls == 3 and records[0].judged and not records[0].cached and records[1].cached
    assert cache.stats.corrupt == 1
    assert cache.get(key) is not None  # overwritten with a good record


def test_error_records_are_refused(tmp_path):
    cache = VerdictCache(tmp_path / "c.sqlite")
    err = JudgeRecord(segment_id="s", judge_id="j", model="m", prompt_version="v", error="timeout")
    with pytest.raises(ValueError, match="refusing to cache an error record"):
        cache.put("k", err)
    assert len(cache) == 0


def test_concurrent_writer_threads(tmp_path):
    path = tmp_path / "c.sqlite"
    shared = VerdictCache(path)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        own = VerdictCache(path) if t % 2 else shared  # some threads share an object, some open their own
        try:
            for i in range(40):
                rec = record(t * 100 + i)
                own.put(f"key-{t}-{i}", rec)
                assert own.get(f"key-{t}-{i}") is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(shared) == 8 * 40
    assert shared.get("key-7-39").segment_id == "s739"


def _process_writer(path: str, worker: int, n: int) -> None:
    cache = VerdictCache(Path(path))
    for i in range(n):
        cache.put(f"p{worker}-{i}", record(worker * 1000 + i))
    cache.close()


def test_concurrent_writer_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    VerdictCache(path).close()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_process_writer, args=(path, w, 50)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = VerdictCache(path)
    assert len(cache) == 200 and cache.get("p3-49").segment_id == "s3049"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
