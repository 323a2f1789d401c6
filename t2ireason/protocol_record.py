"""What an evaluation's judge actually received and what its scorer actually read, recorded at evaluate time
(``scores.json``'s ``protocol``): the report's verdict (:mod:`t2ireason.report.verdict`) is computed from this
record, element by element, never from the judge's name and the preset alone.

- ``endpoint``: where the requests went (scheme and host only: a URL's path, query and credentials are
  never recorded), and whether that is the vendor's own API for the model named (``vendor``: true, false, or
  None for a model of no vendor API, an open model served by someone);
- ``model``: the model name as sent;
- ``request``: every request setting as the judge sent it: sampling (temperature, top_p, seed, the token limit
  and the field that carried it), the fields left to the server, ``extra_body``, ``response_format``, the image
  preparation (format, pixel budget, the processor's pixel limits, vision ids) and, observed on the requests
  themselves, the system prompt (its SHA-256), whether the image came before the text, and one image's size as
  sent;
- ``not_applied``: the preset's backend settings the judge could not take (a difference, not a note);
- ``templates``: each template the requests were made from, by the SHA-256 of its source;
- ``release``: the build's release check (``matched``, ``differs`` with the files, ``no hashes``, or ``not built``);
- ``questions_sha256``: a digest of the rows the run scored (prompts, questions, criteria);
- ``images``: scored, failed, missing, not generated, left out by the preset, unscorable, of how many;
- ``vouched``: the user's word that a non-vendor endpoint serves the model named (``--vouch-endpoint``).

No API key can reach it: the judge's options are read by name, a URL is reduced to its host.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .judges.base import ChatRequest, Reply
from .judges.stored import StoredJudge
from .redaction import redacted

__all__ = ["RequestRecorder", "protocol_record", "endpoint_of", "vendor_host", "release_check", "questions_digest",
           "VENDOR_HOSTS"]

#: the vendors' own APIs, by the model names they serve
VENDOR_HOSTS = {"gpt-": "api.openai.com", "o1": "api.openai.com", "o3": "api.openai.com", "o4": "api.openai.com",
                "chatgpt-": "api.openai.com", "gemini-": "generativelanguage.googleapis.com"}


def vendor_host(model: str | None) -> str | None:
    """The host of the API of the vendor whose model ``model`` names (``api.openai.com`` for ``gpt-4.1``), or
    None for a model no vendor serves behind an API of its own (an open model: Qwen2.5-VL)."""
    name = str(model or "").lower().rsplit("/", 1)[-1]
    return next((host for prefix, host in VENDOR_HOSTS.items() if name.startswith(prefix)), None)


def endpoint_of(judge: Any) -> dict[str, Any]:
    """Where ``judge``'s requests go: ``{"backend", "scheme", "host", "vendor"}``; a local model's is
    ``{"backend": "hf", "host": "local"}``. Only the scheme and host (and port) of a URL: never its path,
    query or credentials."""
    backend = getattr(judge, "backend", "custom")
    if backend != "openai":
        return {"backend": backend, "scheme": None, "host": "local", "vendor": None}
    from .transport import OPENAI_HOST

    url = getattr(judge, "base_url", None)
    if url:
        parts = urlsplit(url)
        scheme, host = parts.scheme, (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    else:
        scheme, host = "https", OPENAI_HOST
    wanted = vendor_host(getattr(judge, "model", None))
    return {"backend": backend, "scheme": scheme, "host": host,
            "vendor": None if wanted is None else (scheme == "https" and host == wanted)}


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


class RequestRecorder(StoredJudge):
    """``judge`` with the requests it is given observed on their way: the system prompts (by digest), whether
    the image came first, one image's size as the judge sends it. It stores nothing and answers nothing."""

    def __init__(self, judge: Any, image_size: Any = None):
        super().__init__(judge)
        self.requests = 0
        self.system_prompts: set[str | None] = set()
        self.layout: str | None = None
        self.json_schema = False
        self.image: dict[str, Any] | None = None
        self._image_size = image_size

    def __repr__(self) -> str:
        return f"RequestRecorder({self.judge!r})"

    def _stored(self, requests: list[ChatRequest]) -> list[Reply | None]:
        for request in requests:
            self._observe(request)
        return [None] * len(requests)

    def _keep(self, request: ChatRequest, reply: Reply) -> None:
        pass

    def _observe(self, request: ChatRequest) -> None:
        self.requests += 1
        systems = [m.text for m in request.messages if m.role == "system"]
        self.system_prompts.add(_digest(systems[0]) if systems else None)
        self.json_schema = self.json_schema or request.json_schema is not None
        if self.layout is None:
            first = next((m for m in request.messages if m.role == "user"), None)
            if first is not None:
                self.layout = ",".join("text" if isinstance(p, str) else "image" for p in first.content)
        if self.image is None and request.images and self._image_size is not None:
            self.image = self._image_size(request.images[0])

    def observed(self) -> dict[str, Any]:
        if not self.requests:
            return {}
        return {"requests": self.requests, "system_prompt_sha256": sorted(self.system_prompts, key=str),
                "layout": self.layout, "json_schema": self.json_schema, "image": self.image}


def _sent_image(judge: Any):
    """How ``judge`` sends an image: ``{"size": [w, h], "format": ...}`` after its pixel budget and format."""
    fmt, budget = getattr(judge, "image_format", None), getattr(judge, "max_pixels", None)

    def size(image: Any) -> dict[str, Any]:
        try:
            width, height = image.resized(budget).size
        except Exception:  # an image that cannot be read is the scorer's failure, counted there
            return {}
        return {"size": [width, height], "format": fmt or image.format or "PNG"}
    return size


