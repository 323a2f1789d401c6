"""The MT2IE evaluator agent (seed 002): an MLLM writes the prompts, T2I models draw them, the MLLM scores them.

One *run* is a (T2I model, mode, random seed, seed prompt). Iteration 0 draws and
scores the seed prompt T0; each later iteration i has the MLLM write T_i from
T_{i-1}, the T2I model draw I_i, and the MLLM score it (section 5, Figure 1).
``iterations`` is N, the number of prompts per run with T0 included: the
paper's 5 (T0 -> T4, "4 seeds x 5 prompts" = 20 prompts per ranking;
appendix G calls N "prompt iterations").

- ``mode="iterative"`` (section 5): T_i adds one object, attribute or relation to
  T_{i-1} (appendix F, Figure 16). The prompts do not depend on the images, so
  every model of a random seed is scored on the same chain of prompts (the
  paper's generated benchmark, MT2IE_bench20); it is written once and shared.
- ``mode="adaptive"`` (section 6): T_i is T_{i-1} rewritten by the bin of the
  score of I_{i-1}, with the bins as appendix F's figures 18-20 bound them:
  [0, 0.2] halve, (0.2, 0.4] reduce, (0.4, 0.6) rephrase, [0.6, 0.8) increase,
  [0.8, 1] increase more. Each model has its own chain.
- Prompt writing: the figure's text as the system prompt, ``Existing prompt:
  "<T_{i-1}>"`` as the user turn (the figure's last line, quoted like its
  examples), temperature 0.3 and no top-k (appendix F).
- Scoring (section 4): ``vqascore`` (the paper's choice), P("Yes" | image,
  'Does this figure show "<prompt>"? Please answer yes or no.'), with
  Llava-v1.6-34b (:data:`PAPER_JUDGE`); or ``vqa_accuracy`` (appendix C): the
  MLLM writes multiple-choice questions about the prompt (Figure 12/13's prompt),
  keeps those it validates with "yes" (Figure 12's validation prompt), then
  answers each about the image; the score is the share answered with the
  generated answer.
- Ranking metrics beside the agent's (section 5, Tables 3 and 5): ``scoring`` may name, after the agent's own,
  ``vqascore``, ``clip_score``, ``dsg``, ``viescore`` and ``tifa`` (:mod:`t2ireason.evaluation_metrics`), each
  scoring the same images (a row's ``metric_scores``); each ranks the models as the agent's score does, and with a
  ``reference`` the summary holds each one's Kendall's tau against it in the paper's layout
  (:func:`.rankings.kendall_table`). The paper scored its baselines on GenAIBench_20 (20 prompts drawn from
  GenAIBench evenly over its categories, 10 times) while MT2IE scored its own 20 prompts; here every metric scores
  the agent's images. For the paper's comparison, run the baselines on drawn prompts: GenAIBench's as
  ``seed_prompts`` with ``iterations=1`` and ``seed_prompts_per_seed=20`` (one per category in turn, a draw per
  random seed). Each metric's judge is the agent's (one MLLM does everything), CLIPScore's its CLIP model, unless
  ``scoring_judges`` names another. Any of them may be the agent's own score (``scoring="dsg"``); in adaptive mode
  it must be on 0-1 (not CLIPScore), as the bins read it.
- ``aesthetic=True`` (appendix A, Figure 8): each image also gets the MLLM's
  0-10 aesthetic score, in the ``aesthetic`` column; ``rank_models(...,
  metric="aesthetic")`` ranks by it.
- Difficulty (section 6, appendix D): the Yngve score of the prompt's parse
  (mean Yngve depth over words) by a constituency ``parser``: the one given, else
  stanza's where the ``[mt2ie]`` extra is installed (:mod:`t2ireason.difficulty_models`). The
  paper weights ("standardizes") each score by multiplying it by its prompt's
  difficulty: ``weighted_score = score x difficulty``; adaptive rankings use it,
  iterative rankings the raw score (all models see the same prompts there).
- Rankings (section 5, Figure 7, appendix G Table 6): per random seed, a model's
  score is the mean over its prompts; models are ranked (1 = best) within each
  seed; the table gives each model's mean score, mean rank and rank variance
  over seeds, and Kendall's tau between the mean-rank order and a reference.

Choices where the paper is silent, made here:

- Seed prompts: the paper generates 4 seed prompts per random seed, one per
  topic category, with a prompt it does not print. Here each random seed draws
  ``seed_prompts_per_seed`` (4) from the given pool (default: the shipped 16),
  one per category in turn, with a RNG seeded by the random seed alone.
- Random seeds vary the seed prompts, the prompt writer's sampling seed (from
  the chain and iteration) and each image's seed (from the run and iteration),
  never the process or the order of work.
- Without a parser, ``difficulty="auto"`` falls back to the word count (appendix D,
  Table 4: the proxy most correlated with VQAScore, and always positive, so the
  weighting never flips a score's sign, which the Flesch-Kincaid grade can), says so
  at the run's start (:func:`resolve_difficulty`'s note) and records it in every
  row's ``difficulty_method``. Appendix D's other proxies can be chosen:
  ``syllable_count``, ``flesch_kincaid``, and ``perplexity`` under a causal LM
  (``lm``; the prompt after "There's an image of a", as the appendix computed it).
- "Standardized" is taken as the paper defines it, the product score x
  difficulty; no further normalisation.
- Rank variance and score spread over seeds are population figures (ddof=0);
  ties share their average rank; Kendall's tau is tau-b. Figure 7 also shows
  per-seed behaviour: ``kendall_tau_seed_mean`` is the mean of per-seed taus.
- VQA accuracy's answering prompt is ours (``question_answering.txt``): the
  paper prints none. A reply names a choice if it equals one (ignoring case and
  punctuation) or contains exactly one of them.
- Failures are rows, never zeros: a draw that fails, or a reply that does not
  parse after ``max_reasks`` re-asks, leaves ``score`` empty and says why in
  ``failure`` with every raw reply in ``judge_replies``. A prompt the model refuses
  (a content policy) is such a row too, its ``failure`` beginning ``refused by the
  model:``; it is the model's answer, counted as ``refused`` apart from ``failed``. An iterative chain goes
  on after a failed draw or score (its prompts do not need them); an adaptive
  chain stops, as its next prompt needs the score. A prompt that could not be
  written stops its chain (recorded as a row with an empty prompt). A prompt the
  difficulty parser fails on keeps its score, gets no weighted score, and says so.

Output folder (``out_dir``), an MT2IE release that :meth:`MT2IE.read_release`
reads and ``datasets_scripts/build.py mt2ie`` turns into a Hub dataset::

    seed_prompts.jsonl         the seed prompts
    runs/<model>.jsonl         one RUN_FEATURES row per iteration, rewritten atomically as iterations finish
    runs/<run_id>/<i>.png      the images (run_id = <model>/<mode>/seed<k>/<seed prompt id>)
    prompt_chains.jsonl        every prompt the MLLM wrote, with its replies (read back on resume)
    settings.json              what decides the results (judge, scoring, difficulty, models)
    summary.json               counts and the ranking table of the last call

A run that is stopped and started again skips what is finished and ends with
the same rows and pixels as one that never stopped (for a deterministic judge;
sampled prompt writing is seeded per chain and iteration).
"""

