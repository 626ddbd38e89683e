"""Build judges from spec strings.

Valid forms (nest freely)::

    heuristic                                   the offline judge: named signals plus a small fitted model
                                                (packaged coefficients; judge id heuristic-fitted[<file hash>])
    heuristic(lexicon=<name>)                   the same with a domain lexicon (sports default, retail, finance, none)
    heuristic-fitted[(file=<path>)]             the same judge by its own name; with file=, the coefficients of
                                                another file (a refit, a judge id of its own)
    heuristic-rules[(lexicon=<name>)]           the earlier rule judge (hand-set deductions and a decision list),
                                                kept measurable beside the fitted one; judge id heuristic-rules
    anthropic:<model>[@<base_url>][#free_text]  Claude through the Anthropic API (or a compatible server);
                                                claude:<model>... is an alias (the same judge and id)
    openai:<model>[@<base_url>][#free_text]     any OpenAI-compatible server
    repeat(<spec>, <n>)                         n samples per view
    ensemble(<spec>, <spec>, ..., reducer=mean|median|majority, disagree_at=<points>)
    replay(<run folder>)                        records of an earlier run (quote paths with , or ))
    noise(<spec>, sd=<points>, seed=<int>)      labelled simulation of judge noise
    simulate(<spec>, sd=<points>, difficulty=<sd>, seed=<int>[, edge=<0-1>, corr=<0-1>])
                                                SIMULATED sampled judge (see judges.wrappers)
    prompt(<spec>, file=<path>)                 the API judges in <spec> take their system prompt from
                                                <path> (quote a path with , or ))

Grammar (a small recursive-descent parser over balanced parentheses)::

    spec   := call | leaf
    call   := WRAPPER "(" arg ("," arg)* ")"         WRAPPER in repeat, ensemble, replay, noise, simulate, prompt
    arg    := KEY "=" value | spec | quoted
    value  := quoted | text up to the next top-level "," or ")"
    leaf   := text up to the next top-level "," or ")" (e.g. ``openai:m@http://127.0.0.1:8000/v1``)
    quoted := '...' | "..."

``build_judge(spec, **options)`` passes ``options`` (``temperature``, ``max_tokens``, ``max_retries``,
``retry_attempts``, ``backoff_base_s``, ``backoff_cap_s``, ``timeout_s``, ``prompt_version``,
``prompt_file``, ``mode``, ``allow_key_hosts``, ``http_client``) to every API judge in the spec; the
heuristic judge takes none (a ``prompt_file`` for a spec that reaches a heuristic or replayed judge is a
``SpecError``: they have no prompt).

Prompt files: ``prompt(<spec>, file=<path>)`` (or ``build_judge(spec, prompt_file=<path>)``) sends the
text of ``<path>`` as the system prompt of every API judge in ``<spec>`` instead of the packaged
``prompts/<prompt_version>.md``. The prompt is identified by its content: the judge's prompt version is
``file:<stem>+<first 12 hex of its SHA-256>`` and so is part of its id and every verdict cache key (an
edited file is a new judge; verdicts of another text are never served). A packaged prompt is identified
the same way (``judge_v1+<hash>``). :func:`with_prompt_file` writes the form for a spec and a path.

API leaves: ``@<base_url>`` names the endpoint (else the SDK's ``ANTHROPIC_BASE_URL`` /
``OPENAI_BASE_URL``, else the provider's); a non-default endpoint enters the judge id as
``,base=<url>`` with any credentials stripped. ``#free_text`` (or ``mode="free_text"``) judges in prose
with the ``<prompt_version>_free_text`` prompt; ``#structured`` is the default. A URL's credentials are
masked in error messages and in ``judge.spec``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Judge

VALID_FORMS = (
    "heuristic",
    "heuristic(lexicon=sports|retail|finance|none)",
    "heuristic-fitted[(file=<coefficients.json>)]  (heuristic-fitted is heuristic)",
    "heuristic-rules[(lexicon=sports|retail|finance|none)]  (the earlier rule judge)",
    "anthropic:<model>[@<base_url>][#free_text]  (alias claude:<model>...)",
    "openai:<model>[@<base_url>][#free_text]",
    "repeat(<spec>, <n>)",
    "ensemble(<spec>, <spec>, ..., reducer=mean|median|majority, disagree_at=<points>)",
    "replay(<run folder>)",
    "noise(<spec>, sd=<points>, seed=<int>)",
    "simulate(<spec>, sd=<points>, difficulty=<sd>, seed=<int>[, edge=<0-1>, corr=<0-1>])",
    "prompt(<spec>, file=<path>)",
)
WRAPPERS = ("repeat", "ensemble", "replay", "noise", "simulate", "prompt")
_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)")
_NAME = re.compile(r"[A-Za-z_]\w*")
_FITTED_CALL = re.compile(r"heuristic-fitted\s*\((.*)\)", re.S)
#: The earlier rule judge's name, kept so that it stays measurable beside the fitted judge.
RULES_ALIAS = "heuristic-rules"
_RULES_CALL = re.compile(r"heuristic-rules\s*\((.*)\)", re.S)


class SpecError(ValueError):
    """A judge spec that does not parse or names no known judge; the message lists the valid forms."""

    def __init__(self, spec: str, problem: str) -> None:
        from ._llm import redact_urls  # a spec may carry URL credentials: never show them

        spec, problem = redact_urls(str(spec)), redact_urls(problem)
        self.spec = spec
        self.problem = problem
        forms = "\n  ".join(VALID_FORMS)
        super().__init__(f"invalid judge spec {spec!r}: {problem}\nvalid forms:\n  {forms}")


@dataclass
class Leaf:
    text: str


@dataclass
class Quoted:
    text: str


@dataclass
class Call:
    name: str
    args: list[Leaf | Quoted | Call] = field(default_factory=list)
    kwargs: dict[str, str] = field(default_factory=dict)


class _Parser:
    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.pos = 0

    def error(self, problem: str) -> SpecError:
        return SpecError(self.spec, f"{problem} (at character {self.pos})")

    def skip_ws(self) -> None:
        while self.pos < len(self.spec) and self.spec[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.spec[self.pos] if self.pos < len(self.spec) else ""

    def parse(self) -> Leaf | Quoted | Call:
        node = self.node()
        self.skip_ws()
        if self.pos != len(self.spec):
            raise self.error(f"unexpected {self.spec[self.pos:]!r} after a complete spec")
        return node

    def node(self) -> Leaf | Quoted | Call:
        self.skip_ws()
        if self.peek() in ("'", '"'):
            return Quoted(self.quoted())
        m = _NAME.match(self.spec, self.pos)
        if m:
            after = self.pos + len(m.group(0))
            rest = self.spec[after:].lstrip()
            if rest.startswith("("):
                self.pos = self.spec.index("(", after) + 1
                return self.call(m.group(0))
        text = self.raw()
        if not text:
            raise self.error("empty spec")
        return Leaf(text)

    def quoted(self) -> str:
        quote = self.spec[self.pos]
        end = self.spec.find(quote, self.pos + 1)
        if end < 0:
            raise self.error(f"unterminated quoted string starting with {quote}")
        text = self.spec[self.pos + 1:end]
        self.pos = end + 1
        return text

    def raw(self) -> str:
        """Text up to the next top-level ',' or ')' (parentheses inside must balance)."""
        start, depth = self.pos, 0
        while self.pos < len(self.spec):
            ch = self.spec[self.pos]
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            self.pos += 1
        if depth:
            raise self.error("unbalanced parentheses")
        return self.spec[start:self.pos].strip()

    def call(self, name: str) -> Call:
        node = Call(name)
        self.skip_ws()
        if self.peek() == ")":
            self.pos += 1
            return node
        while True:
            self.skip_ws()
            m = _KEYWORD.match(self.spec, self.pos)
            if m:
                self.pos = m.end()
                self.skip_ws()
                value = self.quoted() if self.peek() in ("'", '"') else self.raw()
                if m.group(1) in node.kwargs:
                    raise self.error(f"{name}(): keyword {m.group(1)!r} given twice")
                node.kwargs[m.group(1)] = value
            else:
                if node.kwargs:
                    raise self.error(f"{name}(): positional argument after a keyword argument")
                node.args.append(self.node())
            self.skip_ws()
            ch = self.peek()
            if ch == ",":
                self.pos += 1
                continue
            if ch == ")":
                self.pos += 1
                return node
            raise self.error(f"{name}(...): expected ',' or ')'" + (" but the spec ended" if not ch else f", got {ch!r}"))


def parse_spec(spec: str) -> Leaf | Quoted | Call:
    """Parse a spec string into a small tree (``Leaf`` / ``Quoted`` / ``Call``); ``SpecError`` on bad syntax."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(str(spec), "empty spec")
    return _Parser(spec).parse()


