"""Stages 2 to 8 of the FLUX-Reason-6M curation pipeline (seed 004, sections 2.2 to 2.5, appendix B).

Each is a function ``stage(records, ctx)`` over the kept records of one shard: it sends its questions for
the whole shard in one batch, then annotates, drops (:func:`~.work.drop`) or notes (:func:`~.work.note`)
each record, so every record says which stage dropped or labelled it and why.
"""

from __future__ import annotations

import json
from typing import Any

from ..benchmarks.flux_reason import CHARACTERISTICS, DISPLAY_NAMES
from ..generation import image_seed, is_readable_image, save_image_atomic
from ..parsing import ReplyParseError, as_score, extract_json
from ..prompts import render
from .asking import (
    BOOLEAN,
    SCORE,
    STRING,
    STRINGS,
    TEMPLATES,
    VERDICT,
    ask,
    fail,
    field,
    image_of,
    request,
    schema,
)
from .work import Context, EngineError, drop, note

__all__ = ["synthesis_stage", "quality_stage", "scoring_stage", "captions_stage", "gcot_stage", "original_stage",
           "translate_stage", "ENGINE_SEED_NAME"]

#: mixed into every image's seed (generation.image_seed), as a benchmark name is for benchmark images
ENGINE_SEED_NAME = "flux-reason-engine"


# ---------------------------------------------------------------------------------------------- 2. synthesis

def synthesis_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Draw every prompt with the diffusion model: one seed per record id, images written atomically,
    finished ones (from an interrupted run) kept."""
    for r in records:
        r["seed"] = image_seed(ENGINE_SEED_NAME, r["id"], 0, ctx.config.seed)
        r["image"] = f"images/{ctx.shard}/{r['id']}.png"
    todo = [r for r in records if not is_readable_image(ctx.work.root / r["image"])]
    if todo and ctx.drawer is None:
        raise EngineError("the synthesis stage needs a diffusion model (--model)")
    batch = getattr(getattr(ctx.drawer, "config", None), "batch_size", 1)
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        for r, image in zip(chunk, ctx.drawer([r["prompt"] for r in chunk], [r["seed"] for r in chunk])):
            save_image_atomic(image, ctx.work.root / r["image"])


# ---------------------------------------------------------------------------------------------- 3. quality

QUALITY_SCHEMA = schema("quality", blur=BOOLEAN, artifacts=BOOLEAN, structural_errors=BOOLEAN, verdict=VERDICT,
                        reason=STRING)
VERDICT_SCHEMA = schema("typography", verdict=VERDICT, reason=STRING)


def _parse_verdict(text: str) -> dict[str, Any]:
    obj = extract_json(text, expect=dict)
    verdict = field(obj, "verdict", str).lower()
    if verdict not in ("accept", "reject"):
        raise ReplyParseError(f'"verdict" must be "accept" or "reject", got {verdict!r}')
    return {"verdict": verdict, "reason": obj.get("reason") if isinstance(obj.get("reason"), str) else ""}


def _parse_quality(text: str) -> dict[str, Any]:
    value = _parse_verdict(text)
    obj = extract_json(text, expect=dict)
    value["flaws"] = [k for k in ("blur", "artifacts", "structural_errors") if field(obj, k, bool)]
    return value


def quality_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Foundational quality filter (section 2.3, appendix B.2): blur, artifacts, structural errors. With
    ``quality_filter="record"`` a rejected image is kept, its verdict noted as ``rejected``."""
    requests = [request("quality", r, "quality", image_of(r, ctx), json_schema=QUALITY_SCHEMA) for r in records]
    for r, parsed in zip(records, ask(ctx.judge, requests, _parse_quality, ctx)):
        if not parsed.ok:
            fail(r, "quality", parsed, dropping=True)
            continue
        v = parsed.value
        detail = json.dumps({"flaws": v["flaws"], "reason": v["reason"]}, ensure_ascii=False)
        if v["verdict"] == "reject" and ctx.config.quality_filter == "record":
            note(r, "quality", "rejected", detail)
        elif v["verdict"] == "reject":
            drop(r, "quality", detail)
        else:
            note(r, "quality", "passed", detail)


# ---------------------------------------------------------------------------------------------- 4. scoring

SCORES_SCHEMA = schema("relevance", **dict.fromkeys(CHARACTERISTICS, SCORE), justification=STRING)


def _parse_scores(text: str) -> dict[str, float]:
    obj = extract_json(text, expect=dict)
    return {c: as_score(obj.get(c), lo=1, hi=10, name=c) for c in CHARACTERISTICS}