from __future__ import annotations

import os
import random
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...alignment import DEFAULT_VQASCORE_JUDGE
from ...difficulty import METHODS, PAPER_METHOD, prompt_difficulty
from ...evaluation_metrics import metric_scorer
from ...files import atomic_write_json
from ...generation import Drawer, GenerationConfig, GeneratorError, image_seed, save_image_atomic
from ...judges import load_judge
from ...parsing import ask_structured
from ...processes import processes
from ...progress import progress_bar
from ..base import one_of
from . import BENCHMARK
from .protocol import PROMPT_TEMPERATURE, adaptive_bin, parse_prompt, prompt_request
from .rankings import rank_models
from .release import MODES
from .scorer import RankingMetric, Scorer, batch_or_each
from .store import Store, describe, fold, run_row

__all__ = ["run_mt2ie", "select_seed_prompts", "PAPER_JUDGE", "PAPER_SEEDS", "PAPER_ITERATIONS",
           "PAPER_SEED_PROMPTS_PER_SEED", "SCORINGS", "RANKING_METRICS", "DIFFICULTY_METHODS", "PAPER_DIFFICULTY",
           "MODEL_NAME", "method_labels", "resolve_difficulty"]

#: the paper's evaluator: VQAScore with Llava-v1.6-34b (section 4.2, Table 2)
PAPER_JUDGE = DEFAULT_VQASCORE_JUDGE
#: "5 random seeds" (section 5)
PAPER_SEEDS = (0, 1, 2, 3, 4)
PAPER_ITERATIONS = 5
PAPER_SEED_PROMPTS_PER_SEED = 4
SCORINGS = ("vqascore", "vqa_accuracy")
#: the metrics that rank the models beside the agent's own score (seed 002, Tables 3 and 5), or as it
RANKING_METRICS = ("vqascore", "clip_score", "dsg", "viescore", "tifa")
DIFFICULTY_METHODS = ("auto", *METHODS)
#: section 6: "Yngve score ... as the prompt difficulty weight"
PAPER_DIFFICULTY = PAPER_METHOD
#: a T2I model's name: it names files and folders
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _load_seed_prompts(seed_prompts: Any) -> list[dict[str, Any]]:
    if seed_prompts is None:
        return BENCHMARK.read_seed_prompts(BENCHMARK.sample_path())
    if isinstance(seed_prompts, (str, os.PathLike)):
        return BENCHMARK.read_seed_prompts(seed_prompts)
    rows = [dict(r) for r in seed_prompts]
    for r in rows:
        if not all(str(r.get(k) or "").strip() for k in ("id", "category", "prompt")):
            raise ValueError(f"a seed prompt needs id, category and prompt: {r}")
    if len({r["id"] for r in rows}) != len(rows):
        raise ValueError("seed prompt ids must be unique")
    return [{"id": str(r["id"]), "category": r["category"], "prompt": r["prompt"].strip(),
             "concepts": list(r.get("concepts") or [])} for r in rows]


