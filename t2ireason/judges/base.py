"""The judge interface: plain-data chat requests in, replies out.

Every score in the project is computed by building :class:`ChatRequest` objects,
handing a batch of them to a :class:`Judge`, and parsing the :class:`Reply`
texts. Requests are plain data (text and :class:`~t2ireason.images.JudgeImage`
parts), so scoring code can be tested with a scripted judge and no model.

Backends implement :meth:`Judge._chat_batch` (and, where they can,
:meth:`Judge._answer_logprobs`; a backend that overlaps its batches overrides
:meth:`Judge._chat_batches` and :meth:`Judge._answer_batches`); everything else —
batching, progress bars, sampling defaults, recording what was asked — lives here once.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from ..images import JudgeImage, as_image, as_images

__all__ = [
    "Sampling",
    "Message",
    "ChatRequest",
    "TokenLogprob",
    "Reply",
    "AnswerQuery",
    "Judge",
    "JudgeError",
    "JudgeUnavailable",
    "JudgeAuthError",
    "JudgeOptionError",
    "system",
    "user",
    "assistant",
    "VQASCORE_QUESTION",
]

# The question VQAScore asks (Lin et al., 2024); see formats.md.
VQASCORE_QUESTION = 'Does this figure show "{prompt}"? Please answer yes or no.'


class JudgeError(RuntimeError):
    """A judge could not be built or could not answer. Messages never include API keys."""


class JudgeOptionError(JudgeError, ValueError):
    """A judge option (a backend argument, a ``sampling`` field) has a value that cannot work; found
    before anything is loaded or contacted. A ValueError too: bad input from the caller."""


class JudgeUnavailable(JudgeError):
    """The judge cannot answer at all (endpoint unreachable, server down, out of its deadline),
    after the backend's own retries. It ends a computation with the cause instead of turning
    every remaining request into a failure; the work finished before it is kept."""


class JudgeAuthError(JudgeUnavailable):
    """The judge refused the credentials (HTTP 401 or 403): no request can succeed until they are fixed.
    It ends a computation as :class:`JudgeUnavailable` does, whatever ``on_unavailable`` says, and is
    never recorded (nor cached) as a judgement's failure, so the same command with a good key goes on."""


