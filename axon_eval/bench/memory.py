"""Peak memory of a workload, measured in a fresh process: the one helper behind every memory figure of ``make bench``.

Why not ``getrusage``: on Linux, ``execve`` folds the high-water mark of the address space it replaces into
the process's ``signal->maxrss``, and both ``getrusage(RUSAGE_SELF).ru_maxrss`` in the child and
``ru_maxrss`` from the parent's ``wait4`` report the larger of that and the new program's own peak. A
child started by a process that once held 690 MB (``subprocess`` forks or vforks the bench process, whose
address space is the one exec replaces) therefore reads at least 690 MB whatever it does. The kernel's ``VmHWM`` line of ``/proc/self/status`` is the high-water mark of the *current*
address space only (``mm->hiwater_rss``, started afresh by exec), so read at the end of the workload it
is the peak of that program alone (Linux ``proc(5)``, ``/proc/pid/status``: "VmHWM: Peak resident set
size").

:func:`run_fresh` starts ``python .../axon_eval/bench_memory.py REPORT -- ARGS...`` (run as a script, so
the package and its pandas are not imported first): a bare interpreter that reads its own ``VmHWM`` (the
*baseline*: interpreter start-up and this file's standard-library imports, about 10 MB),
runs ``python ARGS...`` in-process (``-m module ...`` or ``-c code ...``) and, when that returns or
raises, writes its ``VmHWM`` again to ``REPORT`` as JSON. The figure is therefore the **peak RSS of a
fresh process, including the interpreter and the workload's imports**; the baseline is reported beside
it. Units: MB here means MiB (``VmHWM`` is in kB = 1024 bytes; figure = kB / 1024), as the bench
always reported.

Linux only (``/proc``); elsewhere :func:`peak_rss_mb` raises, and the bench row reports the failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

STATUS_FILE = Path("/proc/self/status")
#: What a figure measured by :func:`run_fresh` means, for bench tables and ``bench.json``.
MEANING = "peak RSS of a fresh process, including the interpreter and imports"


def peak_rss_mb(status_file: Path = STATUS_FILE) -> float:
    """This process's peak resident set size since its last exec, in MiB: ``VmHWM`` (kB) / 1024.

    Raises ``RuntimeError`` naming the file if it has no ``VmHWM`` line (not Linux, or no ``/proc``).
    """
    try:
        text = status_file.read_text()
    except OSError as exc:
        raise RuntimeError(f"cannot read {status_file} for VmHWM (peak RSS needs Linux /proc): {exc}") from exc
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            fields = line.split()
            if len(fields) != 3 or fields[2] != "kB" or not fields[1].isdigit():
                raise RuntimeError(f"{status_file}: VmHWM line {line!r} is not 'VmHWM: <integer> kB'")
            return int(fields[1]) / 1024.0
    raise RuntimeError(f"{status_file} has no VmHWM line (peak RSS needs Linux /proc)")


@dataclass(frozen=True)
class FreshRun:
    """The outcome of :func:`run_fresh`. Memory in MiB; ``peak_mb`` includes ``baseline_mb``."""

    peak_mb: float       # VmHWM of the fresh process when the workload ended
    baseline_mb: float   # VmHWM of the same process before the workload (bare interpreter)
    returncode: int      # the workload's exit status (SystemExit code; 1 for an uncaught exception)
    wall_s: float        # wall time of the whole child, start-up included
    stdout: str
    stderr: str

    @property
    def label(self) -> str:
        """What ``peak_mb`` is, for a table row: ``MEANING`` and the baseline."""
        return f"{MEANING} (baseline {self.baseline_mb:.0f} MB)"


def run_fresh(python_args: Sequence[str], *, cwd: str | Path | None = None,
              env: Mapping[str, str] | None = None) -> FreshRun:
    """Run ``python *python_args`` (``["-m", module, ...]`` or ``["-c", code, ...]``) in a fresh interpreter
    and measure its peak RSS from inside it (module docstring). Raises ``RuntimeError`` with the child's
    stderr if it wrote no report (it was killed, or called ``os._exit``)."""
    args = list(python_args)
    if not args or args[0] not in ("-m", "-c") or len(args) < 2:
        raise ValueError(f"python_args must start with '-m MODULE' or '-c CODE', got {args[:2]!r}")
    with tempfile.TemporaryDirectory(prefix="axon-bench-mem-") as tmp:
        report = Path(tmp) / "peak.json"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(report), "--", *args],
                              cwd=cwd, env=None if env is None else dict(env), capture_output=True, text=True)
        wall_s = time.perf_counter() - start
        if not report.exists():
            raise RuntimeError(f"fresh process {args[:2]!r} exited {proc.returncode} without a memory report: "
                               f"{proc.stderr[-2000:]}")
        data = json.loads(report.read_text())
    return FreshRun(peak_mb=data["peak_mb"], baseline_mb=data["baseline_mb"], returncode=data["returncode"],
                    wall_s=wall_s, stdout=proc.stdout, stderr=proc.stderr)


def _child(argv: list[str]) -> int:
    """``python bench_memory.py REPORT -- (-m MODULE | -c CODE) ARGS...`` (see :func:`run_fresh`).

    ``sys.path[0]`` is set as ``python -m`` (the working directory) or ``python -c`` (``""``) would set it,
    instead of this script's folder."""
    import runpy
    import traceback

    if len(argv) < 4 or argv[1] != "--" or argv[2] not in ("-m", "-c"):
        print(f"usage: python bench_memory.py REPORT -- (-m MODULE | -c CODE) ARGS..., got {argv!r}",
              file=sys.stderr)
        return 2
    report, mode, target, rest = Path(argv[0]), argv[2], argv[3], argv[4:]
    sys.path[0] = os.getcwd() if mode == "-m" else ""
    baseline = peak_rss_mb()
    returncode = 0
    try:
        if mode == "-m":
            sys.argv = [target, *rest]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *rest]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the bench's own code
    except SystemExit as exc:
        code = exc.code
        returncode = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
    except BaseException:  # the workload failed: report its memory anyway, and its traceback
        traceback.print_exc()
        returncode = 1
    sys.stdout.flush()
    report.write_text(json.dumps({"peak_mb": peak_rss_mb(), "baseline_mb": baseline, "returncode": returncode}))
    return returncode


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
