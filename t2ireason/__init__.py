"""t2ireason: reasoning-driven text-to-image evaluation for the Hugging Face ecosystem."""

__version__ = "0.2.0"  # 0.2.0: per-image scores on 0-1 in every metric (PRISM-Bench was 0-100)


def load_metric(name: str, **kwargs):
    """``evaluate.load`` of a metric module shipped with the package, by bare name
    (e.g. ``load_metric("vqascore", judge="hf:...")``); see :mod:`t2ireason.metric`."""
    from .metric import load_metric as _load_metric  # evaluate is imported only when used

    return _load_metric(name, **kwargs)
