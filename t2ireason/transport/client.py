"""The transport: one API root, its connections on a private event loop, bounded concurrency, retries,
deadlines and reply limits (see :mod:`t2ireason.transport`)."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import json
import logging
import queue
import random
import re
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from ..console import next_from, result_of
from ..progress import progress_bar
from .concurrency import BUSY_STATUSES, AdaptiveLimit
from .failures import (
    HTTPStatus,
    Malformed,
    ReplyTooLarge,
    TimedOut,
    error_code,
    error_message,
    failure_kind,
    retry_after,
    retryable,
)
from .settings import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_TIMEOUT,
    Endpoint,
    env_proxy,
    ssl_context,
)

__all__ = ["Transport", "Budget", "json_bytes", "served_hint", "NotDownloaded"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The batch a request belongs to: once one of its requests ends it (the endpoint is unavailable), a
# request of it that gets a slot afterwards must not go out (the slot is handed to the next waiter
# before the failing request's batch is cancelled).
_BATCH_ENDED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("t2ireason_batch_ended", default=None)


async def _within(seconds: float, awaitable: Awaitable[Any]) -> Any:
    """``awaitable``, cancelled after ``seconds`` with ``asyncio.TimeoutError``."""
    if sys.version_info >= (3, 11):  # noqa: UP036 - the package installs on Python 3.10 too
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10


class Budget:
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


class NotDownloaded(ValueError):
    """A link a reply gave that is not fetched (not http or https: ``file:``, ``ftp:``...)."""


def _annotate(exc: BaseException, attempts: int, budget: Budget, stopped: str | None) -> None:
    """Note on ``exc`` how the request went, for :meth:`Transport.describe`."""
    exc.attempts = attempts
    exc.elapsed = budget.used()
    exc.stopped = stopped


def json_bytes(obj: Any) -> bytes:
    """Compact JSON."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def served_hint(model: str, listed: Sequence[str] | None) -> str:
    """What a server lists, for a message about a model it does not serve: ``"; it serves a, b (did you
    mean 'a'?)"``, or nothing without a list."""
    if not listed:
        return ""
    import difflib

    close = difflib.get_close_matches(model, list(listed), n=1, cutoff=0.6)
    return (f"; it serves {', '.join(listed[:20])}{' ...' if len(listed) > 20 else ''}"
            + (f" (did you mean {close[0]!r}?)" if close else ""))


# -- the private event loop --------------------------------------------------------------------------------

class _LoopThread:
    """A private event loop in a daemon thread: the transport's calls stay synchronous for
    callers, even those already inside a running loop (Jupyter), and the HTTP client keeps
    one loop (and its pooled connections) for its whole life."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="t2ireason-http", daemon=True)
        self.thread.start()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self, last: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Cancel what still runs on the loop (a caller's thread waiting for it is woken with the
        cancellation), run ``last()`` (the HTTP client's close), stop the loop, and close it once its
        thread has ended. Safe from a finalizer, even one on the loop's thread."""
        if self.loop.is_closed():
            return

        async def stop():
            try:
                others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in others:
                    task.cancel()
                if others:
                    await asyncio.wait(others, timeout=5)
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


#: transports not closed yet, closed at exit while their loop threads still run (so the HTTP
#: client's connections are closed properly, not reported as leaked)
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_transports() -> None:
    for transport in list(_OPEN):
        transport.close()


# -- the transport -----------------------------------------------------------------------------------------

