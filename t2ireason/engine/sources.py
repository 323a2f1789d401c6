"""Stage 1, prompt sources (seed 004, section 2.2 and Figure 3, left): the three subsets of raw prompts.

- ``laion``: captions (LAION-Aesthetics in the paper) rewritten by a vision-language model into
  high-quality, broad descriptions;
- ``imagination``: progressive imagination cultivation: ``imagination_examples`` (10) of the seed
  prompts (200 by Gemini-2.5-Pro in the paper), drawn at random per candidate, are the in-context
  examples of an LLM (Qwen3-32B) sampled at a raised temperature;
- ``text_rendering``: mining images (LAION-2B) for clear, legible text with a VLM (Qwen2.5-VL-32B),
  which captions the text's content, presentation and context; images without legible text are dropped.

:func:`ingest` reads the inputs once into the ``sources`` shards (cheap and deterministic: the
candidates, their ids and the in-context examples drawn for each); the ``prompts`` stage then asks the
models. Sampled requests carry a seed derived from the candidate's id, so they are reproducible and the
response cache serves them on a resumed run.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..generation import image_seed
from ..judges import Sampling
from ..parsing import ReplyParseError, extract_json
from .asking import BOOLEAN, STRING, STRINGS, ask, fail, field, request, schema
from .work import Context, EngineError, Workdir, drop, new_record, note

__all__ = ["Sources", "ingest", "candidate_counts", "prompts_stage", "SOURCE_NAMES", "sample_sources"]

SOURCE_NAMES = ("laion", "imagination", "text_rendering")
_ID_PREFIX = {"laion": "laion", "imagination": "imagination", "text_rendering": "text"}
_CAPTION_COLUMNS = ("caption", "text", "prompt", "original_caption", "alt", "alt_text")
_IMAGE_COLUMNS = ("image", "jpg", "jpeg", "png", "webp", "img", "image_path", "file_name", "path")


@dataclass
class Sources:
    """Where the candidates come from. Paths are files (``.txt`` one item a line, ``.jsonl``, ``.json``,
    ``.parquet``, ``.csv``), folders (of data files or of images) or Hub dataset ids (streamed)."""

    captions: str | None = None  # captions, optionally with an image column (LAION-Aesthetics)
    caption_column: str | None = None  # default: the first of caption, text, prompt, ...
    seed_prompts: str | None = None  # imaginative seed prompts
    imagination: int = 0  # how many imagination candidates to expand from them
    mine_images: str | None = None  # images to mine for legible text (LAION-2B)
    limit: int | None = None  # at most this many items from each input

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def sample_sources(imagination: int = 4, limit: int | None = None) -> Sources:
    """The small inputs shipped with the package (``samples/engine``: 4 captions, 3 with their image;
    12 seed prompts; 2 images to mine), for a first run offline."""
    from importlib import resources

    folder = resources.files("t2ireason") / "samples" / "engine"
    return Sources(captions=str(folder / "captions.jsonl"), seed_prompts=str(folder / "seed_prompts.txt"),
                   imagination=imagination, mine_images=str(folder / "mine_images.jsonl"), limit=limit)


def _rows(source: str, limit: int | None) -> Iterator[dict[str, Any]]:
    """Rows of a file, folder or Hub dataset, streamed; images undecoded (``{"bytes", "path"}``)."""
    import datasets

    path = Path(source)
    if path.suffix == ".txt" and path.is_file():
        lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
        rows: Any = ({"text": line} for line in lines if line)
    else:
        kinds = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
        if path.is_file() and path.suffix not in kinds:
            raise EngineError(f"{source}: unknown file type; use .txt, {', '.join(kinds)}, a folder or a Hub id")
        if not path.exists() and "/" not in source.strip("/"):
            raise EngineError(f"input not found: {source}")
        ds = (datasets.load_dataset(kinds[path.suffix], data_files=str(path), split="train", streaming=True)
              if path.is_file() else datasets.load_dataset(str(source), split="train", streaming=True))
        for name, feature in (ds.features or {}).items():
            if isinstance(feature, datasets.Image):
                ds = ds.cast_column(name, datasets.Image(decode=False))
        rows = iter(ds)
    for i, row in enumerate(rows):
        if limit is not None and i >= limit:
            return
        yield row


def _column(row: dict[str, Any], wanted: str | None, candidates: tuple[str, ...], what: str, source: str) -> str:
    if wanted:
        if wanted not in row:
            raise EngineError(f"{source} has no column {wanted!r}; it has {sorted(row)}")
        return wanted
    by_lower = {k.lower(): k for k in row}
    found = next((by_lower[c] for c in candidates if c in by_lower), None)
    if found is None:
        raise EngineError(f"{source}: no {what} column (looked for {', '.join(candidates)}); it has {sorted(row)}")
    return found


def _image_file(value: Any, rid: str, work: Workdir, base: Path | None) -> str | None:
    """A local path for an input image: kept where it is, or its bytes written under ``inputs/``."""
    if value is None:
        return None
    if isinstance(value, str):
        path = Path(value)
        return str(path if path.is_absolute() or base is None else base / path)
    if value.get("path") and Path(value["path"]).is_file():
        return str(Path(value["path"]).resolve())
    if value.get("bytes"):
        suffix = Path(value.get("path") or "x.png").suffix or ".png"
        path = work.root / "inputs" / f"{rid}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value["bytes"])
        return str(path.resolve())
    raise EngineError(f"input image of {rid} has neither a readable path nor bytes")


def _base(source: str) -> Path | None:
    """Where relative image paths in ``source`` start: its folder (or the folder of its file)."""
    path = Path(source)
    return path if path.is_dir() else path.parent if path.is_file() else None


def _candidates(sources: Sources, seed: int, examples: int, work: Workdir) -> Iterator[dict[str, Any]]:
    if sources.captions:
        base = _base(sources.captions)
        caption_col = image_col = None
        for i, row in enumerate(_rows(sources.captions, sources.limit)):
            if caption_col is None:
                caption_col = _column(row, sources.caption_column, _CAPTION_COLUMNS, "caption", sources.captions)
                image_col = next((c for c in row if c.lower() in _IMAGE_COLUMNS), None)
            rid = f"laion-{i:08d}"
            caption = str(row[caption_col] or "").strip()
            if caption:  # an empty caption has nothing to rewrite
                image = _image_file(row.get(image_col), rid, work, base) if image_col else None
                yield new_record(rid, "laion", input_caption=caption, input_image=image)
    if sources.imagination:
        if not sources.seed_prompts:
            raise EngineError("imagination candidates need seed prompts (--seed-prompts)")
        seeds = [str(r.get("prompt") or r.get("text") or "").strip() for r in _rows(sources.seed_prompts, None)]
        seeds = [s for s in seeds if s]
        if len(seeds) < examples:
            raise EngineError(f"{sources.seed_prompts} holds {len(seeds)} seed prompts; "
                              f"each imagination candidate takes {examples} as examples")
        for i in range(sources.imagination):
            rid = f"imagination-{i:08d}"
            # the examples are drawn from the candidate's id: the same on every run and process
            rng = random.Random(image_seed("flux-engine-examples", rid, 0, seed))
            yield new_record(rid, "imagination", examples=rng.sample(seeds, examples))
    if sources.mine_images:
        base = _base(sources.mine_images)
        image_col = None
        for i, row in enumerate(_rows(sources.mine_images, sources.limit)):
            image_col = image_col or _column(row, None, _IMAGE_COLUMNS, "image", sources.mine_images)
            rid = f"text-{i:08d}"
            yield new_record(rid, "text_rendering", input_image=_image_file(row[image_col], rid, work, base))


def ingest(work: Workdir, sources: Sources, config: Any) -> dict[str, int]:
    """Write the candidates into the ``sources`` shards (``config.shard_size`` records each); return the
    count per source. Done once: a later run with the same inputs reuses the shards, with other inputs it
    is refused (the shards of every later stage were made from these)."""
    settings = json.loads(json.dumps({"sources": sources.to_dict(), "shard_size": config.shard_size,
                                      "seed": config.seed, "imagination_examples": config.imagination_examples}))
    old = work.settings("sources")
    if old is not None and old["settings"] != settings:
        raise EngineError(f"{work.root} was started from other inputs ({old['settings']}); use another work folder")
    if old is not None and len(work.shards("sources")) == old["shards"]:
        return candidate_counts(work)
    counts: Counter[str] = Counter()
    shard: list[dict[str, Any]] = []
    n = 0
    for record in _candidates(sources, config.seed, config.imagination_examples, work):
        counts[record["source"]] += 1
        shard.append(record)
        if len(shard) == config.shard_size:
            work.write("sources", f"shard-{n:05d}", shard)
            shard, n = [], n + 1
    if shard:
        work.write("sources", f"shard-{n:05d}", shard)
        n += 1
    if not n:
        raise EngineError("no candidates: give --captions, --seed-prompts with --imagination, or --mine-images")
    # written last: its presence (with every shard) means the ingest is complete
    work.save_settings("sources", {"settings": settings, "shards": n, "counts": dict(counts)})
    return candidate_counts(work)


def candidate_counts(work: Workdir) -> dict[str, int]:
    """Candidates per source, in the order of SOURCE_NAMES, of an ingested work folder."""
    counts = work.settings("sources")["counts"]
    return {s: counts[s] for s in SOURCE_NAMES if s in counts}


# ---------------------------------------------------------------------------------------------- stage

PROMPT_SCHEMA = schema("prompt", prompt=STRING)
MINING_SCHEMA = schema("text_mining", legible_text=BOOLEAN, texts=STRINGS, caption=STRING)


def _parse_prompt(text: str) -> str:
    return field(extract_json(text, expect=dict), "prompt", str)


def _parse_mining(text: str) -> dict[str, Any]:
    obj = extract_json(text, expect=dict)
    if not field(obj, "legible_text", bool):
        return {"legible_text": False}
    caption, texts = field(obj, "caption", str), [str(t) for t in field(obj, "texts", list)]
    if not texts:
        raise ReplyParseError('legible text was reported but "texts" is empty')
    missing = [t for t in texts if t not in caption]
    if missing:
        raise ReplyParseError(f'every string in "texts" must appear in the caption exactly; not found: {missing}')
    return {"legible_text": True, "caption": caption, "texts": texts}


def prompts_stage(records: list[dict[str, Any]], ctx: Context) -> None:
    """Give every candidate its ``prompt``; mined images without legible text are dropped."""
    cfg = ctx.config
    laion = [r for r in records if r["source"] == "laion"]
    imagination = [r for r in records if r["source"] == "imagination"]
    mined = [r for r in records if r["source"] == "text_rendering"]

    jobs = []  # (records, judge, requests, parser)
    if laion:
        jobs.append((laion, ctx.judge, [
            request("rewrite_caption", r, "prompts", *([r["input_image"]] if r["input_image"] else []),
                    json_schema=PROMPT_SCHEMA, caption=r["input_caption"], with_image=bool(r["input_image"]))
            for r in laion], _parse_prompt))
    if imagination:
        jobs.append((imagination, ctx.llm, [
            request("imagination", r, "prompts", json_schema=PROMPT_SCHEMA, examples=r["examples"],
                    sampling=Sampling(temperature=cfg.imagination_temperature, max_tokens=512,
                                      seed=image_seed("flux-engine-imagination", r["id"], 0, cfg.seed) % 2**31))
            for r in imagination], _parse_prompt))
    if mined:
        jobs.append((mined, ctx.judge, [request("text_mining", r, "prompts", r["input_image"],
                                                json_schema=MINING_SCHEMA) for r in mined], _parse_mining))
    for group, judge, requests, parse in jobs:
        for r, parsed in zip(group, ask(judge, requests, parse, ctx)):
            if not parsed.ok:
                fail(r, "prompts", parsed, dropping=True)
            elif isinstance(parsed.value, str):
                r["prompt"] = parsed.value
            elif parsed.value["legible_text"]:
                r["prompt"] = parsed.value["caption"]
                note(r, "prompts", "mined", f"legible text: {json.dumps(parsed.value['texts'], ensure_ascii=False)}")
            else:
                drop(r, "prompts", "the image holds no clear, legible text")
