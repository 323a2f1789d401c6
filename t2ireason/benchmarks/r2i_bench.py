"""R2I-Bench (seed 003, Chen et al.): reasoning-driven text-to-image generation, scored by R2I-Score.

The path of one image: a release row (prompt + instance-specific questions,
each with a 1 / 0.5 / 0 criterion and a weight) -> one request per image with
the paper's "Text-to-Image Quality Evaluation Protocol" template (appendix
A.4) listing every question and criterion -> the judge's reply, ending in a
fenced JSON block ``{"<question id>": score, ...}`` -> the weighted mean
``R2I-Score = sum(w_i * s_i) / sum(w_i)`` (equation 1) -> category means and
the micro average over instances (Table 3), with standard errors and 95%
confidence intervals (Table 14).

The official release (GitHub, CSV) is read from

    data/prompts/<category>/<category>_<subcategory>.csv
        Prompt, Reference Caption, Assessment Point, Category, Subcategory, id   (any column order)
    data/evaluation/<category>/<subcategory>_eval.csv
        source_id, evaluation_criteria, id, question, weight [, note]            (any column order)

with its quirks reported as :class:`~t2ireason.benchmarks.base.Anomaly`
objects, never hidden: the folder and file names give the category and
subcategory (the cells disagree in places, and are kept as
``category_cell``/``subcategory_cell``); questions whose prompts are missing
(all of ``mathematical_function``) are orphans; prompts without questions
(``functional_mixing`` and 5 more, 85 in all) are kept with
``has_questions=False`` and are unscorable, not scored 0; weights outside 1 to
10 or not integers are kept as floats and listed.

The paper's evaluation-criteria pipeline (appendix A.4: imagine the image,
design questions, assign weights within per-dimension ranges) is
:func:`generate_criteria`, producing rows of this same schema for new prompts.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import datasets

from ..images import ImageError, load_images
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, extract_json
from ..prompts import render
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import Anomaly, Benchmark, OfficialRelease, Quarantined, Release, ReleaseError, name_key

__all__ = [
    "BENCHMARK", "R2IBench", "CATEGORIES", "WEIGHT_RANGES", "CriteriaGeneration", "generate_criteria",
    "render_request",
]

#: category configs, in the order of the paper's Table 3 columns
CATEGORIES = ("commonsense", "compositional", "concept_mixing", "logical", "numerical", "mathematical", "causal")
#: column names of Table 3
CATEGORY_TITLES = {"commonsense": "Commonsense", "compositional": "Compositional", "concept_mixing": "Con.Mix.",
                   "logical": "Logical", "numerical": "Numerical", "mathematical": "Mathematical", "causal": "Causal"}
#: the paper's per-dimension weight ranges (section 3), used by the criteria pipeline
WEIGHT_RANGES = {"reasoning": (7.0, 10.0), "alignment": (4.0, 6.0), "quality": (1.0, 3.0)}
#: the scores the release's criteria define (each criterion describes 1, 0.5 and 0)
ALLOWED_SCORES = (0.0, 0.5, 1.0)

_TEMPLATES = "r2i_bench"
_PROMPT_COLUMNS = ("prompt", "reference_caption", "assessment_point", "category", "subcategory", "id")
_EVAL_COLUMNS = ("source_id", "evaluation_criteria", "id", "question", "weight")
_EVAL_OPTIONAL = ("note",)
_MISSING = ("fail", "answered")
_SCORE_OPTIONS = {"max_reasks", "missing", "allowed_scores", "structured_output", "template", "subcategories",
                  "round_scores"}
_AGGREGATE_OPTIONS = {"scale", "confidence", "n_resamples", "seed", "round_scores"}
_TEMPLATES_KINDS = ("paper", "official")

REASK_PROMPT = (
    "Your previous reply could not be used in full: {error}. "
    "End your reply with the fenced JSON block that maps every question id to its score."
)

_CITATION = """@misc{chen2025r2ibench,
  title     = {R2I-Bench: Benchmarking Reasoning-Driven Text-to-Image Generation},
  author    = {Chen, Kaijie and Lin, Zihao and Xu, Zhiyang and Shen, Ying and Yao, Yuguang and
               Rimchala, Joy and Zhang, Jiaxin and Huang, Lifu},
  year      = {2025},
  url       = {https://r2i-bench.github.io}
}"""


# -- reading the release ----------------------------------------------------------------------------

#: the 32 subcategories of the release (its file names), per category folder: the labels a
#: Category/Subcategory cell is recognised against, and what a complete release holds
SUBCATEGORIES = {
    "commonsense": ("affordance", "attribute", "color", "emotion_intention_commonsense",
                    "social_cultural_knowledge_object", "social_cultural_knowledge_scene", "temporal_understanding"),
    "compositional": ("creative_compositional", "inferential_spatial", "prescriptive_spatial"),
    "concept_mixing": ("functional_mixing", "literal_mixing"),
    "logical": ("abductive", "categorical", "conjunctive", "deductive", "disjunctive", "hypothetical",
                "sufficient_conditional"),
    "numerical": ("approximate_number_generation", "conceptual_quantitative", "exact_number_generation"),
    "mathematical": ("combinatorial", "cryptographic_encoding", "geometrical_transformations", "mathematical_function",
                     "number_theory", "set_theory", "spatial_reasoning", "vector_matrix_visualization"),
    "causal": ("cause_to_effect", "effect_to_cause"),
}
#: the subcategories the official evaluation.py evaluates (instance.py's category_subcategory_list): all
#: but four of commonsense (affordance, attribute, color, emotion_intention_commonsense)
OFFICIAL_SUBCATEGORIES = tuple(
    f"{c}/{s}" for c, subs in SUBCATEGORIES.items() for s in subs
    if not (c == "commonsense" and s in ("affordance", "attribute", "color", "emotion_intention_commonsense")))

#: layout column -> the header names it is recognised under (after _column); the first is the layout's own
_PROMPT_COLUMNS = {
    "prompt": ("prompt", "prompts", "text_prompt"),
    "reference_caption": ("reference_caption", "reference", "caption", "expected"),
    "assessment_point": ("assessment_point", "assessment_points", "assessment"),
    "category": ("category", "categories"),
    "subcategory": ("subcategory", "sub_category", "subcategories"),
    "id": ("id", "prompt_id", "idx", "index"),
}
_EVAL_COLUMNS = {
    "source_id": ("source_id", "sourceid", "prompt_id", "instance_id"),
    "evaluation_criteria": ("evaluation_criteria", "evaluation_criterion", "criteria", "criterion"),
    "id": ("id", "question_id", "qid"),
    "question": ("question", "questions", "evaluation_question"),
    "weight": ("weight", "weights", "importance"),
    "note": ("note", "notes", "comment"),
}
#: without these a row cannot be placed: its records are quarantined with their raw text
_PROMPT_NEEDS = ("prompt", "id")
_EVAL_NEEDS = ("source_id", "question")


def _column(name: str) -> str:
    """'Reference Caption' -> 'reference_caption': headers differ in case and spacing between files."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def _norm_id(value: str) -> str:
    """Ids as text, as a spreadsheet or pandas would match them: ' 12', '12.0' and '12' are '12'."""
    value = value.strip()
    return value[:-2] if re.fullmatch(r"\d+\.0", value) else value


_STOPWORDS = {"reasoning", "and", "generation", "the", "of", "visualization"}


def _words(label: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", label.lower()) if t not in _STOPWORDS]


def _label_score(cell: str, label: str) -> float:
    """How surely a Category/Subcategory cell names ``label`` (0: not at all): 3 the same words
    in the same order, 2 the same words in another order, 1 to 2 one set of words inside the other,
    up to 1 the same letters spelt slightly differently (in any word order, spaces aside)."""
    a, b = _words(cell), _words(label)
    if not a or not b:
        return 0.0
    if a == b:
        return 3.0
    sa, sb = set(a), set(b)
    if sa == sb:
        return 2.0
    if sa <= sb or sb <= sa:
        return 1.0 + len(sa & sb) / len(sa | sb)
    target = "".join(b)
    orders = itertools.permutations(a) if len(a) <= 5 else [a]
    best = max(difflib.SequenceMatcher(None, "".join(o), target).ratio() for o in orders)
    return best if best >= 0.85 else 0.0


@functools.lru_cache(maxsize=4096)  # a release repeats the same few cells thousands of times
def _names(cell: str, own: str, known: tuple[str, ...]) -> str | None:
    """The label a cell names: ``own`` when it names the folder/file label (whatever the case, word
    order or small spelling differences), another known label when it names that one better, None
    when it names none."""
    scores = {label: _label_score(cell, label) for label in dict.fromkeys([own, *known])}
    best = max(scores.values())
    if best <= 0:
        return None
    return own if scores[own] == best else max(scores, key=scores.get)


def _subcategory(stem: str, category: str, kind: str) -> str:
    """The subcategory a file is about, named as the authors' code names it: prompts files are
    ``<category>_<subcategory>.csv``, evaluation files ``<subcategory>_eval.csv`` (so
    ``mathematical_function_eval.csv`` belongs to ``mathematical_mathematical_function.csv``)."""
    if kind == "evaluation":
        return stem.removesuffix("_eval")
    return stem.removeprefix(f"{category}_") if stem != category else stem


def _decode(data: bytes, rel: str, anomalies: list[Anomaly]) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        for encoding in ("cp1252", "latin-1"):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                continue
            anomalies.append(Anomaly("encoding", rel, None, f"not UTF-8 ({e.reason} at byte {e.start}): read as {encoding}"))
            return text
    raise AssertionError("latin-1 decodes every byte")


@dataclass
class _Record:
    line: int
    cells: dict[str, str]  # layout column -> cell, as released
    extra: dict[str, str]  # other columns (header as written) -> cell
    raw: str  # the record's lines as released


def _read_csv(path: Path, rel: str, columns: dict[str, tuple[str, ...]], needs: Sequence[str],
              anomalies: list[Anomaly], quarantine: list[Quarantined]) -> list[_Record]:
    """The records of one CSV file, keyed by layout column, with every irregularity reported.

    Cells are kept as released (whitespace included). Columns are recognised by name in any order
    and spelling variant (:data:`_PROMPT_COLUMNS`); columns the layout does not know are kept in
    ``extra``. Records that cannot be placed (a header without the columns in ``needs``, more cells
    than the header, malformed quoting) are quarantined with their raw text; nothing is dropped in
    silence.
    """
    data = path.read_bytes()
    if not data.strip():
        anomalies.append(Anomaly("empty_file", rel, None, "the file is empty" + (" (whitespace only)" if data else "")))
        return []
    lines = io.StringIO(_decode(data, rel, anomalies), newline="").readlines()
    reader = csv.reader(iter(lines), strict=True)
    records: list[tuple[int, list[str], str]] = []
    done = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raw = "".join(lines[done:reader.line_num])
            quarantine.append(Quarantined(rel, f"line {done + 1}", f"malformed CSV: {e}", raw))
            anomalies.append(Anomaly("malformed_row", rel, f"line {done + 1}", f"malformed CSV ({e}): quarantined"))
            done = reader.line_num
            continue
        records.append((done + 1, cells, "".join(lines[done:reader.line_num])))
        done = reader.line_num
    records = [r for r in records if r[1]]  # blank lines
    if not records:
        anomalies.append(Anomaly("empty_file", rel, None, "the file holds no CSV record"))
        return []
    (_, header, _), body = records[0], records[1:]
    canonical = {alias: col for col, aliases in columns.items() for alias in aliases}
    position: dict[str, int] = {}
    extra_at: dict[int, str] = {}
    for i, name in enumerate(header):
        col = canonical.get(_column(name))
        if col is not None and col not in position:
            position[col] = i
        else:
            extra_at[i] = name if name.strip() else f"column {i + 1}"
            if col is not None:
                anomalies.append(Anomaly("duplicate_column", rel, "line 1",
                                         f"column {name!r} repeats {col!r}: its cells are kept in 'extra'"))
    expected = [c for c in columns if c != "note"]
    missing = [c for c in expected if c not in position]
    unplaceable = [c for c in needs if c not in position]
    if not body:
        what = (f"; the header {header} does not name the columns of this layout ({', '.join(expected)})"
                if unplaceable else "")
        anomalies.append(Anomaly("empty_file", rel, None, f"header only, no records{what}"))
        return []
    if unplaceable:
        anomalies.append(Anomaly("unreadable_header", rel, "line 1",
                                 f"the header {header} lacks {unplaceable}: its {len(body)} record(s) cannot be "
                                 "placed and are quarantined with their raw text"))
        quarantine.extend(Quarantined(rel, f"line {line}", f"the file's header lacks {unplaceable}", raw)
                          for line, _, raw in body)
        return []
    if missing:
        anomalies.append(Anomaly("missing_column", rel, "line 1", f"no column {missing} in the header {header}: "
                                 "left empty in every row"))
    if extra_at:
        anomalies.append(Anomaly("unknown_column", rel, "line 1", f"column(s) {list(extra_at.values())} are not "
                                 "in the layout: their cells are kept in each row's 'extra'"))
    out = []
    for line, cells, raw in body:
        if not any(c.strip() for c in cells):
            anomalies.append(Anomaly("blank_row", rel, f"line {line}", "every cell is empty: nothing to keep"))
            continue
        if len(cells) > len(header):
            spill = cells[len(header):]
            if any(c.strip() for c in spill):
                quarantine.append(Quarantined(rel, f"line {line}", f"{len(cells)} cells where the header has "
                                              f"{len(header)}: the columns cannot be told apart", raw))
                anomalies.append(Anomaly("long_row", rel, f"line {line}",
                                         f"{len(cells)} cells where the header has {len(header)}: quarantined"))
                continue
            anomalies.append(Anomaly("long_row", rel, f"line {line}",
                                     f"{len(cells) - len(header)} empty cell(s) beyond the header's {len(header)}"))
        elif len(cells) < len(header):
            anomalies.append(Anomaly("short_row", rel, f"line {line}",
                                     f"{len(cells)} cells where the header has {len(header)}: the missing ones are empty"))
            cells = cells + [""] * (len(header) - len(cells))
        out.append(_Record(line, {c: cells[i] for c, i in position.items()},
                           {name: cells[i] for i, name in extra_at.items() if cells[i] != ""}, raw))
    return out


def _weight(raw: str) -> float | None:
    """A weight as released: a finite, non-negative number, or None (reported by the caller)."""
    try:
        w = float(raw.strip())
    except ValueError:
        return None
    return w if math.isfinite(w) and w >= 0 else None


def _data_root(source: str | Path) -> Path:
    """The folder holding prompts/ and evaluation/: the checkout's data/ folder or that folder itself."""
    source = Path(source)
    for root in (source / "data", source):
        if (root / "prompts").is_dir() or (root / "evaluation").is_dir():
            return root
    raise ReleaseError(f"{source}: no data/prompts or data/evaluation folder; point at a checkout of the R2I-Bench "
                       "release (data/prompts/<category>/*.csv, data/evaluation/<category>/*_eval.csv)")


def _csv_files(folder: Path) -> dict[str, list[Path]]:
    """category folder name -> its CSV files, sorted."""
    if not folder.is_dir():
        return {}
    return {d.name: sorted(p for p in d.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
            for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")}


def _ordered(categories: Sequence[str]) -> list[str]:
    known = [c for c in CATEGORIES if c in categories]
    return known + sorted(c for c in categories if c not in CATEGORIES)


def _list_ids(ids: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def _extra(values: dict[str, str]) -> str | None:
    return json.dumps(values, ensure_ascii=False) if values else None


# -- scoring helpers --------------------------------------------------------------------------------


def _key(value: Any) -> str:
    """A question id as judges write it back: 'Q3', 'question 3', 3, '3.0' and '3' are one key."""
    k = str(value).strip().lower()
    k = re.sub(r"^(question|q)[\s_#-]*", "", k)
    return _norm_id(k)


def question_keys(questions: Sequence[dict[str, Any]]) -> list[str]:
    """The key each question is asked and answered under: its id, or its position (1, 2, ...)
    when the ids of the instance are missing or repeated."""
    keys = [_key(q.get("id", "")) for q in questions]
    if all(keys) and len(set(keys)) == len(keys):
        return keys
    return [str(i) for i in range(1, len(questions) + 1)]


def _scale_text(allowed: Sequence[float] | None) -> str:
    if allowed is None:
        return "a score between 0 and 1"
    values = [f"{a:g}" for a in sorted(allowed)]
    return "exactly one of the scores " + ", ".join(values[:-1]) + f" or {values[-1]}"


def render_request(row: dict[str, Any], keys: Sequence[str] | None = None,
                   allowed_scores: Sequence[float] | None = ALLOWED_SCORES, template: str = "paper") -> str:
    """The judge prompt for one instance.

    ``template="paper"``: the appendix A.4 protocol as the paper prints it, with the prompt, every
    question and its criterion in the project's layout, and the ids the answer must score.
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
        raise ValueError(f"template must be one of {_TEMPLATES_KINDS}, got {template!r}")
    listed = [{"key": k, "question": q["question"], "criterion": q["criterion"]} for k, q in zip(keys, questions)]
    return render(_TEMPLATES, "image_evaluation", prompt=row["prompt"],
                  question_list=render(_TEMPLATES, "question_list", questions=listed),
                  important_enforcement=render(_TEMPLATES, "important_enforcement", ids=keys,
                                               scale=_scale_text(allowed_scores)))


@functools.cache
def official_template() -> str:
    """The authors' judge prompt (``official_evaluation.txt`` after its citation header), exactly."""
    text = (resources.files("t2ireason") / "templates" / _TEMPLATES / "official_evaluation.txt").read_text("utf-8")
    return text.split("-#}\n", 1)[1]


def reply_schema(keys: Sequence[str], allowed_scores: Sequence[float] | None = ALLOWED_SCORES) -> dict[str, Any]:
    """The JSON the template's answer block holds: every question id mapped to its score."""
    score = ({"enum": [int(v) if float(v).is_integer() else v for v in allowed_scores]} if allowed_scores is not None
             else {"type": "number", "minimum": 0, "maximum": 1})
    return {"title": "r2i_bench_scores", "type": "object", "properties": {k: score for k in keys},
            "required": list(keys), "additionalProperties": False}


class _ScoreCollector:
    """Parses one instance's replies, keeping every valid score across re-asks.

    A re-ask names the missing or invalid ids, and judges often answer only
    those; the scores of earlier replies are kept, the latest valid answer
    to a question wins. Raises ReplyParseError until every question has one.
    """

    def __init__(self, keys: Sequence[str], allowed: Sequence[float] | None):
        self.keys, self.allowed = list(keys), allowed
        self.scores: dict[str, float] = {}

    def __call__(self, text: str) -> dict[str, float]:
        value = extract_json(text, expect=dict)
        answers = {_key(k): v for k, v in value.items()}
        problems = []
        for k in self.keys:
            if k in answers:
                try:
                    self.scores[k] = as_score(answers[k], allowed=self.allowed, lo=0.0, hi=1.0, name=f"question {k}")
                except ReplyParseError as e:
                    problems.append(str(e))
        unanswered = [k for k in self.keys if k not in self.scores]
        if unanswered:
            problems.insert(0, f"no valid score for question(s) {', '.join(unanswered)}")
        if problems:
            raise ReplyParseError("; ".join(problems) + f" (the question ids are {', '.join(self.keys)})")
        return dict(self.scores)


def _weighted(questions: Sequence[QuestionResult]) -> float | None:
    scored = [q for q in questions if q.score is not None]
    total = sum(q.weight for q in scored)
    # a weighted mean of scores in [0, 1]; clamped so that rounding never leaves the range
    return min(1.0, max(0.0, sum(q.weight * q.score for q in scored) / total)) if total > 0 else None


# -- the benchmark ----------------------------------------------------------------------------------


class R2IBench(Benchmark):
    name = "r2i-bench"
    pretty_name = "R2I-Bench"
    configs = (*CATEGORIES, "all")
    metric = "r2i_score"
    license = None  # the release states none that we could check: users must say
    citation = _CITATION
    # The authors' repository. The data files at this commit were read through a text index of
    # public repositories, which does not give their bytes exactly: no file hash is recorded, so a
    # fetched release is reported as unverified (see metrics/r2i_score/README.md).
    official_release = OfficialRelease(
        kind="github", repo="PLUM-Lab/R2I-Bench", revision="c968ee80519bbf1033f9dbda84db1aef4bd0f2a0",
        files={}, scripts=("evaluation.py", "instance.py", "generation.py"))
    release_markers = ("data/prompts", "data/evaluation")
    path_fields = ("source_id",)
    description = (
        "R2I-Bench (Chen et al., 2025) evaluates reasoning-driven text-to-image generation: prompts in 7 "
        "reasoning categories (commonsense, compositional, concept mixing, logical, numerical, mathematical, "
        "causal) and 32 subcategories, each with instance-specific evaluation questions, 1 / 0.5 / 0 scoring "
        "criteria and importance weights covering text-image alignment, reasoning accuracy and image quality."
    )
    scoring = (
        "R2I-Score: a multimodal judge (GPT-4o, temperature 0.1, in the paper) receives the image and the "
        "'Text-to-Image Quality Evaluation Protocol' prompt listing the instance's questions and criteria, and "
        "scores each question 0, 0.5 or 1. The instance score is sum(w_i * s_i) / sum(w_i); a category's "
        "score is the mean over its instances and the overall score the micro average over all instances "
        "(Table 3), with standard errors and 95% confidence intervals (Table 14). Prompts without questions "
        "are unscorable and reported, not scored 0."
    )
    field_docs = {
        "id": "Benchmark-wide unique id: <category>/<subcategory>/<source_id>.",
        "source_id": "The prompt's id in its release file (unique within that file).",
        "prompt": "The text-to-image prompt to draw.",
        "reference_caption": "A caption of the correct image (the answer the reasoning should reach).",
        "assessment_point": "What the instance tests (the release's 'Assessment Point').",
        "category": "Reasoning category, from the release's folder name (the config).",
        "subcategory": "Reasoning subcategory, from the release's file name.",
        "category_cell": "The release's raw 'Category' cell (inconsistent in places; kept for reference).",
        "subcategory_cell": "The release's raw 'Subcategory' cell (inconsistent in places; kept for reference).",
        "has_questions": "False when the release has no evaluation questions for the prompt (unscorable).",
        "questions": "The instance's evaluation questions (empty when has_questions is False).",
        "questions.id": "The question's number within the instance (the key the judge answers under).",
        "questions.question": "The evaluation question.",
        "questions.criterion": "What earns a score of 1, 0.5 and 0 (the release's evaluation_criteria).",
        "questions.weight": "Importance weight in the weighted mean; mostly 1 to 10, a few from 0 to 50.",
        "questions.note": "An annotator's note (one release file has them); null elsewhere.",
        "questions.dimension": "reasoning / alignment / quality: null in the release, which does not label "
                               "it; set by generate_criteria for new prompts.",
        "questions.extra": "The question's cells in columns the layout does not know, as a JSON object (null: none).",
        "extra": "The prompt's cells in columns the layout does not know, as a JSON object (null: none).",
    }
    presets = {
        # The paper (section 3, appendix A.4) and the official code (evaluation.py, instance.py) both use
        # GPT-4o at temperature 0.1. The `official` preset reproduces the official code's deliberate
        # choices: its own prompt text and question layout, sent before the image; questions the judge
        # leaves unanswered dropped from the weighted mean ("answered", each drop recorded instead of
        # silent); instance and category scores rounded to 2 decimals; only the 28 subcategories its
        # instance.py lists. Its bugs are not reproduced (metrics/r2i_score/README.md lists each).
        "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1)},
                  "options": {"missing": "fail", "template": "paper"}},
        # Its request (instance.py's get_llm_response) names the model and temperature 0.1 and nothing
        # else: no max_tokens, no top_p (sampling_params), the server's defaults for the rest.
        "official": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1),
                                                                "sampling_params": ["temperature"]},
                     "options": {"missing": "answered", "template": "official", "round_scores": 2,
                                 "subcategories": list(OFFICIAL_SUBCATEGORIES)}},
    }

    @property
    def features(self) -> datasets.Features:
        text = datasets.Value("string")
        return datasets.Features({
            "id": text,
            "source_id": text,
            "prompt": text,
            "reference_caption": text,
            "assessment_point": text,
            "category": text,
            "subcategory": text,
            "category_cell": text,
            "subcategory_cell": text,
            "has_questions": datasets.Value("bool"),
            "questions": datasets.List({
                "id": text,
                "question": text,
                "criterion": text,
                "weight": datasets.Value("float64"),
                "note": text,
                "dimension": text,
                "extra": text,
            }),
            "extra": text,
        })

    def with_safe_names(self, row: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
        """A ``source_id`` that cannot be a file name renamed, and the row's ``id`` with it."""
        row = {**row, **renamed}
        row["id"] = f"{row['category']}/{row['subcategory']}/{row['source_id']}"
        return row

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """``<category>/<subcategory>/<source_id>.png`` (``..._<sample>.png`` for further samples):
        the folders of the release, one image per prompt id."""
        suffix = f"_{sample}" if sample else ""
        return f"{row['category']}/{row['subcategory']}/{row['source_id']}{suffix}.png"

    # -- the release ----------------------------------------------------------------------------

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read ``data/prompts`` and ``data/evaluation`` of a checkout (or of its ``data`` folder).

        Nothing the release holds is lost: every prompt is a row (prompts without questions are
        kept, unscorable), every question row is attached to its prompt (an evaluation file finds its
        prompts file by the authors' naming, whatever the case or separators and with or without the
        category's prefix; a name other than the authors' is reported) or, when it has none (the
        ``mathematical_function`` questions: the authors' code looks for their prompts in
        ``prompts/mathematical/mathematical_mathematical_function.csv``, which the release lacks),
        quarantined with its raw text; every irregularity is an :class:`Anomaly`. Text is kept as
        released, whitespace included.

        Counts per config: ``rows``, ``questions`` (attached), ``question_rows`` (read),
        ``orphan_questions``, ``prompts_without_questions``, ``relabelled`` (rows whose cells
        name another label than their folder/file), ``unusual_weights``, ``quarantined`` (records
        of the config's files that could not be kept at all).
        """
        if options:
            raise TypeError(f"read_release takes no options, got {sorted(options)}")
        source = Path(source)
        root = _data_root(source)
        prefix = root.relative_to(source).as_posix() + "/" if root != source else ""
        anomalies: list[Anomaly] = []
        quarantine: list[Quarantined] = []
        files_read: set[str] = set()
        prompt_files, eval_files = _csv_files(root / "prompts"), _csv_files(root / "evaluation")
        for folder in ("prompts", "evaluation"):
            if not (root / folder).is_dir():
                anomalies.append(Anomaly("missing_file", f"{folder}/", None, f"no {folder}/ folder in the release"))
            for stray in sorted((root / folder).glob("*.csv")):
                anomalies.append(Anomaly("ignored_file", f"{folder}/{stray.name}", None,
                                         "a CSV outside the category folders: not read"))
        rows_by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        index: dict[tuple[str, str, str], dict[str, Any]] = {}
        counts: dict[str, Counter] = defaultdict(Counter)
        prompt_subs: dict[tuple[str, str], str] = {}  # (category, subcategory) -> prompts file
        known_subs = tuple(s for subs in SUBCATEGORIES.values() for s in subs)

        def read(path: Path, rel: str, columns: dict, needs: Sequence[str], cat: str) -> list[_Record]:
            files_read.add(prefix + rel)
            before = len(quarantine)
            records = _read_csv(path, rel, columns, needs, anomalies, quarantine)
            counts[cat]["quarantined"] += len(quarantine) - before
            return records

        for cat in _ordered(prompt_files):
            if cat not in CATEGORIES:
                anomalies.append(Anomaly("unknown_category", f"prompts/{cat}", None,
                                         f"folder {cat!r} is not one of {list(CATEGORIES)}; its rows are in 'all' only"))
            for path in prompt_files[cat]:
                rel = f"prompts/{cat}/{path.name}"
                sub = _subcategory(path.stem, cat, "prompts")
                prompt_subs[(cat, sub)] = rel
                relabels: dict[tuple[str, str, str | None], list[str]] = defaultdict(list)
                for rec in read(path, rel, _PROMPT_COLUMNS, _PROMPT_NEEDS, cat):
                    c = rec.cells
                    raw_id = c["id"]
                    sid = _norm_id(raw_id)
                    if not c["prompt"].strip():
                        quarantine.append(Quarantined(rel, f"line {rec.line}", "no prompt: nothing to draw", rec.raw))
                        anomalies.append(Anomaly("empty_prompt", rel, sid or f"line {rec.line}",
                                                 f"line {rec.line}: no prompt text: quarantined"))
                        counts[cat]["quarantined"] += 1
                        continue
                    if not sid:
                        sid = f"line{rec.line}"
                        anomalies.append(Anomaly("generated_id", rel, sid, f"line {rec.line}: no id: given {sid!r}"))
                    elif sid != raw_id:
                        anomalies.append(Anomaly("normalised_id", rel, sid, f"line {rec.line}: id {raw_id!r} read as {sid!r}"))
                    if (cat, sub, sid) in index:
                        n = 2
                        while (cat, sub, f"{sid}~{n}") in index:
                            n += 1
                        anomalies.append(Anomaly("duplicate_id", rel, sid,
                                                 f"line {rec.line}: id {sid!r} repeats: this row is kept as "
                                                 f"{sid}~{n}, without questions (the questions of {sid!r} go to its "
                                                 "first row, as in the authors' code)"))
                        sid = f"{sid}~{n}"
                    cat_cell, sub_cell = c.get("category", ""), c.get("subcategory", "")
                    for column, cell, own, known in (("Category", cat_cell, cat, CATEGORIES),
                                                     ("Subcategory", sub_cell, sub, known_subs)):
                        named = _names(cell, own, known)
                        if named != own and cell.strip():
                            relabels[(column, cell, named)].append(sid)
                    row = {"id": f"{cat}/{sub}/{sid}", "source_id": sid, "prompt": c["prompt"],
                           "reference_caption": c.get("reference_caption", ""),
                           "assessment_point": c.get("assessment_point", ""),
                           "category": cat, "subcategory": sub, "category_cell": cat_cell,
                           "subcategory_cell": sub_cell, "has_questions": False, "questions": [],
                           "extra": _extra(rec.extra)}
                    index[(cat, sub, sid)] = row
                    rows_by_cat[cat].append(row)
                for (column, cell, named), ids in relabels.items():
                    label = cat if column == "Category" else sub
                    says = f"names {named!r}" if named else "names no known label"
                    anomalies.append(Anomaly("relabelled", rel, ids[0],
                                             f"{column} cell {cell!r} on {len(ids)} row(s) ({_list_ids(ids)}) {says}, "
                                             f"not the {'folder' if column == 'Category' else 'file'} label "
                                             f"{label!r}, which is used"))
                counts[cat]["relabelled"] += len({i for ids in relabels.values() for i in ids})

        eval_subs: set[tuple[str, str]] = set()
        for cat in _ordered(eval_files):
            for path in eval_files[cat]:
                rel = f"evaluation/{cat}/{path.name}"
                sub = _subcategory(path.stem, cat, "evaluation")
                target = sub
                if (cat, sub) not in prompt_subs:
                    # prompts saved under another name than the one the authors' code expects: with or
                    # without the category's prefix, in another case or with other separators
                    named = {name_key(s): s for c, s in prompt_subs if c == cat}
                    alt = next((named[k] for k in map(name_key, (sub, sub.removeprefix(f"{cat}_"), f"{cat}_{sub}"))
                                if k in named), None)
                    if alt is not None:
                        target = alt
                        anomalies.append(Anomaly("file_name", prompt_subs[(cat, alt)], None,
                                                 f"holds the prompts of {rel}; the authors' code looks for them in "
                                                 f"prompts/{cat}/{cat}_{sub}.csv"))
                eval_subs.add((cat, target))
                orphans: dict[str, list[_Record]] = defaultdict(list)
                seen: set[tuple[str, str]] = set()
                for rec in read(path, rel, _EVAL_COLUMNS, _EVAL_NEEDS, cat):
                    c = rec.cells
                    sid, qid = _norm_id(c["source_id"]), _norm_id(c.get("id", ""))
                    counts[cat]["question_rows"] += 1
                    if not sid:
                        quarantine.append(Quarantined(rel, f"line {rec.line}", "no source_id: the question belongs to "
                                                      "no prompt", rec.raw))
                        anomalies.append(Anomaly("no_source_id", rel, f"line {rec.line}",
                                                 f"line {rec.line}: question {qid!r} has no source_id: quarantined"))
                        counts[cat]["quarantined"] += 1
                        continue
                    weight = _weight(c.get("weight", ""))
                    if weight is None:
                        anomalies.append(Anomaly("bad_weight", rel, sid,
                                                 f"line {rec.line}: question {qid!r} has weight {c.get('weight', '')!r}, "
                                                 "not a finite non-negative number: kept as null (the instance "
                                                 "cannot be scored)"))
                    elif weight != int(weight) or not 1 <= weight <= 10:
                        counts[cat]["unusual_weights"] += 1
                        anomalies.append(Anomaly("unusual_weight", rel, sid,
                                                 f"line {rec.line}: question {qid!r} has weight {c['weight'].strip()} "
                                                 "(kept as is; most weights are integers 1 to 10)"))
                    if not c["question"].strip():
                        anomalies.append(Anomaly("empty_question", rel, sid,
                                                 f"line {rec.line}: question {qid!r} has no text: kept"))
                    if qid and (sid, qid) in seen:
                        anomalies.append(Anomaly("duplicate_question_id", rel, sid,
                                                 f"line {rec.line}: question id {qid!r} repeats within the instance "
                                                 "(both kept; the instance's questions are asked by position)"))
                    seen.add((sid, qid))
                    note = c.get("note") or None
                    question = {"id": qid, "question": c["question"], "criterion": c.get("evaluation_criteria", ""),
                                "weight": weight, "note": note, "dimension": None, "extra": _extra(rec.extra)}
                    row = index.get((cat, target, sid))
                    if row is None:
                        orphans[sid].append(rec)
                        continue
                    row["questions"].append(question)
                if orphans:
                    n = sum(len(r) for r in orphans.values())
                    counts[cat]["orphan_questions"] += n
                    counts[cat]["quarantined"] += n
                    expected = prompt_subs.get((cat, target)) or f"prompts/{cat}/{cat}_{sub}.csv"
                    why = (f"the prompts file {expected} lacks these ids" if (cat, target) in prompt_subs
                           else f"there is no prompts file {expected} (where the authors' code looks for them)")
                    anomalies.append(Anomaly("orphan_question", rel, None,
                                             f"{n} question(s) for {len(orphans)} source id(s) "
                                             f"({_list_ids(list(orphans))}) have no prompt: {why}; quarantined "
                                             "with their raw text"))
                    quarantine.extend(Quarantined(rel, sid, f"no prompt {sid!r} in {expected}", rec.raw)
                                      for sid, recs in orphans.items() for rec in recs)

        for cat, sub in sorted(set(prompt_subs) - eval_subs):
            anomalies.append(Anomaly("missing_file", f"evaluation/{cat}/{sub}_eval.csv", None,
                                     f"no evaluation file for the prompts of {prompt_subs[(cat, sub)]}"))
        present = set(prompt_subs) | eval_subs | {(c, _subcategory(p.stem, c, "evaluation"))
                                                  for c, ps in eval_files.items() for p in ps}
        for cat, subs in SUBCATEGORIES.items():
            for sub in subs:
                if (cat, sub) not in present:
                    anomalies.append(Anomaly("missing_subcategory", f"prompts/{cat}/{cat}_{sub}.csv", None,
                                             f"neither prompts nor questions of {cat}/{sub} in this release"))

        for cat, rows in rows_by_cat.items():
            c = counts[cat]
            c["rows"] = len(rows)
            for row in rows:
                row["has_questions"] = bool(row["questions"])
                c["questions"] += len(row["questions"])
                if not row["questions"]:
                    c["prompts_without_questions"] += 1
                    anomalies.append(Anomaly("no_questions", prompt_subs[(cat, row["subcategory"])],
                                             row["source_id"], "no evaluation questions: kept, unscorable"))

        cats = _ordered(set(rows_by_cat) | set(counts))
        configs = {cat: rows_by_cat.get(cat, []) for cat in CATEGORIES}
        configs["all"] = [row for cat in cats for row in rows_by_cat.get(cat, [])]
        keys = ("rows", "questions", "question_rows", "orphan_questions", "prompts_without_questions",
                "relabelled", "unusual_weights", "quarantined")
        out_counts = {cat: {k: counts[cat][k] for k in keys} for cat in CATEGORIES}
        out_counts["all"] = {k: sum(counts[c][k] for c in cats) for k in keys}
        return Release(configs=configs, anomalies=anomalies, counts=out_counts, license=self.license,
                       source=str(source), quarantine=quarantine, files_read=files_read)

    # -- scoring --------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """R2I-Score of each image: one judge call per instance (all batched), bounded re-asks.

        Options: ``max_reasks`` (default 2): follow-ups naming the questions a reply left
        unanswered or scored outside the allowed values; ``allowed_scores`` (default
        ``(0, 0.5, 1)``, the values the release's criteria define; ``None`` accepts any number in
        [0, 1]); ``missing``: what an instance with questions still unanswered after the re-asks
        gets: ``"fail"`` (default; the paper's equation 1 needs every question: no score, the
        failure recorded) or ``"answered"`` (the official code's behaviour: the weighted mean over
        the answered questions, with the unanswered ids recorded in ``context["unanswered"]`` and
        ``failure``); ``template``: ``"paper"`` (default: the appendix A.4 text, the image before
        it) or ``"official"`` (the authors' own text and question layout, the text before the
        image, see :func:`render_request`); ``subcategories``: the ``<category>/<subcategory>``
        names to evaluate (default all; the official script evaluates
        :data:`OFFICIAL_SUBCATEGORIES`), the others are left out, unjudged, with
        ``context["excluded"] = True``; ``round_scores``: round each instance's score to that many
        decimals (the official script rounds to 2). Instances without questions, or with a
        question whose weight is not a number, are unscorable: no score, no judge call,
        ``context["unscorable"] = True``. An image that cannot be read fails alone, with the
        reason. ``structured_output`` (default False: the official code sends the plain template)
        also sends :func:`reply_schema`, so judges that enforce schemas answer with exactly the JSON
        the template asks for. Options of :meth:`aggregate` are accepted and ignored.
        """
        unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; R2I-Bench scoring takes "
                            f"{sorted(_SCORE_OPTIONS | _AGGREGATE_OPTIONS)}")
        max_reasks = options.get("max_reasks", 2)
        missing = options.get("missing", "fail")
        allowed = options.get("allowed_scores", ALLOWED_SCORES)
        template = options.get("template", "paper")
        decimals = options.get("round_scores")
        wanted = options.get("subcategories")
        wanted = None if wanted is None else set(wanted)
        if missing not in _MISSING:
            raise ValueError(f"missing must be one of {_MISSING}, got {missing!r}")
        if template not in _TEMPLATES_KINDS:
            raise ValueError(f"template must be one of {_TEMPLATES_KINDS}, got {template!r}")
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")

        results, asks, todo = [], [], []
        for i, (row, image) in enumerate(zip(rows, images)):
            _check_row(row, i)
            result = _blank_result(self, row, image)
            results.append(result)
            questions = row["questions"] or []
            if wanted is not None and f"{row['category']}/{row['subcategory']}" not in wanted:
                result.context["excluded"] = True
                result.failure = "not evaluated: its subcategory is not among the ones asked for (subcategories=...)"
                continue
            why = _unscorable(questions)
            if why:
                result.context["unscorable"] = True
                result.failure = f"unscorable: {why}"
                continue
            todo.append((result, row, image))
        # each distinct image read once, however many rows share it; an unreadable one fails alone
        distinct: dict[Any, Any] = {}
        for _, _, image in todo:
            distinct.setdefault(_image_key(image), image)
        loaded = dict(zip(distinct, load_images(list(distinct.values()))))
        for result, row, image in todo:
            img = loaded[_image_key(image)]
            if isinstance(img, ImageError):
                result.failure = f"image: {img}"
                continue
            if result.image is None:
                result.image = img.source
            keys = question_keys(row["questions"])
            text = render_request(row, keys, allowed, template)
            schema = reply_schema(keys, allowed) if options.get("structured_output") else None
            parts = (text, img) if template == "official" else (img, text)  # the authors send the text first
            request = ChatRequest.simple(*parts, metadata={"id": result.id}, json_schema=schema)
            asks.append((result, keys, request, _ScoreCollector(keys, allowed)))

        parsed = ask_structured(judge, [a[2] for a in asks], [a[3] for a in asks], max_reasks=max_reasks,
                                reask_prompt=REASK_PROMPT, progress=progress)
        for (result, keys, _, collector), outcome in zip(asks, parsed):
            result.replies = outcome.texts
            result.reasks = outcome.reasks
            for q, k in zip(result.questions, keys):
                q.id, q.score = k, collector.scores.get(k)
            unanswered = [k for k in keys if k not in collector.scores]
            if outcome.ok:
                result.score = _weighted(result.questions)
            elif collector.scores and missing == "answered" and not outcome.transient:
                result.score = _weighted(result.questions)
                result.context["unanswered"] = unanswered
                result.failure = (f"question(s) {', '.join(unanswered)} unanswered after {outcome.reasks} re-ask(s); "
                                  f"scored on the answered ones (missing='answered'): {outcome.error}")
            else:
                result.context["unanswered"] = unanswered
                result.failure = f"question(s) {', '.join(unanswered)} unanswered after {outcome.reasks} re-ask(s): {outcome.error}"
                result.retryable = outcome.transient
            if result.score is not None and decimals is not None:
                result.score = round(result.score, decimals)
            if result.score is not None:
                result.subscores = _dimension_scores(result.questions)
        return results

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """Table 3 and Table 14 from per-image results, on 0 to ``scale`` (default 100).

        ``r2i_score``: the micro average over scored instances; ``overall``, ``categories``
        (in Table 3's order) and ``subcategories`` (``<category>/<subcategory>``): each a
        :func:`~t2ireason.stats.summarize` (mean, se, bootstrap and normal 95% CIs, n, failed);
        ``category_scores``: the Table 3 row; ``category_macro_mean``: the plain mean of the
        category means (not the paper's overall, shown for comparison); ``dimensions``: Table 13
        style means per question dimension where the rows carry dimensions. Unscorable instances
        are counted in ``num_unscorable`` and ``unscorable_ids``, instances left out by
        ``subcategories`` in ``num_excluded``; both are left out of every mean; judge failures are
        counted in each summary's ``failed``. ``round_scores``: each mean computed and rounded as the
        official script computes its category averages (``round(sum(scores) / len(scores), 2)``
        over the instance scores, on the 0 to 1 scale), then put on ``scale`` (0.57 -> 57.0, not
        56.99999999999999).
        """
        unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}")
        scale = options.get("scale", 100.0)
        decimals = options.get("round_scores")
        kw = {k: options[k] for k in ("confidence", "n_resamples", "seed") if k in options}

        def stat(values: list[float | None]) -> dict[str, Any]:
            s = summarize(values, scale=scale, **kw)
            if decimals is not None and s["n"]:
                counted = [v for v in values if v is not None and not math.isnan(v)]  # as summarize counts
                # the authors' figure, then the scale without float noise (round to 10 places)
                s["mean"] = round(round(sum(counted) / len(counted), decimals) * scale, 10)
            return s

        excluded = [r for r in results if r.context.get("excluded")]
        unscorable = [r for r in results if r.context.get("unscorable")]
        scored = [r for r in results if not r.context.get("unscorable") and not r.context.get("excluded")]
        by_cat: dict[str, list[ImageResult]] = defaultdict(list)
        by_sub: dict[str, list[ImageResult]] = defaultdict(list)
        for r in scored:
            by_cat[r.config or "unknown"].append(r)
            by_sub[f"{r.config}/{r.context.get('subcategory')}"].append(r)
        overall = stat([r.score for r in scored])
        categories = {c: stat([r.score for r in by_cat[c]]) for c in _ordered(by_cat)}
        means = [s["mean"] for s in categories.values() if s["n"]]
        dims = sorted({d for r in scored for d in r.subscores})
        return {
            "r2i_score": overall["mean"],
            "overall": overall,
            "categories": categories,
            "category_scores": {c: s["mean"] for c, s in categories.items()},
            "category_macro_mean": sum(means) / len(means) if means else math.nan,
            "subcategories": {s: stat([r.score for r in by_sub[s]]) for s in sorted(by_sub)},
            "dimensions": {d: stat([r.subscores.get(d) for r in scored if d in r.subscores]) for d in dims},
            "num_unscorable": len(unscorable),
            "unscorable_ids": [r.id for r in unscorable],
            "num_excluded": len(excluded),
            "num_partial": sum(1 for r in scored if r.score is not None and r.context.get("unanswered")),
            "scale": scale,
        }

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 3 (Overall, then the categories in the paper's order) with Table 14's 95% intervals,
        then one table per category over its subcategories (appendix B.1)."""
        scale = aggregate.get("scale", 100.0)
        cells = {"Overall": aggregate["overall"],
                 **{CATEGORY_TITLES.get(c, c): s for c, s in aggregate["categories"].items()}}
        tables = [PaperTable.one_row("R2I-Bench Table 3: R2I-Score", label, cells,
                                     note=f"0-{scale:g}; overall is the micro average over instances")]
        for category in aggregate["categories"]:
            subs = {name.split("/", 1)[1]: s for name, s in aggregate["subcategories"].items()
                    if name.split("/", 1)[0] == category}
            if subs:
                tables.append(PaperTable.one_row(f"R2I-Bench: {CATEGORY_TITLES.get(category, category)} by subcategory",
                                                 label, subs, note=f"0-{scale:g}"))
        return tables


_ROW_FIELDS = ("id", "prompt", "category", "subcategory", "questions")
_QUESTION_FIELDS = ("question", "criterion", "weight")


def _check_row(row: Any, i: int) -> None:
    """Rows that are not R2I-Bench rows are the caller's mistake: a clear error. A row's own
    irregularities (a weight that is not a number) make it unscorable instead (:func:`_unscorable`)."""
    if not isinstance(row, dict):
        raise ValueError(f"rows[{i}] is a {type(row).__name__}, not an R2I-Bench row (a dict)")
    missing = [f for f in _ROW_FIELDS if f not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it an R2I-Bench row?")
    for j, q in enumerate(row["questions"] or []):
        lacking = [f for f in ("question", "criterion") if not isinstance(q, dict) or f not in q]
        if lacking:
            raise ValueError(f"rows[{i}] ({row['id']}): question {j} lacks {lacking}")


def _usable_weight(w: Any) -> bool:
    return not isinstance(w, bool) and isinstance(w, (int, float)) and math.isfinite(w) and w >= 0


def _unscorable(questions: Sequence[dict[str, Any]]) -> str | None:
    """Why an instance cannot be scored at all (None: it can)."""
    if not questions:
        return "the release has no evaluation questions for this prompt"
    bad = [str(q.get("id") or n) for n, q in enumerate(questions, 1) if not _usable_weight(q.get("weight"))]
    if bad:
        return f"question(s) {', '.join(bad)} have no usable weight (the release's cell is not a number)"
    if sum(float(q["weight"]) for q in questions) <= 0:
        return "every question of this prompt has weight 0"
    return None


def _image_key(image: Any) -> Any:
    return str(image) if isinstance(image, (str, Path)) else id(image)


def _blank_result(bench: R2IBench, row: dict[str, Any], image: Any) -> ImageResult:
    source = str(image) if isinstance(image, (str, Path)) else None
    questions = [QuestionResult(question=q["question"], score=None, criterion=q["criterion"],
                                weight=float(q["weight"]) if _usable_weight(q.get("weight")) else None,
                                id=str(q.get("id") or ""), group=q.get("dimension"))
                 for q in row["questions"] or []]
    context = {"subcategory": row["subcategory"], "source_id": row.get("source_id"),
               "reference_caption": row.get("reference_caption")}
    return ImageResult(id=bench.row_id(row), prompt=bench.prompt(row), score=None, config=row["category"],
                       questions=questions, image=source, context=context)


def _dimension_scores(questions: Sequence[QuestionResult]) -> dict[str, float | None]:
    """Weighted mean per dimension (Table 13: TA, RA, IQ), where questions carry one."""
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for q in questions:
        if q.group:
            groups[q.group].append(q)
    return {g: _weighted(qs) for g, qs in groups.items()}


# -- the evaluation-criteria pipeline (appendix A.4) ------------------------------------------------

_DIMENSIONS = {
    "reasoning": "reasoning", "reasoning accuracy": "reasoning", "ra": "reasoning",
    "alignment": "alignment", "text-image alignment": "alignment", "text image alignment": "alignment",
    "ta": "alignment", "quality": "quality", "image quality": "quality", "iq": "quality",
}


@dataclass
class CriteriaGeneration:
    """The outcome of the criteria pipeline for one prompt: a row of the dataset's schema
    (``questions`` empty and ``has_questions`` False when it failed), with everything that
    happened on the way."""

    row: dict[str, Any]
    failure: str | None = None
    #: weights moved into their dimension's range (weights="clamp"), as readable notes
    adjustments: list[str] = field(default_factory=list)
    #: every raw reply, per step: {"imagine": [...], "design": [...], "weight": [...]}
    replies: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None


def _text_reply(text: str) -> str:
    if not text.strip():
        raise ReplyParseError("empty reply")
    return text.strip()


def _weights_parser(ranges: dict[str, tuple[float, float]], mode: str):
    """Validate the WEIGHT step's JSON list; returns (questions, adjustments)."""

    def parse(text: str) -> tuple[list[dict[str, Any]], list[str]]:
        value = extract_json(text, expect=(list, dict))
        if isinstance(value, dict):  # {"questions": [...]} and the like
            lists = [v for v in value.values() if isinstance(v, list)]
            if len(lists) != 1:
                raise ReplyParseError("expected a JSON list of questions")
            value = lists[0]
        if not value:
            raise ReplyParseError("the list of questions is empty")
        questions, adjustments, problems = [], [], []
        for n, item in enumerate(value, start=1):
            if not isinstance(item, dict):
                problems.append(f"item {n} is not an object")
                continue
            question, criterion = item.get("question"), item.get("evaluation_criteria", item.get("criteria"))
            dim = _DIMENSIONS.get(str(item.get("dimension", "")).strip().lower())
            if not isinstance(question, str) or not question.strip():
                problems.append(f"item {n} has no question")
            if not isinstance(criterion, str) or not criterion.strip():
                problems.append(f"item {n} has no evaluation_criteria")
            if dim is None:
                problems.append(f"item {n} has dimension {item.get('dimension')!r}, not one of {', '.join(ranges)}")
            try:
                weight = as_score(item.get("weight"), lo=1.0, hi=10.0, name=f"item {n} weight")
            except ReplyParseError as e:
                problems.append(str(e))
                continue
            if dim is None or problems:
                continue
            lo, hi = ranges[dim]
            if not lo <= weight <= hi:
                if mode == "reject":
                    problems.append(f"item {n} ({dim}) has weight {weight:g}, outside its range {lo:g} to {hi:g}")
                    continue
                clamped = min(max(weight, lo), hi)
                adjustments.append(f"question {n}: weight {weight:g} clamped to {clamped:g} ({dim} range {lo:g}-{hi:g})")
                weight = clamped
            questions.append({"id": str(n), "question": question.strip(), "criterion": criterion.strip(),
                              "weight": weight, "note": None, "dimension": dim, "extra": None})
        if problems:
            raise ReplyParseError("; ".join(problems))
        return questions, adjustments

    return parse


def generate_criteria(prompts: Sequence[dict[str, Any]], judge: Any, *, weights: str = "clamp",
                      ranges: dict[str, tuple[float, float]] | None = None, max_reasks: int = 2,
                      sampling: Sampling | None = None, progress: bool | str = False) -> list[CriteriaGeneration]:
    """Evaluation questions, criteria and weights for new prompts (seed 003, appendix A.4).

    Each prompt is a dict with ``prompt`` and ``reference_caption`` (the paper's [EXPECTED]), and
    optionally ``assessment_point``, ``category``, ``subcategory`` and ``source_id`` (defaults:
    ``"custom"``, ``"custom"``, its position from 1). Three text-only turns of one conversation per
    prompt, batched across prompts: imagine the correct image, design questions with criteria on
    [0, 1], assign weights (the paper's WEIGHT prompt, plus the section 3 per-dimension ranges:
    reasoning 7-10, alignment 4-6, quality 1-3). Every reply is validated and re-asked up to
    ``max_reasks`` times; a weight outside 1-10 or a missing field is always re-asked; a weight
    inside 1-10 but outside its dimension's range is moved to the range's nearest end and noted in
    ``adjustments`` (``weights="clamp"``, default) or re-asked (``weights="reject"``). The paper's
    authors then had experts review everything: so should you.
    """
    if weights not in ("clamp", "reject"):
        raise ValueError(f"weights must be 'clamp' or 'reject', got {weights!r}")
    ranges = dict(ranges or WEIGHT_RANGES)
    if set(ranges) != set(WEIGHT_RANGES):
        raise ValueError(f"ranges must give {sorted(WEIGHT_RANGES)}, got {sorted(ranges)}")
    shown_ranges = {d: (f"{lo:g}", f"{hi:g}") for d, (lo, hi) in ranges.items()}
    sampling = sampling or Sampling(temperature=0.1)  # the paper's setting for this pipeline
    out: list[CriteriaGeneration] = []
    for i, p in enumerate(prompts):
        if not isinstance(p, dict) or not str(p.get("prompt") or "").strip() or not str(p.get("reference_caption") or "").strip():
            raise ValueError(f"prompts[{i}] needs a non-empty 'prompt' and 'reference_caption' (the expected answer)")
        cat, sub = p.get("category") or "custom", p.get("subcategory") or "custom"
        sid = str(p.get("source_id") or i + 1)
        row = {"id": f"{cat}/{sub}/{sid}", "source_id": sid, "prompt": p["prompt"].strip(),
               "reference_caption": p["reference_caption"].strip(), "assessment_point": (p.get("assessment_point") or "").strip(),
               "category": cat, "subcategory": sub, "category_cell": p.get("category_cell") or cat,
               "subcategory_cell": p.get("subcategory_cell") or sub, "has_questions": False, "questions": [],
               "extra": None}
        out.append(CriteriaGeneration(row=row, replies={"imagine": [], "design": [], "weight": []}))

    def slots(g: CriteriaGeneration) -> dict[str, str]:
        return {"prompt": g.row["prompt"], "expected": g.row["reference_caption"]}

    live = list(out)
    conversations = [ChatRequest.simple(render(_TEMPLATES, "imagine_image", **slots(g)), sampling=sampling) for g in live]
    steps = [("imagine", _text_reply), ("design", _text_reply), ("weight", _weights_parser(ranges, weights))]
    for n, (step, parser) in enumerate(steps):
        parsed = ask_structured(judge, conversations, parser, max_reasks=max_reasks,
                                progress=f"criteria: {step}" if progress is True else progress)
        nxt_live, nxt_conv = [], []
        for g, conv, res in zip(live, conversations, parsed):
            g.replies[step] = res.texts
            if not res.ok:
                g.failure = f"{step} step: {res.error}"
                continue
            if step == "weight":
                g.row["questions"], g.adjustments = res.value
                g.row["has_questions"] = True
                continue
            # the next turn follows the accepted reply (failed attempts, if any, are left out)
            follow = (render(_TEMPLATES, "design_questions", **slots(g)) if n == 0 else
                      render(_TEMPLATES, "weight", assessment_points=g.row["assessment_point"] or "(none given)", **slots(g))
                      + "\n\n" + render(_TEMPLATES, "weight_dimensions", ranges=shown_ranges))
            nxt_live.append(g)
            nxt_conv.append(conv.then(res.value, follow))
        live, conversations = nxt_live, nxt_conv
    return out


BENCHMARK = R2IBench()
