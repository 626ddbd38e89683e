"""What every notebook of the workbench must be (DESIGN §6): exactly one ``parameters``-tagged code cell,
no committed outputs or execution counts, and no function, class or lambda definitions (logic lives in
the package). Shared by the notebook tests."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def assert_thin_notebook(path: str | Path) -> nbformat.NotebookNode:
    """Assert the rules above for the notebook at ``path`` and return it (read as version 4)."""
    nb = nbformat.read(str(path), as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code", f"{path}: needs exactly one parameters code cell"
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None, f"{path}: cell {index} holds outputs"
        defined = [type(n).__name__ for n in ast.walk(ast.parse(cell.source)) if isinstance(n, DEFINITIONS)]
        assert not defined, f"{path}: cell {index} defines {defined}; definitions belong in the package"
    return nb


def markdown_text(nb: nbformat.NotebookNode) -> str:
    """All markdown of a notebook, for checking that it explains what it must."""
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


#: Provider variables removed for a smoke run, so no notebook default can reach a real provider.
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def run_smoke(notebook: Path, smoke: Path, out: Path, *, cache: Path | None = None, times: int = 1,
              env: dict[str, str] | None = None) -> list:
    """Execute ``notebook`` ``times`` times on the ``smoke`` parameter file the way ``make studies`` does,
    with every run folder under ``out`` (``$AXON_EVAL_RUNS_DIR``; a study's source and comparison runs
    land there too), the verdict cache at ``cache`` (or the project default when ``None``), and no
    provider key or base URL in the environment except those ``env`` sets. Returns the
    :class:`~axon_eval.runs.notebook` results."""
    import pytest

    from axon_eval import runs
    from axon_eval.runs.notebook import run_notebook

    with pytest.MonkeyPatch.context() as mp:
        for var in PROVIDER_ENV:
            mp.delenv(var, raising=False)
        for var, value in (env or {}).items():
            mp.setenv(var, value)
        mp.setenv(runs.RUNS_DIR_ENV, str(out))
        if cache is None:
            mp.delenv(runs.CACHE_ENV, raising=False)
        else:
            mp.setenv(runs.CACHE_ENV, str(cache))
        return [run_notebook(notebook, params_files=[smoke], out_dir=out) for _ in range(times)]


def table_cells_for_people(executed: nbformat.NotebookNode) -> list[str]:
    """Every cell of every table (pandas or Styler HTML) the executed notebook displays."""
    import re

    html = [o.data["text/html"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
            if "text/html" in o.get("data", {}) and ("dataframe" in o.data["text/html"] or "<style" in o.data["text/html"])]
    return [cell.strip() for page in html for cell in re.findall(r"<td[^>]*>([^<]*)</td>", page)]


def unfit_for_people(cell: str) -> bool:
    """A number no person should be shown: scientific notation, None/nan, or a decimal with more than three
    significant digits (``0.639175``, ``105.000``)."""
    import re

    if cell in ("None", "nan", "NaN", "<NA>") or re.fullmatch(r"-?[\d.]+e[-+]?\d+", cell):
        return True
    if re.fullmatch(r"-?[\d,]*\.\d+", cell):
        return len(cell.replace("-", "").replace(",", "").replace(".", "").lstrip("0")) > 3
    return False


#: A decimal number no person should be shown in a notebook's printed output: five or more decimals
#: (``0.586796``, ``77.49896907216494``), i.e. a raw float rather than one formatted by axon_eval.display.
RAW_FLOAT = r"(?<![\w.])-?\d+\.\d{5,}(?![\w.])"


def assert_numbers_for_people(executed: nbformat.NotebookNode) -> None:
    """Every table the executed notebook shows reads for people (:func:`unfit_for_people` finds no cell,
    tables are Styler HTML from ``axon_eval.display.styled``), and no printed or displayed text holds a raw
    float (:data:`RAW_FLOAT`: a study.json dump, an unformatted number)."""
    import re

    cells = table_cells_for_people(executed)
    assert cells, "the notebook shows no table"
    assert [c for c in cells if unfit_for_people(c)] == []
    texts = []
    for c in executed.cells:
        if c.cell_type != "code":
            continue
        for o in c.outputs:
            if o.output_type == "stream":
                texts.append(o.text)
            for kind in ("text/plain", "text/markdown"):
                if kind in o.get("data", {}):
                    texts.append(o.data[kind])
    raw = [m.group(0) for text in texts for m in re.finditer(RAW_FLOAT, text)]
    assert raw == [], f"raw floats in the notebook's output: {raw[:10]}"
    frames = [o.data["text/html"] for c in executed.cells if c.cell_type == "code" for o in c.outputs
              if "text/html" in o.get("data", {}) and 'class="dataframe"' in o.data["text/html"]]
    assert frames == [], "a table shown without axon_eval.display.styled (a raw DataFrame)"


def printed_headline(executed: nbformat.NotebookNode, study: str) -> list[str]:
    """The headline an executed study notebook printed (:func:`axon_eval.runs.study.format_study`): the
    ``study <name>`` line and the indented lines under it, up to its ``source run`` / ``keys`` lines."""
    text = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"study {study}"))
    out = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("  ") or line.startswith(("  source run:", "  keys:")):
            break
        out.append(line)
    return out


def assert_headline_says_constructed(executed: nbformat.NotebookNode, study: str) -> None:
    """On constructed labels the printed headline says CONSTRUCTED on its first line and on every figure,
    as a simulated study's says SIMULATED."""
    head, *figures = printed_headline(executed, study)
    assert head.startswith(f"study {study} (") and "CONSTRUCTED" in head, head
    assert figures and all(line.strip().startswith(("CONSTRUCTED ", "SIMULATED CONSTRUCTED ")) for line in figures), \
        figures
