"""The ``openai:`` backend: the OpenAI Images API, ``POST <base>/images/generations``, over the HTTP judge's
transport (:mod:`t2ireason.transport`: bounded concurrency, retries with ``Retry-After``, a deadline, reply
limits, error kinds, the key never in a message).

``openai:gpt-image-1``, ``openai:dall-e-3``, or any server or provider speaking the same API
(``openai:<model>@http://host:8000/v1``). The run's settings become the request's: ``--height``/``--width``
its ``size`` (``"<width>x<height>"``), ``--quality`` its ``quality``, the samples of one prompt its ``n`` (up to
``max_n`` a request: 1 for DALL-E 3, which takes no more, 10 otherwise), ``--pipeline-kwargs`` any other field
(``style``, ``background``, ``output_format``, ``moderation``...). Replies may carry each image as ``b64_json``
or as a ``url`` (fetched with the same limits; the key goes only to the API's own origin). What a reply says
besides the image (``revised_prompt``, ``usage``, the size and quality it used) is kept with the image. An API
takes no seed: each image is recorded as not seeded.

Before the first request the endpoint is checked (:meth:`OpenAIImagesGenerator.check`): it answers, takes the
key and, when it lists its models, lists this one. A refusal (a 4xx error whose code or message is a content
policy's, such as OpenAI's HTTP 400 ``moderation_blocked``, "rejected by the safety system") is that image's failure, kind
``refused``; a 4xx error about a setting of the request rather than its prompt (OpenAI's 400 ``invalid_value`` with
``param: quality``) ends the generation at once, naming the setting and the allowed values the reply lists: every
request would get it, so a draw's first request goes alone and the others wait for its reply (only requests already
in flight may follow a later one); another failure after the transport's retries is an ``error``, ``retryable`` when the server or
the network failed; an item of a reply without its image is that image's failure alone (the reply's others
are kept: asking again would pay for them twice). A refused key ends the generation; so does an account
whose quota or billing limit is reached (OpenAI's ``insufficient_quota``, ``billing_hard_limit_reached``: not
retried) and an endpoint that evidently cannot answer (unreachable, timing out or overloaded after every
retry: :class:`GeneratorUnavailable`), unless ``on_unavailable="record"``: images made before are kept
either way, and so is a reply on its way (its request was paid for).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import os
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ..images import ImageError, ImageTooLarge, decode_image
from ..transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_AFTER,
    OPTION_RULES,
    Budget,
    Malformed,
    Transport,
    check_base_url,
    check_values,
    failure_kind,
    json_bytes,
    quota_exhausted,
    refused_credentials,
    served_hint,
    transient,
    unavailable,
)
from .base import Drawn, Generator
from .spec import GeneratorError, GeneratorUnavailable

if TYPE_CHECKING:
    from .jobs import GenerationConfig, Job
    from .spec import GeneratorSpec

__all__ = ["OpenAIImagesGenerator"]

#: an image takes tens of seconds to draw (a minute at high quality): longer bounds than a judge's
DEFAULT_TIMEOUT = 300.0
DEFAULT_DEADLINE = 900.0
#: ten 1,536 x 1,024 PNGs as base64 are about 40 MB
DEFAULT_MAX_REPLY_BYTES = 128 * 2**20
#: seconds the endpoint check may take in all
_CHECK_DEADLINE = 30.0
#: a content policy's refusal: its error code (OpenAI's DALL-E 3 and GPT-Image-1, Azure's filter), or what its
#: message says where the server gives no such code (OpenAI: "Your request was rejected as a result of our safety
#: system"); not a mere "not allowed", which an invalid setting says too ("size 13x13 is not allowed")
_REFUSAL_CODES = {"content_policy_violation", "moderation_blocked", "content_filter"}
_REFUSAL = re.compile(r"safety|content.?(management.?)?polic|moderation|content.?filter|inappropriate", re.IGNORECASE)
#: a 4xx error about a setting of the request, not about its prompt (OpenAI's 400 ``invalid_value`` with
#: ``param: quality``): every request of the run would get it, so the first one stops the run
_SETTING_CODES = {"invalid_value", "unsupported_value", "invalid_parameter", "unknown_parameter",
                  "unsupported_parameter", "invalid_size", "invalid_request_parameter"}
#: the request fields that are the prompt's, not a setting's ("string_above_max_length", param "prompt")
_PROMPT_FIELDS = {"prompt", "messages", "input"}
#: where a setting comes from on the command line
_SETTING_OPTIONS = {"quality": "--quality", "size": "--height/--width", "n": "max_n in --generator-kwargs",
                    "response_format": "response_format in --generator-kwargs", "model": "--model"}
_ALLOWED = re.compile(r"(?:supported|allowed|valid|possible)\s+values\s+(?:are|is|include)?:?\s*(.+)", re.IGNORECASE)

_OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **OPTION_RULES,
    "check": (lambda x: isinstance(x, bool), "True or False"),
    "on_unavailable": (lambda x: x in ("raise", "record"), "'raise' or 'record'"),
    "max_n": (lambda x: x is None or (isinstance(x, int) and not isinstance(x, bool) and x >= 1),
              "None or a whole number >= 1"),
    "response_format": (lambda x: x in (None, "b64_json", "url"), "None, 'b64_json' or 'url'"),
}


def _groups(jobs: Sequence[Job], max_n: int) -> list[list[Job]]:
    """Consecutive jobs of one prompt, at most ``max_n`` a group: one request each."""
    groups: list[list[Job]] = []
    for job in jobs:
        last = groups[-1] if groups else None
        if last and len(last) < max_n and (last[0].prompt_id, last[0].prompt) == (job.prompt_id, job.prompt):
            last.append(job)
        else:
            groups.append([job])
    return groups


def _check_reply(reply: Any) -> dict[str, Any]:
    """An images reply: an object whose ``data`` is a list (or null: no image), or :class:`Malformed` (retried as a
    malformed reply is). An item without an image is that image's failure alone (:meth:`OpenAIImagesGenerator._image`):
    the reply's other images were paid for, and asking again would pay for them twice."""
    if not isinstance(reply, dict) or "data" not in reply or not isinstance(reply["data"], (list, type(None))):
        raise Malformed(f"not an images reply ({str(reply)[:200]})")
    return reply


