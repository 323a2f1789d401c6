"""Whether a run was measured as the paper's rows were, element by element: the run's recorded protocol
(``scores.json``'s ``protocol``: :mod:`t2ireason.protocol_record`) against the paper's, declared as data beside its
published tables (``report/published/<benchmark>_protocol.json``, keyed by the tables' ``judge_spec``).

Each element is ``equal`` (verified), ``differs``, ``unverified`` (it cannot be checked: the paper does not say, the
release records no hashes, an endpoint that is not the vendor's API serves the model named, an evaluation made before
protocols were recorded) or ``vouched`` (the user vouched for a non-vendor endpoint, ``--vouch-endpoint``: counted as
equal, said on the row). The verdict is ``yes`` only when every element is equal or vouched; ``no: <each element that
differs>`` (with ``unverified: ...`` after it, where some also could not be checked); else ``unverified: <each
element that cannot be checked>``. A run not ``yes`` is set apart from the paper's rows.

A judge served by someone else than the paper's authors or vendor (a vLLM server of Qwen2.5-VL-72B) shows the client's
half of the protocol in its record; the server's half (its processor's pixel limits, its generation settings, the
weights it loaded) never reaches the client: those elements are ``unverified`` unless the user vouches for the server.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Element", "Comparison", "declared_protocol", "compare", "compare_records", "verdict_text", "said_value", "NO_RECORD"]

#: said of an evaluation made before its protocol was recorded
NO_RECORD = "protocol not recorded (evaluated before t2i-reason recorded what it sent: evaluate again to record it)"
#: a request setting's value meaning "not sent: the server's default"
SERVER_DEFAULT = "server default"
#: the vendors' documented defaults of the fields a request may leave out (OpenAI's chat completions)
_DEFAULTS = {"top_p": 1.0, "temperature": 1.0, "seed": None}
#: a preset's backend settings a server takes when it is started, not with each request
_SERVER_SETTINGS = ("dtype", "device_map", "processor_kwargs", "generation_config")
#: request elements in the order they are said
_REQUEST_ORDER = ("sampling", "temperature", "top_p", "seed", "max_tokens", "image_format", "max_pixels",
                  "processor_pixels", "image_preparation", "vision_ids", "system_prompt", "layout", "response_format",
                  "extra_body")


@dataclass
class Element:
    """One element of the comparison: its name, the paper's value, the run's, its status and the words the row says."""

    name: str
    status: str  # equal, differs, unverified, vouched
    paper: Any = None
    run: Any = None
    said: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"element": self.name, "status": self.status, "paper": self.paper, "run": self.run, "said": self.said}


@dataclass
class Comparison:
    """Every element of a run's protocol against the paper's (or another run's)."""

    elements: list[Element] = field(default_factory=list)

    def add(self, name: str, status: str, paper: Any = None, run: Any = None, said: str = "") -> None:
        self.elements.append(Element(name, status, paper, run, said or name))

    @property
    def text(self) -> str:
        return verdict_text(self.elements)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.text, "elements": [e.to_dict() for e in self.elements]}


def verdict_text(elements: list[Element]) -> str:
    """``yes``, ``no: <what differs>[; unverified: <what could not be checked>]`` or ``unverified: <...>``."""
    differs = [e.said for e in elements if e.status == "differs"]
    unverified = [e.said for e in elements if e.status == "unverified"]
    if differs:
        return "no: " + "; ".join(differs) + (f"; unverified: {'; '.join(unverified)}" if unverified else "")
    if unverified:
        return "unverified: " + "; ".join(unverified)
    return "yes"


@cache
def _declarations(benchmark: str) -> dict[str, Any]:
    file = resources.files("t2ireason") / "report" / "published" / f"{benchmark}_protocol.json"
    if not file.is_file():
        return {}
    return json.loads(file.read_text(encoding="utf-8"))["protocols"]


def declared_protocol(benchmark: str, judge_spec: str | None) -> dict[str, Any] | None:
    """The paper's protocol for its tables judged by ``judge_spec`` (a published table's), None where undeclared."""
    return _declarations(benchmark).get(judge_spec or "")


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _endpoint(c: Comparison, record: dict[str, Any], paper: dict[str, Any]) -> bool:
    """The endpoint element; returns whether the judge is served by someone else than the paper's (its server-side
    settings then cannot be seen)."""
    ep = record.get("endpoint") or {}
    host, vouched = ep.get("host"), record.get("vouched")
    def served_elsewhere(paper_side: str, why: str) -> None:  # the user's word, or what cannot be checked
        if vouched:
            c.add("endpoint", "vouched", paper_side, host, f"endpoint {host} (vouched: {vouched})")
        else:
            c.add("endpoint", "unverified", paper_side, host, f"endpoint {host}{why} (--vouch-endpoint to vouch for it)")

    if paper.get("endpoint") == "local":  # the authors ran the open model themselves
        if host == "local":
            c.add("endpoint", "equal", "local", "local")
            return False
        served_elsewhere("local", ": a server the paper's authors did not run, not verified to serve the model named "
                                  "with their settings")
        return True
    if ep.get("vendor"):
        c.add("endpoint", "equal", "the vendor's API", host)
        return False
    if host == "local":
        c.add("endpoint", "differs", "the vendor's API", host, "endpoint: a local model, not the vendor's API")
        return False
    served_elsewhere("the vendor's API", ", not the vendor's API: the model it serves cannot be verified to be the one "
                                         "named")
    return False