class Transport:
    """JSON over HTTP(S) to one OpenAI-compatible API root; see the module's description.

    ``base_url`` is the API root (``None``: ``OPENAI_BASE_URL`` or OpenAI's); ``api_key`` else
    ``GEMINI_API_KEY`` for Gemini's endpoint, ``OPENAI_API_KEY`` otherwise (a server of your own may
    need none: a dummy is sent), or the base URL's ``user:password@`` (HTTP Basic). ``name`` (the
    owner's repr) and ``model`` name what is asked in log lines and messages. The other options are
    the reliability limits (:data:`OPTION_RULES`), checked by the caller.
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None, name: str = "Transport",
                 model: str | None = None, user_agent: str = "t2i-reason", max_concurrency: int = 16,
                 timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE,
                 max_retries: int = DEFAULT_MAX_RETRIES, max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, backoff_base: float = 1.0, backoff_max: float = 60.0):
        self.endpoint = Endpoint.resolve(base_url, api_key, model)
        #: the API root requests go to (without credentials), and as messages name it
        self.root, self.where = self.endpoint.root, self.endpoint.where
        self.name = name
        self.model = model
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        self.max_retries = max_retries
        self.max_retry_after = float(max_retry_after)
        self.max_reply_bytes = max_reply_bytes
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        # The credentials live only in these headers; scrub() removes them from any text we emit. Replies
        # are asked uncompressed (and counted as they arrive, decompressed if a server compresses anyway)
        # against max_reply_bytes.
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "Accept-Encoding": "identity", "User-Agent": user_agent}
        # sent with each request to the API root, never to another origin (a file a reply links to)
        self._auth = {"Authorization": self.endpoint.authorization}
        self._session = None  # the aiohttp session, made on the private loop at the first request
        self._loop: _LoopThread | None = None
        self._closed = False
        self._loop_lock = threading.Lock()
        #: requests on the wire at once: max_concurrency, fewer while the server is overwhelmed
        self.concurrency = AdaptiveLimit(max_concurrency, name)
        self._checked = False
        self._check_lock: asyncio.Lock | None = None
        self._retried: set[tuple] = set()  # the kinds of failure retried so far (each said once as a warning)

    def __repr__(self) -> str:
        return f"Transport({self.where})"

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the caller's side ---------------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` run on the transport's loop, waited for in this thread."""
        try:
            loop = self._loop_thread()
        except RuntimeError:
            coro.close()  # never to run: closed
            raise
        return result_of(loop.submit(coro))

    def run_batch(self, items: Sequence[Any], ask: Callable[[Any], Awaitable[T]], *,
                  before: Callable[[], Awaitable[Any]] | None = None,
                  on_result: Callable[[int, T], None] | None = None,
                  progress: bool | str = False, desc: str = "", drain: float = 0.0) -> list[T]:
        """``ask(item)`` for every item, all in flight at once on the transport's loop (their
        requests bounded by ``max_concurrency``), after ``before()``; the results in order.
        ``on_result`` and the progress bar run in the caller's thread as results arrive, in
        completion order. The first ``ask`` that raises ends the batch: what waits for a slot is
        not sent, the others are cancelled (after up to ``drain`` seconds in which those already
        sent may finish: a reply paid for is handed over, not dropped), and the exception is
        raised here, every result before it given to ``on_result``."""
        items = list(items)
        if not items:
            return []
        results: list[Any] = [None] * len(items)
        # With callbacks, each result's index is handed to this thread as it arrives; without,
        # this thread just waits for the end (a hand-off per result costs the loop thread a
        # GIL switch per result).
        stream = on_result is not None or bool(progress)
        done: queue.SimpleQueue = queue.SimpleQueue()

        async def run_all():
            if before is not None:
                await before()
            ended = [False]
            _BATCH_ENDED.set(ended)  # tasks created below copy this context, so they share the flag

            async def one(i: int, item: Any):
                try:
                    results[i] = await ask(item)
                except Exception:
                    ended[0] = True
                    raise
                if stream:
                    done.put(i)

            tasks = [asyncio.ensure_future(one(i, item)) for i, item in enumerate(items)]
            try:
                await asyncio.gather(*tasks)
            except BaseException as error:  # the batch ended, or was cancelled: nothing else goes out
                try:
                    pending = [t for t in tasks if not t.done()]
                    if drain > 0 and pending and isinstance(error, Exception):  # what is on the wire may finish
                        await asyncio.wait(pending, timeout=drain)
                finally:
                    for task in tasks:
                        task.cancel()
                raise

        future = self._loop_thread().submit(run_all())
        future.add_done_callback(lambda _: done.put(None))  # wakes us when run_all ends, early or not
        try:
            if stream:
                with progress_bar(len(items), progress, desc=desc) as bar:
                    while (i := next_from(done)) is not None:
                        if on_result is not None:
                            on_result(i, results[i])
                        bar.update(1)
            result_of(future)
        except BaseException:
            future.cancel()
            raise
        return results

    def post_json(self, path: str, body: Any) -> Any:
        """``POST <root><path>`` of ``body`` as JSON; the reply's JSON, retried as :meth:`post` retries it."""
        return self.run(self.post(path, json_bytes(body)))

    def close(self) -> None:
        """Close the HTTP client and stop the private event loop."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
            self._closed = True
        if loop is not None:
            loop.close(self._close_session)

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_loop", None) is not None:
            self.close()

    # -- on the loop ---------------------------------------------------------------------------------------

    async def check_once(self, check: Callable[[], Awaitable[Any]], *, force: bool = False) -> None:
        """``check()`` (an endpoint check) before any request of this transport goes out: once, or
        again when ``force``; concurrent callers wait for the one check."""
        if self._checked and not force:
            return
        if self._check_lock is None:  # created on the private loop, the only one using it
            self._check_lock = asyncio.Lock()
        async with self._check_lock:
            if self._checked and not force:
                return
            await check()
            self._checked = True

    async def post(self, path: str, body: bytes | Callable[[], bytes], **options: Any) -> Any:
        """``POST <root><path>``: see :meth:`request`."""
        return await self.request("POST", path, body, **options)

    async def get(self, path: str, **options: Any) -> Any:
        """``GET <root><path>``: see :meth:`request`."""
        return await self.request("GET", path, None, **options)

    async def request(self, method: str, path: str, body: bytes | Callable[[], bytes] | None = None, *,
                      read: Callable[[Any], T] | None = None, budget: Budget | None = None,
                      max_retries: int | None = None, retry_connect: bool = True, retry_status: bool = True) -> Any:
        """One request, retried: the reply's JSON, or ``read(json)`` (a :class:`Malformed` it raises is
        retried as a malformed reply is). ``body`` is bytes, or a function making them in the request's
        slot (so at most ``max_concurrency`` bodies exist at once). ``budget`` (default: a fresh one of
        ``deadline``) may be shared by several requests; ``max_retries`` overrides the transport's;
        ``retry_connect=False`` and ``retry_status=False`` do not retry a failed connection or an
        error status. A failure is raised, noted for :meth:`describe` (attempts, time, why retrying
        stopped)."""
        budget = budget or Budget(self.deadline)

        async def attempt():
            data = await self._on_the_wire(lambda: self._call(method, path, body() if callable(body) else body), budget)
            return data if read is None else read(data)

        return await self._with_retries(attempt, budget, max_retries=max_retries, retry_connect=retry_connect,
                                        retry_status=retry_status)

    def _loop_thread(self) -> _LoopThread:
        with self._loop_lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            if self._loop is None:
                self._loop = _LoopThread()
                _OPEN.add(self)
            return self._loop

    async def _on_the_wire(self, call: Callable[[], Awaitable[Any]], budget: Budget) -> Any:
        """``call()`` in one of the slots :attr:`concurrency` allows (``max_concurrency``, fewer while the
        server is overwhelmed), its whole time bounded by ``timeout`` (and by what is left of the
        request's deadline)."""
        round_ = await self.concurrency.acquire()
        outcome, why = "failed", ""
        try:
            if (ended := _BATCH_ENDED.get()) is not None and ended[0]:
                raise asyncio.CancelledError  # its batch ended while it waited for the slot
            limit, by_deadline = budget.attempt_limit(self.timeout)
            started = time.monotonic()
            try:
                data = await _within(limit, call())
                outcome = "answered"
                return data
            except asyncio.TimeoutError:  # noqa: UP041 - not TimeoutError on Python 3.10
                failure = TimedOut(limit, by_deadline)
                if not by_deadline:  # the full timeout: the server's queue, most likely
                    outcome, why = "busy", self.describe(failure)
                raise failure from None
            except Exception as e:
                e.attempt_seconds = time.monotonic() - started  # for the error message
                if isinstance(e, HTTPStatus) and e.status in BUSY_STATUSES:
                    outcome, why = "busy", self.describe(e)
                raise
        finally:
            self.concurrency.release(round_, outcome, why)

    async def _with_retries(self, call: Callable[[], Awaitable[Any]], budget: Budget, *,
                            max_retries: int | None = None, retry_connect: bool = True,
                            retry_status: bool = True) -> Any:
        """``call()``, retried by tenacity after retryable failures: at most ``max_retries`` times,
        never past the request's deadline, and not when the server asks for a wait longer than
        ``max_retry_after``. The exception that ends it carries ``attempts``, ``elapsed`` and
        ``stopped`` (why retrying stopped early) for :meth:`describe`.

        The first attempt runs before any retrier exists: nearly every request succeeds at once,
        and building a tenacity retrier per request cost a sixth of the client's CPU time per
        request (perf/README.md). Only a failed request pays for its retries."""
        max_retries = self.max_retries if max_retries is None else max_retries

        def worth_retrying(exc: BaseException) -> bool:
            return retryable(exc) and (retry_connect or failure_kind(exc) != "connect") and (
                retry_status or failure_kind(exc) != "status")

        try:
            return await call()
        except Exception as e:
            if max_retries < 1 or not worth_retrying(e):
                _annotate(e, 1, budget, None)
                raise
            first = e
        import tenacity

        why: list[str] = []

        def stop(state) -> bool:
            asked = retry_after(state.outcome.exception())
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
            retry=tenacity.retry_if_exception(worth_retrying),
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
        """A retry, said once a kind of failure at the warning level (the first), at the debug level after: a
        server that is down, with hundreds of requests waiting, is one line, then its error."""
        exc = state.outcome.exception()
        kind = (failure_kind(exc), getattr(exc, "status", None))
        first = kind not in self._retried
        self._retried.add(kind)
        logger.log(logging.WARNING if first else logging.DEBUG, "%s: %s; retry %d of %d in %.2f s%s", self.name,
                   self.describe(exc), state.attempt_number, max_retries, state.next_action.sleep,
                   " (further retries after this failure are logged at the debug level)" if first else "")

    def _wait(self, exc: BaseException, attempt: int) -> float:
        """The server's Retry-After when it gives one (up to ``max_retry_after``), else exponential
        backoff with full jitter."""
        asked = retry_after(exc)
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
        data = await self._exchange(method, self.root + path, path, body, self._auth)
        try:
            return json.loads(data)
        except ValueError:
            raise Malformed(f"not JSON ({data[:200]!r})") from None

    async def _exchange(self, method: str, url: str, path: str, body: bytes | None, headers: dict | None) -> bytes:
        """One HTTP exchange: the reply's bytes, or an error status raised as :class:`HTTPStatus`."""
        if self._session is None:  # on the private loop, which is the only one using it
            import aiohttp
            from yarl import URL

            proxy = env_proxy(self.root)
            self._session = aiohttp.ClientSession(
                headers=self._headers, proxy=proxy, proxy_auth=proxy and aiohttp.BasicAuth.from_url(URL(proxy)),
                connector=aiohttp.TCPConnector(limit=0, ssl=ssl_context()),  # the semaphore bounds it
                timeout=aiohttp.ClientTimeout(total=None))  # _on_the_wire bounds every attempt whole
        async with self._session.request(method, url, data=body, headers=headers) as response:
            data = await self._read(response)
            if response.status >= 400:
                raise HTTPStatus(response.status, error_message(data), response.headers, path, error_code(data),
                                 error_code(data, "param"))
        return data

    async def download(self, url: str, *, budget: Budget | None = None) -> bytes:
        """The bytes at ``url`` (an absolute URL: an image a reply links to), in one of the slots, retried,
        bounded by ``timeout``, ``deadline`` and ``max_reply_bytes`` as every request is. The API's
        credentials go only to the API's own origin."""
        from urllib.parse import urlsplit

        def origin(u: str) -> tuple:
            parts = urlsplit(u)
            return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port

        parts = urlsplit(url)
        shown = f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise NotDownloaded(f"the reply links to {shown[:200]!r}: only http(s) links are downloaded")
        headers = self._auth if origin(url) == origin(self.root) else None
        budget = budget or Budget(self.deadline)

        async def attempt():
            return await self._on_the_wire(lambda: self._exchange("GET", url, url, None, headers), budget)

        try:
            return await self._with_retries(attempt, budget)
        except Exception as e:
            e.fetched = shown  # described as the link's failure, not the API's (describe)
            raise

    async def served_models(self, *, budget: Budget, max_retries: int) -> list[str] | None:
        """The model ids ``GET /models`` lists, or None when the server gives no usable list (no such route,
        an error status other than a refused key, a body that is not a list). A failure to connect, a time-out
        or a refused key (401, 403) is raised."""
        try:  # an error status is not asked again
            listing = await self.get("/models", budget=budget, max_retries=max_retries, retry_connect=False,
                                     retry_status=False)
        except Exception as e:
            if failure_kind(e) == "malformed" or failure_kind(e) == "status" and e.status not in (401, 403):
                return None
            raise
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return None
        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    async def _read(self, response) -> bytes:
        """The reply body, refused once it passes ``max_reply_bytes`` (announced, or as it arrives)."""
        limit = self.max_reply_bytes
        length = response.content_length
        if length is not None and length > limit:
            raise ReplyTooLarge(limit, length)
        if length is not None and response.headers.get("Content-Encoding", "identity") == "identity":
            return await response.read()  # its size is known and within the limit
        chunks, received = [], 0
        async for chunk in response.content.iter_any():  # chunked, or decompressed as it arrives
            received += len(chunk)
            if received > limit:
                raise ReplyTooLarge(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()

    # -- what is said --------------------------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` without the key, the URL's password or its Basic token (nor anything shaped like an
        OpenAI key)."""
        for secret in self.endpoint.secrets:
            text = text.replace(secret, "***")
        return re.sub(r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-***", text)

    def describe(self, exc: BaseException) -> str:
        """What happened, clearly and without the key: the failure, how many attempts over how long,
        and why retrying stopped early."""
        kind = failure_kind(exc)
        fetched = getattr(exc, "fetched", None)  # a link a reply gave, on another host maybe: its own failure
        where = f"the image link {fetched}" if fetched else self.where
        spent = getattr(exc, "attempt_seconds", None)
        if kind == "status":
            msg, status = exc.message, exc.status
            if fetched:
                msg = f"{where}: {msg}"
            elif status == 401:
                msg = f"authentication failed at {where}: check the API key ({self.endpoint.key_hint}): {msg}"
            elif status == 403:
                msg = f"permission denied{f' for {self.model!r}' if self.model else ''} at {where}: {msg}"
            elif status == 404:
                msg = f"not found: {f'model {self.model!r} or ' if self.model else ''}endpoint {where}{exc.path}: {msg}"
            elif status == 400:
                msg = f"bad request (not retried): {msg}"
            text = f"HTTP {status}: {msg}"
        elif isinstance(exc, TimedOut):
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
        return self.scrub(text)
