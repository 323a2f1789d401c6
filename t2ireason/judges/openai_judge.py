"""Judges behind an OpenAI-compatible chat-completions endpoint.

OpenAI itself, Gemini's OpenAI-compatible endpoint, or a vLLM / SGLang server::

    load_judge("openai:gpt-4.1")
    load_judge("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")

The whole batch is in flight at once, bounded by ``max_concurrency``. Before the
judge's first request, the endpoint is checked (it answers, it serves the model),
so a wrong URL, a server that is down or a model it does not serve is one clear
error at once. Each request is retried with exponential backoff and full jitter on
429, 5xx, time-outs, connection errors and malformed responses, honouring
``Retry-After`` up to ``max_retry_after``; ``timeout`` bounds each attempt whole
(a reply trickling in byte by byte included), ``deadline`` the request with all
its attempts and waits, ``max_reply_bytes`` what is read of a reply. A request
that still fails comes back as a ``Reply`` with ``error`` set and ``transient``
saying whether the server or network failed; when the endpoint evidently cannot
answer at all, :meth:`OpenAIJudge.chat` raises :class:`JudgeUnavailable` instead
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
import atexit
import concurrent.futures
import contextvars
import email.utils
import functools
import json
import logging
import math
import os
import queue
import random
import re
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..images import JudgeImage
from ..progress import progress_bar
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


# The batch a request belongs to: once one of its requests finds the endpoint unavailable, the
# batch has ended and a request of it that gets a slot afterwards must not go out (the slot is
# handed to the next waiter before the failing request's batch is cancelled).
_BATCH_ENDED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("t2ireason_batch_ended", default=None)

logger = logging.getLogger(__name__)

#: top log-probabilities asked for a one-token answer (the most OpenAI allows)
ANSWER_TOP_LOGPROBS = 20
_GEMINI_HOST = "generativelanguage.googleapis.com"
_OPENAI_HOST = "api.openai.com"

# The reliability limits' defaults (README.md, "Reliability").
#: seconds one attempt may take in all
DEFAULT_TIMEOUT = 60.0
#: seconds one request may take with all its attempts and the waits between them
DEFAULT_DEADLINE = 300.0
#: retries after the first attempt
DEFAULT_MAX_RETRIES = 6
#: the longest Retry-After obeyed, in seconds
DEFAULT_MAX_RETRY_AFTER = 60.0
#: the largest reply read, in bytes (a one-token reply with 20 log-probabilities is about 2 KB,
#: 1,024 tokens of text about 5 KB)
DEFAULT_MAX_REPLY_BYTES = 16 * 2**20
#: seconds the endpoint check may take in all
_CHECK_DEADLINE = 30.0
_INSTALL_HINT = "from a checkout of t2i-reason, pip install -e '.[openai]' (or pip install aiohttp)"
_DEFAULT_BASE_URL = f"https://{_OPENAI_HOST}/v1"


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


class _Malformed(Exception):
    """The server answered 200 with something that is not a chat completion."""


class _ReplyTooLarge(Exception):
    """The server's reply is larger than the judge reads (``max_reply_bytes``)."""

    def __init__(self, limit: int, announced: int | None = None):
        self.limit = limit
        size = f"announced {announced} bytes" if announced is not None else f"sent more than {limit} bytes"
        super().__init__(f"reply too large: the server {size}, over the judge's limit of {limit} bytes "
                         "(max_reply_bytes); not read further")


