"""Where and how a transport connects: the API root and its credentials, the proxy and certificates the
environment gives, and the reliability options' defaults and rules."""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["Endpoint", "OPTION_RULES", "check_base_url", "check_values", "public_url", "DEFAULT_TIMEOUT", "DEFAULT_DEADLINE",
           "DEFAULT_MAX_RETRIES", "DEFAULT_MAX_RETRY_AFTER", "DEFAULT_MAX_REPLY_BYTES"]

OPENAI_HOST = "api.openai.com"
GEMINI_HOST = "generativelanguage.googleapis.com"
DEFAULT_BASE_URL = f"https://{OPENAI_HOST}/v1"

# The reliability limits' defaults (README.md, "Reliability").
#: seconds one attempt may take in all
DEFAULT_TIMEOUT = 60.0
#: seconds one request may take with all its attempts and the waits between them
DEFAULT_DEADLINE = 300.0
#: retries after the first attempt
DEFAULT_MAX_RETRIES = 6
#: the longest Retry-After obeyed, in seconds
DEFAULT_MAX_RETRY_AFTER = 60.0
#: the largest reply read, in bytes (a one-token chat reply with 20 log-probabilities is about 2 KB,
#: 1,024 tokens of text about 5 KB)
DEFAULT_MAX_REPLY_BYTES = 16 * 2**20


def public_url(url: str | None) -> str | None:
    """``url`` without user:password, for identity and messages."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class Endpoint:
    """An API root and the ``Authorization`` header its requests carry."""

    #: the root requests go to: the base URL without its credentials
    root: str
    #: the root as messages and identities name it
    where: str
    authorization: str = field(repr=False)
    #: where the credentials come from, for a message about a refused key
    key_hint: str
    #: what :meth:`Transport.scrub` removes from any text
    secrets: tuple[str, ...] = field(repr=False)

    @classmethod
    def resolve(cls, base_url: str | None, api_key: str | None, model: str | None) -> Endpoint:
        """``base_url`` (``None``: ``OPENAI_BASE_URL`` or OpenAI's) with its credentials: the URL's
        ``user:password@`` as HTTP Basic (aiohttp refuses a URL's credentials beside an Authorization
        header), else ``api_key``, else ``GEMINI_API_KEY`` for Gemini's endpoint and ``OPENAI_API_KEY``
        otherwise; a server of one's own may need none (a dummy is sent). A ValueError when OpenAI's or
        Gemini's endpoint has no key, or when a URL's credentials and an ``api_key`` are both given."""
        root = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
        parts = urlsplit(root)
        where = public_url(root)
        host = parts.hostname  # where requests go, OPENAI_BASE_URL's root included
        key_var = "GEMINI_API_KEY" if host == GEMINI_HOST else "OPENAI_API_KEY"
        if parts.username is not None:
            if api_key:
                raise ValueError(f"the base URL {where!r} carries user:password@ and an api_key is given too: "
                                 "one Authorization header carries one of them; give one")
            user, password = unquote(parts.username), unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            authorization, hint, secrets = f"Basic {token}", "the user:password of the base URL", (password, token)
        else:
            api_key = api_key or os.environ.get(key_var)
            if not api_key:
                if host in (OPENAI_HOST, GEMINI_HOST):
                    raise ValueError(f"no API key for {model!r} at {host}: set {key_var} or pass api_key=")
                api_key = "EMPTY"  # local servers usually take any key
            authorization, hint, secrets = f"Bearer {api_key}", f"{key_var} or api_key=", (api_key,)
        return cls(urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), where, authorization, hint,
                   tuple(s for s in secrets if s != "EMPTY" and len(s) >= 4))


def _public_url_safe(url: str) -> str:
    try:
        return public_url(url) or url
    except ValueError:
        return url.split("@")[-1]


def check_base_url(url: Any, what: str = "the base URL") -> str:
    """``url`` if it is an http(s) URL with a host, else a ValueError saying what is wrong with
    ``what`` (a request to it could only fail, after every retry)."""
    example = "e.g. http://localhost:8000/v1"
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"{what} must be an http(s) URL ({example}), got {url!r}")
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        raise ValueError(f"{what} {_public_url_safe(url)!r} is not a valid URL ({e}); {example}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        why = f"its scheme is {parts.scheme!r}" if parts.scheme not in ("http", "https", "") else "it has no host"
        if not parts.scheme:
            why = "it has no http:// or https:// scheme"
        raise ValueError(f"{what} {_public_url_safe(url)!r} is not an http(s) URL with a host ({why}); {example}")
    return url.strip()


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _count(x: Any, least: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= least


#: the transport's options: name -> (test, what it must be)
OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "max_concurrency": (lambda x: _count(x, 1), "a whole number >= 1"),
    "timeout": (_positive, "a number of seconds > 0"),
    "deadline": (_positive, "a number of seconds > 0"),
    "max_retries": (lambda x: _count(x, 0), "a whole number >= 0"),
    "max_retry_after": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
    "max_reply_bytes": (lambda x: _count(x, 1), "a whole number of bytes >= 1"),
    "backoff_base": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
    "backoff_max": (lambda x: _positive(x) or x == 0, "a number of seconds >= 0"),
}


def check_values(options: dict[str, Any], rules: dict[str, tuple[Callable[[Any], bool], str]], owner: str) -> None:
    """A ValueError naming the first of ``options`` whose value breaks its rule (``"<owner>'s timeout must
    be ..."``); options without a rule are not looked at."""
    for name, value in options.items():
        rule = rules.get(name)
        if rule is not None and not rule[0](value):
            raise ValueError(f"{owner}'s {name} must be {rule[1]}, got {value!r}")


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``...),
    looked up once per transport rather than by the HTTP client for every request."""
    import urllib.request

    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def ssl_context():
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
