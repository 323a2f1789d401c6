"""The shape of a scored image, shared by every benchmark, metric and report.

Each benchmark module scores one image into an :class:`ImageResult` (with one
:class:`QuestionResult` per question, checklist item or judged aspect) and
aggregates a list of them into its paper's table. Reports and the Hub export
read only these, so they work the same for every benchmark.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class QuestionResult:
    """One judged question about one image.

    ``score`` is None when the judge never gave a valid answer: a failure,
    counted and shown, never averaged as zero.
    """

    question: str
    score: float | None
    criterion: str | None = None
    group: str | None = None  # e.g. "reason", "detail", "quality", "alignment", "aesthetic"
    weight: float | None = None
    reasoning: str | None = None
    id: str | None = None


@dataclass
class ImageResult:
    """One image scored against one benchmark row."""

    id: str
    prompt: str
    score: float | None  # the image's headline score on the benchmark's own scale; None if failed
    config: str | None = None  # dimension, category, track...
    subscores: dict[str, float | None] = field(default_factory=dict)
    questions: list[QuestionResult] = field(default_factory=list)
    image: str | None = None  # path or source of the image, for reports
    context: dict[str, Any] = field(default_factory=dict)  # explicit meaning, tags, etc. for reports
    replies: list[str] = field(default_factory=list)  # every raw judge reply, in order
    failure: str | None = None  # why the image (or some of its questions) could not be scored
    reasks: int = 0  # follow-up requests made because a reply did not parse or was incomplete
    #: the failure came from the judge's infrastructure (unreachable, time-out, server error), not from
    #: a reply: scoring the image again later may succeed (``t2ireason evaluate --retry-failed``)
    retryable: bool = False

    @property
    def failed(self) -> bool:
        return self.score is None

    @property
    def unscorable(self) -> bool:
        """No score because the benchmark cannot score the prompt at all (no questions: no judge is
        asked), marked ``context["unscorable"]``: reports show it as such, not as a failure."""
        return self.score is None and bool(self.context.get("unscorable"))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageResult:
        d = dict(d)
        d["questions"] = [QuestionResult(**q) for q in d.get("questions", [])]
        return cls(**d)


@dataclass
class Cell:
    """One number of a paper's table, with its confidence interval where one was computed."""

    value: float | int | None  # an int is a count, shown without decimals
    low: float | None = None
    high: float | None = None
    #: beside the value where the run differs significantly from the column's best run (a report's comparisons)
    mark: str = ""
    #: the ends of the run's 95% rank interval among a report's runs (None: not computed, or unknown)
    rank_low: int | None = None
    rank_high: int | None = None

    @classmethod
    def of(cls, x: Any) -> Cell:
        """A cell from a plain number, or from a :func:`~t2ireason.stats.summarize` dict
        (``mean``, ``ci_low``, ``ci_high``). NaN (no data, or one image: no interval) becomes None."""
        if isinstance(x, dict):
            return cls(_finite(x.get("mean")), _finite(x.get("ci_low")), _finite(x.get("ci_high")))
        return cls(_finite(x))


def coverage(results: Any) -> dict[str, Any]:
    """How many of an evaluation's images were scored, of how many, and why the others were not: each
    result (an :class:`ImageResult` or its dict) is ``scored``, or ``not_generated`` (the generation could not
    make it), ``missing`` (no file in the image folder), ``unreadable`` (its file cannot be read: cut short,
    damaged; the judge was never asked), ``unscorable`` (the benchmark has no questions for its prompt),
    ``excluded`` (left out by the preset's options) or ``failed`` (the judge gave no usable answer). ``text``
    says it in one line: ``"3 of 10 images scored (7 not generated)"``."""
    counts = dict.fromkeys(("scored", "not_generated", "missing", "unreadable", "unscorable", "excluded", "failed"), 0)
    for r in results:
        score, context = (r.score, r.context) if isinstance(r, ImageResult) else (r.get("score"), r.get("context") or {})
        kind = context.get("not_generated")
        counts["missing" if kind == "missing" else "not_generated" if kind else
               "scored" if score is not None else "unreadable" if context.get("unreadable") else
               "unscorable" if context.get("unscorable") else
               "excluded" if context.get("excluded") else "failed"] += 1
    total = sum(counts.values())
    said = [f"{n} {_COVERAGE_WORDS[k]}" for k, n in counts.items() if n and k != "scored"]
    return {"images": total, **counts,
            "text": f"{counts['scored']} of {total} images scored" + (f" ({', '.join(said)})" if said else "")}


