"""A run: everything one model's evaluation on one benchmark made, kept in one folder.

The path of a run: build the benchmark from its release (or take it from the
Hub, or the sample shipped with the package), generate the images, score them
with a judge through the benchmark's module, report. Each step records what
made it in ``run.json``, so a run can be resumed, re-scored with another judge
without regenerating, and compared with other runs::

    <run>/
      run.json                          the manifest (benchmark and revision, configs, generation,
                                        every evaluation's judge and parameters, package version)
      rows.parquet                      the rows the run scores, as first read (resumes read only this)
      data/                             the built dataset, when the run was built from a release
      images/                           the images in the benchmark's official layout + metadata.parquet
      evaluations/<name>/results.jsonl  one scored image per line, appended as scoring goes
      evaluations/<name>/scores.json    the paper's aggregate, counts, the judge
      report/                           tables.md, .csv, .tex, plots/ (PNG, PDF), report.html (see :func:`write_report`)
      .locks/                           file locks: one writer per evaluation, and of run.json

Nothing finished is ever recomputed: images already on disk are skipped, a
scored image is written to ``results.jsonl`` before the next chunk starts,
and every judge reply sits in the response cache as soon as it arrives. An
evaluation has one writer at a time (a second process waits, then stops with
a clear error), and ``run.json`` is only ever changed read-modify-write under
its lock, so evaluations made by several processes are all recorded. Every
path made from data (an image's id, an evaluation's name) is checked to stay
inside its folder (:func:`t2ireason.files.inside`).

Scoring calls the benchmark's ``score`` chunk by chunk and its ``aggregate``
once at the end, with the judge setting the metric modules use
(:mod:`t2ireason.scoring`), so ``t2ireason evaluate`` needs neither ``evaluate``
nor torch when the judge is behind HTTP.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .benchmarks import get_benchmark
from .files import atomic_file, atomic_write_json, inside, json_text, jsonable, printable
from .progress import progress_bar
from .redaction import redacted

if TYPE_CHECKING:
    from .benchmarks import Benchmark
    from .results import ImageResult

__all__ = ["Run", "RunError", "write_report", "export_results", "RUN_FILE", "evaluation_name"]

RUN_FILE = "run.json"
ROWS_FILE = "rows.parquet"
RESULTS_FILE = "results.jsonl"
SCORES_FILE = "scores.json"
LOCKS = ".locks"
#: seconds a second process waits for an evaluation (or a generation) another one is running
LOCK_TIMEOUT = 10.0
#: seconds to wait for run.json, which is only ever held for a read-modify-write
MANIFEST_LOCK_TIMEOUT = 60.0
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


def _read_manifest(file: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunError(f"{file} is not valid JSON ({e})") from None
    for key in ("benchmark", "evaluations"):
        if key not in manifest:
            raise RunError(f"{file} lacks {key!r}: not a run manifest")
    return manifest


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
        if path.exists() and not path.is_dir():
            raise RunError(f"{path} exists and is not a folder")
        if not (path / RUN_FILE).is_file() and not (data is not None and Path(data) == path / "data"):
            from .data import check_data

            check_data(bench, data, configs, revision=revision)  # a mistyped one or another benchmark's: nothing created
        wanted = {"benchmark": bench.name, "data": _data_ref(data, path), "revision": revision,
                  "configs": list(configs) if configs else None, "limit": limit}
        path.mkdir(parents=True, exist_ok=True)
        run = cls(path, {})
        with run._manifest_lock():  # two processes starting the same run: one creates it, the other reopens it
            if (path / RUN_FILE).is_file():
                run.manifest = _read_manifest(path / RUN_FILE)
                differs = {k: (run.manifest.get(k), v) for k, v in wanted.items() if run.manifest.get(k) != v}
                if differs:
                    said = "; ".join(f"{k}: the run has {a!r}, asked {b!r}" for k, (a, b) in differs.items())
                    raise RunError(f"{path} holds a run of other rows ({said}); use another folder for a new run")
                return run
            run.manifest = {"name": name or path.resolve().name, **wanted, "t2ireason_version": __version__,
                            "created": _now(), "updated": _now(), "generation": None, "images": "images",
                            "evaluations": {}}
            atomic_write_json(path / RUN_FILE, run.manifest)
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> Run:
        path = Path(path)
        file = path / RUN_FILE
        if not file.is_file():
            raise RunError(f"{path} is not a run folder (no {RUN_FILE}); start one with `t2ireason run` "
                           "or `t2ireason evaluate --benchmark ...`")
        return cls(path, _read_manifest(file))

    # -- the manifest and the locks --------------------------------------------------------------

    @contextmanager
    def _lock(self, what: str, timeout: float, busy: str) -> Iterator[None]:
        """Hold ``<run>/.locks/<what>.lock`` (an OS file lock: released when the process ends,
        however it ends); after ``timeout`` seconds, a RunError saying ``busy``."""
        from filelock import FileLock, Timeout

        folder = self.path / LOCKS
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(folder / f"{_slug(what)}.lock"), timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise RunError(busy) from None
        try:
            yield
        finally:
            lock.release()

    def _manifest_lock(self):
        return self._lock("run.json", MANIFEST_LOCK_TIMEOUT,
                          f"{self.path / RUN_FILE} stayed locked by another process for {MANIFEST_LOCK_TIMEOUT:g} s; "
                          f"if no other t2ireason process uses this run, delete {self.path / LOCKS} and try again")

    def update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Change ``run.json`` read-modify-write under its lock: ``change(manifest)`` edits the
        manifest as it is on disk now (with what other processes recorded meanwhile), which is
        then written whole and becomes ``self.manifest``."""
        with self._manifest_lock():
            file = self.path / RUN_FILE
            manifest = _read_manifest(file) if file.is_file() else self.manifest
            change(manifest)
            manifest["updated"] = _now()
            atomic_write_json(file, manifest)
        self.manifest = manifest

    def reload(self) -> dict[str, Any]:
        """``run.json`` as it is on disk now (written whole, so read without the lock)."""
        self.manifest = _read_manifest(self.path / RUN_FILE)
        return self.manifest

    # -- what the run is about -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @functools.cached_property
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
        """The rows the run scores. Read from the source once (only as many as ``limit`` asks:
        configs are read one by one until there are enough), kept in ``rows.parquet`` in the
        row schema, and read from there afterwards: a resume touches no dataset."""
        file = self.path / ROWS_FILE
        if file.is_file():
            return _read_rows(self.bench, file)
        from .data import load_rows

        rows = load_rows(self.bench, self.data_source(), self.manifest.get("configs"),
                         revision=self.manifest.get("revision"), limit=self.manifest.get("limit"))
        return _write_rows(self.bench, rows, file)

    # -- steps -----------------------------------------------------------------------------------

    def build(self, source: str | os.PathLike, *, license: str | None = None) -> Path:
        """Build the benchmark from its official release into ``<run>/data`` and read the rows from there."""
        from .build import build_dataset

        out = self.path / "data"
        report = build_dataset(self.bench, source, out, license=license, overwrite=True)
        (self.path / ROWS_FILE).unlink(missing_ok=True)  # the rows are read again from the new build

        def record(m: dict[str, Any]) -> None:
            m["data"] = "./data"
            m["built_from"] = str(Path(source).resolve())
            m["build"] = {"license": report.license, "configs": report.configs, "anomalies": report.anomaly_counts()}

        self.update(record)
        return out

    def generate(self, config: Any, *, prompts: dict[str, str] | None = None, progress: bool = True,
                 pipeline: Any = None, lock_timeout: float = LOCK_TIMEOUT) -> dict[str, int]:
        """Generate the run's images into ``<run>/images`` (resuming: finished images are kept).

        The generation configuration is recorded; continuing with another one is refused,
        since the images on disk would then come from two settings."""
        from .generation import check_job_paths, generate, plan_jobs

        busy = (f"the images of {self.path} are being generated by another process (waited {lock_timeout:g} s); "
                "let it finish: this step then has nothing left to do")
        with self._lock("generate", lock_timeout, busy):
            wanted = jsonable({**config.to_dict(), "rewritten_prompts": bool(prompts)})
            recorded = self.reload().get("generation")
            if recorded and recorded != wanted:
                changed = sorted(k for k in wanted.keys() | recorded.keys() if wanted.get(k) != recorded.get(k))
                raise RunError(f"the images of {self.path} were made with another generation configuration "
                               f"(differs in {', '.join(changed)}); start a new run folder for another model or setting")
            jobs = plan_jobs(self.bench, self.rows(), images_per_prompt=config.images_per_prompt,
                             base_seed=config.seed, prompts=prompts)
            check_job_paths(jobs, self.path / "images")
            self.update(lambda m: m.update(generation=wanted, images="images"))
            return generate(jobs, config, self.images_dir, progress=progress, pipeline=pipeline)

    def use_images(self, folder: str | os.PathLike) -> None:
        """Score images made elsewhere (e.g. ``accelerate launch generators/generate.py --out ...``)."""
        folder = Path(folder)
        if not folder.is_dir():
            raise RunError(f"image folder not found: {folder}")
        config = folder / "generation_config.json"

        def record(m: dict[str, Any]) -> None:
            m["images"] = _data_ref(folder, self.path)
            if config.is_file() and not m.get("generation"):
                m["generation"] = json.loads(config.read_text(encoding="utf-8"))

        self.update(record)

    def image_items(self, rows: Sequence[dict[str, Any]] | None = None) -> list[tuple[str, dict[str, Any], Path]]:
        """``(key, row, path)`` for every image to score, in row order. The generation manifest
        (``metadata.parquet``) maps prompt ids to files; without one, each row's image is looked
        for where the benchmark's official layout puts it. A file name that would leave the
        image folder (made from a hostile id) is refused."""
        rows = self.rows() if rows is None else rows
        folder, bench = self.images_dir, self.bench
        by_id = {bench.row_id(r): r for r in rows}
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
                       if pid not in files or not all(_within(folder, f).is_file() for _, f in files[pid])]
            for pid, row in by_id.items():
                for _, file in sorted(files.get(pid, [])):
                    items.append((file, row, _within(folder, file)))
        else:
            missing = []
            for pid, row in by_id.items():
                file = bench.image_path(row)
                path = _within(folder, file)
                if path.is_file():
                    items.append((file, row, path))
                else:
                    missing.append(pid)
        if missing:
            raise RunError(f"{len(missing)} of {len(rows)} prompts have no image in {folder} (ids {missing[:5]}"
                           f"{'...' if len(missing) > 5 else ''}); generate them first (the generate step resumes)")
        return items

    # -- evaluation ------------------------------------------------------------------------------

    def evaluations(self) -> list[str]:
        """The run's evaluations: those ``run.json`` records, then any other folder with scores
        (one a run made before the manifest was written under a lock could have lost)."""
        names = list(self.manifest["evaluations"])
        root = self.path / "evaluations"
        if root.is_dir():
            names += sorted(p.name for p in root.iterdir()
                            if p.is_dir() and p.name not in names and (p / SCORES_FILE).is_file())
        return names

    def evaluation_dir(self, name: str) -> Path:
        """``<run>/evaluations/<name>``; a name that would leave that folder is refused."""
        folder = inside(self.path / "evaluations", name)
        if not str(name).strip() or str(name).startswith("."):
            raise RunError(f"an evaluation name is a folder name, not empty and not starting with '.'; got {name!r}")
        return folder

    def evaluate(self, judge: Any = None, *, preset: str | None = None, judge_kwargs: dict | None = None,
                 options: dict[str, Any] | None = None, name: str | None = None, cache: str | bool = True,
                 chunk_size: int = 32, progress: bool = True, retry_failed: bool = False,
                 lock_timeout: float = LOCK_TIMEOUT) -> dict[str, Any]:
        """Score the run's images with the benchmark's judge and write ``scores.json``.

        ``judge`` is a spec string or a judge object (default: the preset's); ``options`` reach the
        benchmark's ``score`` and ``aggregate`` (e.g. ``{"structured_output": True}``), over the
        preset's, exactly as the metric module's ``compute`` takes them. Everything is checked
        before anything is created. Images are scored ``chunk_size`` at a time and each chunk's
        results are appended to ``results.jsonl`` before the next starts, so an interrupted
        evaluation resumes where it stopped; the paper's aggregate is computed once, at the end.
        ``retry_failed`` scores again the images whose failure was transient (the judge was
        unreachable: ``ImageResult.retryable``). Re-scoring with another judge is a new
        evaluation (another ``name``) beside this one.

        One process at a time scores an evaluation: another waits ``lock_timeout`` seconds, then
        stops with a RunError. A :class:`~t2ireason.judges.JudgeUnavailable` during scoring ends
        the evaluation with the cause; the chunks finished before it are kept.

        Returns the scores (as ``scores.json``) with ``retried``: how many failed images were
        scored again.
        """
        from .scoring import check_setting, judge_setting

        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        bench = self.bench
        setting = judge_setting(bench, preset, judge, judge_kwargs, options)
        check_setting(bench, setting)
        name = name or evaluation_name(setting.judge, preset)
        self.evaluation_dir(name)  # a name that leaves the run is refused before anything is written
        settings = redacted(jsonable({"metric": bench.metric, "judge": judge if isinstance(judge, str) or judge is None
                                      else evaluation_name(judge), "preset": preset, "judge_kwargs": judge_kwargs or {},
                                      "options": dict(options or {})}))  # recorded: never an API key
        busy = (f"evaluation {name!r} of {self.path} is being scored by another process (waited {lock_timeout:g} s); "
                "let it finish (the same command then has nothing left to do), or pass another --name to score "
                "beside it")
        with self._lock(f"evaluation-{name}", lock_timeout, busy):
            return self._evaluate(name, setting, settings, cache=cache, chunk_size=chunk_size, progress=progress,
                                  retry_failed=retry_failed)

    def _evaluate(self, name: str, setting: Any, settings: dict[str, Any], *, cache: str | bool, chunk_size: int,
                  progress: bool, retry_failed: bool) -> dict[str, Any]:
        from .results import ImageResult
        from .scoring import judge_record, report_preset_settings

        bench = self.bench
        recorded = self.reload()["evaluations"].get(name)  # as left by whichever process scored it last
        if recorded and recorded.get("settings") != settings:
            raise RunError(f"evaluation {name!r} of {self.path} was made with other settings "
                           f"({recorded.get('settings')}); pass another name to keep both")
        items = self.image_items()
        folder = self.evaluation_dir(name)
        results_file, scores_file = folder / RESULTS_FILE, folder / SCORES_FILE
        done, lines = _read_results(results_file)
        todo = [item for item in items
                if item[0] not in done or (retry_failed and _retryable(done[item[0]]))]
        retried = sum(1 for key, _, _ in todo if key in done)
        if not todo and recorded and recorded.get("finished") and scores_file.is_file():
            scores = json.loads(scores_file.read_text(encoding="utf-8"))
            if scores.get("num_images") == len(items):  # nothing new since it was written
                return {**scores, "retried": 0}

        judge = None
        info = (recorded or {}).get("judge")
        if todo or not info:
            from .judges import load_judge, preflight_spec

            report_preset_settings(setting)
            judge = load_judge(setting.judge, cache=cache, **setting.judge_kwargs)
            if todo:  # one probe (an image with a JSON schema), rather than every image's request failing
                try:
                    preflight_spec(setting.judge, setting.judge_kwargs, judge=judge, structured=True)
                except Exception:
                    judge.close()
                    raise
            info = self._judge_info(judge_record(judge, setting.preset, setting.preset_settings), info)

        def start(m: dict[str, Any]) -> None:
            entry = m["evaluations"].setdefault(name, {})
            entry.update(settings=settings, judge=info, started=entry.get("started") or _now(), finished=None)

        self.update(start)
        try:
            if todo:
                self._score(name, judge, setting.options, todo, total=len(items), done=done,
                            chunk_size=chunk_size, progress=progress)
                lines += len(todo)
        finally:
            if judge is not None and isinstance(setting.judge, str):  # ours to close, not a caller's object
                close = getattr(judge, "close", None)
                if close is not None:
                    close()
        results = [done[key] for key, _, _ in items]
        if lines > len(done):  # retried images left their old lines: keep one line per image
            _rewrite_results(results_file, [(key, done[key]) for key in done])
        aggregate = bench.aggregate([ImageResult.from_dict(r) for r in results], **setting.options)
        scores = {
            "benchmark": bench.name,
            "run": self.name,
            "evaluation": name,
            "aggregate": aggregate,
            "num_images": len(results),
            "num_failed": sum(r.get("score") is None for r in results),
            "num_retryable": sum(_retryable(r) for r in results),
            "num_reasks": sum(r.get("reasks", 0) for r in results),
            "judge": info,
            "settings": settings,
            "t2ireason_version": __version__,
        }
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(scores_file, scores)
        self.update(lambda m: m["evaluations"][name].update(
            finished=_now(), judge=info, num_images=scores["num_images"], num_failed=scores["num_failed"],
            num_retryable=scores["num_retryable"]))
        return {**jsonable(scores), "retried": retried}

    def _judge_info(self, info: dict[str, Any], recorded: dict[str, Any] | None) -> dict[str, Any]:
        """The judge's record, with ``model_sha256`` for a local model folder: read once per
        evaluation (taken from the record when the model is the same folder)."""
        from .scoring import model_fingerprint

        model = str(info.get("model", ""))
        if info.get("backend") != "openai" and Path(model).expanduser().is_dir():  # an API model is a name
            same = recorded and recorded.get("model") == model and recorded.get("model_sha256")
            info["model_sha256"] = recorded["model_sha256"] if same else model_fingerprint(model)
        return jsonable(info)

    def _score(self, name: str, judge: Any, options: dict[str, Any], todo: list, *, total: int,
               done: dict[str, dict[str, Any]], chunk_size: int, progress: bool) -> None:
        """Score ``todo`` chunk by chunk, each chunk on disk before the next starts."""
        from .judges import JudgeUnavailable

        folder = self.evaluation_dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        bench = self.bench
        with progress_bar(total, progress, desc=f"scoring ({name})", unit="img") as bar:
            bar.update(total - len(todo))
            with open(folder / RESULTS_FILE, "a", encoding="utf-8") as out:
                for start in range(0, len(todo), chunk_size):
                    chunk = todo[start: start + chunk_size]
                    try:
                        results = bench.score([row for _, row, _ in chunk], [str(p) for _, _, p in chunk], judge,
                                              progress=False, **options)
                    except JudgeUnavailable as e:
                        kept = sum(1 for key in done if not _retryable(done[key]))
                        raise type(e)(f"{e} (evaluation {name!r} of {self.path}: {kept} of {total} images "
                                               "scored and kept; run the same command again to go on)") from e
                    for (key, _, _), result in zip(chunk, results):
                        done[key] = jsonable(result.to_dict())
                        out.write(json_text({"key": key, **done[key]}) + "\n")
                    out.flush()
                    os.fsync(out.fileno())  # finished work is on disk before the next chunk starts
                    bar.update(len(chunk))

    def scores(self, name: str) -> dict[str, Any]:
        file = self.evaluation_dir(name) / SCORES_FILE
        if not file.is_file():
            known = ", ".join(self.evaluations()) or "none"
            raise RunError(f"{self.path} has no finished evaluation {name!r} (evaluations: {known}); "
                           "run the evaluate step (it resumes)")
        return json.loads(file.read_text(encoding="utf-8"))

    def results(self, name: str) -> list[ImageResult]:
        """The evaluation's scored images, in row order, with image paths made absolute."""
        from .results import ImageResult

        done, _ = _read_results(self.evaluation_dir(name) / RESULTS_FILE)
        order = [key for key, _, _ in self.image_items()]
        out = []
        for key in order:
            if key in done:
                r = ImageResult.from_dict(done[key])
                r.image = str(_within(self.images_dir, key))
                out.append(r)
        return out


