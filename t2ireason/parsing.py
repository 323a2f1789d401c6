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
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import json_repair

from .judges.base import ChatRequest, Reply

T = TypeVar("T")

__all__ = [
    "ReplyParseError",
    "extract_json",
    "strict_json_values",
    "MAX_REPLY_CHARS",
    "MAX_REPAIR_CHARS",
    "MAX_REPAIR_BRACKETS",
    "MAX_SCAN_BRACKETS",
    "as_score",
    "snapped",
    "score_list",
    "Parsed",
    "ask_structured",
    "reject_replies",
    "REASK_PROMPT",
    "cut_off",
]


class ReplyParseError(ValueError):
    """A reply did not hold what was asked for; the message says what was wrong."""


#: The longest reply :func:`extract_json` reads (characters). Judges answer in a few KB; a reply
#: far beyond this is a runaway generation or an attack, refused with a clear error.
MAX_REPLY_CHARS = 1_000_000
#: The deepest nesting a JSON value may have to count (Python's decoder recurses per level).
MAX_DEPTH = 256
#: What json-repair is given at most: the last this many characters of a reply (from an opening
#: bracket), holding at most ``MAX_REPAIR_BRACKETS`` brackets. json-repair takes about 5 µs a
#: character, and time quadratic in the brackets of some broken shapes (``{[}]`` repeated: 2 s for
#: 4,000 characters); a judge's broken answer is a few hundred characters, and valid JSON of any
#: size is read without it.
MAX_REPAIR_CHARS = 20_000
MAX_REPAIR_BRACKETS = 256
#: The strict scan of a reply starts at the first of its last this many brackets (all of them in a
#: judge's answer): the scanner's few µs a bracket stay well under a second whatever the reply, and
#: the answer, which comes last, is always within reach.
MAX_SCAN_BRACKETS = 20_000

_FENCE_MARK = "```"
_FENCE_TAG = re.compile(r"[ \t]*[A-Za-z0-9_-]*[ \t]*\n?")
_OPENERS = re.compile(r"[\[{]")
_BRACKETS = re.compile(r"[\[\]{}]")
_DECODER = json.JSONDecoder()
_SPECIAL = re.compile(r'["\\\x00-\x1f]')  # what ends a run of plain characters inside a JSON string
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_TOKEN = re.compile(r"""[ \t\n\r]*(?:
    (?P<open>[\[{]) | (?P<close>[\]}]) | (?P<comma>,) | (?P<colon>:) | (?P<quote>")
  | (?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity))""", re.X)

# Where a container is in its grammar: what it expects next.
_VALUE_OR_END, _COMMA_OR_END, _VALUE, _KEY_OR_END, _COLON, _KEY, _MEMBER_VALUE = range(7)
_WANTS_VALUE = (_VALUE_OR_END, _VALUE, _MEMBER_VALUE)


def _fenced_blocks(text: str) -> list[str]:
    """The bodies of ```-fenced blocks, in order (an optional language tag after the opening fence)."""
    blocks, i = [], text.find(_FENCE_MARK)
    while i >= 0:
        body = _FENCE_TAG.match(text, i + 3).end()
        close = text.find(_FENCE_MARK, body)
        if close < 0:
            break
        blocks.append(text[body:close])
        i = text.find(_FENCE_MARK, close + 3)
    return blocks