_COVERAGE_WORDS = {"not_generated": "not generated", "missing": "missing from the image folder",
                   "unreadable": "unreadable image files",
                   "unscorable": "not scorable (no questions)", "excluded": "left out by the preset",
                   "failed": "judge failures"}


def _finite(x: Any) -> float | int | None:
    if x is None or isinstance(x, int):
        return x
    x = float(x)
    return None if x != x or x in (float("inf"), float("-inf")) else x


@dataclass
class RowProtocol:
    """How one row of a table was measured, said beside it wherever the table is written: the judge, the
    preset, the questions, the images scored of the benchmark's, and whether that is the protocol of the
    paper's rows it stands among (``comparable``: ``"yes"``, ``"no: <what differs>"``, ``"unverified: <what could
    not be checked>"``, ``"failed: ..."`` where no image was scored, or ``"n/a: no published rows"``)."""

    judge: str | None = None
    preset: str | None = None
    questions: str | None = None
    #: the images scored of the benchmark's prompts (``"15 of 800"``)
    images: str | None = None
    comparable: str = "yes"
    #: the run's own images: how many were scored and why the others were not (``"3 of 10 scored; 7 not
    #: generated"``); None for a paper's row
    coverage: str | None = None
    #: a row printed in a paper, not a run
    paper: bool = False
    #: each element of the comparison with the paper's protocol (:class:`t2ireason.report.verdict.Element`)
    elements: list[Any] = field(default_factory=list)

    @property
    def differs(self) -> str | None:
        """What sets the row apart from the paper's: what differs (``comparable`` less its ``no: ``), or what could
        not be checked (``unverified: ...``, said as such); None for ``yes`` and for a table with no paper's rows
        to compare with (``n/a: ...``)."""
        if self.comparable == "yes" or self.comparable.startswith("n/a"):
            return None
        return self.comparable.removeprefix("no: ")


@dataclass
class PaperTable:
    """A table in the layout of a paper: one row per model (or run), the paper's columns.

    Benchmark modules build it for one model (:meth:`Benchmark.paper_tables`); reports stack the
    rows of several runs (:func:`t2ireason.report.tables.side_by_side`) and render it. ``groups``
    puts rows under headings as the paper does (its Diffusion Models, Unified Multimodal Models...);
    ``protocols`` says how each row was measured (:class:`RowProtocol`).
    """

    title: str
    columns: list[str]
    rows: dict[str, dict[str, Cell]] = field(default_factory=dict)
    note: str = ""
    decimals: int = 1  # as the paper prints them
    #: row label -> the heading of the group it is printed under; rows of one group are consecutive
    groups: dict[str, str] = field(default_factory=dict)
    #: row label -> how the row was measured
    protocols: dict[str, RowProtocol] = field(default_factory=dict)
    #: lines said under the table: how its runs were compared, what difference its prompts can detect
    remarks: list[str] = field(default_factory=list)

    @property
    def apart(self) -> dict[str, str]:
        """The rows not ranked among the paper's (label -> what differs): runs whose protocol is not the
        paper's, in a table that holds a paper's rows. Empty without a paper's row: runs compared with runs."""
        if not any(p.paper for p in self.protocols.values()):
            return {}
        return {label: p.differs for label, p in self.protocols.items() if label in self.rows and p.differs}


    @classmethod
    def one_row(cls, title: str, label: str, cells: dict[str, Any], note: str = "", decimals: int = 1) -> PaperTable:
        """A one-model table from ``{column: number or summary dict}``, columns in that order."""
        return cls(title, list(cells), {label: {c: Cell.of(v) for c, v in cells.items()}}, note, decimals)
