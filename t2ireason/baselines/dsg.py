"""DSG: the Davidsonian Scene Graph score (Cho et al., ICLR 2024, arXiv:2310.18235).

Record -> request -> reply -> score, for one image:

1. an LLM writes the prompt's DSG once (kept: :mod:`.questions`), in three asks with the authors' published
   few-shot prompts (``templates/dsg/{tuple,dependency,question}.txt``, from dsg/query_utils.py): the atomic
   tuples (``id | tuple`` lines), then from the prompt and those tuples each tuple's parents (``id | parent
   ids``, 0 for none) and one yes/no question per tuple (``id | question``). Replies are read as the authors'
   dsg/parse_utils.py reads them (the text cut where the model starts another ``input:``, after an ``output:``
   it repeated; parent ids that are not numbers dropped, a 0 beside other parents dropped), and checked: a
   line that is not ``id | text``, ids that repeat, a question or parent list missing for a tuple or given for
   none, or a parent that is no tuple is re-asked, then recorded as the prompt's failure (once, with the raw
   replies: :mod:`.questions`); at most :data:`MAX_QUESTIONS` questions are kept, the cut said;
2. a VLM judge answers each question about the image (:mod:`.answering`): the authors' chat-VLM prompt
   (``templates/dsg/vqa.txt``, dsg/vqa_utils.py GPT4o), the reply normalised as their code does (lower case,
   stripped, ``. , ? !`` removed) and required to be ``yes`` or ``no`` (else re-asked, then the question's
   failure; ``other_answers="no"``, the official preset's: counted a "no" at once, as calc_vqa_score counts
   it); or the likelier of "yes" and "no" (``answers="probability"``);
3. the dependency rule zeroes a question whose parent failed: ``dependency="paper"`` (the authors' README
   pseudocode as it runs: in the listed order, zeroing in place, so a parent zeroed by its own parent fails
   the children listed after it), ``"official"`` (the authors' calc_vqa_score in dsg/vqa_utils.py, which made
   the paper's DSG-1k and TIFA160 figures: only the parents' own answers count) or ``"none"``; an item whose
   questions name a parent not among them is scored 0 unasked under ``official`` (as the authors' script
   scores DSG-1k's tifa160_134) and fails alone under ``paper``;
4. the image's score is the share of its questions that hold (0-1); a question the judge could not answer
   makes the image's score unknown (a failure naming it), unless a failed parent zeroes it anyway.

The presets name what the authors' repository runs, since the paper's own models are not reachable through
a chat interface (PaLM 2 wrote DSG-1k; PaLI-17B is not public; mPLUG-large runs on modelscope; InstructBLIP is
no chat VLM): GPT-4o answers with the repository's GPT4o prompt, and the repository's example LLM family
(gpt-3.5-turbo, at its temperature 0 and 500 tokens) writes the questions.
"""

from __future__ import annotations

import csv
import json
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
from .questions import Made, QuestionBaseline, QuestionMethod, made_failure

__all__ = ["DSG", "PRESETS", "DEPENDENCY_RULES", "QUESTION_SAMPLING", "MAX_QUESTIONS", "parse_tuples",
           "parse_questions", "parse_dependencies", "question_scores", "missing_parents", "read_dsg_csv",
           "category_of", "dsg_request"]

#: the dependency rules (module docstring, step 3)
DEPENDENCY_RULES = ("paper", "official", "none")
#: how the question LLM is asked: dsg/openai_utils.py's openai_completion (temperature 0, 500 tokens)
QUESTION_SAMPLING = Sampling(temperature=0.0, max_tokens=500)

PRESETS = {
    # The paper's dependency rule; GPT-4o answering greedily (20 tokens, as the repository's GPT4o asks).
    "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.0, max_tokens=20)},
              "llm": "openai:gpt-3.5-turbo", "options": {"dependency": "paper"}},
    # dsg/vqa_utils.py's GPT4o as it is: max_tokens 20 and nothing else sent (the API's defaults, temperature 1
    # and top_p 1, recorded as such); calc_vqa_score.
    "official": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=1.0, max_tokens=20),
                                                            "sampling_params": ["max_tokens"]},
                 "llm": "openai:gpt-3.5-turbo", "options": {"dependency": "official", "other_answers": "no"}},
}

