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
import io
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

from ..images import as_image
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, as_score, ask_structured, extract_json
from ..prompts import render
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import Anomaly, Benchmark, Release, ReleaseError

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
_SCORE_OPTIONS = {"max_reasks", "missing", "allowed_scores", "structured_output"}
_AGGREGATE_OPTIONS = {"scale", "confidence", "n_resamples", "seed"}

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


def _column(name: str) -> str:
    """'Reference Caption' -> 'reference_caption': headers differ in case and spacing between files."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _norm_id(value: str) -> str:
    """Ids as text; '12.0' (a spreadsheet's float) is '12'."""
    value = value.strip()
    return value[:-2] if re.fullmatch(r"\d+\.0", value) else value


_STOPWORDS = {"reasoning", "and", "generation", "the", "of", "visualization"}


def _tokens(label: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", label.lower()) if t not in _STOPWORDS}


def _agrees(cell: str, label: str) -> bool:
    """Whether a Category/Subcategory cell names the folder/file label (case, spacing and
    'Reasoning' suffixes aside): 'Concept Mixing' agrees with concept_mixing, 'Color' in the
    attribute file does not."""
    a, b = _tokens(cell), _tokens(label)
    return bool(a) and (a <= b or b <= a)


def _subcategory(stem: str, category: str) -> str:
    """The subcategory a file is about: 'commonsense_color' and 'color_eval' both give 'color'."""
    stem = stem.removesuffix("_eval")
    return stem.removeprefix(f"{category}_") if stem != category else stem


def _read_csv(path: Path, rel: str, required: Sequence[str], optional: Sequence[str],
              anomalies: list[Anomaly]) -> list[tuple[int, dict[str, str]]]:
    """(line number, record keyed by normalised column) for each data row of a CSV file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise ReleaseError(f"{rel}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            anomalies.append(Anomaly("empty_file", rel, detail="the file is empty (no header)"))
            return []
        columns = [_column(h) for h in header]
        dupes = sorted(c for c, n in Counter(columns).items() if n > 1)
        if dupes:
            raise ReleaseError(f"{rel}, line 1: column(s) {dupes} appear more than once in the header {header}")
        missing = [c for c in required if c not in columns]
        if missing:
            raise ReleaseError(f"{rel}, line 1: missing column(s) {missing}; the header is {header}")
        unknown = [h for h, c in zip(header, columns) if c not in required and c not in optional]
        if unknown:
            anomalies.append(Anomaly("unknown_column", rel, detail=f"column(s) {unknown} not read"))
        out = []
        for cells in reader:
            if not cells:  # a blank line
                continue
            line = reader.line_num
            if len(cells) != len(columns):
                raise ReleaseError(f"{rel}, line {line}: {len(cells)} fields where the header has {len(columns)}")
            if not any(c.strip() for c in cells):
                anomalies.append(Anomaly("dropped_row", rel, f"line {line}", "every cell is empty"))
                continue
            out.append((line, dict(zip(columns, cells))))
    except csv.Error as e:
        raise ReleaseError(f"{rel}, line {reader.line_num}: malformed CSV: {e}") from None
    if not out:
        anomalies.append(Anomaly("empty_file", rel, detail="header only, no rows"))
    return out


def _weight(raw: str, rel: str, line: int, sid: str, qid: str) -> float:
    where = f"{rel}, line {line} (source_id {sid!r}, question {qid!r})"
    try:
        w = float(raw.strip())
    except ValueError:
        raise ReleaseError(f"{where}: weight {raw!r} is not a number") from None
    if not math.isfinite(w) or w < 0:
        raise ReleaseError(f"{where}: weight {raw!r} is not a finite, non-negative number")
    return w


def _data_root(source: str | Path) -> Path:
    """The folder holding prompts/ and evaluation/: the checkout's data/ folder or that folder itself."""
    source = Path(source)
    for root in (source / "data", source):
        if (root / "prompts").is_dir():
            if not (root / "evaluation").is_dir():
                raise ReleaseError(f"{root}: has prompts/ but no evaluation/ folder; is this an R2I-Bench release?")
            return root
    raise ReleaseError(f"{source}: no data/prompts folder; point at a checkout of the R2I-Bench release "
                       "(data/prompts/<category>/*.csv, data/evaluation/<category>/*_eval.csv)")


def _csv_files(folder: Path) -> dict[str, list[Path]]:
    """category folder name -> its CSV files, sorted."""
    return {d.name: sorted(d.glob("*.csv")) for d in sorted(folder.iterdir()) if d.is_dir()}


def _ordered(categories: Sequence[str]) -> list[str]:
    known = [c for c in CATEGORIES if c in categories]
    return known + sorted(c for c in categories if c not in CATEGORIES)


def _list_ids(ids: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


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
                   allowed_scores: Sequence[float] | None = ALLOWED_SCORES) -> str:
    """The judge prompt for one instance: the appendix A.4 protocol with the prompt, every
    question and its criterion, and the ids the answer must score."""
    questions = row.get("questions") or []
    keys = list(keys) if keys is not None else question_keys(questions)
    listed = [{"key": k, "question": q["question"], "criterion": q["criterion"]} for k, q in zip(keys, questions)]
    return render(_TEMPLATES, "image_evaluation", prompt=row["prompt"],
                  question_list=render(_TEMPLATES, "question_list", questions=listed),
                  important_enforcement=render(_TEMPLATES, "important_enforcement", ids=keys,
                                               scale=_scale_text(allowed_scores)))


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
    return sum(q.weight * q.score for q in scored) / total if total > 0 else None


# -- the benchmark ----------------------------------------------------------------------------------


class R2IBench(Benchmark):
    name = "r2i-bench"
    pretty_name = "R2I-Bench"
    configs = (*CATEGORIES, "all")
    metric = "r2i_score"
    license = None  # the release states none that we could check: users must say
    citation = _CITATION
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
    }
    presets = {
        # The paper (section 3, appendix A.4) and the official code both use GPT-4o at temperature 0.1.
        # They differ in what happens to questions the judge leaves unanswered (after the re-asks):
        # the paper's equation 1 sums over all n questions, so the instance fails ("fail"); the
        # official code drops them from the weighted mean, kept here as "answered", with each drop
        # recorded in the result instead of silently.
        "paper": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1)},
                  "options": {"missing": "fail"}},
        "official": {"judge": "openai:gpt-4o", "judge_kwargs": {"sampling": Sampling(temperature=0.1)},
                     "options": {"missing": "answered"}},
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
            }),
        })

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """``<category>/<subcategory>/<source_id>.png`` (``..._<sample>.png`` for further samples):
        the folders of the release, one image per prompt id."""
        suffix = f"_{sample}" if sample else ""
        return f"{row['category']}/{row['subcategory']}/{row['source_id']}{suffix}.png"

    # -- the release ----------------------------------------------------------------------------

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read ``data/prompts`` and ``data/evaluation`` of a checkout (or of its ``data`` folder).

        Counts per config: ``rows``, ``questions`` (attached), ``question_rows`` (read),
        ``orphan_questions``, ``prompts_without_questions``, ``relabelled`` (rows whose cells
        disagree with the folder/file labels), ``unusual_weights``, ``dropped_rows``.
        """
        if options:
            raise TypeError(f"read_release takes no options, got {sorted(options)}")
        root = _data_root(source)
        anomalies: list[Anomaly] = []
        prompt_files, eval_files = _csv_files(root / "prompts"), _csv_files(root / "evaluation")
        for folder in ("prompts", "evaluation"):
            for stray in sorted((root / folder).glob("*.csv")):
                anomalies.append(Anomaly("ignored_file", f"{folder}/{stray.name}",
                                         detail="a CSV outside the category folders: not read"))
        rows_by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        index: dict[tuple[str, str, str], dict[str, Any]] = {}
        counts: dict[str, Counter] = defaultdict(Counter)
        prompt_subs: dict[tuple[str, str], str] = {}  # (category, subcategory) -> prompts file

        for cat in _ordered(prompt_files):
            if cat not in CATEGORIES:
                anomalies.append(Anomaly("unknown_category", f"prompts/{cat}",
                                         detail=f"folder {cat!r} is not one of {list(CATEGORIES)}; its rows are in 'all' only"))
            for path in prompt_files[cat]:
                rel = f"prompts/{cat}/{path.name}"
                sub = _subcategory(path.stem, cat)
                prompt_subs[(cat, sub)] = rel
                relabels: dict[tuple[str, str], list[str]] = defaultdict(list)
                for line, rec in _read_csv(path, rel, _PROMPT_COLUMNS, (), anomalies):
                    sid, prompt = _norm_id(rec["id"]), rec["prompt"].strip()
                    why = ("no id" if not sid else "empty prompt" if not prompt
                           else f"duplicate id {sid!r} (its questions cannot be told apart)"
                           if (cat, sub, sid) in index else None)
                    if why:
                        anomalies.append(Anomaly("duplicate_id" if sid and prompt else "dropped_row", rel, sid or f"line {line}",
                                                 f"line {line}: row dropped: {why}; prompt {prompt[:80]!r}"))
                        counts[cat]["dropped_rows"] += 1
                        continue
                    cat_cell, sub_cell = rec["category"].strip(), rec["subcategory"].strip()
                    if not _agrees(cat_cell, cat):
                        relabels[("Category", cat_cell)].append(sid)
                    if not _agrees(sub_cell, sub):
                        relabels[("Subcategory", sub_cell)].append(sid)
                    row = {"id": f"{cat}/{sub}/{sid}", "source_id": sid, "prompt": prompt,
                           "reference_caption": rec["reference_caption"].strip(),
                           "assessment_point": rec["assessment_point"].strip(),
                           "category": cat, "subcategory": sub, "category_cell": cat_cell,
                           "subcategory_cell": sub_cell, "has_questions": False, "questions": []}
                    index[(cat, sub, sid)] = row
                    rows_by_cat[cat].append(row)
                for (column, cell), ids in relabels.items():
                    label = cat if column == "Category" else sub
                    anomalies.append(Anomaly("relabelled", rel, ids[0],
                                             f"{column} cell {cell!r} on {len(ids)} row(s) ({_list_ids(ids)}) "
                                             f"disagrees with the {'folder' if column == 'Category' else 'file'} "
                                             f"label {label!r}, which is used"))
                counts[cat]["relabelled"] += len({i for ids in relabels.values() for i in ids})

        eval_subs: set[tuple[str, str]] = set()
        for cat in _ordered(eval_files):
            for path in eval_files[cat]:
                rel = f"evaluation/{cat}/{path.name}"
                sub = _subcategory(path.stem, cat)
                eval_subs.add((cat, sub))
                orphans: dict[str, int] = {}
                seen: set[tuple[str, str]] = set()
                for line, rec in _read_csv(path, rel, _EVAL_COLUMNS, _EVAL_OPTIONAL, anomalies):
                    sid, qid = _norm_id(rec["source_id"]), _norm_id(rec["id"])
                    if not sid:
                        anomalies.append(Anomaly("dropped_row", rel, f"line {line}",
                                                 f"line {line}: question {qid!r} has no source_id: dropped"))
                        counts[cat]["dropped_rows"] += 1
                        continue
                    weight = _weight(rec["weight"], rel, line, sid, qid)
                    counts[cat]["question_rows"] += 1
                    if weight != int(weight) or not 1 <= weight <= 10:
                        counts[cat]["unusual_weights"] += 1
                        anomalies.append(Anomaly("unusual_weight", rel, sid,
                                                 f"line {line}: question {qid!r} has weight {rec['weight'].strip()} "
                                                 "(kept as is; most weights are integers 1 to 10)"))
                    if (sid, qid) in seen:
                        anomalies.append(Anomaly("duplicate_question_id", rel, sid,
                                                 f"line {line}: question id {qid!r} repeats within the instance "
                                                 "(both kept; they are asked by position)"))
                    seen.add((sid, qid))
                    note = (rec.get("note") or "").strip() or None
                    question = {"id": qid, "question": rec["question"].strip(),
                                "criterion": rec["evaluation_criteria"].strip(), "weight": weight,
                                "note": note, "dimension": None}
                    row = index.get((cat, sub, sid))
                    if row is None:
                        orphans[sid] = orphans.get(sid, 0) + 1
                        continue
                    row["questions"].append(question)
                if orphans:
                    n = sum(orphans.values())
                    counts[cat]["orphan_questions"] += n
                    target = prompt_subs.get((cat, sub))
                    why = (f"the prompts file {target} lacks these ids" if target
                           else f"there is no prompts file for {cat}/{sub} (expected prompts/{cat}/{cat}_{sub}.csv)")
                    anomalies.append(Anomaly("orphan_question", rel, None,
                                             f"{n} question(s) for {len(orphans)} source id(s) "
                                             f"({_list_ids(list(orphans))}) not attached: {why}"))

        for cat, sub in sorted(set(prompt_subs) - eval_subs):
            anomalies.append(Anomaly("missing_file", f"evaluation/{cat}/{sub}_eval.csv",
                                     detail=f"no evaluation file for the prompts of {prompt_subs[(cat, sub)]}"))

        for cat, rows in rows_by_cat.items():
            c = counts[cat]
            c["rows"] = len(rows)
            for row in rows:
                row["has_questions"] = bool(row["questions"])
                c["questions"] += len(row["questions"])
                if not row["questions"]:
                    c["prompts_without_questions"] += 1
                    anomalies.append(Anomaly("no_questions", f"prompts/{cat}/{cat}_{row['subcategory']}.csv",
                                             row["source_id"], "no evaluation questions: kept, unscorable"))

        cats = _ordered(set(rows_by_cat) | set(counts))
        configs = {cat: rows_by_cat.get(cat, []) for cat in CATEGORIES}
        configs["all"] = [row for cat in cats for row in rows_by_cat.get(cat, [])]
        keys = ("rows", "questions", "question_rows", "orphan_questions", "prompts_without_questions",
                "relabelled", "unusual_weights", "dropped_rows")
        out_counts = {cat: {k: counts[cat][k] for k in keys} for cat in CATEGORIES}
        out_counts["all"] = {k: sum(counts[c][k] for c in cats) for k in keys}
        return Release(configs=configs, anomalies=anomalies, counts=out_counts, license=self.license, source=str(source))

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
        ``failure``). Instances without questions are unscorable: no score, no judge call,
        ``context["unscorable"] = True``. ``structured_output`` (default False: the official code
        sends the plain template) also sends :func:`reply_schema`, so judges that enforce schemas
        answer with exactly the JSON the template asks for. Options of :meth:`aggregate` are
        accepted and ignored.
        """
        unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; R2I-Bench scoring takes "
                            f"{sorted(_SCORE_OPTIONS | _AGGREGATE_OPTIONS)}")
        max_reasks = options.get("max_reasks", 2)
        missing = options.get("missing", "fail")
        allowed = options.get("allowed_scores", ALLOWED_SCORES)
        if missing not in _MISSING:
            raise ValueError(f"missing must be one of {_MISSING}, got {missing!r}")
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} images")

        results, asks = [], []
        loaded: dict[Any, Any] = {}  # one JudgeImage per distinct image, however many rows share it
        for i, (row, image) in enumerate(zip(rows, images)):
            _check_row(row, i)
            result = _blank_result(self, row, image)
            results.append(result)
            questions = row["questions"] or []
            if not questions or sum(float(q["weight"]) for q in questions) <= 0:
                result.context["unscorable"] = True
                result.failure = ("unscorable: the release has no evaluation questions for this prompt" if not questions
                                  else "unscorable: every question of this prompt has weight 0")
                continue
            keys = question_keys(questions)
            key = str(image) if isinstance(image, (str, Path)) else id(image)
            img = loaded[key] if key in loaded else loaded.setdefault(key, as_image(image))
            if result.image is None:
                result.image = img.source
            request = ChatRequest.simple(img, render_request(row, keys, allowed), metadata={"id": result.id},
                                         json_schema=reply_schema(keys, allowed) if options.get("structured_output") else None)
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
            elif collector.scores and missing == "answered":
                result.score = _weighted(result.questions)
                result.context["unanswered"] = unanswered
                result.failure = (f"question(s) {', '.join(unanswered)} unanswered after {outcome.reasks} re-ask(s); "
                                  f"scored on the answered ones (missing='answered'): {outcome.error}")
            else:
                result.context["unanswered"] = unanswered
                result.failure = f"question(s) {', '.join(unanswered)} unanswered after {outcome.reasks} re-ask(s): {outcome.error}"
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
        are counted in ``num_unscorable`` and ``unscorable_ids`` and left out of every mean;
        judge failures are counted in each summary's ``failed``.
        """
        unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}")
        scale = options.get("scale", 100.0)
        kw = {k: options[k] for k in ("confidence", "n_resamples", "seed") if k in options}
        unscorable = [r for r in results if r.context.get("unscorable")]
        scored = [r for r in results if not r.context.get("unscorable")]
        by_cat: dict[str, list[ImageResult]] = defaultdict(list)
        by_sub: dict[str, list[ImageResult]] = defaultdict(list)
        for r in scored:
            by_cat[r.config or "unknown"].append(r)
            by_sub[f"{r.config}/{r.context.get('subcategory')}"].append(r)
        overall = summarize([r.score for r in scored], scale=scale, **kw)
        categories = {c: summarize([r.score for r in by_cat[c]], scale=scale, **kw) for c in _ordered(by_cat)}
        means = [s["mean"] for s in categories.values() if s["n"]]
        dims = sorted({d for r in scored for d in r.subscores})
        return {
            "r2i_score": overall["mean"],
            "overall": overall,
            "categories": categories,
            "category_scores": {c: s["mean"] for c, s in categories.items()},
            "category_macro_mean": sum(means) / len(means) if means else math.nan,
            "subcategories": {s: summarize([r.score for r in by_sub[s]], scale=scale, **kw) for s in sorted(by_sub)},
            "dimensions": {d: summarize([r.subscores.get(d) for r in scored if d in r.subscores], scale=scale, **kw)
                           for d in dims},
            "num_unscorable": len(unscorable),
            "unscorable_ids": [r.id for r in unscorable],
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
    if not isinstance(row, dict):
        raise ValueError(f"rows[{i}] is a {type(row).__name__}, not an R2I-Bench row (a dict)")
    missing = [f for f in _ROW_FIELDS if f not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it an R2I-Bench row?")
    for j, q in enumerate(row["questions"] or []):
        lacking = [f for f in _QUESTION_FIELDS if f not in q or q[f] is None]
        if lacking:
            raise ValueError(f"rows[{i}] ({row['id']}): question {j} lacks {lacking}")
        w = q["weight"]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"rows[{i}] ({row['id']}): question {j} has weight {w!r}, not a non-negative number")


def _blank_result(bench: R2IBench, row: dict[str, Any], image: Any) -> ImageResult:
    source = str(image) if isinstance(image, (str, Path)) else None
    questions = [QuestionResult(question=q["question"], score=None, criterion=q["criterion"],
                                weight=float(q["weight"]), id=str(q.get("id") or ""), group=q.get("dimension"))
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
                              "weight": weight, "note": None, "dimension": dim})
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
               "subcategory_cell": p.get("subcategory_cell") or sub, "has_questions": False, "questions": []}
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
