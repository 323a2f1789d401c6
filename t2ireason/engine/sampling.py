"""PRISM-Bench's representative prompt sampling (seed 004, section 3.1): per track, the top prompts by the
relevance scores of section 2.3 (10,000 in the paper), embedded and clustered by k-means (k = 50); the
prompt nearest each centroid is selected. Works on any rows in the ``flux-reason-6m`` schema: a dataset
the engine made, or the published FLUX-Reason-6M streamed with ``flux_reason.stream``.

A track's prompts are the records' category-specific captions of that track (the schema keeps no other
prompt); the Chinese caption, where present, gives the PRISM-Bench-ZH line.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..benchmarks.flux_reason import CHARACTERISTICS

__all__ = ["TextEmbedder", "representative_prompts", "nearest_to_centroids", "write_prism_captions"]


class TextEmbedder:
    """Sentence embeddings from a model folder or Hub id, loaded with ``from_pretrained``: CLIP-like models
    (``get_text_features``) give their projected text embedding, other encoders (sentence-transformers
    checkpoints, BERT...) the attention-masked mean of their last hidden states. Rows are L2-normalised."""

    def __init__(self, model: str | os.PathLike, *, device: str | None = None, batch_size: int = 64,
                 max_length: int | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.name = str(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(self.name)
        self.model = AutoModel.from_pretrained(self.name).eval().to(self.device)
        self.batch_size = batch_size
        self.max_length = max_length or min(getattr(self.tokenizer, "model_max_length", 512), 512)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                enc = self.tokenizer(list(texts[start : start + self.batch_size]), padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                if hasattr(self.model, "get_text_features"):
                    vectors = self.model.get_text_features(**enc).pooler_output  # the projected embedding
                else:
                    hidden = self.model(**enc).last_hidden_state
                    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
                out.append(torch.nn.functional.normalize(vectors.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


def nearest_to_centroids(vectors: np.ndarray, k: int, *, seed: int = 0) -> list[int]:
    """k-means (scikit-learn, k-means++ with 10 restarts) on the rows; for each centroid, the index of the
    nearest row not already chosen, so the k picks are distinct. Fewer rows than ``k``: all of them."""
    if len(vectors) <= k:
        return list(range(len(vectors)))
    try:
        from sklearn.cluster import KMeans
    except ImportError:
        raise ImportError("representative sampling needs scikit-learn: pip install 't2i-reason[engine]'") from None
    km = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(vectors)
    distances = km.transform(vectors)  # rows x centroids
    chosen: list[int] = []
    for c in range(k):
        chosen.append(next(int(i) for i in np.argsort(distances[:, c], kind="stable") if int(i) not in chosen))
    return chosen


def representative_prompts(rows: Iterable[dict[str, Any]], embed: Callable[[Sequence[str]], np.ndarray], *,
                           tracks: Sequence[str] = CHARACTERISTICS, k: int = 50, top: int = 10_000,
                           seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Per track, ``k`` representative prompts: ``{"id", "prompt", "prompt_zh", "score"}`` in centroid order.

    One pass over ``rows`` keeps, per track, the ``top`` rows with the highest relevance score that have
    a caption for the track (ties broken by id, so the choice does not depend on row order)."""
    unknown = [t for t in tracks if t not in CHARACTERISTICS]
    if unknown:
        raise ValueError(f"unknown track(s) {unknown}; known: {', '.join(CHARACTERISTICS)}")
    heaps: dict[str, list[tuple[float, str, str, str | None]]] = {t: [] for t in tracks}
    for row in rows:
        for t in tracks:
            score = (row.get("characteristic_scores") or {}).get(t)
            caption = (row.get("captions") or {}).get(t)
            if score is None or not caption:
                continue
            # a min-heap of the best `top`; (score, id) orders ties the same whatever the row order
            item = (float(score), str(row["id"]), caption, (row.get("captions_zh") or {}).get(t))
            (heapq.heappush if len(heaps[t]) < top else heapq.heappushpop)(heaps[t], item)
    selected = {}
    for t, heap in heaps.items():
        if not heap:
            raise ValueError(f"no row has both a {t} score and a {t} caption to sample from")
        best = sorted(heap, reverse=True)
        picks = nearest_to_centroids(embed([b[2] for b in best]), k, seed=seed)
        selected[t] = [{"id": best[i][1], "prompt": best[i][2], "prompt_zh": best[i][3], "score": best[i][0]}
                       for i in picks]
    return selected


def write_prism_captions(selected: dict[str, list[dict[str, Any]]], out: str | os.PathLike) -> list[Path]:
    """``captions/{en,zh}/<track>.jsonl`` in PRISM-Bench's release layout (``subset`` representative), readable
    by the prism-bench reader; a Chinese file only when every selected prompt has a Chinese caption."""
    written = []
    for track, items in selected.items():
        for lang, key in (("en", "prompt"), ("zh", "prompt_zh")):
            if not all(item[key] for item in items):
                continue
            path = Path(out) / "captions" / lang / f"{track}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps({"prompt": item[key], "subset": "representative", "source_id": item["id"],
                                 "score": item["score"]}, ensure_ascii=False) for item in items]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(path)
    return written
