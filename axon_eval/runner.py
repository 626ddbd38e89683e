"""Notebook runs: execute a parameterised notebook with papermill into a new dated run folder.

``run_notebook("notebooks/01_evaluate.ipynb", {"limit": 8})``:

1. reads the notebook's ``parameters`` cell (``papermill.inspect_notebook``); a parameter name that the
   cell does not define is an error listing the valid ones (``UnknownParameterError``);
2. creates ``<out>/<UTC date>T<time>Z_<run_name>_<judge>/`` (``out``: argument, ``$AXON_EVAL_RUNS_DIR``
   or ``<repo>/runs``) and writes ``params.json`` and a ``manifest.json`` marked ``running``;
3. executes the notebook with the kernel ``axon-eval`` when registered (else ``python3``), working
   directory = the repository root, with ``run_dir`` set to the new folder so the notebook writes its
   results and figures there; the executed notebook is saved into the folder after every cell, so a
   failed execution keeps its partial output;
4. scrubs secrets (secret-looking environment values, URL credentials) from the executed notebook,
   which papermill writes the raw parameters into, and exports it to HTML with the code hidden;
5. updates the manifest: notebook paths (relative to the repository root), end time and the status.
   A notebook that called ``runs.evaluate`` keeps the status evaluate gave (``complete``, ``partial``
   or ``failed``); :attr:`NotebookRun.exit_code` maps it to the CLI's exit codes
   (:mod:`axon_eval.runs.manifest`).

The kernel talks to papermill over IPC sockets in a private temporary folder rather than TCP on
localhost, which is both quieter (no "Kernel is running over TCP without encryption" warning on every
run) and closed to other users of the machine.
"""

from __future__ import annotations

import ast
import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .runs import (
    RUNS_DIR_ENV,
    RunManifest,
    atomic_write_text,
    exit_code,
    file_sha256,
    iso,
    new_run_dir,
    package_versions,
    redact_secrets,
    to_jsonable,
    utc_now,
    write_json,
)
from .runs.evaluate import record_git
from .runs.provenance import find_repo_root, redact_text, relative_to_root

#: Parameters the runner sets itself (a caller may not pass them).
RUNNER_PARAMETERS = ("run_dir",)
PREFERRED_KERNEL = "axon-eval"
FALLBACK_KERNEL = "python3"


class UnknownParameterError(ValueError):
    """A parameter name the notebook's ``parameters`` cell does not define."""

    def __init__(self, notebook: str | Path, unknown: Sequence[str], valid: Sequence[str]) -> None:
        self.unknown = list(unknown)
        self.valid = list(valid)
        settable = [v for v in valid if v not in RUNNER_PARAMETERS]
        super().__init__(f"unknown parameter(s) {self.unknown} for {notebook}; valid parameters: "
                         f"{settable or 'none (the notebook has no parameters cell)'}")


@dataclass
class NotebookRun:
    """Outcome of :func:`run_notebook`. ``status`` is ``complete`` or ``failed`` (then ``error`` says why)."""

    run_dir: Path
    notebook_path: Path
    html_path: Path | None
    status: str
    error: str | None
    manifest: RunManifest

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    def exit_code(self, *, strict: bool = False) -> int:
        """The CLI exit code of this run (table in :mod:`axon_eval.runs.manifest`)."""
        return exit_code(self.manifest, strict=strict)


