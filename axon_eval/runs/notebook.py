"""Notebook runs: execute a parameterised notebook with papermill into a new dated run folder.

``run_notebook("notebooks/01_evaluate.ipynb", {"limit": 8})``:

1. reads the notebook's ``parameters`` cell and checks what it is given before anything is written
   (:func:`validate_parameters`): a name the cell does not define is an error listing the valid ones
   (``UnknownParameterError``); a value of the wrong type for the cell's default
   (``ParameterValueError``); an input file or run folder a parameter names that does not exist
   (``FileNotFoundError``); a judge spec or rubric that does not resolve (``SpecError`` / ``ValueError``);
   an evidence file without a valid turn (``NoValidTurnsError``). The CLI turns each into one line on
   stderr and exit 2 (5 for the evidence without a valid turn), with no run folder;
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

Ctrl-C interrupts the kernel (as Jupyter's stop button does), so the cell running stops where it is: a
``runs.evaluate`` call keeps what it judged and records its cost (:mod:`axon_eval.runs.evaluate`); the
runner then marks the manifest ``interrupted``, keeps the partial notebook and raises
:class:`~axon_eval.runs.manifest.RunInterrupted` naming the folder. A second Ctrl-C stops the kernel
without waiting.

The kernel talks to papermill over IPC sockets in a private temporary folder rather than TCP on
localhost, which is both quieter (no "Kernel is running over TCP without encryption" warning on every
run) and closed to other users of the machine.
"""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .io import RUNS_DIR_ENV, atomic_write_text, file_sha256, iso, new_run_dir, to_jsonable, utc_now, write_json
from .manifest import RunInterrupted, RunManifest, exit_code
from .provenance import find_repo_root, package_versions, record_git, redact_secrets, redact_text, relative_to_root

#: Parameters the runner sets itself (a caller may not pass them).
RUNNER_PARAMETERS = ("run_dir",)
PREFERRED_KERNEL = "axon-eval"
FALLBACK_KERNEL = "python3"


#: Kind of a parameter whose default is ``None`` (the default cannot say). Any other ``None`` default is
#: text (a path, a spec or a name). See :func:`parameter_kind`.
NULL_DEFAULT_KINDS: dict[str, str] = {"limit": "int", "row_horizon": "int", "max_cost_usd": "number", "budget_usd_per_1k": "number", "member_runs": "any", "member_judges": "list", "member_costs": "mapping"}
#: What each kind accepts, as the error message says it.
KIND_TEXT: dict[str, str] = {"int": "an integer", "number": "a number", "bool": "true or false", "text": "text",
                             "list": "a list such as [1, 2]", "mapping": "a mapping such as {a: 1}",
                             "any": "any value"}
#: Parameters naming an input file besides those ending in ``_file``; ``*_run`` names a run folder.
FILE_PARAMETERS = ("thresholds",)
#: A notebook defining this parameter grades reference answers -- its judge specs are reference judges
#: (``axon_eval.reference.make_judge``), not evaluation judges (:func:`axon_eval.judges.registry.build_judge`).
REFERENCE_MARKER = "questions_file"
#: Evidence parameters -- the file must hold at least one valid turn (else ``NoValidTurnsError``, exit 5).
EVIDENCE_PARAMETERS = ("turns_file",)
#: Recorded-response parameters -- the file must hold at least one non-blank line.
RESPONSES_PARAMETERS = ("responses_file",)


class ParameterValueError(ValueError):
    """A parameter value of the wrong kind for the notebook's default (one line: name, expected, got)."""


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


#: ``-p`` values that mean ``None`` for a text parameter (YAML's nulls).
NULL_TEXTS = ("null", "Null", "NULL", "~")


