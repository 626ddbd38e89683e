"""The command line ``python -m axon_eval`` (and the ``axon-eval`` script): one module per verb group.

The top layer: it parses arguments, calls the package below and prints; nothing in the package imports it.
"""

from .main import Handler, build_parser, main

__all__ = ["Handler", "build_parser", "main"]
