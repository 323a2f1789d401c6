"""One evaluation of a run: its images scored by a judge, by one process or by the processes of a launch.

The path: the images not scored yet (``todo``) are found from the evaluation's results; each process takes
its share of them (:meth:`t2ireason.processes.Processes.share`, accelerate's ``split_between_processes``:
contiguous blocks in the run's order), loads its judge once (a local model on the process's own device),
and scores its share chunk by chunk (:func:`score_images`), each chunk's results on disk as soon as it is
scored and every reply in the process's journal as it arrives (:class:`t2ireason.run_files.EvaluationFiles`);
then the main process merges the shares into one ``results.jsonl`` in the run's order and writes
``scores.json`` (:func:`write_scores`), which are what one process would have written, with which process
scored how many images recorded (``processes``).

The evaluation's lock (``<run>/.locks/evaluation-<name>.lock``) is held by the main process for the whole
launch: the processes of one launch cooperate, and another command on the same evaluation (one process or
a launch) waits ``lock_timeout`` seconds, then stops with an error.

Each evaluation says how many replies came from the response cache (``response_cache`` in ``scores.json``,
and the command's summary line), and how many of those this evaluation could not read (``unread``: read by
its own rules as any reply is, a re-ask or a failure, never an answer; the cache keeps them, since a reply is a
fact about its request; ``--refresh-cache`` asks the judge again and keeps its new replies).
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import jsonable
from .processes import Processes, processes
from .progress import progress_bar
from .run_files import EvaluationFiles, RunError, not_generated, retryable
from .version import __version__

if TYPE_CHECKING:
    from .evaluation_metrics import MetricScorer
    from .results import ImageResult

__all__ = ["evaluate_run", "score_images", "write_scores", "scores_record", "changed_images", "changed_since_scored",
           "IMAGE_SIZES", "judge_noise_text"]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def evaluate_run(run: Any, name: str, setting: Any, settings: dict[str, Any], *, cache: str | bool, chunk_size: int,
                 progress: bool, retry_failed: bool, preflight: bool, lock_timeout: float,
                 allow_missing: bool = False, scorer: MetricScorer | None = None, repeats: int = 1,
                 sample: int | None = None, seed: int = 0, cache_mode: str = "use") -> dict[str, Any]:
    """Score the images of ``run`` (a :class:`~t2ireason.runs.Run`) for the evaluation ``name`` with the judge
    ``setting`` (checked already; ``settings``: what ``run.json`` records), under the evaluation's lock, and
    return the scores (see :meth:`t2ireason.runs.Run.evaluate`). ``scorer``: a metric other than the benchmark's
    own (:mod:`t2ireason.evaluation_metrics`), which then scores, loads its model and aggregates. ``repeats``:
    ask the judge that many times per image (:func:`score_images`); ``sample``: only the images of that many
    prompts, stratified by category (:func:`sampled_items`)."""
    procs = processes()
    who = "another process" if procs.count == 1 else "another process (not of this launch)"
    busy = (f"evaluation {name!r} of {run.path} is being scored by {who} (waited {lock_timeout:g} s); "
            "let it finish (the same command then has nothing left to do), or pass another --name to score "
            "beside it")
    with procs.main_holds(run.lock(f"evaluation-{name}", lock_timeout, busy)):
        try:
            return _evaluate(run, procs, name, setting, settings, cache=cache, chunk_size=chunk_size,
                             progress=progress, retry_failed=retry_failed, preflight=preflight,
                             allow_missing=allow_missing, scorer=scorer, repeats=repeats, sample=sample, seed=seed,
                             cache_mode=cache_mode)
        finally:
            if scorer is not None:
                scorer.close()  # what it loaded besides the judge (a question LLM)


def _evaluate(run: Any, procs: Processes, name: str, setting: Any, settings: dict[str, Any], *, cache: str | bool,
              chunk_size: int, progress: bool, retry_failed: bool, preflight: bool,
              allow_missing: bool = False, scorer: MetricScorer | None = None, repeats: int = 1,
              sample: int | None = None, seed: int = 0, cache_mode: str = "use") -> dict[str, Any]:
    from .judges.journal import JournaledJudge, ReplyJournal

    recorded = run.reload()["evaluations"].get(name)  # as left by whichever process scored it last
    if recorded and recorded.get("settings") != settings:
        raise RunError(f"evaluation {name!r} of {run.path} was made with other settings "
                       f"({recorded.get('settings')}), not these ({settings}); pass another name to keep both")
    rows = run.question_rows(settings.get("questions"))
    items = run.image_items(rows, failed=True, missing_ok=allow_missing)
    if sample:
        items = sampled_items(run.bench, items, sample, seed)
    # an image missing from the image folder (allow_missing) is scored as one the generation never made
    not_made = {**{key: {"kind": "missing", "failure": f"no file at {path}"} for key, _, path in items
                   if not path.is_file()}, **run.generation_failures()}
    files = EvaluationFiles(run.evaluation_dir(name), procs.rank if procs.count > 1 else None)
    if procs.is_main:  # what an interrupted launch's processes scored, into results.jsonl, before any append
        done, _ = files.fold()
    procs.barrier()
    if not procs.is_main:
        done, _ = files.done()
    # an image made since it was scored as not made (or the reverse) is scored again, and so is one whose file
    # changed since the evaluation finished (cut short, made again: its score is of other bytes) or was unreadable
    changed = changed_images(files, items, done)
    todo = [item for item in items if item[0] not in done or (retry_failed and retryable(done[item[0]]))
            or (retry_failed and scorer is not None and _questions_failed(done[item[0]]))
            or not_generated(done[item[0]]) != (item[0] in not_made) or item[0] in changed]
    retried = sum(1 for key, _, _ in todo if key in done)
    if not todo and recorded and recorded.get("finished") and files.scores.is_file():
        scores = _read_json(files.scores)
        if scores.get("num_images") == len(items):  # nothing new since it was written
            return {**scores, "retried": 0, "reused": 0, "scored_now": 0}  # what this call did: nothing

    from .protocol_record import questions_digest

    # the run's rows digested now, while no image's result is held, and from the rows held when they are the run's:
    # not read a second time at the command's peak
    digest = questions_digest(run.rows() if settings.get("questions") else rows) if procs.is_main else None
    del rows
    # the replies received before an interruption, by any process (read, and a damaged file said, before a
    # judge is loaded or the evaluation recorded as started)
    journal = ReplyJournal(files.own_journal, others=files.journals())
    procs.barrier()  # every process has read the journals before any appends to its own
    mine = procs.share(todo)
    judge = None
    info = (recorded or {}).get("judge")
    share = {"rank": procs.rank, "images": len(mine)}
    seen = None  # what the requests carried, observed on their way (t2ireason.protocol_record)
    templates: dict[str, str] = {}
    try:
        if mine or (procs.is_main and (todo or not info)):
            judge = _load(setting, cache, procs, preflight and any(key not in not_made for key, _, _ in mine), scorer,
                          cache_mode)
            if repeats > 1:  # before anything is asked or recorded: a greedy judge needs no repeats
                from .benchmarks.base import sampling_option
                from .judges.repeats import check_sampled

                check_sampled(sampling_option(setting.options.get("sampling")) or judge.default_sampling,
                              f"judge {getattr(judge, 'model', judge)}")
            if procs.is_main:
                from .scoring import judge_record

                record = scorer.record(judge, setting) if scorer is not None else \
                    judge_record(judge, setting.preset, setting.preset_settings)
                info = _judge_info(record, info)
        if procs.is_main:
            def start(m: dict[str, Any]) -> None:
                entry = m["evaluations"].setdefault(name, {})
                entry.update(settings=settings, judge=info, started=entry.get("started") or _now(), finished=None)

            run.update(start)
        if mine:
            files.folder.mkdir(parents=True, exist_ok=True)
            # a judge's every reply journaled; a model that is no chat judge (CLIP, a user's module) asks nothing to keep
            journaled = JournaledJudge(judge, journal) if scorer is None or scorer.journaled else judge
            asked = journaled
            if hasattr(journaled, "chat"):  # what the requests carry, observed on their way
                from .protocol_record import recorder

                asked = seen = recorder(journaled)
            started, cpu = time.perf_counter(), time.process_time()
            from .prompts import templates_read

            # a metric whose questions an LLM writes (DSG, TIFA) asks again for those that failed before
            retry = retry_failed and "retry_failed" in getattr(scorer, "score_options", ())
            with templates_read() as templates:
                _score(run, name, files, asked, {**setting.options, **({"retry_failed": True} if retry else {})},
                       mine, total=len(items), done=done,
                       chunk_size=chunk_size, progress=progress and procs.is_main, not_made=not_made,
                       launch=procs.count > 1, scorer=scorer, repeats=repeats)
            share.update(reused=getattr(journaled, "reused", 0), seconds=round(time.perf_counter() - started, 3),
                         cpu_seconds=round(time.process_time() - cpu, 3))  # what load cannot bend (perf/gpu_parallel.py)
        share.update(_cache_counts(judge))
        adapted = getattr(judge, "concurrency_record", lambda: None)()
        if adapted is not None:  # the server was overwhelmed: what the judge did about it
            share["concurrency"] = adapted
    finally:  # whatever ends it (a failed probe, a locked run.json, scoring), a judge loaded here is closed
        if judge is not None and isinstance(setting.judge, str):  # ours to close, not a caller's object
            close = getattr(judge, "close", None)
            if close is not None:
                close()
    shares = procs.gather(jsonable(share))  # also: every process has finished scoring
    scores = None
    if procs.is_main:
        from .results import ImageResult

        files.finish([key for key, _, _ in items])
        # each record read back becomes its ImageResult at once: the aggregate needs every image's result, but not
        # the records read besides (issue 51: the command's peak grew by both); results.jsonl is in the run's order
        wanted = {key for key, _, _ in items}
        results = [ImageResult.from_dict(record) for key, record in files.in_order() if key in wanted]
        if len(results) != len(items):
            raise RunError(f"{files.results} holds {len(results)} of the {len(items)} images scored: it was changed "
                           "while the evaluation ran; run the same command again to score what is missing")
        _write_image_sizes(files, items)
        from .protocol_record import protocol_record

        previous = _read_json(files.scores).get("protocol") if files.scores.is_file() else None
        record = protocol_record(run, judge, seen, templates, results, (info or {}).get("preset_settings"),
                                 settings.get("vouch"), previous, setting.options, digest)
        scores = write_scores(files, {**scores_record(run, name, results, setting, info, settings, shares, cache,
                                                      scorer=scorer), "protocol": record})
        files.delete_journals()  # every reply they held is in results.jsonl now
        run.update(lambda m: m["evaluations"][name].update(
            finished=_now(), judge=info, num_images=scores["num_images"], num_failed=scores["num_failed"],
            num_not_generated=scores["num_not_generated"], num_retryable=scores["num_retryable"]))
    scores = procs.broadcast(scores)
    return {**scores, "retried": retried, "reused": sum(s.get("reused", 0) for s in shares), "scored_now": len(todo)}


def _read_json(path: Path) -> dict[str, Any]:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def _load(setting: Any, cache: str | bool, procs: Processes, probe: bool, scorer: MetricScorer | None = None,
          cache_mode: str = "use") -> Any:
    """The judge of ``setting`` (behind the response cache), in a launch on this process's device; with
    ``probe``, an HTTP judge asked one request first (:func:`~t2ireason.judges.preflight_spec`). Another metric's
    scorer loads its own model and asks its own probe."""
    from .judges import load_judge, on_device, preflight_spec
    from .scoring import report_preset_settings

    if procs.is_main:
        report_preset_settings(setting)
    if scorer is not None:
        model = scorer.load(setting, cache, procs.device)
        if probe:
            try:
                scorer.preflight(setting, model)
            except BaseException:
                close = getattr(model, "close", None)
                if isinstance(setting.judge, str) and close is not None:
                    close()
                raise
        return model
    kwargs = on_device(setting.loadable, setting.judge_kwargs, procs.device)
    judge = load_judge(setting.loadable, cache=cache, cache_mode=cache_mode, **kwargs)
    if probe:  # one probe (an image with a JSON schema), rather than every image's request failing
        try:
            preflight_spec(setting.loadable, kwargs, judge=judge, structured=True)
        except BaseException:
            if isinstance(setting.judge, str):
                judge.close()
            raise
    return judge


def _judge_info(info: dict[str, Any], recorded: dict[str, Any] | None) -> dict[str, Any]:
    """The judge's record, with ``model_sha256`` for a local model folder: read once per evaluation (taken
    from the record when the model is the same folder)."""
    from .files import model_fingerprint

    model = str(info.get("model", ""))
    if info.get("backend") != "openai" and Path(model).expanduser().is_dir():  # an API model is a name
        same = recorded and recorded.get("model") == model and recorded.get("model_sha256")
        info["model_sha256"] = recorded["model_sha256"] if same else model_fingerprint(model)
    return jsonable(info)


def _questions_failed(record: dict[str, Any]) -> bool:
    """A failed image whose prompt's questions (DSG, TIFA) could not be written: scored again, and its
    questions asked for again, with ``retry_failed``."""
    return record.get("score") is None and bool((record.get("context") or {}).get("questions_failed"))


def _cache_counts(judge: Any) -> dict[str, Any]:
    """What the response cache in front of ``judge`` answered: ``from_cache`` replies, and ``unread``: of them,
    those this evaluation could not read."""
    from .judges.cache import CachedJudge

    while judge is not None and not isinstance(judge, CachedJudge):
        judge = getattr(judge, "judge", None)
    if judge is None:
        return {}
    return {"from_cache": judge.hits, "unread": judge.rejected_cached, "cache": str(judge.path)}


def sampled_items(bench: Any, items: list, n: int, seed: int) -> list:
    """The items (``(key, row, path)``) of ``n`` of their prompts, drawn stratified by the prompts' category (the
    benchmark's config of the row: :func:`~t2ireason.stats_paired.stratified_sample`); every image of a prompt
    drawn is kept, in the items' order."""
    from .stats_paired import stratified_sample

    prompts = list(dict.fromkeys(bench.row_id(row) for _, row, _ in items))
    config = {bench.row_id(row): bench.row_config(row) for _, row, _ in items}
    if n > len(prompts):
        raise ValueError(f"a sample of {n} prompts, but the run has {len(prompts)}")
    chosen = {prompts[i] for i in stratified_sample([config[p] for p in prompts], n, seed)}
    return [item for item in items if bench.row_id(item[1]) in chosen]


