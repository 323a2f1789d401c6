"""``t2ireason protocol``: a run's recorded protocol against its paper's (each of its tables') or another run's,
element by element (:mod:`t2ireason.report.verdict`), as a table a user reads before publishing, or as JSON."""

from __future__ import annotations

import json
from typing import Any

from .verdict import NO_RECORD, compare_records, declared_protocol, said_value

__all__ = ["run_comparison", "comparison_text"]


def run_comparison(run: Any, evaluation: str | None = None, against: str = "paper") -> dict[str, Any]:
    """What ``t2ireason protocol`` shows: the run's evaluation (``evaluation``, or its only one) compared element by
    element with the paper's protocol of each of its tables (``against="paper"``), or with another run's evaluation
    (``against``: a run folder; its evaluation of the same name, or its only one). Returns
    ``{"run", "evaluation", "against", "record", "comparisons": [{"table", "verdict", "rule", "elements"}]}``."""
    from ..runs import Run
    from .writer import _run_tables

    run = run if isinstance(run, Run) else Run.open(run)
    evaluation = _evaluation(run, evaluation)
    scores = run.scores(evaluation)
    record = scores.get("protocol")
    out: dict[str, Any] = {"run": str(run.path), "evaluation": evaluation, "against": against, "record": record,
                           "comparisons": []}
    if against == "paper":
        from .protocol import reference

        judge = scores.get("judge") or {}
        for table in _run_tables(run, evaluation, run.name, run.results(evaluation)):
            p = table.protocols.get(run.name)
            if p is None:
                continue
            pub = reference(run.bench.name, table.title, judge, p.preset)
            paper = declared_protocol(run.bench.name, pub.citation.get("judge_spec")) if pub is not None else None
            out["comparisons"].append({"table": table.title, "verdict": p.comparable,
                                       "rule": ((paper or {}).get("coverage") or {}).get("rule"),
                                       "source": (paper or {}).get("source"),
                                       "elements": [e.to_dict() for e in p.elements]})
        return out
    other = Run.open(against)
    theirs = other.scores(evaluation if evaluation in other.evaluations() else _evaluation(other, None))
    if record is None or theirs.get("protocol") is None:
        raise ValueError(f"{run.path if record is None else other.path}: {NO_RECORD}")
    c = compare_records(record, theirs["protocol"])
    out["comparisons"].append({"table": f"against {other.name}", "verdict": c.text, "rule": None, "source": None,
                               "elements": [e.to_dict() for e in c.elements]})
    return out


def _evaluation(run: Any, evaluation: str | None) -> str:
    names = run.evaluations()
    if evaluation is not None:
        return evaluation
    if len(names) != 1:
        raise ValueError(f"{run.path} has {len(names)} evaluations ({', '.join(names) or 'none'}): say which with "
                         "--evaluation")
    return names[0]


_MARKS = {"equal": "same", "differs": "DIFFERS", "unverified": "not checked", "vouched": "vouched"}


def comparison_text(comparison: dict[str, Any]) -> str:
    """:func:`run_comparison` as a table a user can read before publishing: per table, the verdict, then each
    element with the paper's value, the run's and whether they match, differ or could not be checked."""
    lines = [f"{comparison['run']} · {comparison['evaluation']} against "
             f"{'the paper' if comparison['against'] == 'paper' else comparison['against']}"]
    if comparison["record"] is None:
        lines.append(NO_RECORD)
    said: dict[str, str] = {}
    for item in comparison["comparisons"]:
        key = json.dumps(item["elements"], sort_keys=True, default=str)
        if key in said:  # the same comparison as a table above (Table 2's scope aside): said once
            lines.append(f"\n{item['table']}: as {said[key]}: {item['verdict']}")
            continue
        said[key] = item["table"]
        lines.append(f"\n{item['table']}: {item['verdict']}")
        if item.get("source"):
            lines.append(f"  the paper's protocol: {item['source']}")
        if item.get("rule"):
            lines.append(f"  its rule on failures: {item['rule']}")
        rows = [("element", "status", "paper", "run")] + [
            (e["element"], _MARKS.get(e["status"], e["status"]), _cell(e["element"], e["paper"]), _cell(e["element"], e["run"]))
            for e in item["elements"]]
        widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
        for n, row in enumerate(rows):
            lines.append("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
            if n == 0:
                lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(element: str, value: Any) -> str:
    if element == "templates" and isinstance(value, list):
        return f"{len(value)} template{'s' * (len(value) != 1)}"
    text = said_value(value)
    return text if len(text) <= 48 else text[:47] + "…"
