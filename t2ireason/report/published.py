"""The papers' main tables as printed, beside a user's runs (``t2ireason report ... --published``).

Each table is package data, ``report/published/<benchmark>_table<N>.csv``: ``# key: value`` lines citing
it (the paper, the seed text it was read from, the table and where it sits, the page where known, the judge
and the question set the paper used, the names the seed's text misreads and how they were corrected, the
table's scale) and saying its protocol in a form a run is checked against (``judge_spec``: the paper's judge
as a spec; ``presets``: this package's presets that follow it; ``questions_match``: whether a run of the
official release asks the paper's questions; ``prompts``: how many prompts the table averages over;
``scope``: which of a run's images it covers, ``language=en``, ``config=humanities`` or ``all``; ``rewrites``:
where the paper's models drew rewritten prompts, the release's field holding them; ``into``:
the title of the run's table it joins, and ``title`` where the paper numbers the same layout otherwise, as
PRISM-Bench's Tables 4 and 5 under the Qwen2.5-VL-72B judge), then one row per model as printed
(``model``, ``group`` and, for R2I-Bench, ``size``; then the table's columns, named as this package's
tables name them).

:func:`place` adds them, marked ``[paper]``, to the runs' rows of the same table, under the paper's row
groups: a run whose protocol is the paper's (:mod:`t2ireason.report.protocol`) is ranked among them, the
others are set apart, below, with what differs. :func:`standing_figure` draws one column of such a table as
sorted bars, the runs set apart in a panel of their own with what differs written under it.
"""

from __future__ import annotations

import csv
import io
import os
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..results import Cell, PaperTable, RowProtocol
from .cells import is_change

__all__ = ["PublishedTable", "published_tables", "place", "standing_column", "standing_bars", "standing_figure",
           "MARK", "RANKED_RUNS", "APART_RUNS"]

#: the mark after a published row's model name
MARK = "[paper]"
#: the group headings of a report's runs among a paper's rows
RANKED_RUNS = "Runs measured as the paper's rows"
APART_RUNS = "Runs measured otherwise: not ranked"
#: the heading of a paper's rows where the paper prints none
_PRINTED = "As printed in the paper"
#: columns of a published row that are not the table's
_ABOUT = ("model", "group", "size")


@dataclass(frozen=True)
class PublishedTable:
    """One paper table as printed: its citation (``paper``, ``seed``, ``table``, ``page``, ``judge``,
    ``questions``...) and protocol (``judge_spec``, ``presets``, ``questions_match``, ``prompts``, ``scope``),
    the title of the table it joins (``into``) and its own (``title``), its columns and rows (values as
    text, as printed) and the scale it prints on (``1`` for R2I-Bench's 0-1, else ``100``)."""

    benchmark: str
    citation: dict[str, str]
    columns: list[str]
    rows: list[dict[str, str]]

    @property
    def into(self) -> str:
        return self.citation["into"]

    @property
    def title(self) -> str:
        """The report's title of the table: the paper's number for the layout under this judge."""
        return self.citation.get("title") or self.into

    @property
    def scale(self) -> float:
        return float(self.citation.get("scale", 100))

    @property
    def judge(self) -> str:
        """The paper's judge as the paper names it (``GPT-4o, temperature 0.1``)."""
        return self.citation["judge"].split(" (")[0]

    @property
    def presets(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.citation.get("presets", "").split(",") if p.strip())

    @property
    def prompts(self) -> int | None:
        return int(self.citation["prompts"]) if self.citation.get("prompts") else None

    @property
    def shares(self) -> dict[str, float]:
        """Where the table's columns are the parts of a figure (R2I-Bench's subcategories of a category, its
        Tables 16 to 20), each part's share of the prompts (the paper's Tables 6 to 12); else none."""
        text = self.citation.get("shares", "").split(" (")[0]
        return {part: float(share) for part, _, share in (item.strip().rpartition(" ") for item in text.split(","))
                if part}

    def in_scope(self, result: Any) -> bool:
        """Whether a scored image (an ImageResult) is one the table averages over (its ``scope``)."""
        key, _, value = self.citation.get("scope", "all").partition("=")
        if key == "all":
            return True
        return (result.config if key == "config" else result.context.get(key)) == value

    def label(self, row: dict[str, str]) -> str:
        return f"{row['model']} {MARK}"

    def cells(self, scale: float = 100.0) -> dict[str, dict[str, Cell]]:
        """Each row's values as cells on ``scale`` (the runs' own)."""
        factor = scale / self.scale
        return {self.label(r): {c: Cell(round(float(r[c]) * factor, 10)) for c in self.columns if r.get(c, "").strip()}
                for r in self.rows}

    def groups(self) -> dict[str, str]:
        """Each row's group as the paper prints it (its Diffusion Models...), or one heading for all."""
        return {self.label(r): r.get("group") or _PRINTED for r in self.rows}

    def protocol(self) -> RowProtocol:
        """How the paper's rows were measured."""
        questions = self.citation["questions"]
        n = f"{self.prompts:,}" if self.prompts else "?"
        return RowProtocol(judge=self.judge, preset=", ".join(self.presets) or None, questions=questions,
                           images=f"{n} of {n}", paper=True)

    def note(self) -> str:
        """The protocol of the paper's rows, said with the table (the full citation is the report's
        what-made-it table's, :func:`place`)."""
        c = self.citation
        said = f"{MARK}: as printed in {c['paper'].split(':')[0]}, {c['table'].split(',')[0]}, judged by {self.judge}"
        if self.presets:
            said += f" (this package's preset{'s' * (len(self.presets) > 1)} {' and '.join(self.presets)})"
        said += f"; questions: {_plain(c['questions'])}"
        if self.prompts:
            said += f"; {self.prompts:,} prompts"
        if c.get("release"):
            said += f"; {c['release']}"
        return said


