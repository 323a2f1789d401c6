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

A layout fits when it is no wider than ``width`` and, given a ``height`` (:data:`ONE_COLUMN_HEIGHT`, the
text of the same article page: a float taller than it is never placed, "Float too large"), its panels no
taller than it with the caption: a table the page cannot hold goes on in floats of its own ("continued"), and
one that holds fewer floats without its 95% intervals is laid out without them, its caption saying so;
``\\scriptsize`` is tried only where it spares a float. Only a table that no layout fits is scaled
(``\\resizebox``), the last resort. The widths are estimated from Computer Modern's character widths
(``cmr8``/``cmbx8``, the widest of its small sizes, so that the estimate errs wide), the heights from the
sizes' line spacing and booktabs' rules. Rows are printed under their groups' headings (a paper's
Diffusion Models...: :attr:`PaperTable.groups`), and a run measured otherwise than a paper's rows beside it
is marked with a dagger, what differs said in the caption. Without a ``width`` the layout is the former
one: models as rows, and a table of more than nine columns across the page (``table*``), scaled to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..results import Cell, PaperTable
from .cells import best_rows, format_cell, is_change
from .tables import grouped_rows

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
#: the font sizes of a 10 pt article, in points, and their line spacing (\\baselineskip)
_SIZES = {"\\small": 9.0, "\\footnotesize": 8.0, "\\scriptsize": 7.0}
_LINES = {10.0: 12.0, 9.0: 11.0, 8.0: 9.5, 7.0: 8.0}
_SCRIPTSIZE = 7.0
_MARGIN = 0.97  # an estimate within 3% of the width (or the height) counts as too large
_RULE = 0.6  # a booktabs rule with its separations, in the font's size


def _width(text: str, size: float, bold: bool = False) -> float:
    # cmr7, \scriptsize's font, is some 7% wider an em than cmr8
    return sum(_EM.get(c, 0.6) for c in str(text)) * size * (_BOLD if bold else 1.0) * (1.07 if size < 7.5 else 1.0)


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                # OT1, pdflatex's default font encoding, sets these as other glyphs ("<" as an inverted "!")
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


#: letters pdflatex's text fonts lack (it stops: "Unicode character τ"), written as math (the agreement tables' τ, ρ, α)
_TEX_MATH = {"τ": r"$\tau$", "ρ": r"$\rho$", "α": r"$\alpha$", "‡": r"$^\ddagger$"}


def _tex(text: str) -> str:
    text = re.sub(r"[\\&%$#_{}~^<>|]", lambda m: _TEX_SPECIAL[m.group()], str(text)).replace("\n", " ")
    return re.sub("[" + "".join(_TEX_MATH) + "]", lambda m: _TEX_MATH[m.group()], text)


