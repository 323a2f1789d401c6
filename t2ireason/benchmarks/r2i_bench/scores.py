"""R2I-Score: one image's score from its judge's answers, the aggregation over images, the paper's tables.

An image's score is the weighted mean of its questions' scores, ``R2I-Score = sum(w_i * s_i) / sum(w_i)``
(equation 1); a category's score is the mean over its instances and the overall score the micro average
over instances (Table 3), with standard errors and 95% confidence intervals (Table 14); questions with a
dimension (released, generated or inferred from the weights) give Table 13.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...images import ImageError, load_images
from ...judges.base import ChatRequest
from ...parsing import ask_structured
from ...results import ImageResult, PaperTable, QuestionResult
from ...stats import summarize
from ..base import Benchmark, given_path, one_of, paired, step_options
from .levels import FROM_CRITERIA, question_levels, score_levels
from .protocol import (
    REASK_PROMPT,
    REPLY_JSON,
    TEMPLATE_KINDS,
    ScoreCollector,
    question_keys,
    render_request,
    reply_schema,
)
from .release import SUBCATEGORIES, ordered

__all__ = ["CATEGORY_TITLES", "SCORED_FIELDS", "WEIGHT_RANGES", "aggregate", "infer_dimension", "paper_tables", "score",
           "subcategory_coverage"]

#: column names of Table 3
CATEGORY_TITLES = {"commonsense": "Commonsense", "compositional": "Compositional", "concept_mixing": "Con.Mix.",
                   "logical": "Logical", "numerical": "Numerical", "mathematical": "Mathematical", "causal": "Causal"}
#: Table 13's columns: textual alignment, reasoning accuracy, image quality
_TABLE13 = {"alignment": "TA", "reasoning": "RA", "quality": "IQ"}
#: the paper's per-dimension weight ranges (section 3), used by the criteria pipeline
WEIGHT_RANGES = {"reasoning": (7.0, 10.0), "alignment": (4.0, 6.0), "quality": (1.0, 3.0)}
_SCORE_OPTIONS = {"max_reasks", "missing", "allowed_scores", "structured_output", "template", "subcategories",
                  "round_scores", "dimensions", "reply_json"}
_AGGREGATE_OPTIONS = {"scale", "confidence", "n_resamples", "seed", "round_scores"}
_MISSING = ("fail", "answered")
_DIMENSION_SOURCES = ("release", "inferred")
#: what scoring reads of a row (R2IBench.scored_fields); a question's id may be absent (asked by position),
#: and a question without a weight makes its instance unscorable
SCORED_FIELDS = ("id", "prompt", "category", "subcategory", "questions", "questions.question",
                 "questions.criterion")
_ROW_FIELDS = tuple(f for f in SCORED_FIELDS if "." not in f)
_QUESTION_FIELDS = tuple(f.split(".", 1)[1] for f in SCORED_FIELDS if f.startswith("questions."))


def infer_dimension(weight: Any) -> str | None:
    """The dimension whose weight range (:data:`WEIGHT_RANGES`: alignment 4-6, reasoning 7-10, quality
    1-3) holds ``weight``; None when no range does (0, 3.5, 6.5, above 10, not a number)."""
    if not _usable_weight(weight):
        return None
    return next((d for d, (lo, hi) in WEIGHT_RANGES.items() if lo <= float(weight) <= hi), None)


def score(bench: Benchmark, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
          progress: bool | str = False, **options: Any) -> list[ImageResult]:
    """R2I-Score of each image: one judge call per instance (all batched), bounded re-asks.

    Options: ``max_reasks`` (default 2): follow-ups naming the questions a reply left
    unanswered or scored outside the allowed values; ``allowed_scores``: ``"criteria"``
    (default: each question's own levels, read from its criterion by :func:`criterion_levels`, e.g.
    0 / 0.25 / 0.5 / 0.75 / 1, or a range "0.7-0.9" that accepts any score in it; a criterion whose
    levels cannot be read is scored on 0 / 0.5 / 1, its ids in ``context["default_levels"]``), a
    sequence of scores for every question (``(0, 0.5, 1)``), or ``None`` (any number in [0, 1]); the
    paper template's instruction, the schema and the validation all follow them; ``dimensions``:
    ``"release"`` (default: a question's dimension is the row's, null in the release) or
    ``"inferred"`` (the paper preset: a question without one gets the dimension whose weight range
    holds its weight, :func:`infer_dimension`, ``context["dimensions"] = "inferred"``, the ids in no
    range in ``context["outside_ranges"]``); ``missing``: what an instance with questions still unanswered after the re-asks
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
    reason. ``reply_json``: which JSON of a reply holds the answers, ``"last"`` (the default with the
    paper template: the last fenced block or JSON value, repaired if broken) or ``"first"`` (the
    default with the official template: the authors' reading, their first fenced json block read
    strictly, :func:`~.protocol.answer_json`). Each question keeps the first valid score a reply
    gives it; a later reply's other or invalid value for it is not read. ``structured_output``
    (default False: the official code sends the plain template) also sends :func:`reply_schema`, so
    judges that enforce schemas answer with exactly the JSON the template asks for. Options of
    :func:`aggregate` are accepted and ignored.
    """
    step_options(options, _SCORE_OPTIONS, _SCORE_OPTIONS | _AGGREGATE_OPTIONS)
    max_reasks = options.get("max_reasks", 2)
    missing = options.get("missing", "fail")
    allowed = options.get("allowed_scores", FROM_CRITERIA)
    score_levels([], allowed)  # a wrong value is an error before anything is asked
    template = options.get("template", "paper")
    reply_json = options.get("reply_json", "first" if template == "official" else "last")
    decimals = options.get("round_scores")
    wanted = options.get("subcategories")
    wanted = None if wanted is None else set(wanted)
    dimensions = options.get("dimensions", "release")
    one_of("missing", missing, _MISSING)
    one_of("dimensions", dimensions, _DIMENSION_SOURCES)
    one_of("template", template, TEMPLATE_KINDS)
    one_of("reply_json", reply_json, REPLY_JSON)
    paired(rows, images)

    results, asks, todo = [], [], []
    for i, (row, image) in enumerate(zip(rows, images)):
        _check_row(row, i)
        result = _blank_result(bench, row, image)
        results.append(result)
        if dimensions == "inferred":
            _infer_dimensions(result)
        questions = row["questions"] or []
        if wanted is not None and f"{row['category']}/{row['subcategory']}" not in wanted:
            result.context["excluded"] = True
            result.failure = "not evaluated: its subcategory is not among the ones asked for (subcategories=...)"
            continue
        why = unscorable_questions(questions)
        if why:
            result.context["unscorable"] = True
            result.failure = f"unscorable: {why}"
            continue
        todo.append((result, row, image, i))
    # each distinct image read once, however many rows share it; an unreadable one fails alone
    distinct: dict[Any, tuple[int, Any]] = {}  # key -> the first place it has in images, the image
    for _, _, image, i in todo:
        distinct.setdefault(_image_key(image), (i, image))
    firsts = list(distinct.values())
    loaded = dict(zip(distinct, load_images([image for _, image in firsts], places=[i for i, _ in firsts])))
    for result, row, image, _ in todo:
        img = loaded[_image_key(image)]
        if isinstance(img, ImageError):
            result.failure = f"image: {img}"
            continue
        if result.image is None:
            result.image = img.source
        keys = question_keys(row["questions"])
        levels = score_levels(row["questions"], allowed)
        if allowed == FROM_CRITERIA:
            unread = [k for k, q in zip(keys, row["questions"]) if not question_levels(q)[1]]
            if unread:
                result.context["default_levels"] = unread  # criteria whose levels cannot be read: 0, 0.5, 1
        text = render_request(row, keys, allowed, template)
        schema = reply_schema(keys, levels) if options.get("structured_output") else None
        parts = (text, img) if template == "official" else (img, text)  # the authors send the text first
        request = ChatRequest.simple(*parts, metadata={"id": result.id}, json_schema=schema)
        asks.append((result, keys, request, ScoreCollector(keys, levels, reply_json)))

    parsed = ask_structured(judge, [a[2] for a in asks], [a[3] for a in asks], max_reasks=max_reasks,
                            reask_prompt=REASK_PROMPT, progress=progress)
    for (result, keys, _, collector), outcome in zip(asks, parsed):
        result.replies = outcome.texts
        result.reasks = outcome.reasks
        for q, k in zip(result.questions, keys):
            q.id, q.score = k, collector.scores.get(k)
        unanswered = collector.unanswered
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


def _check_row(row: Any, i: int) -> None:
    """Rows that are not R2I-Bench rows are the caller's mistake: a clear error. A row's own
    irregularities (a weight that is not a number) make it unscorable instead (:func:`unscorable_questions`)."""
    if not isinstance(row, dict):
        raise ValueError(f"rows[{i}] is a {type(row).__name__}, not an R2I-Bench row (a dict)")
    missing = [f for f in _ROW_FIELDS if f not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it an R2I-Bench row?")
    for j, q in enumerate(row["questions"] or []):
        lacking = [f for f in _QUESTION_FIELDS if not isinstance(q, dict) or q.get(f) is None]
        if lacking:
            raise ValueError(f"rows[{i}] ({row['id']}): question {j} lacks {lacking}")


def _usable_weight(w: Any) -> bool:
    return not isinstance(w, bool) and isinstance(w, (int, float)) and math.isfinite(w) and w >= 0


def unscorable_questions(questions: Sequence[dict[str, Any]]) -> str | None:
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


def _blank_result(bench: Benchmark, row: dict[str, Any], image: Any) -> ImageResult:
    source = given_path(image)
    questions = [QuestionResult(question=q["question"], score=None, criterion=q["criterion"],
                                weight=float(q["weight"]) if _usable_weight(q.get("weight")) else None,
                                id=str(q.get("id") or ""), group=q.get("dimension"))
                 for q in row["questions"] or []]
    context = {"subcategory": row["subcategory"], "source_id": row.get("source_id"),
               "reference_caption": row.get("reference_caption")}
    return ImageResult(id=bench.row_id(row), prompt=bench.prompt(row), score=None, config=row["category"],
                       questions=questions, image=source, context=context)


def _infer_dimensions(result: ImageResult) -> None:
    """Label each question the release leaves without a dimension by its weight (:func:`infer_dimension`)."""
    outside = []
    for n, q in enumerate(result.questions, 1):
        if q.group is None:
            q.group = infer_dimension(q.weight)
            if q.group is None:
                outside.append(q.id or str(n))
    result.context["dimensions"] = "inferred"
    result.context["outside_ranges"] = outside


def _dimension_scores(questions: Sequence[QuestionResult]) -> dict[str, float | None]:
    """Weighted mean per dimension (Table 13: TA, RA, IQ), where questions carry one."""
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for q in questions:
        if q.group:
            groups[q.group].append(q)
    return {g: _weighted(qs) for g, qs in groups.items()}


def _weighted(questions: Sequence[QuestionResult]) -> float | None:
    scored = [q for q in questions if q.score is not None]
    total = sum(q.weight for q in scored)
    # a weighted mean of scores in [0, 1]; clamped so that rounding never leaves the range
    return min(1.0, max(0.0, sum(q.weight * q.score for q in scored) / total)) if total > 0 else None


# -- over images: Table 3, Table 14, Table 13 -------------------------------------------------------


def aggregate(results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
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
    step_options(options, _AGGREGATE_OPTIONS, _SCORE_OPTIONS | _AGGREGATE_OPTIONS)
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
    categories = {c: stat([r.score for r in by_cat[c]]) for c in ordered(by_cat)}
    means = [s["mean"] for s in categories.values() if s["n"]]
    dims = sorted({d for r in scored for d in r.subscores})
    covered = subcategory_coverage(results)
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
        # Table 13's dimensions, inferred from the weights where the release gives no label
        "dimensions_inferred": any(r.context.get("dimensions") == "inferred" for r in scored),
        "questions_outside_ranges": sum(len(r.context.get("outside_ranges") or ()) for r in scored),
        # per category, the paper's subcategories and those scored (an official run's Commonsense: 3 of 7)
        "coverage": {c: v for c, v in covered.items() if v["missing"]},
        "scale": scale,
    }


#: the subcategories the official release has no prompt for (formats.md): the authors' code looks for them
#: in data/prompts/mathematical/mathematical_mathematical_function.csv, which it lacks
_NO_PROMPTS_RELEASED = ("mathematical/mathematical_function",)


def subcategory_coverage(results: Sequence[ImageResult]) -> dict[str, dict[str, Any]]:
    """Per Table 3 column (Commonsense...): the paper's subcategories of the category (its Tables 6 to 12:
    the release's folder and file names, :data:`~.release.SUBCATEGORIES`), those with a scored instance,
    and why each other has none: ``missing`` maps it to ``(why, release)``, ``release`` True where the
    official release lacks it (no prompts, no questions) and False where the run left it out (the
    ``official`` preset's 28 subcategories, the run's configs or limit, every image failed)."""
    by_sub: dict[str, list[ImageResult]] = defaultdict(list)
    for r in results:
        by_sub[f"{r.config}/{r.context.get('subcategory')}"].append(r)
    out = {}
    for category, subs in SUBCATEGORIES.items():
        scored, missing = [], {}
        for sub in subs:
            rs = by_sub.get(f"{category}/{sub}", [])
            if any(r.score is not None for r in rs):
                scored.append(sub)
            elif not rs:
                missing[sub] = (("no prompts in the release", True) if f"{category}/{sub}" in _NO_PROMPTS_RELEASED
                                else ("not among the run's prompts", False))
            elif all(r.context.get("excluded") for r in rs):
                missing[sub] = ("left out by the preset (the authors' script evaluates 28 subcategories)", False)
            elif all(r.context.get("unscorable") for r in rs):
                missing[sub] = ("no questions in the release", True)
            else:
                missing[sub] = ("every image failed", False)
        out[CATEGORY_TITLES.get(category, category)] = {"paper": list(subs), "scored": scored,
                                                        "missing": {k: list(v) for k, v in missing.items()}}
    return out


def coverage_note(coverage: dict[str, dict[str, Any]]) -> str:
    """Each category averaged over fewer subcategories than the paper's because the release or the preset leaves
    some out, said in one sentence (``Commonsense over 3 of the paper's 7 subcategories (affordance...: left out
    by the preset...)``)."""
    said = []
    for title, c in coverage.items():
        # a category the run scored, where the release or the preset leaves out part of it (prompts only not
        # among the run's, its configs or limit, are said by its count of images)
        if not c["scored"] or all(why.startswith("not among") for why, _ in c["missing"].values()):
            continue
        why: dict[str, list[str]] = defaultdict(list)
        for sub, (reason, _) in c["missing"].items():
            why[reason].append(sub)
        said.append(f"{title} over {len(c['scored'])} of the paper's {len(c['paper'])} subcategories ("
                    + "; ".join(f"{len(subs)} {reason}" if reason.startswith("not among") else
                                f"{', '.join(subs)}: {reason}" for reason, subs in why.items()) + ")")
    if said:
        said[-1] += (" (with the paper's rows, each category's table by subcategory gives the paper's figure over "
                     "the same subcategories)")
    return "; ".join(said)


def paper_tables(aggregate: dict[str, Any], label: str) -> list[PaperTable]:
    """Table 3 (Overall, then the categories in the paper's order) with Table 14's 95% intervals,
    then one table per category over its subcategories (appendix B.1). A category scored over fewer
    subcategories than the paper averages (the official preset's Commonsense, the release's Mathematical)
    is said in the note."""
    scale = aggregate.get("scale", 100.0)
    cells = {"Overall": aggregate["overall"],
             **{CATEGORY_TITLES.get(c, c): s for c, s in aggregate["categories"].items()}}
    covered = coverage_note({t: c for t, c in (aggregate.get("coverage") or {}).items() if t in cells})
    tables = [PaperTable.one_row("R2I-Bench Table 3: R2I-Score", label, cells,
                                 note=f"0-{scale:g}; overall is the micro average over instances"
                                      + (f"; {label}: {covered}" if covered else ""))]
    dims = aggregate.get("dimensions") or {}
    if dims:
        inferred = aggregate.get("dimensions_inferred")
        cells = {title: dims[d] for d, title in _TABLE13.items() if d in dims}
        note = f"0-{scale:g}; each image's weighted mean over its questions of the dimension"
        if inferred:
            note += (" (dimensions INFERRED from the weights, as the release labels none: alignment 4-6, "
                     f"reasoning 7-10, quality 1-3; {aggregate.get('questions_outside_ranges', 0)} question(s) "
                     "in no range left out)")
        tables.append(PaperTable.one_row("R2I-Bench Table 13: dimensions" + (" (inferred)" if inferred else ""),
                                         label, cells, note=note))
    for category in aggregate["categories"]:
        subs = {name.split("/", 1)[1]: s for name, s in aggregate["subcategories"].items()
                if name.split("/", 1)[0] == category}
        if subs:  # the category's figure first, as the paper's Tables 16 to 20 print it
            tables.append(PaperTable.one_row(f"R2I-Bench: {CATEGORY_TITLES.get(category, category)} by subcategory",
                                             label, {"Overall": aggregate["categories"][category], **subs},
                                             note=f"0-{scale:g}"))
    return tables
