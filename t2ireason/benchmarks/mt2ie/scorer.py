"""The MT2IE agent's scorer (section 4, appendices A and C): VQAScore, or VQA accuracy over questions the
judge writes and validates, or another ranking metric (CLIPScore, DSG, VIEScore, TIFA), and optionally each image's
aesthetic score; beside the agent's own, the ranking metrics the paper compares it with (Tables 3 and 5: VQAScore,
CLIPScore, VIEScore; DSG and TIFA too) scored on the same images (:class:`RankingMetric`); one failure never sinks
a batch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ...alignment import vqascore
from ...evaluation_metrics import MetricScorer
from ...images import as_images
from ...judges import ChatRequest, JudgeUnavailable
from ...parsing import ask_structured
from ...prompts import render
from .protocol import TEMPLATES, parse_aesthetic, parse_choice, parse_questions, parse_yes_no

__all__ = ["Scorer", "Scored", "RankingMetric", "batch_or_each"]


def batch_or_each(fn: Callable[[list], list], items: list, *,
                  fatal: tuple[type[BaseException], ...] = ()) -> list[tuple[Any, str | None]]:
    """``fn`` over the whole batch; if it fails, item by item, so one failure does not sink the others.
    An exception of ``fatal`` (the model cannot be used at all: a refused key, an endpoint down) is raised,
    never recorded as each item's failure nor asked again item by item."""
    if not items:
        return []
    try:
        values = list(fn(items))
        if len(values) == len(items):
            return [(v, None) for v in values]
        error = f"got {len(values)} results for {len(items)} inputs"
    except fatal:
        raise
    except Exception as e:  # noqa: BLE001 - isolated and recorded below, item by item
        error = f"{type(e).__name__}: {e}"
    if len(items) == 1:
        return [(None, error)]
    out = []
    for item in items:
        try:
            out.append((fn([item])[0], None))
        except fatal:
            raise
        except Exception as e:  # noqa: BLE001 - recorded as the row's failure
            out.append((None, f"{type(e).__name__}: {e}"))
    return out


@dataclass
class Scored:
    """One image's scores (None where not made), the judge's raw replies about it, and why it failed."""

    score: float | None = None
    aesthetic: float | None = None
    replies: tuple[str, ...] = ()
    failure: str | None = None
    #: the ranking metrics scored beside the agent's: ``{"metric", "score", "failure"}`` each
    metric_scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RankingMetric:
    """A metric of :mod:`t2ireason.evaluation_metrics` scoring the agent's images: its scorer, its model (loaded)
    and its options. Called on a batch, it gives each image's :class:`~t2ireason.results.ImageResult` or the
    error that kept it from one (a judge that cannot answer at all stops the run: nothing recorded as scored)."""

    scorer: MetricScorer
    model: Any
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.scorer.name

    def __call__(self, images: list, prompts: list[str]) -> list[tuple[Any, str | None]]:
        rows = [{"id": str(k), "prompt": p} for k, p in enumerate(prompts)]
        return batch_or_each(lambda pairs: self.scorer.score([r for r, _ in pairs], [i for _, i in pairs], self.model,
                                                             **self.options),
                             list(zip(rows, images)), fatal=(JudgeUnavailable,))


def _outcome(result: Any, error: str | None) -> tuple[float | None, str | None]:
    """A metric's score of one image and, where it has none, why."""
    if error is not None:
        return None, error
    return result.score, None if result.score is not None else (result.failure or "no score")


