"""The rubric: weights, caps, bands, row horizon and judge prompt version, versioned together.

A :class:`Rubric` is frozen. Its ``id`` is a short SHA-256 of its canonical numeric content (not of its
name), so two rubrics with the same numbers share an id and any change of a weight, cap, band, row
horizon or prompt version changes it. Every results row and audit record carries the rubric id.

The packaged rubric ``axon-v1`` (``axon_eval/rubrics/axon-v1.yaml``) is the one every number in the
source documents refers to: weights 0.30 / 0.25 / 0.25 / 0.20, caps 25 / 70 / 40, bands 80 / 50,
row horizon 20.

A rubric may also cap the score on a low subscore (:class:`SubscoreCap`, e.g. faithfulness at or
below 3 caps the score at 49; they enter the id only when declared, so ``axon-v1`` keeps its id), and a
rubric file may start from a parent with ``extends: <packaged name or path>`` and give only what
differs (:func:`resolve_extends`). ``axon-v1-faithcap`` is ``axon-v1`` plus that faithfulness cap.

Every loading or validation problem raises :class:`RubricError` (a ``ValueError``, so the CLI exits 2
with it): one line naming the file (or ``<dict>``), the field and what was expected; never a YAML
traceback or a multi-line pydantic dump.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

#: The four judged dimensions, in causal order. These names are used verbatim everywhere.
DIMENSIONS: tuple[str, ...] = ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")
#: Dimensions a judge must always grade; faithfulness alone may be null (no answer captured).
REQUIRED_DIMENSIONS: tuple[str, ...] = DIMENSIONS[:3]
#: Trajectory facts that trigger caps, in the order the caps are listed in audits.
CAP_FACTS: tuple[str, ...] = ("all_sql_failed", "ended_on_failure", "no_tools")
#: The verdict bands, best first.
BANDS: tuple[str, ...] = ("good", "partial", "poor")

_WEIGHT_SUM_TOLERANCE = 1e-9
DEFAULT_RUBRIC = "axon-v1"
#: Row samplers a rubric may name, with the version of each one's selection rule (see
#: :mod:`axon_eval.view`). ``head`` shows the first ``row_horizon`` rows (the original behaviour);
#: ``evidence`` spends the same budget on the first rows, the rows holding what the question and
#: answer mention, each numeric column's extremes and the last row.
ROW_SAMPLERS: dict[str, int] = {"head": 1, "evidence": 1}
DEFAULT_ROW_SAMPLER = "head"


class RubricError(ValueError):
    """A rubric that cannot be loaded or is invalid; the message is one line naming the source."""


def _one_line_validation(exc: ValidationError) -> str:
    """A pydantic ValidationError as ``field: problem (got value)`` items joined by ``; ``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "rubric"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        got = "" if err.get("type") in ("value_error", "missing") or "input" not in err else f" (got {err['input']!r})"
        parts.append(f"{loc}: {msg}{got}")
    return "; ".join(" ".join(p.split()) for p in parts)


def _validated(data: Any, source: str) -> Rubric:
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise RubricError(f"{source}: invalid rubric: {_one_line_validation(exc)}") from None


