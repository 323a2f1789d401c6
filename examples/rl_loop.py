"""A minimal RL fine-tuning loop with a t2i-reason reward: policy gradient on a diffusion model's weights.

DDPO's recipe (Black et al., 2023) at its smallest: each step draws a group of images per prompt with a
stochastic DDIM sampler (eta = 1), keeping every denoising step's sample and its log-probability; the
reward scores the group; the advantages (each image's reward against its group's mean and spread) weigh
the log-probabilities of the same steps recomputed under the current weights, and one gradient step
follows (REINFORCE; DDPO adds PPO's clipping, Flow-GRPO the same on flow models).

The reward does not block the trainer: ``reward.submit`` returns a future at once, the loop draws the
next group while the judge answers, and collects the previous group's scores to train on it. A failed
score gets its prompt's mean of the others (the default ``on_failure="mean"``): an advantage of 0, no part
in the update; with ``on_failure="nan"`` this loop masks it out itself.

    python examples/rl_loop.py --pipeline <diffusers SD folder> --reward r2i_score --judge openai:gpt-4o \
        --criteria-llm openai:gpt-4o --steps 100 "a prompt" ...

Offline, with the project's tiny random models (a few steps on a CPU, in seconds):

    python examples/rl_loop.py --tiny /tmp/t2ireason-tiny
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cli  # noqa: E402 - the examples' shared options, beside this file


@dataclass
class Group:
    """One step's samples: the prompts, the decoded images and the trajectory behind each."""

    prompts: list[str]
    images: torch.Tensor  # B x C x H x W in [0, 1]
    latents: list[torch.Tensor]  # the sample before each denoising step, then the last one
    timesteps: list[int]
    embeds: torch.Tensor