def select_seed_prompts(seed_prompts: Sequence[Mapping[str, Any]], seed: int, n: int) -> list[Mapping[str, Any]]:
    """``n`` seed prompts for random seed ``seed``: one per category in turn (the paper's four topic
    categories, section 5), each category's pool shuffled by a RNG seeded with ``seed`` alone. All of
    them, in order, when ``n`` covers the pool."""
    if n >= len(seed_prompts):
        return list(seed_prompts)
    rng = random.Random(f"mt2ie-seed-prompts/{seed}")
    pools: dict[str, list] = defaultdict(list)
    for sp in seed_prompts:
        pools[sp["category"]].append(sp)
    queues = [rng.sample(pool, len(pool)) for pool in pools.values()]
    picked: list[Mapping[str, Any]] = []
    while len(picked) < n:
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return picked


@dataclass(frozen=True)
class _Track:
    """One chain of prompts from a seed prompt, for one random seed."""

    seed: int
    seed_prompt: Mapping[str, Any]

    def run_id(self, model: str, mode: str) -> str:
        return f"{model}/{mode}/seed{self.seed}/{self.seed_prompt['id']}"

    def chain(self, model: str, mode: str) -> str:
        if mode == "iterative":  # iterative prompts do not depend on the images: one chain for every model
            return f"iterative/seed{self.seed}/{self.seed_prompt['id']}"
        return self.run_id(model, mode)


# -- the agent loop --------------------------------------------------------------------


