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