def _plain(text: str) -> str:
    """``text`` without its parenthesised asides (the sections and appendices a citation names)."""
    return " ".join(re.sub(r"\s*\([^()]*\)", "", text).split())


def _read(benchmark: str, text: str) -> PublishedTable:
    lines = text.splitlines()
    citation = {}
    while lines and lines[0].startswith("#"):
        key, _, value = lines.pop(0)[1:].partition(":")
        citation[key.strip()] = value.strip()
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    columns = [c for c in rows[0] if c not in _ABOUT] if rows else []
    return PublishedTable(benchmark, citation, columns, rows)


@cache
def published_tables(benchmark: str) -> tuple[PublishedTable, ...]:
    """The published tables of ``benchmark`` (its registry name), in table order; none for one without."""
    folder = resources.files("t2ireason") / "report" / "published"
    files = sorted((f for f in folder.iterdir() if f.name.startswith(f"{benchmark}_table") and f.name.endswith(".csv")),
                   key=lambda f: (int(re.search(r"table(\d+)", f.name).group(1)), f.name))
    return tuple(_read(benchmark, f.read_text(encoding="utf-8")) for f in files)


def place(tables: Sequence[PaperTable], benchmark: str, scale: float = 100.0) -> tuple[list[PaperTable], list[dict]]:
    """``tables`` (one benchmark's, the runs side by side, each run's row with its :class:`RowProtocol`) with
    each published table's rows joined to the runs' table of its title, under the paper's row groups: the runs
    measured as the paper's rows first (ranked among them), the paper's rows, then the runs measured otherwise
    (not ranked: :attr:`PaperTable.apart`). A layout no run has is added as the paper prints it, after the
    others (not one the runs have under another judge, PRISM-Bench's Table 4 beside a GPT-4.1 run's Table 1, nor a
    category's table by subcategory); a table of a figure's parts gives each paper row's figure over the parts a
    run scored, where it scored fewer than the paper (``Overall (3 of 7)``).
    The note says what measured the paper's rows. Returns the tables, and per published table joined a row
    for the report's what-made-it table (its rows, judge, questions, source)."""
    out = [PaperTable(t.title, list(t.columns), {k: dict(v) for k, v in t.rows.items()}, t.note, t.decimals,
                      dict(t.groups), dict(t.protocols)) for t in tables]
    about: list[dict] = []
    pubs = published_tables(benchmark)
    titles = {t.title for t in out}
    taken = {pub.into for pub in pubs if pub.title in titles}  # layouts the runs have, under some judge
    for pub in pubs:
        table = next((t for t in out if t.title == pub.title), None)
        if table is None:
            if pub.into in taken or pub.shares:  # a category's parts join the run's table of them, never alone
                continue
            table = PaperTable(pub.title, list(pub.columns), {}, "", 1 if pub.scale != 100 else _decimals(pub))
            out.append(table)
        runs = list(table.rows)
        for label, cells in pub.cells(scale).items():
            if label in table.rows:
                raise ValueError(f"a run is labelled {label!r}, as a published row of {table.title!r}; rename it")
            table.rows[label] = cells
        table.columns += [c for c in pub.columns if c not in table.columns]
        table.note = "; ".join(filter(None, [table.note, pub.note()]))
        paper = pub.protocol()
        table.protocols.update(dict.fromkeys(pub.cells(scale), paper))
        if pub.shares:  # the parts in the paper's order, each run's figure over its parts beside the paper's
            _over_the_runs_parts(table, pub, runs)
            derived = [c for c in table.columns if c.startswith("Overall (")]
            table.columns = list(dict.fromkeys(["Overall", *derived, *pub.columns, *table.columns]))
        apart = [r for r in runs if (table.protocols.get(r) or RowProtocol()).differs]
        order = [r for r in runs if r not in apart] + list(pub.cells(scale)) + apart
        table.rows = {label: table.rows[label] for label in order}
        table.groups = {**{r: RANKED_RUNS for r in runs if r not in apart}, **pub.groups(),
                        **dict.fromkeys(apart, APART_RUNS)}
        about.append({"model": f"the {len(pub.rows)} rows marked {MARK} of {table.title}", "judge": pub.citation["judge"],
                      "questions": pub.citation["questions"],
                      "source": f"{pub.citation['paper'].split(':')[0]}, {pub.citation['table'].split(',')[0]} as "
                                f"printed (seed {pub.citation['seed']})"})
    return out, about


