"""The bench's memory helper measures the workload's own fresh process. Not timed.

The trap it avoids: on Linux, exec carries the replaced address space's high-water mark into
``ru_maxrss``, so a child of a process that once held 500 MB reads >= 500 MB from ``getrusage`` or
``wait4`` whatever it does. Bounds below are hand-derived: a bare CPython 3.11 interpreter is resident in
about 10-20 MB, so a trivial workload stays far below 100 MB; a workload that writes a 200 MiB bytes
object holds at least those 200 MiB resident at once.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from axon_eval.bench.memory import MEANING, peak_rss_mb, run_fresh

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM needs Linux /proc")

PARENT_MIB = 500
TRIVIAL_BOUND_MIB = 100  # an interpreter running `pass`: ~10-20 MB; 100 leaves room, and is far below 500
WORKLOAD_MIB = 200


@pytest.fixture()
def parent_holding_500mb():
    """The test process allocates and touches 500 MiB, so its high-water mark is at least that."""
    blob = b"\x01" * (PARENT_MIB << 20)  # written byte by byte, so every page is resident
    yield blob
    del blob


def test_fresh_process_peak_excludes_the_parents_high_water_mark(parent_holding_500mb):
    assert peak_rss_mb() >= PARENT_MIB  # precondition: the parent really peaked above 500 MiB
    # the old measurement (ru_maxrss from wait4, as bench_runs did) inherits the parent's peak on Linux:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    _pid, _status, usage = os.wait4(proc.pid, 0)
    if sys.platform.startswith("linux"):
        assert usage.ru_maxrss / 1024 >= PARENT_MIB, "kernel no longer carries maxrss over exec"

    fresh = run_fresh(["-c", "pass"])
    assert fresh.returncode == 0
    assert 0 < fresh.baseline_mb <= fresh.peak_mb < TRIVIAL_BOUND_MIB
    assert MEANING in fresh.label and f"baseline {fresh.baseline_mb:.0f} MB" in fresh.label


def test_fresh_process_peak_sees_the_workloads_own_memory(parent_holding_500mb):
    code = f"x = b'\\x01' * ({WORKLOAD_MIB} << 20); print(len(x))"
    fresh = run_fresh(["-c", code])
    assert fresh.stdout.strip() == str(WORKLOAD_MIB << 20)
    assert fresh.peak_mb >= WORKLOAD_MIB  # the 200 MiB object was resident at once
    assert fresh.peak_mb < PARENT_MIB  # ... and the parent's 500 MiB is not in the figure


def test_fresh_process_runs_modules_and_reports_exit_codes(tmp_path):
    cal = run_fresh(["-m", "calendar", "2026", "1"], cwd=tmp_path)  # a stdlib module run as `python -m`
    assert cal.returncode == 0 and "January 2026" in cal.stdout
    assert run_fresh(["-c", "import sys; sys.exit(3)"]).returncode == 3
    failed = run_fresh(["-c", "raise ValueError('boom')"])
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr and failed.peak_mb > 0
    argv = run_fresh(["-c", "import sys; print(sys.argv[1:])", "a", "b"])
    assert argv.stdout.strip() == "['a', 'b']"
    with pytest.raises(ValueError, match="'-m MODULE' or '-c CODE'"):
        run_fresh(["script.py"])


def test_peak_rss_mb_reads_vmhwm_and_names_a_bad_file(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n")
    assert peak_rss_mb(status) == 2.0  # 2048 kB / 1024
    status.write_text("Name:\tpython\n")
    with pytest.raises(RuntimeError, match="no VmHWM line"):
        peak_rss_mb(status)
    status.write_text("VmHWM:\t 12 MB\n")
    with pytest.raises(RuntimeError, match="not 'VmHWM: <integer> kB'"):
        peak_rss_mb(status)
    with pytest.raises(RuntimeError, match="cannot read"):
        peak_rss_mb(tmp_path / "missing")


def test_sensitivity_bench_memory_row_is_its_fresh_process(parent_holding_500mb):
    """The production path: the study-02 sweep's memory row, run from a parent that peaked at 500 MiB."""
    from axon_eval.bench.sensitivity import bench_sensitivity

    rows = bench_sensitivity(quick=True)
    (mem,) = [r for r in rows if r["unit"] == "MB"]
    assert MEANING in mem["name"] and mem["measured"] == MEANING
    # quick sizes: 200 vectors x 5,000 segments; the figure is mostly numpy/pandas/scipy imports (285 MB seen)
    assert mem["baseline_mb"] < TRIVIAL_BOUND_MIB and mem["value"] < PARENT_MIB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 >= PARENT_MIB


def test_band_kappa_rows_are_reported_never_failed_and_the_judge_goals_still_gate():
    """The band's agreement with labels is the rubric's figure: a low one is reported beside its reference
    and never makes ``make bench`` exit 1; the judge's own goal (fabrications caught) still can."""
    from axon_eval.bench.heuristic import _all_agreement_rows

    measured = {"band_kappa": 0.2, "fabricated_rate": 0.5, "fabricated_caught": 1, "fabricated_n": 2, "in_range": 0.9,
                "n": 10, "judge_id": "heuristic", "verdict_kappa": 0.9, "claims_rate": 1.0}
    rows = {r["name"].split(": ", 1)[1]: r for r in _all_agreement_rows("set", measured, 0.75, 0.9)}
    band = rows["kappa scorer band vs labels"]
    assert band["ok"] is None and "reported" in band["target"] and "0.75" in band["target"]
    assert rows["fabricated-figure claims caught"]["ok"] is False
