"""A run: everything one model's evaluation on one benchmark made, kept in one folder.

The path of a run: build the benchmark from its release (or take it from the
Hub, or the sample shipped with the package), generate the images, score them
with a judge through the benchmark's evaluate module, report. Each step
records what made it in ``run.json``, so a run can be resumed, re-scored with
another judge without regenerating, and compared with other runs::

    <run>/
      run.json                          the manifest (benchmark and revision, configs, generation,
                                        every evaluation's judge and parameters, package version)
      data/                             the built dataset, when the run was built from a release
      images/                           the images in the benchmark's official layout + metadata.parquet
      evaluations/<name>/results.jsonl  one scored image per line, appended as scoring goes
      evaluations/<name>/scores.json    the paper's aggregate, counts, the judge
      report/                           tables.md, tables.csv, plots/, report.html (see :func:`write_report`)

Nothing finished is ever recomputed: images already on disk are skipped, a
scored image is written to ``results.jsonl`` before the next chunk starts,
and every judge reply sits in the response cache as soon as it arrives.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .benchmarks import Benchmark, get_benchmark
from .files import atomic_write_json, jsonable
from .progress import progress_bar
from .results import ImageResult

__all__ = ["Run", "RunError", "write_report", "export_results", "RUN_FILE", "evaluation_name"]

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SCORES_FILE = "scores.json"
#: what identifies a run's rows: reopening a run with other values is an error, not a silent mix
_ROW_KEYS = ("benchmark", "data", "revision", "configs", "limit")


class RunError(ValueError):
    """A run folder cannot be used as asked; the message says what to do."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def evaluation_name(judge: Any, preset: str | None = None) -> str:
    """A folder name for an evaluation: the judge's backend and model (a folder's last part), and the preset."""
    if isinstance(judge, str):
        backend, _, model = judge.partition(":")
        model = model.split("@", 1)[0].rstrip("/")
        text = f"{backend}-{model.rsplit('/', 1)[-1]}"
    elif judge is not None and hasattr(judge, "identity"):
        ident = judge.identity()
        text = f"{ident.get('backend', 'judge')}-{str(ident.get('model', '')).rstrip('/').rsplit('/', 1)[-1]}"
    else:
        text = "judge"
    if preset:
        text += f"-{preset}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "judge"


