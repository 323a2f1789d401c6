"""The papers' tables as LaTeX (booktabs, each column's best value in bold), each laid out to fit the
width it is given, as a paper lays out a table too wide for its column.

With a ``width`` (the report's ``tables.tex`` takes :data:`ONE_COLUMN`, the text of a one-column
article), the first layout that fits is kept, from these, in this order of preference (fewest panels,
then the larger font, then models as rows):

- the models as rows under the paper's columns (``\\small``), the same under two-level headers where
  columns share a name (PRISM-Bench's ``Imagination`` over ``Ali.``, ``Aes.``, ``Avg.``), in
  ``\\footnotesize`` with narrower gaps;
- turned on its side: the paper's columns (or their groups: PRISM-Bench's tracks) as rows and the
  models as columns, which suits the few models of one report;
- either split into panels (groups of columns, or of models) stacked in the one table.

Only a table that no layout fits is scaled (``\\resizebox``), the last resort. The widths are
estimated from Computer Modern's character widths (``cmr8``/``cmbx8``, the widest of its small
sizes, so that the estimate errs wide). With a ``height`` too (:data:`ONE_COLUMN_HEIGHT`; the agreement
tables ask it), a layout must also fit it, caption included, or LaTeX stops the page ("Float too large"):
where none does with the 95% intervals, the table is laid out without them and its caption says so. Without a ``width`` the layout is the former one: models as
rows, and a table of more than nine columns across the page (``table*``), scaled to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..results import Cell, PaperTable
from .cells import best_rows, format_cell

__all__ = ["to_latex", "ONE_COLUMN", "ONE_COLUMN_HEIGHT"]

#: the text width of LaTeX's one-column ``article`` at 10 pt, in points
ONE_COLUMN = 345.0
#: the text height of the same article (letter paper), in points: a float taller is "too large for page"
ONE_COLUMN_HEIGHT = 550.0

# Computer Modern's advance widths in em (cmr8.tfm; bold, cmbx8, is some 16% wider); kerning left out
_EM = {**{c: w for chars, w in [("!',.:;[]`il", 0.295), ("fj", 0.325), ("-", 0.354), (" ", 0.354), ("I", 0.383),
                                ("()trs", 0.42), ("cez", 0.472), ("?", 0.502), ("\"$*/0123456789^agou{}~_", 0.531),
                                ("J", 0.545), ("kqvxy", 0.561), ("Sbdhnp", 0.59), ("ZL", 0.664), ("FEP", 0.723),
                                ("BCTw", 0.767), ("R", 0.782), ("AHNUVXYD", 0.811), ("K&+=@OQG", 0.834),
                                ("#%m", 0.885), ("M", 0.973), ("|", 1.063), ("W", 1.091)] for c in chars}}
_BOLD = 1.16
#: the font sizes of a 10 pt article, in points
_SIZES = {"\\small": 9.0, "\\footnotesize": 8.0}
_SCRIPTSIZE = 7.0
#: the line spacing of those sizes, a booktabs rule with its gaps, \medskip stretched, the caption's lines and skip
_LEADING = {"\\small": 11.0, "\\footnotesize": 9.5}
_RULE = 4.0
_MEDSKIP = 8.0
_CAPTION_LEADING, _CAPTION_SKIP = 12.0, 10.0
_MARGIN = 0.97  # an estimate within 3% of the width counts as too wide


def _width(text: str, size: float, bold: bool = False) -> float:
    return sum(_EM.get(c, 0.6) for c in str(text)) * size * (_BOLD if bold else 1.0)


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


#: letters pdflatex's text fonts lack (it stops: "Unicode character τ"), written as math (the agreement tables' τ, ρ, α)
_TEX_MATH = {"τ": r"$\tau$", "ρ": r"$\rho$", "α": r"$\alpha$"}


def _tex(text: str) -> str:
    text = re.sub(r"[\\&%$#_{}~^]", lambda m: _TEX_SPECIAL[m.group()], str(text)).replace("\n", " ")
    return re.sub("[" + "".join(_TEX_MATH) + "]", lambda m: _TEX_MATH[m.group()], text)


@dataclass
class _Text:
    """One cell of a tabular: its text, whether bold, and a 95% interval to show beside it."""

    text: str
    bold: bool = False
    interval: str = ""

    def tex(self, lines: Sequence[str] | None = None) -> str:
        """The cell in LaTeX; ``lines``: the text broken onto these lines (a heading)."""
        if lines:
            # \relax: a line starting with "[" is not taken for the optional argument of \\
            return "\\begin{tabular}[b]{@{}c@{}}" + "\\\\\\relax ".join(_tex(line) for line in lines) + "\\end{tabular}"
        text = f"\\textbf{{{_tex(self.text)}}}" if self.bold else _tex(self.text)
        return text + (f" {{\\scriptsize {self.interval}}}" if self.interval else "")

    def width(self, size: float) -> float:
        return _width(self.text, size, self.bold) + (_width(" " + self.interval, _SCRIPTSIZE) if self.interval else 0)

    def two_lines(self, size: float) -> tuple[float, list[str]] | None:
        """The narrowest break of the text onto two lines at a space: (its width, the lines)."""
        words = self.text.split(" ")
        splits = [[" ".join(words[:i]), " ".join(words[i:])] for i in range(1, len(words))]
        return min(((max(_width(line, size) for line in lines), lines) for lines in splits), default=None)


@dataclass
class _Grid:
    """A tabular: header lines of (cell, span), then body rows of one cell per column."""

    header: list[list[tuple[_Text, int]]]
    rows: list[list[_Text]]
    wrap: bool = False  # headings may break onto two lines

    def _layout(self, size: float, sep: float) -> tuple[float, dict[tuple[int, int], list[str]]]:
        """The tabular's width, and the headings broken onto two lines (by their place) to narrow it: a
        heading wider than the columns it heads widens them, unless two lines of it fit better."""
        columns = [max([row[i].width(size) for row in self.rows] + [0.0]) + 2 * sep for i in range(len(self.rows[0]))]
        broken = {}
        for n, line in enumerate(self.header):
            start = 0
            for m, (cell, span) in enumerate(line):
                need = cell.width(size) + 2 * sep - sum(columns[start:start + span])
                # a heading over several columns wider than them would widen the last one alone: broken
                two = cell.two_lines(size) if need > 0 and (self.wrap or span > 1) else None
                if two and two[0] < cell.width(size):
                    broken[n, m] = two[1]
                    need = two[0] + 2 * sep - sum(columns[start:start + span])
                for i in range(start, start + span):
                    columns[i] += max(need, 0) / span
                start += span
        return sum(columns), broken

    def width(self, size: float, sep: float) -> float:
        return self._layout(size, sep)[0]

    def height(self, size: str, sep: float) -> float:
        """The tabular's height in the font size ``size`` (a command): its lines, a broken heading two, and rules."""
        broken = self._layout(_SIZES[size], sep)[1]
        heading = sum(max(len(broken.get((n, m), [""])) for m in range(len(line))) for n, line in enumerate(self.header))
        return _LEADING[size] * (heading + len(self.rows)) + _RULE * (len(self.header) + 2)

    def tex(self, size: float, sep: float) -> list[str]:
        broken = self._layout(size, sep)[1]
        out = ["\\begin{tabular}{l" + "r" * (len(self.rows[0]) - 1) + "}", "\\toprule"]
        for n, line in enumerate(self.header):
            cells = [(cell.tex(broken.get((n, m))), span) for m, (cell, span) in enumerate(line)]
            out.append(" & ".join(text if span == 1 else f"\\multicolumn{{{span}}}{{c}}{{{text}}}"
                                  for text, span in cells) + " \\\\")
            if n < len(self.header) - 1:  # a rule under each heading that spans columns
                start, rules = 1, []
                for _, span in line:
                    if span > 1:
                        rules.append(f"\\cmidrule(lr){{{start}-{start + span - 1}}}")
                    start += span
                out.append(" ".join(rules))
        out.append("\\midrule")
        out += [" & ".join(c.tex() for c in row) + " \\\\" for row in self.rows]
        return out + ["\\bottomrule", "\\end{tabular}"]