def _refused_setting(e: BaseException) -> str | None:
    """The request field a 4xx error says is not taken (``quality`` of "Invalid value: 'ultra'"; ``""`` when the error
    names none), or None when the error is about something else (the prompt, a content policy, the key...)."""
    if failure_kind(e) != "status" or e.status not in (400, 422):
        return None
    if e.code in _REFUSAL_CODES or _REFUSAL.search(e.message or "") or quota_exhausted(e):
        return None
    param = (e.param or "").strip() or None
    if param in _PROMPT_FIELDS:
        return None
    if param is not None or e.code in _SETTING_CODES:
        return param or ""  # a setting, unnamed
    return None


def _setting_error(who: str, param: str, e: Any) -> GeneratorError:
    """The error that stops a run whose setting the API refuses: which setting, from which option, its allowed
    values where the reply lists them."""
    found = _ALLOWED.search(e.message or "")
    allowed = re.findall(r"'([^']*)'|\"([^\"]*)\"", found.group(1)) if found else []
    values = ", ".join(a or b for a, b in allowed)
    option = _SETTING_OPTIONS.get(param, f"{param!r} in --pipeline-kwargs" if param else "")
    which = f"the request's setting {param!r} (from {option})" if param else "a setting of the request"
    return GeneratorError(
        f"{who} refuses {which}: HTTP {e.status} "
        f"{e.code or ''}: {e.message}{f' Allowed values: {values}.' if values else ''} Nothing more was asked and "
        "nothing was recorded: change the setting and run the same command again (the folder takes the new one)")


