"""README.md and docs/: a short user's guide, no development log, and no stale command.

* Every fenced block whose info string is ``bash runnable`` (README.md and every page under docs/) is
  executed, offline, in a fresh folder holding the repository's ``data/``, ``notebooks/`` and ``.venv``,
  with the run folders and the verdict cache inside it, no API key and the virtual environment not on
  ``PATH``: as in a newcomer's fresh shell after ``make run``, the block activates it (``source
  .venv/bin/activate``) or calls ``.venv/bin/...``, or it fails. A block may leave files only under the
  folders git ignores for them (``runs/``, ``tmp/``): any other file it writes would mark every later run
  of a clone ``git_dirty`` (docs/architecture.md, "Runnable command blocks").
* Every other ``python -m axon_eval ...`` line, in any block or inline code span, is checked without
  running it: the verb and each option exist in the parser, every ``python -m`` module exists, and a
  notebook run names a real notebook, parameter file and parameters.
* README.md stays under 300 lines and, like docs/, names no issue, commit or file outside the repository.

The Sphinx build itself runs in ``make test`` (``make docs``), with warnings as errors.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
RUNNABLE = "runnable"
BLOCK_TIMEOUT_S = 420


def pages() -> list[Path]:
    """README.md and every Markdown page of the documentation (not the build output)."""
    found = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "generated" not in p.parts)
    return [README, *found]


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    info: str
    text: str

    @property
    def runnable(self) -> bool:
        return RUNNABLE in self.info.split()[1:]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file; a fence closes only with the same character, at least as
    long, alone on its line (so a four-backtick block may show a three-backtick one)."""
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m["fence"], m["info"].strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        out.append(Block(path, i + 1, info, "\n".join(body) + "\n"))
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def runnable_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.runnable]


# ------------------------------------------------------------------------------------------------
# The README is a short guide, and no page keeps a development log
# ------------------------------------------------------------------------------------------------
def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= 300, f"README.md has {n} lines; the guide keeps at most 300 (the rest belongs in docs/)"


#: a 7-40 character hex word with at least one letter and one digit; a prompt hash after "+" (the judge
#: id notation judge_v1+<hash>) is not a commit
COMMIT = re.compile(r"(?<![+\w])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?!\w)")
LOG_WORDS = [
    (re.compile(r"\bissues?\s*#?\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w&])#\d{1,5}\b"), "an issue or pull-request number"),
    (re.compile(r"DESIGN"), "a reference to a design file outside the repository"),
    (re.compile(r"\.\./shared|/work/|shared/seeds"), "a path outside the repository"),
    (re.compile(r"§"), "a section of a document outside the repository"),
    (re.compile(r"the last stop|this session|git worktree", re.I), "development-log talk"),
]


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_development_log(path):
    text = path.read_text()
    problems = [f"line {text[:m.start()].count(chr(10)) + 1}: commit-like hash {m.group()!r}"
                for m in COMMIT.finditer(text)]
    for pattern, what in LOG_WORDS:
        problems += [f"line {text[:m.start()].count(chr(10)) + 1}: {what}: {m.group()!r}"
                     for m in pattern.finditer(text)]
    assert not problems, f"{path.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_checks_catch_what_they_should():
    assert COMMIT.search("fixed in 1e6ebb0") and COMMIT.search("at 53ffe5b,")
    assert not COMMIT.search("judge_v1+5d297cf15da8") and not COMMIT.search("1000000 rows")
    assert any(p.search("issue 22's checks") for p, _ in LOG_WORDS)
    assert any(p.search("DESIGN §4") for p, _ in LOG_WORDS)
    assert not any(p.search("rows [1, 2] & 3") for p, _ in LOG_WORDS)


def test_readme_links_resolve():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    targets += re.findall(r"`(docs/[^`\s]+\.(?:md|yml))`", text)
    assert targets
    for target in targets:
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README.md links {target}, which does not exist"


def test_readme_has_the_guide_sections():
    text = README.read_text()
    head = text[:800]
    assert "make run" in head and "make test" in head
    for needed in ("First paid run checklist", "--max-cost-usd", "--batch", "prices.yaml",
                   "fake-judge-server", "three steps"):
        assert needed in text, needed
    table = {int(m) for m in re.findall(r"^\| (\d\d) ", text, re.M)}
    assert table == set(range(1, 12)), f"the studies table lists {sorted(table)}"