class Run:
    """A run folder. ``Run.create`` starts one (or reopens it with the same rows), ``Run.open`` reopens one."""

    def __init__(self, path: str | os.PathLike, manifest: dict[str, Any]):
        self.path = Path(path)
        self.manifest = manifest

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike, benchmark: str, *, data: str | os.PathLike | None = None,
               configs: Sequence[str] | None = None, limit: int | None = None, revision: str | None = None,
               name: str | None = None) -> Run:
        """A new run in ``path``, or the run already there if it has the same rows (resume)."""
        bench = get_benchmark(benchmark)
        if bench.metric is None:
            raise RunError(f"{bench.name} has no judged metric to run; "
                           + ("use the mt2ie command" if bench.name == "mt2ie" else "build it with the build command"))
        unknown = [c for c in configs or () if c not in bench.configs]
        if unknown:
            raise RunError(f"unknown config(s) {unknown} of {bench.name}; known: {', '.join(bench.configs)}")
        path = Path(path)
        wanted = {"benchmark": bench.name, "data": _data_ref(data, path), "revision": revision,
                  "configs": list(configs) if configs else None, "limit": limit}
        if (path / RUN_FILE).is_file():
            run = cls.open(path)
            differs = {k: (run.manifest.get(k), v) for k, v in wanted.items() if run.manifest.get(k) != v}
            if differs:
                said = "; ".join(f"{k}: the run has {a!r}, asked {b!r}" for k, (a, b) in differs.items())
                raise RunError(f"{path} holds a run of other rows ({said}); use another folder for a new run")
            return run
        if path.exists() and not path.is_dir():
            raise RunError(f"{path} exists and is not a folder")
        manifest = {"name": name or path.resolve().name, **wanted, "t2ireason_version": __version__,
                    "created": _now(), "generation": None, "images": "images", "evaluations": {}}
        run = cls(path, manifest)
        run.save()
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> Run:
        path = Path(path)
        file = path / RUN_FILE
        if not file.is_file():
            raise RunError(f"{path} is not a run folder (no {RUN_FILE}); start one with `t2ireason run` "
                           "or `t2ireason evaluate --benchmark ...`")
        try:
            manifest = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise RunError(f"{file} is not valid JSON ({e})") from None
        for key in ("benchmark", "evaluations"):
            if key not in manifest:
                raise RunError(f"{file} lacks {key!r}: not a run manifest")
        return cls(path, manifest)

    def save(self) -> None:
        self.manifest["updated"] = _now()
        atomic_write_json(self.path / RUN_FILE, self.manifest)

    # -- what the run is about -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def bench(self) -> Benchmark:
        return get_benchmark(self.manifest["benchmark"])

    @property
    def images_dir(self) -> Path:
        return self._resolve(self.manifest.get("images") or "images")

    def _resolve(self, ref: str) -> Path:
        p = Path(ref)
        return p if p.is_absolute() else self.path / p

    def data_source(self) -> str | None:
        """Where the rows come from: a folder (resolved), a Hub id, or None for the shipped sample."""
        data = self.manifest.get("data")
        if data is None or not data.startswith("./"):
            return data
        return str(self._resolve(data))

    def rows(self) -> list[dict[str, Any]]:
        from .data import load_rows

        rows = load_rows(self.bench, self.data_source(), self.manifest.get("configs"),
                         revision=self.manifest.get("revision"))
        return rows[: self.manifest["limit"]] if self.manifest.get("limit") else rows

    # -- steps -----------------------------------------------------------------------------------

    def build(self, source: str | os.PathLike, *, license: str | None = None) -> Path:
        """Build the benchmark from its official release into ``<run>/data`` and read the rows from there."""
        from .build import build_dataset

        out = self.path / "data"
        report = build_dataset(self.bench, source, out, license=license, overwrite=True)
        self.manifest["data"] = "./data"
        self.manifest["built_from"] = str(Path(source).resolve())
        self.manifest["build"] = {"license": report.license, "configs": report.configs,
                                  "anomalies": report.anomaly_counts()}
        self.save()
        return out

    def generate(self, config: Any, *, prompts: dict[str, str] | None = None, progress: bool = True,
                 pipeline: Any = None) -> dict[str, int]:
        """Generate the run's images into ``<run>/images`` (resuming: finished images are kept).

        The generation configuration is recorded; continuing with another one is refused,
        since the images on disk would then come from two settings."""
        from .generation import generate, plan_jobs

        recorded = self.manifest.get("generation")
        wanted = jsonable({**config.to_dict(), "rewritten_prompts": bool(prompts)})
        if recorded and recorded != wanted:
            changed = sorted(k for k in wanted.keys() | recorded.keys() if wanted.get(k) != recorded.get(k))
            raise RunError(f"the images of {self.path} were made with another generation configuration "
                           f"(differs in {', '.join(changed)}); start a new run folder for another model or setting")
        jobs = plan_jobs(self.bench, self.rows(), images_per_prompt=config.images_per_prompt,
                         base_seed=config.seed, prompts=prompts)
        self.manifest["generation"] = wanted
        self.manifest["images"] = "images"
        self.save()
        return generate(jobs, config, self.images_dir, progress=progress, pipeline=pipeline)

    def use_images(self, folder: str | os.PathLike) -> None:
        """Score images made elsewhere (e.g. ``accelerate launch generators/generate.py --out ...``)."""
        folder = Path(folder)
        if not folder.is_dir():
            raise RunError(f"image folder not found: {folder}")
        self.manifest["images"] = _data_ref(folder, self.path)
        config = folder / "generation_config.json"
        if config.is_file() and not self.manifest.get("generation"):
            self.manifest["generation"] = json.loads(config.read_text(encoding="utf-8"))
        self.save()

    def image_items(self, rows: Sequence[dict[str, Any]] | None = None) -> list[tuple[str, dict[str, Any], Path]]:
        """``(key, row, path)`` for every image to score, in row order. The generation manifest
        (``metadata.parquet``) maps prompt ids to files; without one, each row's image is looked
        for where the benchmark's official layout puts it."""
        rows = self.rows() if rows is None else rows
        folder = self.images_dir
        by_id = {self.bench.row_id(r): r for r in rows}
        manifest = folder / "metadata.parquet"
        items: list[tuple[str, dict[str, Any], Path]] = []
        if manifest.is_file():
            import pyarrow.parquet as pq

            table = pq.read_table(manifest, columns=["file_name", "prompt_id", "sample"]).to_pylist()
            files: dict[str, list[tuple[int, str]]] = {}
            for rec in table:
                files.setdefault(str(rec["prompt_id"]), []).append((rec["sample"], rec["file_name"]))
            # a prompt is missing when the manifest lists no image for it, or lists one that is gone
            missing = [pid for pid in by_id
                       if pid not in files or not all((folder / f).is_file() for _, f in files[pid])]
            for pid, row in by_id.items():
                for _, file in sorted(files.get(pid, [])):
                    items.append((file, row, folder / file))
        else:
            missing = []
            for pid, row in by_id.items():
                file = self.bench.image_path(row)
                if (folder / file).is_file():
                    items.append((file, row, folder / file))
                else:
                    missing.append(pid)
        if missing:
            raise RunError(f"{len(missing)} of {len(rows)} prompts have no image in {folder} (ids {missing[:5]}"
                           f"{'...' if len(missing) > 5 else ''}); generate them first (the generate step resumes)")
        return items

    # -- evaluation ------------------------------------------------------------------------------

    def evaluations(self) -> list[str]:
        return list(self.manifest["evaluations"])

    def evaluation_dir(self, name: str) -> Path:
        return self.path / "evaluations" / name

    def evaluate(self, judge: Any = None, *, preset: str | None = None, judge_kwargs: dict | None = None,
                 options: dict[str, Any] | None = None, name: str | None = None, cache: str | bool = True,
                 chunk_size: int = 32, progress: bool = True) -> dict[str, Any]:
        """Score the run's images with the benchmark's metric module and write ``scores.json``.

        ``judge`` is a spec string or a judge object (default: the preset's); ``options`` reach the
        metric's ``compute`` (e.g. ``{"structured_output": True}``). Images are scored ``chunk_size``
        at a time and each chunk's results are appended to ``results.jsonl`` before the next starts,
        so an interrupted evaluation resumes where it stopped; re-scoring with another judge is a new
        evaluation (another ``name``) beside this one.
        """
        from .metric import load_metric

        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        bench = self.bench
        options = dict(options or {})
        name = name or evaluation_name(judge if judge is not None else bench.presets.get(preset or bench.default_preset,
                                                                                          {}).get("judge"), preset)
        settings = jsonable({"metric": bench.metric, "judge": judge if isinstance(judge, str) or judge is None
                             else evaluation_name(judge), "preset": preset, "judge_kwargs": judge_kwargs or {},
                             "options": options})
        recorded = self.manifest["evaluations"].get(name)
        if recorded and recorded.get("settings") != settings:
            raise RunError(f"evaluation {name!r} of {self.path} was made with other settings "
                           f"({recorded.get('settings')}); pass another name to keep both")
        items = self.image_items()
        folder = self.evaluation_dir(name)
        done = _read_results(folder / RESULTS_FILE)
        todo = [item for item in items if item[0] not in done]

        metric = load_metric(bench.metric, judge=judge, preset=preset, judge_kwargs=judge_kwargs, cache=cache,
                             progress=False)
        self.manifest["evaluations"][name] = {"settings": settings, "started": (recorded or {}).get("started", _now()),
                                              "finished": None}
        self.save()
        folder.mkdir(parents=True, exist_ok=True)
        with progress_bar(len(items), progress, desc=f"scoring ({name})", unit="img") as bar:
            bar.update(len(items) - len(todo))
            with open(folder / RESULTS_FILE, "a", encoding="utf-8") as out:
                for start in range(0, len(todo), chunk_size):
                    chunk = todo[start: start + chunk_size]
                    payload = metric.compute(predictions=[str(p) for _, _, p in chunk],
                                             references=[row for _, row, _ in chunk], **options)
                    for (key, _, _), result in zip(chunk, payload["per_image"]):
                        done[key] = result
                        out.write(json.dumps({"key": key, **jsonable(result)}, ensure_ascii=False) + "\n")
                    out.flush()
                    os.fsync(out.fileno())  # finished work is on disk before the next chunk starts
                    bar.update(len(chunk))
        results = [done[key] for key, _, _ in items]
        aggregate = metric.aggregate_results(results, **options)
        scores = {
            "benchmark": bench.name,
            "run": self.name,
            "evaluation": name,
            "aggregate": aggregate,
            "num_images": len(results),
            "num_failed": sum(r.get("score") is None for r in results),
            "num_reasks": sum(r.get("reasks", 0) for r in results),
            "judge": metric.judge_info(),
            "settings": settings,
            "t2ireason_version": __version__,
        }
        atomic_write_json(folder / SCORES_FILE, scores)
        self.manifest["evaluations"][name].update(finished=_now(), judge=jsonable(metric.judge_info()),
                                                  num_images=scores["num_images"], num_failed=scores["num_failed"])
        self.save()
        return jsonable(scores)

    def scores(self, name: str) -> dict[str, Any]:
        file = self.evaluation_dir(name) / SCORES_FILE
        if not file.is_file():
            known = ", ".join(self.evaluations()) or "none"
            raise RunError(f"{self.path} has no finished evaluation {name!r} (evaluations: {known}); "
                           "run the evaluate step (it resumes)")
        return json.loads(file.read_text(encoding="utf-8"))

    def results(self, name: str) -> list[ImageResult]:
        """The evaluation's scored images, in row order, with image paths made absolute."""
        done = _read_results(self.evaluation_dir(name) / RESULTS_FILE)
        order = [key for key, _, _ in self.image_items()]
        out = []
        for key in order:
            if key in done:
                r = ImageResult.from_dict(done[key])
                r.image = str(self.images_dir / key)
                out.append(r)
        return out