class _Agent:
    def __init__(self, store: Store, judge: Any, scorer: Scorer, *, mode: str, evaluator: str, tracks: list,
                 difficulty: Callable[[str], float | None], difficulty_method: str, max_reasks: int,
                 temperature: float, bar: Any):
        self.store, self.judge, self.scorer, self.mode, self.evaluator = store, judge, scorer, mode, evaluator
        self.tracks, self.difficulty, self.difficulty_method = tracks, difficulty, difficulty_method
        self.max_reasks, self.temperature, self.bar = max_reasks, temperature, bar
        self.new = 0

    def run_model(self, name: str, drawer: Any, iterations: int) -> None:
        for i in range(iterations):
            live = [t for t in self.tracks if self._alive(name, t, i)]
            todo = [t for t in live if (t.run_id(name, self.mode), i) not in self.store.done]
            self.bar.update(len(live) - len(todo))
            if todo:
                self._iteration(name, drawer, todo, i)

    def _alive(self, name: str, track: _Track, i: int) -> bool:
        """Whether the chain reaches iteration i: its previous prompt exists and, in adaptive
        mode, was scored (the next prompt follows the score)."""
        if i == 0:
            return True
        prev = self.store.done.get((track.run_id(name, self.mode), i - 1))
        return bool(prev and prev["prompt"] and (self.mode == "iterative" or prev["score"] is not None))

    def _prompts(self, name: str, tracks: list[_Track], i: int) -> list[dict[str, Any]]:
        """The prompt T_i of each track: the seed prompt, one already written, or a new one."""
        if i == 0:
            return [{"prompt": t.seed_prompt["prompt"], "adaptive_bin": None, "replies": [], "failure": None}
                    for t in tracks]
        keys = [(t.chain(name, self.mode), i) for t in tracks]
        missing = [(t, key) for t, key in zip(tracks, keys) if key not in self.store.prompts]
        if missing:
            entries, requests = [], []
            for t, (chain, _) in missing:
                previous = self.store.prompts[(chain, i - 1)]["prompt"] if i > 1 else t.seed_prompt["prompt"]
                bin_ = None if self.mode == "iterative" else \
                    adaptive_bin(self.store.done[(t.run_id(name, self.mode), i - 1)]["score"])
                seed = image_seed("mt2ie-prompt", chain, i) % 2**31  # small enough for any server's seed field
                requests.append(prompt_request(previous, f"adaptive_{bin_}" if bin_ else "iterative",
                                               temperature=self.temperature, seed=seed))
                entries.append({"chain": chain, "iteration": i, "adaptive_bin": bin_})
            for entry, parsed in zip(entries, ask_structured(self.judge, requests, parse_prompt,
                                                             max_reasks=self.max_reasks)):
                entry.update(prompt=parsed.value or "", replies=parsed.texts,
                             failure=None if parsed.ok else f"prompt writing failed: {parsed.error}")
            self.store.add_chains(entries)  # saved before drawing: a resumed run draws the same prompts
        return [self.store.prompts[key] for key in keys]

    def _iteration(self, name: str, drawer: Any, tracks: list[_Track], i: int) -> None:
        prompts = self._prompts(name, tracks, i)
        rows = []
        for t, p in zip(tracks, prompts):
            run_id = t.run_id(name, self.mode)
            rows.append(run_row(run_id=run_id, model=name, evaluator=self.evaluator, mode=self.mode, seed=t.seed,
                             seed_prompt_id=t.seed_prompt["id"], category=t.seed_prompt["category"], iteration=i,
                             prompt=p["prompt"], adaptive_bin=p["adaptive_bin"],
                             image_seed=image_seed("mt2ie", run_id, i), judge_replies=list(p["replies"]),
                             failure=p["failure"], difficulty_method=self.difficulty_method, metric_scores=[]))
        images = self._draw(drawer, [r for r in rows if r["failure"] is None])
        scored = self.scorer([im for _, im in images], [r["prompt"] for r, _ in images]) if images else []
        for (row, _), s in zip(images, scored):
            row.update(score=s.score, aesthetic=s.aesthetic, failure=s.failure, metric_scores=s.metric_scores,
                       judge_replies=row["judge_replies"] + list(s.replies))
        for row in filter(lambda r: r["prompt"], rows):
            try:
                row["difficulty"] = self.difficulty(row["prompt"])
            except Exception as e:  # noqa: BLE001 - e.g. a parser that cannot parse this prompt
                row["failure"] = "; ".join(filter(None, [row["failure"], f"difficulty failed: {type(e).__name__}: {e}"]))
            if row["score"] is not None and row["difficulty"] is not None:
                row["weighted_score"] = row["score"] * row["difficulty"]
        self.store.add_rows(name, rows)
        self.new += len(rows)
        self.bar.update(len(rows))

    def _draw(self, drawer: Any, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
        """Draw and save each row's image (one drawer call for all, item by item if it fails);
        the rows whose image could not be made get their failure. A generator that cannot be used at all
        (:class:`GeneratorError`: a refused key, an endpoint that cannot answer) ends the run, the rows
        finished before kept: recorded as each row's failure, a re-run would never draw them."""
        drawn = batch_or_each(lambda rs: drawer([r["prompt"] for r in rs], [r["image_seed"] for r in rs]), rows,
                              fatal=(GeneratorError,))
        images = []
        for row, (image, error) in zip(rows, drawn):
            if error is None and getattr(image, "kind", None) == "refused":  # the model's answer to the prompt
                row["failure"] = f"{REFUSED}{str(image) or 'no reason given'}"
                continue
            if error is None and isinstance(image, BaseException):  # a drawer's failed image
                error = str(image) or type(image).__name__
            if error is None:
                try:
                    path = BENCHMARK.image_path(row)
                    save_image_atomic(image, self.store.runs / path)
                    row["image"] = path
                    images.append((row, image))
                except Exception as e:  # noqa: BLE001 - e.g. the drawer gave no PIL image
                    error = f"{type(e).__name__}: {e}"
            if error is not None:
                row["failure"] = f"drawing failed: {error}"
        return images


#: how a row's failure begins when the model refused its prompt (a content policy), an outcome and not an error
REFUSED = "refused by the model: "


def refused(row: Mapping[str, Any]) -> bool:
    """Whether the row's image is one the model refused to draw (counted apart from failures)."""
    return str(row.get("failure") or "").startswith(REFUSED)


def resolve_difficulty(method: str, parser: Callable[[str], Any] | None = None, lm: Any = None
                       ) -> tuple[str, Callable[[str], Any] | None, Any, str | None]:
    """``(method, parser, lm, note)`` for ``difficulty=method``: ``auto`` is the paper's Yngve depth with ``parser``,
    else with stanza's parser where the ``[mt2ie]`` extra is installed and loads
    (:func:`t2ireason.difficulty_models.default_parser`), else the word count, with ``note`` saying that this run
    cannot compute the paper's weight and why (said at the run's start). ``lm`` (perplexity's model: a folder, a
    Hub id, or a callable text -> perplexity) is loaded here."""
    one_of("difficulty", method, DIFFICULTY_METHODS)
    note = why = None
    if method in ("auto", "yngve") and parser is None:
        from ...difficulty_models import default_parser

        parser, why = default_parser()
    if method == "auto":
        method = PAPER_DIFFICULTY if parser is not None else "word_count"
        if parser is None:
            note = (f"MT2IE cannot compute the paper's difficulty weight (Yngve depth, section 6): {why}; this run "
                    "weights by the word count instead, recorded in every row's difficulty_method and in the "
                    "report: it is not the paper's")
    if method == "yngve" and parser is None:
        raise ValueError(f"Yngve difficulty needs a constituency parser: {why}; or use difficulty='word_count', "
                         "'syllable_count', 'flesch_kincaid' or 'perplexity'")
    if method == "perplexity":
        if lm is None:
            raise ValueError("perplexity difficulty needs a causal language model (--perplexity-model: a folder or "
                             "Hub id AutoModelForCausalLM loads; the paper's was Llama 2)")
        if not callable(lm):
            from ...difficulty_models import Perplexity

            lm = Perplexity(lm)
    return method, parser, lm, note


def _difficulty_fn(method: str, parser: Callable[[str], Any] | None, lm: Any = None
                   ) -> tuple[str, Callable[[str], float], Any]:
    method, parser, lm, note = resolve_difficulty(method, parser, lm)
    if note:
        warnings.warn(note, stacklevel=3)
    memo: dict[str, float] = {}

    def difficulty(prompt: str) -> float:
        if prompt not in memo:
            memo[prompt] = prompt_difficulty(prompt, method, parser, lm)
        return memo[prompt]

    return method, difficulty, (parser, lm)


def _judge_name(judge: Any) -> str:
    ident = judge.identity()
    return f"{ident.get('backend', 'custom')}:{ident.get('model', 'unknown')}"


def _scorings(scoring: str | Sequence[str], mode: str, judges: Mapping[str, Any], options: Mapping[str, Any]
              ) -> list[str]:
    """The agent's own scoring first, then the ranking metrics beside it, checked."""
    scorings = [scoring] if isinstance(scoring, str) else list(scoring)
    if not scorings:
        raise ValueError("no scoring: name the agent's (vqascore, vqa_accuracy, or a ranking metric)")
    one_of("scoring", scorings[0], (*SCORINGS, *RANKING_METRICS))
    for name in scorings[1:]:
        one_of("ranking metric", name, RANKING_METRICS)
    twice = sorted({n for n in scorings if scorings.count(n) > 1})
    if twice:
        raise ValueError(f"scoring names {', '.join(twice)} twice")
    if mode == "adaptive" and scorings[0] == "clip_score":
        raise ValueError("adaptive mode bins the agent's score on 0-1 (appendix F): clip_score is no score on 0-1; "
                         "give it after the agent's own (scoring=['vqascore', 'clip_score'])")
    own = {n for n in scorings if n in SCORINGS and n == scorings[0]}  # scored by the agent's judge as it always was
    for what, given in (("scoring_judges", judges), ("scoring_options", options)):
        unknown = sorted(set(given) - (set(scorings) - own))
        if unknown:
            raise ValueError(f"{what} names {', '.join(unknown)}, which is no ranking metric of this run "
                             f"({', '.join(sorted(set(scorings) - own)) or 'none'})")
    return scorings


def _ranking_metric(name: str, judge: Any, given: Any, options: dict[str, Any] | None, cache: str | bool,
                    device: str | None) -> tuple[RankingMetric, Any]:
    """The metric ``name`` scoring with ``given`` (a spec) or, by default, the agent's ``judge`` (CLIPScore: its
    CLIP model), checked, loaded and asked its pre-flight probe; and how settings.json describes its judge."""
    from ...judges.spec import judge_setting
    from ...redaction import redacted

    scorer = metric_scorer(name)
    chosen = given if given is not None else None if name == "clip_score" else judge
    setting = judge_setting(scorer, None, chosen, None, options)
    scorer.check(setting)
    if isinstance(setting.judge, str):
        scorer.check_loadable(setting)
        model = scorer.load(setting, cache, device)
        scorer.preflight(setting, model)
        described = redacted(setting.judge)
    else:  # the agent's own judge: loaded already, behind its own cache
        model = scorer.load(setting, False, device)
        described = "the agent's judge"
    return RankingMetric(scorer, model, dict(setting.options)), {"judge": described, "options": redacted(options or {})}


def method_labels(scorings: Sequence[str], evaluator: str) -> dict[str, str | None]:
    """Each evaluation method's label in the ranking tables -> what ranks by it (:func:`.rankings.rank_models`'
    ``metric``; None: the agent's own, by mode), the baselines first and MT2IE last, as the paper's Tables 3 and 5."""
    model = evaluator.partition(":")[2].split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1] or evaluator
    pretty = {"vqa_accuracy": "VQA accuracy", **{n: metric_scorer(n).pretty_name for n in RANKING_METRICS}}
    labels: dict[str, str | None] = {pretty[n]: n for n in scorings[1:]}
    own = scorings[0]
    labels[f"MT2IE ({model})" if own == "vqascore" else f"MT2IE ({pretty[own]}, {model})"] = None
    return labels


