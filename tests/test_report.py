"""The HTML audit report: bounded size and memory on a large run, self-contained, provenance banners.

Run folders come from the public ``evaluate`` on the bundled sample (heuristic judge, offline); the
large one is that run replicated to 40,000 results rows and audit lines with pandas and json (as many
segments as the 39,240-turn evidence file of the scale test).
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

from axon_eval import reporting as plots
from axon_eval.reporting import report
from axon_eval.reporting.report import DEFAULT_N_WORST, write_report
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
    results = pd.read_parquet(source / "results")
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
    (folder / "results").mkdir()
    big.to_parquet(folder / "results" / "part-00000.parquet", index=False)
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
from axon_eval.reporting.report import write_report
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


# -- swallowed errors, the band's kappa first, people's numbers, ensemble disagreement, figures ------------
LABELS = ROOT / "data" / "turns" / "labels.csv"


def wcag_luminance(rgb) -> float:
    """WCAG 2.1 relative luminance, written out here independently of plots.relative_luminance."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(float(c)) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def wcag_contrast(a, b) -> float:
    hi, lo = sorted((wcag_luminance(a), wcag_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    """A run of the bundled sample that records the labels file among its inputs (as notebook 01 does)."""
    return evaluate(SAMPLE, "heuristic", out_dir=tmp_path_factory.mktemp("labelled"), cache=False, progress=False,
                    input_files=[LABELS])


def section(page: str, title: str) -> str:
    start = page.index(f"<h2>{title}")
    end = page.find("<h2>", start + 4)
    return page[start:end if end > 0 else None]


def test_an_unreadable_rubric_record_is_a_visible_note(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "bad-rubric",
                      manifest_changes={"rubric": {"name": "hand-edited", "weights": "not a mapping"}})
    page = write_report(folder).read_text()
    note = re.search(r'<p class="warn">The run&#x27;s rubric record \(hand-edited, id \w+\) could not be read '
                     r'\(([^<]+)\): band edges for segments&#x27; mean scores use the default rubric', page)
    assert note is not None, "the fallback to the default band edges must be said"
    assert "weights" in note.group(1)  # the first validation error names the bad field
    assert "could not be read" not in write_report(sample_run.run_dir, output=tmp_path / "ok.html").read_text()


def test_the_score_bands_kappa_comes_first_and_the_verdicts_beside_it(labelled_run, tmp_path):
    from sklearn.metrics import cohen_kappa_score

    page = write_report(labelled_run.run_dir).read_text()  # labels found among the run's recorded inputs
    part = section(page, "Comparison with labels")
    labels = pd.read_csv(LABELS).set_index("segment_id")["verdict"]
    res = labelled_run.results.set_index("segment_id")
    band_kappa = cohen_kappa_score(res["band"], labels.reindex(res.index))
    verdict_kappa = cohen_kappa_score(res["judge_verdict"], labels.reindex(res.index))
    # the offline judge on the bundled sample (CONSTRUCTED labels; docs/studies/05-calibration.md)
    assert round(band_kappa, 2) == 0.47 and round(verdict_kappa, 2) == 0.43
    band_name, verdict_name = "score band vs labels (Cohen&#x27;s kappa)", "judge verdict vs labels (Cohen&#x27;s kappa)"
    assert part.index(band_name) < part.index(verdict_name)
    assert f"{band_name} {band_kappa:.2f} (95% CI " in part and f"{verdict_name} {verdict_kappa:.2f} (95% CI " in part
    assert "does not meet the gate of kappa &gt;= 0.7" in part
    head = re.search(r"<thead><tr><th></th><th>([^<]+)</th><th>([^<]+)</th></tr></thead><tbody><tr><td>Cohen&#x27;s "
                     r"kappa</td><td>([^<]+)</td><td>([^<]+)</td>", part)
    assert head is not None
    assert head.group(1).startswith("score band vs labels") and head.group(2) == "judge verdict vs labels"
    assert (head.group(3), head.group(4)) == (f"{band_kappa:.2f}", f"{verdict_kappa:.2f}")
    assert f"<td>share equal to the label</td><td>{(res['band'] == labels.reindex(res.index)).mean():.0%}</td>" in part
    # changed labels are said, not silently used
    folder = copy_run(labelled_run.run_dir, tmp_path / "changed", manifest_changes={
        "input_files": {**labelled_run.manifest.input_files, "data/turns/labels.csv": "0" * 64}})
    changed = section(write_report(folder).read_text(), "Comparison with labels")
    assert "has changed since the run" in changed and "Cohen" not in changed


def test_the_first_page_says_offline_and_not_reported_instead_of_none(sample_run, tmp_path):
    whole = write_report(sample_run.run_dir, output=tmp_path / "r.html").read_text()
    assert "Comparison with labels" not in whole  # the run recorded no labels file
    page = first_page(whole)
    assert "<tr><th>judge endpoint</th><td>offline (no endpoint)</td></tr>" in page
    assert "provider default" not in page
    assert "<tr><th>tokens</th><td>not reported (offline judge)</td></tr>" in page
    assert " / / " not in page and "None" not in page and "null" not in page
    counts = sample_run.manifest.counts
    assert (f"<td>{counts.turns} turns, {counts.segments} segments: {counts.judged} judged, {counts.unjudged} "
            f"unjudged; {counts.invalid} invalid input line record(s)</td>") in page
    api = copy_run(sample_run.run_dir, tmp_path / "api", manifest_changes={
        "judge_id": "anthropic:claude-haiku-4-5@judge_v1,t=default", "judge_endpoint": None,
        "input_tokens": 1200, "output_tokens": 340, "cache_read_tokens": None, "cache_creation_tokens": 0})
    api_page = first_page(write_report(api).read_text())
    assert "<tr><th>judge endpoint</th><td>not recorded (provider default)</td></tr>" in api_page
    assert "<td>input 1,200, output 340, cache read not reported, cache write 0</td>" in api_page


def test_summary_shares_read_as_percentages(sample_run, tmp_path):
    page = write_report(sample_run.run_dir, output=tmp_path / "r.html").read_text()
    summary = section(page, "Summary")
    segments = report.segment_table(sample_run.results)
    share_good = (segments["band"] == "good").mean()
    assert f'<td class="num">{round(100 * share_good)}%</td>' in summary
    assert not re.search(r"\d\.\d{4,}|\de-\d|>None<|>nan<|>NaN<", summary)


@pytest.fixture(scope="module")
def ensemble_run(tmp_path_factory):
    return evaluate(SAMPLE, "ensemble(heuristic, noise(heuristic, sd=1.5, seed=3))",
                    out_dir=tmp_path_factory.mktemp("ensemble"), cache=False, progress=False, limit=12)


def test_ensemble_disagreement_lists_every_flagged_segment_with_each_members_subscores(ensemble_run):
    page = write_report(ensemble_run.run_dir).read_text()
    records = [json.loads(line) for line in (ensemble_run.run_dir / "verdicts.jsonl").read_text().splitlines()]
    # the oracle: members' bands differ or a dimension's range reaches 2 points, from the members themselves
    flagged = []
    for r in records:
        members = r["extra"]["members"]
        bands = {m["band"] for m in members if m["band"]}
        ranges = [max(vals) - min(vals) for d in ("intent_understood", "sql_quality", "result_relevance",
                                                  "answer_faithfulness")
                  if (vals := [m["subscores"][d] for m in members if m["subscores"][d] is not None])]
        if len(bands) > 1 or any(x >= 2 for x in ranges):
            flagged.append(r)
    assert 0 < len(flagged) < len(records)
    part = section(page, "Ensemble disagreement")
    assert part.startswith(f"<h2>Ensemble disagreement ({len(flagged)} of {len(records)} judged segments flagged)</h2>")
    for r in flagged:
        first, second = r["extra"]["members"]
        row = re.search(rf"<tr><td>{re.escape(r['segment_id'])}</td>.*?</tr><tr>(.*?)</tr>", part)
        assert row is not None, r["segment_id"]
        for member, cells in ((first, row.group(0)), (second, row.group(1))):
            assert f"<td>{member['judge_id']}</td>" in cells
            shown = [member["subscores"][d] for d in ("intent_understood", "sql_quality", "result_relevance",
                                                      "answer_faithfulness")]
            expected = "".join(f'<td class="num">{"null" if v is None else v}</td>' for v in shown)
            assert expected in cells
    unflagged = {r["segment_id"] for r in records} - {r["segment_id"] for r in flagged}
    assert not any(f"<tr><td>{sid}</td>" in part for sid in unflagged)
    # a single judge's run has no such section
    assert "Ensemble disagreement" not in report.render_report_parts(
        {"run_id": "x"}, report.read_report_results(Path("/nonexistent")), [], [], [])


def test_every_heatmap_annotation_reads_on_its_cell(sample_run):
    crosstab = pd.DataFrame([[37, 0, 0], [25, 15, 0], [0, 0, 20]])
    figures = [plots.verdict_band_heatmap(sample_run.results),
               plots.band_transition_heatmap(pd.DataFrame(crosstab.to_numpy(), index=["good", "partial", "poor"],
                                                          columns=["good", "partial", "poor"])),
               plots.calibration_confusion(pd.DataFrame(crosstab.to_numpy(), index=["good", "partial", "poor"],
                                                        columns=["good", "partial", "poor"]))]
    from matplotlib.colors import to_rgb

    for fig in figures:
        ax = fig.axes[0]
        image = ax.get_images()[0]
        values = image.get_array()
        texts = [t for t in ax.texts if t.get_text().isdigit()]
        assert len(texts) == 9
        for t in texts:
            col, row = (int(round(v)) for v in t.get_position())
            background = image.cmap(image.norm(values[row, col]))
            assert wcag_contrast(to_rgb(t.get_color()), background) >= 4.5, (t.get_text(), t.get_color(), background)


def test_the_band_legend_stays_clear_of_the_axis_label(sample_run):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for column in ("region", "surface", "client"):
        fig = plots.band_shares_by(sample_run.results, column)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend() is not None]
        assert len(legends) == 1
        legend = legends[0].get_window_extent(renderer)
        for ax in fig.axes:
            for label in (ax.xaxis.label, *ax.get_xticklabels()):
                if label.get_text():
                    assert not legend.overlaps(label.get_window_extent(renderer)), (column, label.get_text())


def test_an_undefined_kappa_is_said_not_drawn_as_a_zero_bar():
    summary = pd.DataFrame({"kappa_mean": [0.6, np.nan], "kappa_pooled": [0.62, np.nan]},
                           index=["nominal", "ordinal"])
    per_fold = pd.DataFrame({"method": ["nominal", "nominal", "ordinal"], "kappa": [0.55, 0.65, np.nan]})
    fig = plots.recal_cv_kappa(per_fold, summary)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_width() > 0]
    assert len(bars) == 1 and bars[0].get_height() == pytest.approx(0.6)
    assert [t.get_text() for t in ax.texts] == ["kappa undefined"]
    assert ax.texts[0].get_position()[0] == 1  # at the ordinal method's place
    margin = plots.calibration_by_margin({"band": pd.DataFrame({"agreement": [0.8, np.nan], "n": [10, 0]},
                                                               index=["good", "poor"])})
    words = [t.get_text() for t in margin.axes[0].texts]
    assert "undefined (n 0)" in words and "n 10" in words
    assert [p.get_height() for p in margin.axes[0].patches] == [pytest.approx(0.8)]