class Scorer:
    """Scores a batch of (image, prompt) pairs with one judge; questions are written once per prompt. ``scoring``:
    ``"vqascore"``, ``"vqa_accuracy"``, or a :class:`RankingMetric` the agent scores with; ``metrics``: the ranking
    metrics scored beside it, on the same images."""

    def __init__(self, judge: Any, scoring: str | RankingMetric, aesthetic: bool, max_reasks: int,
                 metrics: Sequence[RankingMetric] = ()):
        self.judge, self.scoring, self.aesthetic, self.max_reasks = judge, scoring, aesthetic, max_reasks
        self.metrics = list(metrics)
        self._questions: dict[str, tuple[list[dict] | None, list[str], str | None]] = {}

    def __call__(self, images: list, prompts: list[str]) -> list[Scored]:
        images = as_images(images)  # one JudgeImage per image, shared by all its requests
        if isinstance(self.scoring, RankingMetric):
            out = self._metric(images, prompts)
        else:
            out = self._vqascore(images, prompts) if self.scoring == "vqascore" else self._vqa_accuracy(images, prompts)
        for metric in self.metrics:
            for s, (result, error) in zip(out, metric(images, prompts)):
                score, failure = _outcome(result, error)
                s.metric_scores.append({"metric": metric.name, "score": score, "failure": failure})
                s.replies += tuple(result.replies) if result is not None else ()
        if self.aesthetic:
            requests = [ChatRequest.simple(render(TEMPLATES, "aesthetic_user"), image,
                                           system_prompt=render(TEMPLATES, "aesthetic_system")) for image in images]
            for s, a in zip(out, self._ask(requests, parse_aesthetic)):
                s.aesthetic, s.replies = a.value, s.replies + tuple(a.texts)
                if not a.ok:
                    s.failure = "; ".join(filter(None, [s.failure, f"aesthetic score: {a.error}"]))
        return out

    def _ask(self, requests: list[ChatRequest], parse: Any) -> list:
        return ask_structured(self.judge, requests, parse, max_reasks=self.max_reasks) if requests else []

    def _metric(self, images: list, prompts: list[str]) -> list[Scored]:
        out = []
        for result, error in self.scoring(images, prompts):
            score, failure = _outcome(result, error)
            replies = tuple(result.replies) if result is not None else ()
            out.append(Scored(score=score, replies=replies,
                              failure=None if failure is None else f"{self.scoring.scorer.pretty_name} failed: {failure}"))
        return out

    def _vqascore(self, images: list, prompts: list[str]) -> list[Scored]:
        out = []
        for p, error in batch_or_each(lambda pairs: vqascore([i for i, _ in pairs], [q for _, q in pairs], self.judge),
                              list(zip(images, prompts))):
            if error is None and not (p is not None and math.isfinite(p)):
                error = f"the judge gave a non-finite probability ({p})"
            out.append(Scored(score=p) if error is None else Scored(failure=f"VQAScore failed: {error}"))
        return out

    def _write_questions(self, prompts: list[str]) -> None:
        """Generate (system prompt of appendix C, "Image description: <prompt>") and validate
        questions for prompts not seen yet; keep the validated ones."""
        todo = [p for p in dict.fromkeys(prompts) if p not in self._questions]
        generated = self._ask([ChatRequest.simple(f"Image description: {p}",
                                                  system_prompt=render(TEMPLATES, "question_generation"))
                               for p in todo], parse_questions)
        checks = [(p, q) for p, g in zip(todo, generated) if g.ok for q in g.value]
        validated = iter(self._ask([ChatRequest.simple(render(TEMPLATES, "question_validation", prompt=p,
                                                              question=q["question"])) for p, q in checks],
                                   parse_yes_no))
        for p, g in zip(todo, generated):
            if not g.ok:
                self._questions[p] = (None, g.texts, f"question generation: {g.error}")
                continue
            results = [next(validated) for _ in g.value]
            replies = g.texts + [t for v in results for t in v.texts]
            error = next((f"question validation: {v.error}" for v in results if not v.ok), None)
            kept = [q for q, v in zip(g.value, results) if v.ok and v.value]
            if error is None and not kept:
                error = "no generated question passed validation"
            self._questions[p] = (None if error else kept, replies, error)

    def _vqa_accuracy(self, images: list, prompts: list[str]) -> list[Scored]:
        self._write_questions(prompts)
        asked = [(k, q) for k, p in enumerate(prompts) for q in (self._questions[p][0] or [])]
        answers = self._ask([ChatRequest.simple(images[k], render(TEMPLATES, "question_answering",
                                                                  question=q["question"],
                                                                  choices=", ".join(q["choices"])))
                             for k, q in asked],
                            [partial(parse_choice, choices=q["choices"]) for _, q in asked])
        by_image = defaultdict(list)
        for (k, q), a in zip(asked, answers):
            by_image[k].append((q, a))
        out = []
        for k, p in enumerate(prompts):
            _, replies, error = self._questions[p]
            got = by_image[k]
            replies = tuple(replies) + tuple(t for _, a in got for t in a.texts)
            error = error or next((f"question answering: {a.error}" for _, a in got if not a.ok), None)
            if error:
                out.append(Scored(replies=replies, failure=f"VQA accuracy failed: {error}"))
            else:
                out.append(Scored(score=sum(a.value == q["answer"] for q, a in got) / len(got), replies=replies))
        return out
