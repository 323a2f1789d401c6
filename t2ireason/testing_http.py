"""A local OpenAI-compatible server (chat completions, image generations, any other JSON endpoint), programmable per test.

The HTTP judge is tested over real HTTP, on the real client code path, against
this server: a starlette app run by uvicorn on 127.0.0.1 (a free port) in a
background thread. What it does for each request is a *behaviour*:

- an action, used for every request: ``Answer("Yes")``, ``Fail(429, retry_after=1)``,
  ``Fail(500)``, ``Hang()``, ``Malformed()``, ``JSONBody({...})`` (another endpoint's answer:
  a ``POST`` to any other path under ``/v1`` is served as ``/v1/chat/completions`` is, by the
  same behaviour, its path in ``ReceivedRequest.path``), and the misbehaviours of real servers and
  proxies: ``Drip()`` (a reply trickling in a byte at a time), ``Huge(200_000_000)`` (a
  reply too large to hold), ``Disconnect()`` (the connection closed without a reply);
- ``Images()``: an OpenAI Images reply (``POST /v1/images/generations``), the images as ``b64_json`` or
  as ``url`` links this server serves;
- a list of actions, used in arrival order (the last one repeats);
- a plain string, shorthand for ``Answer(text)`` (also as a list item);
- a function of the :class:`ReceivedRequest` returning an action or a plain
  string (shorthand for ``Answer(text)``), e.g.
  ``lambda r: Fail(500) if r.attempt == 0 else Answer(r.text.upper())``.

The server records every request it receives (``server.requests``; with
``record=False`` only their number: bodies are read but neither parsed nor kept,
and behaviours see an empty body, for long runs with large bodies) and the
largest number it was handling at once (``server.max_in_flight``; both counts
are also served at ``GET /v1/_stats`` for a client in another process).
``models`` names the served models: ``GET /v1/models`` lists them and a request
for another gets a 404, as from vLLM; ``None`` (the default) answers any model
name, as a single-model server does, and lists ``test-model`` (``unknown_model_status=400``: another
model's request gets a 400, as from some proxies). ``list_models=False``
makes ``GET /v1/models`` a 404, as on servers without it, and a status (``500``) that
status with a plain-text body, as ``transformers serve`` answers when its Hub cache
folder does not exist; ``server.model_requests`` counts its calls. ``one_at_a_time=True`` answers
one request at a time and queues the others, as a server with one worker does (a request the client
gave up on is still answered in its turn; ``max_in_flight`` counts the queued ones)::

    from t2ireason.testing_http import Answer, serve

    with serve(Answer("Yes", top_logprobs=[{"Yes": -0.1, "No": -2.3}])) as server:
        judge = load_judge(f"openai:test-model@{server.base_url}")
        ...
    assert server.requests[0].body["model"] == "test-model"

Used by the tests, by ``perf/_http.py`` and by the offline demo.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "Fail", "Hang", "Malformed", "JSONBody", "Images", "Drip", "Huge", "Disconnect", "ReceivedRequest",
           "ChatServer", "serve"]


# -- what the server does for one request ------------------------------------


@dataclass(frozen=True)
class Answer:
    """A normal completion with ``text``.

    ``top_logprobs`` gives, per generated token, the alternatives (token ->
    logprob); the generated token is the most likely one. When the request asks
    for logprobs and none are given here, the whole text is one token of logprob 0,
    unless ``no_logprobs`` (a server that ignores the request for them). ``no_alternatives``:
    each token with its own log-probability but an empty ``top_logprobs`` list (a server that
    lists no alternatives).
    """

    text: str = "ok"
    top_logprobs: Sequence[dict[str, float]] | None = None
    finish_reason: str = "stop"
    delay: float = 0.0
    no_logprobs: bool = False
    no_alternatives: bool = False


@dataclass(frozen=True)
class Fail:
    """An error status with an OpenAI-style error body (and ``Retry-After`` if given)."""

    status: int
    message: str = "simulated failure"
    retry_after: float | None = None
    delay: float = 0.0
    code: str | None = None  # the body's error.code (default: the status)
    param: str | None = None  # the body's error.param: the request field it is about (OpenAI's invalid_value)


@dataclass(frozen=True)
class Hang:
    """Never answer within ``seconds`` (or until the server stops): a client time-out."""

    seconds: float = 60.0


@dataclass(frozen=True)
class Malformed:
    """A 200 response whose body is not valid JSON (with a JSON content type)."""

    body: str = '{"id": "chatcmpl-broken", "choices": [{"message": '
    delay: float = 0.0


@dataclass(frozen=True)
class JSONBody:
    """A 200 response whose body is ``body`` as JSON: what an endpoint other than chat completions
    answers (``POST /v1/images/generations``...)."""

    body: Any
    delay: float = 0.0


@dataclass(frozen=True)
class Images:
    """An OpenAI Images reply to ``POST /v1/images/generations``: as many images as the request's ``n`` (or
    ``count``), each drawn from the request's prompt, model and the image's index (the same request gives the
    same pixels), at the request's ``size`` (16x16 without one; ``size`` draws another whatever is asked), as
    ``b64_json``, or with ``url`` as links this server serves (``GET /v1/_files/<name>``; under ``url_base``
    instead, another server's address, to link elsewhere), each with a ``revised_prompt``, and the reply's
    ``usage``; the items of ``empty`` come with a null image."""

    url: bool = False
    url_base: str | None = None
    count: int | None = None
    revised_prompt: bool = True
    delay: float = 0.0
    #: the size drawn whatever the request asks (``"64x48"``): a server that ignores ``size``
    size: str | None = None
    #: the items (by index) that come without their image (``"b64_json": null``), as a misbehaving server sends
    empty: Sequence[int] = ()


@dataclass(frozen=True)
class Drip:
    """A 200 reply that trickles in: ``count`` bytes of leading whitespace one every
    ``interval`` seconds, then a normal completion of ``text``. Each byte resets a
    client's read time-out, so only a bound on the whole request ends it early."""

    interval: float = 0.2
    count: int = 20
    text: str = "ok"


@dataclass(frozen=True)
class Huge:
    """A 200 completion whose text is ``size`` bytes long, sent in 1 MiB chunks without a
    ``Content-Length`` (chunked), or declaring its length first when ``declare_length``."""

    size: int = 200_000_000
    declare_length: bool = False


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering (a crashed server, or a proxy dropping the
    request), after ``delay`` seconds."""

    delay: float = 0.0


Action = Answer | Fail | Hang | Malformed | JSONBody | Images | Drip | Huge | Disconnect


@dataclass
class ReceivedRequest:
    """One request as the server received it."""

    body: dict[str, Any]
    headers: dict[str, str]
    index: int  # arrival order, from 0
    attempt: int  # how many earlier requests had the same messages (the same body elsewhere; 0 on the first try)
    received_at: float = field(default_factory=time.monotonic)
    path: str = "/v1/chat/completions"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def text(self) -> str:
        """The text parts of the last user turn, joined by newlines."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return "\n".join(_texts(m.get("content")))
        return ""

    @property
    def prompt(self) -> str | None:
        """An image request's prompt."""
        return self.body.get("prompt")

    @property
    def image_urls(self) -> list[str]:
        """Every ``image_url`` URL in the conversation, in order."""
        return [p["image_url"]["url"] for m in self.messages if isinstance(m.get("content"), list)
                for p in m["content"] if p.get("type") == "image_url"]


#: what the server does: one action, actions in arrival order, or a function of the request
Behaviour = Action | str | Sequence[Action | str] | Callable[[ReceivedRequest], Action | str]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [p.get("text", "") for p in content or [] if p.get("type") == "text"]


# -- the server ----------------------------------------------------------------


class ChatServer:
    """The server; use :func:`serve` (or ``with ChatServer(behaviour) as server``)."""

    def __init__(self, behaviour: Behaviour = Answer(), *, models: Sequence[str] | None = None,
                 list_models: bool | int = True, record: bool = True, unknown_model_status: int = 404,
                 one_at_a_time: bool = False):
        self.behaviour = behaviour
        self.one_at_a_time = one_at_a_time
        self._turn: asyncio.Lock | None = None  # made on the server's loop
        self.models = None if models is None else list(models)
        self.unknown_model_status = unknown_model_status
        self.list_models = list_models
        self.record = record
        self.requests: list[ReceivedRequest] = []
        self.received = 0  # requests received, recorded or not
        self.model_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.base_url: str | None = None
        #: the headers of each ``GET /v1/_files/<name>`` (an image a reply linked to), in order
        self.downloads: list[dict[str, str]] = []
        self.files: dict[str, bytes] = {}
        #: a status every ``GET /v1/_files/<name>`` answers with instead of the file (a host that refuses, 403)
        self.file_status: int | None = None
        self._seen: dict[str, int] = {}
        self._stopping = False
        self._server = None
        self._thread: threading.Thread | None = None

    # The handlers run on the server's event loop thread, one at a time between
    # awaits, so the counters need no lock.
    def _action(self, req: ReceivedRequest) -> Action:
        b = self.behaviour
        if callable(b):
            b = b(req)
        elif isinstance(b, (list, tuple)):
            b = b[min(req.index, len(b) - 1)]
        return Answer(b) if isinstance(b, str) else b

    async def _chat(self, request):
        from starlette.responses import JSONResponse

        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.record:
                body = await request.json()
                key = json.dumps([request.url.path, body.get("messages", body)], sort_keys=True)
                req = ReceivedRequest(body, dict(request.headers), self.received, self._seen.get(key, 0),
                                      path=request.url.path)
                self._seen[key] = req.attempt + 1
                self.requests.append(req)
            else:  # long runs with large bodies: read, neither parsed nor kept (the client is measured)
                await request.body()
                body = {}
                req = ReceivedRequest(body, dict(request.headers), self.received, 0, path=request.url.path)
            self.received += 1
            if self.models is not None and body.get("model") not in self.models:
                err = {"error": {"message": f"The model `{body.get('model')}` does not exist.", "type": "NotFoundError",
                                 "param": "model", "code": 404}}
                return JSONResponse(err, status_code=self.unknown_model_status)
            if self.one_at_a_time:
                self._turn = self._turn or asyncio.Lock()
                async with self._turn:  # the others wait in its queue, given up on or not
                    if self._stopping:
                        return JSONResponse({"error": {"message": "shutting down"}}, status_code=503)
                    return await self._answer(request, req)
            return await self._answer(request, req)
        finally:
            self.in_flight -= 1

    async def _answer(self, request, req: ReceivedRequest):
        """What the behaviour says to do with ``req``."""
        from starlette.responses import JSONResponse, Response, StreamingResponse

        action = self._action(req)
        if isinstance(action, Disconnect):
            await asyncio.sleep(action.delay)
            _connection(request).close()  # no status line, no headers: the client sees the connection drop
            return Response(status_code=500)  # never reaches the client
        if isinstance(action, Drip):
            return StreamingResponse(self._drip(req, action), media_type="application/json")
        if isinstance(action, Huge):
            headers = {"content-length": str(_huge_length(action.size))} if action.declare_length else None
            return StreamingResponse(_huge(action.size), media_type="application/json", headers=headers)
        if isinstance(action, Hang):
            end = time.monotonic() + action.seconds
            while not self._stopping and time.monotonic() < end:
                await asyncio.sleep(0.02)
            return Response(status_code=504)
        if action.delay:
            await asyncio.sleep(action.delay)
        if isinstance(action, Fail):
            headers = {} if action.retry_after is None else {"retry-after": f"{action.retry_after:g}"}
            err = {"error": {"message": action.message, "type": "simulated", "code": action.code or str(action.status),
                             "param": action.param}}
            return JSONResponse(err, status_code=action.status, headers=headers)
        if isinstance(action, Malformed):
            return Response(action.body, media_type="application/json")
        if isinstance(action, JSONBody):
            return JSONResponse(action.body)
        if isinstance(action, Images):
            return JSONResponse(self._images(req, action))
        return JSONResponse(_completion(req, action))

    async def _drip(self, req: ReceivedRequest, action: Drip):
        for _ in range(action.count):
            if self._stopping:
                return
            yield b" "
            await asyncio.sleep(action.interval)
        yield json.dumps(_completion(req, Answer(action.text))).encode()

    async def _models(self, request):
        from starlette.responses import JSONResponse

        self.model_requests += 1
        if self.list_models is False:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        if self.list_models is not True:  # starlette's answer to an exception in the endpoint
            from starlette.responses import PlainTextResponse

            return PlainTextResponse("Internal Server Error", status_code=self.list_models)
        served = ["test-model"] if self.models is None else self.models
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"}
                                                        for m in served]})

    def _images(self, req: ReceivedRequest, action: Images) -> dict[str, Any]:
        """An OpenAI ``images.generations`` reply for ``req`` (see :class:`Images`)."""
        import base64

        body = req.body
        n = action.count if action.count is not None else int(body.get("n") or 1)
        data = []
        for i in range(n):
            png = _png(f"{body.get('model')}\x1f{body.get('prompt')}\x1f{i}",
                       str(action.size or body.get("size") or "16x16"))
            item: dict[str, Any] = {}
            if i in action.empty:
                item["b64_json"] = None
            elif action.url:
                name = f"{len(self.files)}.png"
                self.files[name] = png
                item["url"] = f"{action.url_base or self.base_url}/_files/{name}"
            else:
                item["b64_json"] = base64.b64encode(png).decode()
            if action.revised_prompt:
                item["revised_prompt"] = f"revised: {body.get('prompt')}"
            data.append(item)
        words = len(str(body.get("prompt") or "").split())
        return {"created": math.floor(time.time()), "data": data,
                "usage": {"input_tokens": words, "output_tokens": 100 * n, "total_tokens": words + 100 * n}}

    async def _file(self, request):
        """An image a reply linked to (``GET /v1/_files/<name>``)."""
        from starlette.responses import JSONResponse, Response

        self.downloads.append(dict(request.headers))
        if self.file_status is not None:
            return JSONResponse({"error": {"message": "simulated failure of a file"}}, status_code=self.file_status)
        data = self.files.get(request.path_params["name"])
        if data is None:
            return JSONResponse({"error": {"message": "no such file"}}, status_code=404)
        return Response(data, media_type="image/png")

    async def _stats(self, request):
        """What was received, for callers in another process (``GET /v1/_stats``)."""
        from starlette.responses import JSONResponse

        return JSONResponse({"requests": self.received, "max_in_flight": self.max_in_flight})

    def _app(self):
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"]),
                                 Route("/v1/models", self._models, methods=["GET"]),
                                 Route("/v1/_stats", self._stats, methods=["GET"]),
                                 Route("/v1/_files/{name}", self._file, methods=["GET"]),
                                 Route("/v1/{path:path}", self._chat, methods=["POST"])])

    def start(self) -> ChatServer:
        import uvicorn

        # proto must be IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted
        # connections only then, and without it Nagle + delayed ACK add 40 ms per
        # keep-alive request.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))  # the OS picks a free port; no race with other servers
        config = uvicorn.Config(self._app(), log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2, backlog=4096)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="t2ireason-test-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test HTTP server did not start")
            time.sleep(0.01)
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        return self

    def stop(self) -> None:
        self._stopping = True  # ends hanging handlers
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def serve(behaviour: Behaviour = Answer(), **options: Any) -> Iterator[ChatServer]:
    """Run a :class:`ChatServer` for the ``with`` block; ``server.base_url`` is its
    OpenAI base URL (``http://127.0.0.1:<port>/v1``). ``options``: ``models``, ``list_models``, ``record``,
    ``unknown_model_status``, ``one_at_a_time``."""
    server = ChatServer(behaviour, **options).start()
    try:
        yield server
    finally:
        server.stop()