class _Scanner:
    """Finds which ``{``/``[`` of a text start a complete, strictly valid JSON value, in linear time.

    Each container is recognised once (a pushdown pass over tokens, the end of every
    string found once from a memo of string ends), and what is known about a
    position is kept: a later attempt starting inside a failed or finished value
    reuses it instead of decoding the same characters again. ``work`` counts the
    tokens and string steps examined, for the tests that check the cost is linear.
    """

    def __init__(self, text: str):
        self.text = text
        self.values: dict[int, tuple[int, int] | None] = {}  # start -> (end, depth), None if invalid
        self.string_ends: dict[int, int] = {}  # special character -> end of the string, -1 if unterminated
        self.specials = [m.start() for m in _SPECIAL.finditer(text)]
        self.work = 0

    def spans(self) -> list[tuple[int, int]]:
        """The complete JSON values in order of appearance, outermost only: each ``(start, end)``."""
        found, after = [], 0
        for m in _OPENERS.finditer(self.text):
            start = m.start()
            self.work += 1
            if start < after:
                continue
            value = self.value(start)
            if value is not None:
                found.append((start, value[0]))
                after = value[0]
        return found

    def _string_end(self, quote: int) -> int:
        """The end (past the closing quote) of the JSON string opening at ``quote``, -1 if invalid."""
        text, specials, memo = self.text, self.specials, self.string_ends
        path, pos, end = [], quote + 1, -1
        while True:
            self.work += 1
            i = bisect_left(specials, pos)
            if i == len(specials):
                break
            s = specials[i]
            if s in memo:
                end = memo[s]
                break
            path.append(s)
            c = text[s]
            if c == '"':
                end = s + 1
                break
            if c != "\\":  # a raw control character: invalid in a strict JSON string
                break
            escaped = text[s + 1:s + 2]
            if escaped and escaped in '"\\/bfnrt':
                pos = s + 2
            elif escaped == "u" and _HEX4.match(text, s + 2):
                pos = s + 6
            else:
                break
        for s in path:
            memo[s] = end
        return end

    def value(self, start: int) -> tuple[int, int] | None:
        """``(end, depth)`` of the JSON container starting at ``start``, None if it is not valid."""
        memo, text = self.values, self.text
        if start in memo:
            return memo[start]
        stack: deque[list[int]] = deque()  # [start, is_object, state, depth] per open container

        def open_(at: int) -> None:
            if len(stack) == MAX_DEPTH:  # the outermost would be too deep to count: drop it
                memo[stack.popleft()[0]] = None
            is_object = text[at] == "{"
            stack.append([at, is_object, _KEY_OR_END if is_object else _VALUE_OR_END, 1])

        def valued(frame: list[int], depth: int = 0) -> None:
            frame[2] = _COMMA_OR_END
            frame[3] = max(frame[3], depth + 1)

        def fail() -> None:
            for frame in stack:
                memo[frame[0]] = None
            stack.clear()

        open_(start)
        pos = start + 1
        while stack:
            self.work += 1
            frame = stack[-1]
            state = frame[2]
            m = _TOKEN.match(text, pos)
            if m is None:
                fail()
                break
            kind = m.lastgroup
            at, pos = m.start(kind), m.end()
            if kind == "scalar" and state in _WANTS_VALUE:
                valued(frame)
            elif kind == "quote" and state in (*_WANTS_VALUE, _KEY_OR_END, _KEY):
                pos = self._string_end(at)
                if pos < 0:
                    fail()
                elif state in (_KEY_OR_END, _KEY):
                    frame[2] = _COLON
                else:
                    valued(frame)
            elif kind == "open" and state in _WANTS_VALUE:
                if at not in memo:
                    open_(at)
                elif memo[at] is None:
                    fail()
                else:
                    pos, depth = memo[at]
                    valued(frame, depth)
            elif kind == "close" and state in ((_KEY_OR_END, _COMMA_OR_END) if frame[1] else
                                               (_VALUE_OR_END, _COMMA_OR_END)) and (text[at] == "}") == bool(frame[1]):
                stack.pop()
                depth = frame[3]
                if depth > MAX_DEPTH:
                    memo[frame[0]] = None
                    fail()
                else:
                    memo[frame[0]] = (pos, depth)
                    if stack:
                        valued(stack[-1], depth)
            elif kind == "comma" and state == _COMMA_OR_END:
                frame[2] = _KEY if frame[1] else _VALUE
            elif kind == "colon" and state == _COLON:
                frame[2] = _MEMBER_VALUE
            else:
                fail()
        return memo.get(start)


def _scan_start(text: str, limit: int = MAX_SCAN_BRACKETS) -> int:
    """0, or in a text of more than ``limit`` brackets, where the last ``limit`` of them begin
    (counted from the end, a block at a time, at C speed)."""
    seen, end, block = 0, len(text), 1 << 16
    while end > 0:
        start = max(0, end - block)
        here = sum(text.count(c, start, end) for c in "[]{}")
        if seen + here >= limit:
            positions = [m.start() for m in _BRACKETS.finditer(text, start, end)]
            return positions[len(positions) - (limit - seen)]
        seen, end = seen + here, start
    return 0


def _strict_candidates(text: str) -> list[Any]:
    """Every JSON object or array that decodes strictly, in order of appearance (outermost only),
    among the last :data:`MAX_SCAN_BRACKETS` brackets of ``text`` (unless ``text`` is one valid value)."""
    found, start = [], _scan_start(text)
    if start:  # too many brackets to scan them all: one valid value holding all of them is still read whole
        first = _OPENERS.search(text)
        try:
            value, end = _DECODER.raw_decode(text, first.start())
            if not _OPENERS.search(text, end):
                return [value]
        except (ValueError, RecursionError):
            pass
        text = text[start:]
    for start, end in _Scanner(text).spans():
        try:
            found.append(json.loads(text[start:end]))
        except (ValueError, RecursionError):  # e.g. an integer of more digits than Python converts
            continue
    return found


def strict_json_values(text: str, *, max_chars: int = MAX_REPLY_CHARS) -> list[Any]:
    """Every JSON object or array in ``text`` that decodes as it is written (no repair), outermost only, in order
    of appearance: for a reader that must refuse what :func:`extract_json` would mend or choose among."""
    if len(text) > max_chars:
        raise ReplyParseError(f"reply is {len(text):,} characters long, over the {max_chars:,} the parser reads "
                              "(t2ireason.parsing.MAX_REPLY_CHARS): a runaway generation?")
    return _strict_candidates(text)


