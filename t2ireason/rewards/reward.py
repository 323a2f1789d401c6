"""A reward as RL fine-tuning loops call one: ``scores, info = reward(images, prompts, metadata)``.

The convention of DDPO (ddpo-pytorch, trl's ``DDPOTrainer``), DanceGRPO and their kin: one float per image on
0-1, and a dict of details; Flow-GRPO's own shape (a dict of named score lists) is :meth:`Reward.flow_grpo`
(:mod:`.trainers`).
:meth:`Reward.submit` returns a ``concurrent.futures.Future`` of the same pair at once, so the trainer
draws its next group while the judge answers; at most ``max_in_flight`` submitted calls are unfinished (a
further ``submit`` waits for one), scored by ``workers`` threads (one by default: one step at a time, the
next queued).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..images import _is_tensor, image_batch, load_images
from .gathering import Gathering
from .scorers import Scorer

__all__ = ["Reward", "Component", "ON_FAILURE"]

#: what an image whose score failed gets: ``"mean"`` (the default), the mean of its prompt's other images scored in
#: the same call, so that in its prompt's group (GRPO's, DDPO's per-prompt normalisation) its advantage is 0, no push
#: either way (:func:`_on_failure` says what a group with no image scored gets); ``"nan"``, for a loop that masks
#: NaN itself (neither Flow-GRPO's trainer nor trl's ``DDPOTrainer`` does: one NaN makes its group's advantages NaN,
#: or the whole batch's under global normalisation); ``"none"``; ``"zero"`` (a push down)
ON_FAILURE = ("none", "nan", "zero", "mean")
#: what an image gets under ``"mean"`` where nothing at all was scored in its call: the middle of the 0-1 scale
#: (every image of the call the same value: per prompt and over the batch, advantages of 0)
SCALE_MIDDLE = 0.5


@dataclass(frozen=True)
class Component:
    """One weighted part of a reward: a metric (``scorer``), or one ``part`` of its score."""

    key: str  # as named: "r2i_score", "prism_score/aesthetics"
    scorer: Scorer
    part: str | None
    weight: float


class Reward:
    """``scores, info = reward(images, prompts, metadata=None)``: the weighted sum of its components'
    per-image scores (one component, weight 1: the metric's own score), see :func:`~t2ireason.load_reward`.

    ``images``: a torch tensor ``B x C x H x W`` (float in ``value_range``, or uint8; on any device), a
    numpy array ``B x H x W x C``, or a list of tensors, arrays, PIL images or paths. ``prompts``: one
    string per image. ``metadata``: None, one dict for every image, or one dict (or None) per image,
    holding the benchmark row the image was drawn for (its criteria) or the fields its criteria are made
    from; a dict keyed by a component's metric name (``{"r2i_score": row}``) is that metric's alone.

    ``info``: ``components`` (each component's per-image scores, after ``on_failure``), ``failed`` (per
    image, whether any component failed), ``num_failed``, ``num_reasks``, ``per_image`` (each image's
    failure, its components' raw scores, ``filled``: what each failed component was given instead, and each
    metric's full result), ``judge`` (each metric's judge
    identity), ``criteria`` (per metric, how many rows were given, read from the cache, made, failed),
    ``weights`` and ``on_failure``. A judge that cannot answer at all raises
    (:class:`~t2ireason.judges.JudgeUnavailable`), from the call or from the future's ``result()``.

    Arrays and host tensors given to :meth:`submit` are read by the worker thread, not copied: do not
    change them in place before the future is done (a tensor on an accelerator is copied there, at once).
    """

    def __init__(self, components: Sequence[Component], *, on_failure: str = "mean",
                 value_range: tuple[float, float] = (0.0, 1.0), max_in_flight: int = 2, workers: int = 1,
                 owned: Sequence[Any] = ()):
        if on_failure not in ON_FAILURE:
            raise ValueError(f"on_failure must be one of {', '.join(ON_FAILURE)}, got {on_failure!r}")
        if not components:
            raise ValueError("a reward needs at least one component")
        for c in components:
            if not (isinstance(c.weight, (int, float)) and math.isfinite(c.weight) and c.weight >= 0):
                raise ValueError(f"the weight of {c.key!r} must be a finite number >= 0, got {c.weight!r}")
        if not any(c.weight for c in components):
            raise ValueError("the weights of a reward cannot all be 0")
        for name, value in (("max_in_flight", max_in_flight), ("workers", workers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        lo, hi = value_range
        if not hi > lo:
            raise ValueError(f"value_range must be (low, high) with high > low, got {value_range!r}")
        self.components = list(components)
        self.scorers = list(dict.fromkeys(c.scorer for c in components))
        self.on_failure = on_failure
        self.value_range = (float(lo), float(hi))
        self.max_in_flight = max_in_flight
        self._owned = list(owned)  # what close() releases besides the scorers' own judges (criteria LLMs)
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="t2ireason-reward")
        self._slots = threading.BoundedSemaphore(max_in_flight)

    def __repr__(self) -> str:
        return f"Reward({' + '.join(f'{c.weight:g} * {c.key}' for c in self.components)}, on_failure={self.on_failure!r})"

    @property
    def criteria(self) -> dict[str, Any]:
        """Per metric that judges against rows, its :class:`~.criteria.Criteria`: ``counts``, and
        ``dataset()``, the rows made or read from the cache so far (what the judge was asked against)."""
        return {s.name: s.criteria for s in self.scorers if hasattr(s, "criteria")}

    # -- calling -----------------------------------------------------------------------------------------

    def __call__(self, images: Any, prompts: Sequence[str], metadata: Any = None, **trainer: Any
                 ) -> tuple[list[Any], dict[str, Any]]:
        if trainer:  # another trainer's call shape (Flow-GRPO's only_strict=...): say which adapter takes it
            raise TypeError(f"a Reward is called as reward(images, prompts, metadata); it takes no "
                            f"{', '.join(map(repr, trainer))}: for Flow-GRPO's reward_fn(images, prompts, metadata, "
                            "only_strict=...) pass reward.flow_grpo()")
        return self._score(images, prompts, metadata)

    def flow_grpo(self) -> Any:
        """This reward in Flow-GRPO's call shape: ``details, info = fn(images, prompts, metadata,
        only_strict=True)``, ``details["avg"]`` the reward (:class:`~.trainers.FlowGRPOReward`)."""
        from .trainers import FlowGRPOReward

        return FlowGRPOReward(self)

    def trl_ddpo_async(self) -> Any:
        """This reward as trl's ``DDPOTrainer`` takes one with ``async_reward_computation=True``: a pair of
        futures (:class:`~.trainers.TrlDDPOAsyncReward`); synchronously, and in ddpo-pytorch, the reward itself."""
        from .trainers import TrlDDPOAsyncReward

        return TrlDDPOAsyncReward(self)

    def submit(self, images: Any, prompts: Sequence[str], metadata: Any = None) -> Future:
        """A ``Future`` of ``reward(images, prompts, metadata)``, returned at once; waits first while
        ``max_in_flight`` submitted calls are unfinished."""
        prompts, held = list(prompts), _Held(images)
        self._slots.acquire()
        try:
            future = self._executor.submit(self._score, held, prompts, metadata)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _: self._slots.release())
        return future

    def close(self) -> None:
        """Wait for what was submitted, then release the judges, models and criteria LLMs loaded for it."""
        self._executor.shutdown(wait=True)
        for scorer in self.scorers:
            scorer.close()
        for thing in self._owned:
            thing.close()

    def __enter__(self) -> Reward:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- scoring -----------------------------------------------------------------------------------------

    def _score(self, images: Any, prompts: Sequence[str], metadata: Any) -> tuple[list[Any], dict[str, Any]]:
        if isinstance(images, _Held):
            images = images.get()
        prompts = list(prompts)
        for i, p in enumerate(prompts):
            if not isinstance(p, str):
                raise ValueError(f"prompts[{i}] is a {type(p).__name__}, not a string")
        # images outside value_range mean a wrong value_range (a decoder's [-1, 1] read as [0, 1]): refused,
        # rather than every image scored as a failure and the loop training on nothing
        pictures = image_batch(images, value_range=self.value_range, out_of_range="raise")
        if len(pictures) != len(prompts):
            raise ValueError(f"got {len(pictures)} images but {len(prompts)} prompts")
        metas = _metadata(metadata, len(prompts))
        loaded = load_images(pictures)  # each image read once, shared by every metric's requests
        results = self._run(loaded, prompts, metas)
        return self._combine(prompts, results)

    def _run(self, images: list[Any], prompts: list[str], metas: list[dict[str, Any]]) -> dict[Scorer, list]:
        """Each metric's results; several metrics score in their own threads, their requests to a shared
        judge gathered into one batch per round (:class:`~.gathering.Gathering`)."""
        def own(scorer: Scorer) -> list[dict[str, Any]]:
            return [m.get(scorer.name) if isinstance(m.get(scorer.name), dict) else m for m in metas]

        if len(self.scorers) == 1:
            (scorer,) = self.scorers
            return {scorer: scorer.run(images, prompts, own(scorer), scorer.judge)}
        by_judge: dict[int, list[Scorer]] = {}
        for s in self.scorers:
            by_judge.setdefault(id(s.judge), []).append(s)
        gatherings = {key: Gathering(group[0].judge, len(group)) for key, group in by_judge.items()
                      if len(group) > 1 and group[0].judge is not None}

        def run(scorer: Scorer) -> list:
            gathering = gatherings.get(id(scorer.judge))
            try:
                return scorer.run(images, prompts, own(scorer), gathering or scorer.judge)
            finally:
                if gathering is not None:
                    gathering.finished()

        with ThreadPoolExecutor(len(self.scorers), thread_name_prefix="t2ireason-metric") as pool:
            futures = {s: pool.submit(run, s) for s in self.scorers}
        return {s: f.result() for s, f in futures.items()}  # the first metric's exception, if any, is raised

    def _combine(self, prompts: list[str], results: dict[Scorer, list]) -> tuple[list[Any], dict[str, Any]]:
        n = len(prompts)
        raw = {c.key: [c.scorer.value(r, c.part) for r in results[c.scorer]] for c in self.components}
        fills = {key: _on_failure(values, self.on_failure, prompts) for key, values in raw.items()}
        filled = {key: values for key, (values, _) in fills.items()}
        scores: list[Any] = []
        for i in range(n):
            parts = [(c.weight, filled[c.key][i]) for c in self.components]
            scores.append(None if any(v is None for _, v in parts) else math.fsum(w * v for w, v in parts))
        failed = [any(values[i] is None for values in raw.values()) for i in range(n)]
        per_image = []
        for i in range(n):
            failures = [f"{s.name}: {results[s][i].failure}" for s in self.scorers if results[s][i].failure]
            per_image.append({"prompt": prompts[i], "failure": "; ".join(failures) or None,
                              "components": {key: values[i] for key, values in raw.items()},
                              # what each failed component was given instead, and why that value
                              "filled": {key: hows[i] for key, (_, hows) in fills.items() if hows[i]},
                              "results": {s.name: results[s][i].to_dict() for s in self.scorers}})
        info = {
            "components": filled,
            "failed": failed,
            "num_failed": sum(failed),
            "num_reasks": sum(r.reasks for rs in results.values() for r in rs),
            "per_image": per_image,
            "judge": {s.name: s.record() for s in self.scorers},
            "criteria": {name: dict(c.counts) for name, c in self.criteria.items()},
            "weights": {c.key: c.weight for c in self.components},
            "on_failure": self.on_failure,
        }
        return scores, info


def _on_failure(values: list[float | None], policy: str, prompts: Sequence[str]
                ) -> tuple[list[Any], list[str | None]]:
    """The values with each failure (None) replaced as ``policy`` says, and per image how (None: scored).

    ``"mean"``: the mean of the scored images of the same prompt in this call (the trainers' groups are the
    images of one prompt), so the group's mean is unchanged and the failed image's advantage in it is 0; a
    prompt none of whose images scored: every one of them the mean of the call's scored images (equal values:
    advantages of 0 in their group, and about 0 over the batch); nothing scored at all: :data:`SCALE_MIDDLE`."""
    if policy == "none":
        return list(values), [None] * len(values)
    if policy in ("nan", "zero"):
        fill = math.nan if policy == "nan" else 0.0
        return [fill if v is None else v for v in values], [policy if v is None else None for v in values]
    scored = [v for v in values if v is not None]
    by_prompt: dict[str, list[float]] = {}
    for p, v in zip(prompts, values):
        if v is not None:
            by_prompt.setdefault(p, []).append(v)
    out: list[Any] = []
    how: list[str | None] = []
    for p, v in zip(prompts, values):
        if v is not None:
            out.append(v)
            how.append(None)
        elif by_prompt.get(p):
            out.append(math.fsum(by_prompt[p]) / len(by_prompt[p]))
            how.append(f"the mean of its prompt's {len(by_prompt[p])} image(s) scored in this call")
        elif scored:
            out.append(math.fsum(scored) / len(scored))
            how.append(f"no image of its prompt scored: the mean of the {len(scored)} image(s) scored in this call")
        else:
            out.append(SCALE_MIDDLE)
            how.append(f"no image of this call scored: the middle of the scale, {SCALE_MIDDLE}")
    return out, how


def _metadata(metadata: Any, n: int) -> list[dict[str, Any]]:
    """One dict per image from what was given: None, one dict for all, or one dict (or None) per image."""
    if metadata is None:
        return [{} for _ in range(n)]
    if isinstance(metadata, dict):
        return [metadata] * n
    metadata = list(metadata)
    if len(metadata) != n:
        raise ValueError(f"got {len(metadata)} metadata entries for {n} images: give one per image, one dict for "
                         "all, or None")
    for i, m in enumerate(metadata):
        if m is not None and not isinstance(m, dict):
            raise ValueError(f"metadata[{i}] is a {type(m).__name__}; give a dict (a benchmark row, or fields) or None")
    return [m or {} for m in metadata]


class _Held:
    """The images as :meth:`Reward.submit` keeps them: a tensor (or a list's tensors) on an accelerator copied
    there at once, which queues the copy on the device and returns, so the caller may reuse its memory; the
    worker waits for the copy (an event on the caller's stream) before reading it. Anything else as it is."""

    def __init__(self, images: Any):
        self.event = None
        if _on_device(images):
            images = self._copy(images)
        elif isinstance(images, (list, tuple)) and any(_on_device(x) for x in images):
            images = [self._copy(x) if _on_device(x) else x for x in images]
        self.images = images

    def _copy(self, tensor: Any) -> Any:
        import torch

        copy = tensor.detach().clone()
        if tensor.device.type == "cuda":
            self.event = torch.cuda.Event()
            self.event.record()
        return copy

    def get(self) -> Any:
        if self.event is not None:
            self.event.synchronize()
        return self.images


def _on_device(x: Any) -> bool:
    return _is_tensor(x) and x.device.type != "cpu"