def parse_cli_parameters(pairs: Iterable[Sequence[str]], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``[["limit", "8"], ...]`` (from ``-p NAME VALUE``) -> ``{"limit": 8, ...}``.

    With the notebook's ``defaults``, a text parameter (:func:`parameter_kind`) keeps the text as typed
    (``-p run_name 2024`` is ``"2024"``, ``-p rubric 1.10`` is ``"1.10"``), except :data:`NULL_TEXTS`,
    which are ``None``; every other value is a YAML scalar (:func:`parse_value`).
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        name, value = pair
        if defaults is not None and name in defaults and parameter_kind(name, defaults[name])[0] == "text":
            out[name] = None if value in NULL_TEXTS else value
        else:
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


def parameter_kind(name: str, default: Any) -> tuple[str, bool]:
    """``(kind, nullable)`` of a notebook parameter from its default value.

    ``bool`` -> ``bool``; ``int`` -> ``int``; ``float`` -> ``number`` (an integer is accepted); ``str`` ->
    ``text`` (``null`` accepted: ``labels_file: null`` means "none"); a list -> ``list``; a dict ->
    ``mapping``; ``None`` -> :data:`NULL_DEFAULT_KINDS` by name, else ``text``, and nullable; a default
    that is not a literal (kept as its source text by :func:`notebook_parameters`) is text.
    """
    if default is None:
        return NULL_DEFAULT_KINDS.get(name, "text"), True
    if isinstance(default, bool):
        return "bool", False
    if isinstance(default, int):
        return "int", False
    if isinstance(default, float):
        return "number", False
    if isinstance(default, str):
        return "text", True
    if isinstance(default, list | tuple):
        return "list", False
    if isinstance(default, dict):
        return "mapping", False
    return "any", True


def _coerce(notebook: str | Path, name: str, value: Any, default: Any) -> Any:
    kind, nullable = parameter_kind(name, default)
    if value is None and (nullable or kind == "any"):
        return None
    ok = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "text": lambda v: isinstance(v, str),
        "list": lambda v: isinstance(v, list),
        "mapping": lambda v: isinstance(v, dict),
        "any": lambda v: True,
    }[kind]
    if ok(value):
        return value
    if kind == "text" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # a YAML file's ``run_name: 2024``
    expected = KIND_TEXT[kind] + (" or null" if nullable else "")
    raise ParameterValueError(f"parameter {name} of {Path(notebook).name} must be {expected} (its default is "
                              f"{default!r}), got {value!r}")


