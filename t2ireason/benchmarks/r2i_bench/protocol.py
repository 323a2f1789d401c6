"""The R2I-Bench judge protocol: an instance's questions rendered into one request (the paper's appendix
A.4 template, or the authors' own text), the reply's fenced JSON block parsed and checked against each
question's levels across re-asks, and the presets (paper, official) that choose between them."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ...judges.base import Sampling
from ...parsing import MAX_REPLY_CHARS, ReplyParseError, as_score, extract_json, snapped
from ...prompts import render
from .levels import (
    ALLOWED_SCORES,
    FROM_CRITERIA,
    Levels,
    as_levels,
    in_levels,
    level_schema,
    levels_text,
    score_levels,
)
from .release import OFFICIAL_SUBCATEGORIES, norm_id

__all__ = ["PRESETS", "REASK_PROMPT", "REPLY_JSON", "TEMPLATES", "TEMPLATE_KINDS", "ScoreCollector", "answer_json",
           "official_template", "question_keys", "render_request", "reply_schema"]

#: the package folder of the judge templates (t2ireason/templates/r2i_bench/)
TEMPLATES = "r2i_bench"
#: the request texts: the paper's appendix A.4 template, or the authors' own (instance.py)
TEMPLATE_KINDS = ("paper", "official")
#: which JSON of a reply is read: the project's "last" (the paper template's default), the authors' "first"
#: (the official template's default; :func:`answer_json`)
REPLY_JSON = ("last", "first")

REASK_PROMPT = (
    "Your previous reply could not be used in full: {error}. "
    "End your reply with the fenced JSON block that maps every question id to its score."
)


#: the judge settings of the paper and of the authors' code (Benchmark.presets)
PRESETS = {
    # The paper (section 3, appendix A.4) and the official code (evaluation.py, instance.py) both use
    # GPT-4o at temperature 0.1. The `official` preset reproduces the official code's deliberate
    # choices: its own prompt text and question layout, sent before the image; questions the judge
    # leaves unanswered dropped from the weighted mean ("answered", each drop recorded instead of
    # silent); instance and category scores rounded to 2 decimals; only the 28 subcategories its
    # instance.py lists. Its bugs are not reproduced (metrics/r2i_score/README.md lists each). Both
    # score each question on its own criterion's levels; the paper preset adds Table 13's dimensions,
    # inferred from the weights (the release labels none).
    "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1)},
              "options": {"missing": "fail", "template": "paper", "dimensions": "inferred"}},
    # Its request (instance.py's get_llm_response) names the model and temperature 0.1 and nothing
    # else: no max_tokens, no top_p (sampling_params), the server's defaults for the rest; its client,
    # OpenAI(api_key=...), tries a request 3 times (the openai package's 2 retries). Its template is
    # read as its evaluation.py reads replies (reply_json "first", the official template's default).
    "official": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1),
                                                            "sampling_params": ["temperature"], "max_retries": 2},
                 "options": {"missing": "answered", "template": "official", "round_scores": 2,
                             "subcategories": list(OFFICIAL_SUBCATEGORIES)}},
}


def _key(value: Any) -> str:
    """A question id as judges write it back: 'Q3', 'question 3', 3, '3.0' and '3' are one key."""
    k = str(value).strip().lower()
    k = re.sub(r"^(question|q)[\s_#-]*", "", k)
    return norm_id(k)


def question_keys(questions: Sequence[dict[str, Any]]) -> list[str]:
    """The key each question is asked and answered under: its id, or its position (1, 2, ...)
    when the ids of the instance are missing or repeated."""
    keys = [_key(q.get("id", "")) for q in questions]
    if all(keys) and len(set(keys)) == len(keys):
        return keys
    return [str(i) for i in range(1, len(questions) + 1)]


def render_request(row: dict[str, Any], keys: Sequence[str] | None = None,
                   allowed_scores: Any = FROM_CRITERIA, template: str = "paper") -> str:
    """The judge prompt for one instance.

    ``template="paper"``: the appendix A.4 protocol as the paper prints it, with the prompt, every
    question and its criterion in the project's layout, the ids the answer must score and, per
    question, the scores its criterion defines (``allowed_scores``: see :func:`score_levels`).
    ``template="official"``: the authors' own text (``instance.py``'s ``PROMPT``, byte for byte)
    with ``[PROMPT]`` and ``[QUESTION LIST]`` filled in and their question layout
    (``"<id>. <question> \\nCriteria: <criterion>"`` per line); unlike their code, which replaces
    ``[QUESTION_LIST]`` and so never sends the questions, the questions are filled in.
    """
    questions = row.get("questions") or []
    keys = list(keys) if keys is not None else question_keys(questions)
    if template == "official":
        listed = "\n".join(f"{k}. {q['question']} \nCriteria: {q['criterion']}" for k, q in zip(keys, questions))
        return official_template().replace("[PROMPT]", row["prompt"]).replace("[QUESTION LIST]", listed)
    if template != "paper":
        raise ValueError(f"template must be one of {TEMPLATE_KINDS}, got {template!r}")
    listed = [{"key": k, "question": q["question"], "criterion": q["criterion"]} for k, q in zip(keys, questions)]
    levels = [levels_text(lv) for lv in score_levels(questions, allowed_scores)]
    same = levels[0] if levels and len(set(levels)) == 1 else None
    return render(TEMPLATES, "image_evaluation", prompt=row["prompt"],
                  question_list=render(TEMPLATES, "question_list", questions=listed),
                  important_enforcement=render(TEMPLATES, "important_enforcement", ids=keys, scale=same,
                                               scales=list(zip(keys, levels))))


@functools.cache
def official_template() -> str:
    """The authors' judge prompt (``official_evaluation.txt`` after its citation header), exactly."""
    text = (resources.files("t2ireason") / "templates" / TEMPLATES / "official_evaluation.txt").read_text("utf-8")
    return text.split("-#}\n", 1)[1]


