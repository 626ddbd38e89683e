"""Provenance facts a manifest records: secrets redaction, package versions, git state, relative paths.

Redaction: before anything is written (params, manifest, executed notebooks, errors), every value of an
environment variable whose *name* looks like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``; values of 8 characters or more) is replaced by
``<redacted>``, and so are the credentials of any URL (``scheme://user:password@host`` ->
``scheme://<redacted>@host``, and every query-string value: :func:`axon_eval.urls.redact_urls`).

Package versions: every distribution the installed ``axon-eval`` requires (read from its metadata, i.e.
the ``dependencies`` of ``pyproject.toml``), plus ``axon_eval`` itself; ``None`` when not installed.

Git: commit, dirty flag and, for a dirty tree, the diff against ``HEAD`` plus the list of untracked files
(saved as ``git.diff`` in the run folder so the run can be reproduced from the commit and the diff).

Judges: the spec a judge was built from (:func:`judge_label`), what the manifest records of every API
judge inside it (:func:`judge_provenance`), and the prompt versions it uses that are not the rubric's
(:func:`prompt_mismatches`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..urls import redact_urls
from .io import atomic_write_text, to_jsonable

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
_MIN_SECRET_LEN = 8
REDACTED = "<redacted>"
#: Distribution name of this package.
DIST_NAME = "axon-eval"


def _secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if _SECRET_NAME.search(k) and v and len(v) >= _MIN_SECRET_LEN},
                  key=len, reverse=True)


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with secret environment values and URL credentials replaced by ``<redacted>``."""
    for s in (_secret_values() if secrets is None else secrets):
        if s in text:
            text = text.replace(s, REDACTED)
    return redact_urls(text)


def redact_secrets(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of ``value`` (JSON-like) with every secret removed (see the module docstring)."""
    secrets = _secret_values(environ)

    def scrub(v: Any) -> Any:
        if isinstance(v, str):
            return redact_text(v, secrets)
        if isinstance(v, dict):
            return {scrub(k): scrub(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [scrub(x) for x in v]
        return v

    return scrub(value)


def _requirement_name(spec: str) -> str | None:
    """``'pandas>=2.1'`` -> ``'pandas'``; extras-only requirements (``; extra == "dev"``) -> ``None``."""
    if "extra ==" in spec.replace("'", '"').split(";", 1)[-1] and ";" in spec:
        return None
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._\-]*)", spec)
    return m.group(1) if m else None


def _declared_dependencies() -> list[str]:
    """``project.dependencies`` of the checkout's ``pyproject.toml`` (the source of truth when the package
    runs from its repository, even if the installed metadata is older), else of the installed metadata."""
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == DIST_NAME:
            return list(project.get("dependencies", []))
    except (OSError, ValueError):
        pass
    try:
        return list(metadata.requires(DIST_NAME) or [])
    except metadata.PackageNotFoundError:
        return []


@lru_cache(maxsize=1)
def recorded_packages() -> tuple[str, ...]:
    """``axon_eval`` and every runtime dependency declared in ``pyproject.toml``."""
    names = [n for n in (_requirement_name(r) for r in _declared_dependencies()) if n]
    return ("axon_eval", *sorted(set(names), key=str.lower))


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Installed versions of :func:`recorded_packages` (``None`` when not installed)."""
    out: dict[str, str | None] = {}
    for name in recorded_packages():
        dist = DIST_NAME if name == "axon_eval" else name
        try:
            out[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git(where: Path, *args: str, timeout: float = 60) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=timeout,
                          check=True).stdout