def ddim_step(scheduler: Any, noise: torch.Tensor, t: int, sample: torch.Tensor, eta: float,
              prev_sample: torch.Tensor | None = None, generator: torch.Generator | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """One DDIM step with noise (eta > 0): the next sample (drawn, or ``prev_sample`` given) and its
    log-probability under the step's Gaussian, per image (DDPO's ``ddim_step_with_logprob``)."""
    prev_t = t - scheduler.config.num_train_timesteps // scheduler.num_inference_steps
    alpha = scheduler.alphas_cumprod[t]
    alpha_prev = scheduler.alphas_cumprod[prev_t] if prev_t >= 0 else scheduler.final_alpha_cumprod
    original = (sample - (1 - alpha) ** 0.5 * noise) / alpha ** 0.5
    variance = (1 - alpha_prev) / (1 - alpha) * (1 - alpha / alpha_prev)
    std = eta * variance ** 0.5
    mean = alpha_prev ** 0.5 * original + (1 - alpha_prev - std ** 2) ** 0.5 * noise
    if prev_sample is None:
        prev_sample = mean + std * torch.randn(sample.shape, generator=generator, dtype=sample.dtype)
    log_prob = (-((prev_sample.detach() - mean) ** 2) / (2 * std ** 2) - torch.log(std) - math.log(math.sqrt(2 * math.pi)))
    return prev_sample, log_prob.mean(dim=tuple(range(1, log_prob.ndim)))


@torch.no_grad()
def draw(pipe: Any, prompts: list[str], steps: int, eta: float, generator: torch.Generator) -> Group:
    """A group of images for ``prompts`` (one each), keeping the trajectory."""
    embeds = pipe.encode_prompt(prompts, "cpu", 1, False)[0]
    pipe.scheduler.set_timesteps(steps)
    unet = pipe.unet
    shape = (len(prompts), unet.config.in_channels, unet.config.sample_size, unet.config.sample_size)
    latents = [torch.randn(shape, generator=generator) * pipe.scheduler.init_noise_sigma]
    timesteps = [int(t) for t in pipe.scheduler.timesteps]
    for t in timesteps:
        noise = unet(latents[-1], t, encoder_hidden_states=embeds).sample
        latents.append(ddim_step(pipe.scheduler, noise, t, latents[-1], eta, generator=generator)[0])
    decoded = pipe.vae.decode(latents[-1] / pipe.vae.config.scaling_factor).sample
    return Group(prompts, (decoded / 2 + 0.5).clamp(0, 1), latents, timesteps, embeds)


def train_on(pipe: Any, optimizer: torch.optim.Optimizer, group: Group, scores: list[float], eta: float) -> float:
    """One policy-gradient step on ``group`` with its rewards: advantages within each prompt's images, the
    log-probability of every stored step recomputed under the current weights. Returns the loss."""
    rewards = torch.tensor(scores, dtype=torch.float32)
    advantages = torch.zeros_like(rewards)
    for prompt in set(group.prompts):  # each prompt's images against each other (GRPO's groups)
        at = torch.tensor([p == prompt for p in group.prompts]) & ~rewards.isnan()
        if at.sum() > 1:
            r = rewards[at]
            advantages[at] = (r - r.mean()) / (r.std() + 1e-6)
    optimizer.zero_grad()
    loss = torch.zeros(())
    for k, t in enumerate(group.timesteps):
        noise = pipe.unet(group.latents[k], t, encoder_hidden_states=group.embeds).sample
        _, log_prob = ddim_step(pipe.scheduler, noise, t, group.latents[k], eta, prev_sample=group.latents[k + 1])
        loss = loss - (advantages * log_prob).mean()  # a NaN reward has advantage 0: no part in the update
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def train(pipe: Any, reward: Any, prompts: list[str], *, steps: int, group_size: int, denoising_steps: int,
          lr: float = 1e-4, eta: float = 1.0, seed: int = 0) -> list[dict[str, Any]]:
    """``steps`` updates of ``pipe.unet``; the reward of each group is collected one step later, the next
    group drawn meanwhile. Returns one record per update (the mean reward, failures, the loss)."""
    pipe.unet.train()
    for module in (pipe.vae, pipe.text_encoder):
        module.requires_grad_(False)
    optimizer = torch.optim.Adam(pipe.unet.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    batch = [p for p in prompts for _ in range(group_size)]
    log, pending = [], None
    for step in range(steps + 1):
        group = draw(pipe, batch, denoising_steps, eta, generator) if step < steps else None
        future = reward.submit(group.images, group.prompts) if group is not None else None  # returns at once
        if pending is not None:  # the previous group's rewards: ready, or nearly, by now
            previous, previous_future = pending
            scores, info = previous_future.result()
            loss = train_on(pipe, optimizer, previous, scores, eta)
            scored = [s for s in scores if not math.isnan(s)]
            log.append({"step": step, "mean_reward": sum(scored) / len(scored) if scored else None,
                        "failed": info["num_failed"], "loss": loss})
        pending = (group, future) if group is not None else None
    return log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _cli.add_args(parser)
    parser.add_argument("--steps", type=int, default=3, help="policy-gradient updates")
    parser.add_argument("--group-size", type=int, default=4, help="images per prompt and step")
    parser.add_argument("--denoising-steps", type=int, default=None, help="DDIM steps per image (2 with --tiny)")
    parser.add_argument("--lr", type=float, default=1e-4)
    args = parser.parse_args(argv)
    run = _cli.settings(parser, args, tiny_reward="vqascore")

    from diffusers import DDIMScheduler, DiffusionPipeline

    from t2ireason import load_reward

    torch.manual_seed(args.seed)
    pipe = DiffusionPipeline.from_pretrained(run["pipeline"])
    pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config)
    with load_reward(run["reward"], **run["reward_kwargs"]) as reward:
        log = train(pipe, reward, run["prompts"], steps=args.steps, group_size=args.group_size,
                    denoising_steps=args.denoising_steps or (2 if args.tiny else 20), lr=args.lr, seed=args.seed)
    for record in log:
        print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
