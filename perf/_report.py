"""The printout every perf script shares: ``name=value``, the figure's details as
``name.detail=``, its target and whether it was met, then ``targets_met=`` last."""

from __future__ import annotations

import math
from typing import Any


def figure(name: str, value: float, details: dict[str, Any] | None = None,
           target: tuple[str, float] | None = None, *, ok: bool = True, digits: int = 3) -> bool:
    """Print one figure. ``target`` is ``(">=" or "<=", bound)``, or None for a figure reported without
    one; ``ok=False`` fails the figure whatever its value (a condition checked beside it). Returns
    whether the figure met its target (True without a target)."""
    if not math.isfinite(value):  # a figure that failed to measure is said so, never printed as nan
        print(f"{name}=error", flush=True)
        print(f"{name}.error=not measured: the measurement gave {value} (a side's time or a score was not finite)")
        if target is not None:
            print(f"{name}.target={target[0]}{target[1]}")
            print(f"{name}.met=false", flush=True)
        return False
    print(f"{name}={value:.{digits}f}", flush=True)
    for key, detail in (details or {}).items():
        print(f"{name}.{key}={detail:.4g}" if isinstance(detail, float) else f"{name}.{key}={detail}")
    if target is None:
        return True
    op, bound = target
    ok = ok and (value <= bound if op == "<=" else value >= bound)
    print(f"{name}.target={op}{bound}")
    print(f"{name}.met={str(ok).lower()}", flush=True)
    return ok


def failed(name: str, error: BaseException, target: tuple[str, float]) -> bool:
    """Print a figure that could not be measured; it misses its target."""
    print(f"{name}=error", flush=True)
    print(f"{name}.error={type(error).__name__}: {error}")
    print(f"{name}.target={target[0]}{target[1]}")
    print(f"{name}.met=false", flush=True)
    return False


def summary(met: bool) -> int:
    """The last line, and the script's exit status: 1 when a target was missed."""
    print(f"targets_met={str(met).lower()}", flush=True)
    return 0 if met else 1