_SCORE_OPTIONS = frozenset({"answers", "dependency", "sampling", "max_reasks", "retry_failed", "other_answers"})
#: what a chat answer that is neither yes nor no is: re-asked, then the question's failure ("fail"), or a "no"
#: at once, as calc_vqa_score counts whatever is not "yes" ("no", the official preset's)
OTHER_ANSWERS = ("fail", "no")

#: the most questions kept of a DSG an LLM writes for one prompt: the authors' own DSG-1k has at most 52
#: (midjourney_40; median 7, of 1,060 prompts; TIFA160's dev set at most 14), so 64 keeps every DSG they made,
#: while an LLM that runs away (500 tuples) cannot cost 500 judge requests an image
MAX_QUESTIONS = 64


# -- reading the LLM's outputs, as dsg/parse_utils.py reads them -----------------------------------------------

def output_text(text: str) -> str:
    """The part of an LLM's reply that is its output: cut where it starts another example (``input:``, as
    query_utils.parse_with_input_name cuts it), after an ``output:`` it repeated, stripped."""
    text = text.split("input:")[0]
    if "output:" in text:
        text = text[text.index("output:") + len("output:"):]
    return text.strip()


def _id_lines(text: str, what: str) -> list[tuple[int, str]]:
    """The ``id | value`` lines of a reply (blank lines skipped), each id a positive integer met once."""
    out: list[tuple[int, str]] = []
    seen: set[int] = set()
    for line in output_text(text).split("\n"):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 2:
            raise ReplyParseError(f"the line {line.strip()[:80]!r} is not 'id | {what}'")
        ident, value = parts[0].strip(), parts[1].strip()
        if not ident.isdigit() or int(ident) < 1:
            raise ReplyParseError(f"the line {line.strip()[:80]!r} does not start with an id (1, 2, ...)")
        if int(ident) in seen:
            raise ReplyParseError(f"id {int(ident)} is given twice")
        if not value:
            raise ReplyParseError(f"id {int(ident)} has no {what}")
        seen.add(int(ident))
        out.append((int(ident), value))
    if not out:
        raise ReplyParseError(f"no 'id | {what}' line")
    return out


def parse_tuples(text: str) -> list[tuple[int, str]]:
    """``[(id, tuple), ...]`` from a tuple reply (``1 | entity - whole (motorcycle)``)."""
    return _id_lines(text, "tuple")


def _same_ids(found: Sequence[int], ids: Sequence[int], what: str) -> None:
    missing, extra = sorted(set(ids) - set(found)), sorted(set(found) - set(ids))
    if missing or extra:
        said = [f"no {what} for tuple(s) {missing}"] if missing else []
        said += [f"a {what} for id(s) {extra}, which are no tuples" if extra else ""]
        raise ReplyParseError("; ".join(s for s in said if s) + f" (the tuples are {list(ids)})")


def parse_questions(text: str, ids: Sequence[int]) -> dict[int, str]:
    """``{id: question}``, one question for each tuple id."""
    found = dict(_id_lines(text, "question"))
    _same_ids(list(found), ids, "question")
    return found


def clean_parents(value: str) -> list[int]:
    """A dependency cell as parse_utils.clean_dependency_id reads it: comma-separated, what is not a number
    dropped ("5, background" is 5), 0 dropped beside other parents; nothing left is an error."""
    tokens = [t.strip() for t in value.split(",")]
    numbers = [int(t) for t in tokens if t.isdigit()]
    if len(numbers) > 1:
        numbers = [n for n in numbers if n != 0]
    if not numbers:
        raise ReplyParseError(f"the parents {value!r} hold no id (0 for none)")
    return list(dict.fromkeys(numbers))