@dataclass
class _Text:
    """One cell of a tabular: its text, whether bold, and a 95% interval to show beside it."""

    text: str
    bold: bool = False
    interval: str = ""
    dagger: bool = False  # a run measured otherwise than the paper's rows beside it
    mark: bool = False  # differs significantly from the column's best run (a report's paired comparisons)

    def tex(self, lines: Sequence[str] | None = None) -> str:
        """The cell in LaTeX; ``lines``: the text broken onto these lines (a heading)."""
        if lines:
            # \relax: a line starting with "[" is not taken for the optional argument of \\
            return "\\begin{tabular}[b]{@{}c@{}}" + "\\\\\\relax ".join(_tex(line) for line in lines) + "\\end{tabular}"
        text = f"\\textbf{{{_tex(self.text)}}}" if self.bold else _tex(self.text)
        text += "$^\\dagger$" if self.dagger else ""
        text += "$^\\ddagger$" if self.mark else ""
        return text + (f" {{\\scriptsize {self.interval}}}" if self.interval else "")

    def width(self, size: float) -> float:
        return (_width(self.text, size, self.bold) + (0.5 * size if self.dagger else 0) + (0.5 * size if self.mark else 0)
                + (_width(" " + self.interval, _SCRIPTSIZE) if self.interval else 0))

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
    #: headings may break onto two lines (True), or those of single columns in the last heading line are
    #: turned upright ("rotate": a column as narrow as its numbers, as papers print many long headings)
    wrap: bool | str = False
    #: row index -> the heading of the group that starts there (the paper's Diffusion Models...)
    headings: dict[int, str] | None = None

    def _upright(self, n: int, m: int) -> bool:
        """Whether heading ``m`` of header line ``n`` is turned upright (the first column's stays)."""
        return self.wrap == "rotate" and n == len(self.header) - 1 and m > 0 and self.header[n][m][1] == 1

    def _layout(self, size: float, sep: float) -> tuple[float, dict[tuple[int, int], list[str]]]:
        """The tabular's width, and the headings broken onto two lines (by their place) to narrow it: a
        heading wider than the columns it heads widens them, unless two lines of it fit better."""
        columns = [max([row[i].width(size) for row in self.rows] + [0.0]) + 2 * sep for i in range(len(self.rows[0]))]
        broken = {}
        for n, line in enumerate(self.header):
            start = 0
            for m, (cell, span) in enumerate(line):
                wide = 1.1 * size if self._upright(n, m) else cell.width(size)  # upright: a line's height wide
                need = wide + 2 * sep - sum(columns[start:start + span])
                # a heading over several columns wider than them would widen the last one alone: broken
                two = cell.two_lines(size) if need > 0 and (self.wrap is True or span > 1) else None
                if two and two[0] < cell.width(size):
                    broken[n, m] = two[1]
                    need = two[0] + 2 * sep - sum(columns[start:start + span])
                for i in range(start, start + span):
                    columns[i] += max(need, 0) / span
                start += span
        return sum(columns), broken

    def width(self, size: float, sep: float) -> float:
        return self._layout(size, sep)[0]

    def height(self, size: float, sep: float) -> float:
        """The tabular's height in points: its lines (a heading broken onto two lines counts two), its
        group headings and its rules."""
        broken = self._layout(size, sep)[1]
        lines = sum(2 if any((n, m) in broken for m in range(len(line))) else 1 for n, line in enumerate(self.header))
        lines += len(self.rows) + len(self.headings or {})
        rules = 2 + len(self.header) + sum(1 for i in (self.headings or {}) if i)  # top, bottom, under headings
        upright = max([cell.width(size) for m, (cell, _) in enumerate(self.header[-1]) if self._upright(len(self.header) - 1, m)]
                      + [_LINES[size]]) - _LINES[size]  # the last heading line as tall as its longest upright heading
        return lines * _LINES[size] + rules * _RULE * size + upright

    def tex(self, size: float, sep: float) -> list[str]:
        broken = self._layout(size, sep)[1]
        out = ["\\begin{tabular}{l" + "r" * (len(self.rows[0]) - 1) + "}", "\\toprule"]
        for n, line in enumerate(self.header):
            cells = [(f"\\rotatebox{{90}}{{{cell.tex()}}}" if self._upright(n, m) else cell.tex(broken.get((n, m))), span)
                     for m, (cell, span) in enumerate(line)]
            out.append(_line(" & ".join(text if span == 1 else f"\\multicolumn{{{span}}}{{c}}{{{text}}}"
                                        for text, span in cells)))
            if n < len(self.header) - 1:  # a rule under each heading that spans columns
                start, rules = 1, []
                for _, span in line:
                    if span > 1:
                        rules.append(f"\\cmidrule(lr){{{start}-{start + span - 1}}}")
                    start += span
                out.append(" ".join(rules))
        out.append("\\midrule")
        for i, row in enumerate(self.rows):
            if i in (self.headings or {}):
                out += (["\\midrule"] if i else []) + [
                    f"\\multicolumn{{{len(row)}}}{{@{{}}l}}{{\\textit{{{_tex(self.headings[i])}}}}} \\\\"]
            out.append(_line(" & ".join(c.tex() for c in row)))
        return out + ["\\bottomrule", "\\end{tabular}"]


def _line(cells: str) -> str:
    """A row of a tabular: after the line above's ``\\\\`` (or ``\\midrule``), a row starting with ``[`` would be
    read as their optional argument ("Missing number", "Illegal unit of measure", or a label silently eaten as a
    space: "[2cm] ours") and one starting with ``*`` as ``\\\\*`` (spaces before either skipped): ``{}`` ends the
    search for it."""
    return ("{}" if cells.lstrip()[:1] in ("[", "*") else "") + cells + " \\\\"  # TeX skips spaces before [


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
    text = format_cell(cell, intervals=False, decimals=t.decimals, signed=is_change(column))
    text = text.removesuffix(cell.mark) if cell.mark else text  # drawn as a double dagger
    interval = (f"[{cell.low:.{t.decimals}f}, {cell.high:.{t.decimals}f}]"
                if intervals and cell.low is not None and cell.high is not None else "")
    return _Text("--" if text == "–" else text, label in best.get(column, ()), interval, mark=bool(cell.mark))