STUDY_PAGES = sorted((DOCS / "studies").glob("[01][0-9]-*.md"))


def test_one_page_per_study():
    numbers = [int(p.name[:2]) for p in STUDY_PAGES]
    assert numbers == list(range(1, 12))
    for page in STUDY_PAGES:
        text = page.read_text()
        notebook = next(iter(sorted((ROOT / "notebooks").glob(f"{page.name[:2]}_*.ipynb"))))
        assert f"notebooks/{notebook.name}" in text, f"{page.name} does not name {notebook.name}"
        for heading in ("## Parameters", "## Command", "## Outputs", "## How to read it"):
            assert heading in text, f"{page.name} lacks {heading}"


def test_documented_study_keys_exist():
    """Every ``study.json`` key a study page lists is written by its notebook or the package."""
    source = "\n".join(p.read_text() for p in (ROOT / "axon_eval").rglob("*.py"))
    for page in STUDY_PAGES:
        text = page.read_text()
        if page.name.startswith("01"):
            continue  # an evaluation writes no study.json
        outputs = text.split("## Outputs", 1)[1].split("## How to read it", 1)[0]
        keys = [k for cell in re.findall(r"^\| (`[^|]+`) \|", outputs, re.M) for k in re.findall(r"`(\w+)`", cell)]
        assert keys, page.name
        notebook = next(iter(sorted((ROOT / "notebooks").glob(f"{page.name[:2]}_*.ipynb")))).read_text()
        for key in keys:
            quoted = (f'"{key}"', f"'{key}'", f'\\"{key}\\"')
            assert any(q in notebook or q in source for q in quoted) or f"{key}=" in source, \
                f"{page.name}: study.json key {key!r} is written nowhere"


# ------------------------------------------------------------------------------------------------
# Every command named anywhere is real
# ------------------------------------------------------------------------------------------------
STOP = {"|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1", "<"}


def command_lines() -> list[tuple[str, str, bool]]:
    """``(where, line, whole)`` of every shell line in every fenced ``bash`` block (continuations joined;
    ``whole``: a complete command) and of every inline code span that starts with ``python -m`` (which
    may name a verb without its required arguments)."""
    out: list[tuple[str, str, bool]] = []
    for b in all_blocks():
        if not b.info.startswith(("bash", "sh", "console")):
            continue
        text = re.sub(r"\\\n\s*", " ", b.text)
        text = re.sub(r"<<'(\w+)'\n.*?\n\1\n", "\n", text, flags=re.S)  # here-documents are data
        out += [(b.id, line, True) for line in text.splitlines() if line.strip()]
    for p in pages():
        for m in re.finditer(r"`(python -m [^`]+)`", p.read_text()):
            out.append((str(p.relative_to(ROOT)), m.group(1), False))
    return out


def _words(line: str) -> list[list[str]]:
    """The simple commands of a shell line, split on pipes, lists and redirections; ``#`` comments dropped."""
    line = re.sub(r"<(?=\w)[^<>\n]*>", "PLACEHOLDER", line)  # a placeholder such as runs/<run> is a word
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        return []
    parts: list[list[str]] = [[]]
    for tok in tokens:
        if tok in STOP or set(tok) <= set(";&|<>"):
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def _placeholder(tok: str) -> bool:
    return "PLACEHOLDER" in tok or "<" in tok or tok.isupper() or "$" in tok or "..." in tok or tok.startswith("[")


def _check_axon_eval(args: list[str], whole: bool = True) -> str | None:
    from axon_eval.cli.main import build_parser

    if not args or args[0] in ("-h", "--help") or _placeholder(args[0]):
        return None
    if args[0] == "fake-judge-server":
        known = {"--port", "--delay", "--lifetime", "--batch-polls", "--batch-seconds", "--max-requests", "--url-file", "--help", "-h"}
        bad = [a for a in args[1:] if a.startswith("-") and a.split("=")[0] not in known]
        return f"unknown fake-judge-server option(s) {bad}" if bad else None
    filled = ["x" if _placeholder(a) else a for a in args]
    parser = build_parser()
    if not whole:  # a mention such as `python -m axon_eval evaluate`: the verb and the options it names
        verbs = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them here
        if args[0] not in verbs:
            return f"no verb {args[0]!r}"
        known = verbs[args[0]]._option_string_actions  # noqa: SLF001
        bad = [a for a in args[1:] if a.startswith("-") and a.split("=")[0] not in known]
        return f"unknown option(s) {bad}" if bad else None
    try:
        import contextlib
        import io

        with contextlib.redirect_stderr(io.StringIO()) as err:
            ns, rest = parser.parse_known_args(filled)
    except SystemExit:
        return f"the parser refuses it: {err.getvalue().strip().splitlines()[-1]}"
    if rest:
        return f"unknown argument(s) {rest}"
    if args[0] == "run":
        return _check_notebook_run(ns, args)
    return None