_CHUNK = 1 << 20


def _huge_head_tail() -> tuple[bytes, bytes]:
    head = b'{"id": "chatcmpl-huge", "object": "chat.completion", "created": 0, "model": "test-model", ' \
           b'"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'
    return head, b'"}}]}'


def _huge_length(size: int) -> int:
    head, tail = _huge_head_tail()
    return len(head) + size + len(tail)


async def _huge(size: int):
    """A valid completion whose text is ``size`` bytes of ``x``, in 1 MiB chunks."""
    head, tail = _huge_head_tail()
    yield head
    chunk = b"x" * _CHUNK
    for start in range(0, size, _CHUNK):
        yield chunk[: min(_CHUNK, size - start)]
        await asyncio.sleep(0)
    yield tail


def _connection(request) -> asyncio.Transport:
    """The TCP transport under a starlette request: uvicorn's ``receive`` is a method of
    its request-response cycle, which holds the connection's transport."""
    transport = getattr(getattr(request.receive, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError("Disconnect needs uvicorn's HTTP protocol (no transport found under the request)")
    return transport


def _png(key: str, size: str) -> bytes:
    """A PNG of ``size`` (``"WxH"``) drawn from ``key``: a gradient between two colours of its digest."""
    import hashlib
    import io

    import numpy as np
    from PIL import Image

    w, _, h = size.partition("x")
    width, height = (int(w), int(h)) if w.isdigit() and h.isdigit() else (16, 16)
    d = np.frombuffer(hashlib.sha256(key.encode()).digest(), dtype=np.uint8).astype(float)
    ramp = np.linspace(0, 1, width)[None, :, None]
    pixels = (d[:3] * (1 - ramp) + d[3:6] * ramp) * np.ones((height, 1, 1))
    buf = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _completion(req: ReceivedRequest, answer: Answer) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` object for ``answer``."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": answer.finish_reason, "logprobs": None,
                              "message": {"role": "assistant", "content": answer.text}}
    if req.body.get("logprobs") and not answer.no_logprobs:
        k = int(req.body.get("top_logprobs") or 0)
        steps = answer.top_logprobs or [{answer.text: 0.0}]
        content = []
        for alternatives in steps:
            ranked = sorted(alternatives.items(), key=lambda kv: -kv[1])
            token, logprob = ranked[0]
            content.append({"token": token, "logprob": logprob, "bytes": list(token.encode()),
                            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                                             for t, lp in ranked[:0 if answer.no_alternatives else k]]})
        choice["logprobs"] = {"content": content}
    prompt_tokens = sum(len(t.split()) for m in req.messages for t in _texts(m.get("content")))
    completion_tokens = max(1, len(answer.text.split()))
    return {
        "id": f"chatcmpl-{req.index}",
        "object": "chat.completion",
        "created": math.floor(time.time()),
        "model": req.body.get("model", "test-model"),
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