def recorder(judge: Any) -> RequestRecorder:
    """The recorder to put in front of ``judge`` (its innermost judge says how images are sent)."""
    inner = judge.innermost() if isinstance(judge, StoredJudge) else judge
    return RequestRecorder(judge, _sent_image(inner))


def request_settings(judge: Any) -> dict[str, Any]:
    """Every request setting of ``judge`` (the innermost, under any store) as it sends them, read by name: its
    sampling, the token limit's field, the fields left to the server, ``extra_body``, ``response_format``, the
    image preparation. Never a key: none of these holds one."""
    inner = judge.innermost() if isinstance(judge, StoredJudge) else judge
    sampling = getattr(inner, "default_sampling", None)
    said: dict[str, Any] = {}
    if sampling is not None:
        said.update(temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
                    seed=sampling.seed)
    for name in ("max_tokens_param", "sampling_params", "extra_body", "structured_output", "image_format",
                 "max_pixels", "min_pixels", "processor_kwargs", "chat_template_kwargs", "generation_config"):
        if hasattr(inner, name):
            value = getattr(inner, name)
            said[name] = list(value) if isinstance(value, tuple) else value
    if "structured_output" in said:
        said["response_format"] = said.pop("structured_output") is not False and \
            not getattr(inner, "structured_output_ignored", False)
    return json.loads(json.dumps(said, default=str))


def release_check(run: Any) -> dict[str, Any]:
    """The build's release check for the data ``run`` read: ``{"status", "files", "note"}``, status ``matched``
    (every recorded hash), ``differs`` (``files``: those that differ or are missing), ``no hashes`` (the project
    records none for the benchmark's release, or none of them matched: another release or a sample), or
    ``not built`` (rows read from a dataset, not built here from a release)."""
    data = run.manifest.get("data")
    folder = run._resolve(data) if data and not str(data).startswith(("hf://",)) else None
    report = folder / "build_report.json" if folder is not None else None
    if report is None or not report.is_file():
        return {"status": "not built", "files": [], "note": f"rows read from {data or 'the benchmark default'}, "
                "not built here from a release: its files could not be checked"}
    built = json.loads(report.read_text(encoding="utf-8"))
    check = (built.get("source_info") or {}).get("verification") or {}
    modified = [a["file"] for a in built.get("anomalies") or [] if a.get("kind") == "modified_file"]
    if not check.get("recorded"):
        return {"status": "no hashes", "files": [], "note": check.get("note") or
                "the project records no file hashes for this release: its files were not verified"}
    differs = sorted(set(check.get("mismatched") or []) | set(check.get("missing") or []) | set(modified))
    if not check.get("verified"):  # none matched: another release, or the project's sample in the layout
        return {"status": "no hashes", "files": [], "note": check.get("note", "")}
    return {"status": "differs" if differs else "matched", "files": differs, "note": check.get("note", "")}


def questions_digest(rows: Sequence[dict[str, Any]]) -> str:
    """The SHA-256 of the rows a run scored (every field but images), in id order: its prompts, questions and
    criteria; two runs of the same set give the same digest."""
    h = hashlib.sha256()
    for row in sorted(rows, key=lambda r: str(r.get("id"))):
        kept = {k: v for k, v in row.items() if not hasattr(v, "size")}  # an image field: not a question
        h.update(json.dumps(kept, sort_keys=True, default=str).encode("utf-8"))
    return h.hexdigest()


def protocol_record(run: Any, judge: Any, seen: RequestRecorder | None, templates: dict[str, str],
                    results: Sequence[Any], preset_settings: dict[str, Any] | None,
                    vouched: str | None, previous: dict[str, Any] | None = None,
                    options: dict[str, Any] | None = None, questions_sha256: str | None = None) -> dict[str, Any]:
    """The evaluation's protocol as sent and read (see the module). ``judge``: what scored (None when nothing
    was left to ask: the previous record's judge-side elements are kept); ``seen``: the recorder the requests
    passed; ``templates``: those read; ``results``: every image's result; ``previous``: the record of the same
    evaluation's earlier session (a resume asks only what is left: what was seen then still holds); ``options``:
    the scoring options the scorer ran with (the image preparation is one); ``questions_sha256``: the run's rows'
    :func:`questions_digest`, when the caller took it already (else read here)."""
    from .results import coverage

    previous = previous or {}
    counted = coverage(results)
    record: dict[str, Any] = {
        "endpoint": endpoint_of(judge.innermost() if isinstance(judge, StoredJudge) else judge)
        if judge is not None else previous.get("endpoint"),
        "model": getattr(judge, "model", None) if judge is not None else previous.get("model"),
        "request": {**(previous.get("request") or {}), **(request_settings(judge) if judge is not None else {})},
        "observed": (seen.observed() if seen is not None else {}) or previous.get("observed") or {},
        "options": json.loads(json.dumps(options or {}, default=str)),
        "not_applied": sorted((preset_settings or {}).get("not_applied") or {}),
        "templates": {**(previous.get("templates") or {}), **templates},
        "release": release_check(run),
        "questions_sha256": questions_sha256 or questions_digest(run.rows()),
        "images": {k: counted[k] for k in ("images", "scored", "failed", "missing", "not_generated", "excluded",
                                           "unscorable")},
        "vouched": vouched,
    }
    observed, request = record["observed"], record["request"]
    if "response_format" in request:  # sent only with a request that asks for a JSON schema
        request["response_format"] = bool(request["response_format"] and observed.get("json_schema"))
    return redacted(record)  # a key put in extra_body or an option by mistake is masked, as run.json masks it


def read_record(scores: dict[str, Any]) -> dict[str, Any] | None:
    """The protocol record of an evaluation (``scores.json``), None for one made before it was recorded."""
    return scores.get("protocol")

