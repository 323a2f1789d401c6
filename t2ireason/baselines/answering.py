"""A VLM judge answering a question about an image with one of given choices: yes/no (DSG), or a
multiple-choice question's choices (TIFA).

Two ways, chosen by the metric's ``answers`` option:

- ``"chat"``: the judge writes its answer (:meth:`Judge.chat`), which must be one of the choices once
  normalised the way the paper's code normalises it; any other reply is re-asked in the same conversation
  (``max_reasks`` times), then recorded as the question's failure with every raw reply, never read as a
  "no" (the authors' code counts whatever is not the expected answer as wrong);
- ``"probability"``: the choice the judge gives the highest probability (:meth:`Judge.answer_probability`,
  teacher-forced on a local model, the top log-probabilities of a one-token reply through an API): what a
  greedy judge limited to the choices would answer, read without sampling. A judge that gives every
  choice probability 0 leaves the question unanswered (a failure).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..images import JudgeImage
from ..judges.base import AnswerQuery, ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured

__all__ = ["ANSWERS", "Answer", "answer_choices", "choice_reader"]

#: how a judge answers (see the module docstring)
ANSWERS = ("chat", "probability")


@dataclass
class Answer:
    """The judge's answer to one question: the choice (None when it gave none that can be read) and how."""

    choice: str | None
    error: str | None = None
    replies: list[str] = field(default_factory=list)
    reasks: int = 0
    transient: bool = False
    #: choice -> probability (the probability way)
    probabilities: dict[str, float] | None = None


def choice_reader(choices: Sequence[str], normalise: Callable[[str], str]) -> Callable[[str], str]:
    """A parser of replies that must be one of ``choices`` once ``normalise``d (each choice too); it returns
    the choice as given, or raises :class:`ReplyParseError` (which re-asks)."""
    wanted = {normalise(c): c for c in choices}

    def read(text: str) -> str:
        said = normalise(text)
        if said in wanted:
            return wanted[said]
        shown = text.strip()[:80]
        raise ReplyParseError(f"the answer {shown!r} is not one of {', '.join(map(repr, choices))}: answer with one "
                              "of them only")

    return read


_SPACES = re.compile(r"\s+")


def answer_choices(judge: Any, items: Sequence[tuple[JudgeImage, str, Sequence[str]]], *, answers: str = "chat",
                   normalise: Callable[[str], str] = lambda s: _SPACES.sub(" ", s).strip().lower(),
                   image_first: bool = False, sampling: Sampling | None = None, max_reasks: int = 2,
                   progress: bool | str = False) -> list[Answer]:
    """The judge's answer to each ``(image, text, choices)``: ``text`` is the whole question as the paper asks
    it, sent with the image (after it, or before with ``image_first``) in one user turn, all items in one
    batch a round."""
    if answers == "probability":
        queries = [AnswerQuery(image, text, choice) for image, text, choices in items for choice in choices]
        flat = iter(judge.answer_probability(queries, progress=progress) if queries else [])
        out = []
        for _, _, choices in items:
            probabilities = {c: next(flat) for c in choices}
            best = max(probabilities.values())
            tied = [c for c, p in probabilities.items() if p == best]
            if best <= 0.0 or len(tied) > 1:
                why = "no probability" if best <= 0.0 else f"the same probability ({best:.3g})"
                out.append(Answer(None, f"the judge gives {' and '.join(map(repr, tied))} {why}",
                                  probabilities=probabilities))
            else:
                out.append(Answer(tied[0], probabilities=probabilities))
        return out
    if answers != "chat":
        raise ValueError(f"answers must be one of {', '.join(ANSWERS)}, got {answers!r}")
    requests = [ChatRequest.simple(*((image, text) if image_first else (text, image)), sampling=sampling)
                for image, text, _ in items]
    parsed = ask_structured(judge, requests, [choice_reader(c, normalise) for _, _, c in items],
                            max_reasks=max_reasks, progress=progress)
    return [Answer(p.value if p.ok else None, p.error, p.texts, p.reasks, p.transient) for p in parsed]