def parse_dependencies(text: str, ids: Sequence[int]) -> dict[int, list[int]]:
    """``{id: [parent ids]}`` (``[0]``: no parent) for each tuple id; a parent must be a tuple. A tuple named its
    own parent, or parents in a cycle, are taken as the authors' code takes them (DSG-1k holds 38 such items):
    the dependency rule never lets a question hang on itself."""
    found: dict[int, list[int]] = {}
    for ident, value in _id_lines(text, "dependencies"):
        found[ident] = clean_parents(value)
    _same_ids(list(found), ids, "dependency")
    for ident, parents in found.items():
        bad = [p for p in parents if p != 0 and p not in found]
        if bad:
            raise ReplyParseError(f"tuple {ident}'s parent(s) {bad} are no tuples")
    return found


def category_of(tuple_text: str) -> str:
    """The broad category of a tuple (DSG's entity, attribute, relation, global; "other" tuples are
    attributes and actions relations, as the authors group them for their per-category figures)."""
    kind = tuple_text.split("(")[0].lower()
    for word, category in (("entity", "entity"), ("attribute", "attribute"), ("other", "attribute"),
                           ("relation", "relation"), ("action", "relation"), ("global", "global")):
        if word in kind:
            return category
    return "other"


# -- made once per prompt ---------------------------------------------------------------------------------

def dsg_request(task: str, text: str, sampling: Sampling | None) -> ChatRequest:
    """The authors' prompt of ``task`` (tuple, dependency, question) about ``text`` (the prompt; with its
    tuples for the last two), one user message."""
    return ChatRequest.simple(verbatim("dsg", task).format(input=text), sampling=sampling)


_PLURAL = {"tuple": "tuples", "question": "questions", "dependency": "dependencies"}


class DSGMethod(QuestionMethod):
    """A prompt's DSG, made with the authors' three prompts."""

    metric = "dsg"
    templates = ("dsg/tuple.txt", "dsg/dependency.txt", "dsg/question.txt")

    def row(self, prompt: str, meta: dict[str, Any], ident: str) -> dict[str, Any]:
        row = super().row(prompt, meta, ident)
        for q in row["questions"]:  # a DSG given without categories
            q["category"] = q.get("category") or category_of(q.get("tuple") or "")
        return row

    @property
    def features(self) -> Any:
        import datasets

        s, n = datasets.Value("string"), datasets.Value("int64")
        return datasets.Features({"id": s, "prompt": s, "extra": s, "questions": datasets.List(
            {"id": n, "tuple": s, "category": s, "question": s, "dependencies": datasets.List(n)})})

    def make(self, inputs: list[dict[str, Any]], idents: list[str], llm: Any) -> list[Made]:
        prompts = [i["prompt"] for i in inputs]
        tuples = ask_structured(llm, [dsg_request("tuple", p, self.sampling) for p in prompts], parse_tuples,
                                max_reasks=self.max_reasks)
        good = [k for k, t in enumerate(tuples) if t.ok]
        asks, parsers = [], []
        for task, parse in (("question", parse_questions), ("dependency", parse_dependencies)):
            for k in good:
                # the authors' next input: the prompt, then the tuple output as the LLM wrote it (cut, stripped)
                text = prompts[k] + "\n" + output_text(tuples[k].replies[-1].text)
                asks.append(dsg_request(task, text, self.sampling))
                parsers.append(lambda reply, ids=[i for i, _ in tuples[k].value], parse=parse: parse(reply, ids))
        later = ask_structured(llm, asks, parsers, max_reasks=self.max_reasks) if asks else []
        questions, dependencies = dict(zip(good, later[:len(good)])), dict(zip(good, later[len(good):]))
        model = llm.identity().get("model")
        out = []
        for k, (prompt, ident) in enumerate(zip(prompts, idents)):
            steps = {"tuple": tuples[k], "question": questions.get(k), "dependency": dependencies.get(k)}
            failed = next(((task, p) for task, p in steps.items() if p is not None and not p.ok), None)
            info = {"model": model, "reasks": {task: p.reasks for task, p in steps.items() if p is not None},
                    "outputs": {task: p.texts for task, p in steps.items() if p is not None}}
            rows = []
            if failed is None:
                kept = tuples[k].value[:MAX_QUESTIONS]
                ids = {qid for qid, _ in kept}
                for qid, text in kept:  # a parent cut off by the cap is no parent (never a question's failure)
                    parents = [p for p in dependencies[k].value[qid] if p in ids] or [0]
                    rows.append({"id": qid, "tuple": text, "category": category_of(text),
                                 "question": questions[k].value[qid], "dependencies": parents})
                if len(tuples[k].value) > len(kept):
                    info["cut"] = {"written": len(tuples[k].value), "kept": len(kept),
                                   "note": f"the LLM wrote {len(tuples[k].value)} tuples; the first {MAX_QUESTIONS} "
                                           f"are asked (the authors' DSG-1k has at most 52 a prompt)"}
            row = {"id": str(ident), "prompt": prompt, "questions": rows, "extra": json_text({"questions_by": info})}
            out.append(Made(row, None if failed is None else made_failure(f"DSG {_PLURAL[failed[0]]}", failed[1])))
        return out


