"""A failed judgement in the trainers' loops (issue 50): replayed through the advantage arithmetic of Flow-GRPO's
trainer (scripts/train_sd3.py and flow_grpo/stat_tracking.py of yifan123/flow_grpo) and of trl 0.19.1's
``DDPOTrainer`` (its ``_generate_samples`` step and ``trainer/utils.py``'s ``PerPromptStatTracker``), the default
gives no NaN anywhere and the failed image no push either way in its prompt's group; ``info`` says it failed.

Neither trainer masks NaN: with ``on_failure="nan"`` one failed image made its prompt's advantages NaN (the whole
batch's under global normalisation) and, in trl's per-prompt buffer, later clean steps' too; the old ``"mean"``
(the mean of the whole call) gave the failed image a push in its group (+0.151 here)."""

from __future__ import annotations

import json
import math
from collections import deque

import numpy as np
import pytest
import torch

from t2ireason import load_reward
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import CountingLLM

PROMPTS = ["one more apple than the two on the plate", "a clock showing a quarter past three"]


# -- the trainers' arithmetic, as their code has it --------------------------------------------------------------

class FlowGRPOStatTracker:
    """flow_grpo/stat_tracking.py's ``PerPromptStatTracker`` (type "grpo"); train_sd3.py clears it every epoch."""

    def __init__(self, global_std=False):
        self.global_std, self.stats = global_std, {}

    def update(self, prompts, rewards):
        prompts, rewards = np.array(prompts), np.array(rewards, dtype=np.float64)
        unique = np.unique(prompts)
        advantages = np.empty_like(rewards) * 0.0
        for prompt in unique:
            self.stats.setdefault(prompt, []).extend(rewards[prompts == prompt])
        for prompt in unique:
            self.stats[prompt] = np.stack(self.stats[prompt])
            prompt_rewards = rewards[prompts == prompt]
            mean = np.mean(self.stats[prompt], axis=0, keepdims=True)
            std = np.std(rewards if self.global_std else self.stats[prompt], axis=0, keepdims=True) + 1e-4
            advantages[prompts == prompt] = (prompt_rewards - mean) / std
        return advantages


def flow_grpo_global(avg):
    """train_sd3.py without per_prompt_stat_tracking."""
    avg = np.array(avg, dtype=np.float64)
    return (avg - avg.mean()) / (avg.std() + 1e-4)


class TrlStatTracker:
    """trl 0.19.1 trainer/utils.py ``PerPromptStatTracker``: a buffer per prompt kept across steps."""

    def __init__(self, buffer_size, min_count):
        self.buffer_size, self.min_count, self.stats = buffer_size, min_count, {}

    def update(self, prompts, rewards):
        prompts, rewards = np.array(prompts), np.array(rewards)
        unique = np.unique(prompts)
        advantages = np.empty_like(rewards)
        for prompt in unique:
            prompt_rewards = rewards[prompts == prompt]
            if prompt not in self.stats:
                self.stats[prompt] = deque(maxlen=self.buffer_size)
            self.stats[prompt].extend(prompt_rewards)
            if len(self.stats[prompt]) < self.min_count:
                mean, std = np.mean(rewards), np.std(rewards) + 1e-6
            else:
                mean, std = np.mean(self.stats[prompt]), np.std(self.stats[prompt]) + 1e-6
            advantages[prompts == prompt] = (prompt_rewards - mean) / std
        return advantages


def trl_global(rewards):
    """trl 0.19.1 DDPOTrainer without per_prompt_stat_tracking."""
    rewards = np.array(rewards)
    return (rewards - rewards.mean()) / (rewards.std() + 1e-8)


# -- a judge that cannot judge black images ----------------------------------------------------------------------

def _judge():
    def reply(request):
        image = request.images[0].image
        shade = sum(image.convert("L").tobytes()) / (image.width * image.height)
        if shade < 1:  # the black image: prose, re-asks included
            return "I would rather not say."
        level = 1 if shade > 150 else (0.5 if shade > 100 else 0)
        return "Judged.\n```json\n" + json.dumps({"1": level, "2": 1}) + "\n```"

    return ScriptedJudge(reply, model="scripted-judge")


def _reward(tmp_path, **kwargs):
    return load_reward("r2i_score", judge=_judge(), criteria_llm=CountingLLM(),
                       criteria_cache=tmp_path / "criteria.sqlite", **kwargs)


def _images(shades):
    return torch.stack([torch.full((3, 16, 16), s / 255.0) for s in shades])


PROMPTS8 = [PROMPTS[0]] * 4 + [PROMPTS[1]] * 4
ONE_FAILED = [200, 0, 120, 60, 200, 120, 60, 200]  # image 1 (black) fails; the others score 1, 0.59 or 0.18