def scoring_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Relevance 1 to 10 for each characteristic, a label per threshold reached (section 2.3); then the
    typographic filter on the images labelled Text rendering (appendix B.3). Unlabelled images are dropped."""
    thresholds = ctx.config.thresholds
    images = {r["id"]: image_of(r, ctx) for r in records}
    requests = [request("relevance", r, "scoring", images[r["id"]], json_schema=SCORES_SCHEMA, prompt=r["prompt"])
                for r in records]
    for r, parsed in zip(records, ask(ctx.judge, requests, _parse_scores, ctx)):
        if not parsed.ok:
            fail(r, "scoring", parsed, dropping=True)
            continue
        r["characteristic_scores"] = parsed.value
        r["characteristics"] = [c for c in CHARACTERISTICS if parsed.value[c] >= thresholds[c]]
        scores = ", ".join(f"{c} {parsed.value[c]:g}" for c in CHARACTERISTICS)
        if r["characteristics"]:
            labels = ", ".join(f"{c} ({parsed.value[c]:g} >= {thresholds[c]:g})" for c in r["characteristics"])
            note(r, "scoring", "labelled", f"{labels}; scores: {scores}")
        else:
            drop(r, "scoring", f"no characteristic reaches its threshold; scores: {scores}")

    typed = [r for r in records if r["dropped_by"] is None and "text_rendering" in r["characteristics"]]
    requests = [request("typography", r, "typography", images[r["id"]], json_schema=VERDICT_SCHEMA,
                        prompt=r["prompt"]) for r in typed]
    for r, parsed in zip(typed, ask(ctx.judge, requests, _parse_verdict, ctx)):
        if not parsed.ok:
            fail(r, "scoring", parsed, dropping=True, what="typographic filter")
        elif parsed.value["verdict"] == "reject":
            drop(r, "scoring", f"typographic filter: {parsed.value['reason']}")
        else:
            note(r, "scoring", "passed", f"typographic filter: {parsed.value['reason']}")


# ---------------------------------------------------------------------------------------------- 5. captions

CAPTION_SCHEMA = schema("caption", caption=STRING)
TEXT_CAPTION_SCHEMA = schema("text_caption", caption=STRING, texts=STRINGS)


def _parse_caption(text: str) -> dict[str, Any]:
    return {"caption": field(extract_json(text, expect=dict), "caption", str)}


def _parse_text_caption(text: str) -> dict[str, Any]:
    obj = extract_json(text, expect=dict)
    caption, texts = field(obj, "caption", str), [str(t) for t in field(obj, "texts", list)]
    missing = [t for t in texts if t not in caption]
    if not texts or missing:
        raise ReplyParseError(f'quote every text of the image in the caption and list it in "texts", exactly as '
                              f"written{f'; not in the caption: {missing}' if missing else ''}")
    return {"caption": caption, "texts": texts}


def captions_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """A category-specific dense caption for each assigned label (section 2.4)."""
    pairs = [(r, c) for r in records for c in r["characteristics"]]
    images = {r["id"]: image_of(r, ctx) for r in records}
    text = "text_rendering"
    requests = [request("caption", r, "captions", images[r["id"]], extra={"characteristic": c},
                        json_schema=TEXT_CAPTION_SCHEMA if c == text else CAPTION_SCHEMA,
                        characteristic=c, display_name=DISPLAY_NAMES[c], prompt=r["prompt"]) for r, c in pairs]
    parsers = [_parse_text_caption if c == text else _parse_caption for _, c in pairs]
    for (r, c), parsed in zip(pairs, ask(ctx.judge, requests, parsers, ctx)):
        if not parsed.ok:
            fail(r, "captions", parsed, dropping=False, what=f"{c} caption")
            continue
        r["captions"][c] = parsed.value["caption"]
        r["text_strings"] = parsed.value.get("texts", r["text_strings"])


# ---------------------------------------------------------------------------------------------- 6. GCoT

GCOT_SCHEMA = schema("gcot", gcot=STRING)
CHECK_SCHEMA = schema("gcot_check", entity_names_agree=BOOLEAN, text_strings_agree=BOOLEAN,
                      spatial_relations_agree=BOOLEAN, issues=STRINGS)
_CHECKS = ("entity_names", "text_strings", "spatial_relations")


def _parse_gcot(text: str) -> str:
    return field(extract_json(text, expect=dict), "gcot", str)


def _parse_check(text: str) -> list[str]:
    """The disagreements found (empty: the plan agrees with the captions on all three points)."""
    obj = extract_json(text, expect=dict)
    failed = [k for k in _CHECKS if not field(obj, f"{k}_agree", bool)]
    if not failed:
        return []
    issues = obj.get("issues") if isinstance(obj.get("issues"), list) else []
    return [str(i).strip() for i in issues if str(i).strip()] or [f"{k.replace('_', ' ')} disagree" for k in failed]


def _captions_of(r: dict[str, Any]) -> list[tuple[str, str]]:
    return [(DISPLAY_NAMES[c], r["captions"][c]) for c in CHARACTERISTICS if r["captions"][c]]


def gcot_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """GCoT from the image and all its captions (section 2.4), checked against the captions (appendix B.5):
    the exact text strings by string match, entity names and spatial relations (and texts) by the text
    model. A plan that disagrees is revised in the same conversation, up to ``gcot_attempts`` plans in
    all; one that never agrees is not kept (``rejected``, with the disagreements)."""
    todo = [r for r in records if _captions_of(r)]
    for r in records:
        if not _captions_of(r):
            note(r, "gcot", "skipped", "no category caption to build a GCoT from")
    conversations = {r["id"]: request("gcot", r, "gcot", image_of(r, ctx), json_schema=GCOT_SCHEMA,
                                      captions=_captions_of(r), texts=r["text_strings"]) for r in todo}
    for attempt in range(1, ctx.config.gcot_attempts + 1):
        plans = ask(ctx.judge, [conversations[r["id"]] for r in todo], _parse_gcot, ctx)
        drafted = []
        for r, parsed in zip(todo, plans):
            if parsed.ok:
                drafted.append((r, parsed))
            else:
                fail(r, "gcot", parsed, dropping=False, what=f"GCoT, attempt {attempt}")
        checks = ask(ctx.llm, [request("gcot_check", r, "gcot_check", json_schema=CHECK_SCHEMA,
                                       captions=_captions_of(r), gcot=p.value) for r, p in drafted], _parse_check, ctx)
        todo = []
        for (r, plan), check in zip(drafted, checks):
            if not check.ok:
                fail(r, "gcot", check, dropping=False, what=f"GCoT check, attempt {attempt}")
                continue
            issues = [f'the text "{t}" is not quoted exactly as written' for t in r["text_strings"]
                      if t not in plan.value] + check.value
            if not issues:
                r["gcot"] = plan.value
                note(r, "gcot", "passed", f"agrees with the captions (attempt {attempt})")
            elif attempt < ctx.config.gcot_attempts:
                note(r, "gcot", "revised", json.dumps({"attempt": attempt, "issues": issues}, ensure_ascii=False))
                conversations[r["id"]] = conversations[r["id"]].then(
                    plan.replies[-1].text, render(TEMPLATES, "gcot_revise", issues=issues))
                todo.append(r)
            else:
                note(r, "gcot", "rejected", json.dumps({"attempts": attempt, "issues": issues}, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------- 7. original captions

ALIGNMENT_SCHEMA = schema("alignment", score=SCORE, justification=STRING)


def _parse_alignment(text: str) -> float:
    return as_score(extract_json(text, expect=dict).get("score"), lo=1, hi=10)


def original_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Keep the original caption when the judge scores its alignment with the image at or above
    ``original_threshold`` (section 2.5)."""
    todo = [r for r in records if r["input_caption"]]
    requests = [request("original_alignment", r, "original", image_of(r, ctx), json_schema=ALIGNMENT_SCHEMA,
                        caption=r["input_caption"]) for r in todo]
    threshold = ctx.config.original_threshold
    for r, parsed in zip(todo, ask(ctx.judge, requests, _parse_alignment, ctx)):
        if not parsed.ok:
            fail(r, "original", parsed, dropping=False, what="original caption alignment")
            continue
        r["original_caption_score"] = parsed.value
        if parsed.value >= threshold:
            r["original_caption"] = r["input_caption"]
            note(r, "original", "kept", f"alignment {parsed.value:g} >= {threshold:g}")
        else:
            note(r, "original", "rejected", f"alignment {parsed.value:g} < {threshold:g}")


