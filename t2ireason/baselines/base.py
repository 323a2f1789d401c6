"""What the baseline metrics share: the prompts they score images against, their presets, their aggregate.

A baseline metric scores an image against its prompt alone (no benchmark row), and is declared like a
benchmark for everything that sets a judge up: ``name``, ``presets`` and ``default_preset`` read by
:func:`t2ireason.judges.spec.judge_setting` and :func:`~t2ireason.scoring.check_setting` (a baseline's
``score`` refuses an unknown option with a TypeError before anything is asked, as a benchmark's does),
``score(rows, images, judge, progress=..., **options)`` and ``aggregate(results, **options)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import Any

from ..benchmarks.base import given_path
from ..results import ImageResult, PaperTable
from ..stats import summarize

__all__ = ["Baseline", "prompt_rows", "image_source", "failed_image", "AGGREGATE_OPTIONS"]

#: what every baseline's aggregate takes: the bootstrap intervals'
AGGREGATE_OPTIONS = frozenset({"confidence", "n_resamples", "seed"})


def prompt_rows(rows: Sequence[Any], given: str | None = None) -> list[dict[str, Any]]:
    """Each row as ``{"id", "prompt"}`` (a string given alone is the prompt; the id is the row's own, or a hash of
    the prompt: the same prompt, the same id), with ``questions``: the row's ``given`` field, where it holds
    the metric's own questions (a field of its own name, so that a benchmark row's ``questions`` is never read
    as them); a row's other fields are left out. A row without a prompt is a clear error."""
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, str):
            row = {"prompt": row}
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            shown = type(row).__name__ if not isinstance(row, dict) else f"a dict without a string 'prompt' ({sorted(row)})"
            raise ValueError(f"rows[{i}] is {shown}: give each image's prompt (a string, or a row with a 'prompt')")
        ident = row.get("id")
        kept = {"id": str(ident) if ident not in (None, "") else prompt_hash(row["prompt"]), "prompt": row["prompt"]}
        if given is not None and row.get(given):
            kept["questions"] = row[given]
        out.append(kept)
    return out


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:12]


class Baseline:
    """One baseline metric (a subclass per paper). ``score`` gives one :class:`~t2ireason.results.ImageResult`
    per image, its ``score`` on 0-1 (None when it failed: never a zero); ``aggregate`` the mean over the
    scored images on the paper's 0-100 scale with its bootstrap interval."""

    name: str = ""
    pretty_name: str = ""
    #: named judge settings, as a benchmark's (``judge``, ``judge_kwargs``, ``options``; ``llm`` and
    #: ``llm_kwargs`` for a metric whose questions an LLM writes)
    presets: dict[str, dict[str, Any]] = {}
    default_preset: str = "paper"
    #: the options ``score`` takes
    score_options: frozenset[str] = frozenset()
    #: the options the metric is made with (its constructor's), which ``t2ireason evaluate --options`` and the
    #: metric module's ``evaluate.load`` keywords pass through: TIFA's ``question_filter``
    load_options: frozenset[str] = frozenset()
    citation: str = ""

    @property
    def metric(self) -> str:
        return self.name

    def options(self, options: dict[str, Any], own: Collection[str]) -> dict[str, Any]:
        """The options one step takes; a name neither step takes is a TypeError naming the known ones."""
        known = self.score_options | AGGREGATE_OPTIONS
        unknown = set(options) - known
        if unknown:
            from ..judges.spec import unknown_options

            raise unknown_options(self.name, unknown, known)
        return {k: v for k, v in options.items() if k in own}

    def score(self, rows: Sequence[Any], images: Sequence[Any], judge: Any, *, progress: bool | str = False,
              **options: Any) -> list[ImageResult]:
        raise NotImplementedError

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """``{<name>: the mean x 100, "summary": its statistics and interval, "num_scored", "num_failed"}``;
        failed images are left out of the mean, and counted."""
        opts = self.options(options, AGGREGATE_OPTIONS)
        summary = summarize([r.score for r in results], scale=100.0, **opts)
        mean = summary["mean"]
        return {self.name: None if mean != mean else mean, "summary": summary,
                "num_scored": summary["n"], "num_failed": summary["failed"]}

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """One table: the metric's mean (0-100) with its interval."""
        return [PaperTable.one_row(f"{self.pretty_name} (0-100)", label, {self.pretty_name: aggregate["summary"]},
                                   note="0-100", decimals=1)]

    def setting(self, preset: str | None = None, judge: Any = None, judge_kwargs: dict[str, Any] | None = None,
                options: dict[str, Any] | None = None):
        """The judge setting of ``preset`` with the caller's on top (:func:`~t2ireason.judges.spec.judge_setting`)."""
        from ..judges.spec import judge_setting

        return judge_setting(self, preset, judge, judge_kwargs, options)

    def close(self) -> None:  # noqa: B027 - a metric that loads nothing of its own has nothing to close
        """Release what the metric loaded itself (an LLM given as a spec)."""


def image_source(given: Any, image: Any) -> str | None:
    """Where an image came from, for its result: the loaded image's source, else the path it was given as."""
    return getattr(image, "source", None) or given_path(given)


def failed_image(row: dict[str, Any], image: Any, why: str) -> ImageResult:
    """The result of an image that is not asked about: its failure and why."""
    return ImageResult(id=row["id"], prompt=row["prompt"], score=None, image=image, failure=why)
