"""``make bench``: the benchmarks of axon_eval, one module per section, run by ``python -m axon_eval.bench``.

Nothing in the package imports this package; it sits on top of everything it measures.
"""

from .suite import EXTERNAL_SECTIONS, SECTIONS, STUDY_BENCHES, bench_studies, main
from .table import BenchRow, format_table, row

__all__ = ["EXTERNAL_SECTIONS", "SECTIONS", "STUDY_BENCHES", "BenchRow", "bench_studies", "format_table", "main", "row"]
