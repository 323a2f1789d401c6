"""The examples run offline with the tiny models: best-of-N keeps the candidate its reward ranks first, and the
RL loop updates the diffusion model's weights with rewards from ``submit``, drawing the next group before it
waits for the last group's scores."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_best_of_n_keeps_the_candidate_the_reward_ranks_first(tiny_models, tmp_path, capsys):
    best_of_n = example("best_of_n")
    assert best_of_n.main(["--tiny", str(tiny_models["sd"].parent), "--n", "3", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "best_of_n.json").read_text())
    assert [r["prompt"] for r in results] == best_of_n._cli.TINY_PROMPTS
    for r in results:
        assert len(r["scores"]) == 3 and all(0 <= s <= 1 for s in r["scores"]) and r["failed"] == 0
        assert r["scores"][r["best"]] == max(r["scores"])
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["000.png", "001.png"]
    assert "candidate" in capsys.readouterr().out


@pytest.mark.slow
def test_the_rl_loop_updates_the_weights_with_rewards_from_submit(tiny_models):
    from diffusers import DDIMScheduler, DiffusionPipeline

    rl = example("rl_loop")
    pipe = DiffusionPipeline.from_pretrained(str(tiny_models["sd"]))
    pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config)
    before = [p.detach().clone() for p in pipe.unet.parameters()]
    events: list[str] = []

    class Reward:
        """Scores each image by its mean brightness; says when a group is submitted and when its scores are read."""

        def __init__(self):
            self.n = 0

        def submit(self, images, prompts):
            self.n += 1
            events.append(f"submit {self.n}")
            future, n = Future(), self.n
            future.set_result(([float(x.mean()) if k else math.nan for k, x in enumerate(images)], {"num_failed": 1}))
            original = future.result
            future.result = lambda *a: (events.append(f"result {n}"), original(*a))[1]
            return future

    log = rl.train(pipe, Reward(), ["a red cube", "two cats"], steps=2, group_size=2, denoising_steps=2)
    # the trainer draws and submits the next group before it waits for the previous group's scores
    assert events == ["submit 1", "submit 2", "result 1", "result 2"]
    assert len(log) == 2 and all(math.isfinite(r["loss"]) and r["failed"] == 1 for r in log)
    changed = [not torch.equal(a, b) for a, b in zip(before, pipe.unet.parameters())]
    assert any(changed)  # a policy-gradient step moved the weights


@pytest.mark.slow
def test_the_rl_loop_runs_offline_with_a_judged_reward(tiny_models, capsys):
    assert example("rl_loop").main(["--tiny", str(tiny_models["sd"].parent), "--steps", "2", "--group-size", "2"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["step"] for r in records] == [1, 2] and all(0 < r["mean_reward"] < 1 for r in records)


def test_best_of_n_never_keeps_a_failed_candidate_whatever_it_was_filled_with():
    """Issue 50: a failed score is no longer NaN by default but its prompt's mean of the others, which ties
    with them where they all scored the same: ``info["failed"]`` keeps it from winning."""
    best_of_n = example("best_of_n")

    class Pipe:
        def __call__(self, prompts, generator, output_type):
            return type("Out", (), {"images": torch.zeros(len(prompts), 3, 4, 4)})()

    def reward(images, prompts):  # candidate 0 failed and was given the others' mean, 0.5
        return [0.5, 0.5, 0.5], {"failed": [True, False, False], "num_failed": 1}

    (result,) = best_of_n.best_of_n(Pipe(), reward, ["a prompt"], 3)
    assert result["best"] == 1 and result["failed"] == 1