def _repair_window(text: str) -> str | None:
    """What :func:`_repaired` gives json-repair: from the first opening bracket, or, in a reply longer
    than :data:`MAX_REPAIR_CHARS` from there, from the first one in its last ``MAX_REPAIR_CHARS``
    characters (replies that reason first answer last). None without one."""
    first = _OPENERS.search(text)
    if first is None:
        return None
    if len(text) - first.start() <= MAX_REPAIR_CHARS:
        return text[first.start():]
    last = _OPENERS.search(text, len(text) - MAX_REPAIR_CHARS)
    return None if last is None else text[last.start():]


def _repaired(text: str) -> Any:
    window = _repair_window(text)
    if window is None or len(_BRACKETS.findall(window)) > MAX_REPAIR_BRACKETS:
        return None
    try:
        value = json_repair.loads(window)
    except Exception:  # json-repair is defensive, but never let it escape as another type
        return None
    return value if isinstance(value, (dict, list)) and value else None


def extract_json(text: str, *, expect: type | tuple[type, ...] = (dict, list),
                 max_chars: int = MAX_REPLY_CHARS) -> Any:
    """The JSON value a reply carries.

    Looks, in order, at fenced code blocks (the last one first, since replies
    that reason before answering put the answer last), then at JSON values in
    the bare text (the last one first), and finally repairs broken JSON (a bounded
    window of it: :data:`MAX_REPAIR_CHARS`, :data:`MAX_REPAIR_BRACKETS`).
    Only values of type ``expect`` count. The work is linear in the reply's
    length; a reply longer than ``max_chars`` (:data:`MAX_REPLY_CHARS`) is refused.

    >>> extract_json('Reasoning... ```json\\n{"score": 7}\\n```')
    {'score': 7}
    >>> extract_json("{'score': 7, 'reason': 'ok',}")
    {'score': 7, 'reason': 'ok'}
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"reply is {type(text).__name__}, not text")
    if not text.strip():
        raise ReplyParseError("empty reply")
    if len(text) > max_chars:
        raise ReplyParseError(f"reply is {len(text):,} characters long, over the {max_chars:,} the parser reads "
                              "(t2ireason.parsing.MAX_REPLY_CHARS): a runaway generation?")
    blocks = _fenced_blocks(text)
    for source in [*reversed(blocks), text]:
        for value in reversed(_strict_candidates(source)):
            if isinstance(value, expect):
                return value
    for source in [*reversed(blocks), text]:
        value = _repaired(source)
        if isinstance(value, expect):
            return value
    names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
    windows = [w for w in map(_repair_window, [*blocks, text]) if w is not None]
    if any(len(_BRACKETS.findall(w)) > MAX_REPAIR_BRACKETS for w in windows):
        raise ReplyParseError(f"no JSON {names} found in reply, and its broken JSON has too many brackets to repair "
                              f"(over {MAX_REPAIR_BRACKETS} in {MAX_REPAIR_CHARS:,} characters)")
    raise ReplyParseError(f"no JSON {names} found in reply")


def as_score(value: Any, *, allowed: Sequence[float] | None = None, lo: float | None = None,
             hi: float | None = None, name: str = "score") -> float:
    """A number from a judge's answer (a number or a numeric string), checked against
    an allowed set or a closed range. A value within floating-point rounding of an allowed one or
    of a bound (:func:`snapped`: ``0.9999999999`` for 1) is that value, so no caller truncates it.
    A percentage (``"8%"``) is read only on a 0-to-100 scale (``hi=100``): on any other it is not
    a score (8% of what?) and is refused, so the judge is asked again."""
    if isinstance(value, bool):
        raise ReplyParseError(f"{name} is a boolean ({value}), not a number")
    if isinstance(value, str):
        s = value.strip()
        if s.endswith("%") and hi != 100:
            raise ReplyParseError(f"{name} {value!r} is a percentage, not a score on this scale"
                                  + (f" ({_scale(allowed, lo, hi)})" if allowed is not None or hi is not None else ""))
        try:
            value = float(s.removesuffix("%"))
        except ValueError:
            raise ReplyParseError(f"{name} {value!r} is not a number") from None
    if not isinstance(value, (int, float)):
        raise ReplyParseError(f"{name} {value!r:.60} is not a number")
    value = _float(value)
    if not math.isfinite(value):
        raise ReplyParseError(f"{name} is not a finite number ({value})")
    if allowed is not None:
        match = snapped(value, allowed)
        if match is None:
            raise ReplyParseError(f"{name} {value:g} is not one of {', '.join(f'{a:g}' for a in allowed)}")
        value = match
    value = snapped(value, [b for b in (lo, hi) if b is not None], value)
    if lo is not None and value < lo:
        raise ReplyParseError(f"{name} {value:g} is below the minimum {lo:g}")
    if hi is not None and value > hi:
        raise ReplyParseError(f"{name} {value:g} is above the maximum {hi:g}")
    return value


#: how far from a level a score may be, relatively, and still be that level: rounding, not a judgement (a
#: judge's 0.49999999 is 0.5; a millionth is finer than any scale a benchmark defines). Relative: nothing but 0
#: is 0 (a 1e-12 is no score of 0 or 1, and a -1e-147 is below a scale's 0)
SNAP_TOLERANCE = 1e-6


def snapped(value: float, levels: Iterable[float], default: Any = None) -> Any:
    """The one of ``levels`` that ``value`` is within rounding of (``math.isclose`` within
    :data:`SNAP_TOLERANCE`, relatively: ``0.9999999999`` is 1, ``0.49999999`` and ``0.5000000001`` are
    0.5), as a float; ``default`` when none is. Every parser of scores snaps with it, so that a score
    the official two-decimal rounding reads is the level the judge meant (0.37 from 0.9999999999
    instead of 0.38 from 1)."""
    return next((float(a) for a in levels if math.isclose(value, a, rel_tol=SNAP_TOLERANCE)), default)


def _scale(allowed: Sequence[float] | None, lo: float | None, hi: float | None) -> str:
    if allowed is not None:
        return "one of " + ", ".join(f"{a:g}" for a in allowed)
    return f"{lo:g} to {hi:g}" if lo is not None else f"at most {hi:g}"


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


def cut_off(reply: Reply) -> str | None:
    """``"cut off at the token limit (N tokens)"`` when the judge stopped ``reply`` there
    (``finish_reason == "length"``, as every backend reports it), else None. Such a text is never
    scored, not even repaired: ``"score": 0.5`` cut after its ``0`` would read as 0, a cut 10 as 1."""
    if reply.ok and reply.finish_reason == "length":
        limit = (reply.sampling or {}).get("max_tokens")
        return f"cut off at the token limit{f' ({limit} tokens)' if limit else ''} before it ended"
    return None


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


def reject_replies(judge: Any, requests: Sequence[ChatRequest], replies: Sequence[Reply]) -> None:
    """``replies`` (to ``requests``) failed validation: a store in front of ``judge`` (the response cache:
    :meth:`~t2ireason.judges.stored.StoredJudge.reject`) counts them. None deletes them: a reply is a fact about
    its request, and each evaluation reads what the cache gives with its own rules, so a failed reply is never
    served as an answer, and a deterministic judge is never asked the same thing twice."""
    reject = getattr(judge, "reject", None)
    if reject is not None and requests:
        reject(list(requests), list(replies))


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
    conversation, by ``reask_prompt`` naming the problem; so is a reply the judge stopped at its
    token limit (:func:`cut_off`), never parsed from its partial text. A request the backend
    failed is not asked again here: retrying the transport is the backend's job,
    and a deterministic error would come back the same; it is returned at once
    with ``error`` set (``transient`` tells which kind it was). After ``max_reasks``
    extra rounds an unparsable item is returned with ``error`` set and all its
    replies kept. Rounds are batched across requests, so re-asks cost one extra
    batch, not one call each. A reply the response cache gave is read as any reply is: one that does not
    parse is re-asked in its conversation (whose next reply may be cached too), never taken as an answer; the
    cache keeps it and counts it (:func:`reject_replies`).
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
        asked = [conversations[i] for i in pending]
        replies = judge.chat(asked, progress=progress if round_ == 0 else False)
        still, unread = [], []
        for i, request, reply in zip(pending, asked, replies):
            result = results[i]
            result.replies.append(reply)
            if not reply.ok:
                result.error = f"judge error: {reply.error}"
                continue
            value, why = _read(reply, parsers[i])
            if why is None:
                result.value, result.error = value, None
                continue
            result.value, result.error = None, why[0]
            conversations[i] = conversations[i].then(reply.text, reask_prompt.format(error=why[1]))
            still.append(i)
            unread.append((request, reply))
        reject_replies(judge, [r for r, _ in unread], [reply for _, reply in unread])
        pending = still
    return results


def _read(reply: Reply, parse: Callable[[str], T]) -> tuple[T | None, tuple[str, Any] | None]:
    """``(value, None)`` from a reply that reads, or ``(None, (failure, what the re-ask says))``."""
    if (cut := cut_off(reply)) is not None:
        return None, (f"reply {cut}: not read from its partial text (raise max_tokens?)",
                      f"it was {cut}; answer more briefly")
    try:
        return parse(reply.text), None
    except ReplyParseError as e:
        return None, (f"unparsable reply: {e}", e)
