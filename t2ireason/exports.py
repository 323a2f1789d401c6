"""Scored runs for the Hub: a results dataset (Parquet with the images, one config per benchmark, and its
card; :func:`export_results`, ``t2ireason export``) and the ``.eval_results`` entries a model repository
holds for the Hub's evaluation results (:func:`eval_result_entries`); and criteria made for new prompts, written as
a dataset of their benchmark (:func:`write_criteria`, ``t2ireason criteria``)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import inside, json_text, jsonable, printable
from .hub_ids import check_dataset_ref, check_license, check_repo_id, check_revision, is_commit
from .runs import Run, RunError, finished_evaluations, slug

if TYPE_CHECKING:
    from .results import ImageResult
    from .rewards.criteria import Criteria

__all__ = ["export_results", "eval_result_entries", "check_new_folder", "write_criteria", "EVAL_RESULTS_DIR", "EVAL_RESULTS_SKIPPED", "RESULTS_FIELD_DOCS"]


def _results_features():
    import datasets

    text = datasets.Value("string")
    return datasets.Features({
        "image": datasets.Image(),
        "model": text,
        "evaluation": text,
        "metric": text,
        "judge": text,
        "judge_revision": text,
        "id": text,
        "prompt": text,
        "config": text,
        "score": datasets.Value("float64"),
        "subscores": datasets.List({"name": text, "value": datasets.Value("float64")}),
        "questions": datasets.List({"id": text, "group": text, "question": text, "criterion": text,
                                    "weight": datasets.Value("float64"), "score": datasets.Value("float64"),
                                    "reasoning": text}),
        "failure": text,
        "reasks": datasets.Value("int32"),
        "replies": datasets.List(text),
        "context": text,
    })


RESULTS_FIELD_DOCS = {
    "image": "the generated image",
    "model": "the run (the text-to-image model under evaluation)",
    "evaluation": "the evaluation of the run (a judge and its settings)",
    "metric": "the metric that scored the image: the benchmark's own, or another (vqascore, clip_score, dsg, viescore, "
              "tifa, a user's module) in a config of its own",
    "judge": "the judge, backend:model (a local model folder by its name)",
    "judge_revision": "the judge model's revision: a Hub commit, or sha256: of a local model folder's files",
    "id": "the benchmark row's id",
    "prompt": "the prompt the image was generated from",
    "config": "the benchmark config (dimension, category, track) of the row",
    "score": "the image's score on 0-1 (the metric's per-image reward); null when the judge failed",
    "subscores": "named partial scores (groups, axes)",
    "questions": "every judged question with its criterion, weight, score (null: failed) and the judge's reasoning",
    "failure": "why the image or some of its questions could not be scored; empty when it was",
    "reasks": "follow-up requests made because a reply did not parse or was incomplete",
    "replies": "every raw judge reply, in order",
    "context": "JSON: the row's explicit meaning, tags and other context shown in reports",
}


def _result_record(r: ImageResult, model: str, evaluation: str, judge: str, judge_revision: str | None,
                   metric: str) -> dict[str, Any]:
    """One Parquet row; a lone surrogate in a judge's text (Arrow takes only UTF-8) becomes U+FFFD."""
    text = printable
    return {
        "image": r.image, "model": model, "evaluation": evaluation, "metric": metric, "judge": judge,
        "judge_revision": judge_revision, "id": str(r.id),
        "prompt": r.prompt, "config": r.config, "score": r.score,
        "subscores": [{"name": k, "value": v} for k, v in r.subscores.items()],
        "questions": [{"id": q.id, "group": q.group, "question": q.question, "criterion": q.criterion,
                       "weight": q.weight, "score": q.score,
                       "reasoning": None if q.reasoning is None else text(q.reasoning)} for q in r.questions],
        "failure": r.failure and text(r.failure), "reasks": r.reasks, "replies": [text(t) for t in r.replies],
        "context": json_text(jsonable(r.context)),
    }


