"""A reward in the call shapes of the trainers that take one, where they differ from :class:`~.reward.Reward`'s own.

Checked against the trainers' own code:

- Flow-GRPO (``scripts/train_sd3.py`` of yifan123/flow_grpo) submits ``reward_fn(images, prompts, prompt_metadata,
  only_strict=True)`` (``only_strict=False`` when it evaluates) to a thread pool of 8, and reads a dict of named
  score lists: ``rewards["avg"]`` is the reward it trains on, and every key is turned into a tensor and gathered
  across processes. :meth:`Reward.flow_grpo` gives that shape: ``avg`` the reward, beside each component's scores
  under its name; ``only_strict`` (GenEval's) changes nothing here.
- DDPO as kvablack/ddpo-pytorch and trl's ``DDPOTrainer`` (synchronous) call it, ``rewards, info =
  reward_fn(images, prompts, prompt_metadata)`` with tuples of prompts and metadata, takes a :class:`Reward` as it
  is. trl's ``async_reward_computation`` expects a pair of futures instead (it calls ``.result()`` on each):
  :meth:`Reward.trl_ddpo_async` gives that shape.

Every call goes through the reward's own :meth:`~.reward.Reward.submit`, so a trainer's pool of threads scores at most
``workers`` calls at once and never more than ``max_in_flight`` wait (a local judge is not asked from 8 threads).
A failed score is filled as ``on_failure`` says (by default its prompt's mean of the others: no push either way in
its group); with ``on_failure="none"`` it is NaN in these shapes (a tensor takes no None), which neither trainer
masks.
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from typing import Any

__all__ = ["FlowGRPOReward", "TrlDDPOAsyncReward"]


def _numbers(values: list[Any]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


class FlowGRPOReward:
    """``details, info = fn(images, prompts, metadata, only_strict=True)``: ``details["avg"]`` the reward, one float
    per image, and each component's scores under its name (``details["r2i_score"]``...)."""

    def __init__(self, reward: Any):  # a Reward (not imported: it imports this module)
        self.reward = reward

    def __call__(self, images: Any, prompts: Any, metadata: Any = None, only_strict: bool = True
                 ) -> tuple[dict[str, list[float]], dict[str, Any]]:
        scores, info = self.reward.submit(images, prompts, metadata).result()
        details = {key: _numbers(values) for key, values in info["components"].items()}
        details["avg"] = _numbers(scores)
        return details, info

    def __repr__(self) -> str:
        return f"FlowGRPOReward({self.reward!r})"


class TrlDDPOAsyncReward:
    """``scores_future, info_future = fn(images, prompts, metadata)``, as trl's ``DDPOTrainer`` with
    ``async_reward_computation=True`` reads a reward."""

    def __init__(self, reward: Any):  # a Reward (not imported: it imports this module)
        self.reward = reward

    def __call__(self, images: Any, prompts: Any, metadata: Any = None) -> tuple[Future, Future]:
        both = self.reward.submit(images, prompts, metadata)
        scores: Future = Future()
        info: Future = Future()

        def split(done: Future) -> None:
            try:
                s, i = done.result()
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on either future
                scores.set_exception(e)
                info.set_exception(e)
            else:
                scores.set_result(_numbers(s))
                info.set_result(i)

        both.add_done_callback(split)
        return scores, info

    def __repr__(self) -> str:
        return f"TrlDDPOAsyncReward({self.reward!r})"