def _number(spec: str, where: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise SpecError(spec, f"{where} must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None


#: Provider prefixes of an API leaf, and the aliases read as one of them.
API_PROVIDERS = ("anthropic", "openai")
API_ALIASES = {"claude": "anthropic"}


@dataclass(frozen=True)
class ApiLeaf:
    """An API leaf ``<provider>:<model>[@<base_url>][#structured|#free_text]`` split into its parts
    (``provider`` is ``anthropic`` or ``openai``, an alias already resolved; ``mode`` ``None`` when the spec
    names none)."""

    provider: str
    model: str
    base_url: str | None
    mode: str | None


def parse_api_leaf(text: str, spec: str | None = None) -> ApiLeaf | None:
    """The parts of ``text`` when it is an API leaf (``anthropic:``, ``openai:`` or the alias ``claude:``),
    else ``None``. The ``#mode`` suffix is split off last (``rpartition``), the model from the URL at the
    first ``@``. ``SpecError`` (naming ``spec``, default ``text``) for an unknown mode, no model or an
    empty URL. One grammar for every verb: the evaluation judges (:func:`build_judge`) and the reference
    judge (``axon_eval.reference.make_judge``) both read their leaves here."""
    from ._llm import MODES

    spec = text if spec is None else spec
    kind, sep, rest = text.strip().partition(":")
    kind = API_ALIASES.get(kind, kind)
    if not sep or kind not in API_PROVIDERS or not rest:
        return None
    form = f"{kind}:<model>[@<base_url>][#free_text]"
    body, hash_, mode = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if hash_ and mode not in MODES:
        raise SpecError(spec, f"unknown judging mode {mode!r} in {text!r}; expected #structured or #free_text "
                              f"({form})")
    model, at, base_url = body.partition("@")
    model, base_url = model.strip(), base_url.strip()
    if not model or (at and not base_url):
        raise SpecError(spec, f"{kind} spec {text!r} needs {form}")
    return ApiLeaf(kind, model, base_url if at else None, mode if hash_ else None)


def _build_api_leaf(leaf: ApiLeaf, text: str, spec: str, options: dict[str, Any]) -> Judge:
    """An Anthropic or OpenAI-compatible judge from a parsed leaf (:func:`parse_api_leaf`).

    A mode in the spec and a different ``mode=`` option conflict (``SpecError``); an invalid URL is a
    ``SpecError`` naming it with credentials masked.
    """
    from ._llm import InvalidEndpoint, mask_url

    leaf_options = dict(options)
    if leaf.base_url is not None:
        leaf_options["base_url"] = leaf.base_url
    if leaf.mode is not None:
        if options.get("mode") not in (None, leaf.mode):
            raise SpecError(spec, f"{text!r} asks for mode {leaf.mode!r} but the option mode={options['mode']!r} "
                                  "was given too")
        leaf_options["mode"] = leaf.mode
    if leaf.provider == "anthropic":
        from .anthropic_judge import AnthropicJudge as judge_class
    else:
        from .openai_judge import OpenAIJudge as judge_class  # type: ignore[assignment]
    try:
        return judge_class(leaf.model, **leaf_options)
    except InvalidEndpoint as exc:  # show the spec with this URL masked even when it has no scheme
        base_url = leaf.base_url or ""
        raise SpecError(spec.replace(base_url, mask_url(base_url)) if base_url else spec, str(exc)) from None


def _no_prompt_file(spec: str, what: str, options: dict[str, Any]) -> None:
    """A prompt file is for API judges only: ``SpecError`` when one reaches ``what``."""
    if options.get("prompt_file") is not None:
        raise SpecError(spec, f"{what} has no prompt: a prompt file ({options['prompt_file']!r}) applies to "
                              "anthropic:/openai: judges only")


def _build_fitted(spec: str, path: str | None, options: dict[str, Any], lexicon: str | None = None) -> Judge:
    """The fitted offline judge with the packaged coefficients, or those of the file ``path``."""
    _no_prompt_file(spec, "the heuristic judge", options)
    from .heuristic.fitted import FittedHeuristicJudge

    try:
        return FittedHeuristicJudge(path, lexicon=lexicon)
    except ValueError as exc:  # an unreadable or foreign coefficient file, an unknown lexicon
        raise SpecError(spec, str(exc)) from None


def _build_rules(spec: str, lexicon: str | None, options: dict[str, Any]) -> Judge:
    """The earlier rule judge (``heuristic-rules``), with a domain lexicon."""
    _no_prompt_file(spec, "the rule judge", options)
    from .heuristic import HeuristicJudge  # lazy: written and owned elsewhere

    try:
        return HeuristicJudge(lexicon=lexicon)
    except ValueError as exc:  # an unknown lexicon: the message names the available ones
        raise SpecError(spec, str(exc)) from None


def _build(node: Leaf | Quoted | Call, spec: str, options: dict[str, Any]) -> Judge:
    if isinstance(node, Quoted):
        node = Leaf(node.text)
    if isinstance(node, Leaf):
        text = node.text
        if text in ("heuristic", "heuristic-fitted"):
            return _build_fitted(spec, None, options)
        if text == RULES_ALIAS:
            return _build_rules(spec, None, options)
        fitted = _FITTED_CALL.fullmatch(text)
        if fitted is not None:  # a hyphenated name is read as a leaf: heuristic-fitted(file=<path>)
            inner = parse_spec(f"heuristic({fitted.group(1)})")
            if (not isinstance(inner, Call) or inner.args or set(inner.kwargs) != {"file"}
                    or not inner.kwargs["file"].strip()):
                raise SpecError(spec, "heuristic-fitted() takes only heuristic-fitted(file=<coefficients.json>)")
            return _build_fitted(spec, inner.kwargs["file"].strip(), options)
        rules = _RULES_CALL.fullmatch(text)
        if rules is not None:  # heuristic-rules(lexicon=<name>)
            inner = parse_spec(f"heuristic({rules.group(1)})")
            if not isinstance(inner, Call) or inner.args or set(inner.kwargs) - {"lexicon"}:
                raise SpecError(spec, "heuristic-rules() takes only heuristic-rules(lexicon=<name>)")
            return _build_rules(spec, inner.kwargs.get("lexicon"), options)
        leaf = parse_api_leaf(text, spec)
        if leaf is not None:
            return _build_api_leaf(leaf, text, spec, options)
        raise SpecError(spec, f"unknown judge {text!r}")
    if node.name == "heuristic":
        if node.args or set(node.kwargs) - {"lexicon"}:
            raise SpecError(spec, "heuristic() takes only heuristic(lexicon=<name>)")
        return _build_fitted(spec, None, options, lexicon=node.kwargs.get("lexicon"))
    from .wrappers import EnsembleJudge, NoiseJudge, RepeatJudge, ReplayJudge, SimulatedJudge

    def check_kwargs(allowed: set[str]) -> None:
        unknown = sorted(set(node.kwargs) - allowed)
        if unknown:
            raise SpecError(spec, f"{node.name}() got unknown keyword {unknown[0]!r}; allowed: {sorted(allowed)}")

    if node.name == "repeat":
        check_kwargs({"n"})
        args = list(node.args)
        if "n" in node.kwargs:
            n_text = node.kwargs["n"]
        elif len(args) == 2 and isinstance(args[1], Leaf):
            n_text = args.pop().text
        else:
            raise SpecError(spec, "repeat needs repeat(<spec>, <n>)")
        if len(args) != 1:
            raise SpecError(spec, f"repeat takes one judge spec, got {len(args)}")
        n = _number(spec, "repeat n", n_text, int)
        if n < 1:
            raise SpecError(spec, f"repeat n must be >= 1, got {n}")
        return RepeatJudge(_build(args[0], spec, options), n)
    if node.name == "ensemble":
        check_kwargs({"reducer", "disagree_at"})
        reducer = node.kwargs.get("reducer", "mean")
        if len(node.args) < 2:
            raise SpecError(spec, f"ensemble needs at least 2 member specs, got {len(node.args)}")
        if reducer not in ("mean", "median", "majority"):
            raise SpecError(spec, f"unknown ensemble reducer {reducer!r}; expected mean, median or majority")
        if reducer == "median" and len(node.args) == 2:
            raise SpecError(spec, "ensemble reducer=median with 2 members: the median of two values is their "
                                  "mean; use reducer=mean or add a third member")
        disagree_at = _number(spec, "ensemble disagree_at", node.kwargs.get("disagree_at", "2"), float)
        if not disagree_at > 0:
            raise SpecError(spec, f"ensemble disagree_at must be > 0 points, got {disagree_at}")
        return EnsembleJudge([_build(a, spec, options) for a in node.args], reducer=reducer, disagree_at=disagree_at)
    if node.name == "prompt":
        check_kwargs({"file"})
        path = node.kwargs.get("file", "").strip()
        if len(node.args) != 1 or not path:
            raise SpecError(spec, "prompt needs prompt(<spec>, file=<path>)")
        if isinstance(node.args[0], Quoted):
            raise SpecError(spec, "prompt takes a judge spec first, then file=<path>")
        if options.get("prompt_file") not in (None, path):
            raise SpecError(spec, f"prompt(..., file={path!r}) conflicts with the prompt file "
                                  f"{options['prompt_file']!r} given outside it")
        return _build(node.args[0], spec, {**options, "prompt_file": path})
    if node.name == "replay":
        check_kwargs(set())
        if len(node.args) != 1:
            raise SpecError(spec, "replay needs replay(<run folder>)")
        _no_prompt_file(spec, "a replayed run", options)
        arg = node.args[0]
        if isinstance(arg, Call):
            raise SpecError(spec, "replay takes a run folder, not a judge spec")
        return ReplayJudge(arg.text)
    if node.name == "noise":
        check_kwargs({"sd", "seed"})
        if len(node.args) != 1:
            raise SpecError(spec, f"noise takes one judge spec, got {len(node.args)}")
        if "sd" not in node.kwargs:
            raise SpecError(spec, "noise needs sd=<points>")
        sd = _number(spec, "noise sd", node.kwargs["sd"], float)
        seed = _number(spec, "noise seed", node.kwargs.get("seed", "0"), int)
        if sd < 0:
            raise SpecError(spec, f"noise sd must be >= 0, got {sd}")
        return NoiseJudge(_build(node.args[0], spec, options), sd=sd, seed=seed)
    if node.name == "simulate":
        check_kwargs({"sd", "difficulty", "seed", "edge", "corr"})
        if len(node.args) != 1:
            raise SpecError(spec, f"simulate takes one judge spec, got {len(node.args)}")
        params = {name: _number(spec, f"simulate {name}", node.kwargs[name], float)
                  for name in ("sd", "difficulty", "edge", "corr") if name in node.kwargs}
        seed = _number(spec, "simulate seed", node.kwargs.get("seed", "0"), int)
        try:
            return SimulatedJudge(_build(node.args[0], spec, options), seed=seed, **params)
        except ValueError as exc:
            raise SpecError(spec, str(exc)) from None
    raise SpecError(spec, f"unknown wrapper {node.name}(...); wrappers are {', '.join(WRAPPERS)}")


def with_prompt_file(spec: str, prompt_file: str | Path | None) -> str:
    """``spec`` with its API judges reading their system prompt from ``prompt_file``:
    ``prompt(<spec>, file='<path>')`` (the path quoted, so it may hold ``,`` and ``)``); ``spec`` unchanged
    when ``prompt_file`` is ``None``. ``ValueError`` for a path holding both quote characters."""
    if prompt_file is None:
        return spec
    path = str(prompt_file)
    quote = "'" if "'" not in path else '"'
    if quote in path:
        raise ValueError(f"prompt file path {path!r} holds both ' and \"; a judge spec cannot quote it")
    return f"prompt({spec}, file={quote}{path}{quote})"


def build_judge(spec: str, **options: Any) -> Judge:
    """Build a judge from ``spec`` (forms in the module docstring).

    ``options`` go to every API judge in the spec (``prompt_file=<path>``: their system prompt is read
    from that file, as with ``prompt(<spec>, file=<path>)``). Raises :class:`SpecError` (a ``ValueError``
    listing the valid forms) for an unknown or malformed spec, ``ValueError`` naming a prompt file that
    cannot be read, and ``MissingApiKey`` when an API judge's key is not in the environment.
    """
    from ._llm import redact_urls

    prompt_file = options.pop("prompt_file", None)
    if prompt_file is not None and str(prompt_file).strip():
        options["prompt_file"] = str(prompt_file)
    judge = _build(parse_spec(spec), spec, dict(options))
    judge.spec = redact_urls(spec.strip())  # what manifests record: URL credentials masked
    return judge
