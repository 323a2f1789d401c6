"""TIFA (Hu et al., ICCV 2023, arXiv:2303.11897): text-to-image faithfulness by question answering.

Record -> request -> reply -> score, for one image:

1. an LLM writes the prompt's questions once (kept: :mod:`.questions`) with the authors' published few-shot
   prompt (``templates/tifa/question_generation.txt``, tifascore/question_gen.py: the caption appended, then
   "Entities"), read in the format their parse_resp reads (every line, spaces and a carriage return stripped,
   where theirs skips the reply's first six lines and keeps a stray carriage return): ``About <element>
   (<type>):`` blocks of ``Q:``, ``Choices:``
   (", "-separated) and ``A:`` lines, the reply ending at its first blank line (the stop sequence their
   openai_completion sends), types outside the paper's 12 left out, animal and human merged;
2. the question filter: a question asked twice is kept once, and a question whose answer is none of its choices
   is left out (no answer could be right; the authors' UnifiedQA check would drop it); a reply with no question
   left is re-asked, then the prompt's failure. With ``question_filter`` (``"unifiedqa"``: the authors' model),
   their UnifiedQA check runs too (:mod:`.qa_filter`): a text QA model answers each question from the prompt
   alone and the question is kept when it agrees with the LLM; a prompt none of whose questions pass fails.
   Without it (the default: it needs a second model, a T5-large), the questions are the LLM's;
3. a VLM judge answers each question with one of its choices (:mod:`.answering`): the image, then the authors'
   multiple-choice prompt (``templates/tifa/vqa_multiple_choice.txt``, their BLIP-2 prompt), the reply required
   to be one of the choices (case and a final period aside; else re-asked, then the question's failure, where
   the authors map any free-form answer to its nearest choice with SBERT); or the likeliest choice
   (``answers="probability"``);
4. the image's score is the share of its questions answered right (0-1); the per-type accuracy is the paper's
   Table 3 view.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..files import json_text
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured
from ..prompts import verbatim
from ..results import ImageResult, QuestionResult
from .answering import answer_choices
from .qa_filter import question_filter as question_filter_of
from .questions import Made, QuestionBaseline, QuestionMethod, made_failure

__all__ = ["TIFA", "PRESETS", "ELEMENT_TYPES", "QUESTION_SAMPLING", "parse_questions", "read_tifa_questions",
           "question_request"]

#: the element types the authors keep (tifascore/question_gen.py), animal and human then merged
ELEMENT_TYPES = ("object", "human", "animal", "food", "activity", "attribute", "counting", "color", "material",
                 "spatial", "location", "shape", "other")
#: how the question LLM is asked: tifascore/openai_api.py (temperature 0, 700 tokens)
QUESTION_SAMPLING = Sampling(temperature=0.0, max_tokens=700)

PRESETS = {
    # The repository's question LLM (gpt-3.5-turbo, temperature 0, 700 tokens). Its VQA models (mPLUG-large,
    # BLIP-2...) are no chat judges: the preset names none, pass one (judge=...).
    "paper": {"judge": None, "llm": "openai:gpt-3.5-turbo"},
}

_SCORE_OPTIONS = frozenset({"answers", "sampling", "max_reasks", "retry_failed"})


def question_request(caption: str, sampling: Sampling | None) -> ChatRequest:
    """The authors' question-generation prompt about ``caption``, one user message."""
    return ChatRequest.simple(verbatim("tifa", "question_generation").format(caption=caption), sampling=sampling)