# -- axon_eval.display: the numbers people read ----------------------------------------------------------------
@pytest.mark.parametrize(("value", "text"), [
    (0.61635, "0.616"), (77.53, "77.5"), (8.8247, "8.82"), (12345.6, "12,346"), (4.09e-15, "0"), (-4.09e-15, "0"),
    (97.0, "97"), (3, "3"), (1_000_000, "1,000,000"), (None, "n/a"), (float("nan"), "n/a"), (pd.NA, "n/a"),
    (True, "yes"), (0.5, "0.5")])
def test_fmt_number_known_answers(value, text):
    from axon_eval.display import fmt_number

    assert fmt_number(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (0.639175, "64%"), (0.0309, "3.1%"), (0.05, "5%"), (0.999, "99.9%"), (0.99995, ">99.9%"), (1.0, "100%"),
    (0.0, "0%"), (0.0004, "<0.1%"), (None, "n/a")])
def test_fmt_share_known_answers(value, text):
    from axon_eval.display import fmt_share

    assert fmt_share(value) == text


def test_fmt_number_is_plain_decimal_within_its_rounding():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from axon_eval.display import MAX_DECIMALS, SIGNIFICANT_DIGITS, fmt_number

    @settings(max_examples=300, deadline=None)
    @given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False))
    def check(x):
        text = fmt_number(x)
        assert "e" not in text and "nan" not in text and text != "-0"
        back = float(text.replace(",", ""))
        # rounded to d decimals, d = clamp(sig - 1 - floor(log10|x|), 0, MAX_DECIMALS): error <= half a unit
        d = 0 if x == 0 else min(max(SIGNIFICANT_DIGITS - 1 - int(np.floor(np.log10(abs(x)))), 0), MAX_DECIMALS)
        assert abs(back - x) <= 0.5 * 10 ** -d + 1e-9 * max(1.0, abs(x))

    check()


