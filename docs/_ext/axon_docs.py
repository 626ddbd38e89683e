"""A small Sphinx extension: pages generated from the package at build time, never copied by hand.

``evidence-schema``
    The evidence format: one table per object of the JSON Schema that ``python -m axon_eval schema``
    prints (:func:`axon_eval.evidence.turn_json_schema`), then the schema itself. Options:
    ``:part: tables`` or ``:part: json`` render one half only.

``notebook-parameters``
    The parameters cell of a notebook (its argument, a path from the repository root) as a table: each
    name, its default and the comment beside it, read from the notebook at build time.

Warnings
    The build runs with warnings as errors, and a warning from a docstring of the package fails it like
    one from a page of ``docs/``: there is no allowance.

``missing-reference``
    A reference to a name a module re-exports (a module split into modules of one job each keeps its
    names) resolves to the page of the module that defines it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective



Cell = str | tuple[str, str]  # plain text, or ("code", text) for a literal


def _table(title: str | None, headers: list[str], rows: list[list[Cell]], widths: list[int]) -> nodes.table:
    """A docutils table built from nodes, so no text from the package is parsed as markup."""
    table = nodes.table(classes=["colwidths-given"])
    if title:
        table += nodes.title(text=title)
    group = nodes.tgroup(cols=len(headers))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)

    def row_of(cells: list[Cell], header: bool = False) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            if isinstance(cell, tuple):
                para += nodes.literal(text=cell[1])
            else:
                para += nodes.Text(cell)
            entry += para
            row += entry
        return row

    head = nodes.thead()
    head += row_of(headers, header=True)
    group += head
    body = nodes.tbody()
    for r in rows:
        body += row_of(r)
    group += body
    return table


def _type_text(prop: dict[str, Any]) -> str:
    """A short reading of a property's JSON Schema type (``string``, ``integer or null``, ...)."""
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return "one of " + ", ".join(str(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(_type_text(p) for p in prop["anyOf"]))
    if "oneOf" in prop:
        return " or ".join(dict.fromkeys(_type_text(p) for p in prop["oneOf"]))
    kind = prop.get("type", "any")
    if kind == "array":
        items = prop.get("items", {})
        inner = _type_text(items) if items else "any"
        return f"array of {inner}"
    if kind == "string" and prop.get("format"):
        return f"string ({prop['format']})"
    return str(kind)


def _constraints(prop: dict[str, Any]) -> str:
    out = []
    if "minLength" in prop:
        out.append(f"at least {prop['minLength']} character(s)")
    if "pattern" in prop:
        out.append(f"pattern {prop['pattern']}")
    for key in ("minimum", "ge"):
        if key in prop:
            out.append(f"at least {prop[key]}")
    for sub in prop.get("anyOf", []):
        for key in ("minimum", "ge"):
            if key in sub:
                out.append(f"at least {sub[key]}")
    if "default" in prop:
        out.append(f"default {json.dumps(prop['default'])}")
    return "; ".join(dict.fromkeys(out))


def _one_line(text: str) -> str:
    """A docstring as one line of plain text (reST literals and roles unwrapped)."""
    import re

    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "").split())


def _object_table(title: str, schema: dict[str, Any]) -> nodes.table:
    required = set(schema.get("required", []))
    rows: list[list[Cell]] = []
    for name, prop in schema["properties"].items():
        notes = "; ".join(x for x in (_one_line(prop.get("description", "")), _constraints(prop)) if x)
        rows.append([("code", name), _type_text(prop), "yes" if name in required else "no", notes])
    return _table(title, ["field", "type", "required", "notes"], rows, [18, 30, 10, 42])


class EvidenceSchema(SphinxDirective):
    """Render the evidence JSON Schema of the installed package."""

    has_content = False
    option_spec = {"part": lambda arg: directives.choice(arg, ("tables", "json", "all"))}

    def run(self) -> list[nodes.Node]:
        from axon_eval.evidence import turn_json_schema

        schema = turn_json_schema()
        part = self.options.get("part", "all")
        out: list[nodes.Node] = []
        if part in ("tables", "all"):
            out.append(_object_table("One evidence line (a turn)", schema))
            for name, sub in schema.get("$defs", {}).items():
                out.append(nodes.paragraph(text=_one_line(sub.get("description", ""))))
                out.append(_object_table(f"A step of kind {sub['properties']['kind']['const']} ({name})", sub))
        if part in ("json", "all"):
            text = json.dumps(schema, indent=2)
            block = nodes.literal_block(text, text, language="json")
            out.append(block)
        return out


def parameters_of(notebook: Path) -> list[tuple[str, str, str]]:
    """``(name, default, comment)`` of every assignment in the notebook's cell tagged ``parameters``."""
    import ast
    import io
    import tokenize

    cells = json.loads(notebook.read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(cell["source"])
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    rows = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            rows.append((node.targets[0].id, ast.get_source_segment(source, node.value) or "",
                         comments.get(node.lineno, "")))
    return rows


class NotebookParameters(SphinxDirective):
    """Render a notebook's parameters cell as a table."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir).parent
        path = root / self.arguments[0]
        self.env.note_dependency(str(path))
        rows: list[list[Cell]] = [[("code", name), ("code", default), comment]
                                  for name, default, comment in parameters_of(path)]
        return [_table(None, ["parameter", "default", "meaning"], rows, [20, 25, 55])]


def _resolve_reexport(app: Sphinx, env: Any, node: Any, contnode: nodes.Node) -> nodes.Node | None:
    """Resolve a reference to a name a module re-exports (``axon_eval.stats.panels.PanelStudy``) to the page
    of the module that defines it, so a module split keeps every reference to its old place working."""
    if node.get("refdomain") != "py":
        return None
    target = str(node.get("reftarget", ""))
    module_name, _, name = target.rpartition(".")
    if not module_name.startswith("axon_eval") or not name:
        return None
    import importlib

    try:
        obj = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        return None
    domain = env.get_domain("py")
    for candidate in sorted(k for k in domain.objects if k.endswith("." + name) and k != target):
        home = candidate.rpartition(".")[0]
        try:
            same = getattr(importlib.import_module(home), name) is obj
        except (ImportError, AttributeError):
            continue
        if same:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], candidate, node, contnode)
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("evidence-schema", EvidenceSchema)
    app.add_directive("notebook-parameters", NotebookParameters)
    app.connect("missing-reference", _resolve_reexport)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