def reply_schema(keys: Sequence[str], levels: Any = ALLOWED_SCORES) -> dict[str, Any]:
    """The JSON the template's answer block holds: every question id mapped to its score, one of the
    levels of its criterion. ``levels``: one list of :data:`Levels` (or None) per key, or a sequence of
    scores (None: any number in [0, 1]) for every key."""
    per_key = list(levels) if levels and not isinstance(levels[0], (int, float)) else [as_levels(levels)] * len(keys)
    return {"title": "r2i_bench_scores", "type": "object",
            "properties": {k: level_schema(lv) for k, lv in zip(keys, per_key)},
            "required": list(keys), "additionalProperties": False}


class ScoreCollector:
    """Parses one instance's replies, keeping every valid score across re-asks.

    A re-ask names the missing or invalid ids, and judges often answer only
    those, or answer everything again; the first valid answer to each question is
    kept, and what a later reply says of a question already answered (another
    score, or an invalid one) is not read. Raises ReplyParseError, naming the
    questions still without a valid score, until every question has one.
    ``reply_json``: which JSON of a reply holds the answers (:func:`answer_json`).
    """

    def __init__(self, keys: Sequence[str], levels: Sequence[Levels | None], reply_json: str = "last"):
        self.keys, self.levels = list(keys), dict(zip(keys, levels))
        self.reply_json = reply_json
        self.scores: dict[str, float] = {}

    def __call__(self, text: str) -> dict[str, float]:
        answers = {_key(k): v for k, v in answer_json(text, self.reply_json).items()}
        problems = []
        for k in self.keys:
            if k in answers and k not in self.scores:
                try:
                    self.scores[k] = self._score(k, answers[k])
                except ReplyParseError as e:
                    problems.append(str(e))
        unanswered = self.unanswered
        if unanswered:
            problems.insert(0, f"no valid score for question(s) {', '.join(unanswered)}")
            raise ReplyParseError("; ".join(problems) + f" (the question ids are {', '.join(self.keys)})")
        return dict(self.scores)

    @property
    def unanswered(self) -> list[str]:
        """The questions without a valid score yet, in order."""
        return [k for k in self.keys if k not in self.scores]

    def _score(self, key: str, value: Any) -> float:
        """``value`` as question ``key``'s score: a number in [0, 1], snapped to its criterion's level
        within rounding (0.9999999999 is 1), one its criterion defines."""
        score = as_score(value, lo=0.0, hi=1.0, name=f"question {key}")
        levels = self.levels[key]
        if levels is None:
            return score
        score = snapped(score, [end for level in levels for end in level], score)
        if not in_levels(score, levels):
            raise ReplyParseError(f"question {key} has {score:g}, not a score its criteria define "
                                  f"({levels_text(levels)})")
        return score


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def answer_json(text: str, reply_json: str = "last") -> dict[str, Any]:
    """The JSON object of a reply that holds its answers.

    ``"last"``: the project's reading (:func:`~t2ireason.parsing.extract_json`: the last fenced block
    first, then bare JSON, repaired if broken), for the paper's template. ``"first"``: the authors'
    ``evaluation.py``, exactly: the first block matching ``re.search(r'```json\n(.*?)\n```')``, else
    the whole reply, with every control character removed and read by ``json.loads``, never repaired:
    a draft block before a corrected one is what they score, and a reply cut inside its JSON (even with
    ``finish_reason`` "stop") does not parse, as their script then skips the instance."""
    if reply_json == "last":
        return extract_json(text, expect=dict)
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyParseError(f"reply is {len(text):,} characters long, over the {MAX_REPLY_CHARS:,} the parser reads")
    block = _authors_block(text)
    body = _CONTROL.sub("", text if block is None else block)
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as e:
        where = "the reply (no ```json block closed in it)" if block is None else "its first ```json block"
        raise ReplyParseError(f"{where} is not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise ReplyParseError(f"the JSON of the reply is a {type(value).__name__}, not an object of question ids")
    return value


def _authors_block(text: str) -> str | None:
    """What ``re.search(r'```json\\n(.*?)\\n```', text, flags=re.DOTALL).group(1)`` gives (None where it
    finds nothing), in linear time: the first opening fence, up to the first closing one after it (when
    none follows the first opening, none follows a later one either)."""
    start = text.find("```json\n")
    if start < 0:
        return None
    end = text.find("\n```", start + 8)
    return None if end < 0 else text[start + 8:end]
