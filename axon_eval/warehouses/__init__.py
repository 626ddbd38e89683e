"""The seeded SQLite warehouses every labelled set's SQL runs on.

One module per warehouse, each a pure function of its seed: :mod:`~axon_eval.warehouses.sports` (the
rugby competitions of the bundled sample), :mod:`~axon_eval.warehouses.shop` (the e-commerce business
of the out-of-domain set and reference-based grading), :mod:`~axon_eval.warehouses.transit`,
:mod:`~axon_eval.warehouses.water`, :mod:`~axon_eval.warehouses.hotel`,
:mod:`~axon_eval.warehouses.learning` and :mod:`~axon_eval.warehouses.library` (the domain sets), and
:mod:`~axon_eval.warehouses.realdb` (TPC-H and nycflights13, the public sample databases). The
labelled sets themselves are data files under ``axon_eval/fixtures/sets``, written by
:mod:`axon_eval.fixtures`; the tests re-run every stored statement against these warehouses.
"""