def _data_ref(data: str | os.PathLike | None, run_path: Path) -> str | None:
    """How the manifest names a data source: None (the shipped sample), a Hub id, a folder
    (``./relative`` when inside the run folder, so the run can be moved, else absolute)."""
    if data is None:
        return None
    p = Path(data)
    try:
        return "./" + p.resolve().relative_to(run_path.resolve()).as_posix()
    except ValueError:
        return str(p.resolve()) if p.exists() else str(data)  # a folder elsewhere, or a Hub id


def _read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Scored images by key. A torn last line (a crash mid-write) is dropped and cut off the file."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    good = 0
    with open(path, "rb") as f:
        for line in f:
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                break
            done[record.pop("key")] = record
            good += len(line)
    if good < path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return done


# ------------------------------------------------------------------------------------------------ reports

def _entries(runs: Sequence[Run | str | os.PathLike], evaluation: str | None) -> list[tuple[Run, str, str]]:
    """(run, evaluation, row label) for every evaluation to report, labels unique."""
    entries = []
    for r in runs:
        run = r if isinstance(r, Run) else Run.open(r)
        names = [evaluation] if evaluation else [n for n in run.evaluations()
                                                  if (run.evaluation_dir(n) / SCORES_FILE).is_file()]
        if not names:
            raise RunError(f"{run.path} has no finished evaluation to report; run the evaluate step first")
        for n in names:
            entries.append((run, n, run.name if len(names) == 1 else f"{run.name} · {n}"))
    labels = [e[2] for e in entries]
    if len(set(labels)) != len(labels):
        entries = [(run, n, f"{run.name} · {n}") for run, n, _ in entries]
    if len({e[2] for e in entries}) != len(entries):
        raise RunError("two runs share a name and an evaluation; rename one (the name in its run.json)")
    return entries


