"""The axon_eval test suite (a package, so `tests.*` helpers resolve here and never to a `tests` package
that a dependency installs into site-packages, as ppi-python does)."""
