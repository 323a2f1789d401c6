"""The MT2IE agent's protocol: the prompts it asks (appendix F's rewrites, appendix C's questions,
Figure 8's aesthetic score, in ``templates/mt2ie/``) and how each reply is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...judges import ChatRequest, Sampling
from ...parsing import ReplyParseError, as_score
from ...prompts import render

__all__ = ["BINS", "PROMPT_TEMPERATURE", "TEMPLATES", "adaptive_bin", "prompt_request", "parse_prompt", "parse_yes_no",
           "parse_questions", "parse_choice", "parse_aesthetic"]

#: prompt writing "with temperature 0.3 and no top-k sampling" (appendix F)
PROMPT_TEMPERATURE = 0.3
#: adaptive rewrite per score bin (appendix F, Figures 18-20), in score order
BINS = ("halve", "reduce", "rephrase", "increase", "increase_more")
TEMPLATES = "mt2ie"


def adaptive_bin(score: float) -> str:
    """The rewrite appendix F assigns to the previous image's score: [0, 0.2] halve,
    (0.2, 0.4] reduce, (0.4, 0.6) rephrase, [0.6, 0.8) increase, [0.8, 1] increase_more."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"adaptive prompting needs a score in [0, 1], got {score}")
    if score <= 0.2:
        return "halve"
    if score <= 0.4:
        return "reduce"
    if score < 0.6:
        return "rephrase"
    return "increase" if score < 0.8 else "increase_more"


def prompt_request(previous: str, template: str = "iterative", *, temperature: float = PROMPT_TEMPERATURE,
                   seed: int | None = None) -> ChatRequest:
    """Ask for the next prompt: appendix F's system prompt ``template`` (``iterative`` or
    ``adaptive_<bin>``), then the existing prompt as the user turn."""
    sampling = Sampling(temperature=temperature, max_tokens=256, seed=seed if temperature > 0 else None)
    return ChatRequest.simple(f'Existing prompt: "{previous}"', system_prompt=render(TEMPLATES, template),
                              sampling=sampling)


_PROMPT_MARK = re.compile(r"(?<!existing )\bprompt\s*:", re.IGNORECASE)
_QUOTES = "\"'“”‘’"


def parse_prompt(text: str) -> str:
    """The new prompt: what follows the last "Prompt:" (as the figures ask), up to the end of its
    line; a reply of one line without the marker is taken whole."""
    marks = list(_PROMPT_MARK.finditer(text))
    if marks:
        rest = text[marks[-1].end():].strip()
        line = rest.splitlines()[0] if rest else ""
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) != 1:
            raise ReplyParseError('no "Prompt:" line in the reply')
        line = lines[0]
    prompt = line.strip().strip(_QUOTES).strip()
    if not prompt:
        raise ReplyParseError('the reply gives an empty prompt after "Prompt:"')
    return prompt


def parse_yes_no(text: str) -> bool:
    m = re.match(r"\W*(yes|no)\b", text, re.IGNORECASE)
    if not m:
        raise ReplyParseError("the reply is neither yes nor no")
    return m.group(1).lower() == "yes"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _question_block(text: str) -> list[dict[str, Any]]:
    # the paper's own examples run "A: yes Q: next question" together: put each field on its line
    text = re.sub(r"(?<=\S)[ \t]+(?=(?:Q|A|Choices)\s*:)", "\n", text)
    found, item = [], {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in ("q", "choices", "a"):
            continue
        if key == "q":
            item = {"question": value}
        elif key == "choices" and "question" in item:
            item["choices"] = [c.strip() for c in value.split(",") if c.strip()]
        elif key == "a" and item.get("choices"):
            answer = next((c for c in item["choices"] if _norm(c) == _norm(value)), None)
            if item["question"] and answer is not None:  # an answer outside its choices is unusable
                found.append({**item, "answer": answer})
            item = {}
    return found


def parse_questions(text: str) -> list[dict[str, Any]]:
    """Multiple-choice questions in appendix C's ``Q:`` / ``Choices:`` / ``A:`` layout, as
    ``{"question", "choices", "answer"}``. A reply that repeats the few-shot pattern with
    ``Image description:`` lines is cut there: the first block holding questions counts."""
    for block in re.split(r"(?im)^\s*image description\s*:.*$", text):
        questions = _question_block(block)
        if questions:
            return questions
    raise ReplyParseError("no complete question (Q:, Choices:, A: with an answer among the choices)")


def parse_choice(text: str, choices: Sequence[str]) -> str:
    """The choice a reply names: equal to one (ignoring case and punctuation), or containing exactly one."""
    reply = _norm(text)
    normed = {_norm(c): c for c in choices}
    if reply in normed:
        return normed[reply]
    hits = [c for n, c in normed.items() if n and re.search(rf"\b{re.escape(n)}\b", reply)]
    if len(hits) != 1:
        raise ReplyParseError(f"the answer names {'several' if hits else 'none'} of the choices ({', '.join(choices)})")
    return hits[0]


def parse_aesthetic(text: str) -> float:
    """The single 0-10 score Figure 8 asks for ("7", "7/10" and "7 out of 10" are all 7)."""
    numbers = set(re.findall(r"-?\d+(?:\.\d+)?", re.sub(r"(?:/|out of)\s*10\b", "", text)))
    if len(numbers) != 1:
        raise ReplyParseError(f"expected one score between 0 and 10, found {len(numbers) or 'no'} numbers")
    return as_score(numbers.pop(), lo=0, hi=10, name="aesthetic score")

