"""The HTML audit report: bounded size and memory on a large run, self-contained, provenance banners.

Run folders come from the public ``evaluate`` on the bundled sample (heuristic judge, offline); the
large one is that run replicated to 40,000 results rows and audit lines with pandas and json (as many
segments as the 39,240-turn evidence file of issue 8).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from axon_eval import plots, report
from axon_eval.report import DEFAULT_N_WORST, write_report
from axon_eval.runs import evaluate

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
N_LARGE = 40_000
UNJUDGED_EVERY = 400
MAX_REPORT_BYTES = 10 * 1024 * 1024
#: Extra peak memory allowed to write the large report (its audit.jsonl alone is ~130 MB of JSON,
#: which as Python objects would take several times that).
MAX_REPORT_EXTRA_RSS_MB = 350
LOCAL_JUDGE_ID = "anthropic:claude-haiku-4-5@judge_v1,t=default,base=http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """A real run of the bundled sample (97 segments), figures drawn."""
    return evaluate(SAMPLE, "heuristic", out_dir=tmp_path_factory.mktemp("runs"), cache=False, progress=False)


def copy_run(source: Path, folder: Path, *, manifest_changes: dict | None = None) -> Path:
    """A copy of a run folder's files (figures too) with some manifest fields changed."""
    folder.mkdir(parents=True)
    for path in source.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(manifest_changes or {})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def replicate_run(source: Path, folder: Path, n_rows: int) -> Path:
    """A run folder of ``n_rows`` segments built from ``source``'s rows and audit lines (new ids
    ``big-00000``...), every ``UNJUDGED_EVERY``-th unjudged, three invalid input lines, no figures."""
    folder.mkdir(parents=True)
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["run_id"] = folder.name
    (folder / "manifest.json").write_text(json.dumps(manifest))
    results = pd.read_parquet(source / "results.parquet")
    pick = np.arange(n_rows) % len(results)
    ids = [f"big-{k:05d}" for k in range(n_rows)]
    big = results.iloc[pick].reset_index(drop=True)
    big["segment_id"], big["turn_id"] = ids, ids
    unjudged = np.arange(n_rows) % UNJUDGED_EVERY == 7
    for c in ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness", "raw_score", "score"):
        big.loc[unjudged, c] = np.nan
    big.loc[unjudged, ["band", "judge_verdict"]] = None
    big.loc[unjudged, "status"] = "unjudged"
    big.loc[unjudged, "error"] = [f"judge could not grade {i}: HTTP 529 overloaded" for i in np.array(ids)[unjudged]]
    big.to_parquet(folder / "results.parquet", index=False)
    audit_lines = (source / "audit.jsonl").read_text().splitlines()
    originals = [json.loads(line)["segment_id"] for line in audit_lines]
    with (folder / "audit.jsonl").open("w") as fh:
        for k in range(n_rows):
            old = f'"segment_id": {json.dumps(originals[pick[k]])}'
            fh.write(audit_lines[pick[k]].replace(old, f'"segment_id": {json.dumps(ids[k])}', 1) + "\n")
    invalid = [{"source": "big.jsonl", "line": n, "turn_id": None, "field": "json",
                "message": f"line {n} is not valid JSON"} for n in (12, 345, 6789)]
    (folder / "invalid.jsonl").write_text("".join(json.dumps(i) + "\n" for i in invalid))
    return folder


_MEASURE = """
import json, resource, sys
from axon_eval.report import write_report
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = write_report(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"path": str(path), "rss_before_kb": before, "rss_after_kb": after}))
"""


@pytest.fixture(scope="module")
def large_report(sample_run, tmp_path_factory):
    """The large run folder and its report, written in a fresh process whose peak memory is measured."""
    folder = replicate_run(sample_run.run_dir, tmp_path_factory.mktemp("large") / "large-run", N_LARGE)
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(folder)], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return folder, Path(measured["path"]), measured


# -- size, content, memory -------------------------------------------------------------------------
def test_large_run_report_is_under_10_mb_and_lists_every_segment(large_report):
    folder, path, _ = large_report
    assert path == folder / "report.html"
    size = path.stat().st_size
    assert size < MAX_REPORT_BYTES, f"report is {size / 1e6:.1f} MB"
    page = path.read_text(encoding="utf-8")
    table = page[page.index('<table class="all">'):]
    rows = re.findall(r"^<tr><td>(?:<a href=\"#w\d+\">)?(big-\d{5})", table, flags=re.MULTILINE)
    assert len(rows) == N_LARGE and len(set(rows)) == N_LARGE
    assert f"<h2>All segments ({N_LARGE})</h2>" in page
    assert page.count("<details open id='w") == DEFAULT_N_WORST
    assert f"<h2>The {DEFAULT_N_WORST} lowest-scoring segments in full</h2>" in page