def _within(folder: Path, name: str) -> Path:
    """``folder / name`` for reading an image whose name comes from data: a name that climbs out
    (absolute, or with ``..``) gets :func:`~t2ireason.files.inside`'s full check and refusal; the
    others cost no system call (a user's own symlinks inside the folder are followed, as they
    were meant to be). Writing always goes through ``inside``."""
    parts = Path(name).parts
    if not parts or Path(name).is_absolute() or ".." in parts:
        return inside(folder, name)
    return folder / name


def _retryable(record: dict[str, Any]) -> bool:
    """A failed image whose failure was the judge's infrastructure, not its reply."""
    return record.get("score") is None and bool(record.get("retryable"))


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


def _write_rows(bench: Benchmark, rows: list[dict[str, Any]], file: Path) -> list[dict[str, Any]]:
    """``rows`` in the benchmark's row schema (extra columns dropped, each value as the Hub
    dataset would hold it), saved to ``file``; returns them as read back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = bench.features
    for i, row in enumerate(rows):
        missing = [f for f in features if f not in row]
        if missing:
            raise RunError(f"row {i} ({bench.row_id(row) if 'id' in row else '?'}) lacks field(s) {missing}: "
                           f"is it a {bench.name} row? expected the fields {list(features)}")
    try:
        columns = features.encode_batch({k: [row[k] for row in rows] for k in features})
        table = pa.Table.from_pydict(columns, schema=features.arrow_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise RunError(f"the rows of {bench.name} do not match its schema: {e}") from None
    with atomic_file(file) as f:
        pq.write_table(table, f)
    return _decoded(features, table.to_pylist())


def _read_rows(bench: Benchmark, file: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return _decoded(bench.features, pq.read_table(file).to_pylist())


def _decoded(features: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from datasets.features.features import require_decoding

    if any(require_decoding(f) for f in features.values()):
        return [features.decode_example(r) for r in rows]
    return rows


def _read_results(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """Scored images by key (the last line of a key wins: a retried image), and the number of
    lines. A torn last line (a crash mid-write) is dropped and cut off the file."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done, 0
    good = lines = 0
    with open(path, "rb") as f:
        for line in f:
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                break
            done[record.pop("key")] = record
            good += len(line)
            lines += 1
    if good < path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return done, lines


