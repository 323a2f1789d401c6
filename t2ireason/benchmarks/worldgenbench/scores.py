"""WorldGenBench's scores: an image's Knowledge Checklist Score (satisfied / total), and the paper's
Tables 2 and 3 (the mean over images x 100 per continent and per discipline, per domain and overall).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from typing import Any

from ...images import ImageError, JudgeImage, load_images
from ...parsing import ask_structured
from ...results import ImageResult, PaperTable, QuestionResult
from ...stats import summarize
from ..base import given_path, paired, sampling_option, step_options
from .protocol import checklist_request, parse_checklist_reply, reply_schema
from .release import CONTINENTS, DISCIPLINES, normalize_checklist

__all__ = ["SCORE_OPTIONS", "AGGREGATE_OPTIONS", "score", "aggregate", "paper_tables"]

#: the options score() and aggregate() take (the metric passes both the same preset options)
SCORE_OPTIONS = {"max_reasks", "sampling", "structured_output"}
AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}


def score(bench: Any, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
          progress: bool | str = False, **options: Any) -> list[ImageResult]:
    """One ImageResult per image: score = satisfied items / items (None when the judge failed).

    Options: ``max_reasks`` (default 2) follow-ups when a reply is not exactly one 0/1 per item;
    ``sampling`` (a :class:`Sampling` or a dict of its fields) overrides the judge's defaults;
    ``structured_output`` (default False: the paper's judge saw the plain prompt) also sends
    :func:`reply_schema`, for judges that enforce schemas.
    """
    opts = step_options(options, SCORE_OPTIONS, SCORE_OPTIONS | AGGREGATE_OPTIONS, "WorldGenBench")
    paired(rows, images)
    sampling = sampling_option(opts.get("sampling"))
    results, requests, parsers, asked = [], [], [], []
    loaded = load_images(images)  # an image that cannot be read is that image's failure, not the batch's
    for row, image, given in zip(rows, loaded, images):
        checklist = normalize_checklist(row.get("checklist"), problems=[])
        results.append(ImageResult(
            id=bench.row_id(row), prompt=row["prompt"], score=None, config=row["domain"],
            image=image.source if isinstance(image, JudgeImage) else given_path(given),
            context={k: row.get(k) for k in ("continent", "country", "discipline")},
            questions=[QuestionResult(question=c["item"], criterion=c["explanation"], score=None,
                                      group="checklist", id=str(n)) for n, c in enumerate(checklist, 1)]))
        if not checklist:
            results[-1].failure = "the row has no checklist items"
            continue
        if isinstance(image, ImageError):
            results[-1].failure = f"image: {image}"
            continue
        requests.append(checklist_request(checklist, image, sampling,
                                          reply_schema(len(checklist)) if opts.get("structured_output") else None))
        parsers.append(partial(parse_checklist_reply, n=len(checklist)))
        asked.append(results[-1])
    parsed = ask_structured(judge, requests, parsers, max_reasks=opts.get("max_reasks", 2), progress=progress)
    for result, p in zip(asked, parsed):
        result.replies, result.reasks = p.texts, p.reasks
        if not p.ok:
            result.failure = p.error
            result.retryable = p.transient  # the judge could not answer: --retry-failed redoes it
            continue
        for q, v in zip(result.questions, p.value):
            q.score = float(v)
        satisfied = sum(p.value)
        result.score = satisfied / len(p.value)
        result.subscores = {"satisfied": float(satisfied), "items": float(len(p.value))}
    return results


def aggregate(results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
    """The paper's Tables 2 and 3: mean Knowledge Checklist Score x 100 per continent, per
    discipline, per domain and overall, each with a bootstrap CI (``confidence``, ``n_resamples``,
    ``seed``). Failed images are left out of the means and counted under ``failed``."""
    opts = step_options(options, AGGREGATE_OPTIONS, SCORE_OPTIONS | AGGREGATE_OPTIONS, "WorldGenBench")
    stat = partial(summarize, scale=100.0, **opts)
    groups: dict[str, list[float | None]] = defaultdict(list)
    for r in results:
        domain = r.config or "unknown"
        groups["overall"].append(r.score)
        groups[domain].append(r.score)
        sub = r.context.get("continent") if domain == "humanities" else r.context.get("discipline")
        if sub:
            groups[f"{domain}/{sub}"].append(r.score)
    summary = {k: stat(v) for k, v in groups.items()}

    def mean(key: str) -> float | None:
        m = summary.get(key, {}).get("mean")
        return None if m is None or math.isnan(m) else m

    def columns(domain: str, codes: Sequence[str]) -> dict[str, float | None]:
        extra = sorted({k.split("/", 1)[1] for k in summary if k.startswith(f"{domain}/")} - set(codes))
        return {**{c: mean(f"{domain}/{c}") for c in [*codes, *extra]}, "Avg.": mean(domain)}

    table = {"humanities": columns("humanities", list(CONTINENTS)),
             "nature": columns("nature", list(DISCIPLINES))}
    return {
        "knowledge_checklist_score": mean("overall"),
        "humanities": mean("humanities"),
        "nature": mean("nature"),
        "by_continent": {k: v for k, v in table["humanities"].items() if k != "Avg."},
        "by_discipline": {k: v for k, v in table["nature"].items() if k != "Avg."},
        "table": table,
        "summary": summary,
    }


def paper_tables(aggregate: dict[str, Any], label: str) -> list[PaperTable]:
    """Table 2 (humanities, by continent) and Table 3 (nature, by discipline), with 95% intervals;
    a domain with no image is left out, one whose every image failed shows empty cells."""
    tables = []
    for domain, number in (("humanities", "Table 2"), ("nature", "Table 3")):
        if aggregate.get(domain) is None and domain not in aggregate["summary"]:
            continue
        cells = {code: aggregate["summary"].get(f"{domain}/{code}", value)
                 for code, value in aggregate["table"][domain].items() if code != "Avg."}
        cells["Avg."] = aggregate["summary"].get(domain)
        tables.append(PaperTable.one_row(f"WorldGenBench {number}: knowledge checklist score, {domain}",
                                         label, cells, note="0-100", decimals=2))
    return tables
