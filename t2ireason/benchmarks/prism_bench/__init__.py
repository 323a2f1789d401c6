"""PRISM-Bench (seed 004): seven tracks, each image judged for prompt alignment and for aesthetics.

Record -> request -> reply -> score, for one image:

1. a row is one line of ``captions/<language>/<track>.jsonl`` (its ``prompt``, byte for byte, and
   whatever else the line holds);
2. two requests, [alignment, aesthetic]: a system message, then one user message holding the track's
   alignment template (or the aesthetic template shared by all tracks) with the prompt, and the image;
   Chinese prompts are judged with the same English templates;
3. each reply is read as a JSON object ``{"justification": ..., "score": ...}`` on a 0-10 scale;
4. each axis is mapped to 0-100 (x 10); per track and overall: alignment, aesthetic and their average
   (the paper's Table 1 layout), per language.

Two protocols, chosen by the ``protocol`` option (the presets set it):

- ``paper`` (default): the templates as the paper prints them (``templates/prism_bench/paper``);
  a reply must be a JSON object with a score in [0, 10], else it is re-asked (``max_reasks``) and
  then counted as failed and left out of the means; a track's Avg. is the mean of its alignment mean
  and aesthetic mean, the overall Avg. the mean of the pooled alignment and pooled aesthetic.
- ``official``: what the authors' ``evaluation/eval_gpt41.py`` and ``eval_qwen25.py`` do
  (formats.md): their prompt strings byte for byte (``templates/prism_bench/official``), their
  parser (:func:`clean_and_parse_json`) and counting rules (:func:`official_judgement`), no re-asks,
  and their ``summarize_results``: a track's Combined is the mean of ONE pooled list of its alignment
  and aesthetic scores, the final figure the mean of every score of both axes, an axis with no
  counted score 0.0. Where their summary would raise, each reply is recorded and the table still made.

The package: :mod:`.release` reads the release, :mod:`.protocol` renders the requests, reads the
replies and holds the presets, :mod:`.scores` scores one image and makes the paper's tables.
"""

from __future__ import annotations

from typing import Any

import datasets

from ..base import Benchmark, OfficialRelease, recorded_hashes
from . import formulas, release, scores
from .protocol import (
    AXES,
    PRESETS,
    PROTOCOLS,
    REPLY_SCHEMA,
    SYSTEM_PROMPT,
    Judgement,
    clean_and_parse_json,
    judge_requests,
    official_judgement,
    parse_judgement,
    template,
)
from .release import AUTHORS_SCRIPTS, CONFIGS, LANGUAGES, TRACKS

__all__ = ["BENCHMARK", "PrismBench", "TRACKS", "LANGUAGES", "AXES", "SYSTEM_PROMPT", "PROTOCOLS", "REPLY_SCHEMA",
           "parse_judgement", "judge_requests", "template", "clean_and_parse_json", "official_judgement", "Judgement"]


class PrismBench(Benchmark):
    name = "prism-bench"
    pretty_name = "PRISM-Bench"
    configs = CONFIGS
    metric = "prism_score"
    license = None  # not stated where this project could check: the builder asks for --license
    citation = """@article{fang2025fluxreason,
  title   = {FLUX-Reason-6M \\& PRISM-Bench: A Million-Scale Text-to-Image Reasoning Dataset and Comprehensive Benchmark},
  author  = {Fang, Rongyao and Yu, Aldrich and Duan, Chengqi and Huang, Linjiang and Bai, Shuai and Cai, Yuxuan
             and Wang, Kun and Liu, Si and Liu, Xihui and Li, Hongsheng},
  journal = {arXiv preprint arXiv:2509.09680},
  year    = {2025}
}"""
    description = (
        "PRISM-Bench (Precise and Robust Image Synthesis Measurement) has seven tracks of 100 prompts each: "
        "Imagination, Entity, Text rendering, Style, Affection, Composition and Long text (dense GCoT-style "
        "prompts). In each track 50 prompts are representative samples of FLUX-Reason-6M (k-means over the "
        "top-scored prompts) and 50 are curated hard cases. PRISM-Bench-ZH holds the same 700 prompts in Chinese, "
        "with the Text rendering track adapted to Chinese contexts.")
    scoring = (
        "A vision-language judge (GPT-4.1 in the paper's main tables, Qwen2.5-VL-72B in its appendix) scores "
        "every image twice, from 0 to 10: alignment with a track-specific template and aesthetics with one "
        "shared template (paper Appendix C.2 and C.3). Per track, the mean alignment and mean aesthetic "
        "scores are mapped to 0-100 and the track score is their mean. Use the `prism_score` metric of "
        "t2i-reason (preset `official` reproduces the authors' evaluation script); configs "
        "`<track>_<language>` (e.g. `imagination_en`), `en`, `zh` and `all` select rows.")
    field_docs = {
        "id": "Stable id `<track>_<language>_<index>`, e.g. `entity_zh_7`: pairs the same prompt across judges and runs.",
        "prompt": "The text-to-image prompt (the line's `prompt`), byte for byte as released.",
        "track": "One of imagination, entity, text_rendering, style, affection, composition, long_text.",
        "language": "`en` (PRISM-Bench) or `zh` (PRISM-Bench-ZH).",
        "index": "0-based position of the line among the file's non-blank lines: the official image is "
                 "`images/<track>/<index>.png`.",
        "subset": "`representative` (k-means sample) or `curated` when the release says so, else null.",
        "extra": "Every other key of the release line, as a JSON object string.",
    }
    #: the authors' repository: captions/{en,zh}/<track>.jsonl and the two evaluation scripts. Its commit
    #: could not be checked (the repository was not reachable): ``revision`` names the branch, and
    #: ``files`` holds the SHA-256 of a public copy of it (ada994/prism-bench), which a build reports
    #: against (a file that differs is a ``modified_file`` anomaly), never enforces (a branch moves).
    official_release = OfficialRelease(kind="github", repo="rongyaofang/prism-bench", revision="main",
                                       files=recorded_hashes("prism-bench"), scripts=AUTHORS_SCRIPTS)
    release_markers = tuple(f"captions/{lang}/{t}.jsonl" for lang in LANGUAGES for t in TRACKS)
    language = LANGUAGES  # PRISM-Bench (en) and PRISM-Bench-ZH
    presets = PRESETS

    @property
    def features(self) -> datasets.Features:
        s = datasets.Value("string")
        return datasets.Features({"id": s, "prompt": s, "track": s, "language": s,
                                  "index": datasets.Value("int32"), "subset": s, "extra": s})

    def row_config(self, row: dict[str, Any]) -> str | None:
        return release.config_name(row["track"], row["language"]) if row.get("track") and row.get("language") else None

    def image_stem(self, row: dict[str, Any]) -> str:
        """``<language>/<track>/<index>``: each language folder is laid out as the official
        ``images/`` folder (``images/<track>/{0..99}.png``), so point the official code at ``<out>/en``."""
        return f"{row['language']}/{row['track']}/{row['index']}"

    # the package's modules do the work: the reader, one image's score, the aggregate, the paper's tables
    read_release = staticmethod(release.read_release)
    score = scores.score
    aggregate = staticmethod(scores.aggregate)
    paper_tables = staticmethod(scores.paper_tables)
    cell_formulas = staticmethod(formulas.cell_formulas)


BENCHMARK = PrismBench()
