"""The MT2IE evaluator agent (seed 002): an MLLM writes the prompts, T2I models draw them, the MLLM scores them.

MT2IE agent
-----------
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
- ``aesthetic=True`` (appendix A, Figure 8): each image also gets the MLLM's
  0-10 aesthetic score, in the ``aesthetic`` column; ``rank_models(...,
  metric="aesthetic")`` ranks by it.
- Difficulty (section 6, appendix D): the Yngve score of the prompt's parse
  (mean Yngve depth over words) when a constituency ``parser`` is given. The
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
- Without a parser, difficulty falls back to the word count (appendix D,
  Table 4: the proxy most correlated with VQAScore, and always positive, so the
  weighting never flips a score's sign, which the Flesch-Kincaid grade can).
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
  ``failure`` with every raw reply in ``judge_replies``. An iterative chain goes
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

import argparse
import json
import math
import os
import random
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

from . import stats
from .alignment import DEFAULT_VQASCORE_JUDGE, vqascore
from .benchmarks.mt2ie import BENCHMARK, MODES, RUN_FEATURES, read_jsonl
from .difficulty import METHODS, prompt_difficulty
from .files import atomic_write_json, atomic_write_text
from .generation import Drawer, GenerationConfig, check_model, image_seed, save_image_atomic
from .images import as_images
from .judges import ChatRequest, Sampling, load_judge, preflight
from .parsing import ReplyParseError, as_score, ask_structured
from .progress import progress_bar
from .prompts import render

__all__ = [
    "run_mt2ie", "rank_models", "select_seed_prompts", "adaptive_bin", "prompt_request", "parse_prompt",
    "parse_questions", "parse_yes_no", "parse_choice", "parse_aesthetic", "add_mt2ie_args",
    "run_mt2ie_command", "PAPER_JUDGE", "PAPER_SEEDS", "SCORINGS", "DIFFICULTY_METHODS", "BINS",
]

#: the paper's evaluator: VQAScore with Llava-v1.6-34b (section 4.2, Table 2)
PAPER_JUDGE = DEFAULT_VQASCORE_JUDGE
#: "5 random seeds" (section 5)
PAPER_SEEDS = (0, 1, 2, 3, 4)
PAPER_ITERATIONS = 5
PAPER_SEED_PROMPTS_PER_SEED = 4
#: prompt writing "with temperature 0.3 and no top-k sampling" (appendix F)
PROMPT_TEMPERATURE = 0.3
SCORINGS = ("vqascore", "vqa_accuracy")
DIFFICULTY_METHODS = ("auto", *METHODS)
METRICS = ("score", "weighted_score", "aesthetic")
#: adaptive rewrite per score bin (appendix F, Figures 18-20), in score order
BINS = ("halve", "reduce", "rephrase", "increase", "increase_more")
TEMPLATES = "mt2ie"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# -- one step at a time: bins, requests, reply parsing -----------------------------


def adaptive_bin(score: float) -> str:
    """The rewrite appendix F assigns to the previous image's score: [0, 0.2] halve,
    (0.2, 0.4] reduce, (0.4, 0.6) rephrase, [0.6, 0.8) increase, [0.8, 1] increase_more."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"adaptive prompting needs a score in [0, 1], got {score}")
    if score <= 0.2:
        return "halve"
    if score <= 0.4:
        return "reduce"
    if score < 0.6:
        return "rephrase"
    return "increase" if score < 0.8 else "increase_more"


def prompt_request(previous: str, template: str = "iterative", *, temperature: float = PROMPT_TEMPERATURE,
                   seed: int | None = None) -> ChatRequest:
    """Ask for the next prompt: appendix F's system prompt ``template`` (``iterative`` or
    ``adaptive_<bin>``), then the existing prompt as the user turn."""
    sampling = Sampling(temperature=temperature, max_tokens=256, seed=seed if temperature > 0 else None)
    return ChatRequest.simple(f'Existing prompt: "{previous}"', system_prompt=render(TEMPLATES, template),
                              sampling=sampling)


_PROMPT_MARK = re.compile(r"(?<!existing )\bprompt\s*:", re.IGNORECASE)
_QUOTES = "\"'“”‘’"


def parse_prompt(text: str) -> str:
    """The new prompt: what follows the last "Prompt:" (as the figures ask), up to the end of its
    line; a reply of one line without the marker is taken whole."""
    marks = list(_PROMPT_MARK.finditer(text))
    if marks:
        rest = text[marks[-1].end():].strip()
        line = rest.splitlines()[0] if rest else ""
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) != 1:
            raise ReplyParseError('no "Prompt:" line in the reply')
        line = lines[0]
    prompt = line.strip().strip(_QUOTES).strip()
    if not prompt:
        raise ReplyParseError('the reply gives an empty prompt after "Prompt:"')
    return prompt