class _TimedOut(Exception):
    """An attempt had no complete reply within its time: the judge's own bound on the whole
    attempt (connection, upload, every byte of the reply), not the client's gap between reads."""

    def __init__(self, seconds: float, by_deadline: bool):
        self.seconds = seconds
        self.by_deadline = by_deadline
        super().__init__(f"no complete reply within {seconds:.3g} s")


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if any."""
    headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            pass
        try:  # an HTTP date
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            pass
    return None


class _HTTPStatus(Exception):
    """The server answered with an error status; ``message`` is what its body says."""

    def __init__(self, status: int, message: str, headers: Any):
        self.status = status
        self.message = message
        self.headers = headers  # for Retry-After
        super().__init__(f"HTTP {status}: {message}")


def _error_message(data: bytes) -> str:
    """What an error body says: OpenAI's ``{"error": {"message": ...}}``, FastAPI's ``{"detail": ...}``,
    another JSON ``message``, or the text itself (cut short)."""
    text = data.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(body, dict):
        error = body.get("error")
        for found in (error.get("message") if isinstance(error, dict) else error, body.get("detail"), body.get("message")):
            if found:
                return (found if isinstance(found, str) else json.dumps(found))[:500]
    return text[:500]


def _kind(exc: BaseException) -> str:
    """What failed: ``status`` (an HTTP error status), ``timeout``, ``connect`` (no connection
    could be made), ``tls`` (the server's certificate was refused), ``connection`` (it broke),
    ``malformed``, ``too_large`` or ``other``."""
    if isinstance(exc, _HTTPStatus):
        return "status"
    if isinstance(exc, _TimedOut):
        return "timeout"
    if isinstance(exc, _ReplyTooLarge):
        return "too_large"
    if isinstance(exc, (_Malformed, json.JSONDecodeError)):
        return "malformed"
    import aiohttp

    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return "tls"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connect"
    if isinstance(exc, (aiohttp.ClientError, ConnectionError)):
        return "connection"  # dropped, reset, a reply cut short, an answer that is not HTTP
    return "other"


def _retryable(exc: BaseException) -> bool:
    """Worth asking again at once: the infrastructure failed, not the request."""
    kind = _kind(exc)
    if kind == "status":
        return exc.status in (408, 409, 429) or exc.status >= 500
    return kind in ("timeout", "connect", "connection", "malformed")  # a body not JSON: usually a proxy's hiccup


def _transient(exc: BaseException) -> bool:
    """A failure of the server or the network (asking later may succeed), not of the request."""
    return _retryable(exc) or _kind(exc) == "too_large"


def _unavailable(exc: BaseException) -> bool:
    """The failure says the endpoint cannot answer at all now, whatever is asked: it cannot be
    reached, it does not answer in time, or it says it is overloaded or rate-limited."""
    kind = _kind(exc)
    if kind == "status":
        return exc.status in (408, 429, 502, 503, 504)
    return kind in ("timeout", "connect", "connection")


async def _within(seconds: float, awaitable: Awaitable[Any]) -> Any:
    """``awaitable``, cancelled after ``seconds`` with ``asyncio.TimeoutError``."""
    if sys.version_info >= (3, 11):  # noqa: UP036 - the package installs on Python 3.10 too
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10


class _Budget:
    """One request's time: its deadline runs from its first attempt (waiting for a free slot
    before that does not count) and bounds every attempt and every wait between them."""

    __slots__ = ("deadline", "start")

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.start: float | None = None

    def used(self) -> float:
        return 0.0 if self.start is None else time.monotonic() - self.start

    def attempt_limit(self, timeout: float) -> tuple[float, bool]:
        """Seconds the next attempt may take, and whether the deadline (not ``timeout``) sets them."""
        if self.start is None:
            self.start = time.monotonic()
        remaining = self.deadline - self.used()
        return (timeout, False) if timeout <= remaining else (max(remaining, 0.0), True)


@functools.lru_cache(maxsize=64)
def _sampling_dict(sampling: Sampling) -> dict[str, Any]:
    return sampling.to_dict()


def _as_dict(sampling: Sampling) -> dict[str, Any]:
    """``sampling.to_dict()``, a fresh copy of one made once per setting (``dataclasses.asdict``
    costs as much as reading a reply)."""
    return dict(_sampling_dict(sampling))


def _dumps(obj: Any) -> bytes:
    """Compact JSON."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class _LoopThread:
    """A private event loop in a daemon thread: ``chat()`` stays synchronous for
    callers, even those already inside a running loop (Jupyter), and the HTTP
    client keeps one loop (and its pooled connections) for its whole life."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="t2ireason-openai-judge", daemon=True)
        self.thread.start()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self, last: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Run ``last()`` on the loop (the HTTP client's close), stop the loop, and close
        it once its thread has ended. Safe from a finalizer, even one on the loop's thread."""
        if self.loop.is_closed():
            return

        async def stop():
            try:
                if last is not None:
                    await asyncio.wait_for(last(), 5)
            finally:
                self.loop.stop()

        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop)
        except RuntimeError:  # closed meanwhile
            return
        if threading.current_thread() is self.thread or sys.is_finalizing():
            return  # the loop cannot wait for itself; at exit its thread is gone with the process
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