def _rewrite_results(path: Path, records: list[tuple[str, dict[str, Any]]]) -> None:
    with atomic_file(path) as f:
        for key, record in records:
            f.write((json_text({"key": key, **record}) + "\n").encode("utf-8"))


# ------------------------------------------------------------------------------------------------ reports

def _entries(runs: Sequence[Run | str | os.PathLike], evaluation: str | None
             ) -> tuple[list[tuple[Run, str, str]], list[tuple[Run, str]]]:
    """(run, evaluation, row label) for every finished evaluation to report, labels unique within
    each benchmark (each benchmark is its own table, config and folder); and (run, evaluation)
    for those not finished yet, which are left out (and said so)."""
    entries, unfinished = [], []
    for r in runs:
        run = r if isinstance(r, Run) else Run.open(r)
        if evaluation:
            run.scores(evaluation)  # a clear error when it is not finished
            names = [evaluation]
        else:
            every = run.evaluations()
            names = [n for n in every if (run.evaluation_dir(n) / SCORES_FILE).is_file()]
            unfinished += [(run, n) for n in every if n not in names]
        if not names:
            raise RunError(f"{run.path} has no finished evaluation to report; run the evaluate step first")
        for n in names:
            entries.append((run, n, run.name if len(names) == 1 else f"{run.name} · {n}"))

    def clash(es: list[tuple[Run, str, str]]) -> str | None:
        seen: set[tuple[str, str]] = set()
        for run, _, label in es:
            key = (run.manifest["benchmark"], label)
            if key in seen:
                return run.manifest["benchmark"]
            seen.add(key)
        return None

    if clash(entries):
        entries = [(run, n, f"{run.name} · {n}") for run, n, _ in entries]
    bench = clash(entries)
    if bench:
        raise RunError(f"two runs of {bench} share a name and an evaluation; rename one (the name in its run.json)")
    return entries, unfinished


