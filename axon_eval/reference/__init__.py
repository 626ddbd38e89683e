"""Reference-based grading of analytics answers (DESIGN section 7).

Questions carry reference SQL run read-only against the simulated shop warehouse; a judge marks each
rubric criterion pass / fail / unverifiable with a quote and names its numeric claims; code then
verifies the assessment (each criterion once, quotes present, every numeric claim re-checked) and
derives the grade. Parsing, checking and grading are pure functions; only :mod:`.evidence` touches a
database.

Grades are recorded like every other judgement: one :class:`~.records.GradeRecord` per response (judge,
model, prompt version, latency, tokens, cost, cache key, cached), reused from the SQLite grade cache
(:mod:`.cache`) while question, evidence, response and judge configuration are unchanged, and written to
a run folder by :func:`~.run.grade_reference` (``python -m axon_eval grade-reference``, ``axon_eval.cli.reference``).
"""

from .cache import GradeCache
from .evidence import Evidence, EvidenceError, ReadOnlyViolation, prepare_evidence, run_readonly
from .grading import Assessment, Grade, JudgeOutput, Judgement, NumericClaim, grade_response
from .heuristic import HeuristicReferenceJudge
from .numeric import NumericCheck, check_claim, check_value
from .records import GradeRecord, grade_cache_key
from .evaluate import grade_responses, make_judge
from .run import ReferenceRun, grade_reference
from .spec import Criterion, Question, ReferenceValue, dump_questions, load_questions
from .warehouse import shop_database

__all__ = ["Assessment", "Criterion", "Evidence", "EvidenceError", "Grade", "GradeCache", "GradeRecord",
           "HeuristicReferenceJudge", "JudgeOutput", "Judgement", "NumericCheck", "NumericClaim", "Question",
           "ReadOnlyViolation", "ReferenceRun", "ReferenceValue", "check_claim", "check_value", "dump_questions",
           "grade_cache_key", "grade_reference", "grade_response", "grade_responses", "load_questions",
           "make_judge", "prepare_evidence", "run_readonly", "shop_database"]
