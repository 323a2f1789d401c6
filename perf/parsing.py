"""Reply parsing's cost (issue 16), one ``key=value`` line each.

- ``extract_json_seconds_per_mb``: the worst, over hostile and ordinary reply shapes of 1 MB
  (``[`` repeated, brackets nested around an error, unclosed objects, escaped quotes, prose with
  stray brackets and the answer last, many valid values), of the time ``extract_json`` takes, in
  seconds per MB of reply (target at most 3);
- ``extract_json_growth_ratio``: the same worst shape at 1 MB over 250 KB, divided by 4: about 1
  when the cost is linear in the reply's length, 4 when quadratic, below 1 once the work is capped
  (target at most 1.5);
- ``malformed_1mb_seconds``: the worst, over 1 MB replies of broken JSON that json-repair is slow on
  (``{[}]`` repeated, ``{"`` repeated, ``[{`` repeated, an unclosed string, unescaped quotes in a string,
  and broken JSON at the cap of what is repaired after 980 KB of prose), of the time ``extract_json``
  takes (target at most 0.5 s: one bad reply costs well under a second; it took 60-70 s before the
  work per reply was capped).

Each time is the best of 3. A last line ``targets_met=<true|false>`` sums up; the time of
each shape follows as ``extract_json.<shape>=<seconds per MB>``.

    python perf/parsing.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _report import figure, summary  # noqa: E402

from t2ireason.parsing import MAX_REPAIR_BRACKETS, MAX_REPAIR_CHARS, ReplyParseError, extract_json  # noqa: E402

TARGETS = {"extract_json_seconds_per_mb": ("<=", 3.0), "extract_json_growth_ratio": ("<=", 1.5),
           "malformed_1mb_seconds": ("<=", 0.5)}
MB = 1_000_000


def shapes(n: int) -> dict[str, str]:
    """Reply shapes of about ``n`` characters."""
    def fill(unit: str, tail: str = "") -> str:
        return unit * ((n - len(tail)) // len(unit)) + tail

    half = n // 2 - 1
    return {
        "open_brackets": fill("["),
        "nested_error": "[" * half + "x" + "]" * half,
        "unclosed_objects": fill('{"a":'),
        "escaped_quotes": fill('["\\"'),
        "prose_answer_last": fill("The image [left] shows {a cat}. ", '```json\n{"score": 7}\n```'),
        "many_values": fill('{"a": [1, 2.5, "xyz"], "b": {"c": null}} '),
    }


def malformed(n: int) -> dict[str, str]:
    """Broken JSON of about ``n`` characters, in the shapes json-repair takes longest on."""
    def fill(unit: str, head: str = "") -> str:
        return head + unit * ((n - len(head)) // len(unit))

    at_cap = "{[}]" * (MAX_REPAIR_BRACKETS // 4) + '"a": ' * ((MAX_REPAIR_CHARS - MAX_REPAIR_BRACKETS) // 5)
    return {
        "mismatched_brackets": fill("{[}]"),
        "open_keys": fill('{"'),
        "objects_in_arrays": fill("[{"),
        "unclosed_string": fill("abc ", '{"score": 1, "reason": "'),
        "quotes_in_string": fill('said "hi" then ', '{"reason": "'),
        "repair_window_at_its_cap": "x" * (n - len(at_cap)) + at_cap,
    }


def seconds(text: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            extract_json(text)
        except ReplyParseError:
            pass
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    per_mb = {name: seconds(text) * MB / len(text) for name, text in shapes(MB).items()}
    worst = max(per_mb, key=per_mb.get)
    quarter = shapes(MB // 4)[worst]
    growth = seconds(shapes(MB)[worst]) / seconds(quarter) / 4
    broken = {name: seconds(text) for name, text in malformed(MB).items()}
    figures = {"extract_json_seconds_per_mb": per_mb[worst], "extract_json_growth_ratio": growth,
               "malformed_1mb_seconds": max(broken.values())}
    met = True
    for name, value in figures.items():
        met &= figure(name, value, target=TARGETS[name])
    for name, value in per_mb.items():
        print(f"extract_json.{name}={value:.3f}")
    for name, value in broken.items():
        print(f"malformed_1mb.{name}={value:.3f}")
    return summary(met)


if __name__ == "__main__":
    sys.exit(main())