def test_people_table_reads_shares_by_name_and_never_shows_none():
    from axon_eval.display import people_table

    frame = pd.DataFrame({"count": [62, 15], "share": [0.639175, np.nan], "mean_score": [77.5349, None],
                          "label": ["good", None]})
    out = people_table(frame)
    assert out.to_dict("list") == {"count": ["62", "15"], "share": ["64%", "n/a"], "mean_score": ["77.5", "n/a"],
                                   "label": ["good", "n/a"]}


# -- every headline with its interval and n; the first page's claim gate ---------------------
def plain_cluster_bootstrap(values: pd.Series, clusters: pd.Series, n_boot: int = 2000, seed: int = 0):
    """An independent oracle: the percentile bootstrap of a mean resampling whole clusters, one replicate
    at a time with pandas (the clusters' multinomial counts, in order of first appearance, from
    ``default_rng(seed)``)."""
    frame = pd.DataFrame({"v": values.to_numpy(), "c": clusters.to_numpy()})
    by = frame.groupby("c", sort=False)["v"]
    sums, sizes = by.sum(), by.size()
    order = pd.unique(frame["c"])
    sums, sizes = sums.reindex(order), sizes.reindex(order)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(order), [1 / len(order)] * len(order), size=n_boot)
    reps = [float((sums * row).sum() / (sizes * row).sum()) for row in counts]
    return float(frame["v"].mean()), *np.quantile(reps, [0.025, 0.975])