def parse_yes_no(text: str) -> bool:
    m = re.match(r"\W*(yes|no)\b", text, re.IGNORECASE)
    if not m:
        raise ReplyParseError("the reply is neither yes nor no")
    return m.group(1).lower() == "yes"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _question_block(text: str) -> list[dict[str, Any]]:
    # the paper's own examples run "A: yes Q: next question" together: put each field on its line
    text = re.sub(r"(?<=\S)[ \t]+(?=(?:Q|A|Choices)\s*:)", "\n", text)
    found, item = [], {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in ("q", "choices", "a"):
            continue
        if key == "q":
            item = {"question": value}
        elif key == "choices" and "question" in item:
            item["choices"] = [c.strip() for c in value.split(",") if c.strip()]
        elif key == "a" and item.get("choices"):
            answer = next((c for c in item["choices"] if _norm(c) == _norm(value)), None)
            if item["question"] and answer is not None:  # an answer outside its choices is unusable
                found.append({**item, "answer": answer})
            item = {}
    return found


def parse_questions(text: str) -> list[dict[str, Any]]:
    """Multiple-choice questions in appendix C's ``Q:`` / ``Choices:`` / ``A:`` layout, as
    ``{"question", "choices", "answer"}``. A reply that repeats the few-shot pattern with
    ``Image description:`` lines is cut there: the first block holding questions counts."""
    for block in re.split(r"(?im)^\s*image description\s*:.*$", text):
        questions = _question_block(block)
        if questions:
            return questions
    raise ReplyParseError("no complete question (Q:, Choices:, A: with an answer among the choices)")


def parse_choice(text: str, choices: Sequence[str]) -> str:
    """The choice a reply names: equal to one (ignoring case and punctuation), or containing exactly one."""
    reply = _norm(text)
    normed = {_norm(c): c for c in choices}
    if reply in normed:
        return normed[reply]
    hits = [c for n, c in normed.items() if n and re.search(rf"\b{re.escape(n)}\b", reply)]
    if len(hits) != 1:
        raise ReplyParseError(f"the answer names {'several' if hits else 'none'} of the choices ({', '.join(choices)})")
    return hits[0]


def parse_aesthetic(text: str) -> float:
    """The single 0-10 score Figure 8 asks for ("7", "7/10" and "7 out of 10" are all 7)."""
    numbers = set(re.findall(r"-?\d+(?:\.\d+)?", re.sub(r"(?:/|out of)\s*10\b", "", text)))
    if len(numbers) != 1:
        raise ReplyParseError(f"expected one score between 0 and 10, found {len(numbers) or 'no'} numbers")
    return as_score(numbers.pop(), lo=0, hi=10, name="aesthetic score")


# -- scoring ------------------------------------------------------------------------


def _each(fn: Callable[[list], list], items: list) -> list[tuple[Any, str | None]]:
    """``fn`` over the whole batch; if it fails, item by item, so one failure does not sink the others."""
    if not items:
        return []
    try:
        values = list(fn(items))
        if len(values) == len(items):
            return [(v, None) for v in values]
        error = f"got {len(values)} results for {len(items)} inputs"
    except Exception as e:  # noqa: BLE001 - isolated and recorded below, item by item
        error = f"{type(e).__name__}: {e}"
    if len(items) == 1:
        return [(None, error)]
    out = []
    for item in items:
        try:
            out.append((fn([item])[0], None))
        except Exception as e:  # noqa: BLE001 - recorded as the row's failure
            out.append((None, f"{type(e).__name__}: {e}"))
    return out


@dataclass
class _Scored:
    score: float | None = None
    aesthetic: float | None = None
    replies: tuple[str, ...] = ()
    failure: str | None = None


class _Scorer:
    """Scores a batch of (image, prompt) pairs with one judge; questions are written once per prompt."""

    def __init__(self, judge: Any, scoring: str, aesthetic: bool, max_reasks: int):
        self.judge, self.scoring, self.aesthetic, self.max_reasks = judge, scoring, aesthetic, max_reasks
        self._questions: dict[str, tuple[list[dict] | None, list[str], str | None]] = {}

    def __call__(self, images: list, prompts: list[str]) -> list[_Scored]:
        images = as_images(images)  # one JudgeImage per image, shared by all its requests
        out = self._vqascore(images, prompts) if self.scoring == "vqascore" else self._vqa_accuracy(images, prompts)
        if self.aesthetic:
            requests = [ChatRequest.simple(render(TEMPLATES, "aesthetic_user"), image,
                                           system_prompt=render(TEMPLATES, "aesthetic_system")) for image in images]
            for s, a in zip(out, self._ask(requests, parse_aesthetic)):
                s.aesthetic, s.replies = a.value, s.replies + tuple(a.texts)
                if not a.ok:
                    s.failure = "; ".join(filter(None, [s.failure, f"aesthetic score: {a.error}"]))
        return out

    def _ask(self, requests: list[ChatRequest], parse: Any) -> list:
        return ask_structured(self.judge, requests, parse, max_reasks=self.max_reasks) if requests else []

    def _vqascore(self, images: list, prompts: list[str]) -> list[_Scored]:
        out = []
        for p, error in _each(lambda pairs: vqascore([i for i, _ in pairs], [q for _, q in pairs], self.judge),
                              list(zip(images, prompts))):
            if error is None and not (p is not None and math.isfinite(p)):
                error = f"the judge gave a non-finite probability ({p})"
            out.append(_Scored(score=p) if error is None else _Scored(failure=f"VQAScore failed: {error}"))
        return out

    def _write_questions(self, prompts: list[str]) -> None:
        """Generate (system prompt of appendix C, "Image description: <prompt>") and validate
        questions for prompts not seen yet; keep the validated ones."""
        todo = [p for p in dict.fromkeys(prompts) if p not in self._questions]
        generated = self._ask([ChatRequest.simple(f"Image description: {p}",
                                                  system_prompt=render(TEMPLATES, "question_generation"))
                               for p in todo], parse_questions)
        checks = [(p, q) for p, g in zip(todo, generated) if g.ok for q in g.value]
        validated = iter(self._ask([ChatRequest.simple(render(TEMPLATES, "question_validation", prompt=p,
                                                              question=q["question"])) for p, q in checks],
                                   parse_yes_no))
        for p, g in zip(todo, generated):
            if not g.ok:
                self._questions[p] = (None, g.texts, f"question generation: {g.error}")
                continue
            results = [next(validated) for _ in g.value]
            replies = g.texts + [t for v in results for t in v.texts]
            error = next((f"question validation: {v.error}" for v in results if not v.ok), None)
            kept = [q for q, v in zip(g.value, results) if v.ok and v.value]
            if error is None and not kept:
                error = "no generated question passed validation"
            self._questions[p] = (None if error else kept, replies, error)

    def _vqa_accuracy(self, images: list, prompts: list[str]) -> list[_Scored]:
        self._write_questions(prompts)
        asked = [(k, q) for k, p in enumerate(prompts) for q in (self._questions[p][0] or [])]
        answers = self._ask([ChatRequest.simple(images[k], render(TEMPLATES, "question_answering",
                                                                  question=q["question"],
                                                                  choices=", ".join(q["choices"])))
                             for k, q in asked],
                            [partial(parse_choice, choices=q["choices"]) for _, q in asked])
        by_image = defaultdict(list)
        for (k, q), a in zip(asked, answers):
            by_image[k].append((q, a))
        out = []
        for k, p in enumerate(prompts):
            _, replies, error = self._questions[p]
            got = by_image[k]
            replies = tuple(replies) + tuple(t for _, a in got for t in a.texts)
            error = error or next((f"question answering: {a.error}" for _, a in got if not a.ok), None)
            if error:
                out.append(_Scored(replies=replies, failure=f"VQA accuracy failed: {error}"))
            else:
                out.append(_Scored(score=sum(a.value == q["answer"] for q, a in got) / len(got), replies=replies))
        return out


# -- seed prompts and plans ----------------------------------------------------------


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


# -- files ---------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path) if path.is_file() else []
    for r in rows:
        r.pop("_line", None)
    return rows


def _describe(spec: Any) -> Any:
    """What identifies a drawer (its generation config) or a parser (its name), for settings.json."""
    config = GenerationConfig(model=spec) if isinstance(spec, str) else getattr(spec, "config", spec)
    if isinstance(config, GenerationConfig):
        return config.to_dict()
    # the qualified name alone: a script's functions live in __main__ or in its module name, by how it runs
    return getattr(spec, "__qualname__", type(spec).__qualname__)


class _Store:
    """The output folder: rows per model, prompt chains, settings; what is done is read back from it."""

    def __init__(self, out_dir: Path):
        self.out = out_dir
        self.runs = out_dir / "runs"
        for torn in out_dir.rglob(".tmp-*"):  # left by a killed run: our atomic writes' temporary files
            torn.unlink()
        self.rows: dict[str, list[dict]] = {p.stem: _read_jsonl(p) for p in sorted(self.runs.glob("*.jsonl"))}
        self.done = {(r["run_id"], int(r["iteration"])): r for rows in self.rows.values() for r in rows}
        self.chains = _read_jsonl(out_dir / "prompt_chains.jsonl")
        self.prompts = {(c["chain"], int(c["iteration"])): c for c in self.chains}

    def check_settings(self, settings: dict[str, Any]) -> None:
        """Refuse to mix results of another judge, scorer or model under the same names."""
        path = self.out / "settings.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        for key, value in settings.items():
            if key != "models" and key in old and old[key] != value:
                raise ValueError(f"{self.out} holds results made with {key}={old[key]!r}, not {value!r}; "
                                 "use another output folder")
        models = dict(old.get("models", {}))
        for name, desc in settings["models"].items():
            if name in models and models[name] != desc:
                raise ValueError(f"{self.out} holds results of a different model named {name!r} "
                                 f"({models[name]}); use another name or output folder")
            models[name] = desc
        atomic_write_text(path, json.dumps({**old, **settings, "models": models}, indent=2) + "\n")

    def add_seed_prompts(self, seed_prompts: list[dict[str, Any]]) -> None:
        path = self.out / "seed_prompts.jsonl"
        rows = {r["id"]: r for r in _read_jsonl(path)}
        for sp in seed_prompts:
            if sp["id"] in rows and rows[sp["id"]]["prompt"] != sp["prompt"]:
                raise ValueError(f"{path} has another prompt under id {sp['id']!r}; use another output folder")
            rows.setdefault(sp["id"], sp)
        _write_jsonl(path, rows.values())

    def add_chains(self, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            self.prompts[(e["chain"], e["iteration"])] = e
        self.chains.extend(entries)
        _write_jsonl(self.out / "prompt_chains.jsonl", self.chains)

    def add_rows(self, model: str, rows: list[dict[str, Any]]) -> None:
        fresh = [r for r in rows if (r["run_id"], r["iteration"]) not in self.done]  # never twice
        for r in fresh:
            self.done[(r["run_id"], r["iteration"])] = r
        self.rows.setdefault(model, []).extend(fresh)
        _write_jsonl(self.runs / f"{model}.jsonl", self.rows[model])


def _row(**fields: Any) -> dict[str, Any]:
    unknown = set(fields) - set(RUN_FEATURES)
    if unknown:
        raise KeyError(f"not MT2IE run fields: {sorted(unknown)}")
    row = dict.fromkeys(RUN_FEATURES)
    row.update(fields)
    row["id"] = f"{row['run_id']}/{row['iteration']}"
    return row


# -- the agent loop --------------------------------------------------------------------


class _Agent:
    def __init__(self, store: _Store, judge: Any, scorer: _Scorer, *, mode: str, evaluator: str, tracks: list,
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
            rows.append(_row(run_id=run_id, model=name, evaluator=self.evaluator, mode=self.mode, seed=t.seed,
                             seed_prompt_id=t.seed_prompt["id"], category=t.seed_prompt["category"], iteration=i,
                             prompt=p["prompt"], adaptive_bin=p["adaptive_bin"],
                             image_seed=image_seed("mt2ie", run_id, i), judge_replies=list(p["replies"]),
                             failure=p["failure"], difficulty_method=self.difficulty_method))
        images = self._draw(drawer, [r for r in rows if r["failure"] is None])
        scored = self.scorer([im for _, im in images], [r["prompt"] for r, _ in images]) if images else []
        for (row, _), s in zip(images, scored):
            row.update(score=s.score, aesthetic=s.aesthetic, failure=s.failure,
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
        the rows whose image could not be made get their failure."""
        drawn = _each(lambda rs: drawer([r["prompt"] for r in rs], [r["image_seed"] for r in rs]), rows)
        images = []
        for row, (image, error) in zip(rows, drawn):
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


def _difficulty_fn(method: str, parser: Callable[[str], Any] | None) -> tuple[str, Callable[[str], float]]:
    if method not in DIFFICULTY_METHODS:
        raise ValueError(f"difficulty must be one of {', '.join(DIFFICULTY_METHODS)}, got {method!r}")
    if method == "auto":
        method = "yngve" if parser is not None else "word_count"
    if method == "yngve" and parser is None:
        raise ValueError("Yngve difficulty needs a constituency parser (parser=...); "
                         "use difficulty='word_count' or 'flesch_kincaid' without one")
    memo: dict[str, float] = {}

    def difficulty(prompt: str) -> float:
        if prompt not in memo:
            memo[prompt] = prompt_difficulty(prompt, method, parser)
        return memo[prompt]

    return method, difficulty


def _judge_name(judge: Any) -> str:
    ident = judge.identity()
    return f"{ident.get('backend', 'custom')}:{ident.get('model', 'unknown')}"


def run_mt2ie(models: Mapping[str, Any], judge: Any, seed_prompts: Any = None, *, out_dir: str | os.PathLike,
              mode: str = "iterative", iterations: int = PAPER_ITERATIONS, seeds: Sequence[int] = PAPER_SEEDS,
              seed_prompts_per_seed: int = PAPER_SEED_PROMPTS_PER_SEED, scoring: str = "vqascore",
              aesthetic: bool = False, difficulty: str = "auto", parser: Callable[[str], Any] | None = None,
              reference: Sequence[str] | Mapping[str, float] | None = None, max_reasks: int = 2,
              prompt_temperature: float = PROMPT_TEMPERATURE, progress: bool | str = True) -> dict[str, Any]:
    """Run MT2IE for every model and return a summary with the ranking table (:func:`rank_models`).

    ``models`` maps a name (letters, digits, ``._-``) to a drawer (``drawer(prompts, seeds) -> PIL
    images``, e.g. :class:`~t2ireason.generation.Drawer`), a :class:`GenerationConfig`, or a diffusers
    folder or Hub id. ``judge`` is a judge or a spec (``load_judge``); it writes the prompts and scores
    the images (default in the CLI: :data:`PAPER_JUDGE`). ``seed_prompts``: a ``seed_prompts.jsonl``
    file or its folder, or a list of ``{"id", "category", "prompt"}`` (default: the shipped ones).
    Defaults are the paper's setup: iterative mode, 5 prompts per run, 5 random seeds, 4 seed prompts
    per seed, VQAScore. Everything is saved in ``out_dir`` as it finishes (see the module docstring);
    calling again with the same arguments resumes, and more ``seeds``, ``iterations`` or ``models``
    extend the saved runs.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
    if iterations < 1 or seed_prompts_per_seed < 1 or max_reasks < 0:
        raise ValueError("iterations and seed_prompts_per_seed must be >= 1, max_reasks >= 0")
    if not models:
        raise ValueError("no T2I models to evaluate")
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    if not seeds:
        raise ValueError("no random seeds")
    for name in models:
        if not _NAME.fullmatch(name):
            raise ValueError(f"model name {name!r}: use letters, digits, '.', '_' and '-' (it names files)")
    method, difficulty_of = _difficulty_fn(difficulty, parser)
    evaluator = judge if isinstance(judge, str) else _judge_name(judge)
    judge = load_judge(judge)
    pool = _load_seed_prompts(seed_prompts)
    if not pool:
        raise ValueError("no seed prompts")
    tracks = [_Track(s, sp) for s in seeds for sp in select_seed_prompts(pool, s, seed_prompts_per_seed)]

    store = _Store(Path(out_dir))
    store.check_settings({
        "evaluator": judge.identity(), "scoring": scoring, "aesthetic": aesthetic, "difficulty_method": method,
        "parser": _describe(parser) if parser else None, "prompt_temperature": prompt_temperature,
        "models": {name: _describe(spec) for name, spec in models.items()},
    })
    store.add_seed_prompts(pool)
    scorer = _Scorer(judge, scoring, aesthetic, max_reasks)
    total = len(models) * len(tracks) * iterations
    with progress_bar(total, progress, desc=f"MT2IE {mode}", unit="img") as bar:
        agent = _Agent(store, judge, scorer, mode=mode, evaluator=evaluator, tracks=tracks,
                       difficulty=difficulty_of, difficulty_method=method, max_reasks=max_reasks,
                       temperature=prompt_temperature, bar=bar)
        for name, spec in models.items():
            drawer = spec if callable(spec) else Drawer(spec if isinstance(spec, GenerationConfig)
                                                        else GenerationConfig(model=str(spec)), name=name)
            agent.run_model(name, drawer, iterations)
            del drawer  # a pipeline we loaded is freed before the next model's

    planned = [(t.run_id(m, mode), i) for m in models for t in tracks for i in range(iterations)]
    rows = [store.done[key] for key in planned if key in store.done]
    summary = {
        "out_dir": str(store.out), "mode": mode, "scoring": scoring, "evaluator": evaluator,
        "models": list(models), "seeds": seeds, "iterations": iterations, "runs": len(models) * len(tracks),
        "planned": len(planned), "rows": len(rows), "new": agent.new,
        "failed": sum(r["failure"] is not None for r in rows),
        "stopped": len(planned) - len(rows),  # iterations a failure kept from being reached
        "failures": [{"id": r["id"], "failure": r["failure"]} for r in rows if r["failure"]][:20],
        "table": rank_models(rows, reference, mode=mode) if rows else None,
    }
    atomic_write_json(store.out / "summary.json", summary)
    return summary


# -- rankings ---------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float:
    return stats.mean_se(list(values))[0]


def _reference_scores(reference: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """Higher is better: a mapping of scores as is, a list of names best first by position."""
    if isinstance(reference, Mapping):
        return {str(k): float(v) for k, v in reference.items()}
    names = [str(n) for n in reference]
    if len(set(names)) != len(names):
        raise ValueError(f"the reference ranking names a model twice: {names}")
    return {n: -float(k) for k, n in enumerate(names)}


def rank_models(runs: Iterable[Mapping[str, Any]], reference: Sequence[str] | Mapping[str, float] | None = None,
                *, metric: str | None = None, mode: str | None = None,
                iterations: int | None = None) -> dict[str, Any]:
    """Rank T2I models from MT2IE run rows (``run_mt2ie``'s, ``MT2IE.read_release``'s or the Hub dataset's).

    Per random seed, a model's score is the mean of ``metric`` over its rows (failures left out and
    counted); models are ranked within each seed (1 = best, ties share the average rank). Per model:
    ``mean`` and ``std`` of the per-seed scores, ``mean_rank`` and ``rank_variance`` over seeds
    (Figure 7; population figures). ``metric`` defaults to ``score`` in iterative mode and
    ``weighted_score`` (score x difficulty, section 6) in adaptive mode; ``aesthetic`` ranks by
    appendix A's score. ``iterations`` keeps the first N prompts of each run (appendix G's ablation).
    ``reference`` (model names best first, or name -> score, higher better; e.g. GenAIBench's order)
    adds Kendall's tau-b between the mean-rank order and it, and the mean of the per-seed taus (Table 6).
    ``per_iteration`` (model -> iteration -> mean score, difficulty, weighted score) feeds
    :func:`t2ireason.report.plots.mt2ie_iterations` (Figures 3 and 6).
    """
    rows = [r for r in runs if (mode is None or r["mode"] == mode)
            and (iterations is None or int(r["iteration"]) < iterations)]
    if not rows:
        raise ValueError("no MT2IE run rows to rank" + (f" in mode {mode!r}" if mode else ""))
    modes = {r["mode"] for r in rows}
    if len(modes) > 1:
        raise ValueError(f"rows of several modes ({', '.join(sorted(modes))}): pass mode=")
    mode = modes.pop()
    metric = metric or ("weighted_score" if mode == "adaptive" else "score")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if metric == "weighted_score" and any((r.get("difficulty") or 1) <= 0 for r in rows):
        warnings.warn("some prompt difficulties are <= 0: weighting by them erases or flips those scores "
                      "(Flesch-Kincaid grades of short prompts are negative); prefer yngve or word_count",
                      stacklevel=2)

    values: dict[tuple[str, int], list] = defaultdict(list)
    by_iteration: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        values[(r["model"], int(r["seed"]))].append(r.get(metric))
        by_iteration[r["model"]][int(r["iteration"])].append(r)
    models = sorted({m for m, _ in values})
    seeds = sorted({s for _, s in values})
    per_seed = {m: {s: _mean(values[(m, s)]) for s in seeds if (m, s) in values} for m in models}
    ranks: dict[str, dict[int, float]] = {m: {} for m in models}
    for s in seeds:
        scored = [m for m in models if math.isfinite(per_seed[m].get(s, math.nan))]
        order = rankdata([-per_seed[m][s] for m in scored], method="average")
        for m, k in zip(scored, order):
            ranks[m][s] = float(k)

    table: dict[str, Any] = {"mode": mode, "metric": metric, "seeds": seeds, "models": {}}
    for m in models:
        means = [v for v in per_seed[m].values() if math.isfinite(v)]
        kept = [v for s in seeds for v in values.get((m, s), [])]
        table["models"][m] = {
            "mean": float(np.mean(means)) if means else math.nan,
            "std": float(np.std(means)) if means else math.nan,
            "per_seed": per_seed[m], "ranks": ranks[m],
            "mean_rank": float(np.mean(list(ranks[m].values()))) if ranks[m] else math.nan,
            "rank_variance": float(np.var(list(ranks[m].values()))) if ranks[m] else math.nan,
            "n": sum(v is not None for v in kept), "failed": sum(v is None for v in kept),
        }
    stat = table["models"]
    table["ranking"] = sorted(models, key=lambda m: (math.isnan(stat[m]["mean_rank"]), stat[m]["mean_rank"],
                                                     -stat[m]["mean"]))
    table["per_iteration"] = {m: {i: {k: _mean(r.get(k) for r in rs) for k in ("score", "difficulty", "weighted_score")}
                                  for i, rs in sorted(its.items())} for m, its in by_iteration.items()}
    if reference is not None:
        ref = _reference_scores(reference)
        common = [m for m in table["ranking"] if m in ref and math.isfinite(stat[m]["mean_rank"])]
        if len(common) < 2:
            raise ValueError(f"Kendall's tau needs at least two ranked models that the reference names; "
                             f"ranked: {table['ranking']}, reference: {sorted(ref)}")
        taus = {}
        for s in seeds:
            both = [m for m in common if s in ranks[m]]
            if len(both) >= 2:
                taus[s] = stats.kendall_tau([-ranks[m][s] for m in both], [ref[m] for m in both])
        table.update(reference=sorted(ref, key=lambda m: -ref[m]), compared=common,
                     kendall_tau=stats.kendall_tau([-stat[m]["mean_rank"] for m in common], [ref[m] for m in common]),
                     kendall_tau_per_seed=taus, kendall_tau_seed_mean=_mean(taus.values()))
    return table


# -- command line (registered by t2ireason.cli as the ``mt2ie`` subcommand) --------------


def _model_pair(text: str) -> tuple[str, str]:
    name, sep, model = text.partition("=")
    if not sep or not name or not model:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=<diffusers folder or hub id>, "
                                         "e.g. sd21=stabilityai/stable-diffusion-2-1")
    if not _NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(f"model name {name!r}: use letters, digits, '.', '_' and '-'")
    return name, model


def _parser_callable(text: str) -> Callable[[str], Any]:
    import importlib

    module, sep, attr = text.partition(":")
    try:
        if not sep:
            raise ValueError("expected module:function")
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"cannot load the parser {text!r} ({e})") from None
    if not callable(fn):
        raise argparse.ArgumentTypeError(f"{text!r} is not callable")
    return fn


def _reference_arg(text: str) -> list[str] | dict[str, float]:
    path = Path(text)
    if not path.is_file():
        return [n.strip() for n in text.split(",") if n.strip()]
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"{text}: not valid JSON ({e})") from None
    if not isinstance(value, (list, dict)):
        raise argparse.ArgumentTypeError(f"{text}: expected a list of names best first or an object name -> score")
    return value


def add_mt2ie_args(p: argparse.ArgumentParser) -> None:
    """Options of ``t2ireason mt2ie``: every one has the paper's setup (seed 002) as its default."""
    from .cli import _add_judge_args, _json_dict, _positive_int

    p.add_argument("--model", dest="models", action="append", type=_model_pair, required=True,
                   metavar="NAME=MODEL",
                   help="a T2I model to evaluate, as name=<diffusers folder or hub id>; repeat for several")
    _add_judge_args(p, default=PAPER_JUDGE)
    judge = next(a for a in p._actions if a.dest == "judge")
    judge.help += f" (default: {PAPER_JUDGE}, the paper's VQAScore judge; it also writes the prompts)"
    p.add_argument("--out", required=True,
                   help="output folder: runs/<model>.jsonl rows, images, summary.json (rerun to resume)")
    p.add_argument("--mode", choices=MODES, default="iterative",
                   help="iterative: each prompt adds one concept (section 5); adaptive: the next prompt "
                        "follows the last score (section 6) (default: iterative)")
    p.add_argument("--iterations", type=_positive_int, default=PAPER_ITERATIONS,
                   help="prompts per run, the seed prompt included (default: 5, T0..T4)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(PAPER_SEEDS),
                   help="random seeds, one ranking each (default: 0 1 2 3 4)")
    p.add_argument("--seed-prompts", default=None,
                   help="seed_prompts.jsonl (or its folder) with id, category, prompt per line "
                        "(default: the 16 shipped with the package)")
    p.add_argument("--seed-prompts-per-seed", type=_positive_int, default=PAPER_SEED_PROMPTS_PER_SEED,
                   help="seed prompts per random seed, one per category in turn (default: 4)")
    p.add_argument("--scoring", choices=SCORINGS, default="vqascore",
                   help="vqascore: P(Yes) of the judge (needs answer probabilities); vqa_accuracy: the judge "
                        "writes, validates and answers questions (appendix C) (default: vqascore)")
    p.add_argument("--aesthetic", action="store_true", help="also score each image's aesthetics 0-10 (appendix A)")
    p.add_argument("--difficulty", choices=DIFFICULTY_METHODS, default="auto",
                   help="prompt difficulty for weighted scores: auto = yngve with --parser, else word_count")
    p.add_argument("--parser", type=_parser_callable, default=None, metavar="MODULE:FUNCTION",
                   help="constituency parser for Yngve depth: a function text -> nltk.Tree")
    p.add_argument("--reference", type=_reference_arg, default=None,
                   help="reference ranking for Kendall's tau: model names best first, comma-separated, or "
                        "a JSON file (a list best first, or an object name -> score)")
    p.add_argument("--max-reasks", type=int, default=2, help="re-asks of a reply that does not parse (default: 2)")
    p.add_argument("--temperature", type=float, default=PROMPT_TEMPERATURE,
                   help="sampling temperature of prompt writing (default: 0.3, appendix F)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                   help="T2I model dtype (default: float16 on GPU, float32 on CPU)")
    p.add_argument("--steps", type=_positive_int, default=None, help="T2I inference steps (default: the pipeline's)")
    p.add_argument("--height", type=_positive_int, default=None, help="image height (default: the pipeline's)")
    p.add_argument("--width", type=_positive_int, default=None, help="image width (default: the pipeline's)")
    p.add_argument("--batch-size", type=_positive_int, default=1, help="prompts per T2I pipeline call (default: 1)")
    p.add_argument("--pipeline-kwargs", type=_json_dict, default={},
                   help='extra T2I pipeline call arguments as JSON, e.g. \'{"guidance_scale": 5.0}\'')
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _fmt(x: float, spec: str = ".3f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def run_mt2ie_command(args: argparse.Namespace) -> int:
    """``t2ireason mt2ie``: run the agent, print the ranking, say where everything is. Exit 1 if any
    iteration failed (the failures are in the rows), 0 otherwise."""
    names = [name for name, _ in args.models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"model name(s) given twice: {', '.join(twice)}")
    for _, model in args.models:
        check_model(model)
    models = {name: GenerationConfig(model=model, dtype=args.dtype, steps=args.steps, height=args.height,
                                     width=args.width, batch_size=args.batch_size,
                                     pipeline_kwargs=args.pipeline_kwargs)
              for name, model in args.models}
    judge = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    # before any image is drawn: the judge answers about an image, and gives VQAScore's probabilities
    preflight(judge, structured=False, probabilities=args.scoring == "vqascore")
    summary = run_mt2ie(models, judge, args.seed_prompts, out_dir=args.out, mode=args.mode,
                        iterations=args.iterations, seeds=args.seeds,
                        seed_prompts_per_seed=args.seed_prompts_per_seed, scoring=args.scoring,
                        aesthetic=args.aesthetic, difficulty=args.difficulty, parser=args.parser,
                        reference=args.reference, max_reasks=args.max_reasks,
                        prompt_temperature=args.temperature, progress=not args.no_progress)
    out = Path(args.out)
    print(f"MT2IE {summary['mode']}: {len(models)} model(s), {len(summary['seeds'])} seed(s), "
          f"{summary['runs']} runs of {summary['iterations']} prompts; {summary['rows']} rows "
          f"({summary['new']} new, {summary['failed']} failed, {summary['stopped']} not reached)")
    table = summary["table"]
    if table:
        print(f"\n{'model':<20} {table['metric'] + ' (mean ± std over seeds)':>36} {'mean rank':>10} "
              f"{'rank var':>9} {'failed':>7}")
        for m in table["ranking"]:
            s = table["models"][m]
            print(f"{m:<20} {_fmt(s['mean']) + ' ± ' + _fmt(s['std']):>36} {_fmt(s['mean_rank'], '.2f'):>10} "
                  f"{_fmt(s['rank_variance'], '.2f'):>9} {s['failed']:>7}")
        if "kendall_tau" in table:
            print(f"\nKendall's tau vs the reference: {_fmt(table['kendall_tau'])} "
                  f"(mean over seeds {_fmt(table['kendall_tau_seed_mean'])})")
        from .report.plots import mt2ie_iterations

        png, pdf = mt2ie_iterations(table["per_iteration"], out / "mt2ie_iterations", title=f"MT2IE {args.mode}")
        print(f"\nplot: {png} and {pdf}")
    for f in summary["failures"][:5]:
        print(f"failed: {f['id']}: {f['failure']}")
    print(f"rows: {out / 'runs'}/*.jsonl (images beside them); summary: {out / 'summary.json'}\n"
          f"as a Hub dataset: python datasets_scripts/build.py mt2ie --source {out} --out <folder>")
    return 1 if summary["failed"] else 0