def _sent(request: dict[str, Any], key: str) -> Any:
    """A sampling field as the request carried it: its value, or :data:`SERVER_DEFAULT` when not sent."""
    params = request.get("sampling_params")
    if request.get("generation_config") == "model" and key in ("temperature", "top_p", "seed"):
        return "checkpoint"
    if params is not None and key not in params:
        return SERVER_DEFAULT
    return request.get(key)


def _same_value(paper: Any, run: Any, key: str) -> bool:
    if paper == run:
        return True
    if paper == SERVER_DEFAULT and key in _DEFAULTS:  # sent as the vendor's own default: the same request
        return run == _DEFAULTS[key]
    if isinstance(paper, float) or isinstance(run, float):
        try:
            return float(paper) == float(run)
        except (TypeError, ValueError):
            return False
    return False


def _run_value(key: str, record: dict[str, Any], served: bool) -> Any:
    """The run's value of a request element; ``...`` where it is the server's (not seen by the client)."""
    request, observed = record.get("request") or {}, record.get("observed") or {}
    extra = dict(request.get("extra_body") or {})
    if key == "sampling":  # the checkpoint's own generation settings, or what was sent
        if request.get("generation_config") == "model":
            return "checkpoint"
        params = request.get("sampling_params")
        if params is not None and not set(params) & {"temperature", "top_p", "seed"}:
            return ... if served else SERVER_DEFAULT
        return {k: request.get(k) for k in ("temperature", "top_p", "seed")}
    if key in ("temperature", "top_p", "seed", "max_tokens"):
        return _sent(request, key)
    if key == "processor_pixels":
        kwargs = request.get("processor_kwargs")
        if kwargs is None:
            return ...  # a server's processor: not the client's to see
        return [kwargs.get("min_pixels"), kwargs.get("max_pixels")]
    if key == "vision_ids":
        kwargs = request.get("chat_template_kwargs")
        if kwargs is None:
            kwargs = extra.get("chat_template_kwargs") or {}
        return bool(kwargs.get("add_vision_id"))
    if key == "image_preparation":
        return (record.get("options") or {}).get("image_preparation")
    if key == "system_prompt":
        return observed.get("system_prompt_sha256")
    if key == "layout":
        return observed.get("layout")
    if key == "response_format":
        return bool(request.get("response_format"))
    if key == "extra_body":
        extra.pop("chat_template_kwargs", None)  # the vision ids' element
        if extra.get("stream") is False:  # the API's default
            extra.pop("stream")
        return extra
    return request.get(key)


def _request(c: Comparison, record: dict[str, Any], paper: dict[str, Any], served: bool) -> None:
    wanted = paper.get("request") or {}
    server_side = set(paper.get("server_side") or ()) if served else set()
    vouched = record.get("vouched")
    for key in sorted(wanted, key=lambda k: _REQUEST_ORDER.index(k) if k in _REQUEST_ORDER else 99):
        want, have = wanted[key], _run_value(key, record, served)
        if key == "system_prompt":
            want_said = "none" if want is None else repr(want[:40])
            if have is None:
                c.add(key, "unverified", want, None, "system prompt not observed (no request was asked)")
            elif have == [_digest(want)]:
                c.add(key, "equal", want_said, want_said)
            else:
                c.add(key, "differs", want_said, have, f"system prompt not the paper's ({want_said})")
            continue
        if have is ... or (key in server_side and have in (SERVER_DEFAULT, ...)):
            if vouched:
                c.add(key, "vouched", want, "the server's", f"{key}: the server's (vouched)")
            else:
                c.add(key, "unverified", want, "the server's",
                      f"{key}: the server's, not seen by the client (the paper's: {said_value(want)})")
            continue
        if key == "layout" and have is None:
            c.add(key, "unverified", want, None, "layout not observed (no request was asked)")
            continue
        if _same_value(want, have, key):
            c.add(key, "equal", want, have)
        else:
            c.add(key, "differs", want, have, f"{key} {said_value(have)} (the paper's: {said_value(want)})")
    for key, why in (paper.get("unknown") or {}).items():
        c.add(key, "unverified", None, _run_value(key, record, served), f"{key}: {why}")


def said_value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True) if value else "none"
    if isinstance(value, list):
        return "-".join(str(v) for v in value)
    return str(value)


