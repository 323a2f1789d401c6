"""t2ireason: reasoning-driven text-to-image evaluation for the Hugging Face ecosystem."""

from .version import __version__

__all__ = ["__version__", "load_metric", "load_reward"]


def load_metric(name: str, **kwargs):
    """``evaluate.load`` of a metric module shipped with the package, by bare name
    (e.g. ``load_metric("vqascore", judge="hf:...")``); see :mod:`t2ireason.metric`."""
    from .metric import load_metric as _load_metric  # evaluate is imported only when used

    return _load_metric(name, **kwargs)


def load_reward(name, judge=None, **kwargs):
    """A reward for RL fine-tuning loops: ``scores, info = reward(images, prompts, metadata)`` with one float
    per image on 0-1, and ``reward.submit(...)``, a future of the same (``load_reward("r2i_score",
    judge=..., criteria_llm=...)``, or ``load_reward({"r2i_score": 0.7, "prism_score/aesthetics": 0.3}, ...)``);
    see :func:`t2ireason.rewards.load_reward`."""
    from .rewards import load_reward as _load_reward  # the judges are imported only when used

    return _load_reward(name, judge, **kwargs)
