"""The package layout is enforced: ``lint-imports`` (import-linter, contracts in pyproject.toml) passes on the
real tree and fails, naming the import, on a copy of the package with one deliberately bad import.

Each bad copy breaks exactly one rule a contributor must not break: scoring imports a judge, runs draw
(matplotlib), statistics know a run, and an import circle between two sibling modules.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (dev extra)")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the copy, not the installed package, is analysed
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", "pyproject.toml"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    work = tmp_path / "tree"
    shutil.copytree(ROOT / "axon_eval", work / "axon_eval", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
    return work


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_real_tree_keeps_every_contract():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("module", "bad_import", "contract", "named"), [
    ("scoring.py", "import axon_eval.judges  # noqa", "Scoring imports no judge",
     "axon_eval.scoring -> axon_eval.judges"),
    ("runs/io.py", "import matplotlib  # noqa", "Runs write data and draw nothing",
     "axon_eval.runs.io -> matplotlib"),
    ("stats/intervals.py", "import axon_eval.runs.io  # noqa", "Statistics know no run",
     "axon_eval.stats.intervals -> axon_eval.runs.io"),
    ("runs/io.py", "import axon_eval.runs.catalog  # noqa", "No import circle",
     ".io -> .catalog"),
])
def test_a_bad_import_breaks_its_contract_and_is_named(tmp_path, module, bad_import, contract, named):
    work = _copy(tmp_path)
    _append(work / "axon_eval" / module, bad_import)
    done = _lint(work)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    broken = [line for line in out.splitlines() if line.endswith("BROKEN")]
    assert any(line.startswith(contract) for line in broken), broken
    assert named in out, out