def git_info(path: str | Path | None = None, *, with_diff: bool = False) -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool, "root": path}`` of the repository holding ``path`` (default: this
    package); with ``with_diff`` and a dirty tree also ``"diff"``: ``git diff HEAD`` plus the untracked
    files' names.

    ``dirty`` counts modified, staged and untracked files. Outside a repository, or without git,
    commit and dirty are ``"unknown"``.
    """
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = _git(where, "rev-parse", "HEAD", timeout=20).strip()
        root = _git(where, "rev-parse", "--show-toplevel", timeout=20).strip()
        status = _git(where, "status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": "unknown", "root": None}
    out: dict[str, Any] = {"commit": commit or "unknown", "dirty": bool(status.strip()), "root": root or None}
    if with_diff and out["dirty"]:
        try:
            diff = _git(where, "diff", "HEAD", "--binary")
            untracked = _git(where, "ls-files", "--others", "--exclude-standard").split()
        except (OSError, subprocess.SubprocessError) as exc:
            diff, untracked = f"# git diff failed: {exc}\n", []
        listing = "".join(f"# untracked: {u}\n" for u in untracked)
        out["diff"] = (listing + diff) if listing or diff else ""
    return out


def find_repo_root(start: str | Path) -> Path:
    """The nearest folder at or above ``start`` holding ``pyproject.toml`` (else ``start``'s folder)."""
    p = Path(start).resolve()
    here = p if p.is_dir() else p.parent
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").exists():
            return candidate
    return here


def repository_root() -> Path:
    """The repository the user works in: the nearest folder holding ``pyproject.toml`` at or above the
    working directory, else the one above this package, else the working directory. Paths recorded in
    manifests are relative to it."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        root = find_repo_root(start)
        if (root / "pyproject.toml").exists():
            return root
    return Path.cwd().resolve()


def relative_to_root(path: str | Path, root: str | Path | None) -> str:
    """``path`` relative to ``root`` when it lies inside it (POSIX separators), else absolute."""
    p = Path(path).resolve()
    if root is not None:
        try:
            return p.relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return str(p)


def resolve_recorded(recorded: str, *, root: str | Path | None, workdir: str | Path | None = None) -> Path:
    """Where a path recorded in a manifest is now: absolute as is, else under ``root`` (the repository
    root), else under the old ``workdir`` (manifests written before paths were root-relative)."""
    p = Path(recorded)
    if p.is_absolute():
        return p
    for base in (root, workdir):
        if base is not None and (Path(base) / p).exists():
            return Path(base) / p
    return (Path(root) / p) if root is not None else p


def record_git(folder: Path, manifest: Any, root: Path | None) -> None:
    """Git commit and dirty flag into ``manifest`` (a :class:`~.manifest.RunManifest`); a dirty tree's
    diff into ``folder/git.diff`` and a warning (in the manifest and on stderr)."""
    git = git_info(root, with_diff=True)
    manifest.git_commit, manifest.git_dirty = git["commit"], git["dirty"]
    if git.get("dirty") is True:
        atomic_write_text(folder / "git.diff", git.get("diff") or "")
        manifest.git_diff = "git.diff"
        message = (f"the working tree is dirty: results are not reproducible from commit {git['commit'][:12]} "
                   "alone; its diff is saved as git.diff")
        manifest.warnings.append(message)
        print(f"WARNING: {message}", file=sys.stderr)


def judge_label(judge: Any) -> str:
    """The spec a judge was built from, else its id (used in folder names)."""
    return str(getattr(judge, "spec", None) or judge.judge_id)


def judge_provenance(judge: Any) -> list[dict[str, Any]]:
    """What the manifest records of every API judge inside ``judge``
    (:func:`axon_eval.judges._llm.judge_provenance`), made JSON-safe and scrubbed of secrets."""
    from ..judges._llm import judge_provenance as walk

    return [redact_secrets(to_jsonable(entry)) for entry in walk(judge)]


def prompt_mismatches(provenance: Sequence[Mapping[str, Any]], rubric: Any) -> list[str]:
    """The prompt versions (identities ``<name>+<hash>``) in a judge's ``provenance``
    (:func:`judge_provenance`: one entry per language-model judge inside it) whose name is not the
    ``prompt_version`` of ``rubric`` (a :class:`~axon_eval.rubric.Rubric`; the free-text form of the
    rubric's prompt counts as the rubric's; a prompt read from a file, ``file:<stem>``, never does); empty
    for code judges."""
    from ..judges.prompt import FREE_TEXT_SUFFIX, prompt_name

    versions = {str(p.get("prompt_version")) for p in provenance if p.get("prompt_version")}
    return sorted(v for v in versions if prompt_name(v).removesuffix(FREE_TEXT_SUFFIX) != rubric.prompt_version)
