"""Bundled turns: the part of the answer that serves this segment's question."""

from __future__ import annotations

from typing import Any

from ...evidence import split_questions
from .lexicon import DEFAULT, Lexicon
from .question import QuestionProfile, profile_question
from .text import _TOKEN, _norm, _stem, split_sentences


# =============================================================================================
# Bundled turns: the part of the answer that serves this segment
# =============================================================================================
def _overlap(profile: QuestionProfile, sentence: str) -> float:
    s = sentence.lower()
    score = 2.0 * sum(1 for e in profile.entities if e.lower() in s)
    score += 2.0 * sum(1 for meas in profile.measures if profile.lexicon.measures[meas][0].search(sentence))
    score += sum(1 for y in profile.years if str(y) in s)
    words = {_stem(w) for w in _TOKEN.findall(_norm(sentence)) if len(w) > 3}
    score += 0.5 * len({w for w in profile.stems if len(w) > 3} & words)
    return score


def answer_for_segment(view: Any, lexicon: Lexicon = DEFAULT) -> str | None:
    """The part of the answer that addresses this segment's question (whole answer when not bundled).

    Numbered answers (``1. ... 2. ...``) with one item per segment give the segment's item; an
    answer of exactly one sentence per segment gives the segment's sentence. Otherwise each sentence goes to the segment question it overlaps most (entities, measures,
    years, content words); when the other questions are not recoverable, sentences overlapping
    this question by at least half of the best overlap are kept. Falls back to the whole answer.
    """
    answer = view.answer
    if answer is None or not getattr(view, "bundled", False):
        return answer
    n, k = view.n_segments, view.segment_index
    items = split_questions(answer)
    if len(items) == n:
        return items[k - 1]
    sentences = [answer[a:b].strip() for a, b in split_sentences(answer)]
    if len(sentences) <= 1:
        return answer
    if len(sentences) == n:  # one sentence per question, answered in order
        return sentences[k - 1]
    questions = split_questions(view.full_question)
    own = profile_question(view.question, lexicon)
    if len(questions) == n:
        profiles = [profile_question(q, lexicon) for q in questions]
        keep = []
        for s in sentences:
            scores = [_overlap(p, s) for p in profiles]
            best = max(scores)
            if best == 0 or scores[k - 1] == best:
                keep.append(s)
    else:
        scores = [_overlap(own, s) for s in sentences]
        best = max(scores)
        keep = [s for s, sc in zip(sentences, scores) if best > 0 and sc >= best / 2]
    return " ".join(keep) if keep else answer