def headline_row(page: str, figure: str) -> tuple[str, str, str, str]:
    """(estimate, interval, n, turns) of one row of the report's headline table."""
    row = re.search(rf'<tr><td>{re.escape(figure)}</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>'
                    r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', page)
    assert row is not None, f"no headline row for {figure}"
    return row.groups()


def test_the_summary_gives_every_headline_with_its_interval_n_seed_and_what_it_covers(sample_run, tmp_path):
    from axon_eval.display import fmt_estimate, fmt_interval, fmt_number, fmt_share
    from axon_eval.stats.intervals import INTERVAL_COVERS

    page = write_report(sample_run.run_dir, output=tmp_path / "r.html").read_text()
    summary = section(page, "Summary")
    assert report.esc(INTERVAL_COVERS) in summary and "2,000 resamples, seed 0" in summary
    seg = report.segment_table(sample_run.results)
    seg = seg[seg["status"] == "judged"]
    n, turns = len(seg), seg["turn_id"].nunique()
    assert (n, turns) == (97, 90)  # bundled turns: the resampled unit is the turn, not the segment
    est, lo, hi = plain_cluster_bootstrap(seg["score"], seg["turn_id"])
    row = headline_row(summary, "mean score")
    # the estimate and its interval read as the one-line form does (shared decimals: 69.0 beside 65.6 to 72.0)
    assert f"{row[0]} ({row[1]})" == fmt_estimate(est, lo, hi) and row[1] == fmt_interval(lo, hi)
    assert row[2:] == ("97", "90")
    assert f"mean {est:.1f} (95% interval {fmt_interval(lo, hi)}, n = 97 segments in 90 turns)" in summary
    good = (seg["band"] == "good").astype(float)
    est, lo, hi = plain_cluster_bootstrap(good, seg["turn_id"])
    assert headline_row(summary, "share good") == (fmt_share(est), fmt_interval(lo, hi, share=True), "97", "90")
    assert f'<td class="num">{fmt_share(est)}</td><td class="num">{fmt_interval(lo, hi, share=True)}</td></tr>' in summary
    faithful = seg["answer_faithfulness"].dropna()  # a null is left out, never a 0
    est, lo, hi = plain_cluster_bootstrap(faithful, seg.loc[faithful.index, "turn_id"])
    assert headline_row(summary, "mean answer_faithfulness") == (
        fmt_estimate(est, lo, hi).partition(" (")[0], fmt_interval(lo, hi), str(len(faithful)),
        str(seg.loc[faithful.index, "turn_id"].nunique()))
    for figure in ("share partial", "share poor", "share capped", "mean intent_understood", "mean sql_quality",
                   "mean result_relevance"):
        headline_row(summary, figure)
    assert not re.search(r">nan<|>None<|\de-\d", summary)


def test_the_page_opens_with_the_headline_and_the_cross_check_table_comes_later(sample_run, tmp_path):
    """The first thing after the title (and any banner) is the band headline, each figure with its interval
    and n; then the claims sentence, the cross-check (its list closed), provenance and the summary."""
    from axon_eval.display import fmt_estimate

    page = write_report(sample_run.run_dir, output=tmp_path / "r.html").read_text()
    body = page[page.index("<body>"):]
    order = [body.index(mark) for mark in ('<div id="headline">', 'id="claims"', "id='cross-check'",
                                            "<h2>Provenance</h2>", "<h2>Summary</h2>")]
    assert order == sorted(order)
    before = body[: body.index('<div id="headline">')]
    assert "<table" not in before and "<h2>" not in before
    headline = body[body.index('<div id="headline">'):body.index("</div>", body.index('<div id="headline">'))]
    seg = report.segment_table(sample_run.results)
    seg = seg[seg["status"] == "judged"]
    est, lo, hi = plain_cluster_bootstrap(seg["score"], seg["turn_id"])  # the independent oracle
    assert f"<b>mean score {fmt_estimate(est, lo, hi)}, n = 97 segments in 90 turns (95% intervals; turns " \
           "resampled, seed 0, 2,000 resamples)</b>" in headline
    bands = []
    for band in ("good", "partial", "poor"):
        b_est, b_lo, b_hi = plain_cluster_bootstrap((seg["band"] == band).astype(float), seg["turn_id"])
        bands.append(f"{band} {fmt_estimate(b_est, b_lo, b_hi, share=True)}")
    assert f"<b>bands: {', '.join(bands)}</b>" in headline
    cross = body[body.index("id='cross-check'"):body.index("<h2>Provenance</h2>")]
    assert "<details id='cross-check-list'><summary>" in cross and "<details id='cross-check-list' open" not in cross
    assert cross.index("<details id='cross-check-list'>") < cross.index("<table>")


def test_a_simulated_judges_headline_says_so_on_every_line(sample_run, tmp_path):
    folder = copy_run(sample_run.run_dir, tmp_path / "sim", manifest_changes={"judge_id": "noise(sd=1.0,seed=1)[heuristic]"})
    results = pd.read_parquet(folder / "results")
    results["judge_id"] = "noise(sd=1.0,seed=1)[heuristic]"
    results.to_parquet(folder / "results" / "part-00000.parquet", index=False)
    page = write_report(folder).read_text()
    headline = page[page.index('<div id="headline">'):page.index("</div>", page.index('<div id="headline">'))]
    lines = re.findall(r'<p class="headline"><b>([^<]*)</b></p>', headline)
    assert len(lines) == 2 and all(line.startswith("SIMULATED ") for line in lines), lines


def test_one_segment_turns_get_the_wilson_interval_of_statsmodels(sample_run, tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    from axon_eval.display import fmt_interval, fmt_share

    folder = copy_run(sample_run.run_dir, tmp_path / "flat")
    results = pd.read_parquet(folder / "results")
    results["turn_id"] = results["segment_id"]  # every segment its own turn: independent units
    results.to_parquet(folder / "results" / "part-00000.parquet", index=False)
    summary = section(write_report(folder).read_text(), "Summary")
    for band in ("good", "poor"):
        k = int((results["band"] == band).sum())
        lo, hi = proportion_confint(k, len(results), alpha=0.05, method="wilson")
        assert headline_row(summary, f"share {band}") == (fmt_share(k / len(results)),
                                                         fmt_interval(lo, hi, share=True), "97", "97")
    assert "<td>share good</td>" in summary and ">wilson<" in summary


def test_the_large_runs_headlines_have_intervals_in_bounded_memory(large_report):
    from statsmodels.stats.proportion import proportion_confint

    from axon_eval.display import fmt_interval, fmt_share

    folder, path, _ = large_report  # memory is asserted by test_large_run_report_memory_stays_bounded
    summary = section(path.read_text(encoding="utf-8"), "Summary")
    results = pd.read_parquet(folder / "results", columns=["band", "status"])
    judged = results[results["status"] == "judged"]
    k = int((judged["band"] == "poor").sum())
    lo, hi = proportion_confint(k, len(judged), alpha=0.05, method="wilson")
    assert headline_row(summary, "share poor") == (fmt_share(k / len(judged)), fmt_interval(lo, hi, share=True),
                                                   "39,900", "39,900")
    assert headline_row(summary, "mean score")[2:] == ("39,900", "39,900")


def test_headline_table_equals_headline_intervals_and_reads_for_people(sample_run):
    from axon_eval.stats.intervals import format_headline_table, headline_intervals, headline_table

    table = headline_table(sample_run.results)
    pd.testing.assert_frame_equal(table, headline_intervals(sample_run.results), check_exact=False, rtol=1e-12)
    assert table.attrs == headline_intervals(sample_run.results).attrs
    shown = format_headline_table(table)
    assert list(shown.columns) == ["figure", "estimate", "95% interval", "n", "turns", "method", "note"]
    assert shown.attrs["covers"] == table.attrs["covers"] and shown.attrs["seed"] == 0
    cells = " ".join(shown[["estimate", "95% interval"]].to_numpy().ravel())
    assert "nan" not in cells and "None" not in cells and "%" in cells


def calibration_record_for(manifest: dict, *, kappa: float, kappa_lo: float, constructed: bool = False):
    """A study-05 record of ``manifest``'s judge and rubric with the given band kappa and lower bound."""
    from axon_eval.stats.calibration_record import CalibrationRecord, gate_passes

    return CalibrationRecord(
        judge_id=manifest["judge_id"], judge_model=manifest.get("judge_model"),
        judge_endpoint=manifest.get("judge_endpoint"), prompt_version=manifest.get("prompt_version"),
        rubric_id=manifest["rubric_id"], evidence={"data/turns/sample_turns.jsonl": "a" * 64},
        labels={"labels/human.csv": "b" * 64}, labels_constructed=constructed, n=120, kappa=kappa,
        kappa_lo=kappa_lo, kappa_hi=min(1.0, 2 * kappa - kappa_lo), confidence=0.95, threshold=0.7,
        gate_passed=gate_passes(kappa_lo), gate_message="gate message")


def runs_folder_with(sample_run, root: Path, record=None, *, record_day: str = "2025-01-01",
                     manifest_changes: dict | None = None) -> tuple[Path, Path | None]:
    """A runs folder holding a copy of the sample run and, when given, a study-05 run folder with ``record``."""
    from axon_eval.runs.calibration import write_calibration

    record_path = write_calibration(root / f"{record_day}T000000_05-calibration", record) if record else None
    run = copy_run(sample_run.run_dir, root / "2025-02-01T000000_evaluate", manifest_changes=manifest_changes)
    return run, record_path


def test_without_a_calibration_record_the_first_page_allows_no_comparative_claim(sample_run, tmp_path):
    run, _ = runs_folder_with(sample_run, tmp_path / "runs")
    page = first_page(write_report(run).read_text())
    assert ('<p class="warn" id="claims"><b>no calibration record: comparative claims are not allowed until study '
            "05 passes") in page


def test_a_matching_record_gates_claims_on_the_kappas_lower_bound_not_its_point(sample_run, tmp_path):
    manifest = json.loads((sample_run.run_dir / "manifest.json").read_text())
    passed = calibration_record_for(manifest, kappa=0.81, kappa_lo=0.74)
    run, path = runs_folder_with(sample_run, tmp_path / "ok", passed)
    page = first_page(write_report(run).read_text())
    assert (f'<p class="ok" id="claims"><b>comparative claims allowed: band kappa lower bound 0.74 vs 0.7 (kappa '
            f"0.81, 95% interval, n = 120 segments, record {path})</b></p>") in page
    # a point value above 0.7 with a lower bound below it allows nothing
    point_only = calibration_record_for(manifest, kappa=0.78, kappa_lo=0.62)
    run, path = runs_folder_with(sample_run, tmp_path / "point", point_only)
    page = first_page(write_report(run).read_text())
    assert "comparative claims not allowed: band kappa lower bound 0.62 vs 0.7 (kappa 0.78" in page
    # a gate passed on constructed labels allows nothing either
    constructed = calibration_record_for(manifest, kappa=0.9, kappa_lo=0.8, constructed=True)
    run, _ = runs_folder_with(sample_run, tmp_path / "constructed", constructed)
    assert "comparative claims not allowed: band kappa lower bound 0.80 vs 0.7" in first_page(write_report(run).read_text())


def test_the_newest_record_is_read_and_an_explicit_one_wins(sample_run, tmp_path):
    from axon_eval.runs.calibration import write_calibration

    manifest = json.loads((sample_run.run_dir / "manifest.json").read_text())
    run, _ = runs_folder_with(sample_run, tmp_path / "runs", calibration_record_for(manifest, kappa=0.7, kappa_lo=0.5),
                              record_day="2025-01-01")
    write_calibration(tmp_path / "runs" / "2025-01-09T000000_05-calibration",
                      calibration_record_for(manifest, kappa=0.85, kappa_lo=0.76))
    assert "band kappa lower bound 0.76 vs 0.7" in first_page(write_report(run).read_text())
    elsewhere = write_calibration(tmp_path / "elsewhere", calibration_record_for(manifest, kappa=0.6, kappa_lo=0.41))
    page = first_page(write_report(run, calibration=elsewhere).read_text())
    assert f"band kappa lower bound 0.41 vs 0.7 (kappa 0.60, 95% interval, n = 120 segments, record {elsewhere})" in page
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    page = first_page(write_report(run, calibration=bad).read_text())
    assert f"the calibration record {bad} could not be read" in page and "comparative claims are not allowed" in page


def test_a_stale_record_names_what_differs_and_gives_no_corrected_figures(sample_run, tmp_path):
    manifest = json.loads((sample_run.run_dir / "manifest.json").read_text())
    record = calibration_record_for(manifest, kappa=0.9, kappa_lo=0.8)
    run, path = runs_folder_with(sample_run, tmp_path / "runs", record, manifest_changes={
        "judge_id": "anthropic:claude-haiku-4-5@judge_v1,t=default", "rubric_id": "0123abcd"})
    page = first_page(write_report(run).read_text())
    claim = re.search(r'<p class="warn" id="claims"><b>([^<]*)</b></p>', page)
    assert claim is not None
    text = claim.group(1)
    assert text.startswith(f"calibration stale: judge id differs (record {manifest['judge_id']}, run "
                           "anthropic:claude-haiku-4-5@judge_v1,t=default)")
    assert f"calibration stale: rubric id differs (record {manifest['rubric_id']}, run 0123abcd)" in text
    assert "comparative claims are not allowed and no corrected figures are given for this run" in text
    assert "claims allowed" not in page and "corrected" not in page.replace("no corrected figures", "")


def test_the_report_verb_takes_a_calibration_record(sample_run, tmp_path):
    from axon_eval import cli

    manifest = json.loads((sample_run.run_dir / "manifest.json").read_text())
    run, _ = runs_folder_with(sample_run, tmp_path / "runs")
    from axon_eval.runs.calibration import write_calibration

    path = write_calibration(tmp_path / "study05", calibration_record_for(manifest, kappa=0.8, kappa_lo=0.72))
    assert cli.main(["report", str(run), "--calibration", str(path)]) == 0
    assert "comparative claims allowed: band kappa lower bound 0.72 vs 0.7" in first_page((run / "report.html").read_text())


def test_the_stats_package_exports_the_interval_ppi_paired_and_calibration_api():
    import types

    import axon_eval.stats as stats
    from axon_eval.stats import calibration_record, coverage, estimates, intervals, paired, panels, ppi

    assert isinstance(stats.calibration_record, types.ModuleType)  # the submodule, not its same-named function
    exported = {intervals: ("headline_table", "headline_intervals", "format_headline_table", "Interval",
                            "wilson_interval", "cluster_bootstrap", "INTERVAL_COVERS"),
                ppi: ("corrected_estimates", "ppi_mean", "PPI_COVERS"), coverage: ("ppi_coverage_simulation",),
                paired: ("compare_runs", "PairedComparison"), estimates: ("corrected_study",),
                calibration_record: ("CalibrationRecord", "staleness", "claims_verdict", "gate_passes"),
                panels: ("panel_study", "PanelStudy")}
    for module, names in exported.items():
        for name in names:
            assert name in stats.__all__ and getattr(stats, name) is getattr(module, name), name
    assert len(stats.__all__) == len(set(stats.__all__)) and all(hasattr(stats, n) for n in stats.__all__)