def _over_the_runs_parts(table: PaperTable, pub: PublishedTable, runs: Sequence[str]) -> None:
    """Where a run scored fewer of a figure's parts than the paper (an official R2I-Bench run's Commonsense: 3 of
    its 7 subcategories), a column ``Overall (3 of 7)`` beside ``Overall``: the run's own figure (moved from
    ``Overall``), and each paper row's over the same parts, their values weighted by the paper's shares of the
    prompts: the figures to compare."""
    shares = pub.shares
    made: dict[str, list[str]] = {}  # column -> the parts it averages
    for label in runs:
        parts = [p for p in shares if isinstance((table.rows[label].get(p) or Cell(None)).value, (int, float))]
        if not parts or len(parts) == len(shares):
            continue
        column = f"Overall ({len(parts)} of {len(shares)})"
        while made.get(column, parts) != parts:  # another run's other parts: a column of their own
            column += "'"
        made[column] = parts
        if column not in table.columns:
            at = table.columns.index("Overall") + 1 if "Overall" in table.columns else 0
            table.columns.insert(at, column)
        # the run's figure moves to the column of its parts: under Overall it would stand beside figures of more
        table.rows[label][column] = table.rows[label].pop("Overall", None) or Cell(None)
        weight = sum(shares[p] for p in parts)
        for row in pub.cells(1.0).keys() & table.rows.keys():
            cells = table.rows[row]
            if all(p in cells for p in parts):
                cells[column] = Cell(round(sum(shares[p] * cells[p].value for p in parts) / weight, 10))


def _decimals(pub: PublishedTable) -> int:
    """The decimals the paper prints (the most of its values: a lone 90.30 among 90.3s is a typo's)."""
    counts = [len(v.partition(".")[2]) for r in pub.rows for c, v in r.items() if c in pub.columns]
    return max(set(counts), key=counts.count) if counts else 1


def standing_column(table: PaperTable) -> str | None:
    """The column a table's standing is drawn on: its last summary column (Overall, Avg., Overall Avg.) that
    the paper's rows and every run ranked among them have (never one only the runs have, as PRISM-Bench's Pooled Avg., nor a change: T2I-ReasonBench
    Table 3 ranks on ``Overall score``, not on ``Overall change``)."""
    from .plots import _SUMMARY

    summary = [c for c in table.columns if any(_SUMMARY.match(w) for w in c.split()) and not is_change(c)]
    paper = [label for label, p in table.protocols.items() if p.paper and label in table.rows]
    printed = [c for c in summary if any(c in table.rows[label] for label in paper)]
    # of those, one every run ranked among the paper's rows has: a run of all 7 of R2I-Bench's Commonsense
    # subcategories is drawn on Overall, not dropped because another run's figure is on Overall (3 of 7)
    apart = table.apart
    ranked = [label for label, p in table.protocols.items() if not p.paper and label in table.rows and label not in apart]
    shared = [c for c in printed if all(isinstance((table.rows[r].get(c) or Cell(None)).value, (int, float))
                                        for r in ranked)]
    return (shared or printed or summary or [None])[-1]


def standing_figure(table: PaperTable, runs: Sequence[str], path: str | os.PathLike) -> list[Path]:
    """:func:`standing_bars` written to ``path`` as PNG and PDF, as every figure of the report."""
    import matplotlib.pyplot as plt

    from .plots import _STYLE, save_figure

    with plt.rc_context(_STYLE):
        return save_figure(standing_bars(table, runs), path)