def _is_mt2ie_output(path: Path) -> bool:
    """An output folder of ``t2ireason mt2ie`` (its summary and runs), not a run folder."""
    return not (path / RUN_FILE).is_file() and (path / "summary.json").is_file() and (path / "runs").is_dir()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"


def _run_row(run: Run, evaluation: str, label: str) -> dict[str, Any]:
    """What made one model's results, as plain values for the report (local paths reduced to names)."""
    from .scoring import portable_model

    scores = run.scores(evaluation)
    judge = scores.get("judge") or {}
    judge_model = judge.get("model_name") or (portable_model(str(judge["model"]))[0] if judge.get("model") else None)
    generator = (run.manifest.get("generation") or {}).get("model")
    return {"model": label, "evaluation": evaluation,
            "judge": f"{judge.get('backend')}:{judge_model}" if judge_model else judge.get("backend"),
            "preset": judge.get("preset"),
            "generator": portable_model(str(generator))[0] if generator else None,
            "images": scores["num_images"], "failed": scores["num_failed"], "re-asks": scores["num_reasks"],
            "t2i-reason": scores.get("t2ireason_version")}


def write_report(runs: Sequence[Run | str | os.PathLike], out: str | os.PathLike, *, evaluation: str | None = None,
                 embed_images: bool = False, title: str | None = None) -> dict[str, Any]:
    """The paper-style report of one run or several side by side (and of MT2IE output folders:
    their rankings): ``tables.md``, ``tables.csv`` and ``tables.tex`` (the papers' layouts, 95%
    intervals where computed), ``plots/`` (every table as bars and, over three or more categories,
    a radar; the per-image score distribution; PNG and PDF each) and one ``report.html`` holding
    every table and figure and the gallery of each prompt's images across the models. Returns the
    paths, the Markdown of every table and of the headline table of each benchmark."""
    from .report.html import Section, write_html_report
    from .report.plots import layout, mt2ie_iterations, score_distribution, table_bars, table_radar
    from .report.tables import side_by_side, to_csv, to_latex, to_markdown

    out = Path(out)
    agents = [Path(r) for r in runs if not isinstance(r, Run) and _is_mt2ie_output(Path(r))]
    runs = [r for r in runs if isinstance(r, Run) or Path(r) not in agents]
    entries, unfinished = _entries(runs, evaluation) if runs or not agents else ([], [])
    out.mkdir(parents=True, exist_ok=True)
    by_bench: dict[str, list[tuple[Run, str, str]]] = {}
    for e in entries:
        by_bench.setdefault(e[0].bench.name, []).append(e)

    markdown, headlines, csv_parts, every_table, plots, sections = [], [], [], [], [], []
    for bench_name, group in by_bench.items():
        bench = get_benchmark(bench_name)
        per_model = [bench.paper_tables(run.scores(n)["aggregate"], label) for run, n, label in group]
        tables = side_by_side(per_model)
        markdown.append(f"## {bench.pretty_name}\n\n{to_markdown(tables)}")
        headlines.append(to_markdown(tables[:1]))
        csv_parts.append(to_csv(tables))
        every_table += tables
        figures = []
        for i, table in enumerate(tables, 1):
            axes = layout(table).axes
            if not table.rows or not axes:  # nothing judged in it (every image failed): no figure to draw
                continue
            figures += table_bars(table, out / "plots" / f"{bench_name}_table{i}_bars")
            if len(axes) >= 3:
                figures += table_radar(table, out / "plots" / f"{bench_name}_table{i}_radar")
        results = {label: run.results(n) for run, n, label in group}
        figures += score_distribution({label: [r.score for r in rs] for label, rs in results.items()},
                                      out / "plots" / f"{bench_name}_scores",
                                      title=f"{bench.pretty_name}: per-image scores")
        plots += figures
        sections.append(Section(bench.pretty_name, results, tables, [f for f in figures if f.suffix == ".png"],
                                [_run_row(run, n, label) for run, n, label in group]))
    for folder in agents:  # MT2IE writes its own benchmark: its output is a ranking, not a run
        table = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("table")
        if not table:
            raise RunError(f"{folder}: the MT2IE run has no ranking yet (no iteration was scored)")
        tables = get_benchmark("mt2ie").paper_tables(table, folder.name if len(agents) > 1 else "")
        markdown.append(f"## MT2IE: {folder.name}\n\n{to_markdown(tables)}")
        headlines.append(to_markdown(tables))
        csv_parts.append(to_csv(tables))
        every_table += tables
        per_iteration = {m: {int(i): v for i, v in its.items()} for m, its in table["per_iteration"].items()}
        figures = mt2ie_iterations(per_iteration, out / "plots" / f"mt2ie_{_slug(folder.name)}",
                                   title=f"MT2IE {table.get('mode', '')}")
        plots += figures
        sections.append(Section(f"MT2IE: {folder.name}", {}, tables, [f for f in figures if f.suffix == ".png"]))
    names = [s.title for s in sections]
    from .study.agreement import agreement_sections

    for heading, tables in agreement_sections(dict.fromkeys(run.path for run, _, _ in entries)):  # human studies
        markdown.append(f"## {heading}\n\n{to_markdown(tables)}")
        csv_parts.append(to_csv(tables))
        every_table += tables
        sections.append(Section(heading, {}, tables))
    text = "\n".join(markdown)
    (out / "tables.md").write_text(text, encoding="utf-8")
    (out / "tables.csv").write_text("".join(part if i == 0 else part.split("\n", 1)[1]
                                            for i, part in enumerate(csv_parts)), encoding="utf-8")
    (out / "tables.tex").write_text(to_latex(every_table), encoding="utf-8")
    labels = list(dict.fromkeys(label for _, _, label in entries))
    page = write_html_report(sections, out, title=title or (f"{', '.join(names)}: {', '.join(labels)}" if labels
                                                            else ", ".join(names)),
                             embed_images=embed_images)
    return {"markdown": text, "headline": "\n".join(headlines), "tables_md": out / "tables.md",
            "tables_csv": out / "tables.csv", "tables_tex": out / "tables.tex", "plots": plots, "html": [page],
            "unfinished": [f"{run.name} · {n}" for run, n in unfinished]}


