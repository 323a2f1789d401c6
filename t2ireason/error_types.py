"""R2I-Bench's Figure 6 on a run: the failed images of one evaluation each given one of the paper's error types by a
judge (:mod:`t2ireason.benchmarks.r2i_bench.errors`), kept beside the evaluation in ``error_types.json`` and
tabulated in the run's report (error type x count and share).

Nothing is asked twice: each image's type is written as soon as its chunk is answered, and a second call asks only
the failed images without one (and those whose answer was unusable, with ``retry_failed``).
"""

from __future__ import annotations

import json
from typing import Any

from .benchmarks.r2i_bench.errors import FAILED_BELOW, assign_error_types, error_table, failed
from .files import atomic_write_json
from .results import ImageResult, PaperTable
from .run_files import RESULTS_FILE, RunError, read_results

__all__ = ["ERRORS_FILE", "type_errors", "error_type_tables"]

ERRORS_FILE = "error_types.json"


def _judge_label(judge: Any) -> str:
    from .judges.spec import portable_model

    if isinstance(judge, str):
        return judge.split("@", 1)[0]
    ident = judge.identity()
    return f"{ident.get('backend', 'judge')}:{portable_model(str(ident.get('model', '')))[0]}"


def type_errors(run: Any, evaluation: str, judge: Any, *, judge_kwargs: dict[str, Any] | None = None,
                threshold: float = FAILED_BELOW, cache: str | bool = True, chunk_size: int = 16, max_reasks: int = 2,
                retry_failed: bool = False) -> dict[str, Any]:
    """Give each failed image of ``run``'s ``evaluation`` (R2I-Score below ``threshold``) its error type, with
    ``judge`` (a spec or a judge object), into ``<run>/evaluations/<evaluation>/error_types.json``: ``{"threshold",
    "judge", "items": {image key: {"error_type", "reason"} or {"failure"}}}``. A file made with another judge or
    threshold is an error, never mixed into."""
    if run.bench.name != "r2i-bench":
        raise RunError(f"error types are R2I-Bench's (Figure 6); {run.path} is a run of {run.bench.name}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold is an R2I-Score in (0, 1], got {threshold}")
    scores = run.scores(evaluation)  # a clear error when it is not finished
    if scores.get("metric") not in (None, run.bench.metric):
        raise RunError(f"evaluation {evaluation!r} was scored with {scores['metric']}, not R2I-Score")
    folder = run.evaluation_dir(evaluation)
    file = folder / ERRORS_FILE
    label = _judge_label(judge)
    data = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else \
        {"threshold": threshold, "judge": label, "items": {}}
    if (data["threshold"], data["judge"]) != (threshold, label):
        raise RunError(f"{file} holds error types given by {data['judge']} to the images below {data['threshold']:g}; "
                       f"delete it to give them with {label} below {threshold:g}")
    done, _ = read_results(folder / RESULTS_FILE, repair=False)
    rows = {run.bench.row_id(r): r for r in run.question_rows((scores.get("settings") or {}).get("questions"))}
    todo = []
    for key, record in done.items():
        result = ImageResult.from_dict(record)
        kept = data["items"].get(key)
        if failed(result, threshold) and (kept is None or (retry_failed and "failure" in kept)):
            todo.append((key, rows[result.id], run.images_dir / key, result))
    if todo:
        from .judges import load_judge

        model = load_judge(judge, cache=cache, **(judge_kwargs or {})) if isinstance(judge, str) else judge
        try:
            for start in range(0, len(todo), chunk_size):
                chunk = todo[start: start + chunk_size]
                assigned = assign_error_types([t[1] for t in chunk], [t[2] for t in chunk], [t[3] for t in chunk],
                                              model, max_reasks=max_reasks)
                data["items"].update((t[0], a) for t, a in zip(chunk, assigned))
                atomic_write_json(file, data)  # each chunk on disk as soon as it is answered
        finally:
            if isinstance(judge, str):
                model.close()
    elif not file.is_file():
        atomic_write_json(file, data)
    return data


def error_type_tables(run: Any, evaluation: str, label: str) -> list[PaperTable]:
    """The run's Figure 6 table for ``evaluation``, where its error types were given (else none)."""
    file = run.evaluation_dir(evaluation) / ERRORS_FILE
    if not file.is_file():
        return []
    data = json.loads(file.read_text(encoding="utf-8"))
    return [error_table({label: list(data["items"].values())}, data["threshold"], {label: data["judge"]})]
