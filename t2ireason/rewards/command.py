"""``t2ireason criteria``: a benchmark's criteria made for a file of prompts, written as a dataset the metrics read.

The rows are the benchmark's own schema, one Parquet file per config as ``t2ireason build`` writes them, so
``load_dataset(<folder>, <config>)`` reads them, the metric scores against them
(``evaluate.load("metrics/r2i_score").compute(predictions=images, references=rows)``) and ``t2ireason
evaluate --data <folder>`` runs on them. They are made as a reward makes them (:class:`~.criteria.Criteria`:
the benchmark's own method, one call per prompt and step, kept in the criteria cache), so a reward loaded
with the same criteria LLM finds them made.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .criteria import METRIC_BENCHMARKS, Criteria

__all__ = ["read_prompts", "write_criteria", "add_criteria_args", "run_criteria"]


def read_prompts(path: str | Path) -> list[dict[str, Any]]:
    """The records of a prompts file, each a dict with a ``prompt`` (and whatever fields it gives: ``id``,
    a reference caption, a dimension...): ``.txt`` (a prompt a line, blank lines skipped), ``.jsonl`` (a
    string or an object a line), ``.json`` (a list of them), ``.csv`` (a ``prompt`` column) or ``.parquet``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prompts file not found: {path}")
    kind = path.suffix.lower()
    if kind == ".txt":
        items: list[Any] = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
        items = [line for line in items if line]
    elif kind == ".jsonl":
        items = []
        for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(f"{path}, line {n}: not JSON ({e})") from None
    elif kind == ".json":
        try:
            items = json.loads(path.read_text(encoding="utf-8-sig"))
        except ValueError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(items, list):
            raise ValueError(f"{path}: expected a JSON list of prompts (strings or objects with a 'prompt')")
    elif kind == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as f:
            items = list(csv.DictReader(f))
    elif kind == ".parquet":
        import pyarrow.parquet as pq

        items = pq.read_table(path).to_pylist()
    else:
        raise ValueError(f"{path}: a prompts file is .txt, .jsonl, .json, .csv or .parquet, not {kind or 'extensionless'}")
    records = []
    for n, item in enumerate(items, 1):
        record = {"prompt": item} if isinstance(item, str) else item
        if not isinstance(record, dict) or not isinstance(record.get("prompt"), str) or not record["prompt"].strip():
            raise ValueError(f"{path}, prompt {n}: needs a non-empty 'prompt' string, got {str(item)[:80]!r}")
        records.append(record)
    if not records:
        raise ValueError(f"{path} holds no prompt")
    return records