def _as_rows(t: PaperTable, groups: list[tuple[str, list[str]]], labels: list[str], best, intervals: bool,
             grouped: bool, wrap: bool = False) -> _Grid:
    """The models as rows under the columns of ``groups``: one heading line, or two (the groups over
    their parts); the rows under their group headings, a run set apart marked with a dagger."""
    columns = [f"{g} {p}" if parts else g for g, parts in groups for p in (parts or [None])]
    if grouped and any(parts for _, parts in groups):
        top = [(_Text(""), 1)] + [(_Text(g if parts else ""), len(parts) or 1) for g, parts in groups]
        bottom = [_Text("Model")] + [_Text(p) for g, parts in groups for p in (parts or [g])]
        header = [top, [(c, 1) for c in bottom]]
    else:
        header = [[(_Text("Model"), 1)] + [(_Text(c), 1) for c in columns]]
    apart = t.apart
    headings, start = {}, 0
    for group, members in grouped_rows(t):
        if group:
            headings[start] = group
        start += len(members)
    return _Grid(header, [[_Text(label, dagger=label in apart)] + [_cell(t, best, label, c, intervals) for c in columns]
                          for label in labels], wrap, headings)


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
    apart = t.apart
    if parts:
        header = [[(_Text(""), 1)] + [(_Text(label, dagger=label in apart), len(parts)) for label in labels],
                  [(_Text(""), 1)] + [(_Text(p), 1) for _ in labels for p in parts]]
    else:
        header = [[(_Text(""), 1)] + [(_Text(label, dagger=label in apart), 1) for label in labels]]
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


