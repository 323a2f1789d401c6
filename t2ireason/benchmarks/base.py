"""What every benchmark module provides.

A benchmark module (one per paper benchmark) is the single source of truth for
that benchmark: its record schema, the reader of its official release, the
judge prompts it sends, how replies are parsed, how one image is scored and how
scores aggregate into the paper's tables. The dataset builder, metric modules,
generators and reports all read it.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import datasets

from ..judges.base import Sampling
from ..results import ImageResult, PaperTable


class ReleaseError(ValueError):
    """The official release could not be read; the message names the file and the row."""


@dataclass
class Anomaly:
    """Something irregular met while reading a release. Reported, never hidden."""

    kind: str  # e.g. "irregular_key", "orphan_question", "no_questions", "relabelled", "duplicate_id", "dropped_row"
    file: str
    row: str | int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.file, "row": self.row, "detail": self.detail}


@dataclass
class Quarantined:
    """A record of the release that could not be kept in the dataset at all (no prompt to draw, no
    prompt to attach to, columns that cannot be told apart...), kept in the build report with its
    raw text so that nothing the authors released is lost in silence."""

    file: str
    row: str | int | None
    reason: str
    #: the record as released: its line(s) of a CSV file, its JSON text
    raw: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "row": self.row, "reason": self.reason, "raw": self.raw}


@dataclass(frozen=True)
class OfficialRelease:
    """Where a benchmark's authors publish its release, pinned, so that ``t2ireason build <benchmark>``
    with no ``--source`` can fetch exactly that and check it.

    ``kind`` is ``"github"`` (an archive of ``revision`` over HTTPS) or ``"hub"`` (a Hub dataset,
    ``huggingface_hub.snapshot_download`` at ``revision``). ``files`` maps paths inside the release
    (relative to ``subdir``) to the SHA-256 of their bytes at that revision, for those the project
    has verified; an empty mapping means none could be verified, and the build says so.
    """

    kind: str
    repo: str
    revision: str
    files: dict[str, str] = field(default_factory=dict)
    subdir: str = ""
    #: the authors' own scripts in the repository, for reference in cards and messages
    scripts: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in ("github", "hub"):
            raise ValueError(f"an official release is on 'github' or the 'hub', got {self.kind!r}")


def recorded_hashes(benchmark: str) -> dict[str, str]:
    """The SHA-256 the project records for the files of ``benchmark``'s official release
    (``release_hashes/<benchmark>.sha256``, in ``sha256sum``'s format): path -> digest."""
    text = (resources.files("t2ireason") / "benchmarks" / "release_hashes" / f"{benchmark}.sha256").read_text("utf-8")
    return {path: digest for digest, path in (line.split("  ", 1) for line in text.splitlines()
                                              if line.strip() and not line.startswith("#"))}


@dataclass
class Release:
    """A release read into the project's schema: rows per config, with everything irregular listed."""

    configs: dict[str, list[dict[str, Any]]]
    anomalies: list[Anomaly] = field(default_factory=list)
    #: per config, counts worth reporting (rows, questions, checklist items, pairs...)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    license: str | None = None
    source: str = ""
    #: records that could not be kept at all, with their raw text (see :class:`Quarantined`)
    quarantine: list[Quarantined] = field(default_factory=list)
    #: the files the reader read, relative to the release's root (posix paths); the builder reports
    #: every other file of the release (the authors' scripts, images...) as ignored. None: not tracked.
    files_read: set[str] | None = None


def safe_name(value: str) -> str:
    """A file-name-safe stand-in for ``value`` (an id that cannot be a file name: ``../x``,
    ``a/b``, control characters, too long): its readable part (at most 80 bytes) with every unsafe
    character replaced, plus a short hash of the original so that two ids never map to one name.
    Always :func:`is_safe_name`, with room for a suffix and an extension."""
    readable = "".join("_" if c in "/\\" or not c.isprintable() else c for c in value).strip(". ")
    readable = readable.encode("utf-8")[:80].decode("utf-8", "ignore")  # unprintable surrogates are gone
    return f"{readable or 'id'}-{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def is_safe_name(part: str) -> bool:
    """Whether ``part`` can be one component of a path inside a folder: not empty, not hidden (no
    leading dot, so neither ``.`` nor ``..``), no separator, no control character, at most 200 bytes."""
    return (bool(part) and not part.startswith(".") and "/" not in part and "\\" not in part
            and all(c.isprintable() or c == " " for c in part) and len(part.encode("utf-8", "surrogatepass")) <= 200)


def unread_files(root: Path, files_read: set[str], under: str = "") -> list[str]:
    """The files under ``root`` (or its folder ``under``) that are not in ``files_read``, as sorted
    posix paths relative to ``root``; hidden files and folders (``.git``...) are not looked into."""
    out = []
    for folder, dirs, files in os.walk(root / under if under else root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            rel = (Path(folder) / name).relative_to(root).as_posix()
            if not name.startswith(".") and rel not in files_read:
                out.append(rel)
    return sorted(out)


def name_key(part: str) -> str:
    """A file or folder name as compared by :func:`closest_file`: lower case, runs of spaces, dashes
    and underscores as one ``_``."""
    return re.sub(r"[\s\-_]+", "_", part.lower())


def _likeness(a: str, b: str) -> float:
    """How alike two relative paths are: 1 when every name is equal up to case and separators, else
    the least alike pair of names (difflib's ratio), 0 for paths of different depths; compared name by
    name so that a long shared folder does not make ``evaluation_idiom`` look like ``evaluation_entity``."""
    xs, ys = PurePosixPath(a).parts, PurePosixPath(b).parts
    if len(xs) != len(ys):
        return 0.0
    return min(difflib.SequenceMatcher(None, name_key(x), name_key(y)).ratio() for x, y in zip(xs, ys))


def closest_file(root: Path, rel: str, taken: Collection[str] = (), cutoff: float = 0.9) -> tuple[str | None, list[str]]:
    """For an expected file ``rel`` that the release does not hold, the file the user most likely has
    under another spelling: ``(found, others)``.

    ``found`` is the one file under ``root`` at ``rel``'s depth, with its extension, whose every folder
    and file name equals ``rel``'s up to case and separators (``prompts/Entity-Reasoning.json``), or
    failing that the only one whose names are each within a slip of a letter or two (difflib's ratio
    at least ``cutoff``: ``deepseek_evaluatioin_qs/`` for ``deepseek_evaluation_qs/``); ``None`` when
    there is no such file or several, which are then ``others``, for the missing-file report. Files in
    ``taken`` (the files the reader reads under their own names) are never candidates, so a missing
    ``evaluation_idiom.json`` is never read from the ``evaluation_entity.json`` beside it."""
    suffix = PurePosixPath(rel).suffix.lower()
    alike = {c: _likeness(rel, c) for c in unread_files(root, set(taken)) if PurePosixPath(c).suffix.lower() == suffix}
    for level in (1.0, cutoff):
        close = sorted(c for c, x in alike.items() if x >= level)
        if close:
            return (close[0], []) if len(close) == 1 else (None, close)
    return None, []


def file_to_read(root: Path, rel: str, taken: Collection[str], anomalies: list[Anomaly], shown: str = "") -> str | None:
    """The file to read for the expected ``rel`` (relative to ``root``): ``rel`` itself when it is there;
    else the one file spelt otherwise (:func:`closest_file`), reported as a ``file_name`` anomaly; else
    None (the caller reports the missing file), with an ``ambiguous_file`` anomaly when several files
    look alike. ``shown`` is put before the paths the anomalies name (the folder ``root`` is in)."""
    if (root / rel).is_file():
        return rel
    found, close = closest_file(root, rel, taken)
    if found is not None:
        anomalies.append(Anomaly("file_name", shown + found, None, f"read as {shown}{rel}, which the release lacks "
                                                                   "(the names differ only in spelling)"))
        return found
    if close:
        anomalies.append(Anomaly("ambiguous_file", shown + rel, None, f"{len(close)} files are named like this missing "
                                 f"file, so none is read in its place: {', '.join(shown + c for c in close)}"))
    return None


class Benchmark(ABC):
    """A benchmark of the seed papers. Subclasses are declared once, in their own module."""

    #: hub-style name, e.g. "r2i-bench"
    name: str
    pretty_name: str
    #: the configs of its Hub dataset, in display order
    configs: tuple[str, ...]
    #: the evaluate metric module that scores it
    metric: str | None = None
    #: license of the official release when known (never invented); None: the user must say
    license: str | None = None
    #: BibTeX of the paper
    citation: str = ""
    #: one paragraph for cards and --help
    description: str = ""
    #: the dataset card body's how-to-score paragraph
    scoring: str = ""
    #: where the authors publish the release (None: nowhere the project can fetch from)
    official_release: OfficialRelease | None = None
    #: paths (relative to the layout's root, glob patterns allowed) that together identify the
    #: release's root folder, so a checkout one or two folders deeper or an unpacked archive is
    #: found (t2ireason.releases.find_root); empty: the folder given is the root
    release_markers: tuple[str, ...] = ()
    #: row fields whose values become file or folder names (see :meth:`image_path`): where an image
    #: path would not stay inside its folder, the builder maps the values of these that cannot be
    #: file names to safe ones (:meth:`with_safe_names`); empty: the text fields found in the path
    path_fields: tuple[str, ...] = ()
    #: languages of the prompts (ISO 639-1), for the dataset card
    language: tuple[str, ...] = ("en",)
    #: the one split its dataset has: ``test`` for an evaluation set, ``train`` for a training set
    split: str = "test"
    #: what an image's subscores are multiplied by to be shown beside its score, on 0-100 as the tables are
    #: (100 for subscores on 0-1; 1 for those on 0-100 already, or counts)
    subscore_scale: float = 1.0

    @property
    @abstractmethod
    def features(self) -> datasets.Features:
        """The schema of one row of the Hub dataset."""

    def config_features(self, config: str) -> datasets.Features:
        """The schema of the rows of ``config`` (the same for every config unless a benchmark says otherwise)."""
        return self.features

    @abstractmethod
    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read the official release (a local folder laid out as its authors publish it)."""

    #: named judge settings: {"paper": {"judge": spec, "judge_kwargs": {...}, "options": {...}}, "official": ...}
    presets: dict[str, dict[str, Any]] = {}
    default_preset: str = "paper"
    #: per-field explanations for dataset cards
    field_docs: dict[str, str] = {}
    #: the row fields its scoring reads, a field of a list's records dotted (``questions.criterion``): a
    #: row given to its metric must hold them, and may leave the others out (null, as a dataset's empty
    #: cell); None: every field of the row schema is required
    scored_fields: tuple[str, ...] | None = None

    def unscorable(self, row: dict[str, Any]) -> str | None:
        """Why the benchmark cannot score ``row`` whatever its image (a prompt the release gives no questions),
        None when it can: such a prompt is left out of a human study's sample, whose ratings could never meet a
        judge's score."""
        return None

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """Score each image against its row with ``judge``: one ImageResult per image, in order."""
        raise NotImplementedError(f"{self.name} is not scored by a judge")

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """The paper's table from per-image results (with confidence intervals where the paper has them)."""
        raise NotImplementedError(f"{self.name} has no aggregate scores")

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """The paper's tables for one model, from :meth:`aggregate`'s output; the first is the
        headline table (its columns are the dimensions plotted side by side)."""
        raise NotImplementedError(f"{self.name} has no paper tables")

    def change_tables(self, aggregate: dict[str, Any], baseline: dict[str, Any], label: str,
                      baseline_label: str) -> list[PaperTable]:
        """The paper's tables of one run's changes against another's (T2I-ReasonBench's Table 3: scores with
        LLM-rewritten prompts beside their change from the original prompts'), from both :meth:`aggregate`
        outputs; none for a benchmark whose paper has none."""
        return []

    def cell_formulas(self, aggregate: dict[str, Any], results: Sequence[ImageResult]) -> list[tuple] | None:
        """Each of :meth:`paper_tables`'s tables (in its order) as sums over images, so that a report can
        resample the prompts and compute the table as :meth:`aggregate` does (paired comparisons of runs, rank
        intervals: :mod:`t2ireason.stats_paired`): ``(terms, cells, ids)``, ``terms`` each term's values per
        image of ``ids`` (the images' prompt ids, in order), pooled into its mean; ``cells`` each column's
        weights of the terms' means. None where the benchmark does not declare them (nothing is compared)."""
        return None

    def subsets_covered(self, results: Sequence[ImageResult]) -> dict[str, dict[str, Any]]:
        """Per column of the headline table that averages over parts the paper defines (R2I-Bench's
        categories over their subcategories): the parts the paper averages (``paper``), those ``results``
        score (``scored``) and why each other has no score (``missing``: part -> ``(why, the release's gap)``);
        none for a benchmark without such parts."""
        return {}

    def sample_path(self) -> Path:
        """The small release of the project's own writing, in the official layout, shipped with the package."""
        return Path(str(resources.files("t2ireason") / "samples" / self.name))

    def row_id(self, row: dict[str, Any]) -> str:
        """A benchmark-wide unique id of a row."""
        return str(row["id"])

    def id_forms(self, row: dict[str, Any]) -> tuple[str, ...]:
        """The ways a user may name ``row`` (its :meth:`row_id` first), each taken for that one id by
        :meth:`row_ids`; by default the row id alone."""
        return (self.row_id(row),)

    def row_ids(self, rows: Sequence[dict[str, Any]]) -> RowIds:
        """The one id of each of ``rows`` from any of its :meth:`id_forms`, to join records that name the
        rows their own way (rewritten prompts, descriptions) to them."""
        return RowIds(self, rows)

    def prompt(self, row: dict[str, Any]) -> str:
        """The prompt a generator draws."""
        return row["prompt"]

    def row_config(self, row: dict[str, Any]) -> str | None:
        """The config (dimension, category, track) ``row`` belongs to, as its scored image's
        ``ImageResult.config`` says it: for a metric other than the benchmark's own scoring the run's rows."""
        return None

    def with_safe_names(self, row: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
        """``row`` with the values of :attr:`path_fields` in ``renamed`` replaced by safe names
        (a benchmark whose id is made of those fields rebuilds it here)."""
        return {**row, **renamed}

    def image_stem(self, row: dict[str, Any]) -> str:
        """Where the official layout puts the image of ``row``, relative to an output folder and
        without its extension (a benchmark with a layout of its own says it here)."""
        return f"{row.get('config', 'all')}/{self.row_id(row)}"

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """The file of ``row``'s image: :meth:`image_stem` ``.png``, and ``<stem>_<sample>.png`` for
        further samples of the same prompt."""
        return f"{self.image_stem(row)}{f'_{sample}' if sample else ''}.png"

    def __repr__(self) -> str:
        return f"<benchmark {self.name}: {', '.join(self.configs)}>"


# -- shared by the benchmark packages --

def step_options(options: dict[str, Any], own: Collection[str], known: Collection[str],
                 benchmark: str = "") -> dict[str, Any]:
    """The ``options`` one step takes (``own``: :meth:`Benchmark.score`'s or :meth:`Benchmark.aggregate`'s),
    the other step's left out: a metric passes both steps the same preset options. A name neither
    step takes (``known``) is a typo: a TypeError naming the known ones (and ``benchmark``, when given)."""
    unknown = set(options) - set(known)
    if unknown:
        from ..judges.spec import unknown_options

        raise unknown_options(benchmark, unknown, known)
    return {k: v for k, v in options.items() if k in own}


def paired(rows: Sequence[Any], images: Sequence[Any]) -> None:
    """One image per row, or a ValueError saying how many of each were given."""
    if len(rows) != len(images):
        raise ValueError(f"got {len(rows)} rows but {len(images)} images")


def given_path(image: Any) -> str | None:
    """The path an image was given as (a ``str`` or a path), for results to name; None for an image in memory."""
    return str(image) if isinstance(image, (str, os.PathLike)) else None


def sampling_option(value: Sampling | dict[str, Any] | None) -> Sampling | None:
    """The ``sampling`` option as a :class:`~t2ireason.judges.base.Sampling` (a dict of its fields is
    accepted), or None for the judge's own defaults."""
    return Sampling(**value) if isinstance(value, dict) else value


def one_of(name: str, value: Any, choices: Collection[Any]) -> Any:
    """``value`` when it is one of ``choices``, else a ValueError naming the option, the choices and the value."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def _id_text(given: Any) -> str:
    """An id as text: ``1``, ``1.0`` (a number column read as floats) and ``" 1 "`` are ``"1"``."""
    if isinstance(given, float) and given.is_integer():
        given = int(given)
    return str(given).strip()


class RowIds:
    """The rows' one id (:meth:`Benchmark.row_id`) from an id written in any of the rows'
    :meth:`Benchmark.id_forms` (T2I-ReasonBench: ``idiom-0001``, ``idiom/0001.png`` or the release's
    ``1``). A form that names several of the rows (``1`` over two dimensions) is refused, naming them."""

    def __init__(self, bench: Benchmark, rows: Sequence[dict[str, Any]]):
        self.bench = bench
        self.ids = [bench.row_id(r) for r in rows]
        self._by_form: dict[str, set[str]] = {}
        for row, rid in zip(rows, self.ids):
            for form in bench.id_forms(row):
                self._by_form.setdefault(_id_text(form), set()).add(rid)

    def get(self, given: Any) -> str | None:
        """The row id ``given`` names, None when it names none of the rows."""
        found = self._by_form.get(_id_text(given), set())
        if len(found) > 1:
            shown = ", ".join(sorted(found)[:4]) + (", ..." if len(found) > 4 else "")
            raise ValueError(f"{self.bench.name} id {given!r} names {len(found)} rows ({shown}): name each by its "
                             f"row id ({self.ids[0]}), or use the rows of one config")
        return next(iter(found), None)

    def join(self, values: dict[Any, Any], what: str) -> dict[str, Any]:
        """``values`` (by ids as given) by row id: ids that name none of the rows are left out (they may be
        other configs' rows); two ids of one row with different values are refused."""
        joined: dict[str, tuple[Any, Any]] = {}
        for given, value in values.items():
            rid = self.get(given)
            if rid is None:
                continue
            if rid in joined and joined[rid][1] != value:
                raise ValueError(f"the {what} give row {rid} two different values, under {joined[rid][0]!r} and {given!r}")
            joined[rid] = (given, value)
        return {rid: value for rid, (_, value) in joined.items()}
