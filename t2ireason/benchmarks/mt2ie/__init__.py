"""MT2IE (seed 002): MLLMs as evaluator agents that write the benchmark while they run it.

MT2IE has no data release: an MLLM expands *seed prompts* into progressively
harder prompts (iterative difficulty, section 5) or adapts each next prompt to
the score of the last image (adaptive prompting, section 6), and scores every
image with VQAScore. Its data, the configs of its Hub dataset:

- ``seed_prompts``: the seed prompts T0, in the paper's four topic categories
  (household scenes, people, animals, locations; section 5), "moderately
  complex (2-3 compositional concepts per prompt)". The package ships ones of
  the project's own writing (``samples/mt2ie/seed_prompts.jsonl``); users may
  bring their own in the same layout.
- ``runs``: a finished MT2IE run, one row per iteration (model, random seed,
  iteration, prompt, image, score, difficulty, judge replies...).

The package: :mod:`.release` reads the data (its layout is described there), :mod:`.protocol`
holds the prompts the agent asks and reads the replies, :mod:`.scorer` scores images, :mod:`.store`
keeps a run's folder, :mod:`.agent` runs the loop (``run_mt2ie``), :mod:`.rankings` ranks the models
(``rank_models``); ``t2ireason mt2ie`` is :mod:`t2ireason.commands.mt2ie`. Importing this package loads only the
data side; :mod:`t2ireason.mt2ie` names the agent's public functions. The paper's prompts are in
``t2ireason/templates/mt2ie/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from ...results import PaperTable
from ..base import Benchmark, Release
from .release import (
    CATEGORIES,
    MODES,
    RUN_FEATURES,
    SEED_FEATURES,
    read_jsonl,
    read_release,
    read_seed_prompts,
)

__all__ = ["MT2IE", "BENCHMARK", "CATEGORIES", "MODES", "SEED_FEATURES", "RUN_FEATURES", "read_jsonl"]

CITATION = """@misc{mt2ie2025,
  title  = {Multi-Modal Language Models as Text-to-Image Model Evaluators},
  author = {Anonymous},
  note   = {Paper under double-blind review},
  year   = {2025}
}"""


class MT2IE(Benchmark):
    name = "mt2ie"
    pretty_name = "MT2IE"
    configs = ("seed_prompts", "runs")
    metric = None  # scored on the fly by the agent with VQAScore; there is no fixed test set
    license = "apache-2.0"  # the shipped seed prompts are the project's own writing
    citation = CITATION
    description = (
        "MT2IE (Multimodal Text-to-Image Eval) uses a multimodal LLM as an evaluator agent: starting from a "
        "seed prompt, it writes progressively more difficult prompts (or adapts each prompt to the last score), "
        "has the text-to-image model draw them and scores each image for prompt consistency. Twenty generated "
        "prompts (4 seeds x 5 iterations) reproduce the model ranking of 1,600 hand-written GenAIBench prompts.")
    scoring = (
        "Each image is scored with VQAScore, P(\"Yes\" | image, 'Does this figure show \"{prompt}\"? Please answer "
        "yes or no.'), with Llava-v1.6-34b as the scorer. A model's score is the mean over the 4 seeds x 5 "
        "iterations; in adaptive mode each score is multiplied by the prompt's difficulty (Yngve depth of its "
        "parse) before averaging. Rankings are repeated over 5 random seeds and compared with Kendall's tau.")
    field_docs = {
        "id": "unique id: the seed prompt's id, or run_id/iteration for a run row",
        "category": f"topic category of the seed prompt; the paper's four are {', '.join(CATEGORIES)}",
        "prompt": "the seed prompt T0 (seed_prompts) or the prompt T_i of this iteration (runs)",
        "concepts": "the compositional concepts of the seed prompt (objects, attributes, relations; 2-3 in the paper)",
        "run_id": "one run: a model, a mode, a random seed and a seed prompt",
        "model": "the text-to-image model under evaluation",
        "evaluator": "the MLLM that wrote the prompts and scored the images (judge spec)",
        "mode": "iterative (difficulty grows each iteration, section 5) or adaptive (follows the score, section 6)",
        "seed": "the run's random seed (the paper repeats rankings over 5)",
        "seed_prompt_id": "id of the seed prompt the run started from",
        "iteration": "0 for the seed prompt T0, then 1, 2, ... (4 iterations in the paper)",
        "adaptive_bin": "adaptive mode: the score bin of the previous image that chose this prompt's rewrite "
                        "(halve, reduce, rephrase, increase, increase_more); empty otherwise",
        "image": "the image the model drew for this prompt (null when drawing failed)",
        "image_seed": "seed of the image's generator",
        "score": "the agent's score of the image against the prompt (VQAScore by default), 0 to 1 (null when the "
                 "judge failed)",
        "metric_scores": "the ranking metrics scored beside the agent's own on the same image (VQAScore, CLIPScore, DSG, "
                         "VIEScore, TIFA: the paper's Table 3 baselines), each with its score (null when it failed) "
                         "and why",
        "difficulty": "prompt difficulty: the Yngve depth of the prompt's parse (the paper's weight, section 6), or "
                      "the appendix D proxy named in difficulty_method",
        "difficulty_method": "how difficulty was computed: yngve (the paper's), or word_count, syllable_count, "
                             "flesch_kincaid, perplexity (appendix D's proxies; a run without a constituency parser "
                             "weights by word_count and is not the paper's)",
        "weighted_score": "score x difficulty (adaptive mode's ranking score)",
        "aesthetic": "optional aesthetic score 0 to 10 (appendix A)",
        "judge_replies": "every raw reply of the MLLM for this iteration, in order (prompt writing, scoring)",
        "failure": "why this iteration could not be drawn or scored; empty when it was",
    }

    @property
    def features(self) -> datasets.Features:
        return SEED_FEATURES

    def config_features(self, config: str) -> datasets.Features:
        return RUN_FEATURES if config == "runs" else SEED_FEATURES

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """The seed prompts and runs of an MT2IE release folder (:func:`.release.read_release`)."""
        return read_release(source)

    def read_seed_prompts(self, path: str | Path) -> list[dict[str, Any]]:
        """The seed prompts of a ``seed_prompts.jsonl`` file or of the folder holding one, checked as
        :meth:`read_release` checks them; prompts outside the paper's categories are allowed here."""
        return read_seed_prompts(path)

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """The ranking of an agent's run, best model first (:func:`.rankings.paper_tables`)."""
        from .rankings import paper_tables  # numpy and scipy: not loaded with the benchmark's data

        return paper_tables(aggregate, label)

    def image_stem(self, row: dict[str, Any]) -> str:
        """Seed prompts under ``seed_prompts/<id>.png``; run rows under ``<run_id>/<iteration>.png``."""
        if "run_id" in row:
            return f"{row['run_id']}/{row['iteration']}"
        return f"seed_prompts/{self.row_id(row)}"


BENCHMARK = MT2IE()
