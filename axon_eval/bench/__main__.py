"""``python -m axon_eval.bench`` (``make bench``): every section, or ``--only NAME``."""

import sys

from .suite import main

sys.exit(main())
