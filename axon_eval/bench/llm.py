"""Benchmark of the API judge plumbing against a local fake Anthropic server (offline, no key).

``bench_claude_fake_server()`` starts :class:`~axon_eval.judges.fake_server.FakeJudgeServer` on
127.0.0.1 answering every request after ``delay_s`` (0.2 s), builds ``anthropic:<model>`` pointed at it
and measures:

1. ``n`` (200) distinct judgements at ``concurrency`` (20) through the real ``AsyncAnthropic`` SDK.
   The ideal wall time is ``ceil(n / concurrency) * delay_s`` = 2.0 s; reported value is
   ``wall_s / ideal_s`` (target <= 1.2, i.e. at most 20 % overhead for SDK, parsing and scheduling);
2. the same ``n`` again through the verdict cache filled by run 1: HTTP requests made (target 0) and
   cache hits (target ``n``);
3. ``repeat(anthropic:<model>, k)``: ``n // k`` views x ``k`` samples (the same ``n`` calls) at the same
   concurrency, empty cache: wall / ideal (target <= 1.2: repeated sampling must not cost more
   judge I/O per call than single samples do).

Rows: ``{"section": "judges", "name", "value", "unit", "target", "ok"}``.
"""

from __future__ import annotations

import math
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..evidence import SqlStep, Turn
from ..judges.anthropic_judge import AnthropicJudge
from ..judges.cache import VerdictCache
from ..judges.fake_server import FakeJudgeServer
from ..view import EvidenceView, build_views


def _bench_views(n: int) -> list[EvidenceView]:
    captured = datetime(2026, 7, 20, 9, 0, tzinfo=timezone.utc)
    turns = [Turn(schema_version=1, turn_id=f"bench-{i:04d}", captured_at=captured, region="eu", surface="web",
                  client="bench", question=f"How many orders did store {i} take in June?",
                  answer=f"Store {i} took {100 + i} orders in June.",
                  steps=[SqlStep(sql=f"SELECT COUNT(*) FROM orders WHERE store_id = {i} AND month = '2026-06'",
                                 status="ok", columns=["n"], rows=[[100 + i]], row_count=1)])
             for i in range(n)]
    return build_views(turns, 20)


def bench_claude_fake_server(*, n: int = 200, concurrency: int = 20, delay_s: float = 0.2,
                             model: str = "claude-haiku-4-5") -> list[dict[str, Any]]:
    """Run the benchmark described in the module docstring and return its rows."""
    views = _bench_views(n)
    ideal_s = math.ceil(n / concurrency) * delay_s
    with tempfile.TemporaryDirectory(prefix="axon-bench-") as tmp, \
            FakeJudgeServer(delay_s=delay_s, lifetime_s=max(60.0, 10 * ideal_s), max_requests=4 * n) as server:
        judge = AnthropicJudge(model, base_url=server.url, max_retries=0, retry_attempts=1)
        cache = VerdictCache(Path(tmp) / "verdicts.sqlite")
        start = time.perf_counter()
        first = judge.judge_many(views, concurrency=concurrency, cache=cache, progress=False)
        wall_s = time.perf_counter() - start
        requests_first = server.requests
        start = time.perf_counter()
        second = judge.judge_many(views, concurrency=concurrency, cache=cache, progress=False)
        cached_wall_s = time.perf_counter() - start
        requests_second = server.requests - requests_first
        hits = sum(r.cached for r in second)
        cache.close()
        from ..judges.wrappers import RepeatJudge

        k = 5
        repeated = RepeatJudge(AnthropicJudge(model, base_url=server.url, max_retries=0, retry_attempts=1), k)
        before = server.requests
        start = time.perf_counter()
        rep = repeated.judge_many(views[: n // k], concurrency=concurrency, cache=None, progress=False)
        rep_wall_s = time.perf_counter() - start
        rep_requests = server.requests - before
    judged_first = sum(r.judged for r in first)
    ratio = wall_s / ideal_s
    return [
        {"section": "judges", "name": f"claude fake server: {n} judgements at concurrency {concurrency}, "
                                      f"{delay_s * 1000:.0f} ms latency: wall / ideal ({ideal_s:.1f} s)",
         "value": round(ratio, 3), "unit": "ratio", "target": "<= 1.2", "ok": ratio <= 1.2 and judged_first == n},
        {"section": "judges", "name": "claude fake server: wall time, first run", "value": round(wall_s, 3),
         "unit": "s", "target": f"~{ideal_s:.1f}", "ok": judged_first == n},
        {"section": "judges", "name": "claude fake server: judged records, first run", "value": judged_first,
         "unit": "records", "target": f"{n}", "ok": judged_first == n},
        {"section": "judges", "name": "claude fake server: HTTP requests, first run", "value": requests_first,
         "unit": "requests", "target": f"{n}", "ok": requests_first == n},
        {"section": "judges", "name": "claude fake server: HTTP requests, second run through the cache",
         "value": requests_second, "unit": "requests", "target": "0", "ok": requests_second == 0},
        {"section": "judges", "name": "claude fake server: cache hits, second run", "value": hits,
         "unit": "hits", "target": f"{n}", "ok": hits == n},
        {"section": "judges", "name": "claude fake server: wall time, second run (cache)",
         "value": round(cached_wall_s, 3), "unit": "s", "target": "< 1", "ok": cached_wall_s < 1.0},
        {"section": "judges", "name": f"claude fake server: repeat(.., {k}) on {n // k} views ({len(rep)} calls) "
                                      f"at concurrency {concurrency}: wall / ideal ({ideal_s:.1f} s)",
         "value": round(rep_wall_s / ideal_s, 3), "unit": "ratio", "target": "<= 1.2",
         "ok": rep_wall_s / ideal_s <= 1.2 and rep_requests == len(rep) == n and all(r.judged for r in rep)},
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in bench_claude_fake_server():
        print(row)