def _is_mt2ie_output(path: Path) -> bool:
    """An output folder of ``t2ireason mt2ie`` (its summary and runs), not a run folder."""
    return not (path / RUN_FILE).is_file() and (path / "summary.json").is_file() and (path / "runs").is_dir()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"


def write_report(runs: Sequence[Run | str | os.PathLike], out: str | os.PathLike, *, evaluation: str | None = None,
                 embed_images: bool = False, title: str | None = None) -> dict[str, Any]:
    """The paper-style report of one run or several side by side (and of MT2IE output folders:
    their rankings): ``tables.md`` and ``tables.csv``
    (the papers' layouts, 95% intervals where computed), ``plots/`` (per-dimension bars, radar,
    score distributions) and an HTML gallery per evaluation. Returns the paths, the Markdown of
    every table and of the headline table of each benchmark."""
    from .report.html import write_html_report
    from .report.plots import dimension_bars, dimension_radar, mt2ie_iterations, score_distribution
    from .report.tables import format_cell, side_by_side, to_csv, to_markdown

    out = Path(out)
    agents = [Path(r) for r in runs if not isinstance(r, Run) and _is_mt2ie_output(Path(r))]
    runs = [r for r in runs if isinstance(r, Run) or Path(r) not in agents]
    entries = _entries(runs, evaluation) if runs or not agents else []
    out.mkdir(parents=True, exist_ok=True)
    by_bench: dict[str, list[tuple[Run, str, str]]] = {}
    for e in entries:
        by_bench.setdefault(e[0].bench.name, []).append(e)

    markdown, headlines, csv_parts, plots, pages = [], [], [], [], []
    for bench_name, group in by_bench.items():
        bench = get_benchmark(bench_name)
        per_model = [bench.paper_tables(run.scores(n)["aggregate"], label) for run, n, label in group]
        tables = side_by_side(per_model)
        markdown.append(f"## {bench.pretty_name}\n\n{to_markdown(tables)}")
        headlines.append(to_markdown(tables[:1]))
        csv_parts.append(to_csv(tables))
        headline = tables[0]
        values = {label: {c: cell.value for c, cell in cells.items()} for label, cells in headline.rows.items()}
        intervals = {label: {c: (cell.low, cell.high) for c, cell in cells.items() if cell.low is not None}
                     for label, cells in headline.rows.items()}
        plots.append(dimension_bars(values, out / "plots" / f"{bench_name}_bars.png", title=headline.title,
                                    errors=intervals))
        if len(headline.columns) >= 3:
            plots.append(dimension_radar(values, out / "plots" / f"{bench_name}_radar.png", title=headline.title))
        results = {label: run.results(n) for run, n, label in group}
        plots.append(score_distribution({label: [r.score for r in rs] for label, rs in results.items()},
                                        out / "plots" / f"{bench_name}_scores.png",
                                        title=f"{bench.pretty_name}: per-image scores"))
        summary = {"columns": ["Model", *headline.columns],
                   "rows": [[label, *(format_cell(cells.get(c), decimals=headline.decimals) for c in headline.columns)]
                            for label, cells in headline.rows.items()]}
        for run, n, label in group:
            scores = run.scores(n)
            judge = scores.get("judge") or {}
            meta = {"benchmark": bench.pretty_name, "run": run.name, "evaluation": n,
                    "judge": f"{judge.get('backend')}:{judge.get('model')}", "preset": judge.get("preset"),
                    "images": scores["num_images"], "failed": scores["num_failed"], "re-asks": scores["num_reasks"],
                    "generator": (run.manifest.get("generation") or {}).get("model"),
                    "t2i-reason": scores.get("t2ireason_version")}
            filename = "report.html" if len(entries) == 1 else f"{_slug(label)}.html"
            pages.append(write_html_report(results[label], out, title=title or f"{bench.pretty_name}: {label}",
                                           filename=filename, meta=meta, summary=summary, embed_images=embed_images))
    for folder in agents:  # MT2IE writes its own benchmark: its output is a ranking, not a run
        table = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("table")
        if not table:
            raise RunError(f"{folder}: the MT2IE run has no ranking yet (no iteration was scored)")
        tables = get_benchmark("mt2ie").paper_tables(table, folder.name if len(agents) > 1 else "")
        markdown.append(f"## MT2IE: {folder.name}\n\n{to_markdown(tables)}")
        headlines.append(to_markdown(tables))
        csv_parts.append(to_csv(tables))
        per_iteration = {m: {int(i): v for i, v in its.items()} for m, its in table["per_iteration"].items()}
        plots.append(mt2ie_iterations(per_iteration, out / "plots" / f"mt2ie_{_slug(folder.name)}.png",
                                      title=f"MT2IE {table.get('mode', '')}"))
    text = "\n".join(markdown)
    (out / "tables.md").write_text(text, encoding="utf-8")
    (out / "tables.csv").write_text("".join(part if i == 0 else part.split("\n", 1)[1]
                                            for i, part in enumerate(csv_parts)), encoding="utf-8")
    return {"markdown": text, "headline": "\n".join(headlines), "tables_md": out / "tables.md",
            "tables_csv": out / "tables.csv", "plots": plots, "html": pages}