def score_images(bench: Any, items: list, judge: Any, options: dict[str, Any],
                 not_made: dict[str, dict[str, Any]] | None = None, repeats: int = 1) -> list[ImageResult]:
    """``items`` (``(key, row, image path)``) scored by ``judge`` with the benchmark's ``score`` (or another
    metric's scorer's, :class:`~t2ireason.evaluation_metrics.MetricScorer`). An image the generation could not
    make (``not_made``) is the benchmark's failed image, as one it cannot read is (nothing is asked about it),
    with the generation's reason: counted and shown as every failure is. With ``repeats`` K, the judge is asked
    K times about each image (repeat k's requests keyed apart: :class:`~t2ireason.judges.repeats.RepeatedJudge`):
    the image is scored by the paper's rule, its first reply (repeat 0), each later repeat's score, subscores and
    replies kept in ``context["repeats"]``."""
    results = bench.score([row for _, row, _ in items], [str(p) for _, _, p in items], judge, progress=False,
                          **options)
    if repeats > 1:
        from .judges.repeats import RepeatedJudge

        asked = [(i, item) for i, item in enumerate(items) if item[0] not in (not_made or {})]
        for k in range(1, repeats):
            again = bench.score([row for _, (_, row, _) in asked], [str(p) for _, (_, _, p) in asked],
                                RepeatedJudge(judge, k), progress=False, **options)
            for (i, _), r in zip(asked, again):
                results[i].context.setdefault("repeats", []).append(
                    {"score": r.score, "subscores": r.subscores, "replies": r.replies, "failure": r.failure})
    from .generation.store import is_readable_image

    for (key, _, path), result in zip(items, results):
        if key in (not_made or {}):
            why = not_made[key]
            result.failure = f"not generated ({why['kind']}): {why['failure']}"
            result.context["not_generated"] = why["kind"]
            result.retryable = False  # the image's, not the judge's: a new image is scored anew
        elif result.score is None and not is_readable_image(path):  # cut short, damaged: nothing was asked of it
            result.context["unreadable"] = True
            result.retryable = False  # the file's, not the judge's: scored again once it can be read
    return results