def export_results(runs: Sequence[Run | str | os.PathLike], out: str | os.PathLike, *, license: str,
                   evaluation: str | None = None, repo_id: str | None = None,
                   benchmark_datasets: dict[str, str] | None = None) -> Path:
    """Scored runs as a Hub dataset folder, new or empty (:func:`check_new_folder`): one config per benchmark (Parquet with the images
    embedded, one file per evaluation), and one per benchmark and other metric for the evaluations scored with
    another metric than the benchmark's own (``<benchmark>-<metric>``: ``t2i-reasonbench-dsg``), and a card,
    checked with ``huggingface_hub``'s parser;
    publish it with :func:`t2ireason.publish.publish` (``t2ireason push``).

    Beside them, ``eval_results/<model>/.eval_results/<benchmark>.yaml``: the entries a model
    repository holds for the Hub's evaluation results (:func:`eval_result_entries`), to copy into
    (or open a pull request on) each model's repository. A benchmark's Hub dataset is the run's
    data source when that is a Hub id, else ``benchmark_datasets[benchmark]`` (``"<id>"`` or
    ``"<id>@<commit>"``); a benchmark with neither gets no entries (:data:`EVAL_RESULTS_SKIPPED` in
    the folder says why)."""
    import datasets

    from .evaluation_metrics import metric_of, table_scorer
    from .judges.spec import judge_name

    if not license:
        raise RunError("pass the license of the images and judgements (an SPDX id such as cc-by-4.0)")
    license = check_license(license)  # what the card and .eval_results hold is checked before anything is written
    if repo_id is not None:
        check_repo_id(repo_id)
    datasets_given = {bench: check_dataset_ref(text, f"--benchmark-dataset {bench}=")
                      for bench, text in (benchmark_datasets or {}).items()}
    out = check_new_folder(out)
    features = _results_features()
    planned: list[tuple[str, Path, list[dict[str, Any]]]] = []
    entries = finished_evaluations(runs, evaluation)[0]
    eval_files, skipped = _eval_result_files(entries, datasets_given, repo_id)
    about: dict[str, dict[str, str]] = {}  # config -> its benchmark and metric, for the card
    for run, name, label in entries:  # every error before anything is written
        scores = run.scores(name)
        judge = scores.get("judge") or {}
        # a local model folder's path means nothing elsewhere: its name, and its files' hash
        model_name = judge_name(judge)
        revision = judge.get("model_sha256") or judge.get("revision")
        metric = metric_of(scores, run.bench)
        short = metric if metric == run.bench.metric else table_scorer(metric, run.bench).short_name
        records = [_result_record(r, run.name, name, f"{judge.get('backend')}:{model_name}", revision, short)
                   for r in run.results(name)]
        config = run.bench.name if metric == run.bench.metric else f"{run.bench.name}-{slug(short, 'metric')}"
        about[config] = {"pretty_name": run.bench.pretty_name, "metric": short}
        planned.append((config, inside(out, "data", config, f"{slug(label)}.parquet"), records))
    created = not out.exists()
    configs: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    try:
        for config, file, records in planned:
            file.parent.mkdir(parents=True, exist_ok=True)
            ds = datasets.Dataset.from_list(records, features=features)
            ds = datasets.Dataset(datasets.table.embed_table_storage(ds.data.table))  # the images travel with the rows
            ds.to_parquet(str(file))
            configs.setdefault(config, []).append(file.relative_to(out).as_posix())
            counts[config] = counts.get(config, 0) + len(records)
        _write_results_card(out, features, configs, counts, license=license, repo_id=repo_id, about=about)
        for path, text in eval_files:
            file = inside(out, *path)
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text, encoding="utf-8")
        if skipped:
            (out / EVAL_RESULTS_SKIPPED).write_text("\n".join(skipped) + "\n", encoding="utf-8")
    except BaseException:
        if created:  # no half-written folder left behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    return out


