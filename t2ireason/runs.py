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
      evaluations/<name>/replies.jsonl  every judge reply received, as it arrives (until the evaluation is finished)
      evaluations/<name>/*.rank-<r>.jsonl   the same, per process, while a launch of several scores
      evaluations/<name>/scores.json    the paper's aggregate, counts, the judge, the processes' shares
      report/                           tables.md, .csv, .tex, plots/ (PNG, PDF), report.html
                                        (:func:`t2ireason.report.writer.write_report`)
      .locks/                           file locks: one writer per evaluation, and of run.json

Nothing finished is ever recomputed or paid for twice: images already on disk are
skipped, each chunk's scored images are written to ``results.jsonl`` as soon as the
chunk is done (with an HTTP judge, while the next chunks are scored), and every judge reply is in the evaluation's reply journal as soon as it arrives,
whatever its sampling (:mod:`t2ireason.judges.journal`; the response cache keeps only
deterministic replies, for every run), so a resume after a refused key, a crash or
SIGTERM asks only what was never answered. Records are appended whole or not at all
(:func:`t2ireason.files.append_whole`: a full disk is an error naming the file, never
a torn line). An evaluation has one command at a time (a second one waits, then stops
with a clear error; the processes of one launch, ``torchrun`` or ``accelerate launch``,
share it: :mod:`t2ireason.run_evaluation`), and ``run.json`` is only ever changed
read-modify-write under its lock, so evaluations made by several processes are all recorded. Every
path made from data (an image's id, an evaluation's name) is checked to stay
inside its folder (:func:`t2ireason.files.inside`).

Scoring (:mod:`t2ireason.run_evaluation`) calls the benchmark's ``score`` chunk by chunk (an HTTP
judge's chunks in a rolling window, :mod:`t2ireason.window`, so that its concurrency stays full) and
its ``aggregate`` once at the end, with the judge setting the metric modules use
(:mod:`t2ireason.scoring`), so ``t2ireason evaluate`` needs neither ``evaluate``
nor torch when the judge is behind HTTP (and runs as one process). The evaluation's files are
:mod:`t2ireason.run_files`'s.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .benchmarks import get_benchmark
from .files import atomic_file, atomic_write_json, inside, jsonable, read_parquet_rows
from .processes import processes
from .redaction import redacted
from .run_files import (
    LOCK_TIMEOUT,
    LOCKS,
    MANIFEST_LOCK_TIMEOUT,
    REPLIES_FILE,
    RESULTS_FILE,
    ROWS_FILE,
    RUN_FILE,
    SCORES_FILE,
    RunError,
    folder_lock,
    not_generated,
    read_results,
)
from .version import __version__

if TYPE_CHECKING:
    from .benchmarks import Benchmark
    from .results import ImageResult

__all__ = ["Run", "RunError", "RUN_FILE", "RESULTS_FILE", "REPLIES_FILE", "SCORES_FILE", "LOCK_TIMEOUT",
           "evaluation_name", "finished_evaluations", "slug"]

#: what identifies a run's rows: reopening a run with other values is an error, not a silent mix
_ROW_KEYS = ("benchmark", "data", "revision", "configs", "limit")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def evaluation_name(judge: Any, preset: str | None = None, metric: str | None = None) -> str:
    """A folder name for an evaluation: the metric when it is not the benchmark's own (``dsg-...``), the judge's
    backend and model (a folder's last part; a model named alone, as CLIPScore's, by its last part), and the
    preset."""
    if isinstance(judge, str):
        backend, sep, model = judge.partition(":")
        if not sep or "/" in backend:  # a model alone: a Hub id or a folder (CLIPScore's CLIP checkpoint)
            backend, model = "", judge
        model = model.split("@", 1)[0].rstrip("/")
        text = f"{backend}-{model.rsplit('/', 1)[-1]}" if backend else model.rsplit("/", 1)[-1]
    elif judge is not None and hasattr(judge, "identity"):
        ident = judge.identity()
        text = f"{ident.get('backend', 'judge')}-{str(ident.get('model', '')).rstrip('/').rsplit('/', 1)[-1]}"
    else:
        text = "judge"
    if preset:
        text += f"-{preset}"
    if metric:  # a metric that needs no judge (a user's module) is named by itself
        text = metric if judge is None and not preset else f"{metric}-{text}"
    return slug(text, "judge")


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

    def lock(self, what: str, timeout: float, busy: str):
        """Hold ``<run>/.locks/<what>.lock`` (an OS file lock: released when the process ends,
        however it ends); after ``timeout`` seconds, a RunError saying ``busy``."""
        return folder_lock(self.path, slug(what), timeout, busy)

    def _manifest_lock(self):
        return self.lock("run.json", MANIFEST_LOCK_TIMEOUT,
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
        procs = processes()
        if procs.is_main:  # in a launch, the main process builds and the others read its build
            report = build_dataset(self.bench, source, out, license=license, overwrite=True)
            (self.path / ROWS_FILE).unlink(missing_ok=True)  # the rows are read again from the new build

            def record(m: dict[str, Any]) -> None:
                m["data"] = "./data"
                m["built_from"] = str(Path(source).resolve())
                m["build"] = {"license": report.license, "configs": report.configs,
                              "anomalies": report.anomaly_counts(),
                              # t2ireason.releases.RELEASE_CHECKS: "not checked" when no hash is recorded
                              "release_check": report.release_check}

            self.update(record)
        procs.barrier()
        self.reload()
        return out

    def generate(self, config: Any, *, prompts: dict[Any, str] | None = None, progress: bool = True,
                 pipeline: Any = None, lock_timeout: float = LOCK_TIMEOUT, retry_failed: bool = False,
                 generator_kwargs: dict[str, Any] | None = None) -> dict[str, int]:
        """Generate the run's images into ``<run>/images`` with the generator ``config.model`` names
        (``generator_kwargs``: its backend's options), resuming: finished images are kept, and so are those
        that could not be made (drawn again with ``retry_failed`` when their failure was transient). The
        configuration and the generator are recorded; continuing with another configuration is refused."""
        from .data import plan_jobs
        from .generation import changed_settings, check_job_paths, generate
        from .generation.store import made_any_image

        busy = (f"the images of {self.path} are being generated by another process (waited {lock_timeout:g} s); "
                "let it finish: this step then has nothing left to do")
        procs = processes()  # in a launch, each process draws its share of the images (the generation driver)
        with procs.main_holds(self.lock("generate", lock_timeout, busy)):
            wanted = jsonable({**config.to_dict(), "rewritten_prompts": bool(prompts)})
            changed = changed_settings(self.reload().get("generation"), wanted)
            if changed and made_any_image(self.images_dir):  # nothing made: the fixed settings take the run
                raise RunError(f"the images of {self.path} were made with another generation configuration "
                               f"(differs in {', '.join(changed)}); start a new run folder for another model or setting")
            jobs = plan_jobs(self.bench, self.rows(), images_per_prompt=config.images_per_prompt,
                             base_seed=config.seed, prompts=prompts)
            check_job_paths(jobs, self.path / "images")
            if procs.is_main:
                known, spec = self.manifest.get("generator") or {}, config.spec  # a model's files hashed once a run
                identity = {**spec.identity(), **{k: v for k, v in known.items() if k.endswith("_sha256")}} \
                    if known.get("model") == spec.identity()["model"] else spec.identity(fingerprint=True)
                self.update(lambda m: m.update(generation=wanted, images="images", generator=jsonable(identity)))
            return generate(jobs, config, self.images_dir, progress=progress, pipeline=pipeline,
                            retry_failed=retry_failed, **(generator_kwargs or {}))

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

    def generation_failures(self) -> dict[str, dict[str, Any]]:
        """The images the generation could not make (``images/failures.jsonl``): file -> why."""
        from .generation import read_failures

        return read_failures(self.images_dir)

    def image_items(self, rows: Sequence[dict[str, Any]] | None = None, *, failed: bool = False,
                    missing_ok: bool = False) -> list[tuple[str, dict[str, Any], Path]]:
        """``(key, row, path)`` for every image to score, in row order; with ``failed``, also the images
        the generation could not make (recorded in ``failures.jsonl``; their path holds no file). The
        generation manifest (``metadata.parquet``) maps prompt ids to files; without one, each row's
        image is looked for where the benchmark's official layout puts it. A file name that would
        leave the image folder (made from a hostile id) is refused. A prompt without its image is an error
        naming how many, unless ``missing_ok``: its item is given too (no file at its path), to be counted as
        not scored."""
        rows = self.rows() if rows is None else rows
        folder, bench = self.images_dir, self.bench
        by_id = {bench.row_id(r): r for r in rows}
        manifest = folder / "metadata.parquet"
        items: list[tuple[str, dict[str, Any], Path]] = []
        if manifest.is_file():
            table = read_parquet_rows(manifest, ["file_name", "prompt_id", "sample"])
            files: dict[str, list[tuple[int, str]]] = {}
            for rec in table:
                files.setdefault(str(rec["prompt_id"]), []).append((rec["sample"], rec["file_name"]))
            not_made = self.generation_failures()
            for file, rec in not_made.items():  # never a silently missing image: each is scored as failed
                files.setdefault(str(rec["prompt_id"]), [])
                if failed:
                    files[str(rec["prompt_id"])].append((rec["sample"], file))
            # a prompt is missing when the manifest lists no image for it, or lists one that is gone
            missing, gone = [], []
            for pid, row in by_id.items():
                paths = [(file, _within(folder, file)) for _, file in sorted(files.get(pid, []))]
                absent = [str(path) for file, path in paths if file not in not_made and not path.is_file()]
                if absent or pid not in files:
                    missing.append(pid)
                    gone += absent
                if missing_ok and pid not in files:  # listed nowhere: where the official layout puts it
                    paths = [(bench.image_path(row), _within(folder, bench.image_path(row)))]
                items += [(file, row, path) for file, path in paths]
        else:
            missing, gone = [], []
            for pid, row in by_id.items():
                file = bench.image_path(row)
                path = _within(folder, file)
                if path.is_file() or missing_ok:
                    items.append((file, row, path))
                if not path.is_file():
                    missing.append(pid)
                    gone.append(str(path))
        if missing and not missing_ok:
            where = f"; no file at {', '.join(gone[:3])}{' ...' if len(gone) > 3 else ''}" if gone else ""
            raise RunError(f"{len(missing)} of {len(rows)} prompts have no image in {folder} (ids {missing[:5]}"
                           f"{'...' if len(missing) > 5 else ''}{where}); generate them first (the generate step "
                           "resumes), or count them as not scored (evaluate --allow-failed)")
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

    def evaluate(self, judge: Any = None, *, metric: str | None = None, preset: str | None = None,
                 judge_kwargs: dict | None = None, options: dict[str, Any] | None = None, name: str | None = None,
                 cache: str | bool = True, chunk_size: int = 32, progress: bool = True, retry_failed: bool = False,
                 lock_timeout: float = LOCK_TIMEOUT, preflight: bool = True,
                 allow_missing: bool = False, questions: str | os.PathLike | None = None, repeats: int = 1,
                 sample: int | None = None, seed: int = 0, vouch: str | None = None,
                 cache_mode: str = "use") -> dict[str, Any]:
        """Score the run's images with the benchmark's judge (or another ``metric``'s) and write ``scores.json``.

        ``metric``: the benchmark's own by default; else ``vqascore``, ``clip_score``, ``dsg``, ``viescore``,
        ``tifa`` or a user's evaluate module (a folder or Hub id), scoring each image against its row's prompt
        (:mod:`t2ireason.evaluation_metrics`; ``judge``, ``preset``, ``judge_kwargs`` and ``options`` are then
        that metric's), as an evaluation of its own (default name: the metric, then the judge), its
        ``scores.json`` saying ``metric``.
        ``judge`` is a spec string or a judge object (default: the preset's); ``options`` reach the
        benchmark's ``score`` and ``aggregate`` (e.g. ``{"structured_output": True}``), over the
        preset's, exactly as the metric module's ``compute`` takes them. Everything is checked
        before anything is created. Images are scored ``chunk_size`` at a time and each chunk's
        results are appended to ``results.jsonl`` as soon as it is scored (an HTTP judge scores
        several chunks at once, keeping its ``max_concurrency`` requests in flight), so an
        interrupted evaluation resumes where it stopped; the paper's aggregate is computed once, at the end.
        ``retry_failed`` scores again the images whose failure was transient (the judge was
        unreachable: ``ImageResult.retryable``). Re-scoring with another judge is a new
        evaluation (another ``name``) beside this one.

        One process at a time scores an evaluation: another waits ``lock_timeout`` seconds, then
        stops with a RunError. A :class:`~t2ireason.judges.JudgeUnavailable` during scoring ends
        the evaluation with the cause; the chunks finished before it are kept, and every reply
        received is in the evaluation's reply journal, so the resume asks only the others.
        ``preflight``: ask an HTTP judge one probe before scoring (the command line asks it
        before creating the run, and passes False). ``allow_missing``: an image missing from the image
        folder is counted as not scored, as one never made, instead of stopping the evaluation before it
        starts. ``scores.json`` says how many images were scored of how many, and why the others were not
        (``coverage``: :func:`~t2ireason.results.coverage`). ``questions``: a folder of rows of the benchmark's
        schema for the run's prompts (``t2ireason criteria`` writes one, with the questions another LLM made:
        :meth:`question_rows`), whose questions this evaluation asks instead of the run's rows' own; recorded in its
        settings (T2I-ReasonBench Table 1 scores each question LLM's questions with each judge). ``repeats`` K > 1:
        a sampled judge is asked K times about each image (each repeat a request of its own, cached, journaled and
        resumed; a greedy judge is refused), each image scored by its first reply, and ``scores.json``'s
        ``judge_noise`` says the judge's share of the variance, how much it widens the interval and how many images'
        repeats disagree (:func:`~t2ireason.stats_paired.judge_noise`). ``sample`` N: score the images of only N of
        the run's prompts, drawn stratified by category (each category its share; ``seed``), as the sample a paid
        judge scores to certify a substitute (:mod:`t2ireason.study.certificate`). It records what the judge was
        sent and what was read (``protocol``: :mod:`t2ireason.protocol_record`). ``vouch``: the user's word (why) that an endpoint
        other than its vendor's API serves the model it names (an Azure deployment, a company proxy, a vLLM
        server of the paper's open model), recorded in ``run.json``; without it such a judge's rows are
        ``unverified`` beside a paper's. ``cache_mode`` ``"refresh"``: the judge is asked again and its replies
        replace the response cache's (a judge fixed under the same name; the benchmark's judge only).

        Returns the scores (as ``scores.json``) with ``retried``: how many failed images were
        scored again, and ``reused``: how many replies received before an interruption were
        taken from the journal rather than asked again, and ``scored_now``: how many images this call scored (0:
        the evaluation was finished, and nothing has changed since).
        """
        from .evaluation_metrics import metric_scorer
        from .judges.spec import judge_setting
        from .scoring import check_setting

        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        if not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}")
        bench = self.bench
        scorer = metric_scorer(metric, bench)  # None: the benchmark's own
        if sample is not None and (not isinstance(sample, int) or sample < 1):
            raise ValueError(f"sample must be a whole number of prompts >= 1, got {sample!r}")
        if repeats > 1 and scorer is not None:
            raise ValueError(f"repeats are asked of the benchmark's own judge, not of another metric ({metric})")
        setting = judge_setting(scorer or bench, preset, judge, judge_kwargs, options)
        if scorer is None:
            check_setting(bench, setting)
        else:
            scorer.check(setting)
        name = name or evaluation_name(setting.judge, preset, scorer.short_name if scorer else None)
        self.evaluation_dir(name)  # a name that leaves the run is refused before anything is written
        settings = redacted(jsonable({"metric": (scorer or bench).metric,
                                      "judge": judge if isinstance(judge, str) or judge is None
                                      else evaluation_name(judge), "preset": preset, "judge_kwargs": judge_kwargs or {},
                                      "options": dict(options or {}),
                                      **({"repeats": repeats} if repeats > 1 else {}),
                                      **({"sample": sample, "seed": seed} if sample else {}),
                                      **({"vouch": str(vouch)} if vouch else {})}))  # recorded: never an API key
        if questions is not None:  # only then: the settings of every evaluation made before stay as they were
            settings["questions"] = _data_ref(questions, self.path)
            self.question_rows(settings["questions"])  # a folder that does not fit the run: said before scoring
        from .run_evaluation import evaluate_run

        return evaluate_run(self, name, setting, settings, cache=cache, chunk_size=chunk_size, progress=progress,
                            retry_failed=retry_failed, preflight=preflight, lock_timeout=lock_timeout,
                            allow_missing=allow_missing, scorer=scorer, repeats=repeats, sample=sample, seed=seed,
                            cache_mode=cache_mode)

    def question_rows(self, questions: str | os.PathLike | None) -> list[dict[str, Any]]:
        """The run's rows with the questions of ``questions`` (a folder of rows of the benchmark's schema, as
        ``t2ireason criteria`` writes; relative to the run when it starts with ``./``), each row matched by its
        id and prompt; the run's own rows for None. A prompt of the run the folder lacks, or gives another text,
        is an error naming it: another prompt's questions are never asked about an image."""
        rows = self.rows()
        if questions is None:
            return rows
        from .data import load_rows

        folder = self._resolve(str(questions)) if str(questions).startswith("./") else Path(questions)
        if not folder.is_dir():
            raise RunError(f"questions folder not found: {folder}")
        bench = self.bench
        made = {bench.row_id(r): r for r in load_rows(bench, str(folder))}
        lacking = [bench.row_id(r) for r in rows if bench.row_id(r) not in made]
        other = [bench.row_id(r) for r in rows if bench.row_id(r) in made
                 and bench.prompt(made[bench.row_id(r)]) != bench.prompt(r)]
        if lacking or other:
            said = "; ".join(filter(None, [f"no row for {len(lacking)} ({', '.join(lacking[:3])})" if lacking else "",
                                           f"another prompt for {len(other)} ({', '.join(other[:3])})" if other else ""]))
            raise RunError(f"the questions in {folder} are not those of the prompts of run {self.name}: {said}; "
                           "make them for the run's rows (t2ireason sweep does)")
        return [made[bench.row_id(r)] for r in rows]

    def questions_by(self, questions: str | None = None) -> str:
        """Whose questions an evaluation asked (T2I-ReasonBench Table 1's LLM column): with ``questions`` (an
        evaluation's ``settings["questions"]``) that folder's, else the run's rows': the LLM that made them
        (``t2ireason criteria``, ``t2ireason sweep``), else the release's (T2I-ReasonBench's: DeepSeek-R1's), or
        the sample's shipped with the package."""
        from .judges.spec import portable_model

        data = questions if questions is not None else self.data_source()
        if data is None:
            return "the sample's"
        folder = self._resolve(data) if str(data).startswith("./") else Path(data)
        report = folder / "build_report.json"
        try:
            made = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
        except (OSError, ValueError):
            made = {}
        llm = made.get("criteria_llm") or {}
        if made.get("made_by") == "t2ireason criteria" and llm.get("model"):
            return portable_model(str(llm["model"]))[0]
        by = getattr(self.bench, "release_questions_by", None)
        return f"{by} (the release's)" if by else "the release's"

    def scores(self, name: str) -> dict[str, Any]:
        file = self.evaluation_dir(name) / SCORES_FILE
        if not file.is_file():
            known = ", ".join(self.evaluations()) or "none"
            raise RunError(f"{self.path} has no finished evaluation {name!r} (evaluations: {known}); "
                           "run the evaluate step (it resumes)")
        return json.loads(file.read_text(encoding="utf-8"))

    def results(self, name: str) -> list[ImageResult]:
        """The evaluation's scored images, in row order, image paths absolute (none for one not made)."""
        from .results import ImageResult

        done, _ = read_results(self.evaluation_dir(name) / RESULTS_FILE, repair=False)
        order = [key for key, _, _ in self.image_items(failed=True, missing_ok=True)]
        out = []
        for key in order:
            if key in done:
                r = ImageResult.from_dict(done[key])
                r.image = None if not_generated(done[key]) else str(_within(self.images_dir, key))
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
    return _decoded(bench.features, read_parquet_rows(file))


def _decoded(features: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from datasets.features.features import require_decoding

    if any(require_decoding(f) for f in features.values()):
        return [features.decode_example(r) for r in rows]
    return rows


#: the names of before (tests, other modules): the results as read by any step
_read_results = read_results


# ------------------------------------------------------------------------------------------------ what to report

def finished_evaluations(runs: Sequence[Run | str | os.PathLike], evaluation: str | None
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


def slug(text: str, empty: str = "run") -> str:
    """``text`` as a file or folder name: runs of other characters than letters, digits, ``.``, ``_``
    and ``-`` become one ``-`` (``empty`` when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or empty