def _text_height(text: str, size: float, width: float) -> float:
    """The height in points of ``text`` (LaTeX) set as a paragraph ``width`` wide at ``size`` (about 0.46
    em a character, as Computer Modern sets prose)."""
    per_line = max(1, int(width / (0.46 * size)))
    return -(-len(re.sub(r"\\[a-zA-Z]+\{?|[{}$^]", "", text)) // per_line) * _LINES.get(size, 1.2 * size)


def _caption_height(caption: str, below: str, width: float) -> float:
    """The caption's height in points (LaTeX sets a caption at \\normalsize, whatever the table's size) with
    the space above it, and that of the \\footnotesize paragraph under it (``below``)."""
    return 10.0 + _text_height(caption, 10.0, width) + (3.0 + _text_height(below, 8.0, width) if below else 0.0)


def _fitted(t: PaperTable, width: float, intervals: bool, caption: str = "", below: str = "",
            height: float | None = None) -> tuple[str, float, list[list[_Grid]]] | None:
    """(font size command, column gap, the floats: each a list of panels) of the first layout that fits
    ``width`` and whose panels fit ``height`` (None: any) with the caption (the first float's, or a continued
    one's for the others) and the space between them: by the fewest floats, then the fewest panels, the paper's
    orientation, headings not upright, the larger font, headings on one line (``\\scriptsize`` only where
    it spares a float); None when none fits."""
    best = best_rows(t)
    labels = list(t.rows)
    groups = _groups(t.columns)
    first, more = (float("inf") if height is None else height * _MARGIN - _caption_height(text, note, width)
                   for text, note in ((caption, below), ("Table 10, continued (2 of 3).", "")))

    def floats(grids: list[_Grid], size: float, gap: float) -> list[list[_Grid]] | None:
        """The panels packed into floats in order, each as many as its page holds."""
        out: list[list[_Grid]] = [[]]
        used = 0.0
        for g in grids:
            tall = g.height(size, gap)
            room = first if len(out) == 1 else more
            if out[-1] and used + 6.0 + tall > room:
                out.append([])
                used, room = 0.0, more
            if tall > room:
                return None
            used += tall + (6.0 if out[-1] else 0.0)
            out[-1].append(g)
        return out

    def first_fit(turned: bool, size: str, gap: float, wrap: bool | str) -> tuple[int, list[list[_Grid]]] | None:
        items = labels if turned else groups  # what panels split: the models, or the columns' groups
        for k in range(1, len(items) + 1):
            grids = [_on_its_side(t, groups, chunk, best, intervals, wrap) if turned
                     else _as_rows(t, chunk, labels, best, intervals, True, wrap) for chunk in _split(items, k)]
            if all(g.width(_SIZES[size], gap) <= width * _MARGIN for g in grids):  # the fewest panels wide enough
                packed = floats(grids, _SIZES[size], gap)
                return (k, packed) if packed else None
        return None

    # (floats, \scriptsize, panels, turned on its side, headings upright, font rank, headings broken, size, gap,
    # floats): upright headings only where a smaller font on its own would not do
    options = []
    for rank, (size, gap) in enumerate([("\\small", 6.0), ("\\footnotesize", 3.0), ("\\scriptsize", 2.0)]):
        for order, wrap in enumerate((False, True, "rotate")):
            for turned in (False, True):
                found = first_fit(turned, size, gap, wrap)
                if found:
                    options.append((len(found[1]), rank == 2, found[0], turned, wrap == "rotate", rank, order, size,
                                    gap, found[1]))
    if not options:
        return None
    *_, size, gap, packed = min(options, key=lambda o: o[:7])
    return size, gap, packed


def to_latex(tables: Sequence[PaperTable], *, intervals: bool = False, width: float | None = None,
             height: float | None = None) -> str:
    """Every table as a LaTeX ``table`` with booktabs rules (``\\usepackage{booktabs}``): the model
    column, then the paper's columns, each column's best value in bold, the note as the caption;
    ``intervals=True`` adds the 95% intervals in brackets (a smaller font). ``width`` (points, e.g.
    :data:`ONE_COLUMN`) lays each table out to fit it (see the module), and ``height`` (e.g.
    :data:`ONE_COLUMN_HEIGHT`) too: a table the page cannot hold goes on in floats of its own, its intervals
    left out where that spares a float; without a width, a table of more than nine columns spans the page
    (``table*``), scaled to it."""
    out = ["% t2i-reason paper tables; needs \\usepackage{booktabs} and \\usepackage{graphicx} (upright headings, and the last resort of scaling a table)"]
    for t in tables:
        caption = _tex(t.title) + (f". {_tex(t.note)}" if t.note else "")
        shown = intervals and any(cell.low is not None for cells in t.rows.values() for cell in cells.values())
        apart = {label: why for label, why in t.apart.items() if label in t.rows}
        # the runs not ranked and why, where the table is: a paragraph under the caption, in a smaller font
        below = ("$^\\dagger$Measured otherwise than the paper's rows, not ranked among them: " + "; ".join(
            f"{_tex(label)}: {_tex(why)}" for label, why in apart.items()) + ".") if apart else ""
        if t.remarks:  # how the runs compare, what the prompts can detect: under the table
            below = " ".join([below, *(f"{_tex(line)}." for line in t.remarks)]).strip()
        notes = [f"\\par\\smallskip{{\\footnotesize {below}\\par}}"] if below else []
        label = re.sub(r"[^a-z0-9]+", "-", t.title.lower()).strip("-")
        said = "; 95\\% bootstrap confidence intervals in brackets" if shown else ""
        fitted = _fitted(t, width, shown, caption + said, below, height) if width is not None and t.rows else None
        if shown and height is not None and width is not None and (fitted is None or len(fitted[2]) > 1):
            plain = caption + "; the 95\\% bootstrap intervals are left out here to fit the page (the Markdown and CSV " \
                              "tables give them)"
            bare = _fitted(t, width, False, plain, below, height)
            if bare and (fitted is None or len(bare[2]) < len(fitted[2])):  # fewer floats without them
                fitted, shown, said, caption = bare, False, "", plain
        caption += said
        if fitted:  # one float, or as many as the page needs (the first with the caption, the others continued)
            size, gap, packed = fitted
            for n, grids in enumerate(packed):
                out += ["\\begin{table}[t]", "\\centering", size,
                        *([f"\\setlength{{\\tabcolsep}}{{{gap:g}pt}}"] if gap != 6.0 else [])]
                for i, grid in enumerate(grids):
                    out += (["", "\\medskip"] if i else []) + grid.tex(_SIZES[size], gap)
                if n == 0:
                    out += [f"\\caption{{{caption}.}}", *notes, f"\\label{{tab:{label}}}"]
                else:
                    out += [f"\\par\\smallskip{{\\normalsize Table~\\ref{{tab:{label}}}, continued ({n + 1} of "
                            f"{len(packed)}).\\par}}"]
                out += ["\\end{table}", ""]
            continue
        # without a width, the former layout: a wide table across the page, scaled; with one that no layout
        # fits, the last resort: scaled to the width
        if width is None:
            env, scale = ("table*", "\\resizebox{\\textwidth}{!}{%") if len(t.columns) > 9 else ("table", "")
        else:
            env, scale = "table", "\\resizebox{\\linewidth}{!}{%" if t.rows else ""
        grid = _as_rows(t, [(c, []) for c in t.columns], list(t.rows), best_rows(t), shown, grouped=False)
        lines = grid.tex(_SIZES["\\small"], 6.0)
        if scale:
            lines[-1] += "}"
        out += [f"\\begin{{{env}}}[t]", "\\centering", "\\small", *([scale] if scale else []), *lines,
                f"\\caption{{{caption}.}}", *notes, f"\\label{{tab:{label}}}", f"\\end{{{env}}}", ""]
    return "\n".join(out)
