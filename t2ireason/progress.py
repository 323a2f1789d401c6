"""Progress bars shared by judges, generators and builders (tqdm underneath)."""

from __future__ import annotations


def progress_bar(total: int, enabled: bool | str = True, desc: str = "", unit: str = "req"):
    """A tqdm bar, or a silent one when ``enabled`` is false.

    ``enabled`` may be a string, used as the bar's description. Use as a
    context manager; ``bar.set_postfix(hits=...)`` shows cache hits and the like.
    """
    from tqdm.auto import tqdm  # imported when a bar is made: importing this module stays free

    if isinstance(enabled, str):
        desc, enabled = enabled, True
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, dynamic_ncols=True, leave=False)
