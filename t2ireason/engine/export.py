"""Stage 9, the release: sharded Parquet in the ``flux-reason-6m`` schema, a dataset card, statistics; and
the human-review sample of the quality filter (appendix B.4) with the agreement it measures.

The output folder loads with ``load_dataset(out)`` (config ``default``: exactly
:data:`~t2ireason.benchmarks.flux_reason.FEATURES`, the kept records) and
``load_dataset(out, "provenance")`` (every candidate, kept or not, with its prompt, seed and the
events of every stage: which one dropped or labelled it, and why).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq

from ..benchmarks.flux_reason import BENCHMARK, CHARACTERISTICS, DISPLAY_NAMES, FEATURES
from ..build import describe_features, render_template, size_category
from ..files import atomic_write_text
from .work import STAGE_NAMES, WORK_FEATURES, EngineError, Workdir, write_parquet_atomic

__all__ = ["export", "export_shard", "finish_release", "check_release", "release_name", "statistics",
           "PROVENANCE_FEATURES", "export_review_sample", "review_agreement"]

SPLIT = BENCHMARK.split  # a training set: the split `t2ireason build flux-reason-6m` writes too
LAST = STAGE_NAMES[-1]
PROVENANCE_FEATURES = datasets.Features({
    "id": datasets.Value("string"), "source": datasets.Value("string"), "kept": datasets.Value("bool"),
    "dropped_by": datasets.Value("string"), "prompt": datasets.Value("string"), "seed": datasets.Value("int64"),
    "events": WORK_FEATURES["events"],
})
PROVENANCE_DOCS = {
    "id": "candidate id (the id in the default config for kept records)",
    "source": "prompt source: laion (rewritten captions), imagination, text_rendering (mined text images)",
    "kept": "whether the record is in the default config",
    "dropped_by": "the stage that dropped it: prompts, quality, scoring (no label, or the typographic filter)",
    "prompt": "the prompt the image was generated from",
    "seed": "the generation seed of the image",
    "events": "what each stage did to the record (labelled, passed, rejected, failed, dropped) and why",
    "events.stage": "the stage", "events.action": "what it did", "events.detail": "why, or the raw replies of a failure",
}
#: where the published dataset's field docs do not fit a dataset the engine made
FIELD_DOCS = {"id": "record id: <source>-<index in its input>",
              "image": "the generated image (the diffusion model is named under 'How it was made')",
              "characteristic_scores": "the judge's relevance score 1 to 10 per characteristic (section 2.3)",
              "source": "prompt source: laion (rewritten captions), imagination, text_rendering (mined text images)"}
CAPTION_TYPES = (*CHARACTERISTICS, "gcot", "original_caption")
_BIN = 10  # words per histogram bin (Figure 3, right)


def _share(n: int, d: int) -> float:
    return round(n / d, 4) if d else 0.0


def _words(text: str) -> int:
    return len(text.split())


def _summary(counts: Counter[int]) -> dict[str, Any]:
    """Mean, nearest-rank quantiles and a 10-word histogram of word counts kept as a Counter (constant memory)."""
    total = sum(counts.values())
    if not total:
        return {}
    cumulative, quantiles, wanted = 0, {}, {"p10": 0.1, "median": 0.5, "p90": 0.9}
    histogram: Counter[str] = Counter()
    for n in sorted(counts):
        cumulative += counts[n]
        quantiles |= {name: n for name, q in wanted.items() if name not in quantiles and cumulative >= q * total}
        histogram[f"{n // _BIN * _BIN}-{n // _BIN * _BIN + _BIN - 1}"] += counts[n]
    return {"mean": round(sum(n * k for n, k in counts.items()) / total, 2), **quantiles, "max": max(counts),
            "histogram": dict(histogram)}


def statistics(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The paper's Figure 3 for a run: prompt sources, label ratios, caption counts and lengths; and the
    funnel: how many candidates each stage dropped."""
    sources, kept_sources, dropped = Counter(), Counter(), Counter()
    labels, n_labels = Counter(), 0
    words: dict[str, Counter[int]] = defaultdict(Counter)
    chinese = Counter()
    for r in records:
        sources[r["source"]] += 1
        if r["dropped_by"] is not None:
            dropped[r["dropped_by"]] += 1
            continue
        kept_sources[r["source"]] += 1
        labels.update(r["characteristics"])
        n_labels += len(r["characteristics"])
        texts = {**r["captions"], "gcot": r["gcot"], "original_caption": r["original_caption"]}
        zh = {**r["captions_zh"], "gcot": r["gcot_zh"], "original_caption": r["original_caption_zh"]}
        for kind in CAPTION_TYPES:
            if texts[kind]:
                words[kind][_words(texts[kind])] += 1
            chinese[kind] += bool(zh[kind])
    kept = sum(kept_sources.values())
    total_captions = sum(sum(c.values()) for c in words.values())
    return {
        "candidates": sum(sources.values()), "kept": kept,
        "dropped_by": {s: dropped[s] for s in STAGE_NAMES if dropped[s]},
        "sources": {s: {"candidates": sources[s], "kept": kept_sources[s], "share": _share(kept_sources[s], kept)}
                    for s in sources},
        "labels": {c: {"images": labels[c], "ratio": _share(labels[c], kept)} for c in CHARACTERISTICS},
        "labels_per_image": _share(n_labels, kept),
        "captions": {k: {"count": sum(words[k].values()), "share": _share(sum(words[k].values()), total_captions),
                         "chinese": chinese[k], "words": _summary(words[k])} for k in CAPTION_TYPES},
        "captions_total": total_captions, "captions_total_bilingual": total_captions + sum(chinese.values()),
    }


