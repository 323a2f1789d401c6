"""The HTML report: one page holding every paper table and figure of one run or of several side by
side, and a gallery of every prompt with each model's image, score, questions, the judge's answers
and reasoning, filterable by category, by failure and by text.

Everything that comes from prompts or judges is escaped by jinja2's autoescaping, and a
Content-Security-Policy only lets the report's own (nonce-tagged) script run, so markup in a prompt
or reply renders as text. Images and figures are linked by a path relative to the page (the report
folder and the runs can be moved together) or embedded (one self-contained file).
"""

from __future__ import annotations

import base64
import mimetypes
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from ..files import printable
from ..results import ImageResult, PaperTable
from .cells import best_rows, format_cell, is_change
from .tables import grouped_rows, protocol_line

__all__ = ["Section", "write_html_report", "render_html_report"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("t2ireason.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


@dataclass
class Section:
    """One benchmark of the page: its tables, figures (PNG paths; a PDF beside one is linked), one
    row per model saying what made it, and each model's per-image results."""

    title: str
    results: Mapping[str, Sequence[ImageResult]]  # model label -> its results, in the benchmark's order
    tables: Sequence[PaperTable] = ()
    figures: Sequence[str | os.PathLike] = ()
    runs: Sequence[Mapping[str, Any]] = field(default_factory=list)  # column -> plain value, one per model
    #: what each image's subscores are multiplied by to be shown on 0-100 beside its score (the benchmark's)
    subscore_scale: float = 1.0
    #: the class of the plain table of ``runs``: ``runs`` (what made each model's results), or ``comparisons``
    #: (a report's paired comparisons of runs)
    kind: str = "runs"


def _fmt(value: Any) -> str:
    """A value as a reader reads it: numbers to three figures, mappings as ``key: value`` pairs, lists
    comma-separated (never a Python repr)."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def _context(r: ImageResult) -> dict[str, str]:
    return {k: _fmt(v) for k, v in r.context.items() if v not in (None, "", [], {})}


def _src(path: str | os.PathLike | None, out_dir: Path, embed: bool, image_root: Path | None) -> str | None:
    """A relative link to ``path`` from the page, or its data URL; None where there is no file."""
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


def _subscore(value: Any, scale: float) -> str:
    """A subscore as the card shows it: on 0-100 like the score beside it (``scale``: from its benchmark's own)."""
    if scale != 1.0 and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{scale * value:.1f}"
    return _fmt(value)


def _entry(model: str, r: ImageResult, out_dir: Path, embed: bool, image_root: Path | None,
           shared: Mapping[str, str], subscore_scale: float = 1.0) -> dict[str, Any]:
    return {
        "model": model,
        "context": {k: v for k, v in _context(r).items() if k not in shared},
        "id": r.id,
        "failed": r.failed and not r.unscorable,
        "unscorable": r.unscorable,
        "any_failure": r.failed or bool(r.failure) or any(q.score is None for q in r.questions),
        "failure": r.failure,
        "score_text": "—" if r.score is None else f"{100 * r.score:.1f}",  # on 0-100, as the tables
        "subscores": {k: _subscore(v, subscore_scale) for k, v in r.subscores.items()},
        "reasks": r.reasks,
        "questions": r.questions,
        "replies": r.replies,
        "src": _src(r.image, out_dir, embed, image_root),
    }


def _table(t: PaperTable, number: int) -> dict[str, Any]:
    """A table for the page: its rows under their group headings, each run set apart from a paper's rows
    marked, and, above it where the reader looks first, the note and how each run's row was measured."""
    best = best_rows(t)
    apart = t.apart

    def row(label: str) -> tuple[str, list[tuple[str, bool]], str | None]:
        cells = t.rows[label]
        return label, [(format_cell(cells.get(c), decimals=t.decimals, signed=is_change(c)), label in best.get(c, ()))
                       for c in t.columns], apart.get(label)

    runs = [{"text": protocol_line(label, p), "apart": label in apart}
            for label, p in t.protocols.items() if label in t.rows and not p.paper]
    return {"id": f"table-{number}", "title": t.title, "note": t.note, "columns": t.columns,
            "intervals": any(c.low is not None for cells in t.rows.values() for c in cells.values()),
            "groups": [(group, [row(label) for label in labels]) for group, labels in grouped_rows(t)],
            "rows": [row(label) for label in t.rows], "runs": runs, "remarks": list(t.remarks)}


def _figure(path: str | os.PathLike, out_dir: Path, embed: bool) -> dict[str, Any] | None:
    png = Path(path)
    src = _src(png, out_dir, embed, None)
    if src is None:
        return None
    pdf = png.with_suffix(".pdf")
    from PIL import Image  # the figure's shape: a two-panel figure spans the row

    with Image.open(png) as img:
        wide = img.width > 1.5 * img.height
    return {"src": src, "name": png.stem, "wide": wide,
            "pdf": _src(pdf, out_dir, False, None) if pdf.exists() else None}


def render_html_report(sections: Sequence[Section] | Sequence[ImageResult], out_dir: str | os.PathLike, *,
                       title: str, meta: Mapping[str, Any] | None = None, embed_images: bool = False,
                       image_root: str | os.PathLike | None = None) -> str:
    """The report's HTML text. ``sections`` may be plain results (one model, no tables); ``meta``
    is shown under the title as ``key: value`` (plain values)."""
    out = Path(out_dir)
    root = Path(image_root) if image_root is not None else None
    if sections and isinstance(sections[0], ImageResult):
        sections = [Section("", {"": list(sections)})]
    page_sections, cards, configs, models = [], [], [], []
    tables_seen = 0
    for s_index, s in enumerate(sections):
        tables = [_table(t, tables_seen + i + 1) for i, t in enumerate(s.tables)]
        shown: list = []
        for table in tables:  # the same runs measured alike as in the table above: said there
            if table["runs"] == shown and not any(r["apart"] for r in table["runs"]):
                table["runs"] = []
            shown = table["runs"] or shown
        tables_seen += len(tables)
        columns = list(dict.fromkeys(k for row in s.runs for k in row))
        page_sections.append({
            "title": s.title, "tables": tables,
            "figures": [f for f in (_figure(p, out, embed_images) for p in s.figures) if f],
            "runs": {"columns": columns, "rows": [[_fmt(row.get(c)) for c in columns] for row in s.runs],
                     "kind": s.kind}})
        labels = list(s.results)
        models += [m for m in labels if m not in models]
        by_id: dict[str, dict[str, ImageResult]] = {}
        for label in labels:
            for r in s.results[label]:
                by_id.setdefault(str(r.id), {})[label] = r
        prefix = f"{s.title} · " if sum(bool(x.results) for x in sections) > 1 and s.title else ""
        for rid, per_model in by_id.items():
            first = next(iter(per_model.values()))
            # the row's own context (its meaning, tags) once; what differs between models (a judge's
            # description of the image, its settings) with each model's entry
            contexts = [_context(r) for r in per_model.values()]
            shared = {k: v for k, v in contexts[0].items() if all(c.get(k) == v for c in contexts[1:])}
            entries = [_entry(m, per_model[m], out, embed_images, root, shared, s.subscore_scale)
                       for m in labels if m in per_model]
            config = f"{prefix}{first.config}" if first.config else ""
            if config and config not in configs:
                configs.append(config)
            cards.append({
                "id": rid, "config": config, "section": s_index, "prompt": first.prompt,
                "context": shared,
                "entries": entries, "failed": any(e["failed"] for e in entries),
                "any_failure": any(e["any_failure"] for e in entries)})
    return _ENV.get_template("report.html.j2").render(
        title=title, meta={k: _fmt(v) for k, v in (meta or {}).items()}, sections=page_sections, cards=cards,
        configs=configs, compare=len(models) > 1, nonce=secrets.token_urlsafe(16))


def write_html_report(sections: Sequence[Section] | Sequence[ImageResult], out_dir: str | os.PathLike, *,
                      title: str, filename: str = "report.html", **kwargs: Any) -> Path:
    """Write the report into ``out_dir`` and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / filename
    # a judge's text may hold a lone surrogate, which UTF-8 cannot: shown as U+FFFD
    path.write_text(printable(render_html_report(sections, out, title=title, **kwargs)), encoding="utf-8")
    return path
