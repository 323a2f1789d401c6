"""Question LLMs x judges in one go: T2I-ReasonBench's Table 1 (seed 000, section 4.2), every pair an evaluation.

The paper computes T2I-ReasonScore with twelve LLM-MLLM combinations: three LLMs write the stage-1
question-criterion pairs (DeepSeek-R1, GPT-5.1, Gemini-2.5-pro) and five MLLMs answer them (Qwen2.5-VL-72B,
GPT-5.1, LLaVA-OneVision-1.5, Gemini-2.5-pro, Qwen3-VL), and correlates each with the human ratings. Here
:func:`sweep` does the same on one run's images:

- each question LLM writes the questions of the run's prompts with the benchmark's own stage-1 method
  (:class:`~t2ireason.rewards.Criteria`, the templates of Figures 9 to 12; made once per prompt and LLM and
  kept in the criteria cache), into ``<run>/questions/<llm>/``, a dataset folder as ``t2ireason criteria``
  writes (``load_dataset(folder, "all")``); :data:`RELEASE` names the run's rows' own questions (the
  release's: DeepSeek-R1's for T2I-ReasonBench), asked as they are;
- each judge scores the run's images against each LLM's questions as an evaluation of the run
  (``<llm>--<judge>``, :meth:`~t2ireason.runs.Run.evaluate` with ``questions=``), resumable and never asked
  twice like any other;
- :func:`sweep_table` lays the pairs out as Table 1 does, a row per LLM x judge (here their scores, each
  dimension and overall); ``t2ireason agreement`` on a human study of the run gives the same rows their
  Kendall's tau and Spearman's rho (the row labels say the LLM and the judge).

Works for every benchmark whose metric asks each prompt's own questions (R2I-Bench, WorldGenBench too).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .files import atomic_write_json, atomic_write_text
from .results import PaperTable
from .runs import Run, evaluation_name, slug

__all__ = ["RELEASE", "Pair", "make_questions", "sweep", "sweep_table", "QUESTIONS_DIR", "SWEEP_FILE"]

#: the question "LLM" that stands for the run's rows' own questions (the release's)
RELEASE = "release"
QUESTIONS_DIR = "questions"
SWEEP_FILE = "sweep.json"
#: the fields of a made row that hold (or report on) its questions: the rest of the run's row is kept as it is
_QUESTION_FIELDS = ("evaluation", "image_content", "questions", "has_questions", "checklist", "extra")


@dataclass
class Pair:
    """One LLM x judge of a sweep: its evaluation in the run, whose questions, which judge."""

    llm: str
    judge: str
    evaluation: str
    questions: str | None  # the questions folder (relative to the run), None: the run's rows' own


def _name_of(model: Any) -> str:
    """A spec or a judge object by its model, as the evaluation names take it (``openai-gpt-5.1``)."""
    return evaluation_name(model)


def make_questions(run: Run, llm: Any, *, llm_kwargs: dict[str, Any] | None = None,
                   criteria_cache: str | os.PathLike | bool = True) -> tuple[Path, dict[str, Any]]:
    """The questions of ``run``'s prompts written by ``llm`` (a spec or a judge object) with the benchmark's own
    method, as a dataset folder ``<run>/questions/<llm>/`` (:func:`~t2ireason.exports.write_criteria`); each row
    is the run's with its questions replaced. Returns the folder and its report (a prompt whose questions could
    not be made is listed in ``failed``: its images fail with that cause). Made once per prompt and LLM: a
    second call reads the criteria cache and asks nothing."""
    from .exports import write_criteria
    from .judges import load_judge, validate_judge
    from .rewards.criteria import Criteria

    bench = run.bench
    own = isinstance(llm, str)
    if own:
        validate_judge(llm, llm_kwargs)
    model = load_judge(llm, **(llm_kwargs or {})) if own else llm
    try:
        criteria = Criteria(bench.metric, model, cache=criteria_cache)
        fields = criteria.method.criteria_fields
        if not fields:
            raise ValueError(f"{bench.pretty_name} asks no questions written for each prompt: there is no question LLM "
                             "to sweep (sweep its judges with the release's rows: --llm release)")
        rows = run.rows()
        metadata = [{k: v for k, v in r.items() if k not in fields} for r in rows]  # so that they are made
        made, failures = criteria.rows([bench.prompt(r) for r in rows], metadata)
        merged = [{**r, **{k: m[k] for k in _QUESTION_FIELDS if k in m and k in r}} for r, m in zip(rows, made)]
        out = run.path / QUESTIONS_DIR / _name_of(llm)
        report = write_criteria(criteria, merged, failures, out, source=f"the rows of run {run.name}", overwrite=True)
    finally:
        if own:
            model.close()
    return out, report


def _pairs(llms: Sequence[Any], judges: Sequence[Any], pairs: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    grid = [(llm, judge) for llm in llms for judge in judges] + list(pairs)
    if not grid:
        raise ValueError("no LLM x judge pair to score: give question LLMs and judges (every pair of them is "
                         "scored), or pairs")
    seen, out = set(), []
    for llm, judge in grid:
        key = (_llm_key(llm), _name_of(judge))
        if key not in seen:
            seen.add(key)
            out.append((llm, judge))
    return out


def _llm_key(llm: Any) -> str:
    return RELEASE if llm == RELEASE else _name_of(llm)


def sweep(run: Run | str | os.PathLike, llms: Sequence[Any] = (), judges: Sequence[Any] = (), *,
          pairs: Sequence[tuple[Any, Any]] = (), llm_kwargs: dict[str, Any] | None = None,
          judge_kwargs: dict[str, Any] | None = None, preset: str | None = None, options: dict[str, Any] | None = None,
          cache: str | bool = True, criteria_cache: str | os.PathLike | bool = True, chunk_size: int = 32,
          progress: bool = False, retry_failed: bool = False, allow_missing: bool = False,
          say: Any = None) -> dict[str, Any]:
    """Score ``run``'s images with every question LLM of ``llms`` x every judge of ``judges`` (and each of
    ``pairs``, ``(llm, judge)``), each pair an evaluation of the run named ``<llm>--<judge>``; an LLM is a judge
    spec (or object) or :data:`RELEASE` (the run's rows' own questions). Each LLM's questions are made once
    (:func:`make_questions`), before any judge is asked; every evaluation resumes where it stopped. ``say``: a
    function given one line per step. Returns ``{"pairs": [Pair...], "questions": {llm: report}, "scores":
    {evaluation: scores}}``, also written to ``<run>/sweep.json``, with :func:`sweep_table`'s table."""
    run = run if isinstance(run, Run) else Run.open(run)
    say = say or (lambda line: None)
    todo = _pairs(llms, judges, pairs)
    from .scoring import check_setting, judge_setting

    for _, judge in todo:  # every judge checked before any question is made or image scored
        check_setting(run.bench, judge_setting(run.bench, preset, judge, judge_kwargs, options))
    folders: dict[str, str | None] = {}
    reports: dict[str, dict[str, Any]] = {}
    for llm, _ in todo:
        key = _llm_key(llm)
        if key in folders:
            continue
        if llm == RELEASE:
            folders[key] = None
            continue
        folder, report = make_questions(run, llm, llm_kwargs=llm_kwargs, criteria_cache=criteria_cache)
        folders[key], reports[key] = f"./{folder.relative_to(run.path).as_posix()}", report
        c = report["counts"]
        say(f"questions by {run.questions_by(folders[key])}: {c['made']} made, {c['cached']} from the cache, "
            f"{len(report['failed'])} failed -> {folder}")
    done: list[Pair] = []
    scores: dict[str, dict[str, Any]] = {}
    for llm, judge in todo:
        key = _llm_key(llm)
        name = slug(f"{key}--{evaluation_name(judge, preset)}")
        found = run.evaluate(judge, preset=preset, judge_kwargs=judge_kwargs, options=options, name=name, cache=cache,
                             chunk_size=chunk_size, progress=progress, retry_failed=retry_failed,
                             allow_missing=allow_missing,
                             questions=None if folders[key] is None else run.path / folders[key])
        scores[name] = found
        pair = Pair(run.questions_by(folders[key]), _judge_label(found), name, folders[key])
        done.append(pair)
        say(f"{pair.llm} x {pair.judge}: {found['num_images']} images, {found['num_failed']} failed -> "
            f"{run.evaluation_dir(name) / 'scores.json'}")
    table = sweep_table(run, done)
    from .report.tables import to_markdown

    atomic_write_json(run.path / SWEEP_FILE, {"pairs": [asdict(p) for p in done], "questions": reports})
    atomic_write_text(run.path / "sweep.md", to_markdown([table]))
    return {"pairs": done, "questions": reports, "scores": scores, "table": table}


