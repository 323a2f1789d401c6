"""Judges behind an OpenAI-compatible chat-completions endpoint.

OpenAI itself, Gemini's OpenAI-compatible endpoint, or a vLLM / SGLang server::

    load_judge("openai:gpt-4.1")
    load_judge("openai:Qwen/Qwen2.5-VL-72B-Instruct@http://localhost:8000/v1")

The whole batch is in flight at once, bounded by ``max_concurrency``; each
request is retried with exponential backoff and full jitter on 429, 5xx, time-outs,
connection errors and malformed responses (honouring ``Retry-After``); a request
that still fails comes back as a ``Reply`` with ``error`` set. Other 4xx fail
at once with a message saying what to fix. The API key never appears in a
repr, a log line, a reply, an exception or :meth:`identity`.

Answer probabilities (VQAScore through an API) come from a one-token reply with
its top log-probabilities; see :func:`answer_logprob` for how token variants
and absent answers are handled.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import email.utils
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
from .base import AnswerQuery, ChatRequest, Judge, JudgeError, Reply, Sampling, TokenLogprob

__all__ = ["OpenAIJudge", "answer_logprob", "merge_top"]

logger = logging.getLogger(__name__)

#: top log-probabilities asked for a one-token answer (the most OpenAI allows)
ANSWER_TOP_LOGPROBS = 20
_GEMINI_HOST = "generativelanguage.googleapis.com"
_OPENAI_HOST = "api.openai.com"


def merge_top(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    """token -> logprob, adding up (log-sum-exp) entries that decode to the same
    string (distinct token ids can share a text)."""
    top: dict[str, float] = {}
    for token, lp in pairs:
        top[token] = lp if token not in top else float(_logaddexp(top[token], lp))
    return top


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
    if hits:
        return float(math.log(sum(math.exp(lp) for lp in hits)))
    prefixes = [tok for tok in top if tok.strip() and want.startswith(tok.strip())]
    if prefixes:
        raise JudgeError(f"answer {answer!r} seems to span several tokens (candidates {prefixes!r} are "
                         "only its beginning); a chat API cannot teacher-force the rest "
                         "(use the hf backend for multi-token answers)")
    return -math.inf


class _Malformed(Exception):
    """The server answered 200 with something that is not a chat completion."""


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return None if when is None else max(0.0, when.timestamp() - time.time())


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    # time-outs are connection errors; a body that is not JSON is usually a proxy hiccup
    return isinstance(exc, (openai.APIConnectionError, _Malformed, json.JSONDecodeError))


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


def _http_client(timeout: float):
    """openai's aiohttp transport where aiohttp is installed (the ``openai[aiohttp]``
    extra), else ``None``: openai's default httpx2 one. openai recommends aiohttp for
    concurrency: it spends about half the CPU time per request, and that time is what
    bounds how many requests keep in flight (``perf/judges.py``)."""
    import openai

    try:
        return openai.DefaultAioHttpClient(timeout=timeout)
    except RuntimeError:  # aiohttp is not installed
        return None


def _connection_failure(exc: BaseException) -> bool:
    """Whether a time-out reported by the client was in fact a refused or failed
    connection (the aiohttp transport reports those as connect time-outs)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return isinstance(exc, OSError) and not isinstance(exc, TimeoutError)