def run_mt2ie(models: Mapping[str, Any], judge: Any, seed_prompts: Any = None, *, out_dir: str | os.PathLike,
              mode: str = "iterative", iterations: int = PAPER_ITERATIONS, seeds: Sequence[int] = PAPER_SEEDS,
              seed_prompts_per_seed: int = PAPER_SEED_PROMPTS_PER_SEED, scoring: str | Sequence[str] = "vqascore",
              scoring_judges: Mapping[str, Any] | None = None, scoring_options: Mapping[str, dict] | None = None,
              cache: str | bool = False,
              aesthetic: bool = False, difficulty: str = "auto", parser: Callable[[str], Any] | None = None,
              lm: Any = None, reference: Sequence[str] | Mapping[str, float] | None = None, max_reasks: int = 2,
              prompt_temperature: float = PROMPT_TEMPERATURE,
              generator_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
              progress: bool | str = True) -> dict[str, Any]:
    """Run MT2IE for every model and return a summary with the ranking table (:func:`rank_models`).

    ``models`` maps a name (letters, digits, ``._-``) to a drawer (``drawer(prompts, seeds) -> PIL
    images``, e.g. :class:`~t2ireason.generation.Drawer`; an exception in an image's place is that image's
    failure), a :class:`GenerationConfig`, or a generator spec (a diffusers folder or Hub id,
    ``openai:<model>``, ``hf:<folder>``, ``python:<module>:<callable>``), whose generator is loaded with
    ``generator_kwargs[name]`` where given (its backend's options: an API's ``api_key``, ``max_concurrency``...).
    ``judge`` is a judge or a spec (``load_judge``); it writes the prompts and scores
    the images (default in the CLI: :data:`PAPER_JUDGE`). ``seed_prompts``: a ``seed_prompts.jsonl``
    file or its folder, or a list of ``{"id", "category", "prompt"}`` (default: the shipped ones).
    Defaults are the paper's setup: iterative mode, 5 prompts per run, 5 random seeds, 4 seed prompts
    per seed, VQAScore. ``scoring`` may list, after the agent's own, the ranking metrics scored beside it
    (:data:`RANKING_METRICS`; module docstring), each with the agent's judge unless ``scoring_judges[name]`` names
    another (a spec; CLIPScore's: its CLIP model), with ``scoring_options[name]`` (its preset's under them), behind
    the response cache ``cache``. Everything is saved in ``out_dir`` as it finishes (see the module docstring);
    calling again with the same arguments resumes, and more ``seeds``, ``iterations`` or ``models``
    extend the saved runs.
    """
    one_of("mode", mode, MODES)
    scoring_judges, scoring_options = dict(scoring_judges or {}), dict(scoring_options or {})
    scorings = _scorings(scoring, mode, scoring_judges, scoring_options)
    if iterations < 1 or seed_prompts_per_seed < 1 or max_reasks < 0:
        raise ValueError("iterations and seed_prompts_per_seed must be >= 1, max_reasks >= 0")
    if not models:
        raise ValueError("no T2I models to evaluate")
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if not seeds:
        raise ValueError("no random seeds")
    for name in models:
        if not MODEL_NAME.fullmatch(name):
            raise ValueError(f"model name {name!r}: use letters, digits, '.', '_' and '-' (it names files)")
    method, difficulty_of, (parser, lm) = _difficulty_fn(difficulty, parser, lm)
    evaluator = judge if isinstance(judge, str) else _judge_name(judge)
    judge = load_judge(judge)
    pool = _load_seed_prompts(seed_prompts)
    if not pool:
        raise ValueError("no seed prompts")
    tracks = [_Track(s, sp) for s in seeds for sp in select_seed_prompts(pool, s, seed_prompts_per_seed)]

    # in a launch of several processes (torchrun, accelerate launch), each runs its share of the chains (every
    # model's runs of them), and the main one merges what they made
    procs = processes()
    order = _order(tracks, models, mode)
    if procs.is_main:
        fold(Path(out_dir), order)  # what a stopped launch's processes made, into the folder's own files
    procs.barrier()
    store = Store(Path(out_dir), rank=procs.rank if procs.count > 1 else None, main=procs.is_main)
    metrics: list[RankingMetric] = []
    described: dict[str, Any] = {}
    try:
        for name in scorings:
            if name in SCORINGS and name == scorings[0]:
                continue  # the agent's own, by its judge
            metric, described[name] = _ranking_metric(name, judge, scoring_judges.get(name),
                                                       scoring_options.get(name), cache, procs.device)
            metrics.append(metric)
        store.check_settings({
            "evaluator": judge.identity(), "scoring": scorings[0], "ranking_metrics": described, "aesthetic": aesthetic,
            "difficulty_method": method, "parser": describe(parser) if parser else None,
            **({"perplexity_model": repr(lm)} if method == "perplexity" else {}),
            "prompt_temperature": prompt_temperature, "models": {name: describe(spec) for name, spec in models.items()},
        })
        store.add_seed_prompts(pool)
        mine = procs.share(tracks)
        own = scorings[0] if scorings[0] in SCORINGS else metrics[0]  # the agent's score, or a ranking metric's
        scorer = Scorer(judge, own, aesthetic, max_reasks, metrics[0 if isinstance(own, str) else 1:])
        agent = _run_models(store, judge, scorer, models, mine, mode=mode, evaluator=evaluator, iterations=iterations,
                            difficulty=difficulty_of, difficulty_method=method, max_reasks=max_reasks,
                            temperature=prompt_temperature, generator_kwargs=generator_kwargs,
                            progress=progress and procs.is_main, device=procs.device)
    finally:  # what the ranking metrics loaded (a question LLM, a judge or CLIP model of their own)
        for metric in metrics:
            metric.scorer.close()
            if metric.model is not judge and callable(getattr(metric.model, "close", None)):
                metric.model.close()

    shares = procs.gather({"rank": procs.rank, "runs": len(models) * len(mine), "new": agent.new})
    summary = None
    if procs.is_main:
        if procs.count > 1:
            fold(store.out, order)
            store = Store(store.out)
        summary = _summary(store, models, tracks, seeds, mode=mode, iterations=iterations, scorings=scorings,
                           evaluator=evaluator, reference=reference, shares=shares)
    return procs.broadcast(summary)