def parse_questions(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """``(questions, notes)`` from a question-generation reply (see the module docstring, steps 1 and 2):
    each question ``{element, element_type, question, choices, answer}``; the notes say what was left out."""
    element = kind = question = choices = None
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for line in text.split("\n\n")[0].split("\n"):
        if line.startswith("About "):
            whole = line[len("About "):].rstrip().removesuffix(":")
            element, _, rest = whole.partition(" (")
            kind = rest.split(")")[0] if rest else None
        elif line.startswith("Q: "):
            question = line[3:].strip()
        elif line.startswith("Choices:"):
            choices = [c.strip() for c in line[len("Choices:"):].split(", ") if c.strip()]
        elif line.startswith("A: "):
            answer = line[3:].strip()
            if element and question and choices:
                found.append({"element": element, "element_type": kind, "question": question,
                              "choices": choices, "answer": answer})
            question = choices = None
    kept, seen = [], set()
    for q in found:
        if q["element_type"] not in ELEMENT_TYPES:
            notes.append(f"{q['question']!r}: element type {q['element_type']!r} is not one of the paper's")
        elif q["question"] in seen:
            notes.append(f"{q['question']!r}: asked twice")
        elif q["answer"] not in q["choices"]:
            notes.append(f"{q['question']!r}: its answer {q['answer']!r} is none of its choices")
        else:
            seen.add(q["question"])
            kept.append({**q, "element_type": "animal/human" if q["element_type"] in ("animal", "human")
                         else q["element_type"]})
    if not kept:
        raise ReplyParseError("no question in the asked format (About <element> (<type>): then Q:, Choices:, A: "
                              "lines)" + (f"; left out: {'; '.join(notes[:3])}" if notes else ""))
    return kept, notes


class TIFAMethod(QuestionMethod):
    """A prompt's TIFA questions, made with the authors' prompt (and checked by ``qa_filter``, a
    :class:`~.qa_filter.QuestionFilter`, when given)."""

    metric = "tifa"
    templates = ("tifa/question_generation.txt",)

    def __init__(self, sampling: Sampling, max_reasks: int = 2, qa_filter: Any = None):
        super().__init__(sampling, max_reasks)
        self.qa_filter = qa_filter

    def method(self) -> dict[str, Any]:
        method = super().method()
        return {**method, "question_filter": self.qa_filter.identity()} if self.qa_filter is not None else method

    @property
    def features(self) -> Any:
        import datasets

        s = datasets.Value("string")
        return datasets.Features({"id": s, "prompt": s, "extra": s, "questions": datasets.List(
            {"element": s, "element_type": s, "question": s, "choices": datasets.List(s), "answer": s})})

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        parsed = ask_structured(llm, [question_request(i["prompt"], self.sampling) for i in inputs], parse_questions,
                                max_reasks=self.max_reasks)
        model = llm.identity().get("model")
        out = []
        # the filter's QA model asked once for every prompt's questions (two batched passes), not prompt by prompt
        ok = [k for k, p in enumerate(parsed) if p.ok] if self.qa_filter is not None else []
        filtered = dict(zip(ok, self.qa_filter.keep_many([(parsed[k].value[0], inputs[k]["prompt"]) for k in ok])
                            if ok else []))
        for k, (i, ident, p) in enumerate(zip(inputs, idents, parsed)):
            questions, notes = p.value if p.ok else ([], [])
            info = {"model": model, "reasks": p.reasks, "outputs": p.texts, "left_out": notes}
            failure = None if p.ok else made_failure("TIFA questions", p)
            if k in filtered:
                questions, dropped = filtered[k]
                info.update(filtered_by=self.qa_filter.identity()["model"], left_out=notes + dropped)
                if not questions:
                    failure = (f"TIFA questions: none of the {len(p.value[0])} passed the question filter "
                               f"({self.qa_filter.identity()['model']}): {'; '.join(dropped[:2])}")
            row = {"id": str(ident), "prompt": i["prompt"], "questions": questions,
                   "extra": json_text({"questions_by": info})}
            out.append(Made(row, failure))
        return out


def read_tifa_questions(path: str | Path) -> list[dict[str, Any]]:
    """The rows (``id``, ``prompt``, ``tifa_questions``) of a TIFA question file as the authors release it
    (tifa_v1.0/tifa_v1.0_question_answers.json, sample/sample_question_answers.json: a JSON list of questions,
    each with ``id``, ``caption``, ``question``, ``choices``, ``answer``, ``element``, ``element_type``), one
    row per caption in file order, as given (no filter)."""
    records = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(records, list):
        raise ValueError(f"{path}: a TIFA question file is a JSON list of questions")
    rows: dict[str, dict[str, Any]] = {}
    for n, r in enumerate(records):
        try:
            row = rows.setdefault(str(r["id"]), {"id": str(r["id"]), "prompt": r["caption"], "tifa_questions": []})
            row["tifa_questions"].append({k: r[k] for k in ("element", "element_type", "question", "choices",
                                                             "answer")})
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}, question {n}: not a TIFA question ({e})") from None
    return list(rows.values())