def write_criteria(criteria: Criteria, rows: Sequence[dict[str, Any]], failures: Sequence[str | None],
                   out: str | Path, *, source: str = "", license: str = "other", overwrite: bool = False) -> dict[str, Any]:
    """``rows`` (one per prompt, failed ones with no criteria) as a dataset folder of ``criteria``'s
    benchmark: a Parquet file per config, the card, and ``build_report.json`` (what made them, each
    failure with its prompt). Returns the report."""
    from ..build import REPORT_FILE, _prepare_out, _table, card_data, render_template, write_configs
    from ..files import atomic_folder

    bench, out = criteria.bench, Path(out)
    _prepare_out(out, overwrite)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        for config in criteria.method.configs(row):
            grouped.setdefault(config, []).append(row)
    anomalies: list[Any] = []
    quarantine: list[Any] = []
    tables = {c: _table(grouped[c], bench.config_features(c), f"config {c}", anomalies, quarantine)
              for c in bench.configs if c in grouped}
    if quarantine:  # rows made to the schema always fit it: a mismatch is a bug, not a record to drop
        raise ValueError(f"{len(quarantine)} row(s) do not fit the {bench.name} schema: {quarantine[0].reason}")
    made = [{"prompt": r["prompt"], "id": bench.row_id(r), "failure": f} for r, f in zip(rows, failures) if f]
    report = {"benchmark": bench.name, "source": source, "made_by": "t2ireason criteria", "metric": criteria.metric,
              "criteria_llm": criteria.llm_identity(), "prompts": len(rows), "failed": made,
              "counts": dict(criteria.counts), "configs": {c: {"rows": t.num_rows} for c, t in tables.items()},
              "license": license}
    with atomic_folder(out) as tmp:
        infos, metadata_configs, files = write_configs(bench, tables, tmp)
        data = card_data(bench, license, infos, metadata_configs, len(rows), tags=["criteria"])
        default = next(n for n, c in metadata_configs.items() if c.get("default"))
        (tmp / "README.md").write_text(render_template(
            "criteria_card.md.j2", card_data=data.to_yaml(), bench=bench, metric=criteria.metric, report=report,
            default_config=default, split=bench.split), encoding="utf-8")
        report["files"] = [*files, "README.md", REPORT_FILE]
        (tmp / REPORT_FILE).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def add_criteria_args(p: argparse.ArgumentParser) -> None:
    from ..cli import _json_dict

    p.add_argument("--benchmark", required=True, choices=sorted(METRIC_BENCHMARKS.values()),
                   help="whose criteria: r2i-bench (appendix A.4), t2i-reasonbench (stage I), worldgenbench "
                        "(the project's checklist prompt), prism-bench (a track, nothing made)")
    p.add_argument("--prompts", required=True,
                   help="file of prompts: .txt (a line each), .jsonl/.json (strings, or objects with a 'prompt' and "
                        "the fields given: id, reference_caption, dimension, idiom, explicit_meaning, track...), "
                        ".csv or .parquet")
    p.add_argument("--out", required=True, help="the dataset folder to write (Parquet per config, card, build_report.json)")
    p.add_argument("--criteria-llm", default=None,
                   help="the LLM that makes them, named like a judge: openai:<model>[@<base url>], hf:<model>, vllm:<model>")
    p.add_argument("--criteria-llm-kwargs", type=_json_dict, default={}, help="its backend options as JSON")
    p.add_argument("--dimension", default=None,
                   help="t2i-reasonbench: the dimension of prompts that name none (idiom, textual, entity, scientific)")
    p.add_argument("--track", default=None,
                   help="prism-bench: the track of prompts that name none (default: the project's general template)")
    p.add_argument("--language", default=None, help="prism-bench: the language of prompts that name none (default en)")
    p.add_argument("--cache", default=True, help="criteria cache file (default: criteria.sqlite beside the response cache)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="neither read nor keep made criteria")
    p.add_argument("--license", default="other", help="the card's license (default: other)")
    p.add_argument("--overwrite", action="store_true", help="replace a folder this command (or build) wrote before")


def run_criteria(args: argparse.Namespace) -> int:
    from ..benchmarks import get_benchmark
    from ..judges import load_judge, validate_judge

    metric = get_benchmark(args.benchmark).metric
    records = read_prompts(args.prompts)
    llm = None
    if args.criteria_llm is not None:
        validate_judge(args.criteria_llm, args.criteria_llm_kwargs)
        llm = load_judge(args.criteria_llm, **args.criteria_llm_kwargs)
    elif metric != "prism_score":
        raise ValueError(f"--criteria-llm is needed: {args.benchmark}'s criteria are made by an LLM")
    choice = args.dimension if metric == "t2i_reasonscore" else args.track if metric == "prism_score" else None
    try:
        criteria = Criteria(metric, llm, cache=args.cache, choice=choice, language=args.language)
        ids = [r.get("id") if r.get("id") not in (None, "") else n for n, r in enumerate(records, 1)]
        rows, failures = criteria.rows([r["prompt"] for r in records], records, ids=ids)
        report = write_criteria(criteria, rows, failures, args.out, source=str(args.prompts), license=args.license,
                                overwrite=args.overwrite)
    finally:
        if llm is not None:
            llm.close()
    c = report["counts"]
    print(f"{len(rows)} prompts: {c['made']} made, {c['cached']} from the cache, {c['given']} given, "
          f"{c['failed']} failed -> {args.out} ({', '.join(report['configs'])})")
    for f in report["failed"][:5]:
        print(f"  failed: {f['id']}: {f['failure']}")
    return 1 if report["failed"] else 0