# ---------------------------------------------------------------------------------------------- 8. translation

TRANSLATION_SCHEMA = schema("translation", translation=STRING)


def _translation_parser(keep: list[str]):
    def parse(text: str) -> str:
        translation = field(extract_json(text, expect=dict), "translation", str)
        lost = [t for t in keep if t not in translation]
        if lost:
            raise ReplyParseError(f"the text to render must stay in English exactly as written: {lost}")
        return translation
    return parse


def translate_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Every caption into Chinese (section 2.5); the strings to render stay English, verbatim."""
    items = []  # (record, where, key, text)
    for r in records:
        items += [(r, "captions_zh", c, r["captions"][c]) for c in CHARACTERISTICS if r["captions"][c]]
        items += [(r, f"{k}_zh", None, r[k]) for k in ("gcot", "original_caption") if r[k]]
    keeps = [[t for t in r["text_strings"] if t in text] for r, _, _, text in items]
    requests = [request("translate", r, "translate", json_schema=TRANSLATION_SCHEMA, extra={"field": where, "key": key},
                        text=text, keep=keep) for (r, where, key, text), keep in zip(items, keeps)]
    parsed_all = ask(ctx.llm, requests, [_translation_parser(k) for k in keeps], ctx)
    for (r, where, key, _), parsed in zip(items, parsed_all):
        if not parsed.ok:
            fail(r, "translate", parsed, dropping=False, what=f"{where}.{key}" if key else where)
        elif key:
            r[where][key] = parsed.value
        else:
            r[where] = parsed.value
