"""PRISM-Bench's curated half and its Chinese edition (seed 004, section 3.1, appendix C.1).

Each track has 100 prompts: 50 representative ones sampled from FLUX-Reason-6M (:mod:`.sampling`) and 50
curated ones, made here. For each curated prompt, elements are drawn from the track's pools (which the paper
describes and exemplifies: ``templates/flux_engine/curation_pools.json`` holds the paper's examples verbatim
and the project's own elements beside them) and an LLM composes a natural prompt from them (Gemini2.5-Pro in
the paper); a reply that leaves out what must appear (the exact text of a Text rendering prompt, an entity's
name, the style, the emotion) is re-asked, then recorded as a failure. Long Text expands the captions of 50
high-quality images of the dataset into one long prompt each.

PRISM-Bench-ZH translates every English prompt with an LLM; in the Text rendering track the text to render
is adapted to a Chinese context rather than translated (the paper's example is in the instruction). A
translation with no Chinese in it is re-asked.

Both write the release layout ``captions/{en,zh}/<track>.jsonl`` that :mod:`~t2ireason.benchmarks.prism_bench`
reads; each line says its ``subset`` (``representative`` or ``curated``) and how it was made. Writing is
atomic and keeps the other subset's lines of a track file, so the two halves can be made in either order.
Every request is an ordinary judge request: answered from the response cache when asked again, so running a
command again after an interruption or a failure pays only for what is missing.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..files import atomic_write_text
from ..judges import ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured, extract_json
from ..prompts import render
from .asking import STRING, TEMPLATES, schema
from .asking import field as reply_field

__all__ = ["CURATED_TRACKS", "PER_TRACK", "draw_elements", "curate", "long_text_sources", "expand_long_text",
           "adapt_zh", "write_subset", "CurationResult", "ZH_EXAMPLE"]

#: the tracks whose curated half is composed from element pools; Long Text is expanded from the dataset
CURATED_TRACKS = ("imagination", "entity", "text_rendering", "style", "affection", "composition")
TRACK_NAMES = {"imagination": "Imagination", "entity": "Entity", "text_rendering": "Text rendering",
               "style": "Style", "affection": "Affection", "composition": "Composition", "long_text": "Long text"}
#: curated prompts per track in the paper
PER_TRACK = 50
#: seed 004, section 3.1: the paper's own example of a Text rendering prompt adapted to a Chinese context
ZH_EXAMPLE = ("A bottle labeled 'WHISTLEPIG' featuring 'SMOKED BARREL-AGED RYE' sits alongside two clear whiskey "
              "glasses, showcasing a refined presentation of the spirit",
              "一个标有‘茅台’并写着‘珍品酱香型白酒’的酒瓶，旁边放着两个透明的白酒杯，尽显这款烈酒的精致典雅。")
PROMPT_SCHEMA = schema("prompt", prompt=STRING)
TRANSLATION_SCHEMA = schema("translation", translation=STRING)
_CJK = re.compile(r"[\u3400-\u9fff]")


@cache
def pools() -> dict[str, Any]:
    text = resources.files("t2ireason").joinpath("templates", TEMPLATES, "curation_pools.json").read_text("utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


@dataclass
class CurationResult:
    """What a curation or translation made: the lines per track, and the items no reply could make."""

    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0
    cached: int = 0


def _rng(seed: int, track: str, index: int) -> random.Random:
    # one generator per prompt: prompt i of a track is the same whatever else is drawn, or in what order
    return random.Random(f"prism-curation\x1f{seed}\x1f{track}\x1f{index}")


def draw_elements(track: str, index: int, seed: int = 0) -> dict[str, Any]:
    """The elements of curated prompt ``index`` of ``track`` (appendix C.1), drawn reproducibly.

    Style enumerates its 25 styles, 2 prompts each (index // 2), and Affection its 24 emotions in turn; the
    others draw at random: Imagination one or two concept categories, an element of each; Entity one to
    three entities; Text rendering a text, typography, placement, viewpoint, lighting and contrast;
    Composition several values of each attribute pool."""
    if track not in CURATED_TRACKS:
        raise ValueError(f"no element pools for track {track!r}; curated tracks: {', '.join(CURATED_TRACKS)}"
                         + ("; Long Text is expanded from the dataset's captions (expand_long_text)"
                            if track == "long_text" else ""))
    pool, rng = pools()[track], _rng(seed, track, index)
    if track == "imagination":
        categories = rng.sample(sorted(pool), rng.randint(1, 2))
        return {"categories": categories, "elements": [rng.choice(pool[c]) for c in categories]}
    if track == "entity":
        names = [(c, e) for c in sorted(pool) for e in pool[c]]
        picked = rng.sample(names, rng.randint(1, 3))
        return {"categories": [c for c, _ in picked], "elements": [e for _, e in picked]}
    if track == "text_rendering":
        return {("text" if key == "content" else key): rng.choice(values) for key, values in pool.items()}
    if track == "style":
        styles = [(c, s) for c in pool for s in pool[c]]  # the file's order: the paper's four categories
        category, style = styles[(index // 2) % len(styles)]
        return {"category": category, "style": style}
    if track == "affection":
        emotions = [(p, form, e) for p in pool for form, e in zip(("milder", "primary", "intense"), pool[p])]
        primary, intensity, emotion = emotions[index % len(emotions)]
        return {"primary": primary, "intensity": intensity, "emotion": emotion}
    # composition: a few objects, and one or two values of each attribute pool
    elements = {"objects": rng.sample(pool["objects"], rng.randint(2, 3))}
    for key in sorted(k for k in pool if k != "objects"):
        elements[key] = rng.sample(pool[key], rng.randint(1, 2))
    return {"elements": elements}


def _must_appear(track: str, elements: dict[str, Any]) -> list[str]:
    """What a curated prompt must contain word for word (the paper's string-accuracy check, and the element
    that defines the track's item)."""
    if track == "text_rendering":
        return [elements["text"]]
    if track == "entity":
        # "a snow leopard" must appear as "snow leopard": the article is the LLM's to choose
        return [re.sub(r"^(a|an|the) ", "", e, flags=re.I) for e in elements["elements"]]
    if track == "style":
        return [elements["style"]]
    if track == "affection":
        return [elements["emotion"]]
    return []


def _prompt_reader(required: Sequence[str], *, exact: bool = False, min_words: int = 0):
    def read(text: str) -> str:
        prompt = reply_field(extract_json(text, expect=dict), "prompt", str)
        # the text to render letter for letter; a name or a style in any case ("cubism" at a sentence's start)
        missing = [s for s in required if (s not in prompt if exact else s.casefold() not in prompt.casefold())]
        if missing:
            raise ReplyParseError("the prompt must contain, exactly as written: "
                                  + "; ".join(f'"{s}"' for s in missing))
        if len(prompt.split()) < min_words:
            raise ReplyParseError(f"the prompt must have at least {min_words} words; it has {len(prompt.split())}")
        return prompt
    return read


def _asked(llm: Any, requests: list[ChatRequest], readers: list[Any], *, max_reasks: int, progress: Any,
           result: CurationResult) -> list[Any]:
    parsed = ask_structured(llm, requests, readers, max_reasks=max_reasks, progress=progress)
    result.requests += sum(len(p.replies) for p in parsed)
    result.cached += sum(bool(getattr(r, "cached", False)) for p in parsed for r in p.replies)
    return parsed


def curate(llm: Any, tracks: Iterable[str] = CURATED_TRACKS, *, n: int = PER_TRACK, seed: int = 0,
           temperature: float = 1.0, max_reasks: int = 2, progress: Any = False) -> CurationResult:
    """``n`` curated prompts per track, each composed by ``llm`` (a judge) from its drawn elements.

    Sampling is at ``temperature`` with a seed per prompt, so the request, hence the response cache's answer,
    is the same on every run."""
    result = CurationResult()
    requests, readers, items = [], [], []
    for track in tracks:
        for i in range(n):
            elements = draw_elements(track, i, seed)
            # StrictUndefined: every slot a track's block does not use is given empty
            text = render(TEMPLATES, "curate", track=track, track_name=TRACK_NAMES[track],
                          **{"categories": [], "elements": [], **elements})
            requests.append(ChatRequest.simple(text, json_schema=PROMPT_SCHEMA,
                                               sampling=Sampling(temperature=temperature, seed=seed * 1000 + i),
                                               metadata={"stage": "curate", "track": track, "index": i}))
            readers.append(_prompt_reader(_must_appear(track, elements), exact=track == "text_rendering"))
            items.append((track, i, elements))
    for (track, i, elements), p in zip(items, _asked(llm, requests, readers, max_reasks=max_reasks,
                                                     progress=progress and "curate", result=result)):
        line = {"prompt": p.value, "subset": "curated", "index": i, "elements": elements}
        if p.ok:
            result.lines.setdefault(track, []).append(line)
        else:
            result.failures.append({"track": track, "index": i, "elements": elements, "error": p.error,
                                    "replies": p.texts})
    return result


def long_text_sources(rows: Iterable[dict[str, Any]], n: int = PER_TRACK) -> list[dict[str, Any]]:
    """The ``n`` images of the dataset (rows in the ``flux-reason-6m`` schema) with the most captions, then the
    highest mean relevance score (ties by id): the paper's "50 high-quality images ... along with all their
    corresponding captions" (appendix C.1), chosen the same whatever the row order."""
    def key(row: dict[str, Any]) -> tuple[float, float, str]:
        captions = [c for c in (row.get("captions") or {}).values() if c]
        scores = [float(s) for s in (row.get("characteristic_scores") or {}).values() if s is not None]
        return (-len(captions) - bool(row.get("gcot")), -(sum(scores) / len(scores) if scores else 0.0),
                str(row["id"]))
    return sorted((r for r in rows if any((r.get("captions") or {}).values())), key=key)[:n]


def expand_long_text(llm: Any, rows: Sequence[dict[str, Any]], *, min_words: int = 120, seed: int = 0,
                     max_reasks: int = 2, progress: Any = False) -> CurationResult:
    """One long prompt per row, expanded by ``llm`` from all of the row's captions (and its GCoT)."""
    result = CurationResult()
    requests, readers = [], []
    for row in rows:
        captions = [(TRACK_NAMES.get(k, k), c) for k, c in (row.get("captions") or {}).items() if c]
        if row.get("gcot"):
            captions.append(("Generation chain of thought", row["gcot"]))
        requests.append(ChatRequest.simple(render(TEMPLATES, "long_text", captions=captions, min_words=min_words),
                                           json_schema=PROMPT_SCHEMA, sampling=Sampling(seed=seed),
                                           metadata={"stage": "long_text", "id": row["id"]}))
        readers.append(_prompt_reader([], min_words=min_words))
    for i, (row, p) in enumerate(zip(rows, _asked(llm, requests, readers, max_reasks=max_reasks,
                                                  progress=progress and "long text", result=result))):
        if p.ok:
            result.lines.setdefault("long_text", []).append({"prompt": p.value, "subset": "curated", "index": i,
                                                             "source_id": row["id"]})
        else:
            result.failures.append({"track": "long_text", "index": i, "source_id": row["id"], "error": p.error,
                                    "replies": p.texts})
    return result


def _translation_reader(text: str) -> str:
    translation = reply_field(extract_json(text, expect=dict), "translation", str)
    if not _CJK.search(translation):
        raise ReplyParseError('"translation" must be in Chinese; it has no Chinese characters')
    return translation


def read_track_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def adapt_zh(llm: Any, captions: str | os.PathLike, tracks: Iterable[str] | None = None, *, seed: int = 0,
             max_reasks: int = 2, progress: Any = False) -> CurationResult:
    """PRISM-Bench-ZH: every line of ``captions/en/<track>.jsonl`` translated into Chinese by ``llm``, the text
    of a Text rendering prompt adapted to a Chinese context (section 3.1). Lines keep their order and fields,
    with the English prompt as ``prompt_en``."""
    root = Path(captions) / "captions"
    tracks = list(tracks) if tracks is not None else sorted(p.stem for p in (root / "en").glob("*.jsonl"))
    if not tracks:
        raise FileNotFoundError(f"no English track files to translate under {root / 'en'}")
    result = CurationResult()
    requests, items = [], []
    for track in tracks:
        lines = read_track_lines(root / "en" / f"{track}.jsonl")
        if not lines:
            raise FileNotFoundError(f"{root / 'en' / f'{track}.jsonl'}: no prompts to translate")
        for i, line in enumerate(lines):
            text = render(TEMPLATES, "prism_zh", text=line["prompt"], adapt=track == "text_rendering",
                          example_en=ZH_EXAMPLE[0], example_zh=ZH_EXAMPLE[1])
            requests.append(ChatRequest.simple(text, json_schema=TRANSLATION_SCHEMA, sampling=Sampling(seed=seed),
                                               metadata={"stage": "zh", "track": track, "index": i}))
            items.append((track, line))
    parsed = _asked(llm, requests, [_translation_reader] * len(requests), max_reasks=max_reasks,
                    progress=progress and "zh", result=result)
    for (track, line), p in zip(items, parsed):
        if p.ok:
            result.lines.setdefault(track, []).append({**line, "prompt": p.value, "prompt_en": line["prompt"],
                                                       "adapted": track == "text_rendering"})
        else:
            result.failures.append({"track": track, "prompt_en": line["prompt"], "error": p.error,
                                    "replies": p.texts})
    return result


def write_subset(out: str | os.PathLike, language: str, track: str, lines: Sequence[dict[str, Any]]) -> Path:
    """Write ``lines`` as ``out/captions/<language>/<track>.jsonl``, keeping the file's lines of other subsets
    (the representative half before the curated one), atomically."""
    path = Path(out) / "captions" / language / f"{track}.jsonl"
    subsets = {line.get("subset") for line in lines}
    kept = [line for line in read_track_lines(path) if line.get("subset") not in subsets]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [*kept, *lines]))
    return path
