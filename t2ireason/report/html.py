"""The HTML report: a gallery of every image with its prompt, questions, the
judge's answers and reasoning, filterable by category and by failure.

Everything that comes from prompts or judges is escaped by jinja2's
autoescaping, and a Content-Security-Policy only lets the report's own
(nonce-tagged) script run, so markup in a prompt or reply renders as text.
Images are linked by relative path (the run folder can be copied as a whole)
or embedded (one self-contained file).
"""

from __future__ import annotations

import base64
import mimetypes
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from ..files import printable
from ..results import ImageResult

__all__ = ["write_html_report", "render_html_report"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("t2ireason.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _image_src(path: str | None, out_dir: Path, embed: bool, image_root: Path | None) -> str | None:
    if not path:
        return None
    p = Path(path)
    if not p.is_absolute() and image_root is not None:
        p = image_root / p
    if not p.exists():
        return None
    if embed:
        mime = mimetypes.guess_type(p.name)[0] or "image/png"
        return f"data:{mime};base64," + base64.b64encode(p.read_bytes()).decode()
    return Path(os.path.relpath(p.resolve(), out_dir.resolve())).as_posix()


def _view(r: ImageResult, out_dir: Path, embed: bool, image_root: Path | None) -> dict[str, Any]:
    return {
        "id": r.id,
        "config": r.config,
        "prompt": r.prompt,
        "context": {k: _fmt(v) for k, v in r.context.items() if v not in (None, "", [], {})},
        "failed": r.failed,
        "any_failure": r.failed or bool(r.failure) or any(q.score is None for q in r.questions),
        "failure": r.failure,
        "score_text": _fmt(r.score),
        "subscores": {k: _fmt(v) for k, v in r.subscores.items()},
        "reasks": r.reasks,
        "questions": r.questions,
        "replies": r.replies,
        "src": _image_src(r.image, out_dir, embed, image_root),
    }


def render_html_report(results: Sequence[ImageResult], out_dir: str | os.PathLike, *, title: str,
                       meta: dict[str, Any] | None = None, summary: dict[str, Any] | None = None,
                       embed_images: bool = False, image_root: str | os.PathLike | None = None) -> str:
    """The report's HTML text. ``summary`` is a table: ``{"columns": [...], "rows": [[...], ...]}``."""
    out = Path(out_dir)
    root = Path(image_root) if image_root is not None else None
    views = [_view(r, out, embed_images, root) for r in results]
    configs = sorted({v["config"] for v in views if v["config"]})
    return _ENV.get_template("report.html.j2").render(
        title=title, meta={k: _fmt(v) for k, v in (meta or {}).items()}, summary=summary,
        results=views, configs=configs, nonce=secrets.token_urlsafe(16))


def write_html_report(results: Sequence[ImageResult], out_dir: str | os.PathLike, *, title: str,
                      filename: str = "report.html", **kwargs: Any) -> Path:
    """Write the report into ``out_dir`` and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / filename
    # a judge's text may hold a lone surrogate, which UTF-8 cannot: shown as U+FFFD
    path.write_text(printable(render_html_report(results, out, title=title, **kwargs)), encoding="utf-8")
    return path
