"""What the examples' command lines share: the model, reward and judge options, and ``--tiny``, which builds
(or reuses) the project's tiny random models in a folder and uses them, offline."""

from __future__ import annotations

import argparse
import json
from typing import Any

#: the tiny runs' prompts: in no benchmark
TINY_PROMPTS = ["a red cube to the left of a blue sphere", "three cats asleep on a windowsill"]


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompts", nargs="*", help="the prompts (default with --tiny: two of the examples' own)")
    parser.add_argument("--tiny", default=None, help="build (or reuse) the tiny random models in this folder and use them")
    parser.add_argument("--pipeline", default=None, help="a diffusers pipeline: Hub id or folder")
    parser.add_argument("--reward", default=None, help="a reward name, or a JSON object of names to weights")
    parser.add_argument("--judge", default=None, help="the judge spec (default: each metric's preset's)")
    parser.add_argument("--criteria-llm", default=None, help="the LLM that makes a prompt's criteria")
    parser.add_argument("--clip-model", default=None, help="CLIPScore's model")
    parser.add_argument("--seed", type=int, default=0)


def settings(parser: argparse.ArgumentParser, args: argparse.Namespace, tiny_reward: str) -> dict[str, Any]:
    """``pipeline``, ``prompts``, ``reward`` (a name or a mapping) and ``reward_kwargs`` (for ``load_reward``)
    from the options; with ``--tiny`` the tiny models fill what is not given (``tiny_reward`` the reward)."""
    kwargs: dict[str, Any] = {"judge": args.judge, "criteria_llm": args.criteria_llm, "model": args.clip_model}
    if args.tiny:
        from t2ireason.testing import build_all

        models = build_all(args.tiny)
        args.pipeline = args.pipeline or str(models["sd"])
        kwargs = {"judge": args.judge or f"hf:{models['vlm']}", "judge_kwargs": {"device": "cpu"},
                  "criteria_llm": args.criteria_llm, "model": args.clip_model or str(models["clip"])}
        args.reward = args.reward or tiny_reward
        args.prompts = args.prompts or TINY_PROMPTS
    if not args.pipeline or not args.reward or not args.prompts:
        parser.error("give --pipeline, --reward and prompts (or --tiny FOLDER)")
    reward = json.loads(args.reward) if args.reward.lstrip().startswith("{") else args.reward
    return {"pipeline": args.pipeline, "prompts": args.prompts, "reward": reward, "reward_kwargs": kwargs}