# -- parameters ---------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A ``-p`` value parsed as a YAML scalar (``8`` -> 8, ``null`` -> None, ``true`` -> True); text that
    is not valid YAML stays a string."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_cli_parameters(pairs: Iterable[Sequence[str]]) -> dict[str, Any]:
    """``[["limit", "8"], ...]`` (from ``-p NAME VALUE``) -> ``{"limit": 8, ...}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, value = pair
        out[name] = parse_value(value)
    return out


def load_params_files(files: Iterable[str | Path]) -> dict[str, Any]:
    """Merge YAML (or JSON) parameter files in order (later files win). Each must hold a mapping.

    Parameters the runner sets itself (``run_dir``) are ignored, so a run folder's own ``params.json``
    can be given to repeat the run.
    """
    merged: dict[str, Any] = {}
    for f in files:
        p = Path(f)
        if not p.is_file():
            raise FileNotFoundError(f"parameter file {p} not found")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ValueError(f"parameter file {p} is not valid YAML/JSON: {exc}") from None
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ValueError(f"parameter file {p} must hold a mapping of name: value, got {type(data).__name__}")
        merged.update({k: v for k, v in data.items() if k not in RUNNER_PARAMETERS})
    return merged


def notebook_parameters(notebook: str | Path) -> dict[str, Any]:
    """The parameters a notebook's ``parameters`` cell defines, with their default values.

    The cell is parsed with :mod:`ast` (papermill's own line-based inspection skips an assignment whose
    value contains ``=``, e.g. ``judge = "simulate(heuristic, sd=1)"``). Defaults are the literal values
    (``ast.literal_eval``); a default that is not a literal is kept as its source text. A notebook without
    a ``parameters``-tagged cell has none.
    """
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    out: dict[str, Any] = {}
    for cell in cells[:1]:
        source = cell.source
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise ValueError(f"{notebook}: the parameters cell is not valid Python: {exc}") from None
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        out[target.id] = ast.literal_eval(node.value)
                    except (ValueError, SyntaxError, TypeError):
                        out[target.id] = ast.get_source_segment(source, node.value)
    return out


def check_parameters(notebook: str | Path, given: Mapping[str, Any], valid: Iterable[str]) -> None:
    """Raise :class:`UnknownParameterError` for any name in ``given`` not in ``valid`` or set by the runner."""
    valid = list(valid)
    unknown = sorted(k for k in given if k not in valid or k in RUNNER_PARAMETERS)
    if unknown:
        raise UnknownParameterError(notebook, unknown, valid)


# -- environment ----------------------------------------------------------------------------------------
def default_kernel() -> str:
    """``axon-eval`` when that Jupyter kernel is registered, else ``python3``."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception:  # no jupyter_client or a broken kernel path: use the standard kernel
        return FALLBACK_KERNEL
    return PREFERRED_KERNEL if PREFERRED_KERNEL in specs else FALLBACK_KERNEL


def export_notebook_html(notebook_path: str | Path, html_path: str | Path | None = None) -> Path:
    """Export an executed notebook to HTML with the code cells hidden; returns the HTML path."""
    import nbformat
    from nbconvert import HTMLExporter

    nb_path = Path(notebook_path)
    out = Path(html_path) if html_path is not None else nb_path.with_suffix(".html")
    nb = nbformat.read(nb_path, as_version=4)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _resources = exporter.from_notebook_node(nb)
    atomic_write_text(out, body)
    return out


def _execution_error(exc: BaseException) -> tuple[str, str]:
    """``(message, exception class name)`` of a failed execution."""
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        return f"{exc.ename}: {exc.evalue} (cell execution count {exc.exec_count})", str(exc.ename)
    return f"{type(exc).__name__}: {exc}", type(exc).__name__


def redact_notebook_file(path: str | Path) -> bool:
    """Scrub secrets from an executed notebook in place (papermill records the raw parameters in its
    injected cell and metadata); returns whether anything was replaced."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    clean = redact_text(text)
    if clean != text:
        atomic_write_text(p, clean)
        return True
    return False


def _kernel_config(socket_dir: str) -> Any:
    """Kernel manager settings: IPC sockets under ``socket_dir`` (see the module docstring)."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(socket_dir, "kernel")}})


