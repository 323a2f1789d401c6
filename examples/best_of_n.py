"""Best-of-N: draw N candidates for each prompt, keep the one the reward ranks first.

The inference-time scaling the papers' follow-ups use: a judge picks among a model's own samples. Any reward
works (``t2ireason.load_reward``): a judged metric with its criteria made from the prompt, or a weighted sum.
The images go to the reward as the pipeline returns them (a ``B x C x H x W`` tensor in [0, 1]): no file, no
PNG round trip where the judge does not need one.

    python examples/best_of_n.py --pipeline stabilityai/stable-diffusion-2-1 --n 8 \
        --reward r2i_score --judge openai:gpt-4o --criteria-llm openai:gpt-4o --out best/ "a prompt" ...

Offline, with the project's tiny random models (meaningless pictures, real code paths; seconds on a CPU):

    python examples/best_of_n.py --tiny /tmp/t2ireason-tiny --out best/
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cli  # noqa: E402 - the examples' shared options, beside this file


def best_of_n(pipe: Any, reward: Any, prompts: list[str], n: int, *, seed: int = 0,
              **call_kwargs: Any) -> list[dict[str, Any]]:
    """For each prompt, ``n`` images drawn with seeds ``seed .. seed + n - 1`` and scored together (one
    batch: the prompt's criteria made once); the best by the reward (a failed score never wins: whatever
    ``on_failure`` filled it with, ``info["failed"]`` says it failed)."""
    out = []
    for prompt in prompts:
        generators = [torch.Generator().manual_seed(seed + k) for k in range(n)]
        images = pipe([prompt] * n, generator=generators, output_type="pt", **call_kwargs).images
        scores, info = reward(images, [prompt] * n)
        failed = info["failed"]
        ranked = sorted(range(n), key=lambda k: (failed[k], 0.0 if failed[k] else -scores[k]))
        best = ranked[0]
        out.append({"prompt": prompt, "best": best, "seed": seed + best, "scores": scores,
                    "failed": info["num_failed"], "image": images[best]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _cli.add_args(parser)
    parser.add_argument("--n", type=int, default=4, help="candidates per prompt")
    parser.add_argument("--steps", type=int, default=None, help="inference steps (default: the pipeline's; 2 with --tiny)")
    parser.add_argument("--out", default=None, help="write each prompt's best image and a summary here")
    args = parser.parse_args(argv)
    run = _cli.settings(parser, args, tiny_reward='{"vqascore": 0.5, "clip_score": 0.5}')
    args.steps = args.steps or (2 if args.tiny else None)

    from diffusers import DiffusionPipeline

    from t2ireason import load_reward

    pipe = DiffusionPipeline.from_pretrained(run["pipeline"])
    pipe.set_progress_bar_config(disable=True)
    call = {"num_inference_steps": args.steps} if args.steps else {}
    with load_reward(run["reward"], **run["reward_kwargs"]) as reward:
        results = best_of_n(pipe, reward, run["prompts"], args.n, seed=args.seed, **call)
    for r in results:
        shown = ", ".join(f"{s:.4g}" for s in r["scores"])
        print(f"{r['prompt']!r}: candidate {r['best']} (seed {r['seed']}) of [{shown}]")
    if args.out:
        from t2ireason.images import as_image

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for k, r in enumerate(results):
            as_image(r.pop("image")).image.save(out / f"{k:03d}.png")
        (out / "best_of_n.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"best images and scores -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
