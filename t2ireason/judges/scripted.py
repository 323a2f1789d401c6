"""A judge whose replies are scripted: for tests, dry runs and documentation examples.

It is a real :class:`Judge` (the scoring code cannot tell it from a model), so
scoring logic is tested with exact, hand-checked replies and no model at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .base import AnswerQuery, ChatRequest, Judge, JudgeError, Reply, Sampling


class ScriptedJudge(Judge):
    """Replies from a list (consumed in order) or a function of the request.

    ``replies`` items (or the function's results) are reply texts or whole
    :class:`Reply` objects (e.g. one with ``error`` set, to simulate a backend
    failure). ``probabilities`` does the same for :meth:`answer_probability`.
    Every request received is kept in ``self.requests`` and every query in
    ``self.queries``.
    """

    backend = "scripted"

    def __init__(
        self,
        replies: Sequence[str | Reply] | Callable[[ChatRequest], str | Reply] | None = None,
        *,
        probabilities: Sequence[float] | Callable[[AnswerQuery], float] | None = None,
        model: str = "scripted",
        sampling: Sampling | None = None,
        batch_size: int = 64,
    ):
        self.model = model
        self.default_sampling = sampling or Sampling()
        self.batch_size = batch_size
        self._replies = replies if callable(replies) else list(replies or [])
        self._probabilities = probabilities if callable(probabilities) else list(probabilities or [])
        self.requests: list[ChatRequest] = []
        self.queries: list[AnswerQuery] = []

    def _next(self, script: Any, arg: Any, kind: str, count: int) -> Any:
        if callable(script):
            return script(arg)
        if count >= len(script):
            raise JudgeError(f"ScriptedJudge ran out of scripted {kind} after {len(script)}")
        return script[count]

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        out = []
        for req in requests:
            answer = self._next(self._replies, req, "replies", len(self.requests))
            self.requests.append(req)
            if isinstance(answer, Reply):
                out.append(answer)
            else:
                out.append(Reply(text=str(answer), model=self.model,
                                 sampling=self.resolve_sampling(req).to_dict(), finish_reason="stop"))
        return out

    def _answer_logprobs(self, queries: list[AnswerQuery]) -> list[float]:
        import math

        out = []
        for q in queries:
            p = float(self._next(self._probabilities, q, "probabilities", len(self.queries)))
            self.queries.append(q)
            if not 0.0 <= p <= 1.0:
                raise JudgeError(f"scripted probability {p} is outside [0, 1]")
            out.append(math.log(p) if p > 0 else float("-inf"))
        return out


def best_answer(schema: dict, text: str = "Looks right.") -> Any:
    """The best answer a reply schema allows, for scripted judges in tests and demos: every question
    passed, every score at its top (over ``anyOf`` alternatives too), every array at its shortest full
    length, and ``text`` wherever a string goes."""
    if "enum" in schema:  # the top score; of words, the last (the schemas list the passing one last)
        values = schema["enum"]
        return max(values) if all(isinstance(v, (int, float)) for v in values) else values[-1]
    if "anyOf" in schema:
        answers = [best_answer(s, text) for s in schema["anyOf"]]
        return max(answers, key=lambda v: v if isinstance(v, (int, float)) else -1)
    kind = schema.get("type")
    if kind == "object":
        return {k: best_answer(v, text) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [best_answer(schema.get("items", {}), text) for _ in range(schema.get("minItems", 1))]
    if kind in ("integer", "number"):
        return schema.get("maximum", 1)
    return text if kind == "string" else 1