def _check_notebook_run(ns, args: list[str]) -> str | None:
    sys.path.insert(0, str(DOCS / "_ext"))
    from axon_docs import parameters_of

    if _placeholder(ns.notebook):
        return None
    notebook = ROOT / ns.notebook
    if not notebook.is_file():
        return f"no notebook {ns.notebook}"
    names = {name for name, _, _ in parameters_of(notebook)}
    params_files = getattr(ns, "file", None) or []
    for params_file in params_files if isinstance(params_files, list) else [params_files]:
        if not _placeholder(params_file) and not (ROOT / params_file).is_file():
            return f"no parameter file {params_file}"
    for name, _value in (ns.param or []):
        if name not in names:
            return f"{ns.notebook} has no parameter {name!r}"
    return None


def _check(words: list[str], whole: bool = True) -> str | None:
    while words and re.match(r"^\w+=", words[0]):  # VAR=value before the command
        words = words[1:]
    if not words:
        return None
    if words[0] == "make":
        targets = re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M)
        bad = [w for w in words[1:] if not w.startswith("-") and "=" not in w and w not in targets]
        return f"no make target(s) {bad}" if bad else None
    if words[0] == ".venv/bin/axon-eval":
        return _check_axon_eval(words[1:], whole)
    if words[0] not in ("python", "python3", ".venv/bin/python"):
        return None
    if len(words) >= 3 and words[1] == "-m":
        module = words[2]
        if importlib.util.find_spec(module) is None:
            return f"no module {module}"
        if module == "axon_eval":
            return _check_axon_eval(words[3:], whole)
        return None
    if len(words) >= 2 and words[1].endswith(".py") and not (ROOT / words[1]).is_file():
        return f"no script {words[1]}"
    return None


def test_every_named_command_is_real():
    problems = []
    for where, line, whole in command_lines():
        for words in _words(line):
            problem = _check(words, whole)
            if problem:
                problems.append(f"{where}: {line.strip()}\n    {problem}")
    assert not problems, "stale commands:\n" + "\n".join(problems)


def test_the_command_check_catches_stale_commands():
    assert _check(["python", "-m", "axon_eval.bench_panels"]) == "no module axon_eval.bench_panels"
    assert "refuses" in _check(["python", "-m", "axon_eval", "no-such-verb"])
    assert "unknown argument" in _check(["python", "-m", "axon_eval", "evaluate", "--turns", "t", "--judge", "h",
                                         "--no-such-option"])
    assert "no parameter" in _check(["python", "-m", "axon_eval", "run", "notebooks/01_evaluate.ipynb",
                                     "-p", "no_such_parameter", "1"])
    assert _check(["python", "-m", "axon_eval", "gate", "runs/<run>", "--min-mean-score", "75"]) is None
    assert "no make target" in _check(["make", "no-such-target"])


# ------------------------------------------------------------------------------------------------
# Every runnable block runs
# ------------------------------------------------------------------------------------------------
def test_runnable_blocks_are_bash_and_present():
    found = runnable_blocks()
    assert len(found) >= 10
    assert {b.path for b in found} >= {README, DOCS / "labelling.md", DOCS / "judges.md"}
    for b in found:
        assert b.info.split()[0] == "bash", f"{b.id}: a runnable block must be bash, not {b.info!r}"


#: What the test folder holds before a block runs, and the folders a block may write into: ``runs/`` and
#: ``tmp/`` are ignored by git (.gitignore), ``cache/`` is where this test points the verdict cache.
WORKDIR_GIVEN = {"data", "notebooks", "pyproject.toml", ".venv"}
WRITABLE = {"runs", "tmp", "cache"}
#: How a runnable block uses the environment ``make run`` created.
ACTIVATES = re.compile(r"^\s*(source|\.) \.venv/bin/activate\s*$|\.venv/bin/", re.M)


