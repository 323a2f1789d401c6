"""Judges behind an OpenAI-compatible chat-completions endpoint: the chat protocol over the HTTP transport.

OpenAI itself, Gemini's OpenAI-compatible endpoint, or a vLLM / SGLang server::

    load_judge("openai:gpt-4.1")
    load_judge("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")

The whole batch is in flight at once, bounded by ``max_concurrency``. Before the
judge's first request, the endpoint is checked (it answers, it serves the model),
so a wrong URL, a server that is down or a model it does not serve is one clear
error at once. Connections, retries (exponential backoff with full jitter,
``Retry-After``), ``timeout``, ``deadline`` and ``max_reply_bytes`` are the
transport's (:mod:`t2ireason.transport`); a reply that is not a chat completion
is retried as a malformed one. A request that still fails comes back as a
``Reply`` with ``error`` set and ``transient`` saying whether the server or
network failed; when the endpoint evidently cannot answer at all,
:meth:`OpenAIJudge.chat` raises :class:`JudgeUnavailable` instead
(``on_unavailable``). Other 4xx fail at once with a message saying what to fix.
The API key never appears in a repr, a log line, a reply, an exception or
:meth:`identity`.

Images are turned into request bytes once each, in worker threads, never on the
event loop that keeps the requests in flight; an image read from a file is sent
as that file's own bytes.

Answer probabilities (VQAScore through an API) come from a one-token reply with
its top log-probabilities; see :func:`answer_logprob` for how token variants
and absent answers are handled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..images import JudgeImage
from ..transport import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_TIMEOUT,
    OPENAI_HOST,
    OPTION_RULES,
    Budget,
    HTTPStatus,
    Malformed,
    Transport,
    check_values,
    failure_kind,
    json_bytes,
    public_url,
    refused_credentials,
    served_hint,
    transient,
    unavailable,
)
from ..transport import check_base_url as check_url
from .base import (
    AnswerQuery,
    ChatRequest,
    Judge,
    JudgeAuthError,
    JudgeError,
    JudgeOptionError,
    JudgeUnavailable,
    Reply,
    Sampling,
    TokenLogprob,
)

__all__ = ["OpenAIJudge", "answer_logprob", "merge_top", "check_base_url"]

logger = logging.getLogger(__name__)

#: top log-probabilities asked for a one-token answer (the most OpenAI allows)
ANSWER_TOP_LOGPROBS = 20
#: seconds the endpoint check may take in all
_CHECK_DEADLINE = 30.0
_INSTALL_HINT = "from a checkout of t2i-reason, pip install -e '.[openai]' (or pip install aiohttp)"


def merge_top(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    """token -> logprob, adding up (log-sum-exp) entries that decode to the same
    string (distinct token ids can share a text)."""
    top: dict[str, float] = {}
    for token, lp in pairs:
        top[token] = lp if token not in top else min(0.0, _logaddexp(top[token], lp))  # at most 0, as above
    return top


def _token(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a token is a {type(value).__name__}, not text")
    return value


def _logprob(value: Any) -> float:
    """A log-probability as a server gives it, checked: a number, at most 0 (a rounding error above 0 is
    taken as 0), or -inf; anything else makes the reply malformed, never a probability outside [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value > 1e-6:
        raise TypeError(f"log-probability {value!r} is not a number at most 0")
    return min(float(value), 0.0)


def _logaddexp(a: float, b: float) -> float:
    hi, lo = max(a, b), min(a, b)
    return hi if lo == -math.inf else hi + math.log1p(math.exp(lo - hi))


def _one_word(answer: str) -> str:
    """``answer`` stripped, or a JudgeError if it evidently spans several tokens."""
    want = answer.strip()
    if not want or any(c.isspace() for c in want):
        raise JudgeError(f"answer {answer!r} spans several tokens; one-token answer probabilities "
                         "cannot teacher-force it (use the hf backend for multi-token answers)")
    return want


def answer_logprob(top: dict[str, float], answer: str) -> float:
    """log P(``answer``) as the first token of a reply, from its top log-probabilities.

    Matching: a candidate token counts when it equals ``answer`` once surrounding
    whitespace is stripped, case-sensitively, so ``"Yes"``, ``" Yes"`` and
    ``"Yes\\n"`` all count (their probabilities are added) but ``"yes"`` and
    ``"Yes,"`` do not: the same answer string a teacher-forced backend scores.

    Absent from the top-k: returns ``-inf`` (probability 0). The true value lies
    between 0 and the k-th probability, which for k=20 is negligible in practice.

    Raises :class:`JudgeError` when the answer evidently spans several tokens
    (it holds whitespace, or only a proper prefix of it is among the candidates),
    since a chat API cannot teacher-force the rest.
    """
    want = _one_word(answer)
    hits = [lp for tok, lp in top.items() if tok.strip() == want]
    if hits:  # at most 0: tokens that decode alike can add up past 1 by rounding
        total = sum(math.exp(lp) for lp in hits)
        return min(0.0, math.log(total)) if total > 0 else -math.inf
    prefixes = [tok for tok in top if tok.strip() and want.startswith(tok.strip())]
    if prefixes:
        raise JudgeError(f"answer {answer!r} seems to span several tokens (candidates {prefixes!r} are "
                         "only its beginning); a chat API cannot teacher-force the rest "
                         "(use the hf backend for multi-token answers)")
    return -math.inf


def _candidates(reply: Reply, answer: str) -> dict[str, float] | None:
    """The first token's alternatives to read ``answer``'s log-probability from: its top log-probabilities,
    or, when the server lists none (an empty ``top_logprobs``), the generated token alone if it is the
    answer; None when nothing says how likely the answer is (never read as probability 0)."""
    if not reply.logprobs:
        return None
    first = reply.logprobs[0]
    if first.top:
        return first.top
    return {first.token: first.logprob} if first.token.strip() == answer.strip() else None


@functools.lru_cache(maxsize=64)
def _sampling_dict(sampling: Sampling) -> dict[str, Any]:
    return sampling.to_dict()


def _as_dict(sampling: Sampling) -> dict[str, Any]:
    """``sampling.to_dict()``, a fresh copy of one made once per setting (``dataclasses.asdict``
    costs as much as reading a reply)."""
    return dict(_sampling_dict(sampling))


def check_base_url(url: Any) -> str:
    """``url`` if it is an http(s) URL with a host, else a :class:`JudgeOptionError` saying what is wrong
    (a request to it could only fail, after every retry)."""
    try:
        return check_url(url, "the judge's base URL")
    except ValueError as e:
        raise JudgeOptionError(str(e)) from None


#: the sampling fields a request body can carry (``sampling_params``), by their Sampling names
SAMPLING_PARAMS = ("temperature", "top_p", "max_tokens", "seed")

#: options checked by :meth:`OpenAIJudge.check_options` (and its constructor): name -> (test, what it must be)
_OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **OPTION_RULES,
    "max_pixels": (lambda x: x is None or (isinstance(x, int) and not isinstance(x, bool) and x >= 1),
                   "None or a whole number of pixels >= 1"),
    "structured_output": (lambda x: x is True or x is False or x == "auto", "True, False or 'auto'"),
    "image_format": (lambda x: x is None or (isinstance(x, str) and x.upper() in ("PNG", "JPEG", "JPG", "WEBP")),
                     "None (each image as it is), 'PNG', 'JPEG' or 'WEBP'"),
    "max_tokens_param": (lambda x: x in (None, "max_tokens", "max_completion_tokens"),
                         "None, 'max_tokens' or 'max_completion_tokens'"),
    "on_unavailable": (lambda x: x in ("raise", "record"), "'raise' or 'record'"),
    "check": (lambda x: isinstance(x, bool), "True or False"),
    "extra_body": (lambda x: x is None or isinstance(x, dict), "None or a dict"),
    "sampling_params": (lambda x: x is None or (isinstance(x, (list, tuple)) and set(x) <= set(SAMPLING_PARAMS)),
                        f"None (all) or a list among {', '.join(SAMPLING_PARAMS)}"),
}