def _image_of(item: Any) -> str | None:
    """What an item of a reply gives for its image (``b64_json`` or ``url``), or None."""
    if not isinstance(item, dict):
        return None
    found = item.get("b64_json") or item.get("url")
    return found if isinstance(found, str) else None


class OpenAIImagesGenerator(Generator):
    """Images from an OpenAI-compatible Images API (see the module's description). Options: ``api_key``
    (else ``OPENAI_API_KEY``; a server of your own may need none), the transport's ``max_concurrency``,
    ``timeout``, ``deadline``, ``max_retries``, ``max_retry_after``, ``max_reply_bytes``, ``backoff_base``,
    ``backoff_max``; ``check`` (the endpoint check before the first request), ``on_unavailable``
    (``"raise"`` or ``"record"``), ``max_n`` (images a request), ``response_format`` (``None``: ``b64_json``
    for DALL-E models, which default to links, and the server's default otherwise)."""

    backend = "openai"
    seedable = False
    takes = frozenset({"height", "width", "quality", "pipeline_kwargs"})

    def __init__(self, spec: GeneratorSpec, config: GenerationConfig, *, api_key: str | None = None,
                 max_concurrency: int = 8, timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE,
                 max_retries: int = DEFAULT_MAX_RETRIES, max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, backoff_base: float = 1.0, backoff_max: float = 60.0,
                 check: bool = True, on_unavailable: str = "raise", max_n: int | None = None,
                 response_format: str | None = None):
        super().__init__(spec, config)
        self.check_values(max_concurrency=max_concurrency, timeout=timeout, deadline=deadline,
                          max_retries=max_retries, max_retry_after=max_retry_after, max_reply_bytes=max_reply_bytes,
                          backoff_base=backoff_base, backoff_max=backoff_max, check=check,
                          on_unavailable=on_unavailable, max_n=max_n, response_format=response_format)
        self.model = spec.model
        dall_e = self.model.lower().startswith("dall-e")
        self.max_n = max_n or (1 if self.model.lower().startswith("dall-e-3") else 10)
        self.response_format = response_format or ("b64_json" if dall_e else None)
        self.on_unavailable = on_unavailable
        self._check_first = check
        self._decoder: concurrent.futures.ThreadPoolExecutor | None = None
        self._first_reply: asyncio.Event | None = None
        self._stopped = False
        try:
            self.transport = Transport(
                spec.base_url, api_key=api_key, name=repr(self), model=self.model,
                user_agent="t2i-reason (OpenAI Images generator)", max_concurrency=max_concurrency, timeout=timeout,
                deadline=deadline, max_retries=max_retries, max_retry_after=max_retry_after,
                max_reply_bytes=max_reply_bytes, backoff_base=backoff_base, backoff_max=backoff_max)
        except ValueError as e:  # no key for OpenAI's own endpoint, or two credentials
            raise GeneratorError(str(e)) from None

    # -- checked before anything is made -------------------------------------------------------------

    @classmethod
    def check_values(cls, **options: Any) -> None:
        try:
            check_values(options, _OPTION_RULES, "the openai generator")
        except ValueError as e:
            raise GeneratorError(str(e)) from None

    @classmethod
    def check_config(cls, config: GenerationConfig) -> None:
        super().check_config(config)
        if (config.height is None) != (config.width is None):
            raise GeneratorError("the openai generator asks for a size, width x height: give both --height and "
                                 "--width (or neither: the API's default size)")

    @classmethod
    def preflight(cls, spec: GeneratorSpec, config: GenerationConfig, options: Mapping[str, Any], *,
                  contact: bool = True) -> None:
        """The settings and options, the base URL, the key; then, with ``contact``, the endpoint: it answers,
        takes the key and lists the model (unless ``check=False``). No image is asked for."""
        super().preflight(spec, config, options, contact=contact)
        if spec.base_url is not None:
            try:
                check_base_url(spec.base_url, "the generator's base URL")
            except ValueError as e:
                raise GeneratorError(f"{e} (in {spec.describe()!r}, what follows {spec.url_rule()} is the base URL)") \
                    from None
        with cls(spec, config, **options) as generator:  # the key and the transport's options
            if contact and generator._check_first:
                generator.check()

    def check(self) -> None:
        """Make sure the endpoint answers, takes the key and (when it lists its models) serves the model:
        :class:`GeneratorUnavailable` if it cannot be reached or does not answer, :class:`GeneratorError` if it
        refuses the key or lists models without this one."""
        self.transport.run(self.transport.check_once(self._check_endpoint, force=True))

    async def _ensure_checked(self) -> None:
        if self._check_first:
            await self.transport.check_once(self._check_endpoint)

    async def _check_endpoint(self) -> None:
        wire = self.transport
        try:
            listed = await wire.served_models(budget=Budget(min(wire.deadline, _CHECK_DEADLINE)),
                                              max_retries=min(wire.max_retries, 2))
        except Exception as e:
            text = wire.describe(e)
            if refused_credentials(e):
                raise GeneratorError(f"{self} refused the credentials: {text}") from None
            raise GeneratorUnavailable(f"{self} cannot answer: {text} (while listing the served models, GET /models); "
                                       "start the server or correct the URL") from None
        if listed is not None and self.model not in listed and f"models/{self.model}" not in listed:
            raise GeneratorError(f"{self}: the server does not list a model named {self.model!r}"
                                 f"{served_hint(self.model, listed)} (a proxy that serves more than it lists: pass "
                                 "--generator-kwargs '{\"check\": false}')")

    # -- identity ----------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"OpenAIImagesGenerator({self.spec.describe()})"

    # -- drawing -----------------------------------------------------------------------------------------

    def draw(self, jobs: Sequence[Job], on_drawn: Callable[[Job, Drawn], None]) -> None:
        """Every job's image, all requests in flight at once (at most ``max_concurrency`` on the wire), each
        image handed to ``on_drawn`` in this thread as its reply arrives."""
        groups = _groups(jobs, self.max_n)
        self._first_reply = None  # a new draw holds its requests back until its first reply is in

        def handed(i: int, drawn: list[Drawn]) -> None:
            for job, d in zip(groups[i], drawn):
                on_drawn(job, d)

        # a reply on its way when the run stops (a quota reached, an endpoint down) was paid for: it is kept
        self.transport.run_batch(groups, self._ask, before=self._ensure_checked, on_result=handed,
                                 drain=self.transport.timeout)

    def _body(self, prompt: str, n: int) -> dict[str, Any]:
        config = self.config
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "n": n}
        if config.height is not None and config.width is not None:
            body["size"] = f"{config.width}x{config.height}"
        if config.quality is not None:
            body["quality"] = config.quality
        if self.response_format is not None:
            body["response_format"] = self.response_format
        return {**body, **config.pipeline_kwargs}

    async def _ask(self, group: list[Job]) -> list[Drawn]:
        """One request for a group's images, the first of a draw alone: the others wait for its reply, so a
        setting the API refuses is paid (refused) once, not by every request in flight. Raises :class:`GeneratorError`
        for a refused setting (see :func:`_refused_setting`: nothing more is sent) and for a refused key,
        :class:`GeneratorUnavailable` for an endpoint that cannot answer (``on_unavailable="raise"``); any other
        failure becomes each image's."""
        first = self._first_reply
        if first is None:  # the draw's first request: the others wait for its reply
            self._first_reply = first = asyncio.Event()
            self._stopped = False
            try:
                return await self._request(group)
            except BaseException:  # a refused setting or key, an endpoint down: the run ends, nothing more is sent
                self._stopped = True
                raise
            finally:
                first.set()
        await first.wait()
        if self._stopped:
            raise asyncio.CancelledError
        return await self._request(group)

    async def _request(self, group: list[Job]) -> list[Drawn]:
        body = self._body(group[0].prompt, len(group))
        try:
            reply = await self.transport.post("/images/generations", json_bytes(body), read=_check_reply)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            text = self.transport.describe(e)
            if (param := _refused_setting(e)) is not None:  # about the request: every other would get it too
                raise _setting_error(str(self), param, e) from None
            if quota_exhausted(e):  # every further request fails alike until the account can pay again
                if self.on_unavailable == "record":
                    return [Drawn.failed(text, "error", True) for _ in group]
                raise GeneratorUnavailable(f"{self}: the account's quota or billing limit is reached: {text}. Images "
                                           "made before are kept; raise the limit (or wait for it to reset) and run "
                                           "the same command again: it draws the images not made") from None
            if refused_credentials(e):
                raise GeneratorError(f"{self} refused the credentials: {text}. Images made before are kept; fix the "
                                     "key (or its permissions) and run again") from None
            if self.on_unavailable == "raise" and unavailable(e):
                raise GeneratorUnavailable(f"{self} cannot answer: {text}. Images made before are kept; run the same "
                                           "command again to go on") from None
            refused = failure_kind(e) == "status" and 400 <= e.status < 500 and (
                e.code in _REFUSAL_CODES or bool(_REFUSAL.search(e.message)))
            return [Drawn.failed(text, "refused" if refused else "error", transient(e)) for _ in group]
        shared = {k: v for k, v in reply.items() if k != "data" and isinstance(v, (str, int, float, bool, dict))}
        if len(group) > 1:
            shared["images_in_request"] = len(group)
        items = (reply["data"] or [])[: len(group)]
        drawn = list(await asyncio.gather(*(self._image(item, shared, job) for item, job in zip(items, group))))
        short = f"the server returned {len(items)} of the {len(group)} images asked for"
        return drawn + [Drawn.failed(short, "error", True, shared) for _ in range(len(group) - len(items))]

    async def _image(self, item: Any, shared: dict[str, Any], job: Job) -> Drawn:
        """One image of a reply, decoded in a worker thread (never on the loop that keeps requests in flight);
        an item without one is this image's failure (``retryable``: ``--retry-failed`` asks for it again)."""
        extra = {**{k: v for k, v in (item.items() if isinstance(item, dict) else ()) if k not in ("b64_json", "url")},
                 **shared}
        if _image_of(item) is None:
            given = {k: v for k, v in item.items() if k in ("b64_json", "url")} if isinstance(item, dict) else item
            return Drawn.failed(f"the server's reply held no image for it ({str(given)[:100]})", "error", True, extra)
        loop = asyncio.get_running_loop()
        if self._decoder is None:
            self._decoder = concurrent.futures.ThreadPoolExecutor(min(4, os.cpu_count() or 1),
                                                                  thread_name_prefix="t2ireason-image-decode")
        try:
            if item.get("b64_json"):
                data = await loop.run_in_executor(self._decoder, base64.b64decode, item["b64_json"])
            else:
                data = await self.transport.download(item["url"])
            image = await loop.run_in_executor(self._decoder, partial(decode_image, large=True), data,
                                               f"{job.file} (the server's reply)")
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a link that fails, bytes that are not an image: this image's failure
            text = (self.transport.describe(e) if failure_kind(e) != "other" else str(e) if isinstance(e, ImageError)
                    else f"{job.file}: {type(e).__name__}: {e}")
            # an image larger than PIL reads is what the model drew: asking again pays for the same again
            return Drawn.failed(f"the image could not be read: {self.transport.scrub(text)}", "error",
                                not isinstance(e, ImageTooLarge), extra)
        return Drawn(image, extra=extra)

    def close(self) -> None:
        self.transport.close()
        decoder, self._decoder = self._decoder, None
        if decoder is not None:
            decoder.shutdown(wait=False)