#: judges not closed yet, closed at exit while their loop threads still run (so the HTTP
#: client's connections are closed properly, not reported as leaked)
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_judges() -> None:
    for judge in list(_OPEN):
        judge.close()


def _public_url(url: str | None) -> str | None:
    """``url`` without user:password, for identity and messages."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``...),
    looked up once per judge rather than by the HTTP client for every request."""
    import urllib.request

    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _ssl_context():
    """The system's certificate store, and certifi's where it is installed (as it is with most
    Python HTTP stacks): a server's certificate is checked against both."""
    import ssl

    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    return context


def check_base_url(url: Any) -> str:
    """``url`` if it is an http(s) URL with a host, else a :class:`JudgeError` saying what is wrong
    (a request to it could only fail, after every retry)."""
    example = "e.g. http://localhost:8000/v1"
    if not isinstance(url, str) or not url.strip():
        raise JudgeOptionError(f"the judge's base URL must be an http(s) URL ({example}), got {url!r}")
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        raise JudgeOptionError(f"the judge's base URL {_public_url_safe(url)!r} is not a valid URL ({e}); {example}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        what = f"its scheme is {parts.scheme!r}" if parts.scheme not in ("http", "https", "") else "it has no host"
        if not parts.scheme:
            what = "it has no http:// or https:// scheme"
        raise JudgeOptionError(f"the judge's base URL {_public_url_safe(url)!r} is not an http(s) URL with a host "
                         f"({what}); {example}")
    return url.strip()


def _public_url_safe(url: str) -> str:
    try:
        return _public_url(url) or url
    except ValueError:
        return url.split("@")[-1]


#: options checked by :meth:`OpenAIJudge.check_options` (and its constructor): name -> (test, what it must be)
def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _count(x: Any, least: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= least


#: the sampling fields a request body can carry (``sampling_params``), by their Sampling names
SAMPLING_PARAMS = ("temperature", "top_p", "max_tokens", "seed")

_OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "max_concurrency": (lambda x: _count(x, 1), "a whole number >= 1"),
    "timeout": (_positive, "a number of seconds > 0"),
    "deadline": (_positive, "a number of seconds > 0"),
    "max_retries": (lambda x: _count(x, 0), "a whole number >= 0"),
    "max_retry_after": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
    "max_reply_bytes": (lambda x: _count(x, 1), "a whole number of bytes >= 1"),
    "backoff_base": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
    "backoff_max": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
    "max_pixels": (lambda x: x is None or _count(x, 1), "None or a whole number of pixels >= 1"),
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
        self.check_options(
            base_url=base_url, max_concurrency=max_concurrency, timeout=timeout, deadline=deadline,
            max_retries=max_retries, max_retry_after=max_retry_after, max_reply_bytes=max_reply_bytes,
            backoff_base=backoff_base, backoff_max=backoff_max, check=check, on_unavailable=on_unavailable,
            image_format=image_format, max_pixels=max_pixels, structured_output=structured_output,
            extra_body=extra_body, max_tokens_param=max_tokens_param, sampling_params=sampling_params)
        if image_format is not None:
            image_format = {"JPG": "JPEG"}.get(image_format.upper(), image_format.upper())
        host = urlsplit(base_url).hostname if base_url else _OPENAI_HOST
        if max_tokens_param is None:
            max_tokens_param = "max_completion_tokens" if host == _OPENAI_HOST else "max_tokens"

        self.model = model
        self.revision = revision
        self.base_url = base_url.strip() if base_url else base_url
        self._api_root = (self.base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")
        self.default_sampling = sampling or Sampling()
        self.max_concurrency = max_concurrency
        self.batch_size = max_concurrency
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        self.max_retries = max_retries
        self.max_retry_after = float(max_retry_after)
        self.max_reply_bytes = max_reply_bytes
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
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

        key_var = "GEMINI_API_KEY" if host == _GEMINI_HOST else "OPENAI_API_KEY"
        api_key = api_key or os.environ.get(key_var)
        if not api_key:
            if host in (_OPENAI_HOST, _GEMINI_HOST):
                raise JudgeError(f"no API key for {model!r} at {host}: set {key_var} or pass api_key=")
            api_key = "EMPTY"  # local servers usually take any key
        self._key_hint = key_var
        # The key lives only in these headers; _scrub removes it from any text we emit. Replies
        # are asked uncompressed (and counted as they arrive, decompressed if a server compresses
        # anyway) against max_reply_bytes.
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "Accept-Encoding": "identity",
                         "User-Agent": "t2i-reason (OpenAI-compatible judge)"}
        self._session = None  # the aiohttp session, made on the private loop at the first request
        self._loop: _LoopThread | None = None
        self._closed = False
        self._loop_lock = threading.Lock()
        self._semaphore: asyncio.Semaphore | None = None
        self._check_first = check
        self._checked = False
        self._check_lock: asyncio.Lock | None = None
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
        for name, value in options.items():
            rule = _OPTION_RULES.get(name)
            if rule is not None and not rule[0](value):
                raise JudgeOptionError(f"the openai judge's {name} must be {rule[1]}, got {value!r}")

    # -- identity ----------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        ident = {**super().identity(), "base_url": _public_url(self.base_url),
                 "image_format": self.image_format, "max_pixels": self.max_pixels}
        if self.sampling_params is not None:  # fields left to the server change replies
            ident["sampling_params"] = list(self.sampling_params)
        return ident

    def __repr__(self) -> str:
        where = f" at {_public_url(self.base_url)}" if self.base_url else ""
        rev = f"@{self.revision}" if self.revision else ""
        return f"OpenAIJudge(openai:{self.model}{rev}{where})"

    @property
    def _where(self) -> str:
        return _public_url(self._api_root)

    def _scrub(self, text: str) -> str:
        key = self._headers["Authorization"].removeprefix("Bearer ")
        if key and key != "EMPTY" and len(key) >= 4:
            text = text.replace(key, "***")
        return re.sub(r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-***", text)

    # -- callers' entry points ---------------------------------------------

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Answer every request, all in flight at once (at most ``max_concurrency``
        on the wire). ``on_reply`` and the progress bar run in the caller's thread
        as replies arrive, in completion order.

        Before the judge's first request, the endpoint is checked (see ``check``). Raises
        :class:`JudgeUnavailable` when the endpoint evidently cannot answer (``on_unavailable``);
        every reply received before has been given to ``on_reply``."""
        requests = list(requests)
        if not requests:
            return []
        replies: list[Reply | None] = [None] * len(requests)
        # With callbacks, each reply's index is handed to this thread as it arrives; without,
        # this thread just waits for the end (a hand-off per reply costs the loop thread a
        # GIL switch per reply).
        stream = on_reply is not None or bool(progress)
        done: queue.SimpleQueue = queue.SimpleQueue()

        async def run_all():
            await self._ensure_checked()
            _BATCH_ENDED.set([False])  # tasks created below copy this context, so they share the flag

            async def one(i: int, req: ChatRequest):
                replies[i] = await self._ask(req)
                if stream:
                    done.put(i)

            tasks = [asyncio.ensure_future(one(i, r)) for i, r in enumerate(requests)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:  # JudgeUnavailable or cancellation: nothing else goes out
                for task in tasks:
                    task.cancel()
                raise

        future = self._loop_thread().submit(run_all())
        future.add_done_callback(lambda _: done.put(None))  # wakes us when run_all ends, early or not
        try:
            if stream:
                with progress_bar(len(requests), progress, desc=f"judge {self.model}") as bar:
                    while (i := done.get()) is not None:
                        if on_reply is not None:
                            on_reply(i, replies[i])
                        bar.update(1)
            future.result()
        except BaseException:
            future.cancel()
            raise
        return replies  # type: ignore[return-value]

    def check(self) -> None:
        """Make sure the endpoint answers and serves the model, as happens before the first request
        (unless ``check=False``): raises :class:`JudgeUnavailable` if it cannot be reached or does not
        answer, :class:`JudgeError` if it refuses the key or does not serve the model."""
        self._loop_thread().submit(self._ensure_checked(force=True)).result()

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
                             f"{self._where} failed; first: {first}{what}")
        out = []
        for q, r in zip(queries, replies):
            if not r.logprobs:
                raise JudgeError(
                    f"the server at {self._where} answered {self.model}'s one-token request without the "
                    f"log-probabilities it asked for ({asked}): it ignores those fields, so no answer probability "
                    "can be read through it (vLLM and OpenAI's API return them; a server that does not needs an "
                    "option to enable them, or use the hf backend)")
            out.append(answer_logprob(r.logprobs[0].top, q.answer))
        return out

    def close(self) -> None:
        """Close the HTTP client and stop the private event loop."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
            encoder, self._encoder = self._encoder, None
            self._closed = True
        if loop is not None:
            loop.close(self._close_session)
        if encoder is not None:
            encoder.shutdown(wait=False)

    def __del__(self):
        if getattr(self, "_loop", None) is not None:
            self.close()

    # -- on the loop -------------------------------------------------------

    def _loop_thread(self) -> _LoopThread:
        with self._loop_lock:
            if self._closed:
                raise JudgeError(f"{self} is closed")
            if self._loop is None:
                self._loop = _LoopThread()
                _OPEN.add(self)
            return self._loop

    async def _ensure_checked(self, force: bool = False) -> None:
        """The endpoint check, once per judge (again when ``force``), before any request goes out."""
        if self._checked and not force or not (self._check_first or force):
            return
        if self._check_lock is None:  # created on the private loop, the only one using it
            self._check_lock = asyncio.Lock()
        async with self._check_lock:
            if self._checked and not force:
                return
            await self._check_endpoint()
            self._checked = True

    async def _check_endpoint(self) -> None:
        """Is the model served? ``GET /models`` when the server lists its models; else (no list, a
        list it fails to give, or a list without the model: proxies route more than they list) a
        one-token request. ``transformers serve`` answers ``GET /models`` with HTTP 500 when its
        Hub cache folder does not exist: a server that answers, but with no usable list."""
        budget = _Budget(min(self.deadline, _CHECK_DEADLINE))
        retries = min(self.max_retries, 2)
        listed: list[str] | None = None
        try:
            listing = await self._with_retries(  # an error status is not asked again: the probe follows
                lambda: self._on_the_wire(lambda: self._call("GET", "/models"), budget),
                budget, max_retries=retries, retry_connect=False, retry_status=False)
            data = listing.get("data") if isinstance(listing, dict) else None
            if isinstance(data, list):
                listed = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
        except Exception as e:
            # no usable list (none served, or one the server fails to give): the one-token request
            # decides; a refused key is said now
            absent = _kind(e) == "malformed" or _kind(e) == "status" and e.status not in (401, 403)
            if not absent:
                raise self._unusable(e, "listing the served models (GET /models)") from None
        if listed and (self.model in listed or f"models/{self.model}" in listed):
            return
        body = _dumps({"model": self.model, "messages": [{"role": "user", "content": "Reply with OK."}],
                       "temperature": 0.0, self.max_tokens_param: 1, **self.extra_body})
        try:
            await self._with_retries(
                lambda: self._on_the_wire(lambda: self._call("POST", "/chat/completions", body), budget),
                budget, max_retries=retries, retry_connect=False)
        except Exception as e:
            if _kind(e) == "status" and e.status in (400, 422):
                return  # it answers, and took the model: only this tiny request displeased it
            if _kind(e) == "status" and e.status == 404:
                served = ""
                if listed:
                    import difflib

                    close = difflib.get_close_matches(self.model, listed, n=1, cutoff=0.6)
                    served = (f"; it serves {', '.join(listed[:20])}{' ...' if len(listed) > 20 else ''}"
                              + (f" (did you mean {close[0]!r}?)" if close else ""))
                raise JudgeError(f"{self}: the server does not serve a model named {self.model!r}{served} "
                                 f"({self._describe(e)})") from None
            raise self._unusable(e, "a one-token test request") from None

    def _unusable(self, exc: BaseException, doing: str) -> JudgeError:
        """The error for a failed endpoint check: unavailable (nothing answers, or not in time) or not usable."""
        text = self._describe(exc)
        if _unavailable(exc) or _kind(exc) == "status" and exc.status >= 500:
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
            except _HTTPStatus as e:
                if not (e.status == 400 and structured and self.structured_output == "auto"):
                    raise
                # The server does not take response_format: keep the schema in the prompt only.
                logger.warning("%s rejected response_format=json_schema; sending requests without it", self)
                self._structured_ok = False
                return await self._send(request, sampling, False)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # any failure becomes this request's Reply.error
            error = self._describe(e)
            refused = _kind(e) == "status" and e.status in (401, 403)
            if refused or self.on_unavailable == "raise" and _unavailable(e):
                if (ended := _BATCH_ENDED.get()) is not None:
                    ended[0] = True
                if refused:  # the key, not this request: every other request would be refused too
                    raise JudgeAuthError(f"{self} refused the credentials: {error}. Replies received before are "
                                         "kept; fix the key (or its permissions) and run again") from None
                raise JudgeUnavailable(
                    f"{self} cannot answer: {error}. Replies received before are kept; "
                    "on_unavailable='record' records such failures and goes on") from None
            return Reply(text="", model=self.model, sampling=sampling.to_dict(), error=error, transient=_transient(e))

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
        budget = _Budget(self.deadline)

        async def attempt() -> Reply:
            # The body is built in the slot, so at most max_concurrency bodies exist at once.
            completion = await self._on_the_wire(
                lambda: self._call("POST", "/chat/completions", self._request_bytes(request, sampling, structured)),
                budget)
            return self._to_reply(completion, sampling, structured)

        return await self._with_retries(attempt, budget)

    async def _on_the_wire(self, call: Callable[[], Awaitable[Any]], budget: _Budget) -> Any:
        """``call()`` in one of the ``max_concurrency`` slots, its whole time bounded by ``timeout``
        (and by what is left of the request's deadline)."""
        if self._semaphore is None:  # created on the private loop, which is the only one using it
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        async with self._semaphore:
            if (ended := _BATCH_ENDED.get()) is not None and ended[0]:
                raise asyncio.CancelledError  # its batch ended while it waited for the slot
            limit, by_deadline = budget.attempt_limit(self.timeout)
            started = time.monotonic()
            try:
                return await _within(limit, call())
            except asyncio.TimeoutError:  # noqa: UP041 - not TimeoutError on Python 3.10
                raise _TimedOut(limit, by_deadline) from None
            except Exception as e:
                e.attempt_seconds = time.monotonic() - started  # for the error message
                raise

    async def _with_retries(self, call: Callable[[], Awaitable[Any]], budget: _Budget, *,
                            max_retries: int | None = None, retry_connect: bool = True,
                            retry_status: bool = True) -> Any:
        """``call()``, retried by tenacity after retryable failures: at most ``max_retries`` times,
        never past the request's deadline, and not when the server asks for a wait longer than
        ``max_retry_after``. The exception that ends it carries ``attempts``, ``elapsed`` and
        ``stopped`` (why retrying stopped early) for :meth:`_describe`.

        The first attempt runs before any retrier exists: nearly every request succeeds at once,
        and building a tenacity retrier per request cost a sixth of the client's CPU time per
        request (perf/README.md). Only a failed request pays for its retries."""
        max_retries = self.max_retries if max_retries is None else max_retries

        def retryable(exc: BaseException) -> bool:
            return _retryable(exc) and (retry_connect or _kind(exc) != "connect") and (
                retry_status or _kind(exc) != "status")

        try:
            return await call()
        except Exception as e:
            if max_retries < 1 or not retryable(e):
                _annotate(e, 1, budget, None)
                raise
            first = e
        import tenacity

        why: list[str] = []

        def stop(state) -> bool:
            asked = _retry_after(state.outcome.exception())
            if asked is not None and asked > self.max_retry_after:
                why.append(f"the server asked to wait {asked:g} s (Retry-After), more than "
                           f"max_retry_after={self.max_retry_after:g} s")
                return True
            if budget.used() + state.upcoming_sleep >= budget.deadline:
                why.append(f"the request's deadline of {budget.deadline:g} s "
                           + ("has passed" if budget.used() >= budget.deadline else "would pass before the next attempt"))
                return True
            return state.attempt_number > max_retries

        retrying = tenacity.AsyncRetrying(
            stop=stop,
            wait=lambda state: self._wait(state.outcome.exception(), state.attempt_number),
            retry=tenacity.retry_if_exception(retryable),
            before_sleep=lambda state: self._log_retry(state, max_retries),
            reraise=True,
        )

        async def attempts():
            if retrying.statistics["attempt_number"] == 1:  # tenacity's first call replays the failure seen above
                raise first
            return await call()

        try:
            return await retrying(attempts)
        except Exception as e:
            _annotate(e, retrying.statistics.get("attempt_number", 1), budget, why[-1] if why else None)
            raise

    def _log_retry(self, state, max_retries: int) -> None:
        logger.warning("%s: %s; retry %d of %d in %.2f s", self, self._describe(state.outcome.exception()),
                       state.attempt_number, max_retries, state.next_action.sleep)

    def _wait(self, exc: BaseException, attempt: int) -> float:
        """The server's Retry-After when it gives one (up to ``max_retry_after``), else exponential
        backoff with full jitter."""
        asked = _retry_after(exc)
        if asked is not None:
            return min(asked, self.max_retry_after)
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))

    async def _call(self, method: str, path: str, body: bytes | None = None) -> Any:
        """One HTTP exchange with the API: the reply's JSON, or the failure as an exception.

        aiohttp directly: the body is JSON bytes already and the reply is read as plain JSON, so
        nothing between needs doing; openai's client (request options, httpx2's request and
        response models over the same aiohttp transport) cost three to four times the CPU of the
        exchange itself per request, and that CPU time is what bounds how many requests one
        event loop keeps in flight (perf/README.md)."""
        if self._session is None:  # on the private loop, which is the only one using it
            import aiohttp
            from yarl import URL

            proxy = _env_proxy(self._api_root)
            self._session = aiohttp.ClientSession(
                headers=self._headers, proxy=proxy, proxy_auth=proxy and aiohttp.BasicAuth.from_url(URL(proxy)),
                connector=aiohttp.TCPConnector(limit=0, ssl=_ssl_context()),  # the semaphore bounds it
                timeout=aiohttp.ClientTimeout(total=None))  # _on_the_wire bounds every attempt whole
        async with self._session.request(method, self._api_root + path, data=body) as response:
            data = await self._read(response)
            if response.status >= 400:
                raise _HTTPStatus(response.status, _error_message(data), response.headers)
        try:
            return json.loads(data)
        except ValueError:
            raise _Malformed(f"not JSON ({data[:200]!r})") from None

    async def _read(self, response) -> bytes:
        """The reply body, refused once it passes ``max_reply_bytes`` (announced, or as it arrives)."""
        limit = self.max_reply_bytes
        length = response.content_length
        if length is not None and length > limit:
            raise _ReplyTooLarge(limit, length)
        if length is not None and response.headers.get("Content-Encoding", "identity") == "identity":
            return await response.read()  # its size is known and within the limit
        chunks, received = [], 0
        async for chunk in response.content.iter_any():  # chunked, or decompressed as it arrives
            received += len(chunk)
            if received > limit:
                raise _ReplyTooLarge(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _describe(self, exc: BaseException) -> str:
        """What happened, clearly and without the key: the failure, how many attempts over how long,
        and why retrying stopped early."""
        kind = _kind(exc)
        where = self._where
        spent = getattr(exc, "attempt_seconds", None)
        if kind == "status":
            msg, status = exc.message, exc.status
            if status == 401:
                msg = f"authentication failed at {where}: check the API key ({self._key_hint} or api_key=): {msg}"
            elif status == 403:
                msg = f"permission denied for {self.model!r} at {where}: {msg}"
            elif status == 404:
                msg = f"not found: model {self.model!r} or endpoint {where}/chat/completions: {msg}"
            elif status == 400:
                msg = f"bad request (not retried): {msg}"
            text = f"HTTP {status}: {msg}"
        elif isinstance(exc, _TimedOut):
            text = (f"timed out: no complete reply within the {exc.seconds:.3g} s left of the request's deadline"
                    if exc.by_deadline else f"timed out: no complete reply within {exc.seconds:.3g} s (timeout)")
        elif kind in ("connect", "connection", "tls"):
            cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            after = f" after {spent:.1f} s" if spent is not None else ""
            text = {"connect": f"cannot connect to {where}: {cause}",
                    "tls": f"the certificate of {where} was refused (not retried): {cause}",
                    "connection": f"connection to {where} failed{after}: {cause}"}[kind]
        elif kind == "malformed":
            text = f"malformed response: {exc}"
        elif kind == "too_large":
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        attempts = getattr(exc, "attempts", 1)
        if attempts > 1:
            text += f" ({attempts} attempts in {getattr(exc, 'elapsed', 0.0):.1f} s)"
        if getattr(exc, "stopped", None):
            text += f"; no more retries: {exc.stopped}"
        return self._scrub(text)

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
            return _dumps(fields)
        fmt, max_pixels = self.image_format, self.max_pixels
        chunks = [b'{"messages":[']
        for n, m in enumerate(request.messages):
            if n:
                chunks.append(b",")
            if all(isinstance(p, str) for p in m.content):
                chunks.append(_dumps({"role": m.role, "content": "".join(m.content)}))
                continue
            chunks += [b'{"role":', _dumps(m.role), b',"content":[']
            for k, p in enumerate(m.content):
                if k:
                    chunks.append(b",")
                if isinstance(p, str):
                    chunks.append(_dumps({"type": "text", "text": p}))
                else:
                    chunks += [b'{"type":"image_url","image_url":{"url":"', p.data_url_bytes(fmt, max_pixels), b'"}}']
            chunks.append(b"]}")
        rest = _dumps(fields)
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
                             error=self._scrub(f"refused: {message['refusal']}"))
            if not isinstance(text, str | None):
                raise TypeError(f"content is a {type(text).__name__}")
            content = (choice.get("logprobs") or {}).get("content")
            logprobs = [TokenLogprob(_token(t["token"]), _logprob(t["logprob"]),
                                     merge_top((_token(a["token"]), _logprob(a["logprob"]))
                                               for a in t.get("top_logprobs") or []))
                        for t in content] if content else None
            usage = {k: v for k, v in (completion.get("usage") or {}).items() if isinstance(v, int)} or None
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise _Malformed(f"not a chat completion ({str(completion)[:200]})") from e
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


def _annotate(exc: BaseException, attempts: int, budget: _Budget, stopped: str | None) -> None:
    """Note on ``exc`` how the request went, for :meth:`OpenAIJudge._describe`."""
    exc.attempts = attempts
    exc.elapsed = budget.used()
    exc.stopped = stopped