class TIFA(QuestionBaseline):
    """The TIFA score of each image against its prompt (see the module docstring). ``llm``, ``llm_kwargs``,
    ``store``, ``cache``, ``question_sampling``, ``question_max_reasks``: as :class:`QuestionBaseline`'s (default
    sampling: the authors' temperature 0 and 700 tokens). ``question_filter``: the authors' UnifiedQA check of
    the questions made (``"unifiedqa"`` or True: their model; a Hub id or folder: another text QA model; a
    :class:`~.qa_filter.QuestionFilter`); none by default. Questions made with and without it are kept apart."""

    def __init__(self, llm: Any = None, *, question_filter: Any = None, **kwargs: Any):
        super().__init__(llm, **kwargs)
        self.questions.method.qa_filter = question_filter_of(question_filter)

    name = "tifa"
    pretty_name = "TIFA"
    presets = PRESETS
    default_preset = "paper"
    score_options = _SCORE_OPTIONS
    load_options = frozenset({"question_filter"})
    method = TIFAMethod
    question_sampling = QUESTION_SAMPLING
    given_field = "tifa_questions"
    citation = """@inproceedings{hu2023tifa,
  title     = {{TIFA}: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question Answering},
  author    = {Hu, Yushi and Liu, Benlin and Kasai, Jungo and Wang, Yizhong and Ostendorf, Mari and Krishna, Ranjay
               and Smith, Noah A.},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2023}
}"""

    def score(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, *, progress: bool | str = False,
              **options: Any) -> list[ImageResult]:
        """One result per image. Options: ``answers`` ("chat", default, or "probability"), ``sampling`` (the
        judge's), ``max_reasks`` (follow-ups when an answer is none of the choices, default 2). ``rows``: the
        prompts (strings, or dicts with a ``prompt``, an ``id``, and ``tifa_questions`` when given, as
        :func:`read_tifa_questions` gives them)."""
        opts = self.options(options, _SCORE_OPTIONS)
        made, failures, loaded, answers, sampling = self.asked(rows, images, judge, opts)
        if not made:
            return []
        results, asked = self.to_ask(images, made, failures, loaded)
        template = verbatim("tifa", "vqa_multiple_choice")
        items = [(image, template.format(question=q["question"], choices=", ".join(q["choices"])), q["choices"])
                 for _, row, image in asked for q in row["questions"]]
        replies = iter(answer_choices(judge, items, answers=answers, normalise=_normalised, image_first=True,
                                      sampling=sampling, max_reasks=opts.get("max_reasks", 2), progress=progress))
        for result, row, _ in asked:
            scored(result, row["questions"], [next(replies) for _ in row["questions"]])
            result.context["questions_by"] = (json.loads(row.get("extra") or "{}").get("questions_by") or {}).get(
                "model")
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The mean TIFA score x 100 with its interval, and the accuracy (x 100) of each element type over the
        questions of the scored images."""
        out = super().aggregate(results, **options)
        by: dict[str, list[float]] = defaultdict(list)
        for r in results:
            if r.score is not None:
                for q in r.questions:
                    by[q.group or "other"].append(q.score)
        out["accuracy_by_type"] = {k: 100.0 * sum(v) / len(v) for k, v in sorted(by.items())}
        return out


_SPACES = re.compile(r"\s+")


def _normalised(text: str) -> str:
    """An answer compared with the choices: spaces collapsed, stripped, lower case, a final period dropped."""
    return _SPACES.sub(" ", text).strip().lower().removesuffix(".").strip()


def scored(result: ImageResult, questions: Sequence[dict[str, Any]], answers: Sequence[Any]) -> None:
    """The image's questions, right (1) or wrong (0) by the judge's choice, and its score: the share right (or
    why not: a question without an answer)."""
    for q, a in zip(questions, answers):
        right = None if a.choice is None else float(a.choice == q["answer"])
        result.questions.append(QuestionResult(
            question=q["question"], score=right, criterion=f"choices: {', '.join(q['choices'])}; answer: {q['answer']}",
            group=q["element_type"], id=q.get("element"), reasoning=a.choice if a.choice is not None else a.error))
        result.replies.extend(a.replies)
        result.reasks += a.reasks
    probabilities = {q["question"]: a.probabilities for q, a in zip(questions, answers) if a.probabilities}
    if probabilities:
        result.context["probabilities"] = probabilities
    unknown = [(q, a) for q, a in zip(questions, answers) if a.choice is None]
    if unknown:
        result.failure = (f"{len(unknown)} of {len(questions)} questions without an answer; "
                          f"{unknown[0][0]['question']!r}: {unknown[0][1].error}")
        result.retryable = any(a.transient for _, a in unknown)
        return
    result.score = sum(q.score for q in result.questions) / len(result.questions)