def _release_row(r: dict[str, Any], work: Workdir) -> dict[str, Any]:
    row = {name: r[name] for name in FEATURES if name != "image"}
    row["image"] = {"bytes": (work.root / r["image"]).read_bytes(), "path": f"{r['id']}.png"}
    return row


def _provenance_row(r: dict[str, Any]) -> dict[str, Any]:
    return {name: r[name] for name in PROVENANCE_FEATURES if name != "kept"} | {"kept": r["dropped_by"] is None}


def _card(out: Path, stats: dict[str, Any], n_shards: int, license: str, repo_id: str | None,
          run: dict[str, Any]) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(pretty_name=f"{BENCHMARK.pretty_name} (t2i-reason data engine)", license=license,
                           task_categories=["text-to-image"], language=["en", "zh"],
                           size_categories=[size_category(stats["kept"])], tags=["t2i-reason", "flux-reason-6m"])
    configs = {"default": {"data_files": [{"split": SPLIT, "path": f"data/{SPLIT}-*"}], "default": True},
               "provenance": {"data_files": [{"split": SPLIT, "path": f"provenance/{SPLIT}-*"}]}}
    datasets.utils.metadata.MetadataConfigs(configs).to_dataset_card_data(data)
    infos = {name: datasets.DatasetInfo(
        features=features, config_name=name,
        splits=datasets.SplitDict.from_split_dict([{"name": SPLIT, "num_examples": rows, "num_bytes": 0}]))
        for name, features, rows in (("default", FEATURES, stats["kept"]),
                                     ("provenance", PROVENANCE_FEATURES, stats["candidates"]))}
    datasets.info.DatasetInfosDict(infos).to_dataset_card_data(data)
    text = render_template(
        "engine_card.md.j2", card_data=data.to_yaml(), bench=BENCHMARK, stats=stats, split=SPLIT, n_shards=n_shards,
        repo_id=repo_id or f"<namespace>/{out.name}", license=license, run=run, display=DISPLAY_NAMES,
        fields=describe_features(FEATURES, BENCHMARK.field_docs | FIELD_DOCS),
        provenance_fields=describe_features(PROVENANCE_FEATURES, PROVENANCE_DOCS))
    DatasetCard(text)  # the Hub's own parser must accept it
    return text


def release_name(shard: str) -> str:
    """The release file of a work shard: ``shard-00003`` -> ``train-00003.parquet``."""
    return f"{SPLIT}-{shard.removeprefix('shard-')}.parquet"


def check_release(work: Workdir, out: str | os.PathLike, *, ours: bool = False) -> None:
    """Refuse an output folder holding files the engine did not write (before anything is written there);
    ``ours``: the work folder's export already writes there (an export killed before its statistics)."""
    out = Path(out)
    if out.is_dir() and any(out.iterdir()) and not (out / "statistics.json").is_file() and not ours:
        raise EngineError(f"output folder {out} is not empty and was not written by the engine; choose another")


def export_shard(work: Workdir, out: str | os.PathLike, shard: str) -> int:
    """One shard of the release: its kept records in ``data/`` (no file when none is kept: an empty Parquet
    file breaks ``load_dataset``) and every candidate in ``provenance/``, each file written whole. Returns
    how many records were kept."""
    out, name = Path(out), release_name(shard)
    records = work.read(LAST, shard)
    kept = [r for r in records if r["dropped_by"] is None]
    if kept:
        write_parquet_atomic([_release_row(r, work) for r in kept], FEATURES, out / "data" / name)
    else:
        (out / "data" / name).unlink(missing_ok=True)
    write_parquet_atomic([_provenance_row(r) for r in records], PROVENANCE_FEATURES, out / "provenance" / name)
    return len(kept)