# -- the dependency rule ---------------------------------------------------------------------------------------

def question_scores(questions: Sequence[dict[str, Any]], answers: dict[int, bool | None],
                    rule: str = "paper") -> tuple[dict[int, float | None], set[int]]:
    """Each question's score after the dependency ``rule`` (1 holds, 0 fails, None: unknown, its answer
    missing or one it hangs on), and the questions zeroed by a parent. ``answers``: id -> True (yes), False
    (no) or None (no answer).

    ``"paper"``: the README's pseudocode, in the questions' order, zeroing in place: a question fails when it
    or one of its parents fails, a parent's state being what it is when the question is reached (its own
    answer, or zero when a parent listed before it zeroed it); so a grandparent's "no" reaches a grandchild
    when the parent comes first in the list, as in every DSG but 3 of DSG-1k's 5,085 images scored.
    ``"official"``: when it or one of its parents is answered "no" (calc_vqa_score reads the parents' own
    answers); ``"none"``: its own answer. A question never hangs on itself (a parent list naming it, or a
    cycle back to it). A parent that is no question is an error (:func:`missing_parents`) under the rules
    that read the dependencies."""
    if rule not in DEPENDENCY_RULES:
        raise ValueError(f"dependency must be one of {', '.join(DEPENDENCY_RULES)}, got {rule!r}")
    parents = {q["id"]: [p for p in q["dependencies"] or [] if p != 0] for q in questions}
    own: dict[int, float | None] = {q: (None if answers.get(q) is None else float(answers[q])) for q in parents}
    status: dict[int, float | None] = dict(own)
    zeroed: set[int] = set()
    if rule == "none":  # the dependencies are not read
        return status, zeroed
    missing = missing_parents(questions)
    if missing:
        raise ValueError(f"the dependencies name question(s) {missing}, which are not among the questions")
    for q in parents:  # in the questions' order, as the pseudocode's dict is
        states = [(status if rule == "paper" else own)[p] for p in parents[q] if p != q]
        if 0.0 in states:
            zeroed.add(q)
            status[q] = 0.0
        elif None in states and own[q] != 0.0:
            status[q] = None
    return status, zeroed


def missing_parents(questions: Sequence[dict[str, Any]]) -> list[int]:
    """The parents the questions' dependencies name that are not among them (DSG-1k's ``tifa160_134`` has no
    question 1, which its other questions name)."""
    ids = {q["id"] for q in questions}
    return sorted({p for q in questions for p in q["dependencies"] or [] if p != 0 and p not in ids})


# -- the released DSG-1k questions -----------------------------------------------------------------------------

