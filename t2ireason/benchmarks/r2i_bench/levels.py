"""The scores each R2I-Bench question may get: its criterion's own levels, read from the criterion's text
(mostly 1 / 0.5 / 0; some 0.75, 0.3..., or ranges such as 0.7-0.9), the scores every question gets when
they cannot be read, and how levels are said to a judge, put in a JSON schema and checked."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["ALLOWED_SCORES", "DEFAULT_LEVELS", "FROM_CRITERIA", "Levels", "criterion_levels", "question_levels",
           "score_levels", "levels_text", "in_levels", "level_schema", "as_levels"]

#: the scores most of the release's criteria define (1, 0.5 and 0): the levels of a criterion whose own
#: levels cannot be read (:func:`criterion_levels`)
ALLOWED_SCORES = (0.0, 0.5, 1.0)
#: a criterion's levels: (low, high) pairs, sorted; a point level has low == high, a range level ("0.7-0.9")
#: accepts any score from low to high
Levels = tuple[tuple[float, float], ...]
DEFAULT_LEVELS: Levels = tuple((a, a) for a in ALLOWED_SCORES)
#: ``allowed_scores="criteria"`` (the default): each question's levels read from its own criterion
FROM_CRITERIA = "criteria"

_NUMBER = r"(?<!\d)(?<!\d\.)\d+(?:\.\d+)?(?![\d.]*\d)"  # a whole number, not a piece of one (2.5, 1.64)


def _level_number(tag: str) -> str:
    """A level's number, or a range of two ("0.7-0.9", "0.1 to 0.3"), in named groups ``lo<tag>``/``hi<tag>``."""
    return rf"(?P<lo{tag}>{_NUMBER})(?:\s*(?:-|–|—|~|to)\s*(?P<hi{tag}>{_NUMBER}))?"


_UNIT = r"(?:\s*(?:points?|pts?|分))"
#: what opens a level's description: ":", "=", an arrow, " |", a dash before a word (never "2:3", "=2", "17-step")
_OPENS = r"(?::(?!\d)|=(?!\s*\d)|[→➔](?=\s)|->|\s\||[–—](?!\s*\d)|-(?=\s+\D))"
#: the ways the real criteria write a level, e.g. "1.0: ...", "0.5 (Partially Correct) – ...", "0.7-0.9: ...",
#: "**1.0** → ...", "{'0.5': '...'}", "Score 0.5 if ...", "0.5 if ...", "(0.5 points)", "(0.5 points, e.g. ...)",
#: "Full (1): ...", "[0.4] ...", a reverse scale's "0 (score 1) → ..." (the level is the score in parentheses),
#: and a level glued to the text before it ("...of image width0.5: ...", "...>10%0: ...")
_LEVEL = re.compile(
    r"(?:^|(?<=[\s.;,|'\"\[{()\]:*>%])|(?-i:(?<=[a-z])))" + _level_number("a") + _UNIT + "?"
    + r"[\s'\"*]*(?:\((?:\s*score\s+(?P<score>" + _NUMBER + r")\s*|[^()]{1,40})\)[\s'\"*]*)?" + _OPENS
    + r"|\bscore['\"]?\s*(?:of|is|:|=)?\s*" + _level_number("b") + r"(?!\s*(?:-|–|—|to)\s*\d)"
    + r"|(?:^|(?<=[\s,;(]))" + _level_number("c") + _UNIT + r"?\s+if\b"
    + r"|\(" + _level_number("d") + _UNIT + r"[),;]"
    + r"|\(" + _level_number("e") + r"\)\s*" + _OPENS
    + r"|\[" + _level_number("f") + r"\]",
    re.IGNORECASE)
#: a range from 0 to 1 beside other levels is the scale's header ("Scoring (0-1): - 0: ... - 1: ..."), not a level
_WHOLE_SCALE = (0.0, 1.0)