@dataclass(frozen=True)
class Sampling:
    """Generation parameters, explicit and recorded with every reply."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = None

    def __post_init__(self):
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    @property
    def deterministic(self) -> bool:
        """Whether asking again should give the same reply (greedy, or a fixed seed)."""
        return self.temperature == 0 or self.seed is not None

    def replace(self, **changes: Any) -> Sampling:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Part = str | JudgeImage


@dataclass(frozen=True)
class Message:
    """One chat turn: a role and a sequence of text and image parts."""

    role: str
    content: tuple[Part, ...]

    def __post_init__(self):
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"message role must be system, user or assistant, got {self.role!r}")
        for p in self.content:
            if not isinstance(p, (str, JudgeImage)):
                raise TypeError(f"message parts are str or JudgeImage, got {type(p).__name__}")

    @property
    def text(self) -> str:
        return "".join(p for p in self.content if isinstance(p, str))

    @property
    def images(self) -> list[JudgeImage]:
        return [p for p in self.content if isinstance(p, JudgeImage)]


def _parts(parts: Iterable[Any]) -> tuple[Part, ...]:
    return tuple(p if isinstance(p, str) else as_image(p) for p in parts)


def system(text: str) -> Message:
    return Message("system", (text,))


def user(*parts: Any) -> Message:
    """A user turn; non-string parts are converted with :func:`as_image`."""
    return Message("user", _parts(parts))


def assistant(text: str) -> Message:
    return Message("assistant", (text,))


@dataclass(frozen=True)
class ChatRequest:
    """A conversation to continue. ``sampling=None`` means the judge's default.

    ``json_schema`` asks for structured output where the backend supports it
    (the reply text is still parsed and validated by the caller).
    ``top_logprobs`` asks for the k most likely alternatives of each token.
    ``metadata`` is the caller's bookkeeping: not sent, not part of the cache key.
    ``repeat``: the same question asked again, the k-th time (``evaluate --repeats``: a sampled judge's own
    noise): not sent, but part of the key from 1 on, so that each repeat is a request of its own, cached and
    journaled apart, while repeat 0 is the very request a plain evaluation asks.
    """

    messages: tuple[Message, ...]
    sampling: Sampling | None = None
    json_schema: dict | None = None
    top_logprobs: int = 0
    metadata: dict = field(default_factory=dict, compare=False, hash=False)
    repeat: int = 0

    def __post_init__(self):
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if not self.messages:
            raise ValueError("a chat request needs at least one message")
        if self.messages[-1].role == "assistant":
            raise ValueError("the last message of a chat request must not be the assistant's")

    @classmethod
    def simple(cls, *parts: Any, system_prompt: str | None = None, **kw: Any) -> ChatRequest:
        """One user turn made of ``parts`` (text and images), optionally after a system message."""
        msgs = ([system(system_prompt)] if system_prompt else []) + [user(*parts)]
        return cls(tuple(msgs), **kw)

    def then(self, reply_text: str, *parts: Any, **kw: Any) -> ChatRequest:
        """This conversation continued: the assistant's ``reply_text``, then a new user turn."""
        fields = {"sampling": self.sampling, "json_schema": self.json_schema,
                  "top_logprobs": self.top_logprobs, "metadata": dict(self.metadata), "repeat": self.repeat}
        fields.update(kw)
        return ChatRequest(self.messages + (assistant(reply_text), user(*parts)), **fields)

    @property
    def images(self) -> list[JudgeImage]:
        return [img for m in self.messages for img in m.images]

    def fingerprint(self, sampling: Sampling) -> dict[str, Any]:
        """Plain JSON describing exactly what is asked, images by content digest.
        Used for cache keys; never holds credentials."""
        return {
            "messages": [
                {"role": m.role,
                 "content": [p if isinstance(p, str) else {"image": p.digest} for p in m.content]}
                for m in self.messages
            ],
            "sampling": sampling.to_dict(),
            "json_schema": self.json_schema,
            "top_logprobs": self.top_logprobs,
            **({"repeat": self.repeat} if self.repeat else {}),  # repeat 0: a plain evaluation's key
        }


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log-probability and the top alternatives (token -> logprob)."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Reply:
    """A judge's answer to one request.

    ``error`` is set (and ``text`` empty) when the backend failed for this request
    after its retries; callers record it as a failure, never as a score.
    ``transient`` marks an error of the infrastructure (connection, time-out, server error)
    rather than of the request: asking again later may succeed, asking the same again now
    would not change a deterministic error.
    """

    text: str
    model: str
    sampling: dict[str, Any]
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    cached: bool = False
    error: str | None = None
    transient: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        d = dict(d)
        if d.get("logprobs") is not None:
            d["logprobs"] = [TokenLogprob(**t) for t in d["logprobs"]]
        return cls(**d)


@dataclass(frozen=True)
class AnswerQuery:
    """'How likely is ``answer`` to ``question`` about ``image``?' (teacher-forced)."""

    image: JudgeImage
    question: str
    answer: str = "Yes"

    def __post_init__(self):
        if not isinstance(self.image, JudgeImage):
            object.__setattr__(self, "image", as_image(self.image))