# -- the run ----------------------------------------------------------------------------------------------
def run_notebook(
    notebook: str | Path,
    parameters: Mapping[str, Any] | None = None,
    params_files: Iterable[str | Path] = (),
    *,
    out_dir: str | Path | None = None,
    name: str | None = None,
    kernel_name: str | None = None,
    cwd: str | Path | None = None,
    export_html: bool = True,
    progress: bool = False,
    start_timeout: int = 120,
) -> NotebookRun:
    """Execute ``notebook`` into a new run folder; see the module docstring.

    ``parameters`` override those of ``params_files`` (YAML, merged in order). ``out_dir`` is the parent
    of the run folder (default ``$AXON_EVAL_RUNS_DIR`` or ``<repo root>/runs``); ``cwd`` the kernel's
    working directory (default: the repository root found above the notebook). ``name`` defaults to the
    ``run_name`` parameter, else the notebook's file stem; the judge slug comes from the ``judge``
    parameter when the notebook has one.

    Returns a :class:`NotebookRun`; a failed execution returns ``status="failed"`` (the partial notebook
    and the manifest marked failed are kept). Raises :class:`UnknownParameterError` before creating
    anything when a parameter is unknown, ``FileNotFoundError`` when the notebook is missing.
    """
    import papermill

    nb_src = Path(notebook).resolve()
    if not nb_src.is_file():
        raise FileNotFoundError(f"notebook {notebook} not found")
    defaults = notebook_parameters(nb_src)
    given = {**load_params_files(params_files), **dict(parameters or {})}
    check_parameters(nb_src, given, defaults)
    effective = {**defaults, **given}

    root = Path(cwd).resolve() if cwd is not None else find_repo_root(nb_src)
    if out_dir is not None:
        out = Path(out_dir)
    elif os.environ.get(RUNS_DIR_ENV):
        out = Path(os.environ[RUNS_DIR_ENV])
    else:
        out = root / "runs"
    out = out if out.is_absolute() else (root / out)
    run_name = name or (str(effective["run_name"]) if effective.get("run_name") else nb_src.stem)
    judge = effective.get("judge") if isinstance(effective.get("judge"), str) else None
    kernel = kernel_name or default_kernel()
    started = utc_now()
    run_dir = new_run_dir(out, run_name, judge, now=started).resolve()
    executed = run_dir / nb_src.name
    html_path = executed.with_suffix(".html")

    effective["run_dir"] = str(run_dir)
    params_record = redact_secrets(to_jsonable(effective))
    rel = lambda q: relative_to_root(q, root)  # noqa: E731 - a tiny local alias
    source_sha = file_sha256(nb_src)
    notebook_info = {"source": rel(nb_src), "source_sha256": source_sha, "executed": rel(executed),
                     "html": None, "kernel": kernel, "parameters_given": redact_secrets(to_jsonable(given))}
    manifest = RunManifest(
        run_id=run_dir.name, status="running", kind="notebook", name=run_name, judge_spec=redact_secrets(judge),
        packages=package_versions(), input_files={rel(nb_src): source_sha}, params=params_record,
        seed=effective.get("seed") if isinstance(effective.get("seed"), int) else None,
        started_at=iso(started), notebook=notebook_info,
    )
    record_git(run_dir, manifest, root)
    write_json(run_dir / "params.json", params_record)
    manifest.write(run_dir)
    (run_dir / "figures").mkdir(exist_ok=True)

    error: str | None = None
    error_class: str | None = None
    interrupted: BaseException | None = None
    with tempfile.TemporaryDirectory(prefix="axon-kernel-") as socket_dir:
        try:
            papermill.execute_notebook(
                str(nb_src), str(executed), parameters={**given, "run_dir": str(run_dir)}, kernel_name=kernel,
                cwd=str(root), progress_bar=progress, start_timeout=start_timeout, log_output=False,
                config=_kernel_config(socket_dir),
            )
        except KeyboardInterrupt as exc:
            error, error_class, interrupted = "KeyboardInterrupt: execution interrupted", "KeyboardInterrupt", exc
        except Exception as exc:  # any execution failure: keep the partial notebook, mark the run failed
            error, error_class = _execution_error(exc)

    warnings: list[str] = []
    exported: Path | None = None
    if executed.exists():
        try:
            if redact_notebook_file(executed):
                warnings.append("secrets were scrubbed from the executed notebook")
        except Exception as exc:  # never keep an unscrubbed notebook: remove it and say so
            executed.unlink(missing_ok=True)
            warnings.append(f"the executed notebook could not be scrubbed of secrets and was removed: {exc}")
    if export_html and executed.exists():
        try:
            exported = export_notebook_html(executed, html_path)
        except Exception as exc:  # the run's result stands; the missing HTML is recorded
            warnings.append(f"HTML export failed: {type(exc).__name__}: {exc}")

    # The notebook may have replaced the manifest (evaluate writes its own); update what is there.
    with contextlib.suppress(Exception):
        manifest = RunManifest.read(run_dir)
    info = dict(manifest.notebook or notebook_info)
    info.update({"source": rel(nb_src), "source_sha256": source_sha,
                 "executed": rel(executed) if executed.exists() else None,
                 "html": rel(exported) if exported else None, "kernel": kernel})
    manifest.notebook = info
    manifest.input_files = {rel(nb_src): source_sha, **manifest.input_files}
    manifest.warnings = [*manifest.warnings, *warnings]
    if error is not None:
        manifest.status = "failed"
        manifest.failure = "no_valid_turns" if error_class == "NoValidTurnsError" else "error"
        manifest.error = redact_secrets(error if manifest.error is None else f"{error}; {manifest.error}")
    elif manifest.status == "running":
        manifest.status = "complete"
    manifest.ended_at = iso(utc_now())
    manifest.write(run_dir)
    if interrupted is not None:
        raise interrupted
    return NotebookRun(run_dir=run_dir, notebook_path=executed, html_path=exported, status=manifest.status,
                       error=manifest.error, manifest=manifest)
