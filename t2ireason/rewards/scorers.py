"""Each metric as a reward's part: the references it scores an image against and each image's value on 0-1.

A benchmark's metric (R2I-Score, T2I-ReasonScore, the Knowledge Checklist Score, PRISM Score) scores
with the benchmark's own ``score`` (:class:`BenchmarkScorer`), against the rows :class:`~.criteria.Criteria`
gives; its per-image reward is the metric's own (``ImageResult.score``, the ``scores`` of its module, on
0-1), or one part of it (PRISM's alignment or aesthetic axis, T2I-ReasonBench's question groups,
R2I-Bench's dimensions). VQAScore is P("Yes") (0-1); CLIPScore's reward is max(cos, 0), the Hessel
definition's per-image score without its weight of 2.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..results import ImageResult
from .criteria import Criteria

__all__ = ["Scorer", "BenchmarkScorer", "VQAScorer", "CLIPScorer", "PARTS"]

#: metric -> part -> (the ImageResult subscore it reads, the scale it is on)
PARTS: dict[str, dict[str, tuple[str, float]]] = {
    "prism_score": {"alignment": ("alignment", 100.0), "aesthetic": ("aesthetic", 100.0),
                    "aesthetics": ("aesthetic", 100.0)},
    "t2i_reasonscore": {"reason": ("reason", 1.0), "detail": ("detail", 1.0), "quality": ("quality", 1.0)},
    "r2i_score": {"reasoning": ("reasoning", 1.0), "alignment": ("alignment", 1.0), "quality": ("quality", 1.0)},
}


class Scorer:
    """One metric, loaded once: :meth:`run` scores images (loaded: JudgeImages, or the ImageError of one
    that cannot be read) drawn from prompts, with the metadata given per image."""

    name: str
    #: the judge it asks (None: no judge, CLIPScore); a combined reward gathers the requests to one judge
    judge: Any = None

    def references(self, prompts: Sequence[str], metadata: Sequence[dict[str, Any]]
                   ) -> tuple[list[Any], list[str | None]]:
        """What each image is scored against, and per image None or why it has nothing to be scored against."""
        return list(prompts), [None] * len(prompts)

    def score(self, references: list[Any], images: list[Any], judge: Any) -> list[ImageResult]:
        raise NotImplementedError

    def run(self, images: list[Any], prompts: Sequence[str], metadata: Sequence[dict[str, Any]],
            judge: Any) -> list[ImageResult]:
        """Each image's result; an image with nothing to be scored against fails with the reason, unjudged (an
        empty prompt too: its image alone, not the batch)."""
        given = [i for i, p in enumerate(prompts) if p.strip()]
        found = self.references([prompts[i] for i in given], [metadata[i] for i in given]) if given else ([], [])
        references: list[Any] = [None] * len(prompts)
        missing: list[str | None] = [f"prompts[{i}] is empty: nothing to score its image against"
                                     for i in range(len(prompts))]
        for i, reference, why in zip(given, *found):
            references[i], missing[i] = reference, why
        asked = [i for i, m in enumerate(missing) if m is None]
        scored = iter(self.score([references[i] for i in asked], [images[i] for i in asked], judge) if asked else [])
        return [next(scored) if m is None else ImageResult(id=str(i), prompt=prompts[i], score=None, failure=m)
                for i, m in enumerate(missing)]

    def value(self, result: ImageResult, part: str | None = None) -> float | None:
        """The image's reward on 0-1 (None where it failed): the metric's per-image score, or ``part``."""
        if part is None:
            return result.score
        key, scale = PARTS[self.name][part]
        value = result.subscores.get(key)
        return None if value is None else value / scale

    def record(self) -> dict[str, Any]:
        """What the results say of this metric's judge (or model)."""
        from ..scoring import judge_record

        return judge_record(self.judge)

    def close(self) -> None:
        """Release what this scorer loaded."""


class BenchmarkScorer(Scorer):
    """A benchmark's metric: rows from ``criteria``, the benchmark's ``score`` with ``setting``'s options."""

    def __init__(self, name: str, criteria: Criteria, setting: Any, judge: Any, owns_judge: bool):
        self.name = name
        self.criteria = criteria
        self.bench = criteria.bench
        self.setting = setting
        self.judge = judge
        self._owns_judge = owns_judge

    def references(self, prompts, metadata):
        return self.criteria.rows(prompts, metadata)

    def score(self, references, images, judge):
        return self.bench.score(references, images, judge, progress=False, **self.setting.options)

    def record(self) -> dict[str, Any]:
        from ..scoring import judge_record

        return judge_record(self.judge, self.setting.preset, self.setting.preset_settings)

    def close(self) -> None:
        if self._owns_judge:
            self.judge.close()


class VQAScorer(Scorer):
    """VQAScore: P("Yes") to ``question`` about the prompt, from the judge's answer probabilities."""

    name = "vqascore"

    def __init__(self, judge: Any, question: str, owns_judge: bool):
        from ..alignment import VQASCORE_QUESTION

        self.judge = judge
        self.question = question or VQASCORE_QUESTION
        self._owns_judge = owns_judge

    def score(self, references, images, judge):
        from ..alignment import score_readable, vqascore

        scores, errors = score_readable(images, references, lambda i, p: vqascore(i, p, judge, question=self.question))
        return _results(references, scores, errors)

    def close(self) -> None:
        if self._owns_judge:
            self.judge.close()


class CLIPScorer(Scorer):
    """CLIPScore's cosine, clamped at 0 (Hessel et al.'s per-image score over its weight of 2.5)."""

    name = "clip_score"

    def __init__(self, model: Any, prefix: str | None = None, **kwargs: Any):
        from ..alignment import CLIPScorer as Model

        self.model = model if isinstance(model, Model) else Model(model, **kwargs)
        self.prefix = prefix

    def score(self, references, images, judge):
        from ..alignment import CLIP_DEFINITIONS, clip_score, score_readable

        weight = CLIP_DEFINITIONS["hessel"][0]
        scores, errors = score_readable(images, references, lambda i, p: [
            s / weight for s in clip_score(i, p, self.model, definition="hessel", prefix=self.prefix)])
        return _results(references, scores, errors)

    def record(self) -> dict[str, Any]:
        return {"backend": "clip", **self.model.identity(), "definition": "hessel, divided by its weight 2.5"}


def _results(prompts: Sequence[str], scores: Sequence[float | None], errors: Sequence[str | None]) -> list[ImageResult]:
    return [ImageResult(id=str(i), prompt=p, score=s, failure=e) for i, (p, s, e) in enumerate(zip(prompts, scores, errors))]