class OpenAIJudge(Judge):
    """A judge served over an OpenAI-compatible chat-completions API.

    Parameters
    ----------
    model: the served model name (``gpt-4.1``, ``Qwen/Qwen2.5-VL-72B-Instruct``...).
    base_url: the API root (``http://host:8000/v1``); ``None`` is OpenAI's.
    api_key: else ``GEMINI_API_KEY`` for Gemini's endpoint, ``OPENAI_API_KEY``
        otherwise; a server of your own may need none (a dummy is sent).
    max_concurrency: requests in flight at once.
    timeout: seconds one attempt may take in all (connecting, sending, every byte of the reply).
    deadline: seconds one request may take in all: every attempt and every wait between them,
        from its first attempt on.
    max_retries: retries after the first attempt, for failures of the server or the network.
    max_retry_after: the longest ``Retry-After`` obeyed, in seconds; a server asking for a
        longer wait fails the request at once, with the wait it asked for in the error.
    max_reply_bytes: the largest reply read; a larger one fails the request, unread.
    backoff_base, backoff_max: exponential backoff with full jitter, in seconds.
    check: before the first request, make sure the endpoint answers and serves ``model``
        (raising :class:`JudgeUnavailable` or :class:`JudgeError` at once if not); ``False``
        skips it. :meth:`check` runs it on demand.
    on_unavailable: ``"raise"`` (default) ends a :meth:`chat` with :class:`JudgeUnavailable` once
        the endpoint evidently cannot answer (unreachable, timing out or overloaded after every
        retry), replies received before it kept; ``"record"`` goes on and returns those failures
        as replies with ``error`` set and ``transient=True``. A refused key (HTTP 401 or 403) ends it
        with :class:`JudgeAuthError` either way: it is the key's failure, not the request's.
    sampling: default :class:`Sampling` for requests that carry none.
    image_format: ``None`` (default) sends each image as it is: a file's own bytes with their
        media type, an in-memory image as lossless PNG; ``"PNG"``/``"WEBP"`` re-encode losslessly,
        ``"JPEG"`` lossily (only where a paper's judge was fed JPEG).
    max_pixels: pixel budget per image before encoding (``None``: send as is).
    structured_output: send ``response_format`` (JSON schema) for requests with a
        ``json_schema``: ``True`` always, ``False`` never, ``"auto"`` unless the
        server rejects it once (then the schema is only in the prompt).
    extra_body: server-specific parameters merged into every request body
        (e.g. vLLM's ``{"top_k": 1}`` or ``{"chat_template_kwargs": {...}}``).
    max_tokens_param: ``"max_tokens"`` or ``"max_completion_tokens"`` (newer OpenAI
        models want the latter); ``None`` picks the latter for OpenAI's own API.
    sampling_params: which of the sampling fields (``temperature``, ``top_p``, ``max_tokens``,
        ``seed``) the request body carries: ``None`` (default) all of them (the seed when set);
        a list only those, the server's defaults for the others, as an official script that sends
        only a temperature (``["temperature"]``).
    revision: a model snapshot name, recorded in :meth:`identity`.
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 16,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        check: bool = True,
        on_unavailable: str = "raise",
        sampling: Sampling | None = None,
        image_format: str | None = None,
        max_pixels: int | None = None,
        structured_output: bool | str = "auto",
        extra_body: dict[str, Any] | None = None,
        max_tokens_param: str | None = None,
        sampling_params: list[str] | tuple[str, ...] | None = None,
        revision: str | None = None,
    ):
        try:
            import aiohttp  # noqa: F401 - the transport, checked here rather than at the first request
        except ImportError as e:
            raise JudgeError(f"the openai backend needs aiohttp: {_INSTALL_HINT}") from e
        # the environment's API root is this judge's as much as an argument's: its identity (cache keys), its
        # host (the token field) and its message name it, not OpenAI's endpoint
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.check_options(
            base_url=base_url, max_concurrency=max_concurrency, timeout=timeout, deadline=deadline,
            max_retries=max_retries, max_retry_after=max_retry_after, max_reply_bytes=max_reply_bytes,
            backoff_base=backoff_base, backoff_max=backoff_max, check=check, on_unavailable=on_unavailable,
            image_format=image_format, max_pixels=max_pixels, structured_output=structured_output,
            extra_body=extra_body, max_tokens_param=max_tokens_param, sampling_params=sampling_params)
        if image_format is not None:
            image_format = {"JPG": "JPEG"}.get(image_format.upper(), image_format.upper())
        host = urlsplit(base_url).hostname if base_url else OPENAI_HOST
        if max_tokens_param is None:
            max_tokens_param = "max_completion_tokens" if host == OPENAI_HOST else "max_tokens"

        self.model = model
        self.revision = revision
        self.base_url = base_url.strip() if base_url else base_url
        self.default_sampling = sampling or Sampling()
        self.max_concurrency = max_concurrency
        self.batch_size = max_concurrency
        self.on_unavailable = on_unavailable
        self.image_format = image_format
        self.max_pixels = max_pixels
        self.structured_output = structured_output
        self.extra_body = dict(extra_body or {})
        self.max_tokens_param = max_tokens_param
        self.sampling_params = None if sampling_params is None else tuple(p for p in SAMPLING_PARAMS
                                                                          if p in sampling_params)
        #: whether a reply to a request with ``response_format`` came back as something not JSON
        self.structured_output_ignored = False
        try:
            #: connections, retries, deadlines, the key: everything on the wire
            self.transport = Transport(
                self.base_url, api_key=api_key, name=repr(self), model=model,
                user_agent="t2i-reason (OpenAI-compatible judge)", max_concurrency=max_concurrency, timeout=timeout,
                deadline=deadline, max_retries=max_retries, max_retry_after=max_retry_after,
                max_reply_bytes=max_reply_bytes, backoff_base=backoff_base, backoff_max=backoff_max)
        except ValueError as e:  # no key for OpenAI's own endpoint, or two credentials
            raise JudgeOptionError(str(e)) from None
        self._check_first = check
        self._encoder: concurrent.futures.ThreadPoolExecutor | None = None
        self._encodings: dict[int, asyncio.Future] = {}
        self._structured_ok = structured_output is not False

    @classmethod
    def check_options(cls, **options: Any) -> None:
        """Raise :class:`JudgeError` naming the first option whose value cannot work (a base URL
        that is not an http(s) URL, a time-out that is not a positive number, an unknown choice),
        without creating anything: :func:`~t2ireason.judges.validate_judge` calls it."""
        if options.get("base_url") is not None:
            check_base_url(options["base_url"])
        try:
            check_values(options, _OPTION_RULES, "the openai judge")
        except ValueError as e:
            raise JudgeOptionError(str(e)) from None

    # -- identity ----------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        ident = {**super().identity(), "base_url": public_url(self.base_url),
                 "image_format": self.image_format, "max_pixels": self.max_pixels}
        if self.sampling_params is not None:  # fields left to the server change replies
            ident["sampling_params"] = list(self.sampling_params)
        return ident

    def __repr__(self) -> str:
        where = f" at {public_url(self.base_url)}" if self.base_url else ""
        rev = f"@{self.revision}" if self.revision else ""
        return f"OpenAIJudge(openai:{self.model}{rev}{where})"

    # -- callers' entry points ---------------------------------------------

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Answer every request, all in flight at once (at most ``max_concurrency``
        on the wire). ``on_reply`` and the progress bar run in the caller's thread
        as replies arrive, in completion order.

        Before the judge's first request, the endpoint is checked (see ``check``). Raises
        :class:`JudgeUnavailable` when the endpoint evidently cannot answer (``on_unavailable``);
        every reply received before has been given to ``on_reply``."""
        return self._open().run_batch(requests, self._ask, before=self._ensure_checked, on_result=on_reply,
                                      progress=progress, desc=f"judge {self.model}")

    def concurrency_record(self) -> dict[str, Any] | None:
        """How the requests in flight were cut while the server was overwhelmed (timing out, or busy:
        HTTP 429, 503), for a run's record (:class:`~t2ireason.transport.concurrency.AdaptiveLimit`);
        None when they never were."""
        return self.transport.concurrency.record()

    def check(self) -> None:
        """Make sure the endpoint answers and serves the model, as happens before the first request
        (unless ``check=False``): raises :class:`JudgeUnavailable` if it cannot be reached or does not
        answer, :class:`JudgeError` if it refuses the key or does not serve the model."""
        self._open().run(self._ensure_checked(force=True))

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        return self.chat(requests)

    def answer_probability(self, queries: Sequence[AnswerQuery], *, progress: bool | str = False) -> list[float]:
        """P(answer) for one-token answers, from the top log-probabilities of a
        one-token greedy reply (see :func:`answer_logprob`)."""
        return [math.exp(lp) for lp in self._answer_logprobs(list(queries), progress=progress)]

    def _answer_logprobs(self, queries: list[AnswerQuery], progress: bool | str = False) -> list[float]:
        for q in queries:  # fail before spending any request
            _one_word(q.answer)
        one_token = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=self.default_sampling.seed)
        requests = [ChatRequest.simple(q.image, q.question, sampling=one_token, top_logprobs=ANSWER_TOP_LOGPROBS)
                    for q in queries]
        replies = self.chat(requests, progress=progress or False)
        asked = f"logprobs=true, top_logprobs={ANSWER_TOP_LOGPROBS}"
        failed = [r for r in replies if not r.ok]
        if failed:
            first = failed[0].error or ""
            refused = "logprob" in first.lower() and first.startswith("HTTP 4")
            what = (f"; the server refused the log-probabilities asked for ({asked}): a model that does not give "
                    "them (reasoning models refuse them) cannot give answer probabilities" if refused else "")
            raise JudgeError(f"{len(failed)} of {len(replies)} answer-probability requests to {self.model} at "
                             f"{self.transport.where} failed; first: {first}{what}")
        out = []
        for q, r in zip(queries, replies):
            top = _candidates(r, q.answer)
            if top is None:
                given = (f"only its generated token {r.logprobs[0].token!r} with an empty top_logprobs list"
                         if r.logprobs else "without the log-probabilities it asked for")
                raise JudgeError(
                    f"the server at {self.transport.where} answered {self.model}'s one-token request {given} "
                    f"({asked}): it ignores those fields, so no answer probability "
                    "can be read through it (vLLM and OpenAI's API return them; a server that does not needs an "
                    "option to enable them, or use the hf backend)")
            out.append(answer_logprob(top, q.answer))
        return out

    def close(self) -> None:
        """Close the HTTP client, stop its private event loop and the image encoders."""
        self.transport.close()
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            encoder.shutdown(wait=False)

    def _open(self) -> Transport:
        if self.transport.closed:
            raise JudgeError(f"{self} is closed")
        return self.transport

    # -- on the transport's loop -------------------------------------------

    async def _ensure_checked(self, force: bool = False) -> None:
        """The endpoint check, once per judge (again when ``force``), before any request goes out."""
        if self._check_first or force:
            await self.transport.check_once(self._check_endpoint, force=force)

    async def _check_endpoint(self) -> None:
        """Is the model served? ``GET /models`` when the server lists its models; else (no list, a
        list it fails to give, or a list without the model: proxies route more than they list) a
        one-token request. ``transformers serve`` answers ``GET /models`` with HTTP 500 when its
        Hub cache folder does not exist: a server that answers, but with no usable list."""
        wire = self.transport
        budget = Budget(min(wire.deadline, _CHECK_DEADLINE))
        retries = min(wire.max_retries, 2)
        try:  # no usable list (none served, or one the server fails to give): the one-token request decides
            listed = await wire.served_models(budget=budget, max_retries=retries)
        except Exception as e:  # unreachable, or the key refused: said now
            raise self._unusable(e, "listing the served models (GET /models)") from None
        if listed and (self.model in listed or f"models/{self.model}" in listed):
            return
        body = json_bytes({"model": self.model, "messages": [{"role": "user", "content": "Reply with OK."}],
                           "temperature": 0.0, self.max_tokens_param: 1, **self.extra_body})
        try:
            await wire.post("/chat/completions", body, budget=budget, max_retries=retries, retry_connect=False)
        except Exception as e:
            status = e.status if failure_kind(e) == "status" else None
            # a 400 naming a model the list lacks is about the model (some proxies say so with 400, not 404)
            refused_name = status in (400, 422) and listed and self.model.lower() in e.message.lower()
            if status in (400, 422) and not refused_name:
                return  # it answers, and took the model: only this tiny request displeased it
            if status == 404 or refused_name:
                raise JudgeError(f"{self}: the server does not serve a model named {self.model!r}"
                                 f"{served_hint(self.model, listed)} ({wire.describe(e)})") from None
            raise self._unusable(e, "a one-token test request") from None

    def _unusable(self, exc: BaseException, doing: str) -> JudgeError:
        """The error for a failed endpoint check: unavailable (nothing answers, or not in time) or not usable."""
        text = self.transport.describe(exc)
        if unavailable(exc) or failure_kind(exc) == "status" and exc.status >= 500:
            return JudgeUnavailable(f"{self} cannot answer: {text} (while {doing}); start the server or correct "
                                    "the URL (check=False skips this check)")
        return JudgeError(f"{self} cannot be used: {text} (while {doing})")

    async def _ask(self, request: ChatRequest) -> Reply:
        """One request, retried; a failure becomes the reply's ``error``. Raises only
        :class:`JudgeUnavailable` (with ``on_unavailable="raise"``) or on cancellation."""
        sampling = self.resolve_sampling(request)
        structured = request.json_schema is not None and self._structured_ok
        try:
            await self._encode_images(request)
            try:
                return await self._send(request, sampling, structured)
            except HTTPStatus as e:
                if not (e.status == 400 and structured and self.structured_output == "auto"):
                    raise
                # Asked again without response_format: only if that is answered is response_format the
                # cause (then the schema stays in the prompt only); a second refusal is the request's error.
                reply = await self._send(request, sampling, False)
                if self._structured_ok:
                    logger.warning("%s rejected response_format=json_schema; sending requests without it", self)
                    self._structured_ok = False
                return reply
        except asyncio.CancelledError:
            raise
        except Exception as e:  # any failure becomes this request's Reply.error
            error = self.transport.describe(e)
            refused = refused_credentials(e)
            if refused or self.on_unavailable == "raise" and unavailable(e):
                if refused:  # the key, not this request: every other request would be refused too
                    raise JudgeAuthError(f"{self} refused the credentials: {error}. Replies received before are "
                                         "kept; fix the key (or its permissions) and run again") from None
                raise JudgeUnavailable(
                    f"{self} cannot answer: {error}. Replies received before are kept; "
                    "on_unavailable='record' records such failures and goes on") from None
            return Reply(text="", model=self.model, sampling=sampling.to_dict(), error=error,
                         transient=transient(e))

    async def _encode_images(self, request: ChatRequest) -> None:
        """Each image of ``request`` turned into its data URL once, in a worker thread: PNG
        encoding and base64 never run on the loop, where they would hold up every request in
        flight; requests about the same image share the work."""
        fmt, max_pixels = self.image_format, self.max_pixels
        todo = {id(img): img for img in request.images if img.data_url_bytes(fmt, max_pixels, compute=False) is None}
        if not todo:
            return
        loop = asyncio.get_running_loop()
        if self._encoder is None:
            self._encoder = concurrent.futures.ThreadPoolExecutor(
                max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="t2ireason-encode")
        futures = []
        for key, image in todo.items():
            future = self._encodings.get(key)
            if future is None:
                future = loop.run_in_executor(self._encoder, image.data_url_bytes, fmt, max_pixels)
                self._encodings[key] = future
                future.add_done_callback(lambda _, key=key: self._encodings.pop(key, None))
            futures.append(future)
        await asyncio.gather(*futures)

    async def _send(self, request: ChatRequest, sampling: Sampling, structured: bool) -> Reply:
        """The request on the wire, retried (a reply that is not a chat completion too). Its body is
        built in its slot, so at most ``max_concurrency`` bodies exist at once."""
        return await self.transport.post("/chat/completions", lambda: self._request_bytes(request, sampling, structured),
                                         read=lambda completion: self._to_reply(completion, sampling, structured))

    # -- translation -------------------------------------------------------

    def _content(self, parts: tuple[str | JudgeImage, ...]) -> str | list[dict[str, Any]]:
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)  # plain string: accepted by every server for every role
        return [{"type": "text", "text": p} if isinstance(p, str)
                else {"type": "image_url", "image_url": {"url": p.data_url(self.image_format, self.max_pixels)}}
                for p in parts]

    def _request_fields(self, request: ChatRequest, sampling: Sampling, structured: bool) -> dict[str, Any]:
        """Every field of the request body but ``messages``, ``extra_body`` merged in."""
        fields: dict[str, Any] = {
            "model": self.model,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            self.max_tokens_param: sampling.max_tokens,
        }
        if sampling.seed is not None:
            fields["seed"] = sampling.seed
        if self.sampling_params is not None:  # only these; the server's defaults for the rest
            for name in SAMPLING_PARAMS:
                if name not in self.sampling_params:
                    fields.pop(self.max_tokens_param if name == "max_tokens" else name, None)
        if request.top_logprobs:
            fields["logprobs"] = True
            fields["top_logprobs"] = request.top_logprobs
        if structured:
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(request.json_schema.get("title", "reply")))[:64]
            fields["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "schema": request.json_schema}}
        return {**fields, **self.extra_body}

    def _request_body(self, request: ChatRequest, sampling: Sampling, structured: bool) -> dict[str, Any]:
        """The chat-completions request body as a dict (what :meth:`_request_bytes` writes)."""
        messages = [{"role": m.role, "content": self._content(m.content)} for m in request.messages]
        return {"messages": messages, **self._request_fields(request, sampling, structured)}

    def _request_bytes(self, request: ChatRequest, sampling: Sampling, structured: bool) -> bytes:
        """The request body as JSON bytes. Each image's data URL is spliced in as the bytes memoised
        on the image (base64 holds nothing JSON escapes): a megabyte-long string is copied once,
        not scanned by a JSON encoder for every request that carries it."""
        fields = self._request_fields(request, sampling, structured)
        if "messages" in fields:  # extra_body's own messages win
            return json_bytes(fields)
        fmt, max_pixels = self.image_format, self.max_pixels
        chunks = [b'{"messages":[']
        for n, m in enumerate(request.messages):
            if n:
                chunks.append(b",")
            if all(isinstance(p, str) for p in m.content):
                chunks.append(json_bytes({"role": m.role, "content": "".join(m.content)}))
                continue
            chunks += [b'{"role":', json_bytes(m.role), b',"content":[']
            for k, p in enumerate(m.content):
                if k:
                    chunks.append(b",")
                if isinstance(p, str):
                    chunks.append(json_bytes({"type": "text", "text": p}))
                else:
                    chunks += [b'{"type":"image_url","image_url":{"url":"', p.data_url_bytes(fmt, max_pixels), b'"}}']
            chunks.append(b"]}")
        rest = json_bytes(fields)
        chunks += [b"],", rest[1:]] if len(rest) > 2 else [b"]}"]
        return b"".join(chunks)

    def _to_reply(self, completion: Any, sampling: Sampling, structured: bool = False) -> Reply:
        """A Reply from a chat completion as JSON: ``choices[0]`` (message, log-probabilities,
        finish reason), the model that answered and the integer usage counts."""
        try:
            choice = completion["choices"][0]
            message = choice["message"]
            text = message.get("content")
            if text is None and message.get("refusal"):
                return Reply(text="", model=self.model, sampling=sampling.to_dict(),
                             finish_reason=choice.get("finish_reason"),
                             error=self.transport.scrub(f"refused: {message['refusal']}"))
            if not isinstance(text, str | None):
                raise TypeError(f"content is a {type(text).__name__}")
            content = (choice.get("logprobs") or {}).get("content")
            logprobs = [TokenLogprob(_token(t["token"]), _logprob(t["logprob"]),
                                     merge_top((_token(a["token"]), _logprob(a["logprob"]))
                                               for a in t.get("top_logprobs") or []))
                        for t in content] if content else None
            usage = {k: v for k, v in (completion.get("usage") or {}).items() if isinstance(v, int)} or None
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise Malformed(f"not a chat completion ({str(completion)[:200]})") from e
        if structured and text and not self.structured_output_ignored and choice.get("finish_reason") != "length":
            self._notice_ignored_schema(text)
        return Reply(text=text or "", model=completion.get("model") or self.model, sampling=_as_dict(sampling),
                     logprobs=logprobs, finish_reason=choice.get("finish_reason"), usage=usage)

    def _notice_ignored_schema(self, text: str) -> None:
        """A server that honours ``response_format`` replies with JSON; one that answers otherwise
        ignored it (the schema is then only in the prompt). Said once per judge."""
        try:
            json.loads(text)
        except ValueError:
            self.structured_output_ignored = True
            logger.warning("%s: the server ignored response_format (a JSON schema): a complete reply is not JSON "
                           "(%r); replies are parsed from their text, and re-asked when they do not parse. "
                           "structured_output=False stops sending it", self, text[:80])