def check_new_folder(out: str | os.PathLike) -> Path:
    """``out`` as a Path when it is no folder yet or an empty one, else a RunError: an export is written whole
    into a folder of its own (a Parquet file an earlier export left in ``data/<config>/`` would join the
    config, whose card counts only the new rows)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RunError(f"output folder {out} is not empty: an export is written into a new folder, never over "
                       "another one; choose another or remove it")
    return out


def _write_results_card(out: Path, features: Any, configs: dict[str, list[str]], counts: dict[str, int], *,
                        license: str, repo_id: str | None, about: dict[str, dict[str, str]]) -> None:
    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    from .build import SPLIT, describe_features, render_template, size_category

    data = DatasetCardData(license=license, task_categories=["text-to-image"],
                           size_categories=[size_category(sum(counts.values()))],
                           tags=["t2i-reason", "evaluation-results", *configs],
                           pretty_name="t2i-reason evaluation results")
    data.configs = [{"config_name": b, "data_files": [{"split": SPLIT, "path": f"data/{b}/*.parquet"}]}
                    for b in configs]
    datasets.info.DatasetInfosDict({b: datasets.DatasetInfo(features=features) for b in configs}
                                   ).to_dataset_card_data(data)
    text = render_template("results_card.md.j2", card_data=data.to_yaml(), repo_id=repo_id or "<namespace>/<name>",
                           configs=[{"name": c, "rows": counts[c], **about[c]} for c in configs],
                           fields=describe_features(features, RESULTS_FIELD_DOCS), split=SPLIT)
    DatasetCard(text)  # the Hub's own parser must accept it
    (out / "README.md").write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------------------ .eval_results

EVAL_RESULTS_DIR = "eval_results"
EVAL_RESULTS_SKIPPED = "eval_results_skipped.txt"


def _hub_dataset(run: Run, given: dict[str, tuple[str, str | None]]) -> tuple[str | None, str | None]:
    """(Hub id, commit) of the dataset a run scored: ``given[benchmark]`` (checked by
    :func:`~t2ireason.hub_ids.check_dataset_ref`), else the run's data source when it is a Hub id
    (a folder or the shipped sample is not)."""
    bench = run.manifest["benchmark"]
    if bench in given:
        return given[bench]
    data = run.manifest.get("data")
    if not data or data.startswith(("./", "/", "~")) or os.path.exists(data) or data.count("/") != 1:
        return None, None
    revision = run.manifest.get("revision")
    return data, revision if revision and is_commit(revision) else None  # a branch name is no revision


def eval_result_entries(run: Run, evaluation: str, dataset_id: str, *, revision: str | None = None,
                        source_url: str | None = None) -> list[Any]:
    """The run's results as the Hub reads them in a model repository's ``.eval_results/`` (one
    ``huggingface_hub.EvalResultEntry`` per benchmark config, https://huggingface.co/docs/hub/eval-results):
    ``task_id`` is the config, as the dataset's ``eval.yaml`` names its tasks; ``value`` the metric's
    headline (0-100) over that config's images, aggregated as the evaluation was (its preset and
    options); ``notes`` name the metric, judge, preset and the images scored of the config's (an image
    never made counts as not scored: :func:`~t2ireason.results.coverage`). A benchmark with an ``all`` config
    gets its entry too when the run scored every config."""
    from huggingface_hub import EvalResultEntry

    from .judges.spec import judge_name, judge_setting
    from .results import ImageResult, coverage

    check_repo_id(dataset_id, "dataset_id")
    if revision is not None:
        check_revision(revision, "revision", commit=True)
    from .evaluation_metrics import metric_of

    bench = run.bench
    scores = run.scores(evaluation)
    if metric_of(scores, bench) != bench.metric:
        raise RunError(f"evaluation {evaluation!r} of {run.path} was scored with {metric_of(scores, bench)}, not "
                       f"{bench.name}'s own metric: .eval_results hold the benchmark's tasks as its metric scores them")
    settings = scores.get("settings") or {}
    options = judge_setting(bench, settings.get("preset"), settings.get("judge"), settings.get("judge_kwargs"),
                            settings.get("options")).options
    results = [r if isinstance(r, ImageResult) else ImageResult.from_dict(r) for r in run.results(evaluation)]
    groups: dict[str, list[ImageResult]] = {}
    for r in results:
        if r.config in bench.configs:
            groups.setdefault(r.config, []).append(r)
    if "all" in bench.configs and run.manifest.get("configs") in (None, ["all"]) and not run.manifest.get("limit"):
        groups["all"] = results
    judge = scores.get("judge") or {}
    model_name = judge_name(judge)
    date = (run.manifest.get("evaluations", {}).get(evaluation) or {}).get("finished")
    entries = []
    for config in [c for c in bench.configs if c in groups]:
        value = bench.aggregate(groups[config], **options).get(bench.metric)
        if value is None or value != value:  # nothing judged in this config: no figure to report
            continue
        rs = groups[config]
        notes = (f"{bench.metric} (t2i-reason {scores.get('t2ireason_version')}, preset {judge.get('preset')}), "
                 f"judge {judge.get('backend')}:{model_name}; {coverage(rs)['text']}")
        if run.manifest.get("limit"):
            notes += f"; the first {run.manifest['limit']} rows only"
        entries.append(EvalResultEntry(
            dataset_id=dataset_id, task_id=config, value=round(float(value), 4), dataset_revision=revision,
            date=date, source_url=source_url, source_name="t2i-reason results (images, judge replies)"
            if source_url else None, notes=notes))
    return entries


def _eval_result_files(entries: list[tuple[Run, str, str]], given: dict[str, tuple[str, str | None]],
                       repo_id: str | None
                       ) -> tuple[list[tuple[tuple[str, ...], str]], list[str]]:
    """(path parts under the export folder, YAML text) of every ``.eval_results`` file, and why any
    benchmark has none."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    unknown = sorted(set(given) - {run.manifest["benchmark"] for run, _, _ in entries})
    if unknown:
        raise RunError(f"--benchmark-dataset names {unknown}, which no run exported here scored")
    source = f"https://huggingface.co/datasets/{repo_id}" if repo_id else None
    files, skipped = [], []
    per_run = {}
    for run, name, _ in entries:
        per_run.setdefault(run.path, []).append(name)
    from .evaluation_metrics import metric_of

    for run, name, label in entries:
        bench = run.manifest["benchmark"]
        metric = metric_of(run.scores(name), run.bench)
        if metric != run.bench.metric:
            skipped.append(f"{label} ({bench}): scored with {metric}, not the benchmark's own metric; a model's "
                           ".eval_results hold the benchmark's tasks as its own metric scores them")
            continue
        dataset_id, revision = _hub_dataset(run, given)
        if dataset_id is None:
            skipped.append(f"{label} ({bench}): the run's rows do not come from a Hub dataset; name the one that "
                           f"holds them: --benchmark-dataset {bench}=<namespace>/<name>[@<commit>]")
            continue
        found = eval_result_entries(run, name, dataset_id, revision=revision, source_url=source)
        if not found:
            skipped.append(f"{label} ({bench}): no image of any config was scored")
            continue
        stem = bench if len(per_run[run.path]) == 1 else f"{bench}-{slug(name)}"
        text = yaml.safe_dump(eval_result_entries_to_yaml(found), sort_keys=False, allow_unicode=True)
        files.append(((EVAL_RESULTS_DIR, slug(run.name), ".eval_results", f"{stem}.yaml"), text))
    return files, skipped


def write_criteria(criteria: Criteria, rows: Sequence[dict[str, Any]], failures: Sequence[str | None],
                   out: str | Path, *, source: str = "", license: str = "other", overwrite: bool = False) -> dict[str, Any]:
    """``rows`` (one per prompt, failed ones with no criteria) as a dataset folder of ``criteria``'s
    benchmark: a Parquet file per config, the card, and ``build_report.json`` (what made them, each
    failure with its prompt). Returns the report."""
    from .build import REPORT_FILE, _prepare_out, _table, card_data, render_template, write_configs
    from .files import atomic_folder

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
