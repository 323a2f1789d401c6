"""What failed in an exchange with an HTTP API, and what that means: worth retrying, a failure of the
server or the network (asking later may succeed), an endpoint that cannot answer at all, a refused key."""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any

__all__ = ["Malformed", "ReplyTooLarge", "TimedOut", "HTTPStatus", "error_message", "retry_after", "failure_kind",
           "retryable", "transient", "unavailable", "refused_credentials", "quota_exhausted"]


class Malformed(Exception):
    """The server answered 200 with something that is not what the protocol expects."""


class ReplyTooLarge(Exception):
    """The server's reply is larger than the client reads (``max_reply_bytes``)."""

    def __init__(self, limit: int, announced: int | None = None):
        self.limit = limit
        size = f"announced {announced} bytes" if announced is not None else f"sent more than {limit} bytes"
        super().__init__(f"reply too large: the server {size}, over the judge's limit of {limit} bytes "
                         "(max_reply_bytes); not read further")


class TimedOut(Exception):
    """An attempt had no complete reply within its time: the transport's own bound on the whole
    attempt (connection, upload, every byte of the reply), not the client's gap between reads."""

    def __init__(self, seconds: float, by_deadline: bool):
        self.seconds = seconds
        self.by_deadline = by_deadline
        super().__init__(f"no complete reply within {seconds:.3g} s")


class HTTPStatus(Exception):
    """The server answered with an error status; ``message`` is what its body says."""

    def __init__(self, status: int, message: str, headers: Any, path: str = "", code: str | None = None,
                 param: str | None = None):
        self.status = status
        self.message = message
        self.code = code  # the body's machine-readable code (OpenAI's error.code), if any
        self.param = param  # the request field the error is about (OpenAI's error.param), if any
        self.headers = headers  # for Retry-After
        self.path = path  # the path asked, under the API root
        super().__init__(f"HTTP {status}: {message}")


def error_message(data: bytes) -> str:
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


def error_code(data: bytes, field: str = "code") -> str | None:
    """The machine-readable code of an OpenAI-style error body (``{"error": {"code": ...}}``), if any; with
    ``field="param"``, the request field the error names (``{"error": {"param": "quality"}}``)."""
    try:
        error = json.loads(data).get("error")
    except (ValueError, AttributeError):
        return None
    code = error.get(field) if isinstance(error, dict) else None
    return str(code) if code is not None else None


def retry_after(exc: BaseException) -> float | None:
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


def failure_kind(exc: BaseException) -> str:
    """What failed: ``status`` (an HTTP error status), ``timeout``, ``connect`` (no connection
    could be made), ``tls`` (the server's certificate was refused), ``connection`` (it broke),
    ``malformed``, ``too_large`` or ``other``."""
    if isinstance(exc, HTTPStatus):
        return "status"
    if isinstance(exc, TimedOut):
        return "timeout"
    if isinstance(exc, ReplyTooLarge):
        return "too_large"
    if isinstance(exc, (Malformed, json.JSONDecodeError)):
        return "malformed"
    import aiohttp

    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return "tls"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connect"
    if isinstance(exc, (aiohttp.ClientError, ConnectionError)):
        return "connection"  # dropped, reset, a reply cut short, an answer that is not HTTP
    return "other"


#: an account that cannot pay (OpenAI's codes): every request fails alike until its limit is raised or reset
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "quota_exceeded",
                         "billing_limit_user_error"})
_QUOTA_WORDS = re.compile(r"billing|quota|credit balance|insufficient (funds|credits?|balance)|payment required",
                          re.IGNORECASE)


def quota_exhausted(exc: BaseException) -> bool:
    """The account's quota or billing limit is reached (OpenAI's 429 ``insufficient_quota``, 400
    ``billing_hard_limit_reached``, a 402 Payment Required, or a 400/403 saying so): no request goes through
    until it is raised or reset, so none is retried, and a caller stops rather than fail every request alike. A
    429 is one only by its code: a rate limit's message may speak of a quota (per minute) too."""
    if failure_kind(exc) != "status":
        return False
    if exc.status == 402 or exc.code in QUOTA_CODES:
        return True
    return exc.status in (400, 403) and bool(_QUOTA_WORDS.search(exc.message or ""))


def retryable(exc: BaseException) -> bool:
    """Worth asking again at once: the infrastructure failed, not the request (nor an account that cannot pay)."""
    kind = failure_kind(exc)
    if kind == "status":
        if quota_exhausted(exc):
            return False
        return exc.status in (408, 409, 429) or exc.status >= 500
    return kind in ("timeout", "connect", "connection", "malformed")  # a body not JSON: usually a proxy's hiccup


def transient(exc: BaseException) -> bool:
    """A failure of the server or the network (asking later may succeed), not of the request."""
    return retryable(exc) or failure_kind(exc) == "too_large"


def unavailable(exc: BaseException) -> bool:
    """The failure says the endpoint cannot answer at all now, whatever is asked: it cannot be
    reached, it does not answer in time, or it says it is overloaded or rate-limited."""
    kind = failure_kind(exc)
    if kind == "status":
        return exc.status in (408, 429, 502, 503, 504)
    return kind in ("timeout", "connect", "connection")


def refused_credentials(exc: BaseException) -> bool:
    """The server refused the key (HTTP 401 or 403): every other request would be refused too."""
    return failure_kind(exc) == "status" and exc.status in (401, 403)
