"""Reference-based grading of analytics answers (DESIGN section 7, issue 14).

Questions carry reference SQL run read-only against the simulated shop warehouse; a judge marks each
rubric criterion pass / fail / unverifiable with a quote and names its numeric claims; code then
verifies the assessment (each criterion once, quotes present, every numeric claim re-checked) and
derives the grade. Parsing, checking and grading are pure functions; only :mod:`.evidence` touches a
database.
"""

from .evidence import Evidence, EvidenceError, ReadOnlyViolation, prepare_evidence, run_readonly
from .grading import Assessment, Grade, JudgeOutput, NumericClaim, grade_response, grade_key
from .heuristic import HeuristicReferenceJudge
from .numeric import NumericCheck, check_claim, check_value
from .spec import Criterion, Question, ReferenceValue, load_questions, dump_questions

__all__ = ["Assessment", "Criterion", "Evidence", "EvidenceError", "Grade", "HeuristicReferenceJudge",
           "JudgeOutput", "NumericCheck", "NumericClaim", "Question", "ReadOnlyViolation", "ReferenceValue",
           "check_claim", "check_value", "dump_questions", "grade_key", "grade_response", "load_questions",
           "prepare_evidence", "run_readonly"]