def _groups(columns: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Consecutive columns named ``<group> <part>`` with one group, as (group, parts); any other
    column alone, as (column, [])."""
    out: list[tuple[str, list[str]]] = []
    for i, column in enumerate(columns):
        group, _, part = column.rpartition(" ")
        if group and out and out[-1][0] == group and out[-1][1]:
            out[-1][1].append(part)
        elif group and i + 1 < len(columns) and columns[i + 1].rpartition(" ")[0] == group:
            out.append((group, [part]))
        else:
            out.append((column, []))
    return out


def _cell(t: PaperTable, best: dict[str, set[str]], label: str, column: str, intervals: bool) -> _Text:
    cell = t.rows[label].get(column) or Cell(None)
    text = format_cell(cell, intervals=False, decimals=t.decimals)
    interval = (f"[{cell.low:.{t.decimals}f}, {cell.high:.{t.decimals}f}]"
                if intervals and cell.low is not None and cell.high is not None else "")
    return _Text("--" if text == "–" else text, label in best.get(column, ()), interval)


def _as_rows(t: PaperTable, groups: list[tuple[str, list[str]]], labels: list[str], best, intervals: bool,
             grouped: bool, wrap: bool = False) -> _Grid:
    """The models as rows under the columns of ``groups``: one heading line, or two (the groups over
    their parts)."""
    columns = [f"{g} {p}" if parts else g for g, parts in groups for p in (parts or [None])]
    if grouped and any(parts for _, parts in groups):
        top = [(_Text(""), 1)] + [(_Text(g if parts else ""), len(parts) or 1) for g, parts in groups]
        bottom = [_Text("Model")] + [_Text(p) for g, parts in groups for p in (parts or [g])]
        header = [top, [(c, 1) for c in bottom]]
    else:
        header = [[(_Text("Model"), 1)] + [(_Text(c), 1) for c in columns]]
    return _Grid(header, [[_Text(label)] + [_cell(t, best, label, c, intervals) for c in columns] for label in labels],
                 wrap)


def _on_its_side(t: PaperTable, groups: list[tuple[str, list[str]]], labels: list[str], best,
                 intervals: bool, wrap: bool = False) -> _Grid:
    """The paper's columns (or their groups) as rows, the models as columns (each over the groups'
    parts); a column alone lines up under its last word where that is a part (PRISM's Pooled Avg.)."""
    parts = list(dict.fromkeys(p for _, ps in sorted(groups, key=lambda g: -len(g[1])) for p in ps))
    rows = []
    for g, ps in groups:
        if ps:
            name, columns = g, {p: f"{g} {p}" for p in ps}
        elif parts:  # a column alone: under its last word where that is a part, else under the first part
            head, _, last = g.rpartition(" ")
            name, columns = (head, {last: g}) if head and last in parts else (g, {parts[0]: g})
        else:
            name, columns = g, {None: g}
        rows.append([_Text(name)] + [_cell(t, best, label, columns[p], intervals) if p in columns else _Text("")
                                     for label in labels for p in (parts or [None])])
    if parts:
        header = [[(_Text(""), 1)] + [(_Text(label), len(parts)) for label in labels],
                  [(_Text(""), 1)] + [(_Text(p), 1) for _ in labels for p in parts]]
    else:
        header = [[(_Text(""), 1)] + [(_Text(label), 1) for label in labels]]
    return _Grid(header, rows, wrap)


def _split(items: list, k: int) -> list[list]:
    """``items`` in ``k`` consecutive chunks of near-equal size."""
    size, extra = divmod(len(items), k)
    chunks, start = [], 0
    for i in range(k):
        end = start + size + (i < extra)
        chunks.append(items[start:end])
        start = end
    return [c for c in chunks if c]


def _fitted(t: PaperTable, width: float, intervals: bool, height: float | None = None,
            caption: str = "") -> tuple[str, float, list[_Grid]] | None:
    """(font size command, column gap, the panels) of the first layout that fits ``width`` (and ``height``, with
    the ``caption`` under it), by the fewest panels, then the paper's orientation, the larger font, headings on one
    line; None when none fits."""
    best = best_rows(t)
    labels = list(t.rows)
    groups = _groups(t.columns)
    below = _CAPTION_SKIP + _CAPTION_LEADING * math.ceil(_width(caption, 10.0) / width)

    def first_fit(turned: bool, size: str, gap: float, wrap: bool) -> tuple[int, list[_Grid]] | None:
        items = labels if turned else groups  # what panels split: the models, or the columns' groups
        for k in range(1, len(items) + 1):
            grids = [_on_its_side(t, groups, chunk, best, intervals, wrap) if turned
                     else _as_rows(t, chunk, labels, best, intervals, True, wrap) for chunk in _split(items, k)]
            if all(g.width(_SIZES[size], gap) <= width * _MARGIN for g in grids):
                # the fewest panels that fit the width: more would only be taller
                tall = sum(g.height(size, gap) for g in grids) + _MEDSKIP * (len(grids) - 1) + below
                return (k, grids) if height is None or tall <= height * _MARGIN else None
        return None

    options = []  # (panels, turned on its side, font rank, headings broken, size, gap, grids)
    for rank, (size, gap) in enumerate([("\\small", 6.0), ("\\footnotesize", 3.0)]):
        for wrap in (False, True):
            for turned in (False, True):
                found = first_fit(turned, size, gap, wrap)
                if found:
                    options.append((found[0], turned, rank, wrap, size, gap, found[1]))
    if not options:
        return None
    *_, size, gap, grids = min(options, key=lambda o: o[:4])
    return size, gap, grids


def to_latex(tables: Sequence[PaperTable], *, intervals: bool = False, width: float | None = None,
             height: float | None = None) -> str:
    """Every table as a LaTeX ``table`` with booktabs rules (``\\usepackage{booktabs}``): the model
    column, then the paper's columns, each column's best value in bold, the note as the caption;
    ``intervals=True`` adds the 95% intervals in brackets (a smaller font). ``width`` (points, e.g.
    :data:`ONE_COLUMN`) lays each table out to fit it (see the module), and ``height`` (e.g.
    :data:`ONE_COLUMN_HEIGHT`) too, the intervals left out of a table that cannot fit with them; without a
    width, a table of more than nine columns spans the page (``table*``), scaled to it."""
    out = ["% t2i-reason paper tables; needs \\usepackage{booktabs} (and graphicx for the wide ones)"]
    for t in tables:
        caption = _tex(t.title) + (f". {_tex(t.note)}" if t.note else "")
        plain = f"{t.title}. {t.note}"
        has_intervals = intervals and any(cell.low is not None for cells in t.rows.values() for cell in cells.values())
        fitted = _fitted(t, width, intervals, height, plain) if width is not None and t.rows else None
        if fitted is None and has_intervals and height is not None and width is not None:
            fitted = _fitted(t, width, False, height, plain)  # too many to fit the page with their intervals
            if fitted:
                has_intervals = False
                caption += "; the 95\\% bootstrap intervals are left out here to fit the page (the Markdown and CSV " \
                           "tables give them)"
        if has_intervals:
            caption += "; 95\\% bootstrap confidence intervals in brackets"
        label = re.sub(r"[^a-z0-9]+", "-", t.title.lower()).strip("-")
        if fitted:
            size, gap, grids = fitted
            out += ["\\begin{table}[t]", "\\centering", size, *([f"\\setlength{{\\tabcolsep}}{{{gap:g}pt}}"]
                                                                 if gap != 6.0 else [])]
            for i, grid in enumerate(grids):
                out += (["", "\\medskip"] if i else []) + grid.tex(_SIZES[size], gap)
            out += [f"\\caption{{{caption}.}}", f"\\label{{tab:{label}}}", "\\end{table}", ""]
            continue
        # without a width, the former layout: a wide table across the page, scaled; with one that no layout
        # fits, the last resort: scaled to the width
        if width is None:
            env, scale = ("table*", "\\resizebox{\\textwidth}{!}{%") if len(t.columns) > 9 else ("table", "")
        else:
            env, scale = "table", "\\resizebox{\\linewidth}{!}{%" if t.rows else ""
        grid = _as_rows(t, [(c, []) for c in t.columns], list(t.rows), best_rows(t), intervals, grouped=False)
        lines = grid.tex(_SIZES["\\small"], 6.0)
        if scale:
            lines[-1] += "}"
        out += [f"\\begin{{{env}}}[t]", "\\centering", "\\small", *([scale] if scale else []), *lines,
                f"\\caption{{{caption}.}}", f"\\label{{tab:{label}}}", f"\\end{{{env}}}", ""]
    return "\n".join(out)