# ------------------------------------------------------------------------------------------------ Hub export

def _results_features():
    import datasets

    text = datasets.Value("string")
    return datasets.Features({
        "image": datasets.Image(),
        "model": text,
        "evaluation": text,
        "judge": text,
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
    "judge": "the judge, backend:model",
    "id": "the benchmark row's id",
    "prompt": "the prompt the image was generated from",
    "config": "the benchmark config (dimension, category, track) of the row",
    "score": "the image's score on the benchmark's scale; null when the judge failed",
    "subscores": "named partial scores (groups, axes)",
    "questions": "every judged question with its criterion, weight, score (null: failed) and the judge's reasoning",
    "failure": "why the image or some of its questions could not be scored; empty when it was",
    "reasks": "follow-up requests made because a reply did not parse or was incomplete",
    "replies": "every raw judge reply, in order",
    "context": "JSON: the row's explicit meaning, tags and other context shown in reports",
}


def _result_record(r: ImageResult, model: str, evaluation: str, judge: str) -> dict[str, Any]:
    return {
        "image": r.image, "model": model, "evaluation": evaluation, "judge": judge, "id": str(r.id),
        "prompt": r.prompt, "config": r.config, "score": r.score,
        "subscores": [{"name": k, "value": v} for k, v in r.subscores.items()],
        "questions": [{"id": q.id, "group": q.group, "question": q.question, "criterion": q.criterion,
                       "weight": q.weight, "score": q.score, "reasoning": q.reasoning} for q in r.questions],
        "failure": r.failure, "reasks": r.reasks, "replies": list(r.replies),
        "context": json.dumps(jsonable(r.context), ensure_ascii=False),
    }


def export_results(runs: Sequence[Run | str | os.PathLike], out: str | os.PathLike, *, license: str,
                   evaluation: str | None = None, repo_id: str | None = None) -> Path:
    """Scored runs as a Hub dataset folder: one config per benchmark (Parquet with the images
    embedded, one file per evaluation) and a card, checked with ``huggingface_hub``'s parser;
    publish it with :func:`t2ireason.build.publish` (``t2ireason push``)."""
    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    from .build import SPLIT, describe_features, render_template, size_category

    if not license:
        raise RunError("pass the license of the images and judgements (an SPDX id such as cc-by-4.0)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    features = _results_features()
    configs: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for run, name, label in _entries(runs, evaluation):
        judge = run.scores(name).get("judge") or {}
        records = [_result_record(r, run.name, name, f"{judge.get('backend')}:{judge.get('model')}")
                   for r in run.results(name)]
        bench = run.bench.name
        file = Path("data") / bench / f"{_slug(label)}.parquet"
        (out / file).parent.mkdir(parents=True, exist_ok=True)
        ds = datasets.Dataset.from_list(records, features=features)
        ds = datasets.Dataset(datasets.table.embed_table_storage(ds.data.table))  # the images travel with the rows
        ds.to_parquet(str(out / file))
        configs.setdefault(bench, []).append(file.as_posix())
        counts[bench] = counts.get(bench, 0) + len(records)
    data = DatasetCardData(license=license, task_categories=["text-to-image"],
                           size_categories=[size_category(sum(counts.values()))],
                           tags=["t2i-reason", "evaluation-results", *configs],
                           pretty_name="t2i-reason evaluation results")
    data.configs = [{"config_name": b, "data_files": [{"split": SPLIT, "path": f"data/{b}/*.parquet"}]}
                    for b in configs]
    datasets.info.DatasetInfosDict({b: datasets.DatasetInfo(features=features) for b in configs}
                                   ).to_dataset_card_data(data)
    text = render_template("results_card.md.j2", card_data=data.to_yaml(), repo_id=repo_id or "<namespace>/<name>",
                           configs=[{"name": b, "rows": counts[b], "metric": get_benchmark(b).metric,
                                     "pretty_name": get_benchmark(b).pretty_name} for b in configs],
                           fields=describe_features(features, RESULTS_FIELD_DOCS), split=SPLIT)
    DatasetCard(text)  # the Hub's own parser must accept it
    (out / "README.md").write_text(text, encoding="utf-8")
    return out