def finish_release(work: Workdir, out: str | os.PathLike, *, license: str, repo_id: str | None = None,
                   run: dict[str, Any] | None = None) -> dict[str, Any]:
    """After every shard is exported (:func:`export_shard`): remove files of an earlier export that are not
    part of this one, write ``statistics.json`` and the card ``README.md``; return the statistics."""
    out = Path(out)
    shards = work.shards(LAST)
    expected = work.settings("sources")["shards"]
    if len(shards) < expected:
        raise EngineError(f"{expected - len(shards)} of {expected} shards have not been through every stage yet "
                          "(a judge backend failed on them): run again to finish them, then export")
    kept = {s for s in shards if pq.read_table(work.shard_path(LAST, s), columns=["dropped_by"]).column(0).null_count}
    if not kept:
        raise EngineError(f"every candidate was dropped, nothing to release: see why in the events of the records "
                          f"in {work.stage_dir(LAST)}")
    files = {"data": {release_name(s) for s in kept}, "provenance": {release_name(s) for s in shards}}
    for folder, current in files.items():
        present = {p.name for p in (out / folder).glob("*.parquet")}
        missing = current - present
        if missing:
            raise EngineError(f"{out / folder} lacks {sorted(missing)[:3]}: the export did not finish; run again")
        for stale in present - current:  # files of an earlier export that are not part of this one
            (out / folder / stale).unlink()
    stats = statistics(work.records(LAST))
    atomic_write_text(out / "statistics.json", json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / "README.md", _card(out, stats, len(files["data"]), license, repo_id, run or {}))
    return stats


def export(work: Workdir, out: str | os.PathLike, *, license: str, repo_id: str | None = None,
           run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole release in this process (the engine's export stage does the same as datatrove tasks):
    every shard, then the statistics and the card."""
    check_release(work, out)
    for shard in work.shards(LAST):
        export_shard(work, out, shard)
    return finish_release(work, out, license=license, repo_id=repo_id, run=run)


# ---------------------------------------------------------------------------------------------- human review

REVIEW_COLUMNS = ("file", "id", "vlm_verdict", "flaws", "reason", "human_verdict_1", "human_verdict_2")


def _order(rid: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}\x1f{rid}".encode()).hexdigest()


def export_review_sample(work: Workdir, out: str | os.PathLike, *, per_verdict: int = 500, seed: int = 0) -> Path:
    """A random sample of images the quality filter accepted and rejected (``per_verdict`` of each, 500 in
    appendix B.4), copied into ``out/images`` with ``review.csv``: the filter's verdict and reason, and two
    empty ``human_verdict`` columns (accept or reject) for two reviewers per image."""
    picked: dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]] = {"accept": [], "reject": []}
    for r in work.records(LAST):
        event = next((e for e in r["events"] if e["stage"] == "quality" and e["action"] in ("passed", "dropped", "rejected")),
                     None)
        if event is not None:
            picked["accept" if event["action"] == "passed" else "reject"].append((_order(r["id"], seed), r, event))
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for verdict, items in picked.items():
        for _, r, event in sorted(items, key=lambda t: t[0])[:per_verdict]:
            detail = json.loads(event["detail"])
            file = f"images/{r['id']}.png"
            shutil.copyfile(work.root / r["image"], out / file)
            rows.append({"file": file, "id": r["id"], "vlm_verdict": verdict, "flaws": " ".join(detail["flaws"]),
                         "reason": detail["reason"], "human_verdict_1": "", "human_verdict_2": ""})
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=REVIEW_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    path = out / "review.csv"
    atomic_write_text(path, text.getvalue())
    return path


def review_agreement(path: str | os.PathLike) -> dict[str, Any]:
    """How often the filter's verdict matches the reviewers' (appendix B.4: an image is accepted by humans
    when every reviewer accepts it; the paper reports 95%). Rows no reviewer filled in are counted apart."""
    with Path(path).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in (rows[0] if rows else {}) if c.startswith("human_verdict")]
    per: dict[str, Counter] = defaultdict(Counter)
    unreviewed = 0
    for n, row in enumerate(rows, 2):
        votes = [row[c].strip().lower() for c in columns if row[c].strip()]
        bad = [v for v in votes if v not in ("accept", "reject")]
        if bad:
            raise EngineError(f"{path}, line {n}: a human verdict is accept or reject, got {bad[0]!r}")
        if not votes:
            unreviewed += 1
            continue
        human = "accept" if all(v == "accept" for v in votes) else "reject"
        per[row["vlm_verdict"]]["images"] += 1
        per[row["vlm_verdict"]]["agree"] += human == row["vlm_verdict"]
    images = sum(c["images"] for c in per.values())
    agree = sum(c["agree"] for c in per.values())
    return {"images": images, "agree": agree, "agreement": agree / images if images else None,
            "unreviewed": unreviewed,
            "by_vlm_verdict": {v: {"images": c["images"], "agreement": c["agree"] / c["images"]}
                               for v, c in sorted(per.items())}}
