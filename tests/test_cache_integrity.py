"""The verdict cache is evidence: a damaged, swapped, edited, truncated, garbage, locked or full cache never
serves a wrong verdict and never raises out of a run.

Each fault is made for real on the SQLite file (``sqlite3`` from outside the cache class, another process
holding the lock, bytes overwritten or cut); what is checked is what the judge was asked (a counting judge)
and what was served, against the verdicts the judge itself gives.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from axon_eval.evidence import SqlStep, Turn
from axon_eval.judges import Judge, JudgeRecord, Verdict, VerdictCache
from axon_eval.judges.cache import CacheCorruptionWarning, CacheUnavailableWarning, CacheUnreadable
from axon_eval.view import EvidenceView, build_views

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
CAPTURED = datetime(2026, 7, 20, 9, 0, tzinfo=timezone.utc)


def make_views(n: int) -> list[EvidenceView]:
    turns = [Turn(schema_version=1, turn_id=f"t{i}", captured_at=CAPTURED, region="eu", surface="web", client="c",
                  question=f"How many orders in store {i}?", answer=f"{i} orders.",
                  steps=[SqlStep(sql=f"SELECT {i}", status="ok", columns=["n"], rows=[[i]], row_count=1)])
             for i in range(n)]
    return build_views(turns, 20)


def expected_grade(view: EvidenceView) -> int:
    """What :class:`DistinctJudge` gives a view: its turn number, mod 11 (so neighbouring views differ)."""
    return int(view.turn_id[1:]) % 11


class DistinctJudge(Judge):
    """A different verdict per view (from its turn number), counting the views it is really asked about."""

    def __init__(self) -> None:
        self.model = "code"
        self.prompt_version = "judge_v1"
        self.judge_id = "distinct@judge_v1"
        self.asked: list[str] = []

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        self.asked.append(view.segment_id)
        grade = expected_grade(view)
        verdict = Verdict(intent_understood=grade, sql_quality=10 - grade, result_relevance=5,
                          answer_faithfulness=grade, verdict="good" if grade > 6 else "poor",
                          explanation=f"verdict for {view.segment_id}")
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index, verdict=verdict,
                           cache_key=self.cache_key(view, sample_index))


def judged_grades(records: list[JudgeRecord]) -> list[int]:
    return [r.verdict.intent_understood for r in records]


def rows_by_segment(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {seg: rowid for rowid, seg in conn.execute("SELECT rowid, segment_id FROM verdicts")}


def swap_rows(path: Path, a: int, b: int, columns: tuple[str, ...]) -> None:
    """Swap ``columns`` between the rows with rowids ``a`` and ``b``, with plain sqlite3."""
    with sqlite3.connect(path) as conn:
        cols = ", ".join(columns)
        va = conn.execute(f"SELECT {cols} FROM verdicts WHERE rowid = ?", (a,)).fetchone()
        vb = conn.execute(f"SELECT {cols} FROM verdicts WHERE rowid = ?", (b,)).fetchone()
        sets = ", ".join(f"{c} = ?" for c in columns)
        conn.execute(f"UPDATE verdicts SET {sets} WHERE rowid = ?", (*vb, a))
        conn.execute(f"UPDATE verdicts SET {sets} WHERE rowid = ?", (*va, b))


def first_run(tmp_path: Path, n: int = 4) -> tuple[Path, list[EvidenceView]]:
    path = tmp_path / "verdicts.sqlite"
    views = make_views(n)
    with VerdictCache(path) as cache:
        judge = DistinctJudge()
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judged_grades(records) == [expected_grade(v) for v in views] and len(judge.asked) == n
    return path, views


# -- swapped and edited rows ----------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [
    ("judge_id", "prompt_version", "view_sha256", "sample_index", "segment_id", "record_json", "stored_at",
     "record_sha256"),  # everything but the key: each row is self-consistent, under the wrong key
    ("record_json",),   # the records only: the checksums no longer match
], ids=["whole-rows", "records-only"])
def test_swapped_rows_are_misses_and_the_right_verdicts_are_judged_again(tmp_path, columns):
    path, views = first_run(tmp_path)
    rows = rows_by_segment(path)
    swap_rows(path, rows["t0"], rows["t1"], columns)
    cache = VerdictCache(path)
    judge = DistinctJudge()
    with pytest.warns(CacheCorruptionWarning, match="corrupt entry") as caught:
        records = judge.judge_many(views, cache=cache, progress=False)
    assert len([w for w in caught if issubclass(w.category, CacheCorruptionWarning)]) == 2
    assert judged_grades(records) == [0, 1, 2, 3], "a swapped row served another segment's verdict"
    assert sorted(judge.asked) == ["t0", "t1"]
    assert [r.cached for r in records] == [False, False, True, True]
    s = cache.stats
    assert (s.hits, s.misses, s.corrupt, s.damaged, s.writes) == (2, 2, 2, 2, 2)
    assert "2 corrupt entries refused (2 failing their checksum or key)" in s.fault_summary()
    # the judged-again records overwrote the damaged rows: a third run is all hits, right verdicts
    again = DistinctJudge()
    records = again.judge_many(views, cache=VerdictCache(path), progress=False)
    assert again.asked == [] and judged_grades(records) == [0, 1, 2, 3]


def test_an_edited_record_is_a_miss(tmp_path):
    path, views = first_run(tmp_path)
    rowid = rows_by_segment(path)["t2"]
    with sqlite3.connect(path) as conn:
        (text,) = conn.execute("SELECT record_json FROM verdicts WHERE rowid = ?", (rowid,)).fetchone()
        record = json.loads(text)
        record["verdict"]["intent_understood"] = 10  # still a valid record, just not the judged one
        conn.execute("UPDATE verdicts SET record_json = ? WHERE rowid = ?", (json.dumps(record, sort_keys=True), rowid))
    cache = VerdictCache(path)
    judge = DistinctJudge()
    with pytest.warns(CacheCorruptionWarning, match="checksum"):
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judge.asked == ["t2"] and judged_grades(records) == [0, 1, 2, 3]
    assert (cache.stats.damaged, cache.stats.misses, cache.stats.hits) == (1, 1, 3)


def test_an_edited_view_hash_is_refused_and_the_view_hash_is_checked_when_given(tmp_path):
    path, views = first_run(tmp_path, n=2)
    key = DistinctJudge().cache_key(views[0], 0)
    cache = VerdictCache(path)
    assert cache.get(key, view_sha256=views[0].sha256) is not None
    with pytest.warns(CacheCorruptionWarning, match="view hash"):
        assert cache.get(key, view_sha256=views[1].sha256) is None
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE verdicts SET view_sha256 = ? WHERE key = ?", (views[1].sha256, key))
    with pytest.warns(CacheCorruptionWarning, match="checksum"):
        assert cache.get(key) is None
    assert key not in cache


def _legacy_file(path: Path, views: list[EvidenceView]) -> None:
    """A cache file as written before rows had checksums (the older table, no ``record_sha256``)."""
    judge = DistinctJudge()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE verdicts (key TEXT PRIMARY KEY, judge_id TEXT NOT NULL, prompt_version TEXT "
                     "NOT NULL, view_sha256 TEXT, sample_index INTEGER NOT NULL, segment_id TEXT NOT NULL, "
                     "record_json TEXT NOT NULL, stored_at TEXT NOT NULL)")
        for view in views:
            record = judge.judge(view)
            conn.execute("INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (record.cache_key, record.judge_id, record.prompt_version, view.sha256, 0,
                          record.segment_id, record.to_json_line(), "2026-01-01T00:00:00Z"))


def test_rows_without_a_checksum_are_served_after_the_key_check_and_counted(tmp_path):
    path = tmp_path / "old.sqlite"
    views = make_views(3)
    _legacy_file(path, views)
    cache = VerdictCache(path)
    with sqlite3.connect(path) as conn:
        assert "record_sha256" in {row[1] for row in conn.execute("PRAGMA table_info(verdicts)")}
    judge = DistinctJudge()
    records = judge.judge_many(views, cache=cache, progress=False)
    assert judge.asked == [] and judged_grades(records) == [0, 1, 2]
    assert (cache.stats.hits, cache.stats.unchecked) == (3, 3)
    # a swap between two old rows is still found: the record's own key names another row
    rows = rows_by_segment(path)
    swap_rows(path, rows["t0"], rows["t1"], ("segment_id", "record_json", "view_sha256"))
    judge = DistinctJudge()
    with pytest.warns(CacheCorruptionWarning, match="belongs to key"):
        records = judge.judge_many(views, cache=VerdictCache(path), progress=False)
    assert sorted(judge.asked) == ["t0", "t1"] and judged_grades(records) == [0, 1, 2]


# -- files that are not a cache -----------------------------------------------------------------------------------
def test_a_garbage_file_is_one_clear_error_naming_it_and_the_way_out(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    path.write_bytes(b"this is not a database, " * 400)
    with pytest.raises(CacheUnreadable) as caught:
        VerdictCache(path)
    text = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in text
    assert str(path) in text and "--no-cache" in text and "not a database" in text
    assert path.read_bytes().startswith(b"this is not a database")  # nothing moved or deleted


def test_evaluate_with_a_garbage_cache_prints_one_line(tmp_path, monkeypatch, capsys):
    from axon_eval.cli import main

    path = tmp_path / "cache" / "verdicts.sqlite"
    path.parent.mkdir()
    path.write_bytes(os.urandom(8192))
    monkeypatch.setenv("AXON_EVAL_CACHE", str(path))
    code = main(["evaluate", "--turns", str(SAMPLE), "--judge", "heuristic", "--out", str(tmp_path / "runs"),
                 "--limit", "3", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(path) in lines[0] and "--no-cache" in lines[0], err
    assert "Traceback" not in err
    code = main(["evaluate", "--turns", str(SAMPLE), "--judge", "heuristic", "--out", str(tmp_path / "runs"),
                 "--limit", "3", "--quiet", "--no-cache"])
    assert code == 0, "--no-cache is the way out"


@pytest.mark.parametrize("keep", [0.02, 0.3, 0.6, 0.9, 0.97, 0.995])
def test_a_truncated_file_is_refused_or_read_as_far_as_it_goes_never_a_wrong_verdict(tmp_path, keep):
    path, views = first_run(tmp_path, n=150)
    size = path.stat().st_size
    assert not Path(f"{path}-wal").exists()  # closed: the log was checkpointed into the file
    with path.open("r+b") as fh:
        fh.truncate(int(size * keep))
    try:
        cache = VerdictCache(path)
    except CacheUnreadable as exc:
        assert str(path) in str(exc) and "--no-cache" in str(exc)
        return
    judge = DistinctJudge()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judged_grades(records) == [expected_grade(v) for v in views]
    assert all(r.judged for r in records)
    served = [r.segment_id for r in records if r.cached]
    assert len(served) + len(judge.asked) == len(views) and not set(served) & set(judge.asked)
    assert cache.stats.misses == len(judge.asked)


# -- locks, full disks, two processes --------------------------------------------------------------------------------
_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
if sys.argv[2] == "exclusive":
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("CREATE TABLE IF NOT EXISTS holder (x)")
else:
    conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


class LockHolder:
    """Another process holding a lock on the file until the block ends."""

    def __init__(self, path: Path, mode: str) -> None:
        self.path, self.mode = path, mode

    def __enter__(self) -> LockHolder:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(self.path), self.mode],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=30) == 0


def test_a_held_write_lock_makes_writes_fail_counted_and_reads_still_served(tmp_path):
    path, views = first_run(tmp_path, n=2)
    more = make_views(5)[2:]
    cache = VerdictCache(path, busy_timeout_ms=300, cooldown_s=0)
    judge = DistinctJudge()
    with LockHolder(path, "immediate"):
        with pytest.warns(CacheUnavailableWarning, match="cannot be written"):
            assert cache.put("some-key", judge.judge(more[0])) is False
        records = judge.judge_many(views + more, cache=cache, progress=False)
    assert judged_grades(records) == [0, 1, 2, 3, 4], "every segment is judged while the cache is locked"
    assert [r.cached for r in records] == [True, True, False, False, False]  # WAL readers are not blocked
    assert cache.stats.failed_writes == 4 and cache.stats.writes == 0
    assert "4 failed write(s)" in cache.stats.fault_summary()
    assert cache.put(judge.cache_key(more[0]), judge.judge(more[0])) is True  # the lock is gone: writes again
    assert len(cache) == 3


def test_a_cache_locked_exclusively_is_a_miss_never_an_error(tmp_path):
    path, views = first_run(tmp_path, n=3)
    with LockHolder(path, "exclusive"):
        with pytest.warns(CacheUnavailableWarning, match="cannot be opened now"):
            cache = VerdictCache(path, busy_timeout_ms=300, cooldown_s=60)
        judge = DistinctJudge()
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judged_grades(records) == [0, 1, 2] and len(judge.asked) == 3
    # the first lookup waited for the lock; the others, within the cool-down, did not wait again
    assert (cache.stats.unavailable, cache.stats.misses, cache.stats.failed_writes) == (3, 3, 3)
    reopened = VerdictCache(path)
    assert DistinctJudge().judge_many(views, cache=reopened, progress=False) and reopened.stats.hits == 3


def test_a_full_cache_disk_is_a_counted_failed_write(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    cache = VerdictCache(path)
    conn = cache._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite reports SQLITE_FULL beyond this
    views = make_views(40)
    judge = DistinctJudge()
    with pytest.warns(CacheUnavailableWarning, match="full"):
        records = judge.judge_many(views, cache=cache, progress=False)
    assert judged_grades(records) == [expected_grade(v) for v in views]
    assert cache.stats.failed_writes > 0 and cache.stats.writes + cache.stats.failed_writes == 40


def _create_many(paths: list[str], barrier: multiprocessing.synchronize.Barrier, worker: int, out: str) -> None:
    failures = []
    for path in paths:
        barrier.wait(timeout=60)
        try:
            cache = VerdictCache(path)
            stored = cache.put(f"w{worker}", JudgeRecord(
                segment_id=f"s{worker}", judge_id="j", model="m", prompt_version="v",
                verdict=Verdict(intent_understood=worker, sql_quality=5, result_relevance=5,
                                answer_faithfulness=None, verdict="poor", explanation="x")))
            if stored is False:
                failures.append(f"{path}: put returned False")
            cache.close()
        except Exception as exc:  # reported below
            failures.append(f"{path}: {type(exc).__name__}: {exc}")
    Path(out).write_text(json.dumps(failures))


def test_two_processes_creating_the_same_new_cache_at_once_never_fail(tmp_path):
    trials, n_proc = 150, 2
    paths = [str(tmp_path / f"c{t}" / "verdicts.sqlite") for t in range(trials)]
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(n_proc)
    outs = [str(tmp_path / f"out{w}.json") for w in range(n_proc)]
    procs = [ctx.Process(target=_create_many, args=(paths, barrier, w, outs[w])) for w in range(n_proc)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * n_proc
    failures = [f for out in outs for f in json.loads(Path(out).read_text())]
    assert failures == [], f"{len(failures)} of {trials * n_proc} creations failed: {failures[:3]}"
    for path in paths:
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert sorted(k for (k,) in conn.execute("SELECT key FROM verdicts")) == ["w0", "w1"]


# -- end to end: an evaluation over a damaged cache scores as a fresh one ------------------------------------------
def test_evaluate_over_a_swapped_cache_scores_as_without_it(tmp_path):
    from axon_eval import runs

    cache_path = tmp_path / "verdicts.sqlite"
    first = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "runs", progress=False, cache=cache_path, limit=12)
    scores = first.results.set_index("segment_id")["score"]
    assert scores.nunique() > 2
    with sqlite3.connect(cache_path) as conn:
        by_segment = {seg: rowid for rowid, seg in conn.execute("SELECT rowid, segment_id FROM verdicts")}
    lo, hi = scores.idxmin(), scores.idxmax()
    swap_rows(cache_path, by_segment[lo], by_segment[hi],
              ("judge_id", "prompt_version", "view_sha256", "sample_index", "segment_id", "record_json",
               "stored_at", "record_sha256"))
    with pytest.warns(CacheCorruptionWarning):
        second = runs.evaluate(SAMPLE, "heuristic", out_dir=tmp_path / "runs", progress=False, cache=cache_path,
                               limit=12)
    again = second.results.set_index("segment_id")["score"]
    pd.testing.assert_series_equal(again.sort_index(), scores.sort_index())
    assert second.manifest.cache_hits == len(scores) - 2