@pytest.mark.parametrize("shape", ["call", "flow_grpo"])
def test_a_failed_image_gets_no_push_in_its_group_and_no_nan_reaches_the_trainers(tmp_path, shape):
    with _reward(tmp_path) as reward:
        if shape == "call":
            scores, info = reward(_images(ONE_FAILED), PROMPTS8)
        else:
            details, info = reward.flow_grpo()(_images(ONE_FAILED), PROMPTS8, [{}] * 8, only_strict=True)
            scores = details["avg"]
    assert not any(math.isnan(s) for s in scores)
    assert info["failed"] == [False, True] + [False] * 6 and info["num_failed"] == 1
    assert "unanswered" in info["per_image"][1]["failure"]
    assert "the mean of its prompt's 3 image(s)" in info["per_image"][1]["filled"]["r2i_score"]
    assert scores[1] == pytest.approx(np.mean([scores[0], scores[2], scores[3]]))
    # Flow-GRPO, per prompt (its default) and with a global std; trl per prompt: the failed image's advantage is 0
    for advantages in (FlowGRPOStatTracker().update(PROMPTS8, scores),
                       FlowGRPOStatTracker(global_std=True).update(PROMPTS8, scores),
                       TrlStatTracker(buffer_size=32, min_count=4).update(PROMPTS8, scores)):
        assert not np.isnan(advantages).any() and advantages[1] == pytest.approx(0, abs=1e-9)
        assert advantages[0] > 0 > advantages[3]  # the others still pushed as their scores say
    for advantages in (flow_grpo_global(scores), trl_global(scores)):
        assert not np.isnan(advantages).any()


def test_under_nan_a_failure_poisons_the_trainers_as_found(tmp_path):
    """Why NaN is not the default: what the trainers do with it (kept for loops that mask NaN themselves)."""
    with _reward(tmp_path, on_failure="nan") as reward:
        scores, info = reward(_images(ONE_FAILED), PROMPTS8)
    assert math.isnan(scores[1]) and info["per_image"][1]["filled"] == {"r2i_score": "nan"}
    assert np.isnan(FlowGRPOStatTracker().update(PROMPTS8, scores)[:4]).all()
    assert np.isnan(flow_grpo_global(scores)).all() and np.isnan(trl_global(scores)).all()
    tracker = TrlStatTracker(buffer_size=32, min_count=4)
    tracker.update(PROMPTS8, scores)
    clean = [s if not math.isnan(s) else 0.5 for s in scores]
    assert np.isnan(tracker.update(PROMPTS8, clean)[:4]).all()  # a later clean step: NaN still in the buffer


def test_a_nan_free_default_keeps_trls_buffer_clean_on_later_steps(tmp_path):
    tracker = TrlStatTracker(buffer_size=32, min_count=4)
    with _reward(tmp_path) as reward:
        for shades in (ONE_FAILED, [200, 120, 60, 200, 200, 120, 60, 200]):
            scores, _ = reward(_images(shades), PROMPTS8)
            assert not np.isnan(tracker.update(PROMPTS8, scores)).any()


def test_a_group_with_no_image_scored_and_a_call_with_none_get_advantages_of_zero(tmp_path):
    with _reward(tmp_path) as reward:
        scores, info = reward(_images([0, 0, 0, 0, 200, 120, 60, 200]), PROMPTS8)
        assert info["num_failed"] == 4
        assert scores[:4] == pytest.approx([np.mean(scores[4:])] * 4)  # the mean of the call's scored images
        assert "no image of its prompt scored" in info["per_image"][0]["filled"]["r2i_score"]
        for advantages in (FlowGRPOStatTracker().update(PROMPTS8, scores),
                           TrlStatTracker(buffer_size=32, min_count=4).update(PROMPTS8, scores)):
            assert advantages[:4] == pytest.approx([0] * 4, abs=1e-9) and not np.isnan(advantages).any()
        assert abs(flow_grpo_global(scores)[:4]).max() < 0.5  # the batch mean: about no push over the batch
        scores, info = reward(_images([0] * 8), PROMPTS8)
        assert scores == [0.5] * 8 and info["num_failed"] == 8
        assert "no image of this call scored" in info["per_image"][0]["filled"]["r2i_score"]
        for advantages in (FlowGRPOStatTracker().update(PROMPTS8, scores), flow_grpo_global(scores),
                           trl_global(scores), TrlStatTracker(buffer_size=32, min_count=4).update(PROMPTS8, scores)):
            assert advantages == pytest.approx([0] * 8, abs=1e-9)
