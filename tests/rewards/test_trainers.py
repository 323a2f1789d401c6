"""A reward in each trainer's own call shape, as each trainer's code calls it and reads what it returns (issue 43:
Flow-GRPO's keyword and dict of named score lists raised on a Reward; DDPO took it as it is).

The call sites, read in the trainers' code: Flow-GRPO's scripts/train_sd3.py (yifan123/flow_grpo), kvablack's
ddpo-pytorch scripts/train.py, trl's DDPOTrainer.compute_rewards (synchronous and async_reward_computation)."""

from __future__ import annotations

import math
import time
from concurrent import futures

import pytest
import torch

from .scripted import CountingLLM, r2i_judge

PROMPTS = ["one more apple than the two on the plate", "a clock showing a quarter past three"]
EXPECTED = (9 * 0.5 + 2 * 1) / 11


def _reward(tmp_path, **kwargs):
    from t2ireason import load_reward

    return load_reward("r2i_score", judge=r2i_judge(), criteria_llm=CountingLLM(),
                       criteria_cache=tmp_path / "criteria.sqlite", **kwargs)


def _batch():
    """What a pipeline called with output_type="pt" gives: B x C x H x W floats in [0, 1]; prompts and metadata
    zipped from a prompt function (tuples) or collated by a data loader (lists)."""
    return torch.rand(4, 3, 16, 16), (PROMPTS[0], PROMPTS[0], PROMPTS[1], PROMPTS[1])


def test_flow_grpo_call_shape(tmp_path):
    images, prompts = _batch()
    prompt_metadata = [{} for _ in prompts]  # its collate_fn: one metadata dict per prompt, a list
    with _reward(tmp_path) as reward:
        with pytest.raises(TypeError, match=r"takes no 'only_strict': for Flow-GRPO.*reward.flow_grpo\(\)"):
            reward(images, prompts, prompt_metadata, only_strict=True)
        reward_fn = reward.flow_grpo()
        executor = futures.ThreadPoolExecutor(max_workers=8)
        # train: rewards = executor.submit(reward_fn, images, prompts, prompt_metadata, only_strict=True)
        rewards = executor.submit(reward_fn, images, list(prompts), prompt_metadata, only_strict=True)
        time.sleep(0)
        rewards, reward_metadata = rewards.result()
        sample_rewards = {key: torch.as_tensor(value, device="cpu").float() for key, value in rewards.items()}
        assert sample_rewards["avg"].shape == (4,)
        assert sample_rewards["avg"].tolist() == pytest.approx([EXPECTED] * 4)
        assert sample_rewards["r2i_score"].tolist() == pytest.approx([EXPECTED] * 4)
        # it repeats "avg" along the time steps and keeps the original as "ori_avg"
        ori_avg = sample_rewards["avg"]
        assert sample_rewards["avg"].unsqueeze(1).repeat(1, 10).shape == (4, 10) and ori_avg.shape == (4,)
        # eval: executor.submit(reward_fn, images, prompts, prompt_metadata, only_strict=False), every key gathered
        evaluated, _ = executor.submit(reward_fn, images, list(prompts), prompt_metadata, only_strict=False).result()
        assert {k: len(v) for k, v in evaluated.items()} == {"r2i_score": 4, "avg": 4}
        assert isinstance(reward_metadata, dict) and reward_metadata["num_failed"] == 0
        executor.shutdown()


def test_flow_grpo_weighted_components_and_a_failed_image_as_nan(tmp_path):
    from t2ireason import load_reward
    from t2ireason.judges import Reply
    from t2ireason.judges.scripted import ScriptedJudge

    reward = load_reward({"r2i_score": 0.5, "r2i_score/reasoning": 0.5}, judge=r2i_judge(),
                         criteria_llm=CountingLLM(), criteria_cache=tmp_path / "c.sqlite")
    with reward:
        details, _ = reward.flow_grpo()(*_batch(), [{}] * 4, only_strict=True)
    assert set(details) == {"r2i_score", "r2i_score/reasoning", "avg"}
    assert details["avg"] == pytest.approx([0.5 * a + 0.5 * b for a, b in zip(details["r2i_score"],
                                                                                details["r2i_score/reasoning"])])
    failing = ScriptedJudge([Reply(text="", model="m", sampling={}, error="HTTP 500", transient=True)])
    with load_reward("r2i_score", judge=failing, criteria_llm=CountingLLM(), criteria_cache=tmp_path / "c.sqlite",
                     on_failure="none") as reward:
        details, _ = reward.flow_grpo()(torch.rand(1, 3, 8, 8), [PROMPTS[0]], [{}], only_strict=True)
    assert math.isnan(details["avg"][0]) and torch.as_tensor(details["avg"]).isnan().all()  # a tensor takes no None


def test_ddpo_pytorch_call_shape(tmp_path):
    images, prompts = _batch()
    prompt_metadata = tuple({} for _ in prompts)  # prompts, prompt_metadata = zip(*[prompt_fn() ...])
    with _reward(tmp_path) as reward_fn:
        executor = futures.ThreadPoolExecutor(max_workers=2)
        rewards = executor.submit(reward_fn, images, prompts, prompt_metadata)
        time.sleep(0)
        rewards, reward_metadata = rewards.result()
        tensor = torch.as_tensor(rewards, device="cpu")
        executor.shutdown()
    assert tensor.shape == (4,) and tensor.tolist() == pytest.approx([EXPECTED] * 4)
    advantages = (tensor - tensor.mean()) / (tensor.std() + 1e-8)
    assert not advantages.isnan().any()


def test_trl_ddpo_trainer_call_shapes(tmp_path):
    images, prompts = _batch()
    prompt_metadata = tuple({} for _ in prompts)
    prompt_image_pairs = [[images, prompts, prompt_metadata], [images[:2], prompts[:2], prompt_metadata[:2]]]
    with _reward(tmp_path) as reward:
        # compute_rewards(is_async=False): reward, reward_metadata = self.reward_fn(images, prompts, prompt_metadata)
        reward_fn = reward
        rewards = []
        for imgs, ps, meta in prompt_image_pairs:
            r, r_meta = reward_fn(imgs, ps, meta)
            rewards.append((torch.as_tensor(r, device="cpu"), r_meta))
        sync = torch.cat([r for r, _ in rewards])
        # is_async=True: self.executor.map(lambda x: self.reward_fn(*x), pairs), then .result() on each of the two
        reward_fn = reward.trl_ddpo_async()
        executor = futures.ThreadPoolExecutor(max_workers=2)
        mapped = executor.map(lambda x: reward_fn(*x), prompt_image_pairs)
        rewards = [(torch.as_tensor(r.result(), device="cpu"), r_meta.result()) for r, r_meta in mapped]
        executor.shutdown()
    assert torch.equal(torch.cat([r for r, _ in rewards]), sync) and sync.tolist() == pytest.approx([EXPECTED] * 6)
    assert all(isinstance(meta, dict) for _, meta in rewards)