#: each image file's size in bytes when its evaluation finished (``<evaluation>/image_sizes.json``): a file that
#: changed since (cut short by a copy, made again) is scored again, rather than its old score kept in silence
IMAGE_SIZES = "image_sizes.json"


def _write_image_sizes(files: EvaluationFiles, items: list) -> None:
    from .files import atomic_write_json

    sizes = {}
    for key, _, path in items:
        try:
            sizes[key] = path.stat().st_size
        except OSError:  # never made, or missing: scored as such
            pass
    files.folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(files.folder / IMAGE_SIZES, sizes)


def changed_since_scored(run: Any, name: str) -> list[str]:
    """The images of the finished evaluation ``name`` of ``run`` whose file changed since it was scored (cut
    short, made again: :func:`changed_images`), in the run's order: its scores are of other files until it is
    scored again (``t2ireason evaluate`` scores them)."""
    files = EvaluationFiles(run.evaluation_dir(name))
    if not (files.folder / IMAGE_SIZES).is_file():
        return []
    done, _ = files.done()
    items = run.image_items(failed=True, missing_ok=True)
    changed = changed_images(files, items, done)
    return [key for key, _, _ in items if key in changed]


def changed_images(files: EvaluationFiles, items: list, done: dict[str, dict[str, Any]]) -> set[str]:
    """The keys of the scored images whose file is not the one scored: its size differs from the one recorded
    when the evaluation finished, or it was unreadable then and reads now (a stat each, and a decode of each
    unreadable one only)."""
    from .generation.store import is_readable_image

    try:
        import json

        sizes = json.loads((files.folder / IMAGE_SIZES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        sizes = {}
    changed = set()
    for key, _, path in items:
        if key not in done:
            continue
        if (done[key].get("context") or {}).get("unreadable"):
            if is_readable_image(path):
                changed.add(key)
            continue
        if key in sizes:
            try:
                if path.stat().st_size != sizes[key]:
                    changed.add(key)
            except OSError:
                pass
    return changed


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


#: when glibc was last asked to give freed memory back (``time.monotonic``), and what it took
_last_trim = {"at": -math.inf, "seconds": 0.0}
#: a trim waits for this many times what the last one took: at most 5% of the time goes to trimming
_TRIM_SPACING = 20


def give_back_freed_memory() -> None:
    """Return to the system the memory glibc keeps after a chunk's images, request bodies and replies are freed.
    They are made on the window's threads, each with its own malloc arena, where freed buffers stay resident and
    the process grew by about 10 KB an image scored (issue 51, ``perf/memory.py``); dask.distributed's workers
    trim for the same reason. A trim walks every arena: 0.1 ms in ``t2ireason evaluate``, 10 to 80 ms in a
    process with a large heap (a test session, a training loop), so one comes at most every ``_TRIM_SPACING``
    times the last one's duration."""
    trim = _malloc_trim()
    started = time.monotonic()
    if trim is None or started - _last_trim["at"] < _TRIM_SPACING * _last_trim["seconds"]:
        return
    trim(0)
    _last_trim.update(at=time.monotonic(), seconds=time.monotonic() - started)


def _score(run: Any, name: str, files: EvaluationFiles, judge: Any, options: dict[str, Any], todo: list, *,
           total: int, done: dict[str, dict[str, Any]], chunk_size: int, progress: bool,
           not_made: dict[str, dict[str, Any]] | None = None, launch: bool = False,
           scorer: MetricScorer | None = None, repeats: int = 1) -> None:
    """Score ``todo`` chunk by chunk, each chunk on disk (whole) as soon as it is scored; an HTTP judge's
    chunks in a rolling window (:mod:`t2ireason.window`), so that its concurrency stays full. In a ``launch``
    the progress bar counts this process's share."""
    from .files import json_text
    from .judges import JudgeUnavailable
    from .judges.cache import CacheError
    from .window import in_window, window_width

    bench = scorer if scorer is not None else run.bench
    chunks = [todo[start: start + chunk_size] for start in range(0, len(todo), chunk_size)]
    desc = f"scoring ({name}{', this process' if launch else ''})"
    with progress_bar(len(todo) if launch else total, progress, desc=desc, unit="img") as bar:
        bar.update(0 if launch else total - len(todo))
        try:
            for chunk, results in in_window(lambda c: score_images(bench, c, judge, options, not_made, repeats), chunks,
                                            window_width(judge, chunk_size)):
                records = [jsonable(result.to_dict()) for result in results]
                files.append([json_text({"key": key, **r}) + "\n" for (key, _, _), r in zip(chunk, records)])
                # once on disk, only what the count of kept images below reads stays in memory, not each image's
                # questions and replies (issue 51: results streamed to disk, not held)
                done.update((key, {"score": r.get("score"), "retryable": r.get("retryable", False)})
                            for (key, _, _), r in zip(chunk, records))
                give_back_freed_memory()
                bar.update(len(chunk))
        except (JudgeUnavailable, CacheError) as e:  # the chunks finished before it are on disk
            kept = sum(1 for key in done if not retryable(done[key]))
            raise type(e)(f"{e} (evaluation {name!r} of {run.path}: {kept} of {total} images "
                          "scored and kept; run the same command again to go on)") from e


def scores_record(run: Any, name: str, results: list[ImageResult], setting: Any, info: dict[str, Any] | None,
                  settings: dict[str, Any], shares: list[dict[str, Any]], cache: str | bool,
                  scorer: MetricScorer | None = None) -> dict[str, Any]:
    """What ``scores.json`` holds: the metric (the benchmark's own, or ``scorer``'s) and its aggregate of
    ``results`` (in the run's order), the counts, the judge, and how the replies were got: which process scored
    how many images, in how many seconds (``processes``), how many replies the response cache gave
    (``response_cache``)."""
    from .results import coverage

    bench = run.bench
    metric = scorer if scorer is not None else bench
    aggregate = metric.aggregate(results, **setting.options)
    scores = {
        "benchmark": bench.name,
        "metric": metric.metric,
        "run": run.name,
        "evaluation": name,
        "aggregate": aggregate,
        "num_images": len(results),
        "num_failed": sum(r.score is None for r in results),
        "num_not_generated": sum(bool(r.context.get("not_generated")) for r in results),
        "num_unreadable": sum(bool(r.context.get("unreadable")) for r in results),
        "num_retryable": sum(r.score is None and r.retryable for r in results),
        "num_reasks": sum(r.reasks for r in results),
        "coverage": coverage(results),  # scored of the run's images, and why the others were not
        "judge": info,
        "settings": settings,
        "processes": [{k: s[k] for k in ("rank", "images", "seconds", "cpu_seconds", "concurrency") if k in s}
                      for s in shares],
        "response_cache": _cache_said(shares, cache),
        "t2ireason_version": __version__,
    }
    if len(shares) == 1 and "concurrency" in shares[0]:
        scores["concurrency"] = shares[0]["concurrency"]
    noise = judge_noise_record(results)
    if noise:
        scores["judge_noise"] = noise
    return scores


def judge_noise_record(results: list[ImageResult]) -> dict[str, Any] | None:
    """The judge's own noise, where the evaluation asked it several times per image (``context["repeats"]``): each
    image's scores (0-100) over its repeats, the first reply's the score the tables read
    (:func:`~t2ireason.stats_paired.judge_noise`); None without repeats."""
    from .stats_paired import judge_noise

    rows = [[r.score, *(x.get("score") for x in r.context["repeats"])] for r in results if r.context.get("repeats")]
    if not rows:
        return None
    noise = judge_noise([[None if v is None else 100 * v for v in row] for row in rows])
    return {**noise, "method": "one-way random effects over the images scored (0-100), the repeats of each image "
                               "its group; the tables read each image's first reply"}


def judge_noise_text(noise: dict[str, Any]) -> str:
    """``judge_noise_record``'s measure in words (what ``evaluate`` prints and a report says under the run's
    tables): the repeats and images, the judge's share of the variance, the widening, the disagreement."""
    return (f"judge noise over {noise['repeats']} replies (K={noise['repeats']}) to each of {noise['images']} images: "
            f"{noise['judge_share']:.0%} of the variance of the scores is the judge's (within an image), "
            f"which widens the interval {noise['widening']:.2f}x; {noise['disagreeing']:.0%} of the images' "
            f"replies disagree (mean sd {noise['mean_sd']:.1f} points)")


def _cache_said(shares: list[dict[str, Any]], cache: str | bool) -> dict[str, Any] | None:
    """The response cache's part in this evaluation: its file, how many replies it gave this time, how many of
    those this evaluation could not read; None without a cache."""
    used = [s for s in shares if "cache" in s]
    if not cache or not used:
        return None
    return {"file": used[0]["cache"], "replies": sum(s["from_cache"] for s in used),
            "unread": sum(s.get("unread", 0) for s in used)}


def write_scores(files: EvaluationFiles, scores: dict[str, Any]) -> dict[str, Any]:
    """``scores.json`` written whole (the one place it is written); returns ``scores`` as written."""
    from .files import atomic_write_json

    files.folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(files.scores, scores)
    return jsonable(scores)