def standing_bars(table: PaperTable, runs: Sequence[str]):
    """One column of ``table`` (:func:`standing_column`) as horizontal bars, best first, the rows of ``runs``
    in colour and named in bold, the published ones grey: where each run stands among the paper's models.
    A run measured otherwise than the paper's rows (:attr:`PaperTable.apart`) is not ranked among them: it
    is drawn in a panel of its own below, and what differs is written under it, in the figure."""
    import matplotlib.pyplot as plt

    from .plots import _COLOURS, _STYLE, COLUMN_WIDTH, _wrap

    column = standing_column(table)
    apart = table.apart

    def bars(labels: Sequence[str]) -> list[tuple[str, float]]:
        return sorted(((label, table.rows[label][column].value) for label in labels
                       if column in table.rows[label] and isinstance(table.rows[label][column].value, (int, float))),
                      key=lambda x: -x[1])

    ranked, alone = bars([r for r in table.rows if r not in apart]), bars([r for r in table.rows if r in apart])
    said = [f"{label}: {apart[label]}" for label, _ in alone]
    # a ranked run judged at an endpoint other than the vendor's API (vouched for) says where, in the figure too
    said += [f"{label}: judge {table.protocols[label].judge}" for label, _ in ranked
             if "@" in str(getattr(table.protocols.get(label), "judge", "") or "")]
    per_line = int(COLUMN_WIDTH * 72 * 0.95 / (5.5 * 0.6))  # characters of 5.5 pt sans serif across the figure
    if any(table.rows[label][column].rank_low is not None for label, _ in ranked + alone if label in runs):
        said.append("runs: their 95% interval, and their rank interval among the report's runs over resamples of "
                    "the prompts; the paper's rows have no per-prompt scores: their intervals are unknown")
    lines = [line for text in said
             for line in textwrap.wrap(text, per_line, break_long_words=False, subsequent_indent="   ")]
    heights = [0.16 * len(ranked) + 0.3] + ([0.16 * len(alone) + 0.45] if alone else [])
    with plt.rc_context(_STYLE):
        fig, axs = plt.subplots(len(heights), 1, figsize=(COLUMN_WIDTH, 0.55 + sum(heights) + 0.085 * len(lines)),
                                layout="constrained", gridspec_kw={"height_ratios": heights}, squeeze=False)
        panels = [(axs[0][0], ranked, None)] + ([(axs[1][0], alone, "not ranked: not verified equal")] if alone else [])
        for ax, rows, title in panels:
            ys = list(range(len(rows)))[::-1]
            ax.barh(ys, [v for _, v in rows], height=0.7,
                    color=[_COLOURS[0] if label in runs else "#B0B0B0" for label, _ in rows],
                    hatch=["////" if label in apart else "" for label, _ in rows], edgecolor="white", linewidth=0)
            ax.set_yticks(ys, [label for label, _ in rows])
            ax.set_ylim(-0.6, len(rows) - 0.4)
            for tick, (label, _) in zip(ax.get_yticklabels(), rows):
                tick.set_fontweight("bold" if label in runs else "normal")
            for y, (label, v) in zip(ys, rows):
                cell = table.rows[label][column]
                end = v
                if label in runs and cell.low is not None and cell.high is not None:  # the run's 95% interval
                    ax.errorbar(v, y, xerr=[[v - cell.low], [cell.high - v]], fmt="none", ecolor="black",
                                elinewidth=0.6, capsize=1.5)
                    end = max(v, cell.high)
                rank = (f"  rank {cell.rank_low}" + (f"–{cell.rank_high}" if cell.rank_high != cell.rank_low else "")
                        if label in runs and cell.rank_low is not None else "")
                ax.text(end, y, f" {v:.{table.decimals}f}{rank}", va="center", fontsize=6)
            ax.set_xlim(0, 116)  # 0-100, as every figure, and room for the values printed at the bars' ends
            ax.set_xticks(range(0, 101, 20))
            if title:
                ax.set_title(title, fontsize=7, loc="left")
        (axs[1][0] if alone else axs[0][0]).set_xlabel(column)
        if lines:  # what differs, in the figure itself, under the panel of the runs it sets apart
            fig.supxlabel("\n".join(lines), x=0.02, ha="left", fontsize=5.5, linespacing=1.25)
        fig.suptitle(_wrap(table.title, 50), fontsize=8)
    return fig
