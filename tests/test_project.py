"""The project's shape: one dependency list, the two-command set-up, CI calling the README's command."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_only_points_at_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    conda = [d for d in deps if isinstance(d, str)]
    pip = [d for d in deps if isinstance(d, dict)]
    assert sorted(re.split(r"[=<>]", d)[0] for d in conda) == ["pip", "python"]
    assert pip == [{"pip": ["-e .[dev]"]}]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    py_pin = next(d for d in conda if d.startswith("python"))
    assert py_pin.split("=")[1] in pyproject["project"]["requires-python"]
    assert "dev" in pyproject["project"]["optional-dependencies"]


def test_pyproject_lists_the_named_dependencies():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=\[ ]", d)[0].lower() for d in deps}
    for needed in ("pandas", "numpy", "statsmodels", "matplotlib", "anthropic", "papermill", "pydantic",
                   "jupyterlab", "ipykernel", "pyarrow", "sqlglot", "scipy", "tqdm", "pyyaml"):
        assert needed in names, needed


def test_readme_dependencies_are_explained():
    readme = (ROOT / "README.md").read_text()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for d in deps:
        name = re.split(r"[<>=\[ ]", d)[0]
        assert f"`{name}`" in readme, f"README does not say why {name} is a dependency"


def test_make_help_lists_every_target():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for target in ("setup", "run", "test", "lab", "bench", "data", "studies"):
        assert re.search(rf"make {target}\b", out), target


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    readme = (ROOT / "README.md").read_text()
    head = readme[:800]
    assert "make run" in head and "make test" in head


def test_runs_folder_is_ignored_except_readme():
    ignored = subprocess.run(["git", "check-ignore", "-q", "runs/2026-01-01T000000Z_x_heuristic/manifest.json"],
                             cwd=ROOT)
    kept = subprocess.run(["git", "check-ignore", "-q", "runs/README.md"], cwd=ROOT)
    assert ignored.returncode == 0 and kept.returncode == 1
    assert (ROOT / "runs" / "README.md").exists()


def test_schema_cli_prints_json_schema():
    out = subprocess.run([sys.executable, "-m", "axon_eval", "schema"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    import json
    schema = json.loads(out)
    assert schema["title"].startswith("axon_eval captured turn")
    assert "steps" in schema["properties"]