def test_large_run_report_shows_unjudged_segments_with_reasons_never_as_zero(large_report):
    _, path, _ = large_report
    page = path.read_text(encoding="utf-8")
    n_unjudged = len(range(7, N_LARGE, UNJUDGED_EVERY))
    assert f"Unjudged segments ({n_unjudged})" in page
    assert "judge could not grade big-00007: HTTP 529 overloaded" in page
    row = re.search(r"^<tr><td>big-00007<td>([^<]*)<td class=\"(\w+)\">(\w+)", page, flags=re.MULTILINE)
    assert row is not None and row.group(1) == "" and row.group(3) == "unjudged"
    assert "Invalid input lines (3)" in page and "line 6789 is not valid JSON" in page


def test_large_run_report_is_self_contained(large_report):
    _, path, _ = large_report
    page = path.read_text(encoding="utf-8")
    assert page.count("<img src='data:image/png;base64,") >= 4
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|figures/)""", page)
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    assert "<script id=\"sort-tables\">" in page and "addEventListener(\"click\"" in page


def test_large_run_report_memory_stays_bounded(large_report):
    folder, _, measured = large_report
    extra_mb = (measured["rss_after_kb"] - measured["rss_before_kb"]) / 1024
    audit_mb = (folder / "audit.jsonl").stat().st_size / 1e6
    assert audit_mb > 100
    assert extra_mb < MAX_REPORT_EXTRA_RSS_MB, f"writing the report took {extra_mb:.0f} MB more peak memory"


def test_audit_is_streamed_keeping_only_the_wanted_segments(tmp_path, sample_run):
    audit = sample_run.run_dir / "audit.jsonl"
    tricky = tmp_path / "audit.jsonl"
    lines = audit.read_text().splitlines()
    lines.insert(3, "{not json")
    lines.append(json.dumps({"segment_id": 'odd "quoted" id', "score": None}))
    tricky.write_text("\n".join(lines) + "\n")
    problems: list[str] = []
    wanted = {sample_run.audit[5]["segment_id"], 'odd "quoted" id'}
    kept = list(report.stream_audit(tricky, wanted, problems))
    assert sorted(e["segment_id"] for e in kept) == sorted(wanted)
    assert problems == ["audit.jsonl line 4 could not be read (Expecting property name enclosed in double "
                        "quotes); it is left out"]


def test_a_gzip_audit_is_streamed_too(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "gz")
    plain = folder / "audit.jsonl"
    (folder / "audit.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    page = write_report(folder, n_worst=4).read_text()
    assert page.count("<details open id='w") == 4 and page.count("What the judge saw") == 4
    assert "No audit entry was found" not in page


def test_n_worst_sets_how_many_segments_are_shown_in_full(sample_run, tmp_path):
    out = write_report(sample_run.run_dir, output=tmp_path / "r.html", n_worst=3)
    page = out.read_text()
    assert page.count("<details open id='w") == 3
    segments = report.segment_table(sample_run.results)
    worst = segments[segments["status"] == "judged"].sort_values("score", kind="stable").head(3)
    for k, sid in enumerate(worst["segment_id"]):
        assert f'<a href="#w{k}">{sid}</a>' in page and f"<details open id='w{k}'>" in page
    assert "effective weight" in page and "What the judge saw" in page and "<b>answer</b>" in page
    assert page.count('<tr><td><a href="#w') == 3
    with pytest.raises(ValueError, match="n_worst must be >= 0, got -1"):
        write_report(sample_run.run_dir, output=tmp_path / "bad.html", n_worst=-1)


def test_render_report_of_a_run_in_memory_matches_the_folder(sample_run, tmp_path):
    page = report.render_report(sample_run, n_worst=5)
    assert page.count("<details open id='w") == 5 and "<h2>All segments (97)</h2>" in page


def test_report_of_a_repeated_run_counts_segments(tmp_path):
    run = evaluate(SAMPLE, "repeat(noise(heuristic, sd=1, seed=1), 3)", out_dir=tmp_path, cache=False,
                   progress=False, limit=20)
    page = write_report(run.run_dir, n_worst=2).read_text()
    n_segments = run.results["segment_id"].nunique()
    assert f"<h2>All segments ({n_segments})</h2>" in page
    assert f"{n_segments} segment(s) x 3 judge samples ({3 * n_segments} results rows)" in page
    assert page.count("<h4>sample ") == 2 * 3  # every sample's arithmetic of the 2 worst segments
    assert '<th data-type="num" title="sample SD of the segment&#x27;s scores">SD</th>' in page
    assert "SIMULATED judge" in page


# -- provenance and banners --------------------------------------------------------------------------
def first_page(page: str) -> str:
    """Everything before the summary: the banners and the provenance table."""
    return page[: page.index("<h2>Summary</h2>")]


LOCAL_BANNER = "judged against a local server at {}: not a real model&#x27;s verdicts"


def test_local_server_in_the_judge_id_gets_a_banner_on_the_first_page(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "local", manifest_changes={"judge_id": LOCAL_JUDGE_ID})
    page = first_page(write_report(folder).read_text())
    assert '<p class="banner">' + LOCAL_BANNER.format("http://127.0.0.1:8765") in page


def test_local_server_from_manifest_fields_gets_a_banner_without_credentials(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "fields", manifest_changes={
        "judge_id": "openai:qwen@judge_v1,t=0", "judge_endpoint": "http://user:s3cret@localhost:9999/v1",
        "judge_local": True})
    page = write_report(folder).read_text()
    assert LOCAL_BANNER.format("http://localhost:9999/v1") in first_page(page)
    assert "s3cret" not in page
    lan = copy_run(sample_run.run_dir, tmp_path / "lan", manifest_changes={
        "judge_endpoint": "http://10.1.2.3:8000/v1", "judge_local": True})
    assert LOCAL_BANNER.format("http://10.1.2.3:8000/v1") in first_page(write_report(lan).read_text())


def test_a_real_endpoint_gets_no_local_banner(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "real", manifest_changes={
        "judge_id": "anthropic:claude-haiku-4-5@judge_v1,t=default", "judge_endpoint": "https://api.anthropic.com",
        "judge_local": False})
    page = write_report(folder).read_text()
    assert "local server" not in page and "SIMULATED" not in page
    assert report.local_judge_endpoint({"judge_id": "openai:m@judge_v1,t=0,base=https://llm.example.com/v1"}) is None
    assert report.local_judge_endpoint({"judge_spec": "openai:m@http://[::1]:8080/v1"}) == "http://[::1]:8080/v1"


def test_a_local_member_of_a_mixed_ensemble_gets_the_banner_with_its_own_url(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "ensemble", manifest_changes={
        "judge_endpoint": "https://api.anthropic.com", "judge_local": True,
        "judge_provenance": [{"provider": "anthropic", "endpoint": "https://api.anthropic.com", "local": False},
                             {"provider": "openai", "endpoint": "http://127.0.0.1:11434/v1", "local": True}]})
    page = first_page(write_report(folder).read_text())
    assert LOCAL_BANNER.format("http://127.0.0.1:11434/v1") in page


@pytest.mark.parametrize("judge_id", ["noise(sd=1.0,seed=1)[heuristic]", "simulated(difficulty=0.3)[heuristic]"])
def test_simulated_judge_gets_a_banner_on_the_first_page(sample_run, tmp_path, judge_id):
    folder = copy_run(sample_run.run_dir, tmp_path / "sim", manifest_changes={"judge_id": judge_id})
    page = first_page(write_report(folder).read_text())
    assert '<p class="banner">SIMULATED judge' in page


def test_first_page_shows_judge_rubric_and_git_provenance(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "prov", manifest_changes={
        "git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": True})
    page = first_page(write_report(folder).read_text())
    m = sample_run.manifest
    assert f"<code>{m.judge_id}</code>" in page and f"<code>{m.rubric_id}</code>" in page
    assert "<code>0123456789abcdef0123456789abcdef01234567</code> (dirty: True)" in page
    assert "DIRTY working tree" in page
    clean = copy_run(sample_run.run_dir, tmp_path / "clean", manifest_changes={"git_dirty": False})
    assert '<p class="banner">' not in first_page(write_report(clean).read_text())


def test_failed_run_without_results_still_renders(sample_run, tmp_path):
    folder = tmp_path / "failed"
    folder.mkdir()
    manifest = json.loads((sample_run.run_dir / "manifest.json").read_text())
    manifest.update(status="failed", error="KeyboardInterrupt: stopped by the user")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    page = write_report(folder).read_text()
    assert "This run FAILED: KeyboardInterrupt: stopped by the user" in first_page(page)
    assert "<h2>All segments (0)</h2>" in page
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        write_report(tmp_path / "nowhere")


# -- embedded figures ------------------------------------------------------------------------------------
def test_embed_png_makes_a_data_uri_from_a_figure_or_a_file(tmp_path):
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    uri = plots.embed_png(fig)
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]).startswith(plots.PNG_SIGNATURE)
    saved = plots.save_figure(fig, tmp_path / "f.png")
    assert plots.embed_png(saved) == "data:image/png;base64," + base64.b64encode(saved.read_bytes()).decode()
    (tmp_path / "not.png").write_text("hello")
    with pytest.raises(ValueError, match="not.png is not a PNG file"):
        plots.embed_png(tmp_path / "not.png")
    with pytest.raises(TypeError, match="got int"):
        plots.embed_png(3)