def _judge_label(scores: dict[str, Any]) -> str:
    from .judges.spec import judge_name

    return judge_name(scores.get("judge") or {}) or scores["evaluation"]


def sweep_table(run: Run, pairs: Sequence[Pair]) -> PaperTable:
    """The pairs as T2I-ReasonBench's Table 1 lays them out, a row per question LLM x judge (``LLM × MLLM``), in
    the order scored; the cells are each pair's scores of the benchmark's main table (per dimension and
    overall, 0-100), as the human ratings that turn them into Table 1's correlations are a study's
    (``t2ireason rate`` / ``t2ireason agreement``, whose table has the same rows)."""
    from .report.tables import side_by_side

    tables = []
    for p in pairs:
        label = f"{p.llm} × {p.judge}"
        main = run.bench.paper_tables(run.scores(p.evaluation)["aggregate"], label)[:1]
        tables.append(main)
    [merged] = side_by_side(tables) if tables else [PaperTable("", [])]
    bench = run.bench.pretty_name
    merged.title = f"{bench}: each question LLM × judge (Table 1's rows)"
    merged.note = ("each row: the questions one LLM wrote for the run's prompts, answered by one judge; "
                   f"{merged.note}".rstrip("; "))
    return merged


def read_sweep(run: Run | str | os.PathLike) -> list[Pair]:
    """The pairs of the run's last sweep (``sweep.json``)."""
    run = run if isinstance(run, Run) else Run.open(run)
    data = json.loads((run.path / SWEEP_FILE).read_text(encoding="utf-8"))
    return [Pair(**p) for p in data["pairs"]]
