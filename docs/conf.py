"""Sphinx configuration of the axon_eval documentation (``make docs``).

The site is built offline with warnings as errors (``sphinx-build -W --keep-going -n``): a broken link,
an unknown reference or a docstring that does not parse fails ``make test``. Nothing here fetches from
the network (no intersphinx), so names of other libraries are not linked; the one regex list below
tells the nitpicky build to let them be, while every unresolved ``axon_eval`` name still fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT))

import axon_eval  # noqa: E402

project = "axon_eval"
author = "the axon_eval authors"
copyright = "the axon_eval authors"  # noqa: A001 - Sphinx's name
version = release = axon_eval.__version__

extensions = [
    "myst_parser",  # the pages are Markdown (MyST), readable on GitHub as well
    "sphinx.ext.autodoc",  # the API reference from the docstrings
    "sphinx.ext.autosummary",  # one page per public module
    "sphinx.ext.napoleon",  # NumPy-style "Parameters" sections in docstrings
    "sphinx.ext.mathjax",
    "sphinxarg.ext",  # the CLI reference from axon_eval.cli.main.build_parser
    "axon_docs",  # docs/_ext/axon_docs.py: the evidence schema page, generated from the package
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "examples"]
templates_path = ["_templates"]

myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# --- API reference ------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": False, "ignore-module-all": True}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
napoleon_use_param = False  # a "Parameters" section renders as one list: name, type, then the description
napoleon_use_ivar = True

# --- nitpicky: only the project's own names must resolve -------------------------------------------
# Without intersphinx (the build stays offline) nothing outside axon_eval can be linked: the standard
# library, numpy, pandas, pydantic, matplotlib and the other dependencies. Those names are ignored here
# and nothing else is: a reference to an axon_eval name that does not exist fails the build.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!axon_eval\b).*\..*"),  # dotted names of other packages (pandas.DataFrame, pathlib.Path, ...)
    (r"py:.*", r"(?!axon_eval\b)[A-Za-z_][A-Za-z0-9_]*"),  # bare builtins and typing names (str, Any, Path, ...)
    (r"py:class", r"'?(dict|list|tuple|set|frozenset|type)\[.*"),  # builtin generics in string annotations
    (r"py:.*", r"axon_eval(\.\w+)*\._\w+(\.\w+)*"),  # private names (a leading underscore) are not documented
    (r"py:class", r"axon_eval(\.\w+)*\.[A-Z]"),  # type variables (T)
]

# --- HTML -----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "axon_eval"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path: list[str] = []
html_show_sourcelink = False