def check_parameter_types(notebook: str | Path, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with every value checked against the kind of its default (:func:`parameter_kind`); numbers
    given for a text parameter become text. Raises :class:`ParameterValueError` naming the parameter, the
    expected kind and the value."""
    return {name: _coerce(notebook, name, value, defaults.get(name)) for name, value in given.items()}


def _under(root: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else root / p


#: ``check_judge(spec, reference)`` raises when ``spec`` names no judge; ``reference`` is True in a notebook
#: that grades reference answers (:data:`REFERENCE_MARKER`), whose specs are reference judges.
JudgeCheck = Callable[[str, bool], None]


def check_evaluation_judge(spec: str, reference: bool) -> None:
    """The default :data:`JudgeCheck`: build the evaluation judge a spec names (API judges open no connection
    when built), so an unknown spec is a usage error before the kernel starts; a missing API key raises
    ``MissingApiKey`` here too. Reference judges live above the run layer, so a reference notebook's spec
    is checked only by a caller that passes one (the CLI passes ``axon_eval.cli.runs.check_judge``);
    here it is left to the notebook, which raises the same error inside the kernel."""
    if reference:
        return
    from ..judges import build_judge

    build_judge(spec)  # SDK clients are made on first use, so this one opened nothing to close


def check_inputs(notebook: str | Path, effective: Mapping[str, Any], root: Path,
                 check_judge: JudgeCheck | None = None) -> None:
    """Check what the parameters name, relative to the repository root ``root`` (the kernel's working
    directory): ``*_file`` and :data:`FILE_PARAMETERS` must be files; ``*_run`` run folders (holding
    ``manifest.json``); evidence (:data:`EVIDENCE_PARAMETERS`) must hold a valid turn and recorded
    responses a line; ``judge``/``*_judge`` must be judge specs (``check_judge``, default
    :func:`check_evaluation_judge`); ``rubric``/``*_rubric`` must resolve.
    ``None`` means "none" and is not checked."""
    from ..evidence import InvalidTurn, describe_invalid_lines, invalid_lines, iter_turns
    from .manifest import NoValidTurnsError

    reference = REFERENCE_MARKER in effective
    for name, value in effective.items():
        if name in RUNNER_PARAMETERS or not isinstance(value, str):
            continue
        if name.endswith("_file") or name in FILE_PARAMETERS:
            path = _under(root, value)
            if not path.is_file():
                looked = "" if Path(value).is_absolute() else f" (looked at {path})"
                what = "is a directory; expected a file" if path.is_dir() else "does not exist"
                raise FileNotFoundError(f"parameter {name}: file {value} {what}{looked}")
            if name in EVIDENCE_PARAMETERS:  # read up to the first valid turn, as evaluate does
                invalid: list[InvalidTurn] = []
                for item in iter_turns(path):
                    if not isinstance(item, InvalidTurn):
                        break
                    invalid.append(item)
                else:
                    raise NoValidTurnsError(value, len(invalid_lines(invalid)), describe_invalid_lines(invalid))
            if name in RESPONSES_PARAMETERS and not path.read_text(encoding="utf-8", errors="replace").strip():
                raise NoValidTurnsError(value, 0)
        elif name.endswith("_run"):
            folder = _under(root, value)
            if not (folder / "manifest.json").is_file():
                raise FileNotFoundError(f"parameter {name}: {value} is not a run folder (no manifest.json in {folder})")
        elif name == "judge" or name.endswith("_judge"):
            (check_judge or check_evaluation_judge)(value, reference)
        elif name == "rubric" or name.endswith("_rubric"):
            from ..rubric import Rubric

            candidate = _under(root, value)
            Rubric.resolve(candidate if (value.endswith((".yaml", ".yml")) or candidate.exists()) else value)


def validate_parameters(notebook: str | Path, given: Mapping[str, Any], *, root: str | Path | None = None,
                        defaults: Mapping[str, Any] | None = None,
                        check_judge: JudgeCheck | None = None) -> dict[str, Any]:
    """Everything :func:`run_notebook` checks before it writes anything (module docstring, step 1):
    names, kinds, then inputs. Returns ``given`` with its values coerced (:func:`check_parameter_types`)."""
    nb = Path(notebook)
    defaults = dict(notebook_parameters(nb) if defaults is None else defaults)
    check_parameters(nb, given, defaults)
    coerced = check_parameter_types(nb, given, defaults)
    base = Path(root).resolve() if root is not None else find_repo_root(nb.resolve())
    check_inputs(nb, {**defaults, **coerced}, base, check_judge)
    return coerced


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


class KernelInterrupter:
    """While a notebook executes (in the main thread), the first Ctrl-C interrupts the kernel instead of
    the runner (the cell stops where it is and its code can keep what it did); the next one is an
    ordinary ``KeyboardInterrupt`` here. ``kernel_manager_class`` is the kernel manager papermill should
    use so the kernel can be found; ``interrupted`` says whether Ctrl-C was pressed."""

    def __init__(self) -> None:
        from jupyter_client import AsyncKernelManager

        managers: list[Any] = []
        self.managers = managers
        self.interrupted = False
        self._previous: Any = None

        class TrackedKernelManager(AsyncKernelManager):  # type: ignore[misc]
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                managers.append(self)

        self.kernel_manager_class = TrackedKernelManager

    def _kernel_pid(self) -> int | None:
        for manager in reversed(self.managers):
            pid = getattr(getattr(manager, "provisioner", None), "pid", None)
            if pid:
                return int(pid)
        return None

    def _on_sigint(self, signum: int, frame: Any) -> None:
        pid = self._kernel_pid()
        if self.interrupted or pid is None:
            raise KeyboardInterrupt
        self.interrupted = True
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the next Ctrl-C stops the runner
        try:
            os.killpg(os.getpgid(pid), signal.SIGINT)  # the kernel runs in its own session
        except OSError:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGINT)

    def __enter__(self) -> KernelInterrupter:
        if threading.current_thread() is threading.main_thread() and hasattr(os, "killpg"):
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


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
    check_judge: JudgeCheck | None = None,
) -> NotebookRun:
    """Execute ``notebook`` into a new run folder; see the module docstring.

    ``parameters`` override those of ``params_files`` (YAML, merged in order). ``out_dir`` is the parent
    of the run folder (default ``$AXON_EVAL_RUNS_DIR`` or ``<repo root>/runs``); ``cwd`` the kernel's
    working directory (default: the repository root found above the notebook). ``name`` defaults to the
    ``run_name`` parameter, else the notebook's file stem; the judge slug comes from the ``judge``
    parameter when the notebook has one. ``check_judge`` checks judge specs before anything is written
    (default :func:`check_evaluation_judge`).

    Returns a :class:`NotebookRun`; a failed execution returns ``status="failed"`` (the partial notebook
    and the manifest marked failed are kept). Raises before creating anything what
    :func:`validate_parameters` raises (unknown name, wrong kind, missing input, bad judge spec or
    rubric, evidence without a valid turn), and ``FileNotFoundError`` when the notebook is missing.
    """
    import papermill

    nb_src = Path(notebook).resolve()
    if not nb_src.is_file():
        raise FileNotFoundError(f"notebook {notebook} not found")
    defaults = notebook_parameters(nb_src)
    root = Path(cwd).resolve() if cwd is not None else find_repo_root(nb_src)
    given = validate_parameters(nb_src, {**load_params_files(params_files), **dict(parameters or {})},
                                root=root, defaults=defaults, check_judge=check_judge)
    effective = {**defaults, **given}

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

    # paths are recorded relative to the repository root; a notebook outside any repository (no
    # pyproject.toml above it) has none, so its paths are recorded absolute and stay findable
    record_root = root if (root / "pyproject.toml").exists() else None
    rel = lambda q: relative_to_root(q, record_root)  # noqa: E731 - a tiny local alias
    effective["run_dir"] = rel(run_dir)  # the kernel gets the absolute folder; the record stays relative
    params_record = redact_secrets(to_jsonable(effective))
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
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="axon-kernel-") as socket_dir, KernelInterrupter() as stopper:
        try:
            papermill.execute_notebook(
                str(nb_src), str(executed), parameters={**given, "run_dir": str(run_dir)}, kernel_name=kernel,
                cwd=str(root), progress_bar=progress, start_timeout=start_timeout, log_output=False,
                config=_kernel_config(socket_dir), kernel_manager_class=stopper.kernel_manager_class,
            )
        except KeyboardInterrupt:
            error, error_class, interrupted = "KeyboardInterrupt: execution interrupted", "KeyboardInterrupt", True
        except Exception as exc:  # any execution failure: keep the partial notebook, mark the run failed
            error, error_class = _execution_error(exc)
        # Ctrl-C reached the kernel and stopped a cell (one pressed while the kernel was idle changes nothing)
        interrupted = interrupted or (stopper.interrupted and error is not None)

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

    # The notebook may have replaced the manifest (evaluate writes its own); update what is there. One it
    # left unreadable is replaced by the runner's own record, and the run says so.
    try:
        manifest = RunManifest.read(run_dir)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        warnings.append(f"the manifest.json the notebook left could not be read ({type(exc).__name__}: {first}); "
                        "it was replaced by the runner's record, so what the notebook recorded (counts, judge, "
                        "inputs) is missing here")
    info = dict(manifest.notebook or notebook_info)
    info.update({"source": rel(nb_src), "source_sha256": source_sha,
                 "executed": rel(executed) if executed.exists() else None,
                 "html": rel(exported) if exported else None, "kernel": kernel})
    manifest.notebook = info
    manifest.input_files = {rel(nb_src): source_sha, **manifest.input_files}
    manifest.warnings = [*manifest.warnings, *warnings]
    if interrupted:
        manifest.status, manifest.failure = "interrupted", None
        if manifest.error is None:
            manifest.error = "interrupted (Ctrl-C)"
    elif error is not None:
        manifest.status = "failed"
        manifest.failure = "no_valid_turns" if error_class == "NoValidTurnsError" else "error"
        manifest.error = redact_secrets(error if manifest.error is None else f"{error}; {manifest.error}")
    elif manifest.status == "running":
        manifest.status = "complete"
    manifest.ended_at = iso(utc_now())
    manifest.write(run_dir)
    if interrupted:
        raise RunInterrupted.from_manifest(run_dir, manifest)
    return NotebookRun(run_dir=run_dir, notebook_path=executed, html_path=exported, status=manifest.status,
                       error=manifest.error, manifest=manifest)