def _templates(c: Comparison, record: dict[str, Any], paper: dict[str, Any]) -> None:
    if "templates" not in paper:
        return
    admitted, read = paper["templates"], record.get("templates") or {}
    if not read:
        c.add("templates", "unverified", sorted(admitted), None, "templates: none recorded")
        return
    other = sorted(path for path, digest in read.items() if admitted.get(path) != digest)
    if other:
        words = {True: "edited", False: "not the paper's"}
        said = ", ".join(f"{p} ({words[p in admitted]})" for p in other)
        c.add("templates", "differs", sorted(admitted), sorted(read), f"templates: {said}")
    else:
        c.add("templates", "equal", sorted(admitted), sorted(read))


def _release(c: Comparison, record: dict[str, Any]) -> None:
    release = record.get("release") or {}
    status = release.get("status")
    if status == "matched":
        c.add("release", "equal", "recorded", "matched")
    elif status == "differs":
        files = release.get("files") or []
        c.add("release", "differs", "recorded", files,
              f"release: {len(files)} file{'s' * (len(files) != 1)} differ{'s' * (len(files) == 1)} from the recorded release "
              f"({', '.join(files[:3])}{', ...' if len(files) > 3 else ''})")
    else:
        # the build's own note may already say it (releases.NOT_CHECKED): said once
        note = (release.get("note") or status).removeprefix("release not checked: ")
        c.add("release", "unverified", "recorded", status, f"release not checked ({note})")


def compare(record: dict[str, Any] | None, paper: dict[str, Any], *, judge: tuple[bool, str] | None = None
            ) -> Comparison:
    """The run's recorded protocol (``record``) against the paper's (``paper``: :func:`declared_protocol`), every
    element but coverage and the questions' set (the caller's, who knows the table's scope). ``judge``: whether the
    run's judge is the paper's model, and the words saying it when not."""
    c = Comparison()
    if judge is not None:
        same, said = judge
        c.add("judge", "equal" if same else "differs", paper.get("judge"), None, said)
    if record is None:
        c.add("protocol", "unverified", None, None, NO_RECORD)
        return c
    served = _endpoint(c, record, paper)
    _request(c, record, paper, served)
    not_applied = list(record.get("not_applied") or [])
    if served and record.get("vouched"):
        # a server's own settings (set when it was started), vouched for with it; the chat template's through
        # extra_body, checked as the vision ids' element above
        said = [k for k in not_applied if k in _SERVER_SETTINGS]
        if said:
            c.add("preset settings", "vouched", None, said, f"{', '.join(said)}: the server's (vouched)")
        sent = any(e.name == "vision_ids" and e.status == "equal" for e in c.elements)
        not_applied = [k for k in not_applied if k not in _SERVER_SETTINGS and not (k == "chat_template_kwargs" and sent)]
    if not_applied:
        c.add("preset settings", "differs", [], not_applied, f"preset settings not applied: {', '.join(not_applied)}")
    _templates(c, record, paper)
    _release(c, record)
    return c


def compare_records(a: dict[str, Any], b: dict[str, Any]) -> Comparison:
    """Two runs' recorded protocols (``scores.json``'s ``protocol``), element by element: ``a`` against ``b``."""
    c = Comparison()
    keys = [("model", None), ("endpoint", "host")]
    for key, sub in keys:
        x, y = (a.get(key) or {}).get(sub) if sub else a.get(key), (b.get(key) or {}).get(sub) if sub else b.get(key)
        c.add(key, "equal" if x == y else "differs", y, x, f"{key} {said_value(x)} (the other run's: {said_value(y)})")
    for section in ("request", "observed", "options"):
        x, y = a.get(section) or {}, b.get(section) or {}
        for key in sorted(set(x) | set(y)):
            if key in ("requests", "image"):
                continue
            name = f"{section}.{key}"
            c.add(name, "equal" if x.get(key) == y.get(key) else "differs", y.get(key), x.get(key),
                  f"{name} {said_value(x.get(key))} (the other run's: {said_value(y.get(key))})")
    ta, tb = a.get("templates") or {}, b.get("templates") or {}
    edited = sorted(path for path in ta.keys() & tb.keys() if ta[path] != tb[path])  # a subset reads fewer: not a difference
    c.add("templates", "differs" if edited else "equal", sorted(tb), sorted(ta), f"templates differ: {', '.join(edited)}")
    for key in ("questions_sha256", "not_applied"):
        same = a.get(key) == b.get(key)
        c.add(key, "equal" if same else "differs", b.get(key), a.get(key), f"{key} differ")
    ra, rb = (a.get("release") or {}).get("status"), (b.get("release") or {}).get("status")
    c.add("release", "equal" if ra == rb == "matched" else "differs" if ra != rb else "unverified", rb, ra,
          f"release {ra} (the other run's: {rb})")
    ia, ib = a.get("images") or {}, b.get("images") or {}
    c.add("images", "equal" if ia.get("scored") == ib.get("scored") else "differs", ib.get("scored"), ia.get("scored"),
          f"images scored {ia.get('scored')} (the other run's: {ib.get('scored')})")
    return c

