"""PRISM-Bench's scores: one image's two judgements, their aggregation, the paper's Tables 1 and 2.

Each axis is mapped to 0-100 (x 10). Under the ``paper`` protocol a track's Avg. is the mean of its
alignment mean and aesthetic mean, and the final score the mean over the tracks (seed 004 section 3.2);
under ``official`` (the authors' ``summarize_results``) a track's Combined is the mean of one pooled
list of its alignment and aesthetic scores, the final figure the mean of every score of both axes, an
axis with no counted score 0.0; where their summary would raise, each reply is recorded and the table
still made.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial
from typing import Any

from ...images import ImageError, load_images
from ...parsing import ask_structured, reject_replies
from ...results import ImageResult, PaperTable, QuestionResult
from ...stats import summarize
from ..base import given_path, one_of, paired, sampling_option, step_options
from .protocol import (
    AXES,
    FROM_TEMPLATE,
    GENERAL_TRACK,
    IMAGE_BYTES,
    IMAGE_PREPARATIONS,
    REPLY_SCHEMA,
    Judgement,
    after_convert_rgb,
    judge_requests,
    paper_judgement,
    parse_judgement,
    pil_reencoded,
    protocol_name,
    reply_judgement,
)
from .release import TRACKS, config_name

__all__ = ["SCORE_OPTIONS", "AGGREGATE_OPTIONS", "score", "aggregate", "paper_tables"]

SCORE_OPTIONS = {"protocol", "max_reasks", "sampling", "system_prompt", "structured_output", "image_first",
                 "image_preparation", "image_bytes"}
AGGREGATE_OPTIONS = {"protocol", "confidence", "n_resamples", "seed"}


def score(bench: Any, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
          progress: bool | str = False, **options: Any) -> list[ImageResult]:
    """One ImageResult per image, both judge requests of every image sent in one batch.

    ``score`` is the mean of alignment and aesthetic on 0-1, the scale of every metric's per-image
    reward (None unless both were counted); ``subscores`` holds each axis on the tables' 0-100 (None
    when not counted), ``questions`` each raw
    judgement with its justification, ``context["outcome"]`` what became of each axis'
    reply (``counted``; ``failed``, ``judge_error``, ``image_error``; under the official
    protocol ``unparsable``, ``no_number``, ``not_finite``, ``summary_raises``, ``unparsed_no_demjson3``, ``cut_off``). An
    image that cannot be read is that image's failure; an image whose request failed at the
    judge for a transient cause (``Reply.transient``) is ``retryable``.

    Options: ``protocol`` (``"paper"``, default, or ``"official"``), ``system_prompt`` (default:
    the template's, "You are a helpful assistant."; None: no system message; a string: that),
    ``image_first`` (default False: the text, then the image; True as eval_qwen25.py),
    ``sampling`` (a Sampling or a dict, overriding the judge's defaults), ``max_reasks``
    (paper protocol, default 2), ``structured_output`` (default False, as the authors send no
    schema: also send :data:`REPLY_SCHEMA`), ``image_preparation`` (None, default: each image as
    it is; ``"qwen_vl_utils"``: as eval_qwen25.py feeds Qwen2.5-VL, made RGB by PIL's
    ``convert`` and then what qwen_vl_utils' ``fetch_image`` makes of it,
    :func:`~t2ireason.images.qwen_vl_utils_image`), ``image_bytes`` (``"file"``, default: a
    file's own bytes; ``"pil"``: the file opened and saved again by PIL in its own format, the
    bytes eval_gpt41.py sends, :meth:`~t2ireason.images.JudgeImage.pil_reencoded`).
    """
    opts = step_options(options, SCORE_OPTIONS, SCORE_OPTIONS | AGGREGATE_OPTIONS, "PRISM-Bench")
    protocol = protocol_name(opts.get("protocol"))
    if protocol == "official" and opts.get("max_reasks"):
        raise ValueError("the official protocol never re-asks (the authors' code does not); "
                         "max_reasks applies to protocol 'paper'")
    paired(rows, images)
    sampling = sampling_option(opts.get("sampling"))
    preparation = one_of("image_preparation", opts.get("image_preparation"), IMAGE_PREPARATIONS)
    image_bytes = one_of("image_bytes", opts.get("image_bytes", "file"), IMAGE_BYTES)
    prepare = after_convert_rgb if preparation == "qwen_vl_utils" else None
    request_options = {"protocol": protocol, "image_first": bool(opts.get("image_first", False)),
                       "system_prompt": opts.get("system_prompt", FROM_TEMPLATE), "sampling": sampling,
                       "json_schema": REPLY_SCHEMA if opts.get("structured_output") else None}
    results, asked, requests = [], [], []
    loaded = load_images(images, prepare=prepare)
    if image_bytes == "pil":
        loaded = pil_reencoded(loaded)
    for row, given, image in zip(rows, images, loaded):
        track = row.get("track")
        if track not in TRACKS and track != GENERAL_TRACK:
            raise ValueError(f"row {row.get('id')!r} has track {track!r}; known: {', '.join(TRACKS)} "
                             f"(and {GENERAL_TRACK}, the project's own template for a prompt of no track)")
        result = ImageResult(
            id=bench.row_id(row), prompt=row["prompt"], score=None, config=config_name(track, row["language"]),
            image=image.source if not isinstance(image, ImageError) else given_path(given),
            context={"track": track, "language": row["language"], "index": row.get("index"),
                     "subset": row.get("subset"), "protocol": protocol})
        results.append(result)
        if isinstance(image, ImageError):  # this image's failure, not the batch's
            _record(result, [Judgement("image_error", detail=f"image: {image}") for _ in AXES])
            continue
        asked.append(result)
        requests += judge_requests(row["prompt"], track, image, **request_options)
    if protocol == "paper":
        parsed = ask_structured(judge, requests, parse_judgement, max_reasks=opts.get("max_reasks", 2),
                                progress=progress)
        judgements = [paper_judgement(p) for p in parsed]
    else:
        replies = judge.chat(requests, progress=progress) if requests else []
        judgements = [reply_judgement(r) for r in replies]
        unread = [i for i, j in enumerate(judgements) if _unread(j)]  # counted by the response cache
        reject_replies(judge, [requests[i] for i in unread], [replies[i] for i in unread])
    for i, result in enumerate(asked):
        _record(result, judgements[2 * i: 2 * i + 2])
    return results


def _unread(judgement: Judgement) -> bool:
    """A reply the authors' script skips (its judge answered, but nothing it can count): this evaluation's
    failure, counted by the response cache (which keeps it, as it keeps every reply). One read without demjson3
    is not counted: with it installed, the same reply may count."""
    return judgement.outcome not in ("counted", "judge_error", "image_error", "unparsed_no_demjson3")


def _record(result: ImageResult, judgements: Sequence[Judgement]) -> None:
    """Put an image's two judgements into its result."""
    failures, outcome = [], {}
    for axis, j in zip(AXES, judgements):
        result.replies += j.texts
        result.reasks += j.reasks
        result.questions.append(QuestionResult(question=axis, score=j.score, group=axis, id=axis,
                                               reasoning=j.justification))
        result.subscores[axis] = None if j.score is None else j.score * 10
        outcome[axis] = j.outcome
        if j.outcome != "counted":
            failures.append(j.detail if j.outcome == "image_error" else f"{axis}: {j.detail}")
    result.context["outcome"] = outcome
    result.retryable = any(j.transient for j in judgements)
    if failures:
        result.failure = "; ".join(dict.fromkeys(failures))
    else:
        # on 0-1 like every metric's per-image reward; the tables are computed from the 0-100 subscores
        result.score = (result.subscores["alignment"] + result.subscores["aesthetic"]) / 200


# -- aggregation -----------------------------------------------------------------------------------

def aggregate(results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
    """The paper's Table 1 (Table 2 for zh): per track Ali., Aes. and Avg. on 0-100, and Overall.

    Every cell holds both definitions: ``average`` (the paper's: the mean of the axis means) and
    ``combined`` (the authors' code: the mean of one pooled list of both axes' scores); the
    protocol decides which is the table's Avg. The final score ``prism_score`` is, under the paper
    protocol, the paper's (seed 004 section 3.2: "the average across all seven tracks",
    ``overall_track_mean``; the table's Overall is the mean over the tracks of each column,
    ``track_mean``), with the pooled figure beside it (``pooled_average``: the mean of the pooled
    alignment and pooled aesthetic; Pooled Avg. in :func:`paper_tables`); under the official protocol the authors'
    pooled Combined. Top-level ``alignment`` and ``aesthetic`` pool every image. Replies not counted are counted per cause (``outcomes``) and explained in
    ``notes``. ``by_language`` splits en from zh (separate tables, separate runs of the authors'
    script); the top level pools whatever languages were given.
    """
    opts = step_options(options, AGGREGATE_OPTIONS, SCORE_OPTIONS | AGGREGATE_OPTIONS, "PRISM-Bench")
    protocol = _protocol_of(results, opts.pop("protocol", None))
    out = _table(results, protocol, opts)
    out["by_language"] = {lang: _table([r for r in results if r.context.get("language") == lang], protocol, opts)
                          for lang in sorted({r.context.get("language") for r in results} - {None})}
    return out


def paper_tables(aggregate: dict[str, Any], label: str) -> list[PaperTable]:
    """Table 1 (English) and Table 2 (Chinese): per track and overall Ali., Aes. and Avg. on 0-100;
    under the paper protocol with 95% intervals for alignment and aesthetic."""
    tables = []
    for lang, agg in (aggregate.get("by_language") or {"": aggregate}).items():
        official = agg.get("protocol") == "official"
        cells: dict[str, Any] = {}
        for track, entry in [*agg["tracks"].items(), ("overall", None)]:
            name = TRACKS.get(track, "Overall")
            cell = agg["table"].get(name)
            if cell is None:
                continue
            summary = entry["summary"] if entry and not official else {}
            cells[f"{name} Ali."] = summary.get("alignment", cell["Ali."])
            cells[f"{name} Aes."] = summary.get("aesthetic", cell["Aes."])
            cells[f"{name} Avg."] = cell["Avg."]
        if not official and "Overall" in agg["table"]:  # the pooled figure beside the paper's final score
            cells["Pooled Avg."] = agg["pooled_average"]
        number = {"en": "Table 1", "zh": "Table 2 (PRISM-Bench-ZH)"}.get(lang, lang)
        note = ("0-100, as the authors' code computes it: Avg. is the mean of one pooled list of both axes' "
                "scores; overall pools every image; an axis with no counted score shows 0.0" if official
                else "0-100; Avg. is the mean of Ali. and Aes.; Overall is the mean over the tracks (the paper's "
                     "final score, section 3.2); Pooled Avg. pools every image instead")
        tables.append(PaperTable.one_row(f"PRISM-Bench {number}".strip(), label, cells, note=note))
    return tables


_NOTES = {
    "failed": "{n} {replies} never gave a JSON object with a score in [0, 10], after re-asks: counted in "
              "failed_replies, left out of the means",
    "judge_error": "{n} {requests} failed at the judge after its retries (the authors' script skips an image "
                   "after 3 tries): left out of the means",
    "image_error": "{n} {judgements} not asked: the image could not be read",
    "unparsable": "{n} {replies} that the authors' clean_and_parse_json cannot read (or reads as an empty or false "
                  "value): their code prints and skips "
                  "such replies; not counted here either",
    "no_number": "{n} {replies} whose \"score\" is missing or not an int or a float (a string \"8\" included): "
                 "the authors' summary skips such replies; so does this",
    "summary_raises": "{n} {replies} parsing to a value that is not an object (a bare number, a string holding "
                      "\"score\"...): the authors' summarize_results raises on such a reply and prints no table; "
                      "recorded here, not counted",
    "not_finite": "{n} {replies} whose \"score\" json reads as an infinity (1e400): refused as malformed, "
                  "not counted (every mean it entered would be infinite)",
    "unwritable": "{n} {replies} that demjson3 reads with a value json.dump cannot write (a Decimal, "
                  "undefined): the authors' script stops on such a reply, and skips it when started again; "
                  "not counted here",
    "cut_off": "{n} {replies} cut off at the judge's token limit (finish_reason \"length\"): not read, not "
               "counted (the authors' parser skips such a reply as unparsable, unless the cut leaves valid JSON)",
    "unparsed_no_demjson3": "{n} {replies} that json cannot read, not tried with demjson3 (not installed) as the "
                            "authors' parser would: pip install demjson3",
}


def _note(kind: str, n: int) -> str:
    def word(one: str, many: str) -> str:
        return one if n == 1 else many

    return _NOTES[kind].format(n=n, replies=word("reply", "replies"), requests=word("request", "requests"),
                               judgements=word("judgement", "judgements"))


def _mean(values: Sequence[float], empty: float | None) -> float | None:
    return sum(values) / len(values) if values else empty  # plain sum, as the authors' summary


def _table(results: Sequence[ImageResult], protocol: str, stat_opts: dict[str, Any]) -> dict[str, Any]:
    official = protocol == "official"
    empty = 0.0 if official else None  # the authors' summary prints 0.00 for an axis with nothing counted
    stat = partial(summarize, **stat_opts)
    values: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: {a: [] for a in AXES})
    outcomes: dict[str, dict[str, Counter]] = defaultdict(lambda: {a: Counter() for a in AXES})
    for r in results:
        recorded = r.context.get("outcome") or {}
        for axis in AXES:
            v = r.subscores.get(axis)
            kind = recorded.get(axis) or ("counted" if v is not None else "failed")
            for key in (r.context.get("track"), "overall"):
                values[key][axis].append(v)
                outcomes[key][axis][kind] += 1

    def cell(key: str) -> dict[str, Any]:
        counted = {a: [v for v in values[key][a] if v is not None] for a in AXES}
        ali, aes = (_mean(counted[a], empty) for a in AXES)
        n = {a: len(counted[a]) for a in AXES}
        return {"alignment": ali, "aesthetic": aes,
                "average": (ali + aes) / 2 if n["alignment"] and n["aesthetic"] else None,
                "combined": _mean(counted["alignment"] + counted["aesthetic"], empty),
                "n": len(values[key]["alignment"]), "counted": n,
                "failed": {a: len(values[key][a]) - n[a] for a in AXES},
                "outcomes": {a: dict(outcomes[key][a]) for a in AXES},
                # intervals over the finite counted scores (a score the authors count may be inf or NaN)
                "summary": {a: stat([v if v is not None and math.isfinite(v) else None for v in values[key][a]])
                            for a in AXES}}

    headline = "combined" if official else "average"
    tracks = {t: cell(t) for t in TRACKS if t in values}
    overall = cell("overall") if results else None

    def over_tracks(key: str) -> float | None:  # seed 004 section 3.2: "the average across all seven tracks"
        scores = [c[key] for c in tracks.values() if c[key] is not None]
        return sum(scores) / len(scores) if scores else None

    track_mean = {"alignment": over_tracks("alignment"), "aesthetic": over_tracks("aesthetic"),
                  "average": over_tracks("average")}
    table = {TRACKS[t]: {"Ali.": c["alignment"], "Aes.": c["aesthetic"], "Avg.": c[headline]} for t, c in tracks.items()}
    if overall and official:  # the authors' summary pools every score
        table["Overall"] = {"Ali.": overall["alignment"], "Aes.": overall["aesthetic"], "Avg.": overall[headline]}
    elif overall:  # the paper's Overall: the mean over the tracks, each axis and the average
        table["Overall"] = {"Ali.": track_mean["alignment"], "Aes.": track_mean["aesthetic"],
                            "Avg.": track_mean["average"]}
    kinds = Counter()
    for axis in AXES:
        kinds.update(overall["outcomes"][axis] if overall else {})
    notes = [_note(k, n) for k, n in sorted(kinds.items()) if k in _NOTES and n]
    if official and overall and any(c[a] is not None and not c["counted"][a]
                                    for c in [*tracks.values(), overall] for a in AXES):
        notes.append("an axis with no counted score shows 0.0, as the authors' summary prints 0.00")
    return {
        "protocol": protocol,
        # the paper's final score is the mean over the tracks; the authors' code's the pooled Combined
        "prism_score": (overall[headline] if official else track_mean["average"]) if overall else None,
        "alignment": overall["alignment"] if overall else None,
        "aesthetic": overall["aesthetic"] if overall else None,
        "average": overall["average"] if overall else None,
        "pooled_average": overall["average"] if overall else None,
        "combined": overall["combined"] if overall else None,
        "overall_track_mean": track_mean["average"],
        "track_mean": track_mean,
        "tracks": tracks,
        "table": table,
        "failed_replies": overall["failed"] if overall else {a: 0 for a in AXES},
        "outcomes": overall["outcomes"] if overall else {a: {} for a in AXES},
        "notes": notes,
    }


def _protocol_of(results: Sequence[ImageResult], asked: str | None) -> str:
    """The protocol the results were scored under (recorded in each), checked against the one asked."""
    recorded = {r.context.get("protocol") for r in results} - {None}
    if len(recorded) > 1:
        raise ValueError(f"these results were scored under different protocols ({', '.join(sorted(recorded))}): "
                         "aggregate each separately")
    if asked is not None and recorded and protocol_name(asked) not in recorded:
        raise ValueError(f"these results were scored under protocol {recorded.pop()!r}, not {asked!r}")
    return protocol_name(asked) if asked is not None else (recorded.pop() if recorded else "paper")

