"""The package's version, at the bottom of the layers so that any module may record it."""

__version__ = "0.2.0"  # 0.2.0: per-image scores on 0-1 in every metric (PRISM-Bench was 0-100)