@functools.lru_cache(maxsize=65536)  # the same criterion is read at build, on every scoring and in reports
def criterion_levels(criterion: str) -> Levels | None:
    """The scores a criterion defines, read from its text: ``((low, high), ...)`` sorted, a point level
    with ``low == high``, a range level ("0.9-1: ...") as its two ends; None when they cannot be read.

    A level is a number (or a range of two) in the place where the real criteria put one: at the start
    of the text or after a separator, before the mark that opens its description (``1.0: ...``, ``0.5
    (Partially Correct) – ...``, ``0.7-0.9: ...``, ``**0.75** → ...``, ``{'0.5': '...'}``, ``0.3 = ...``,
    ``Score 0.5 if ...``, ``(0.5 points)``, ``[0.4] ...``). Numbers inside a description (``2:3``,
    ``(2.5, 1.1)``, ``10-30%``, ``17-step``) are not levels. Unreadable: fewer than two levels, or a level
    outside 0 to 1 (a points scale, "5: ... | 1: ...", or a number the reader took for a level), where
    the judge's 0-to-1 answer cannot follow the text."""
    found = set()
    for m in _LEVEL.finditer(criterion):
        if m["score"] is not None:  # "0 (score 1) → ...": a reverse scale's value, then the level it scores
            found.add((float(m["score"]),) * 2)
            continue
        tag = next(t for t in "abcdef" if m["lo" + t] is not None)
        lo = float(m["lo" + tag])
        hi = float(m["hi" + tag]) if m["hi" + tag] else lo
        found.add((min(lo, hi), max(lo, hi)))
    if len(found) > 2:
        found.discard(_WHOLE_SCALE)
    if len(found) < 2 or any(hi > 1 for _, hi in found):
        return None
    return tuple(sorted(found))


def question_levels(question: dict[str, Any]) -> tuple[Levels, bool]:
    """The levels a question is scored on, and whether they were read from its criterion (False: the
    criterion's cannot be read, :data:`DEFAULT_LEVELS` are used)."""
    criterion = question.get("criterion")
    levels = criterion_levels(criterion) if isinstance(criterion, str) else None
    return (levels, True) if levels is not None else (DEFAULT_LEVELS, False)


def levels_text(levels: Levels | None) -> str:
    """'one of the scores 0, 0.5 or 1', 'one of the scores 0 or 1, or any score from 0.7 to 0.9'."""
    if levels is None:
        return "a score between 0 and 1"

    def either(items: list[str]) -> str:
        return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else items[0]

    points = [f"{lo:g}" for lo, hi in levels if lo == hi]
    ranges = [f"any score from {lo:g} to {hi:g}" for lo, hi in levels if lo != hi]
    shown = [f"{'one of the scores' if len(points) > 1 else 'the score'} {either(points)}"] if points else []
    return ", or ".join(shown + ([either(ranges)] if ranges else []))


def in_levels(value: float, levels: Levels) -> bool:
    """Whether ``value`` is one of the levels (a score read by the parser is already snapped to a level's
    ends within rounding: ``parsing.snapped``)."""
    return any(lo <= value <= hi for lo, hi in levels)


def level_schema(levels: Levels | None) -> dict[str, Any]:
    """One question's score in a JSON schema: its point levels as an enum, each range level as a bounded number."""
    if levels is None:
        return {"type": "number", "minimum": 0, "maximum": 1}
    points = {"enum": [int(lo) if float(lo).is_integer() else lo for lo, hi in levels if lo == hi]}
    ranges = [{"type": "number", "minimum": lo, "maximum": hi} for lo, hi in levels if lo != hi]
    if not ranges:
        return points
    return {"anyOf": ([points] if points["enum"] else []) + ranges}


def as_levels(allowed: Sequence[float] | None) -> Levels | None:
    return None if allowed is None else tuple(sorted((float(a), float(a)) for a in set(allowed)))


def score_levels(questions: Sequence[dict[str, Any]], allowed_scores: Any = FROM_CRITERIA) -> list[Levels | None]:
    """The levels each question may be scored on: ``"criteria"`` (default) each its own criterion's
    (:func:`question_levels`), a sequence of numbers those for every question, None any number in [0, 1]."""
    if isinstance(allowed_scores, str):
        if allowed_scores != FROM_CRITERIA:
            raise ValueError(f"allowed_scores must be {FROM_CRITERIA!r}, a sequence of scores or None, "
                             f"got {allowed_scores!r}")
        return [question_levels(q)[0] for q in questions]
    return [as_levels(allowed_scores)] * len(questions)