class Judge(ABC):
    """A multimodal model that answers chat requests about images.

    Subclasses set ``backend``, ``model`` and ``default_sampling`` and implement
    :meth:`_chat_batch`. Callers use :meth:`chat` and :meth:`answer_probability`
    (or its shorthand :meth:`yes_probability`). Any object with these methods
    and an :meth:`identity` can stand in for a judge (custom backends, tests).
    """

    backend: str = "custom"
    model: str = "unknown"
    revision: str | None = None
    default_sampling: Sampling = Sampling()
    #: how many requests the backend handles per call of _chat_batch
    batch_size: int = 8
    #: pixel budget per image (None: the model's processor decides)
    max_pixels: int | None = None

    # -- what callers use -------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """What identifies this judge's answers (for caches and reports). Never secrets."""
        return {"backend": self.backend, "model": self.model, "revision": self.revision}

    def resolve_sampling(self, request: ChatRequest) -> Sampling:
        return request.sampling or self.default_sampling

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Answer every request, in order. A failed request yields a ``Reply`` with
        ``error`` set rather than aborting the batch.

        ``on_reply(index, reply)`` is called as soon as each reply exists, so a
        caller (the response cache) can keep finished work if the batch is interrupted.
        """
        requests = list(requests)
        from ..progress import progress_bar

        replies: list[Reply] = []
        chunks = [requests[start : start + self.batch_size] for start in range(0, len(requests), self.batch_size)]
        with progress_bar(len(requests), progress, desc=f"judge {self.model}") as bar, \
                closing(self._chat_batches(chunks)) as answered:
            for chunk, chunk_replies in zip(chunks, answered):
                for reply in chunk_replies:
                    if on_reply is not None:
                        on_reply(len(replies), reply)
                    replies.append(reply)
                bar.update(len(chunk))
        return replies

    def answer_probability(self, queries: Sequence[AnswerQuery], *, progress: bool | str = False,
                           on_batch: Callable[[int, list[float]], None] | None = None) -> list[float]:
        """P(answer | image, question) for each query, teacher-forced over all the
        answer's tokens (so multi-token answers work).

        ``on_batch(start, probabilities)`` is called as soon as each batch is answered, with the
        index of its first query, so a caller (the response cache) keeps finished work while the
        judge goes on with the whole list (and a backend overlaps its batches)."""
        queries = list(queries)
        from ..progress import progress_bar

        out: list[float] = []
        chunks = [queries[start : start + self.batch_size] for start in range(0, len(queries), self.batch_size)]
        with progress_bar(len(queries), progress, desc=f"P(answer) {self.model}") as bar, \
                closing(self._answer_batches(chunks)) as answered:
            for chunk, logprobs in zip(chunks, answered):
                probabilities = [math.exp(lp) for lp in logprobs]
                if on_batch is not None:
                    on_batch(len(out), probabilities)
                out.extend(probabilities)
                bar.update(len(chunk))
        return out

    def yes_probability(self, images: Sequence[Any], questions: Sequence[str], *,
                        progress: bool | str = False) -> list[float]:
        """P("Yes") for each (image, question) pair."""
        if len(images) != len(questions):
            raise ValueError(f"got {len(images)} images but {len(questions)} questions")
        return self.answer_probability([AnswerQuery(i, q) for i, q in zip(as_images(images), questions)],
                                       progress=progress)

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release clients or models (optional)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        rev = f"@{self.revision}" if self.revision else ""
        return f"{type(self).__name__}({self.backend}:{self.model}{rev})"

    # -- what backends implement -----------------------------------------

    @abstractmethod
    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        """Answer up to ``batch_size`` requests."""

    def _answer_logprobs(self, queries: list[AnswerQuery]) -> list[float]:
        """log P(answer | image, question) for each query."""
        raise JudgeError(f"the {self.backend} backend gives no answer probabilities")

    def _chat_batches(self, chunks: list[list[ChatRequest]]) -> Iterator[list[Reply]]:
        """The replies to each chunk, in order. A backend overrides it to overlap the chunks
        (the local judge prepares the next chunk while the accelerator answers this one)."""
        for chunk in chunks:
            yield self._chat_batch(chunk)

    def _answer_batches(self, chunks: list[list[AnswerQuery]]) -> Iterator[list[float]]:
        """:meth:`_answer_logprobs` of each chunk, in order (see :meth:`_chat_batches`)."""
        for chunk in chunks:
            yield self._answer_logprobs(chunk)
