"""The labelling studio: people label a pack's segments in a local browser page, blind, by keyboard.

Sits above the runs and below calibration: it reads a run's audit once (at ``label init``) and a pack's
``design.json``; nothing of the judge reaches the page. Modules, one job each:
:mod:`.assignment` (who labels what, seeded), :mod:`.ledger` (the fsynced append-only label files),
:mod:`.blind` (the rater's evidence from an allow-list, the rubric's guide), :mod:`.pack` (the studio's
files in a pack), :mod:`.session` (one rater's queue, progress and checked saves), :mod:`.server` (tornado
on 127.0.0.1 with a token, Host/Origin checks and a strict CSP), :mod:`.collect`, :mod:`.status`,
:mod:`.review` and :mod:`.export` (the labels as tables, agreement, adjudication and the review page's
session, the labels file the studies read). The page is plain JavaScript modules in ``static/``.
"""

from .assignment import Assignment, plan_assignment
from .ledger import Journal, JournalWriteError
from .server import StudioApp

__all__ = ["Assignment", "Journal", "JournalWriteError", "StudioApp", "plan_assignment"]
