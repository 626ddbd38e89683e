"""axon_eval: a research workbench for the answer quality of agentic text-to-SQL assistants.

The public scoring API::

    from axon_eval import Rubric, score_turn, score_frame, load_turns, trajectory_facts
"""

from .evidence import (
    InvalidTurn,
    Segment,
    SqlStep,
    ToolStep,
    TrajectoryFacts,
    Turn,
    load_turns,
    split_segments,
    trajectory_facts,
)
from .rubric import DIMENSIONS, Rubric
from .scoring import TurnScore, score_frame, score_turn

__version__ = "0.1.0"

__all__ = [
    "DIMENSIONS",
    "InvalidTurn",
    "Rubric",
    "Segment",
    "SqlStep",
    "ToolStep",
    "TrajectoryFacts",
    "Turn",
    "TurnScore",
    "load_turns",
    "score_frame",
    "score_turn",
    "split_segments",
    "trajectory_facts",
    "__version__",
]