def _run_models(store: Store, judge: Any, scorer: Scorer, models: Mapping[str, Any], mine: list[_Track], *, mode: str,
                evaluator: str, iterations: int, difficulty: Callable[[str], float | None], difficulty_method: str,
                max_reasks: int, temperature: float, generator_kwargs: Mapping[str, Mapping[str, Any]] | None,
                progress: bool | str, device: str | None) -> _Agent:
    """Every model's runs of this process's tracks, model by model (a model loaded here freed before the next)."""
    total = len(models) * len(mine) * iterations
    with progress_bar(total, progress, desc=f"MT2IE {mode}", unit="img") as bar:
        agent = _Agent(store, judge, scorer, mode=mode, evaluator=evaluator, tracks=mine,
                       difficulty=difficulty, difficulty_method=difficulty_method, max_reasks=max_reasks,
                       temperature=temperature, bar=bar)
        for name, spec in models.items():
            if not mine:
                break
            if callable(spec):
                drawer = spec
            else:  # a local model on this process's device in a launch
                config = spec if isinstance(spec, GenerationConfig) else GenerationConfig(model=str(spec))
                drawer = Drawer(config, device=device if config.spec.backend != "openai" else None, name=name,
                                failures="return", **(generator_kwargs or {}).get(name, {}))
            try:
                agent.run_model(name, drawer, iterations)
            finally:
                if isinstance(drawer, Drawer):
                    drawer.close()  # a model we loaded is freed before the next model's
            del drawer
    return agent