def _read_yaml(path: Path, source: str) -> Any:
    """Parse a rubric YAML file; unreadable, binary or malformed files are one-line RubricErrors."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RubricError(f"{source}: no such rubric file; expected a YAML file like "
                          "axon_eval/rubrics/axon-v1.yaml") from None
    except UnicodeDecodeError as exc:
        raise RubricError(f"{source}: not a text YAML file (byte {exc.object[exc.start]:#04x} at offset "
                          f"{exc.start} is not UTF-8); expected a rubric YAML file") from None
    except OSError as exc:
        raise RubricError(f"{source}: cannot read the rubric file ({exc.strerror or exc})") from None
    return _parse_yaml(text, source)


def _parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RubricError(f"{source}: not valid YAML{where}: {' '.join(str(problem).split())}; expected a "
                          "mapping of rubric fields (name, weights, caps, bands, ...)") from None


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Weights(_Frozen):
    """Nominal dimension weights: each in [0, 1], summing to 1."""

    intent_understood: float = Field(ge=0)
    sql_quality: float = Field(ge=0)
    result_relevance: float = Field(ge=0)
    answer_faithfulness: float = Field(ge=0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> Weights:
        values = self.as_dict()
        for name, value in values.items():
            if not math.isfinite(value):
                raise ValueError(f"weight {name} = {value!r} is not a finite number")
        total = sum(values.values())
        if abs(total - 1.0) > _WEIGHT_SUM_TOLERANCE:
            raise ValueError(f"weights must sum to 1, got {total!r} from {values}")
        return self

    def as_dict(self) -> dict[str, float]:
        return {d: float(getattr(self, d)) for d in DIMENSIONS}


class Caps(_Frozen):
    """Score caps in points (0-100), keyed by the trajectory fact that triggers them."""

    all_sql_failed: float = Field(ge=0, le=100)
    ended_on_failure: float = Field(ge=0, le=100)
    no_tools: float = Field(ge=0, le=100)

    def as_dict(self) -> dict[str, float]:
        return {f: float(getattr(self, f)) for f in CAP_FACTS}


class SubscoreCap(_Frozen):
    """A cap triggered by a judged subscore: when ``dimension <= at_or_below`` the score is at most ``cap``.

    The comparison is made on the clamped subscore (0-10). A null subscore (no answer captured, for
    ``answer_faithfulness``) never triggers it: there is nothing to compare. Like the fact caps it is
    applied as ``min(score, cap)`` and only ever lowers a score; its audit name is :attr:`name`, e.g.
    ``answer_faithfulness_at_or_below_3``.
    """

    dimension: str
    at_or_below: float = Field(ge=0, le=10)
    cap: float = Field(ge=0, le=100)

    @field_validator("dimension")
    @classmethod
    def _known_dimension(cls, v: str) -> str:
        if v not in DIMENSIONS:
            raise ValueError(f"subscore cap dimension {v!r} is not one of {list(DIMENSIONS)}")
        return v

    @property
    def name(self) -> str:
        return f"{self.dimension}{SUBSCORE_CAP_INFIX}{self.at_or_below:g}"

    def canonical(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "at_or_below": round(self.at_or_below, 12), "cap": round(self.cap, 12)}


#: Joins dimension and threshold in a subscore cap's audit name (``answer_faithfulness_at_or_below_3``).
SUBSCORE_CAP_INFIX = "_at_or_below_"


class Bands(_Frozen):
    """Lower edges of the bands on the rounded score: good >= ``good``, partial >= ``partial``."""

    good: float = Field(gt=0, le=100)
    partial: float = Field(gt=0, le=100)

    @model_validator(mode="after")
    def _ordered(self) -> Bands:
        if not self.partial < self.good:
            raise ValueError(f"band edges must satisfy partial < good, got partial={self.partial}, good={self.good}")
        return self


class Rubric(_Frozen):
    """Everything that turns subscores into a score, versioned as one object.

    Build with :meth:`default`, :meth:`from_yaml` or :meth:`from_dict`; derive variants with
    :meth:`with_weights` / :meth:`replace` (the id changes with any number).
    """

    name: str = DEFAULT_RUBRIC
    version: int = Field(default=1, ge=1)
    weights: Weights
    caps: Caps
    #: Caps triggered by a low subscore, applied after the fact caps (empty in ``axon-v1``).
    subscore_caps: tuple[SubscoreCap, ...] = ()
    bands: Bands
    #: Rows per SQL statement the judge sees (the row budget of the sampler); 0 = row counts only.
    row_horizon: int = Field(default=20, ge=0)
    prompt_version: str = Field(default="judge_v1", min_length=1)
    #: How the ``row_horizon`` rows are chosen: one of :data:`ROW_SAMPLERS`.
    row_sampler: str = DEFAULT_ROW_SAMPLER

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("rubric name must not be empty")
        return v

    @field_validator("row_sampler")
    @classmethod
    def _known_row_sampler(cls, v: str) -> str:
        if v not in ROW_SAMPLERS:
            raise ValueError(f"row_sampler {v!r} is not one of {sorted(ROW_SAMPLERS)}")
        return v

    @field_validator("subscore_caps")
    @classmethod
    def _distinct_subscore_caps(cls, v: tuple[SubscoreCap, ...]) -> tuple[SubscoreCap, ...]:
        names = [c.name for c in v]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"subscore caps are declared twice: {repeated}")
        return v

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def default(cls) -> Rubric:
        """The packaged ``axon-v1`` rubric."""
        return cls.packaged(DEFAULT_RUBRIC)

    @classmethod
    def packaged(cls, name: str) -> Rubric:
        """A rubric shipped in ``axon_eval/rubrics/<name>.yaml``."""
        ref = resources.files("axon_eval") / "rubrics" / f"{name}.yaml"
        if not ref.is_file():
            raise RubricError(f"no packaged rubric {name!r}; available: {packaged_names()}")
        source = f"packaged {name}"
        return cls.from_dict(_parse_yaml(ref.read_text(encoding="utf-8"), source), source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Rubric:
        """Load a rubric YAML file (same layout as ``axon-v1.yaml``, or ``extends:`` a parent).

        A relative ``extends:`` path is resolved against this file's folder.
        """
        p = Path(path)
        return cls.from_dict(_read_yaml(p, str(p)), source=str(p), base_dir=p.parent)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>", base_dir: str | Path | None = None) -> Rubric:
        """Validate a rubric mapping; an ``extends`` key is resolved first (see :func:`resolve_extends`)."""
        if not isinstance(data, dict):
            got = "an empty file" if data is None else f"a {type(data).__name__}"
            raise RubricError(f"{source}: a rubric must be a mapping of fields (name, weights, caps, bands, ...), "
                              f"got {got}")
        data = resolve_extends(data, source, base_dir)
        return _validated(data, source)

    @classmethod
    def resolve(cls, spec: str | Path | Rubric | None) -> Rubric:
        """``None`` -> default; a Rubric -> itself; a packaged name; or a YAML path."""
        if spec is None:
            return cls.default()
        if isinstance(spec, Rubric):
            return spec
        text = str(spec)
        if text.endswith((".yaml", ".yml")) or Path(text).exists():
            return cls.from_yaml(text)
        return cls.packaged(text)

    def replace(self, **changes: Any) -> Rubric:
        """A validated copy with top-level fields replaced (``row_horizon=50``, ``weights={...}``)."""
        data = self.model_dump()
        data.update({k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in changes.items()})
        return _validated(data, f"rubric {self.name} ({', '.join(sorted(changes))} changed)")

    def with_weights(self, weights: dict[str, float] | Weights, *, normalise: bool = False, name: str | None = None) -> Rubric:
        """A copy with other nominal weights; ``normalise=True`` rescales them to sum to 1 first."""
        w = weights.as_dict() if isinstance(weights, Weights) else {d: float(weights[d]) for d in DIMENSIONS}
        if normalise:
            total = sum(w.values())
            if not total > 0:
                raise RubricError(f"cannot normalise weights {w}: their sum is {total!r}; at least one weight must be "
                                  "positive")
            w = {d: v / total for d, v in w.items()}
        return self.replace(weights=w, **({"name": name} if name else {}))

    # -- identity -----------------------------------------------------------------------------
    def canonical(self) -> dict[str, Any]:
        """The content that defines the rubric's behaviour (the name is a label, not content)."""
        content: dict[str, Any] = {
            "weights": {d: round(v, 12) for d, v in self.weights.as_dict().items()},
            "caps": {f: round(v, 12) for f, v in self.caps.as_dict().items()},
            "bands": {"good": round(self.bands.good, 12), "partial": round(self.bands.partial, 12)},
            "row_horizon": self.row_horizon,
            "prompt_version": self.prompt_version,
        }
        # Only when present, so that rubrics without subscore caps (axon-v1) keep the id they always had.
        if self.subscore_caps:
            content["subscore_caps"] = sorted((c.canonical() for c in self.subscore_caps),
                                              key=lambda c: (c["dimension"], c["at_or_below"], c["cap"]))
        # Likewise the row sampler enters only when it is not the original ``head`` (axon-v1 keeps its id);
        # its version is part of the content, so a changed selection rule changes the id.
        if self.row_sampler != DEFAULT_ROW_SAMPLER:
            content["row_sampler"] = f"{self.row_sampler}-v{ROW_SAMPLERS[self.row_sampler]}"
        return content

    @cached_property
    def id(self) -> str:
        """Short content hash (12 hex digits of SHA-256 over the canonical JSON)."""
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        """Human label ``name@id``."""
        return f"{self.name}@{self.id}"

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)

    def band(self, score: float) -> str:
        """Band of a (rounded) score: ``good`` / ``partial`` / ``poor``."""
        if score >= self.bands.good:
            return "good"
        if score >= self.bands.partial:
            return "partial"
        return "poor"