class OpenAIJudge(Judge):
    """A judge served over an OpenAI-compatible chat-completions API.

    Parameters
    ----------
    model: the served model name (``gpt-4.1``, ``Qwen/Qwen2.5-VL-72B-Instruct``...).
    base_url: the API root (``http://host:8000/v1``); ``None`` is OpenAI's.
    api_key: else ``GEMINI_API_KEY`` for Gemini's endpoint, ``OPENAI_API_KEY``
        otherwise; a server of your own may need none (a dummy is sent).
    max_concurrency: requests in flight at once.
    timeout: seconds per request attempt.
    max_retries: retries after the first attempt, for retryable failures.
    backoff_base, backoff_max: exponential backoff with full jitter, in seconds.
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
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        sampling: Sampling | None = None,
        image_format: str | None = None,
        max_pixels: int | None = None,
        structured_output: bool | str = "auto",
        extra_body: dict[str, Any] | None = None,
        max_tokens_param: str | None = None,
        revision: str | None = None,
    ):
        try:
            import openai
        except ImportError as e:
            raise JudgeError("the openai backend needs the openai package: pip install 't2i-reason[openai]'") from e
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if structured_output not in (True, False, "auto"):
            raise ValueError(f"structured_output must be True, False or 'auto', got {structured_output!r}")
        if image_format is not None:
            image_format = {"JPG": "JPEG"}.get(str(image_format).upper(), str(image_format).upper())
            if image_format not in ("PNG", "JPEG", "WEBP"):
                raise ValueError(f"image_format must be None (as is), PNG, JPEG or WEBP, got {image_format!r}")
        host = urlsplit(base_url).hostname if base_url else _OPENAI_HOST
        if max_tokens_param is None:
            max_tokens_param = "max_completion_tokens" if host == _OPENAI_HOST else "max_tokens"
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"max_tokens_param must be 'max_tokens' or 'max_completion_tokens', got {max_tokens_param!r}")

        self.model = model
        self.revision = revision
        self.base_url = base_url
        self.default_sampling = sampling or Sampling()
        self.max_concurrency = max_concurrency
        self.batch_size = max_concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.image_format = image_format
        self.max_pixels = max_pixels
        self.structured_output = structured_output
        self.extra_body = dict(extra_body or {})
        self.max_tokens_param = max_tokens_param

        key_var = "GEMINI_API_KEY" if host == _GEMINI_HOST else "OPENAI_API_KEY"
        api_key = api_key or os.environ.get(key_var)
        if not api_key:
            if host in (_OPENAI_HOST, _GEMINI_HOST):
                raise JudgeError(f"no API key for {model!r} at {host}: set {key_var} or pass api_key=")
            api_key = "EMPTY"  # local servers usually take any key
        self._key_hint = key_var
        # The key lives only inside the client; _scrub removes it from any text we emit.
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout, max_retries=0,
                                          http_client=_http_client(self.timeout))
        self._loop: _LoopThread | None = None
        self._closed = False
        self._loop_lock = threading.Lock()
        self._semaphore: asyncio.Semaphore | None = None
        self._structured_ok = structured_output is not False

    # -- identity ----------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "base_url": _public_url(self.base_url),
                "image_format": self.image_format, "max_pixels": self.max_pixels}

    def __repr__(self) -> str:
        where = f" at {_public_url(self.base_url)}" if self.base_url else ""
        rev = f"@{self.revision}" if self.revision else ""
        return f"OpenAIJudge(openai:{self.model}{rev}{where})"

    def _scrub(self, text: str) -> str:
        key = self._client.api_key
        if key and key != "EMPTY" and len(key) >= 4:
            text = text.replace(key, "***")
        return re.sub(r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-***", text)

    # -- callers' entry points ---------------------------------------------

    def chat(self, requests: Sequence[ChatRequest], *, progress: bool | str = False,
             on_reply: Callable[[int, Reply], None] | None = None) -> list[Reply]:
        """Answer every request, all in flight at once (at most ``max_concurrency``
        on the wire). ``on_reply`` and the progress bar run in the caller's thread
        as replies arrive, in completion order."""
        requests = list(requests)
        if not requests:
            return []
        replies: list[Reply | None] = [None] * len(requests)
        done: queue.SimpleQueue = queue.SimpleQueue()

        async def run_all():
            async def one(i: int, req: ChatRequest):
                done.put((i, await self._ask(req)))

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))

        future = self._loop_thread().submit(run_all())
        future.add_done_callback(lambda _: done.put(None))  # wakes us if run_all died early
        with progress_bar(len(requests), progress, desc=f"judge {self.model}") as bar:
            try:
                for _ in requests:
                    item = done.get()
                    if item is None:
                        break
                    i, reply = item
                    replies[i] = reply
                    if on_reply is not None:
                        on_reply(i, reply)
                    bar.update(1)
            except BaseException:
                future.cancel()
                raise
        future.result()
        return replies  # type: ignore[return-value]

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
        failed = [r for r in replies if not r.ok]
        if failed:
            hint = (" (a model that refuses logprobs, as reasoning models do, cannot give answer probabilities)"
                    if any("logprob" in (r.error or "").lower() or "HTTP 400" in (r.error or "") for r in failed)
                    else "")
            raise JudgeError(f"{len(failed)} of {len(replies)} answer-probability requests to {self.model} "
                             f"failed; first: {failed[0].error}{hint}")
        out = []
        for q, r in zip(queries, replies):
            if not r.logprobs:
                raise JudgeError(f"{self.model} returned no log-probabilities; it cannot give answer "
                                 "probabilities (reasoning models refuse logprobs)")
            out.append(answer_logprob(r.logprobs[0].top, q.answer))
        return out

    def close(self) -> None:
        """Close the HTTP client and stop the private event loop."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
            self._closed = True
        if loop is not None:
            loop.close(self._client.close)

    def __del__(self):
        if getattr(self, "_loop", None) is not None:
            self.close()

    # -- one request -------------------------------------------------------

    def _loop_thread(self) -> _LoopThread:
        with self._loop_lock:
            if self._closed:
                raise JudgeError(f"{self} is closed")
            if self._loop is None:
                self._loop = _LoopThread()
                _OPEN.add(self)
            return self._loop

    async def _ask(self, request: ChatRequest) -> Reply:
        """One request, retried; never raises (but for cancellation)."""
        import openai

        sampling = self.resolve_sampling(request)
        structured = request.json_schema is not None and self._structured_ok
        try:
            try:
                return await self._send(request, sampling, structured)
            except openai.BadRequestError:
                if not (structured and self.structured_output == "auto"):
                    raise
                # The server does not take response_format: keep the schema in the prompt only.
                logger.warning("%s rejected response_format=json_schema; sending requests without it", self)
                self._structured_ok = False
                return await self._send(request, sampling, False)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # any failure becomes this request's Reply.error
            return Reply(text="", model=self.model, sampling=sampling.to_dict(), error=self._describe(e))

    async def _send(self, request: ChatRequest, sampling: Sampling, structured: bool) -> Reply:
        """``_attempt``, retried by tenacity after retryable failures (up to ``max_retries`` times).

        The first attempt runs before any retrier exists: nearly every request succeeds at once,
        and building a tenacity retrier per request cost a sixth of the client's CPU time per
        request (perf/README.md). Only a failed request pays for its retries."""
        try:
            return await self._attempt(request, sampling, structured)
        except Exception as e:
            if self.max_retries < 1 or not _retryable(e):
                raise
            first = e
        import tenacity

        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=lambda state: self._wait(state.outcome.exception(), state.attempt_number),
            retry=tenacity.retry_if_exception(_retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )

        async def attempts():
            if retrying.statistics["attempt_number"] == 1:  # tenacity's first call replays the failure seen above
                raise first
            return await self._attempt(request, sampling, structured)

        try:
            return await retrying(attempts)
        except Exception as e:
            e.attempts = retrying.statistics.get("attempt_number", 1)  # for the error message
            raise

    def _log_retry(self, state) -> None:
        logger.warning("%s: %s; retry %d of %d in %.2f s", self, self._describe(state.outcome.exception()),
                       state.attempt_number, self.max_retries, state.next_action.sleep)

    async def _attempt(self, request: ChatRequest, sampling: Sampling, structured: bool) -> Reply:
        if self._semaphore is None:  # created on the private loop, which is the only one using it
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        async with self._semaphore:
            # Built inside the semaphore so image encoding interleaves with requests
            # on the wire; data URLs are memoised on each image.
            body = self._request_body(request, sampling, structured)
            # The body is plain JSON already, and so is the reply we read: post and read them
            # as such (openai's documented way to call an endpoint with a raw body), skipping
            # chat.completions.create's re-typing of every message part and of the reply,
            # which costs more CPU than the HTTP exchange itself.
            completion = await self._client.post("/chat/completions", body=body, cast_to=object)
        return self._to_reply(completion, sampling)

    def _wait(self, exc: BaseException, attempt: int) -> float:
        """The server's Retry-After when it gives one, else exponential backoff with full jitter."""
        asked = _retry_after(exc)
        if asked is not None:
            return asked
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))

    def _describe(self, exc: BaseException) -> str:
        """A clear, key-free message for a failed request."""
        import openai

        attempts = getattr(exc, "attempts", 1)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        where = _public_url(self.base_url) or _OPENAI_HOST
        if isinstance(exc, openai.APIStatusError):
            msg = exc.message
            status = exc.status_code
            if status == 401:
                msg = f"authentication failed at {where}: check the API key ({self._key_hint} or api_key=): {msg}"
            elif status == 403:
                msg = f"permission denied for {self.model!r} at {where}: {msg}"
            elif status == 404:
                msg = f"not found: model {self.model!r} or endpoint {where}/chat/completions: {msg}"
            elif status == 400:
                msg = f"bad request (not retried): {msg}"
            text = f"HTTP {status}{tries}: {msg}"
        elif isinstance(exc, openai.APITimeoutError) and not _connection_failure(exc):
            text = f"timed out after {self.timeout:g} s{tries}"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            text = f"cannot connect to {where}{tries}: {cause or exc}"
        elif isinstance(exc, (_Malformed, json.JSONDecodeError)):
            text = f"malformed response{tries}: {exc}"
        else:
            text = f"{type(exc).__name__}{tries}: {exc}"
        return self._scrub(text)

    # -- translation -------------------------------------------------------

    def _content(self, parts: tuple[str | JudgeImage, ...]) -> str | list[dict[str, Any]]:
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)  # plain string: accepted by every server for every role
        return [{"type": "text", "text": p} if isinstance(p, str)
                else {"type": "image_url", "image_url": {"url": p.data_url(self.image_format, self.max_pixels)}}
                for p in parts]

    def _request_body(self, request: ChatRequest, sampling: Sampling, structured: bool) -> dict[str, Any]:
        """The chat-completions request body (JSON), ``extra_body`` merged in."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": self._content(m.content)} for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            self.max_tokens_param: sampling.max_tokens,
        }
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        if request.top_logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = request.top_logprobs
        if structured:
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(request.json_schema.get("title", "reply")))[:64]
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "schema": request.json_schema}}
        return {**kwargs, **self.extra_body}

    def _to_reply(self, completion: Any, sampling: Sampling) -> Reply:
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
            logprobs = [TokenLogprob(t["token"], t["logprob"],
                                     merge_top((a["token"], a["logprob"]) for a in t.get("top_logprobs") or []))
                        for t in content] if content else None
            usage = {k: v for k, v in (completion.get("usage") or {}).items() if isinstance(v, int)} or None
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise _Malformed(f"not a chat completion ({str(completion)[:200]})") from e
        return Reply(text=text or "", model=completion.get("model") or self.model, sampling=sampling.to_dict(),
                     logprobs=logprobs, finish_reason=choice.get("finish_reason"), usage=usage)