def _order(tracks: list[_Track], models: Mapping[str, Any], mode: str) -> Callable[[dict[str, Any]], tuple]:
    """The order one process writes rows and prompt chains in: model by model, iteration by iteration, in track
    order (an iterative chain, shared by the models, is the first model's; records of no track given now
    first, as they were)."""
    place: dict[str, tuple[int, int]] = {}
    for index, t in enumerate(tracks):
        for number, m in enumerate(models):
            place.setdefault(t.run_id(m, mode), (number, index))
            place.setdefault(t.chain(m, mode), (number, index))

    def key(record: dict[str, Any]) -> tuple:
        where = place.get(record.get("run_id", record.get("chain")))
        return (0, 0, 0, 0) if where is None else (1, where[0], int(record["iteration"]), where[1])

    return key


def _summary(store: Store, models: Mapping[str, Any], tracks: list[_Track], seeds: list[int], *, mode: str,
             iterations: int, scorings: list[str], evaluator: str, reference: Any, shares: list[dict[str, Any]]
             ) -> dict[str, Any]:
    """``summary.json``: the counts, the failures and the ranking table, written whole; with ranking metrics
    beside the agent's, each method's ranking (``rankings``, by its label in the paper's tables)."""
    planned = [(t.run_id(m, mode), i) for m in models for t in tracks for i in range(iterations)]
    rows = [store.done[key] for key in planned if key in store.done]
    summary = {
        "out_dir": str(store.out), "mode": mode, "scoring": scorings[0], "ranking_metrics": scorings[1:],
        "evaluator": evaluator,
        "models": list(models), "seeds": seeds, "iterations": iterations, "runs": len(models) * len(tracks),
        "planned": len(planned), "rows": len(rows), "new": sum(s["new"] for s in shares),
        "failed": sum(r["failure"] is not None and not refused(r) for r in rows),
        "refused": sum(refused(r) for r in rows),  # the model's answer, an outcome: no error
        "stopped": len(planned) - len(rows),  # iterations a failure kept from being reached
        "failures": [{"id": r["id"], "failure": r["failure"]} for r in rows if r["failure"] and not refused(r)][:20],
        "refusals": [{"id": r["id"], "failure": r["failure"]} for r in rows if refused(r)][:20],
        "table": rank_models(rows, reference, mode=mode) if rows else None,
    }
    if rows and len(scorings) > 1:  # seed 002 Tables 3 and 5: every method's ranking of the same images
        summary["rankings"] = {label: summary["table"] if metric is None else rank_models(rows, reference, mode=mode,
                                                                                          metric=metric)
                               for label, metric in method_labels(scorings, evaluator).items()}
    if len(shares) > 1:  # which process ran how many of the runs (a model and a chain each)
        summary["processes"] = [{"rank": s["rank"], "runs": s["runs"]} for s in shares]
    atomic_write_json(store.out / "summary.json", summary)
    return summary
