"""Turning judge replies into validated values, with bounded re-asks.

Judges answer in prose, fenced JSON, bare JSON, or slightly broken JSON. This
module extracts the JSON (repairing common breakage with ``json-repair``),
validates the shape the caller expects, and, when that fails, re-asks in the
same conversation a bounded number of times. What still fails is returned as a
failure holding every raw reply: never a silent zero, never a silent drop.

The only exception the parsing functions raise is :class:`ReplyParseError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import json_repair

from .judges.base import ChatRequest, Reply

T = TypeVar("T")

__all__ = [
    "ReplyParseError",
    "extract_json",
    "as_score",
    "score_list",
    "Parsed",
    "ask_structured",
    "REASK_PROMPT",
]


class ReplyParseError(ValueError):
    """A reply did not hold what was asked for; the message says what was wrong."""


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def _strict_candidates(text: str) -> list[Any]:
    """Every JSON object or array that decodes strictly, in order of appearance (outermost only)."""
    found, i = [], 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = _DECODER.raw_decode(text, i)
            except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
                i += 1
                continue
            found.append(value)
            i = end
        else:
            i += 1
    return found


def _repaired(text: str) -> Any:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value = json_repair.loads(text[start:])
    except Exception:  # json-repair is defensive, but never let it escape as another type
        return None
    return value if isinstance(value, (dict, list)) and value else None


def extract_json(text: str, *, expect: type | tuple[type, ...] = (dict, list)) -> Any:
    """The JSON value a reply carries.

    Looks, in order, at fenced code blocks (the last one first, since replies
    that reason before answering put the answer last), then at JSON values in
    the bare text (the last one first), and finally repairs broken JSON.
    Only values of type ``expect`` count.

    >>> extract_json('Reasoning... ```json\\n{"score": 7}\\n```')
    {'score': 7}
    >>> extract_json("{'score': 7, 'reason': 'ok',}")
    {'score': 7, 'reason': 'ok'}
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"reply is {type(text).__name__}, not text")
    if not text.strip():
        raise ReplyParseError("empty reply")
    blocks = [body for _, body in _FENCE.findall(text)]
    for source in [*reversed(blocks), text]:
        for value in reversed(_strict_candidates(source)):
            if isinstance(value, expect):
                return value
    for source in [*reversed(blocks), text]:
        value = _repaired(source)
        if isinstance(value, expect):
            return value
    names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
    raise ReplyParseError(f"no JSON {names} found in reply")


def as_score(value: Any, *, allowed: Sequence[float] | None = None, lo: float | None = None,
             hi: float | None = None, name: str = "score") -> float:
    """A number from a judge's answer (a number or a numeric string), checked against
    an allowed set or a closed range."""
    if isinstance(value, bool):
        raise ReplyParseError(f"{name} is a boolean ({value}), not a number")
    if isinstance(value, str):
        s = value.strip().rstrip("%")
        try:
            value = float(s)
        except ValueError:
            raise ReplyParseError(f"{name} {value!r} is not a number") from None
    if not isinstance(value, (int, float)):
        raise ReplyParseError(f"{name} {value!r:.60} is not a number")
    value = _float(value)
    if not math.isfinite(value):
        raise ReplyParseError(f"{name} is not a finite number ({value})")
    if allowed is not None and not any(math.isclose(value, a) for a in allowed):
        raise ReplyParseError(f"{name} {value:g} is not one of {', '.join(f'{a:g}' for a in allowed)}")
    if lo is not None and value < lo:
        raise ReplyParseError(f"{name} {value:g} is below the minimum {lo:g}")
    if hi is not None and value > hi:
        raise ReplyParseError(f"{name} {value:g} is above the maximum {hi:g}")
    return value


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf


def score_list(value: Any, n: int, **checks: Any) -> list[float]:
    """Exactly ``n`` scores, each validated by :func:`as_score` (``allowed``, ``lo``, ``hi``)."""
    if not isinstance(value, (list, tuple)):
        raise ReplyParseError(f"expected a list of {n} scores, got {type(value).__name__}")
    if len(value) != n:
        raise ReplyParseError(f"expected {n} scores, got {len(value)}")
    return [as_score(v, name=f"score {i + 1}", **checks) for i, v in enumerate(value)]


REASK_PROMPT = (
    "Your previous reply could not be used: {error}. "
    "Please answer again, following the required output format exactly."
)


@dataclass
class Parsed(Generic[T]):
    """The outcome of asking for a structured answer: the value, or a failure with every raw reply."""

    value: T | None = None
    error: str | None = None
    replies: list[Reply] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.replies)

    @property
    def reasks(self) -> int:
        """Requests made beyond the first."""
        return max(0, len(self.replies) - 1)

    @property
    def transient(self) -> bool:
        """Failed because the judge could not answer (a transient backend error), not because of a reply."""
        return not self.ok and bool(self.replies) and bool(getattr(self.replies[-1], "transient", False))

    @property
    def texts(self) -> list[str]:
        return [r.text if r.ok else f"[judge error] {r.error}" for r in self.replies]


def ask_structured(
    judge: Any,
    requests: Sequence[ChatRequest],
    parse: Callable[[str], T] | Sequence[Callable[[str], T]],
    *,
    max_reasks: int = 2,
    reask_prompt: str = REASK_PROMPT,
    progress: bool | str = False,
) -> list[Parsed[T]]:
    """Ask every request, parse each reply, and re-ask the ones that fail.

    ``parse`` turns a reply text into the value the caller wants, raising
    :class:`ReplyParseError` when the reply is unusable; give one callable, or one
    per request. A reply that does not parse is followed, in the same
    conversation, by ``reask_prompt`` naming the problem. A request the backend
    failed is not asked again here: retrying the transport is the backend's job,
    and a deterministic error would come back the same; it is returned at once
    with ``error`` set (``transient`` tells which kind it was). After ``max_reasks``
    extra rounds an unparsable item is returned with ``error`` set and all its
    replies kept. Rounds are batched across requests, so re-asks cost one extra
    batch, not one call each.
    """
    parsers = list(parse) if isinstance(parse, Sequence) else [parse] * len(requests)
    if len(parsers) != len(requests):
        raise ValueError(f"got {len(parsers)} parsers for {len(requests)} requests")
    if max_reasks < 0:
        raise ValueError("max_reasks must be >= 0")
    results: list[Parsed[T]] = [Parsed() for _ in requests]
    conversations = list(requests)
    pending = list(range(len(requests)))
    for round_ in range(max_reasks + 1):
        if not pending:
            break
        replies = judge.chat([conversations[i] for i in pending], progress=progress if round_ == 0 else False)
        still = []
        for i, reply in zip(pending, replies):
            result = results[i]
            result.replies.append(reply)
            if not reply.ok:
                result.error = f"judge error: {reply.error}"
                continue
            try:
                result.value, result.error = parsers[i](reply.text), None
            except ReplyParseError as e:
                result.value, result.error = None, f"unparsable reply: {e}"
                conversations[i] = conversations[i].then(reply.text, reask_prompt.format(error=e))
                still.append(i)
        pending = still
    return results
