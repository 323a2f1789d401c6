"""Where the stages run: datatrove's executors, one per stage, chained with ``depends=``.

- :class:`Local` (the default): datatrove's ``LocalPipelineExecutor`` on this machine, ``workers`` tasks
  at a time, one GPU per worker process where there are GPUs;
- :class:`Slurm`: datatrove's ``SlurmPipelineExecutor``, one job array per stage, each depending on the
  previous stage's (``afterok``), tasks requeued when pre-empted.

Either way a stage's tasks are independent: a slow task holds up no other, a failed or killed task
stays incomplete (no completion marker) while the others finish, and the next stage starts only once
every task of its predecessor has completed. Running the same command again runs the incomplete tasks.

datatrove's local executor runs each task as it is (``_run_for_rank``: the task's log, its statistics,
its completion marker); :class:`LocalExecutor` only replaces the process pool it runs them in. datatrove's
``multiprocessing.Pool`` waits forever for the result of a worker that was killed (out of memory,
``kill -9``), stops every task on the first failure, and is started anew for each stage (each stage
loading its models again). Here the standard library's ``concurrent.futures.ProcessPoolExecutor``,
which detects a dead worker, serves every stage of a run: a task that raises is reported for that task
alone while the others go on; a killed worker breaks the pool, so the tasks not finished by then are
reported as not completed and the stage ends, for the same command to run them again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dill
from datatrove.executor import LocalPipelineExecutor, SlurmPipelineExecutor
from datatrove.utils.stats import PipelineStats

from .work import EngineError

__all__ = ["Local", "Slurm", "LocalExecutor", "WorkerPool", "StageIncomplete", "visible_gpus", "quiet_logs"]


class StageIncomplete(RuntimeError):
    """A stage has tasks without a completion marker; the stages after it were not started."""


@dataclass
class Local:
    """Run on this machine. ``tasks``: datatrove tasks per stage (default: one per shard, the finest
    balance); ``workers``: tasks at once (default 1); ``gpus``: the GPUs the workers share out, one per
    worker process (default: every visible one)."""

    tasks: int | None = None
    workers: int = 1
    gpus: Sequence[str] | None = None
    start_method: str = "forkserver"

    def __post_init__(self):
        if self.tasks is not None and self.tasks < 1 or self.workers < 1:
            raise ValueError(f"tasks and workers must be at least 1, got tasks={self.tasks}, workers={self.workers}")


@dataclass
class Slurm:
    """Submit one job array per stage with sbatch. ``workers``: array tasks running at once (-1: no
    limit); ``gpus_per_task``/``cpus_per_task``/``mem_per_cpu_gb`` apply to the model stages (the export
    needs no GPU); ``sbatch_args``: more ``#SBATCH`` options (``{"account": "x", "constraint": "h100"}``);
    ``logs``: folder of Slurm's own output files (default: ``logs/slurm`` in each stage folder);
    ``env_command``: shell line run before each task (default: this Python's ``bin`` first on ``PATH``)."""

    partition: str
    time: str = "24:00:00"
    tasks: int | None = None
    workers: int = -1
    gpus_per_task: int = 0
    cpus_per_task: int = 1
    mem_per_cpu_gb: int = 2
    requeue: bool = True
    sbatch_args: dict[str, Any] = field(default_factory=dict)
    logs: str | None = None
    env_command: str | None = None
    qos: str | None = None
    job_name: str = "flux-engine"

    def __post_init__(self):
        if self.tasks is not None and self.tasks < 1:
            raise ValueError(f"tasks must be at least 1, got {self.tasks}")


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else every device torch sees."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g for g in env.split(",") if g.strip() and g.strip() != "-1"]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except ImportError:
        return []


def quiet_logs(level: str = "WARNING") -> None:
    """datatrove logs every task at INFO to the console (its task logs keep everything); keep warnings."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level)


_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _TaskConsole:
    """``sys.stderr`` while a task runs. The task's console sink (loguru's, which datatrove adds on
    ``sys.stderr`` at the task's start, errors only) reaches the console, a record carrying a traceback
    (datatrove logs a failed task's exception with loguru's variable dumps, about 100 lines) cut to its
    first line. Everything else a task writes there (the libraries' progress bars, warnings and log lines:
    a failing model load printed about 20 lines) goes to the task log, a progress bar by its last frame.
    Outside a task everything passes as it is."""

    def __init__(self, console):
        self._console = console
        self._line = ""  # what has come since the last newline
        self.in_task = False

    def write(self, text: str) -> int:
        if hasattr(text, "record"):  # a loguru message (loguru's Message), from a sink on this stream
            if text.record["exception"] is not None:  # (coloured on a terminal: look at the record, not the text)
                text = text.split("\n", 1)[0] + " (traceback in the task log)\n"
            from tqdm import tqdm

            with tqdm.external_write_mode(file=self._console):  # on a line of its own, not inside the stage's bar
                return self._console.write(text)
        if not self.in_task:
            return self._console.write(text)
        from loguru import logger

        *lines, self._line = (self._line + text).split("\n")
        for line in lines:
            # a progress bar redraws its line after a carriage return, moving the cursor with ANSI escapes
            line = _ANSI_ESCAPE.sub("", line.rsplit("\r", 1)[-1]).rstrip()
            if line:
                logger.warning(f"stderr: {line}")  # below the console sink's level: the task log alone
        return len(text)

    def flush(self) -> None:
        self._console.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console, name)


def _console_handlers() -> list[logging.StreamHandler]:
    """The ``logging`` handlers writing to the console (transformers' and diffusers' own among them)."""
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    def to_console(stream) -> bool:  # a handler made during an earlier task holds that task's console
        return stream is sys.stderr or stream is sys.__stderr__ or isinstance(stream, _TaskConsole)

    return [h for lg in loggers for h in lg.handlers
            if type(h) is logging.StreamHandler and to_console(getattr(h, "stream", None))]


@contextmanager
def _task_console() -> Iterator[None]:
    """What a task prints goes to its task log, but its error line (see :class:`_TaskConsole`)."""
    console = _TaskConsole(sys.stderr)
    handlers = _console_handlers()
    streams = [h.setStream(console) for h in handlers]
    console.in_task = True
    try:
        with redirect_stderr(console):
            yield
    finally:
        console.in_task = False
        for handler, stream in zip(handlers, streams):
            handler.setStream(stream)


# -- local ---------------------------------------------------------------------------------------------------

def _claim_gpu(gpus) -> None:
    """Worker start-up: the GPU this worker keeps for its life, before CUDA starts."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get()


def _outside_event_loop(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, in a thread of its own when this thread runs an asyncio event loop (a Jupyter
    notebook's, playwright's sync API): datatrove's inference runner starts its own loop with ``asyncio.run``,
    which a running loop refuses, and every task of the stage failed."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="engine-task") as thread:
        return thread.submit(fn, *args, **kwargs).result()


def _run_task(task: bytes) -> tuple[Any, int, float]:
    """One task in a worker, given as the dill of ``(executor, rank)``: datatrove's own run of it, and
    which process ran it since when. dill, as datatrove's own pool uses: a pipeline may hold closures and
    lambdas, which the pickle of ``concurrent.futures`` cannot carry; ``recurse=True`` carries the globals
    they use, which a worker's own ``__main__`` does not have (a judge defined in the user's script)."""
    start = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process of the machine
    executor, rank = dill.loads(task)
    with _task_console():  # local_rank 1: console errors only, each on one line
        return executor._run_for_rank(rank, local_rank=1), os.getpid(), start


class _RecordsNoSecrets:
    """datatrove's ``executor.json`` (every step's settings, the models' backend options among them) with
    every secret masked (:func:`~t2ireason.redaction.redacted`): an ``api_key``, a password in a URL."""

    def save_executor_as_json(self, indent: int = 4) -> None:
        from datatrove.executor.base import ExecutorJSONEncoder

        from ..redaction import redacted

        record = redacted(json.loads(json.dumps(self, cls=ExecutorJSONEncoder)))
        with self.logging_dir.open("executor.json", "w") as f:
            json.dump(record, f, indent=indent)


class LocalExecutor(_RecordsNoSecrets, LocalPipelineExecutor):
    """datatrove's local executor with the changes described in the module docstring. After :meth:`run`,
    :attr:`failures` maps each task that did not complete to why."""

    def __init__(self, *args, gpus: Sequence[str] = (), progress: str | None = None,
                 pool: WorkerPool | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.gpus = list(gpus)
        self.pool = pool  # shared by the stages of a run (default: a pool for this stage alone)
        self.progress = progress  # a progress bar of the tasks, with this description
        self.failures: dict[int, str] = {}
        #: (task, worker slot, start, end) of each task this run, on time.monotonic()'s clock
        self.timeline: list[tuple[int, int, float, float]] = []
        self._bar = None

    def __getstate__(self) -> dict[str, Any]:
        # what a worker needs to run a task: not the stages before, nor this process's pool and progress bar
        return {**self.__dict__, "depends": None, "_bar": None, "pool": None}

    def run(self) -> PipelineStats | None:
        if self.depends:
            if not self.depends._launched:
                self.depends.run()
            incomplete = self.depends.get_incomplete_ranks(skip_completed=True)
            if incomplete:  # datatrove would wait for them forever; nothing else will finish them
                raise StageIncomplete(f"{len(incomplete)} of {self.depends.world_size} tasks of the stage before "
                                      f"did not complete")
        self._launched = True
        ranks = self.get_incomplete_ranks(range(self.local_rank_offset, self.local_rank_offset + self.local_tasks))
        if not ranks:
            return None
        self.save_executor_as_json()
        from ..progress import progress_bar

        with progress_bar(len(ranks), bool(self.progress), desc=self.progress, unit="task") as self._bar:
            results = self._run_in_process(ranks) if self.workers == 1 else self._run_in_pool(ranks)
        self._bar = None
        stats = sum((s for s in results if s is not None), start=PipelineStats())
        with self.logging_dir.open("stats.json", "wt") as f:
            stats.save_to_disk(f)
        return stats

    def _done(self, rank: int, stats: Any, error: str | None, slot: int = 0, start: float | None = None) -> Any:
        if start is not None:  # when it ran (unknown for a task whose worker was killed)
            self.timeline.append((rank, slot, start, time.monotonic()))
        if error is not None:
            self.failures[rank] = error
        if self._bar is not None:
            self._bar.update(1)
        return stats

    def _run_in_process(self, ranks: list[int]) -> list[Any]:
        pipeline, results = self.pipeline, []
        try:
            for rank in ranks:
                self.pipeline = deepcopy(pipeline)  # a fresh pipeline per task, as datatrove does
                start = time.monotonic()
                try:
                    with _task_console():
                        stats, error = _outside_event_loop(self._run_for_rank, rank, local_rank=1), None
                except Exception as e:  # noqa: BLE001 - reported; the next task goes on
                    stats, error = None, f"{type(e).__name__}: {e}"
                finally:
                    quiet_logs()
                results.append(self._done(rank, stats, error, 0, start))
        finally:
            self.pipeline = pipeline
        return results

    def _run_in_pool(self, ranks: list[int]) -> list[Any]:
        if self.pool is None:
            with WorkerPool(self.workers, self.gpus, self.start_method) as pool:
                return pool.run(self, ranks)
        return self.pool.run(self, ranks)


class WorkerPool:
    """The worker processes that run the tasks of every stage on this machine: one
    ``concurrent.futures.ProcessPoolExecutor`` started once for the whole run, so that each worker keeps
    its loaded models, and its GPU, from one stage to the next (a pool per stage would load every model
    again for every stage). Once a worker has been killed the pool is broken: every later task is
    reported as not completed, and the next run of the command starts a new pool."""

    def __init__(self, workers: int, gpus: Sequence[str] = (), start_method: str = "forkserver"):
        self.workers, self.gpus, self.start_method = workers, list(gpus), start_method
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._slots: dict[int, int] = {}  # worker pid -> slot, in the order the workers first answered

    def __enter__(self) -> WorkerPool:
        ctx = multiprocessing.get_context(self.start_method)
        init, args = None, ()
        if self.gpus:  # each worker takes one at start-up, in turn
            queue = ctx.Queue()
            for slot in range(self.workers):
                queue.put(self.gpus[slot % len(self.gpus)])
            init, args = _claim_gpu, (queue,)
        self._pool = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=init,
                                                            initargs=args)
        return self

    def __exit__(self, *exc) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def run(self, executor: LocalExecutor, ranks: list[int]) -> list[Any]:
        """Run ``ranks`` of ``executor``; each outcome is collected on its own, in completion order."""
        killed = "a worker process of the run was killed before this task finished (BrokenProcessPool)"
        try:
            futures = {self._pool.submit(_run_task, dill.dumps((executor, rank), recurse=True)): rank for rank in ranks}
        except concurrent.futures.process.BrokenProcessPool:  # by a worker killed in an earlier stage
            return [executor._done(rank, None, killed) for rank in ranks]
        results = []
        for future in concurrent.futures.as_completed(futures):
            rank = futures[future]
            try:
                stats, pid, start = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                results.append(executor._done(rank, None, killed))
            except Exception as e:  # noqa: BLE001 - the task's failure is reported, the other tasks go on
                results.append(executor._done(rank, None, f"{type(e).__name__}: {e}"))
            else:
                results.append(executor._done(rank, stats, None, self._slots.setdefault(pid, len(self._slots)), start))
        return results


# -- slurm ---------------------------------------------------------------------------------------------------

def default_env_command() -> str:
    """Put this Python environment's scripts (``launch_pickled_pipeline``, ``merge_stats``) first on PATH."""
    return f'export PATH="{Path(sys.executable).parent}:$PATH"'


class SlurmExecutor(_RecordsNoSecrets, SlurmPipelineExecutor):
    """datatrove's Slurm executor, its ``executor.json`` without secrets."""


def slurm_executor(slurm: Slurm, pipeline: list, *, tasks: int, logging_dir: Path, stage: str, gpu: bool,
                   depends: SlurmPipelineExecutor | None) -> SlurmPipelineExecutor:
    """datatrove's Slurm executor for one stage: job ``<job_name>-<stage>``, Slurm's output files in
    ``<logs>/<stage>`` (default: ``slurm`` in the stage's logging folder)."""
    logs = Path(slurm.logs) / stage if slurm.logs else logging_dir / "slurm"
    job_name = f"{slurm.job_name}-{stage}"
    return SlurmExecutor(
        pipeline, tasks=tasks, time=slurm.time, partition=slurm.partition, cpus_per_task=slurm.cpus_per_task,
        mem_per_cpu_gb=slurm.mem_per_cpu_gb, gpus_per_task=slurm.gpus_per_task if gpu else 0,
        workers=slurm.workers, job_name=job_name, qos=slurm.qos, env_command=slurm.env_command or default_env_command(),
        sbatch_args=dict(slurm.sbatch_args), logging_dir=str(logging_dir), slurm_logs_folder=str(logs),
        requeue=slurm.requeue, depends=depends, mail_type="NONE")


SLURM_JOBS = "slurm_jobs.json"


def check_no_jobs_running(root: Path) -> None:
    """Refuse to submit while jobs an earlier submission for this work folder made are still queued or
    running (they would do the same tasks twice); ``squeue`` says which are."""
    path = root / SLURM_JOBS
    if not path.is_file() or shutil.which("squeue") is None:
        return
    ours = {str(j) for j in json.loads(path.read_text())["jobs"]}
    out = subprocess.run(["squeue", "--noheader", "--format=%i", "--user", os.environ.get("USER", "")],
                         capture_output=True, text=True, check=False).stdout
    alive = sorted({line.strip().split("_")[0] for line in out.splitlines()} & ours)
    if alive:
        raise EngineError(f"jobs {', '.join(alive)} of this work folder are still queued or running: wait for them "
                          f"(squeue) or cancel them (scancel {' '.join(alive)}), then run the same command again")


def record_jobs(root: Path, executors: list[SlurmPipelineExecutor]) -> list[str]:
    from ..files import atomic_write_json

    jobs = [str(e.job_id) for e in executors if e.job_id not in (None, -1)]
    if jobs:  # nothing submitted: the jobs listed before have ended (checked before submitting)
        atomic_write_json(root / SLURM_JOBS, {"jobs": jobs})
    return jobs