def _workdir(tmp: Path) -> Path:
    """A folder that looks like a fresh clone after ``make run`` to the commands: data/ (linked),
    notebooks/ (copied, so the notebook runner takes this folder as the repository root), pyproject.toml
    (linked) and .venv (linked to the environment running the tests)."""
    work = tmp / "work"
    work.mkdir()
    (work / "data").symlink_to(ROOT / "data", target_is_directory=True)
    (work / "pyproject.toml").symlink_to(ROOT / "pyproject.toml")
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    shutil.copytree(ROOT / "notebooks", work / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return work


def _outside_venv(entry: str) -> bool:
    """False for a ``PATH`` entry inside this virtual environment or inside any other (a folder whose
    parent holds ``pyvenv.cfg``): a shell that had activated another checkout's ``.venv`` must not
    lend its ``python`` to a block that does not activate."""
    try:
        path = Path(entry).resolve()
        return not (path.is_relative_to(Path(sys.prefix).resolve()) or (path.parent / "pyvenv.cfg").is_file())
    except (OSError, ValueError):
        return True


def _environment(work: Path) -> dict[str, str]:
    """The environment of a newcomer's shell: no API key, no virtual environment on ``PATH`` (so a block
    that does not activate ``.venv`` fails, as it would for a reader), the run folders and the verdict
    cache inside the test folder."""
    env = {k: v for k, v in os.environ.items()
           if not re.search(r"API_KEY|_BASE_URL|KEY_HOSTS", k)
           and k not in ("AXON_EVAL_RUNS_DIR", "AXON_EVAL_CACHE", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(e for e in env.get("PATH", "").split(os.pathsep) if e and _outside_venv(e))
    env["AXON_EVAL_RUNS_DIR"] = str(work / "runs")
    env["AXON_EVAL_CACHE"] = str(work / "cache" / "verdicts.sqlite")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def test_every_runnable_block_uses_the_environment_make_run_created():
    """A reader copies a block into a fresh shell: each activates ``.venv`` before its first command (or
    calls ``.venv/bin/...``), and the pages say so once (README.md, docs/getting-started.md)."""
    problems = [b.id for b in runnable_blocks() if not ACTIVATES.search(b.text)]
    assert not problems, "runnable blocks that do not activate .venv (add `source .venv/bin/activate`):\n" + \
        "\n".join(problems)
    for page in (README, DOCS / "getting-started.md"):
        assert "source .venv/bin/activate" in page.read_text() and ".venv/bin/axon-eval" in page.read_text(), page.name


def test_the_folders_the_blocks_write_into_are_ignored_by_git():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    for folder in ("runs", "tmp"):
        assert any(line.strip().rstrip("/*") == folder for line in ignored), f".gitignore does not ignore {folder}/"


def test_the_environment_check_catches_a_block_that_does_not_activate(tmp_path):
    work = _workdir(tmp_path)
    env = _environment(work)
    venv_bin = str(Path(sys.executable).parent)
    assert venv_bin not in env["PATH"].split(os.pathsep) and "VIRTUAL_ENV" not in env
    plain = subprocess.run(["bash", "-c", "python -c 'import axon_eval, pandas'"], cwd=work, env=env,
                           capture_output=True, text=True)
    activated = subprocess.run(["bash", "-c", "source .venv/bin/activate && python -c 'import axon_eval, pandas'"],
                               cwd=work, env=env, capture_output=True, text=True)
    assert plain.returncode != 0, "a block that does not activate .venv still found the package"
    assert activated.returncode == 0, activated.stderr


def _left_behind(work: Path) -> list[str]:
    """Files a block wrote outside the folders it may write into."""
    return sorted(str(p.relative_to(work)) for p in work.iterdir() if p.name not in WORKDIR_GIVEN | WRITABLE)


@pytest.mark.slow
@pytest.mark.parametrize("block", runnable_blocks(), ids=lambda b: b.id)
def test_runnable_block(block, tmp_path):
    work = _workdir(tmp_path)
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", block.text], cwd=work, env=_environment(work),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{block.id}: still running after {BLOCK_TIMEOUT_S} s\n{out[-4000:]}")
    finally:
        try:  # a server the block started in the background, if the block failed before stopping it
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, f"{block.id} exited {proc.returncode}:\n{block.text}\n--- output ---\n{out[-6000:]}"
    left = _left_behind(work)
    assert not left, (f"{block.id} wrote {left} into the working tree: write under runs/ or tmp/ (ignored by git), "
                      "or every later run of a clone is marked git_dirty")
