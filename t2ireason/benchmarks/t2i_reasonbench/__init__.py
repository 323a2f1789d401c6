"""T2I-ReasonBench (seed 000): idiom, textual-image, entity and scientific reasoning prompts.

The single source of truth for the benchmark, a file for each step of an image's path:

- ``schema``: the four dimensions (their release files, question groups and weights) and the row schema;
- ``release``: the reader of the official GitHub release (``prompts/``, ``deepseek_evaluation_qs/``,
  ``pipeline_prompts/``), which keeps every value and reports every irregularity, with ``salvage`` (JSON
  that does not parse, repeated keys), ``questions`` (question-criterion pairs by key, rubrics as text)
  and ``values`` (JSON values kept as text);
- ``protocol``: the two-stage judge protocol of the paper (Figure 14: "Describe this image.", then one
  turn per question group), the official scripts' prompt and reply reading as options, the presets;
- ``scores``: T2I-ReasonScore (section 4.1, equation 2, with the weights of section 5), the official
  code's aggregation, the text score of Table 4 and the paper's tables (``options``: what both take);
- ``criteria``: stage-1 question-criterion generation for new prompts (Figures 9 to 12).

:class:`T2IReasonBench` ties them.

>>> rel = BENCHMARK.read_release(BENCHMARK.sample_path())
>>> sorted(rel.configs) == sorted(BENCHMARK.configs)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import datasets

from ...files import inside
from ...results import ImageResult, PaperTable
from ..base import Benchmark, OfficialRelease, Release, recorded_hashes
from . import criteria, protocol, release, schema, scores
from .protocol import ALLOWED_SCORES as ALLOWED_SCORES
from .protocol import PRESETS, group_prompt, official_group_text, official_turn, parse_group_reply
from .questions import parse_pairs, render_rubric
from .release import ANOMALY_KINDS, IMAGES_ROOT, image_stem
from .schema import DIMENSIONS, FIELD_DOCS, OFFICIAL_WEIGHTS, PAPER_WEIGHTS, ROLES
from .schema import Dimension as Dimension

__all__ = ["T2IReasonBench", "BENCHMARK", "DIMENSIONS", "PAPER_WEIGHTS", "OFFICIAL_WEIGHTS", "ROLES", "ANOMALY_KINDS",
           "parse_pairs", "group_prompt", "official_group_text", "official_turn", "render_rubric", "parse_group_reply"]

_CITATION = """@article{sun2025t2ireasonbench,
  title   = {T2I-ReasonBench: Benchmarking Reasoning-Informed Text-to-Image Generation},
  author  = {Sun, Kaiyue and Fang, Rongyao and Duan, Chengqi and Liu, Xian and Liu, Xihui},
  journal = {arXiv preprint arXiv:2508.17472},
  year    = {2025}
}"""

#: The authors' repository at the commit whose evaluation scripts this package was checked against.
#: Their JSON data could not be fetched here, so no file hash is recorded (the build says so).
_AUTHORS_REPO = "KaiyueSun98/T2I-ReasonBench"
_AUTHORS_COMMIT = "efc1d206901b1be71688039a45c3ad8dec01a084"
_AUTHORS_SCRIPTS = tuple(f"evaluation/Qwen2.5-VL/eval_{d}.py" for d in ("idiom", "textual_image", "entity", "scientific"))


class T2IReasonBench(Benchmark):
    name = "t2i-reasonbench"
    pretty_name = "T2I-ReasonBench"
    #: the four dimensions, then ``all`` (every row of the four, as ``load_dataset(folder, "all")`` users expect)
    configs = (*DIMENSIONS, "all")
    metric = "t2i_reasonscore"
    subscore_scale = 100.0  # its question groups (reason, detail, quality) are on 0-1
    license = None  # neither the paper nor the release states one: users must say
    citation = _CITATION
    # pinned at the commit whose files the project checked byte for byte (release_hashes/t2i-reasonbench.sha256:
    # enforced on a fetch, reported on a build from a folder or an archive)
    official_release = OfficialRelease(kind="github", repo=_AUTHORS_REPO, revision=_AUTHORS_COMMIT,
                                       files=recorded_hashes("t2i-reasonbench"), scripts=_AUTHORS_SCRIPTS)
    release_markers = ("prompts/idiom_interpretation.json",)
    #: whose stage-1 questions the release holds (deepseek_evaluation_qs/: Table 1's "Deepseek" rows)
    release_questions_by = "DeepSeek-R1"
    description = (
        "T2I-ReasonBench (Sun et al., 2025) tests reasoning-informed text-to-image generation with 800 prompts "
        "in four dimensions of 200 each: Idiom Interpretation (a sentence using an idiom figuratively), Textual "
        "Image Design (a design intention for a text-rich image), Entity Reasoning (an entity described but not "
        "named) and Scientific Reasoning (a scene whose look follows from a scientific law). Each prompt comes "
        "with LLM-generated question-criterion pairs (1 / 0.5 / 0) grouped into reasoning, detail and quality "
        "checks, and an LLM-rewritten explicit prompt for the decoupled baseline."
    )
    scoring = (
        "T2I-ReasonScore (section 4.1): a multimodal judge first describes the image ('Describe this image.'), "
        "then, continuing that conversation, answers each question group with the Figure 14 template, scoring "
        "every question 1, 0.5 or 0. A group's score is the mean of its questions; the image score is "
        "0.9 S_reason + 0.1 S_quality for idiom and textual, 0.7 S_reason + 0.2 S_detail + 0.1 S_quality for "
        "entity and scientific; a dimension's score is the mean over its images x 100 and the overall score "
        "the mean of the four dimensions (Table 2). The paper's judge is Gemini-2.5-pro; the official scripts "
        "use Qwen2.5-VL-72B-Instruct and report 'accuracy' (reason; 0.7 reason + 0.3 detail for entity and "
        "scientific) and quality separately. The text score (Table 4) scores a text description instead of an "
        "image with w1 S_reason + w2 S_detail (maximum 90)."
    )
    field_docs = FIELD_DOCS
    presets = PRESETS

    @property
    def features(self) -> datasets.Features:
        """The schema of one row (:func:`.schema.features`)."""
        return schema.features()

    def row_id(self, row: dict[str, Any]) -> str:
        """``<dimension>-<name>`` (``idiom-0001``): ids restart at 1 in every dimension."""
        return f"{row['dimension']}-{image_stem(row)}"

    def id_forms(self, row: dict[str, Any]) -> tuple[str, ...]:
        """The row id ``idiom-0001``, and as users name the row otherwise: its image ``idiom/0001.png``
        (``idiom/0001``), its name ``0001`` and the release's id ``1`` (the last two are the same in
        every dimension: they name one row among the rows of one dimension)."""
        stem = image_stem(row)
        forms = [self.row_id(row), f"{row['dimension']}/{stem}.png", f"{row['dimension']}/{stem}", stem]
        return tuple(forms + ([str(row["id"])] if row.get("id") is not None else []))

    def row_config(self, row: dict[str, Any]) -> str | None:
        return row.get("dimension")

    def image_stem(self, row: dict[str, Any]) -> str:
        """The official layout: ``<dimension>/0001`` (``0001.png``, ``0001_<sample>.png``).
        Raises :class:`~t2ireason.files.UnsafePath` for a row whose name would leave its folder."""
        path = PurePosixPath(str(row["dimension"]), image_stem(row))
        inside(IMAGES_ROOT, *path.parts)
        if len(path.parts) != 2:
            raise ValueError(f"row {self.row_id(row)!r}: its image path {f'{path}.png'!r} is not <dimension>/<name>.png")
        return str(path)

    def pipeline_prompts(self, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
        """The release's LLM-rewritten prompts by row id (``generate --prompts`` input for Table 3)."""
        return {self.row_id(r): r["reason_prompt"] for r in rows if r.get("reason_prompt")}

    # -- the release --------------------------------------------------------------------------------

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read the official release folder (its root: ``t2ireason build`` finds it in a checkout or an
        archive).

        Option ``configs``: the dimensions to read (default all). Text is kept byte for byte (a
        normalisation is the builder's option, off by default: ``t2ireason build --normalize strip``).

        Nothing in the files stops the read: every record is kept with every value the release gives,
        and every irregularity becomes an :class:`Anomaly` naming the file, the id and what was odd;
        what cannot be kept in a row goes to the release's ``quarantine`` with its raw text.
        ``files_read`` lists the files read, so the builder reports every other one (the authors'
        scripts among them). Only a source that holds no T2I-ReasonBench folder raises
        :class:`ReleaseError`.
        """
        return release.read_release(source, options, license=self.license)

    # -- scoring ------------------------------------------------------------------------------------

    def unscorable(self, row: dict[str, Any]) -> str | None:
        if not any(g.get("pairs") for g in row.get("evaluation") or [] if isinstance(g, dict)):
            return "the release has no questions for this prompt"
        return None

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """Score each image (or, in text mode, each description) against its row.

        Options: ``mode`` ``"image"`` (default; the two-stage protocol of Figure 14) or ``"text"``
        (Table 4: ``images`` are text descriptions, strings, scored without an image, a describe
        turn or the quality group); ``aggregation`` ``"paper"`` (default, T2I-ReasonScore with
        :data:`PAPER_WEIGHTS`) or ``"official"`` (the official scripts' accuracy, quality reported
        apart); ``weights`` (per dimension ``{"reason": w1, "detail": w2, "quality": w3}`` overriding
        the paper's); ``template`` ``"paper"`` (default: Figure 14 with the group as a JSON object of
        renumbered pairs and readable rubrics, :func:`group_prompt`) or ``"official"`` (the authors'
        scripts' text byte for byte, the group printed as they print it, :func:`official_group_text`, and
        the describe turn's reply taken as they take it, an empty one too, never asked again);
        ``reply_json`` ``"last"`` (default: the last JSON object of a reply, a corrected answer after a
        draft) or ``"first"`` (the official scripts' reading); ``max_reasks`` (default 2) for replies
        that do not parse or hold the wrong number of scores; ``structured_output`` (default False: the
        paper's judge saw the plain template) to also send a JSON schema; ``image_preparation``
        (None, default: each image as it is; ``"qwen_vl_utils"``: as the authors' scripts feed
        Qwen2.5-VL, what qwen_vl_utils' ``fetch_image`` makes of the file: transparent pixels
        composited on white, sides resized to multiples of 28,
        :func:`~t2ireason.images.qwen_vl_utils_image`). Batched: every describe turn
        in one ``judge.chat`` batch, then every group turn in one batch (plus one per re-ask round).
        An image that cannot be read, a reply still unusable after the re-asks or a judge error is that
        image's counted failure (``retryable`` when the judge's infrastructure failed), never a zero.
        Options of :meth:`aggregate` are accepted and ignored.
        """
        return protocol.score(self, rows, images, judge, progress=progress, **options)

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """Table 2 (or Table 4 in text mode) from per-image results, on 0 to 100.

        ``dimensions``: per dimension, ``score`` (T2I-ReasonScore, or the official accuracy) and the
        group subscores ``reason`` / ``detail`` / ``quality``, each a :func:`~t2ireason.stats.summarize`
        (mean, se, bootstrap and normal 95% CIs, n, failed); ``<dimension>``: its mean score (the
        Table 2 cell); ``overall``: the mean of the dimension scores (Table 2's Overall), with
        ``overall_summary`` holding its standard error and a stratified bootstrap interval.
        With the paper's aggregation of images, also Table 4's image score per dimension
        (``image_score``, and ``dimensions[d]["image_score"]``): w1 S_reason + w2 S_detail of each image,
        without the quality group (maximum 90), the figure the paper sets beside the text score; an image
        whose reason or detail group failed has none (its quality group may have failed alone).
        Failed images are counted in ``failed`` and left out of every mean.
        """
        return scores.aggregate(results, **options)

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 2 (Table 4 for the text score; the official accuracy with ``aggregation="official"``),
        then each dimension's group means (S_reason, S_detail, S_quality) behind it."""
        return scores.paper_tables(aggregate, label)

    def change_tables(self, aggregate: dict[str, Any], baseline: dict[str, Any], label: str,
                      baseline_label: str) -> list[PaperTable]:
        """Table 3: a run of LLM-rewritten prompts, each dimension's score beside its change from the run of
        the original prompts (``baseline``): :func:`.scores.rewrite_table`."""
        return [scores.rewrite_table(aggregate, baseline, label, baseline_label)]

    # -- stage I: question-criterion generation -----------------------------------------------------

    def generate_criteria(self, records: Sequence[dict[str, Any]], dimension: str, judge: Any, *,
                          max_reasks: int = 2, strict: bool = False,
                          progress: bool | str = False) -> list[dict[str, Any]]:
        """Question-criterion pairs for new prompts, with the stage-1 template of ``dimension``
        (Figures 9 to 12), through any judge (text-only requests), as rows of this dataset's schema.

        ``records`` carry ``id`` and ``prompt`` (and ``idiom``, ``idiom_meaning`` for idiom;
        ``explicit_meaning`` for entity and scientific; optionally ``tag``). A reply must hold every
        group of the dimension, each with as many pairs as its figure asks (:func:`.criteria.pair_counts`: 3-5
        reason and 1-3 quality pairs for idiom...) keyed ``q1``/``c1``... numbered from 1, and
        ``image_content``; otherwise it is re-asked (``max_reasks`` times) naming the problem.
        A record still failing gives a row with no groups and the failure (with every raw reply)
        in ``extra``, which :meth:`score` then reports as a failure; ``strict=True`` raises instead.
        """
        return criteria.generate_criteria(records, dimension, judge, max_reasks=max_reasks, strict=strict,
                                          progress=progress)


BENCHMARK = T2IReasonBench()