def packaged_names() -> list[str]:
    """The names of the packaged rubrics (``axon_eval/rubrics/*.yaml``), sorted: ``axon-v1`` and the
    candidates a rubric owner may adopt (``axon-v1-faithcap``, ``axon-v1-faithpartial``)."""
    return sorted(p.name.removesuffix(".yaml") for p in (resources.files("axon_eval") / "rubrics").iterdir()
                  if p.name.endswith(".yaml"))


# -- extends: a rubric file that changes only what differs from its parent ---------------------------
def _looks_like_path(spec: str) -> bool:
    return spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec


def _deep_merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``parent``: mappings merge key by key (recursively); anything else is replaced whole."""
    merged = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_extends(data: dict[str, Any], source: str = "<dict>", base_dir: str | Path | None = None,
                    _chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """Resolve ``extends: <parent>`` in a rubric mapping into one complete mapping.

    ``<parent>`` is a packaged rubric name (``axon-v1``) or a YAML path (anything ending in ``.yaml`` /
    ``.yml`` or containing a slash; relative paths are taken from ``base_dir``, the child file's folder,
    else the working directory). The parent is loaded (itself resolved first, so chains work), then
    the child's keys are merged over it: nested mappings (``weights``, ``caps``, ``bands``) key by key,
    lists (``subscore_caps``) and scalars replaced whole. The child must give its own ``name`` (a
    variant silently carrying its parent's name would be mistaken for it). Without ``extends`` the
    mapping is returned unchanged. Raises ``ValueError`` naming ``source`` and the parent when the
    parent is unknown, unreadable or part of a cycle.
    """
    if "extends" not in data:
        return data
    parent_spec = data["extends"]
    if not isinstance(parent_spec, str) or not parent_spec.strip():
        raise RubricError(f"{source}: 'extends' must name a packaged rubric or a YAML file, got {parent_spec!r}")
    if "name" not in data:
        raise RubricError(f"{source}: a rubric that extends {parent_spec!r} must give its own 'name'")
    if _looks_like_path(parent_spec):
        path = Path(parent_spec)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if not path.is_file():
            raise RubricError(f"{source}: extends {parent_spec!r}, but there is no such file ({path})")
        parent_source, parent_base = str(path.resolve()), path.parent
        try:
            parent = _read_yaml(path, parent_source)
        except RubricError as exc:
            raise RubricError(f"{source}: extends {parent_spec!r}, which cannot be loaded: {exc}") from None
    else:
        ref = resources.files("axon_eval") / "rubrics" / f"{parent_spec}.yaml"
        if not ref.is_file():
            available = sorted(p.name.removesuffix(".yaml") for p in (resources.files("axon_eval") / "rubrics").iterdir()
                               if p.name.endswith(".yaml"))
            raise RubricError(f"{source}: extends unknown rubric {parent_spec!r}; packaged rubrics: {available}")
        parent_source, parent_base = f"packaged {parent_spec}", None
        parent = _parse_yaml(ref.read_text(encoding="utf-8"), parent_source)
    # Files are compared by resolved path, so a cycle through "a.yaml" and "./a.yaml" is still found.
    chain = _chain or ((str(Path(source).resolve()) if Path(source).is_file() else source),)
    if parent_source in chain:
        raise RubricError(f"{source}: 'extends' forms a cycle: {' -> '.join((*chain, parent_source))}")
    if not isinstance(parent, dict):
        raise RubricError(f"{source}: parent rubric {parent_spec!r} is not a mapping")
    parent = resolve_extends(parent, parent_source, parent_base, (*chain, parent_source))
    child = {k: v for k, v in data.items() if k != "extends"}
    return _deep_merge(parent, child)