def read_dsg_csv(path: str | Path) -> list[dict[str, Any]]:
    """The rows (``id``, ``prompt``, ``dsg_questions``) of a DSG question file as the authors release it
    (dsg/data/dsg-1k-anns.csv, tifa160-dev-anns.csv: one line per question, ``item_id, text, proposition_id, dependency, tuple,
    question_natural_language``...), one row per item in file order, questions in file order, dependency cells
    read as :func:`clean_parents` reads them. The authors' data_utils.py drops every dependency of an item one
    of whose cells holds a word ("5, right": 8 items of DSG-1k); here the word is dropped, as their
    parse_utils.py drops it from an LLM's output."""
    items: dict[str, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for n, line in enumerate(csv.DictReader(f), 2):
            try:
                item = items.setdefault(line["item_id"], {"id": line["item_id"], "prompt": line["text"],
                                                           "dsg_questions": []})
                item["dsg_questions"].append({"id": int(line["proposition_id"]), "tuple": line["tuple"],
                                          "category": category_of(line["tuple"]),
                                          "question": line["question_natural_language"],
                                          "dependencies": clean_parents(line["dependency"])})
            except (KeyError, ValueError) as e:
                raise ValueError(f"{path}, line {n}: not a DSG question line ({e})") from None
    return list(items.values())


# -- the metric ------------------------------------------------------------------------------------------------

class DSG(QuestionBaseline):
    """The DSG score of each image against its prompt (see the module docstring). ``llm``, ``llm_kwargs``,
    ``store``, ``cache``, ``question_sampling``, ``question_max_reasks``: as :class:`QuestionBaseline`'s (default
    sampling: the authors' temperature 0 and 500 tokens)."""

    name = "dsg"
    pretty_name = "DSG"
    presets = PRESETS
    default_preset = "paper"
    score_options = _SCORE_OPTIONS
    method = DSGMethod
    question_sampling = QUESTION_SAMPLING
    given_field = "dsg_questions"
    citation = """@inproceedings{cho2024dsg,
  title     = {Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for Text-to-Image Generation},
  author    = {Cho, Jaemin and Hu, Yushi and Baldridge, Jason and Garg, Roopal and Anderson, Peter and Krishna, Ranjay
               and Bansal, Mohit and Pont-Tuset, Jordi and Wang, Su},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2024}
}"""

    def score(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, *, progress: bool | str = False,
              **options: Any) -> list[ImageResult]:
        """One result per image. Options: ``answers`` ("chat", default, or "probability"), ``dependency``
        ("paper", default, "official", "none"), ``sampling`` (the judge's, a Sampling or its fields),
        ``max_reasks`` (follow-ups when an answer is not yes or no, default 2), ``other_answers`` ("fail",
        default: such an answer is re-asked, then the question's failure; "no": counted a "no" at once, as the
        authors' calc_vqa_score counts whatever is not "yes"; the official preset's), ``retry_failed`` (ask again
        for the questions of a prompt whose question writing failed before; default False: read the recorded
        failure). ``rows``: the prompts (strings,
        or dicts with a ``prompt``, an ``id``, and the prompt's DSG as ``dsg_questions`` when it is given, as
        :func:`read_dsg_csv` gives it; a row's other fields are not read)."""
        opts = self.options(options, _SCORE_OPTIONS)
        rule = opts.get("dependency", "paper")
        if rule not in DEPENDENCY_RULES:
            raise ValueError(f"dependency must be one of {', '.join(DEPENDENCY_RULES)}, got {rule!r}")
        other = opts.get("other_answers", "fail")
        if other not in OTHER_ANSWERS:
            raise ValueError(f"other_answers must be one of {', '.join(OTHER_ANSWERS)}, got {other!r}")
        made, failures, loaded, answers, sampling = self.asked(rows, images, judge, opts)
        if not made:
            return []
        results, asked = self.to_ask(images, made, failures, loaded)
        asked = [item for item in asked if not _broken(item[0], item[1], rule)]
        vqa = verbatim("dsg", "vqa")
        items = [(image, vqa.format(question=q["question"]), ("yes", "no"))
                 for _, row, image in asked for q in row["questions"]]
        normalise = _normalised if other == "fail" else _yes_or_no
        replies = iter(answer_choices(judge, items, answers=answers, normalise=normalise, sampling=sampling,
                                      max_reasks=opts.get("max_reasks", 2), progress=progress))
        for result, row, _ in asked:
            _scored(result, row, [next(replies) for _ in row["questions"]], rule)
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The mean DSG score x 100 with its interval, and the accuracy (x 100) of each question category
        (entity, attribute, relation, global) over the scored images, the paper's per-category view."""
        out = super().aggregate(results, **options)
        by: dict[str, list[float]] = defaultdict(list)
        for r in results:
            if r.score is not None:
                for q in r.questions:
                    by[q.group or "other"].append(q.score)
        out["by_category"] = {k: 100.0 * sum(v) / len(v) for k, v in sorted(by.items())}
        return out


def _yes_or_no(text: str) -> str:
    """A VQA reply as calc_vqa_score counts it: "yes" once normalised (:func:`_normalised`), else "no"."""
    return "yes" if _normalised(text) == "yes" else "no"


def _broken(result: ImageResult, row: dict[str, Any], rule: str) -> bool:
    """Whether ``row``'s questions name a parent that is not among them (DSG-1k's ``tifa160_134``): then,
    unasked, the image is scored 0 under the ``official`` rule (what the authors' t2i_eval_dsg1k.py gives the
    item: its answers set to one empty answer, every question zeroed) and fails alone under ``paper``; under
    ``none`` the dependencies are not read and it is scored as any other."""
    missing = missing_parents(row["questions"])
    if not missing or rule == "none":
        return False
    said = f"its questions name parent(s) {missing}, which are not among its {len(row['questions'])} questions"
    result.context = {"missing_parents": missing, "dependency_rule": rule}
    if rule == "official":
        result.score = 0.0
        result.subscores = {"without_dependency": None, "questions": float(len(row["questions"]))}
        result.context["note"] = f"{said}: scored 0 unasked, as the authors' script scores such an item"
    else:
        result.failure = (f"{said}: not asked, the paper's rule cannot be applied (the official rule scores such "
                          "an item 0, as the authors' script does)")
    return True


def _normalised(text: str) -> str:
    """A VQA reply as the authors' GPT4o.vqa normalises it: lower case, stripped, . , ? ! removed."""
    return text.lower().strip().replace(".", "").replace(",", "").replace("?", "").replace("!", "")


def _scored(result: ImageResult, row: dict[str, Any], answers: list, rule: str) -> None:
    """The image's questions, the dependency rule applied, and its score (or why not)."""
    said = {q["id"]: (None if a.choice is None else a.choice == "yes") for q, a in zip(row["questions"], answers)}
    scores, zeroed = question_scores(row["questions"], said, rule)
    for q, a in zip(row["questions"], answers):
        result.questions.append(QuestionResult(question=q["question"], score=scores[q["id"]], criterion=q["tuple"],
                                               group=q["category"], id=str(q["id"]),
                                               reasoning=a.choice if a.choice is not None else a.error))
        result.replies.extend(a.replies)
        result.reasks += a.reasks
    made_by = json.loads(row.get("extra") or "{}").get("questions_by") or {}
    result.context = {"dependencies": {str(q["id"]): q["dependencies"] for q in row["questions"]},
                      "zeroed_by_a_parent": sorted(zeroed), "dependency_rule": rule,
                      "questions_by": made_by.get("model")}
    read_as_no = [q["id"] for q, a in zip(row["questions"], answers)
                  if a.choice == "no" and a.replies and _normalised(a.replies[-1]) != "no"]
    if read_as_no:  # other_answers="no": a reply neither yes nor no counted a "no", as the authors' code counts it
        result.context["read_as_no"] = read_as_no
    if made_by.get("cut"):  # the LLM wrote more than MAX_QUESTIONS: said with the image, not only in the store
        result.context["questions_cut"] = made_by["cut"]
    probabilities = {str(q["id"]): a.probabilities for q, a in zip(row["questions"], answers) if a.probabilities}
    if probabilities:
        result.context["probabilities"] = probabilities
    unknown = [(q, a) for q, a in zip(row["questions"], answers) if scores[q["id"]] is None]
    if unknown:
        first_q, first_a = unknown[0]
        why = first_a.error or "a parent's answer is missing"
        result.failure = (f"{len(unknown)} of {len(answers)} questions without an answer that counts; question "
                          f"{first_q['id']} ({first_q['question']!r}): {why}")
        result.retryable = any(a.transient for _, a in unknown)
        return
    own = [said[q["id"]] for q in row["questions"]]
    result.score = sum(scores.values()) / len(scores)
    result.subscores = {"without_dependency": None if None in own else sum(own) / len(own),
                        "questions": float(len(own))}