# ------------------------------------------------------------------------------------------------ Hub export

def _results_features():
    import datasets

    text = datasets.Value("string")
    return datasets.Features({
        "image": datasets.Image(),
        "model": text,
        "evaluation": text,
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


def _result_record(r: ImageResult, model: str, evaluation: str, judge: str, judge_revision: str | None
                   ) -> dict[str, Any]:
    """One Parquet row; a lone surrogate in a judge's text (Arrow takes only UTF-8) becomes U+FFFD."""
    text = printable
    return {
        "image": r.image, "model": model, "evaluation": evaluation, "judge": judge,
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
    """Scored runs as a Hub dataset folder: one config per benchmark (Parquet with the images
    embedded, one file per evaluation) and a card, checked with ``huggingface_hub``'s parser;
    publish it with :func:`t2ireason.build.publish` (``t2ireason push``).

    Beside them, ``eval_results/<model>/.eval_results/<benchmark>.yaml``: the entries a model
    repository holds for the Hub's evaluation results (:func:`eval_result_entries`), to copy into
    (or open a pull request on) each model's repository. A benchmark's Hub dataset is the run's
    data source when that is a Hub id, else ``benchmark_datasets[benchmark]`` (``"<id>"`` or
    ``"<id>@<commit>"``); a benchmark with neither gets no entries (:data:`EVAL_RESULTS_SKIPPED` in
    the folder says why)."""
    import datasets

    from .scoring import portable_model

    if not license:
        raise RunError("pass the license of the images and judgements (an SPDX id such as cc-by-4.0)")
    out = Path(out)
    features = _results_features()
    planned: list[tuple[str, Path, list[dict[str, Any]]]] = []
    entries = _entries(runs, evaluation)[0]
    eval_files, skipped = _eval_result_files(entries, benchmark_datasets or {}, repo_id)
    for run, name, label in entries:  # every error before anything is written
        judge = run.scores(name).get("judge") or {}
        # a local model folder's path means nothing elsewhere: its name, and its files' hash
        model_name = judge.get("model_name") or portable_model(str(judge.get("model")))[0]
        revision = judge.get("model_sha256") or judge.get("revision")
        records = [_result_record(r, run.name, name, f"{judge.get('backend')}:{model_name}", revision)
                   for r in run.results(name)]
        bench = run.bench.name
        planned.append((bench, inside(out, "data", bench, f"{_slug(label)}.parquet"), records))
    created = not out.exists()
    configs: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    try:
        for bench, file, records in planned:
            file.parent.mkdir(parents=True, exist_ok=True)
            ds = datasets.Dataset.from_list(records, features=features)
            ds = datasets.Dataset(datasets.table.embed_table_storage(ds.data.table))  # the images travel with the rows
            ds.to_parquet(str(file))
            configs.setdefault(bench, []).append(file.relative_to(out).as_posix())
            counts[bench] = counts.get(bench, 0) + len(records)
        _write_results_card(out, features, configs, counts, license=license, repo_id=repo_id)
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


def _write_results_card(out: Path, features: Any, configs: dict[str, list[str]], counts: dict[str, int], *,
                        license: str, repo_id: str | None) -> None:
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
                           configs=[{"name": b, "rows": counts[b], "metric": get_benchmark(b).metric,
                                     "pretty_name": get_benchmark(b).pretty_name} for b in configs],
                           fields=describe_features(features, RESULTS_FIELD_DOCS), split=SPLIT)
    DatasetCard(text)  # the Hub's own parser must accept it
    (out / "README.md").write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------------------ Hub eval results

EVAL_RESULTS_DIR = "eval_results"
EVAL_RESULTS_SKIPPED = "eval_results_skipped.txt"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _hub_dataset(run: Run, given: dict[str, str]) -> tuple[str | None, str | None]:
    """(Hub id, commit) of the dataset a run scored: ``given[benchmark]`` (``id`` or ``id@commit``),
    else the run's data source when it is a Hub id (a folder or the shipped sample is not)."""
    bench = run.manifest["benchmark"]
    if bench in given:
        repo, _, revision = given[bench].partition("@")
        return repo, revision or None
    data = run.manifest.get("data")
    if not data or data.startswith(("./", "/", "~")) or os.path.exists(data) or data.count("/") != 1:
        return None, None
    revision = run.manifest.get("revision")
    return data, revision if revision and _COMMIT.match(revision) else None  # a branch name is no revision


def eval_result_entries(run: Run, evaluation: str, dataset_id: str, *, revision: str | None = None,
                        source_url: str | None = None) -> list[Any]:
    """The run's results as the Hub reads them in a model repository's ``.eval_results/`` (one
    ``huggingface_hub.EvalResultEntry`` per benchmark config, https://huggingface.co/docs/hub/eval-results):
    ``task_id`` is the config, as the dataset's ``eval.yaml`` names its tasks; ``value`` the metric's
    headline (0-100) over that config's images, aggregated as the evaluation was (its preset and
    options); ``notes`` name the metric, judge, preset and counts. A benchmark with an ``all`` config
    gets its entry too when the run scored every config."""
    from huggingface_hub import EvalResultEntry

    from .results import ImageResult
    from .scoring import judge_setting, portable_model

    bench = run.bench
    scores = run.scores(evaluation)
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
    judge_name = judge.get("model_name") or (portable_model(str(judge["model"]))[0] if judge.get("model") else None)
    date = (run.manifest.get("evaluations", {}).get(evaluation) or {}).get("finished")
    entries = []
    for config in [c for c in bench.configs if c in groups]:
        value = bench.aggregate(groups[config], **options).get(bench.metric)
        if value is None or value != value:  # nothing judged in this config: no figure to report
            continue
        rs = groups[config]
        notes = (f"{bench.metric} (t2i-reason {scores.get('t2ireason_version')}, preset {judge.get('preset')}), "
                 f"judge {judge.get('backend')}:{judge_name}; {len(rs)} images, "
                 f"{sum(r.failed for r in rs)} not scored")
        if run.manifest.get("limit"):
            notes += f"; the first {run.manifest['limit']} rows only"
        entries.append(EvalResultEntry(
            dataset_id=dataset_id, task_id=config, value=round(float(value), 4), dataset_revision=revision,
            date=date, source_url=source_url, source_name="t2i-reason results (images, judge replies)"
            if source_url else None, notes=notes))
    return entries


def _eval_result_files(entries: list[tuple[Run, str, str]], given: dict[str, str], repo_id: str | None
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
    for run, name, label in entries:
        bench = run.manifest["benchmark"]
        dataset_id, revision = _hub_dataset(run, given)
        if dataset_id is None:
            skipped.append(f"{label} ({bench}): the run's rows do not come from a Hub dataset; name the one that "
                           f"holds them: --benchmark-dataset {bench}=<namespace>/<name>[@<commit>]")
            continue
        found = eval_result_entries(run, name, dataset_id, revision=revision, source_url=source)
        if not found:
            skipped.append(f"{label} ({bench}): no image of any config was scored")
            continue
        stem = bench if len(per_run[run.path]) == 1 else f"{bench}-{_slug(name)}"
        text = yaml.safe_dump(eval_result_entries_to_yaml(found), sort_keys=False, allow_unicode=True)
        files.append(((EVAL_RESULTS_DIR, _slug(run.name), ".eval_results", f"{stem}.yaml"), text))
    return files, skipped
