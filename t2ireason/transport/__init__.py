"""JSON over HTTP to a model API: the transport every client of an OpenAI-compatible endpoint shares.

It knows nothing of what is asked (the chat protocol is :mod:`t2ireason.judges.openai_judge`; an
image-generation API is another protocol over the same transport). One :class:`Transport` talks to one
API root (``http://host:8000/v1``) and gives a protocol:

- :meth:`Transport.post` / :meth:`Transport.get`: one JSON exchange with a path under the root, with the
  API key's ``Authorization`` header, in one of ``max_concurrency`` slots (fewer while the server times
  out or says it is busy: :mod:`~t2ireason.transport.concurrency`), retried with exponential
  backoff and full jitter on 429, 5xx, time-outs, connection errors and malformed replies (honouring
  ``Retry-After`` up to ``max_retry_after``); ``timeout`` bounds each attempt whole (a reply trickling in
  byte by byte included), ``deadline`` the request with all its attempts and waits, ``max_reply_bytes``
  what is read of a reply. A failure is raised as what it is (:class:`HTTPStatus`, :class:`TimedOut`,
  :class:`ReplyTooLarge`, :class:`Malformed`, aiohttp's connection errors), which :func:`transient` and
  :func:`unavailable` classify and :meth:`Transport.describe` says in one line, without the key;
- :meth:`Transport.run_batch`: a synchronous call that runs one coroutine per item on the transport's
  private event loop, all in flight at once, handing results to the caller's thread as they arrive; the
  first item that raises ends the batch (what waits for a slot is not sent);
- :meth:`Transport.check_once`: a check of the endpoint run once before the first request;
  :meth:`Transport.served_models` the models it lists (:func:`served_hint` says them in a message);
- :meth:`Transport.download`: the bytes a reply links to (an image), with the same limits, the credentials
  sent only to the API's own origin.

A base URL's ``user:password@`` becomes the HTTP Basic ``Authorization`` header in place of the key (one
header: aiohttp refuses a URL's credentials beside its own). The key and the password never appear in a
repr, a log line, an exception or a message.
"""

from .client import Budget, Transport, json_bytes, served_hint
from .failures import (
    HTTPStatus,
    Malformed,
    ReplyTooLarge,
    TimedOut,
    error_message,
    failure_kind,
    quota_exhausted,
    refused_credentials,
    retry_after,
    retryable,
    transient,
    unavailable,
)
from .settings import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_TIMEOUT,
    OPENAI_HOST,
    OPTION_RULES,
    Endpoint,
    check_base_url,
    check_values,
    public_url,
)

__all__ = ["Transport", "Budget", "json_bytes", "served_hint", "HTTPStatus", "Malformed", "ReplyTooLarge", "TimedOut",
           "error_message", "failure_kind", "quota_exhausted", "refused_credentials", "retry_after", "retryable", "transient",
           "unavailable", "Endpoint", "OPENAI_HOST", "OPTION_RULES", "check_base_url", "check_values", "public_url", "DEFAULT_TIMEOUT",
           "DEFAULT_DEADLINE", "DEFAULT_MAX_RETRIES", "DEFAULT_MAX_RETRY_AFTER", "DEFAULT_MAX_REPLY_BYTES"]
