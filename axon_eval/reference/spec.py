"""Question specifications: metric, population, period, tolerance, layer, reference values, criteria."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

LAYERS = ("descriptive", "diagnostic", "prescriptive")
UNITS = ("percent", "currency", "count", "days")
CRITERION_KINDS = ("value", "phrases", "forecast")


@dataclass(frozen=True)
class ReferenceValue:
    """One reference figure: read from row ``row``, column ``column`` of its SQL's result.

    ``tolerance`` is an explicit absolute tolerance in the value's unit (percentage points for a
    percent); ``None`` means the displayed precision of the claim (or 1% relative when the claim has
    no displayed precision).
    """

    id: str
    name: str
    unit: str
    sql: str
    row: int = 0
    column: int = 0
    tolerance: float | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"reference value {self.id}: unknown unit {self.unit!r}")


@dataclass(frozen=True)
class Criterion:
    """An observable requirement. ``kind`` says how code can check it:

    * ``value``: the response states reference value ``value`` within tolerance;
    * ``phrases``: some sentence of the response contains one phrase of every group in ``groups``;
    * ``forecast``: a projected effect, acceptable only with its assumption stated (``groups`` are the
      effect words; a projection without an assumption cannot be verified from the evidence).
    """

    id: str
    text: str
    required: bool = True
    kind: str = "phrases"
    value: str | None = None
    groups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in CRITERION_KINDS:
            raise ValueError(f"criterion {self.id}: unknown kind {self.kind!r}")
        if (self.kind == "value") != (self.value is not None):
            raise ValueError(f"criterion {self.id}: a value criterion names exactly one reference value")


@dataclass(frozen=True)
class Question:
    id: str
    layer: str
    text: str
    metric: str
    population: str
    period: str
    tolerance: str
    values: tuple[ReferenceValue, ...]
    criteria: tuple[Criterion, ...]
    split: str = "dev"  # dev | heldout (frozen in the fixture before the heuristic's rules were written)

    def __post_init__(self) -> None:
        if self.layer not in LAYERS:
            raise ValueError(f"question {self.id}: unknown layer {self.layer!r}")
        ids = [c.id for c in self.criteria]
        if len(ids) != len(set(ids)):
            raise ValueError(f"question {self.id}: duplicate criterion ids")
        known = {v.id for v in self.values}
        for c in self.criteria:
            if c.value is not None and c.value not in known:
                raise ValueError(f"question {self.id}: criterion {c.id} names unknown value {c.value}")

    def value(self, value_id: str) -> ReferenceValue:
        for v in self.values:
            if v.id == value_id:
                return v
        raise KeyError(value_id)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["values"] = [{k: v for k, v in asdict(x).items() if not (k in ("row", "column") and v == 0)
                        and not (k == "tolerance" and v is None)} for x in self.values]
        d["criteria"] = [{k: ([list(g) for g in v] if k == "groups" else v) for k, v in asdict(c).items()
                          if not (k == "value" and v is None) and not (k == "groups" and not v)}
                         for c in self.criteria]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        values = tuple(ReferenceValue(**v) for v in d["values"])
        criteria = tuple(Criterion(**{**c, "groups": tuple(tuple(g) for g in c.get("groups", ()))})
                         for c in d["criteria"])
        return cls(**{**d, "values": values, "criteria": criteria})


def dump_questions(questions: list[Question]) -> str:
    """Deterministic YAML text of ``questions``."""
    return yaml.safe_dump({"questions": [q.to_dict() for q in questions]}, sort_keys=False, allow_unicode=True,
                          width=110)


def load_questions(path: str | Path) -> list[Question]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return [Question.from_dict(q) for q in data["questions"]]
