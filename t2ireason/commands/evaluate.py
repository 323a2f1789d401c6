"""``t2ireason evaluate`` (a run's images scored, resumable) and ``t2ireason run`` (build, generate, evaluate and
report in one go): the judge, the preset and the scoring options checked, and the judge asked, before anything
is made."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..processes import processes
from .options import (
    add_generation_args,
    add_judge_args,
    finite_float,
    generation_config,
    generation_said,
    json_dict,
    load_prompt_overrides,
    positive_int,
)

__all__ = ["add_evaluate_args", "run_evaluate", "add_run_args", "run_run"]


def _presets_help() -> str:
    """Each judged benchmark's presets, from the benchmark modules themselves."""
    from ..benchmarks import JUDGED, get_benchmark

    said = []
    for name in JUDGED:
        bench = get_benchmark(name)
        said.append(f"{name}: " + ", ".join(p + (" (default)" if p == bench.default_preset else "")
                                           for p in bench.presets))
    return "named judge setting of the metric; the benchmarks': " + "; ".join(said) + "; " + OTHER_PRESETS


#: the presets of the other metrics (--metric), written out: reading them imports what --help must not (a test
#: holds them to the metrics' own)
OTHER_PRESETS = "dsg, viescore: paper (default), official; tifa, vqascore, clip_score: paper"


def _add_scoring_args(p: argparse.ArgumentParser) -> None:
    from ..evaluation_metrics import BUILT_IN
    from ..runs import LOCK_TIMEOUT

    add_judge_args(p, required=False)
    p.add_argument("--refresh-cache", dest="cache_mode", action="store_const", const="refresh", default="use",
                   help="ask the judge again and replace what the response cache holds for these requests (a judge "
                        "fixed under the same name: its old replies are facts about the requests, and are otherwise "
                        "read again)")
    p.add_argument("--metric", default=None,
                   help=f"score the images with another metric than the benchmark's own, as an evaluation of its own "
                        f"(default name: the metric and the judge): {', '.join(BUILT_IN)}, or a folder (or Hub id) "
                        "of an evaluate module whose compute(predictions=<image paths>, references=<prompts>) "
                        "returns 'scores', one per image; --judge, --preset, --judge-kwargs and --options are then "
                        "that metric's (clip_score: --judge names the CLIP model, a Hub id or folder)")
    p.add_argument("--preset", default=None, help=_presets_help())
    p.add_argument("--options", type=json_dict, default={},
                   help='scoring options of the metric as JSON, e.g. \'{"structured_output": true, "max_reasks": 3}\'')
    p.add_argument("--name", default=None, help="name of this evaluation inside the run (default: from the judge)")
    p.add_argument("--chunk-size", type=positive_int, default=32,
                   help="images scored between two saves of the results (resume granularity)")
    p.add_argument("--repeats", type=positive_int, default=1,
                   help="ask the judge this many times about each image, at the preset's sampling, to measure its "
                        "own noise: each image is scored by its first reply, as the paper, and scores.json's "
                        "judge_noise says the judge's share of the variance, how much it widens the interval and how "
                        "many images' replies disagree; every reply is kept, each repeat a request of its own "
                        "(cached, resumed, never bought twice); a greedy judge is refused (it needs none)")

    p.add_argument("--vouch-endpoint", dest="vouch", default=None, metavar="WHY",
                   help="vouch that the judge's endpoint, which is not its vendor's own API (an Azure deployment, "
                        "a company proxy, a vLLM server of the paper's open model), serves the model it names, and "
                        "say why; recorded in run.json and printed on the run's rows as vouched (without it such a "
                        "run is 'unverified' beside a paper's rows)")
    p.add_argument("--retry-failed", action="store_true",
                   help="score again the images that failed because the judge was unreachable (time-outs, "
                        "server errors); a failed reply is not retried (with `run`, also draw again the images "
                        "that failed for such a reason; a refusal is kept); with DSG or TIFA, also the images "
                        "whose prompt's questions could not be written, asking the LLM for them again (recorded "
                        "once otherwise)")
    p.add_argument("--allow-failed", action="store_true",
                   help="accept a partial evaluation: exit 0 even when images were never made (generation "
                        "failures), are missing from the image folder (scored as not scored) or failed because the "
                        "judge was unreachable (default: exit 1, naming how many and how to go on)")
    p.add_argument("--lock-timeout", type=finite_float(0), default=LOCK_TIMEOUT,
                   help="seconds to wait for another process scoring the same evaluation of the run "
                        f"(default {LOCK_TIMEOUT:g}), then stop with an error")


def _check_scoring(args: argparse.Namespace, benchmark: str, run: str):
    """The metric, the judge, its options, the preset and the scoring options, checked before any folder is
    made; a local judge's checkpoint too, unless the evaluation in the run folder ``run`` is finished (then no
    judge is loaded). The metric's scorer (None: the benchmark's own) is kept in ``args.scorer``."""
    from ..benchmarks import get_benchmark
    from ..evaluation_metrics import metric_scorer
    from ..judges.spec import judge_setting
    from ..scoring import check_loadable, check_setting

    bench = get_benchmark(benchmark)
    args.scorer = scorer = metric_scorer(args.metric, bench)
    setting = judge_setting(scorer or bench, args.preset, args.judge, args.judge_kwargs or None, args.options)
    if scorer is None:
        check_setting(bench, setting)
    else:
        scorer.check(setting)
    if setting.preset_settings is not None and processes().is_main:  # which of the preset's backend settings the
        print(setting.preset_settings.line())  # judge gets, in one line, before it is contacted or anything made
    _say_if_the_launch_does_not_pay(setting)
    if not _finished(run, args, setting):
        if scorer is None:
            check_loadable(bench, setting)
        else:
            scorer.check_loadable(setting)
    return setting


def _say_if_the_launch_does_not_pay(setting) -> None:
    """A launch of several processes over an API judge costs each process torch's and accelerate's imports (about
    1.9 s of CPU; the processes' collectives are accelerate's) for requests that one process already keeps
    ``max_concurrency`` in flight: said once, with what to do instead (issue 51, ``perf/gpu_parallel.py --http``)."""
    procs = processes()
    if procs.count > 1 and procs.is_main and setting.spec is not None and not setting.spec.is_local():
        print(f"note: {procs.count} processes over an API judge ({setting.spec.backend}:): a launch pays for local "
              "judges, one process per GPU; here each process only adds torch's and accelerate's start-up (about "
              "2 s of CPU each), and one process judges as fast with more requests in flight: --judge-kwargs "
              "'{\"max_concurrency\": 32}'")


def _name(args: argparse.Namespace, setting) -> str:
    """The evaluation's name: given, or from the metric (another than the benchmark's own), the judge, the preset."""
    from ..runs import evaluation_name

    scorer = getattr(args, "scorer", None)
    return args.name or evaluation_name(setting.judge, args.preset, scorer.short_name if scorer else None)


def _finished(run: str, args: argparse.Namespace, setting) -> bool:
    """Whether the run folder ``run`` holds this evaluation, finished (a re-run loads and asks no judge)."""
    from ..runs import RUN_FILE

    manifest = Path(run) / RUN_FILE
    if not manifest.is_file():
        return False
    try:
        evaluations = json.loads(manifest.read_text(encoding="utf-8")).get("evaluations") or {}
    except (OSError, ValueError, AttributeError):
        evaluations = {}
    return bool((evaluations.get(_name(args, setting)) or {}).get("finished"))


def _preflight(args: argparse.Namespace, setting, folder: str) -> None:
    """Before any image is generated or scored and before the run folder is made, the judge is asked
    what scoring will ask (its key, its endpoint, an image with a JSON schema:
    :func:`t2ireason.judges.preflight_spec`; another metric's judge what that metric asks) and the response cache
    is opened, unless this run's evaluation is already finished (a re-run contacts no server)."""
    from ..judges import preflight_spec
    from ..runs import Run

    Run(folder, {}).evaluation_dir(_name(args, setting))  # a name that leaves the run: said before the judge is asked
    if _finished(folder, args, setting):
        return
    if args.cache:
        from ..judges.cache import ResponseCache, default_cache_path

        ResponseCache(default_cache_path() if args.cache is True else args.cache).check()
    if args.scorer is not None:
        args.scorer.preflight(setting)
    else:
        preflight_spec(setting.loadable, setting.judge_kwargs, structured=True)


def _evaluate(run, args: argparse.Namespace) -> dict:
    scores = run.evaluate(args.judge, metric=args.metric, preset=args.preset, judge_kwargs=args.judge_kwargs or None,
                          options=args.options, name=args.name, cache=args.cache, chunk_size=args.chunk_size,
                          cache_mode=getattr(args, "cache_mode", "use"),
                          progress=not args.no_progress, retry_failed=args.retry_failed,
                          lock_timeout=args.lock_timeout, preflight=False,  # asked before the run was made
                          allow_missing=args.allow_failed, repeats=getattr(args, "repeats", 1),
                          sample=getattr(args, "sample", None), seed=getattr(args, "seed", 0),
                          vouch=getattr(args, "vouch", None))
    judge = scores["judge"]
    transient = scores.get("num_retryable", 0)
    said = f"{scores['num_reasks']} re-asks"
    unreachable = (f"; {transient} failed because the judge was unreachable: run again with --retry-failed when it "
                   "is back") if transient else ""
    said += unreachable
    if scores.get("retried"):
        said += f"; {scores['retried']} failed images scored again"
    if scores.get("reused"):
        said += f"; {scores['reused']} replies received before reused, not asked again"
    cache = scores.get("response_cache")
    if cache and cache["replies"]:  # answers not asked this time: said, with how to ask them again
        said += f"; {cache['replies']} replies from the response cache {cache['file']}"
        if cache.get("unread"):  # a failure replayed from the cache is said, never silent (issue 40)
            said += f", {cache['unread']} of them not read (re-asked or failed)"
        said += " (--refresh-cache asks the judge again and keeps its new replies)"
    shares = scores.get("processes") or []
    if scores.get("scored_now") == 0:  # what this command did, not what the one that scored the images did
        said, shares = "finished before: nothing left to score" + unreachable, []
    if len(shares) > 1:
        said += "; judged by " + ", ".join(f"process {s['rank']}: {s['images']}" for s in shares)
    if processes().is_main:  # a launch's processes return the same scores: said once
        metric = scores.get("metric")
        metric = f" with {Path(metric.rstrip('/')).name or metric}" if metric not in (None, run.bench.metric) else ""
        # one count, in the coverage's words (scored of the run's images, and why the others were not)
        counted = (scores.get("coverage") or {}).get("text") or \
            f"{scores['num_images'] - scores['num_failed']} of {scores['num_images']} images scored"
        print(f"coverage: {counted}{metric} by {judge['backend']}:{judge.get('model_name') or judge['model']} "
              f"({said}) -> {run.evaluation_dir(scores['evaluation']) / 'scores.json'}")
        noise = scores.get("judge_noise")
        if noise and "judge_share" in noise:
            from ..run_evaluation import judge_noise_text

            print(judge_noise_text(noise))
    return scores


def _evaluation_status(run, scores: dict, args: argparse.Namespace) -> int:
    """1 when every image failed (said on stderr: how many, the first failure's cause, where every
    one is recorded), or, unless --allow-failed, when images were never made or are missing from the
    image folder (a partial evaluation: how many, and how to go on) or some failed because the judge
    was unreachable: a script or CI job must not take an outage, or a quota, for a score."""
    never = scores.get("num_not_generated", 0)  # the images missing from the folder among them
    if never and not args.allow_failed and scores["num_failed"] < scores["num_images"]:
        missing = (scores.get("coverage") or {}).get("missing", 0)
        why = ", ".join(filter(None, [f"{never - missing} not generated (why: {run.images_dir / 'failures.jsonl'})"
                                      if never > missing else "",
                                      f"{missing} missing from {run.images_dir}" if missing else ""]))
        said = (scores.get("coverage") or {}).get("text") or f"{scores['num_images'] - scores['num_failed']} of " \
                                                              f"{scores['num_images']} images scored"
        if processes().is_main:  # said once, by the main process of a launch
            print(f"error: a partial evaluation: {never} of {scores['num_images']} images were never made ({why}); "
                  f"the scores cover {said}. Make them and score them: run the same command again (`t2ireason "
                  "run` draws again the images whose generation failed for a transient cause with --retry-failed; "
                  "`t2ireason generate` then `t2ireason evaluate` resume where they stopped), or pass "
                  "--allow-failed to accept the partial evaluation", file=sys.stderr)
        return 1
    unreadable = scores.get("num_unreadable", 0)
    if unreadable and not args.allow_failed and scores["num_failed"] < scores["num_images"]:
        first = next((r for r in run.results(scores["evaluation"]) if r.context.get("unreadable")), None)
        if processes().is_main:  # said once, by the main process of a launch
            print(f"error: {unreadable} of {scores['num_images']} image files cannot be read (cut short or damaged "
                  f"since they were made; the judge was not asked about them), e.g. {first.image if first else '?'}: "
                  f"{first.failure if first else ''}. Make them again (delete them and run `t2ireason generate` "
                  "with the same settings) and run the same command again: they are scored then; or pass "
                  "--allow-failed to accept the partial evaluation", file=sys.stderr)
        return 1
    if scores["num_images"] and scores["num_failed"] == scores["num_images"]:
        from ..runs import RESULTS_FILE

        if not processes().is_main:  # said once, by the main process of a launch
            return 1

        name = scores["evaluation"]
        first = next((r for r in run.results(name) if r.failed), None)
        cause = " ".join(str(first.failure or "no score and no cause recorded").split()) if first else "unknown"
        cause = cause if len(cause) <= 300 else cause[:299] + "…"
        print(f"error: every image failed ({scores['num_failed']} of {scores['num_images']}); the first, "
              f"{first.id if first else '?'}: {cause}; each failure, with the judge's replies, is in "
              f"{run.evaluation_dir(name) / RESULTS_FILE}", file=sys.stderr)
        return 1
    return 1 if scores.get("num_retryable") and not args.allow_failed else 0


def add_evaluate_args(p: argparse.ArgumentParser) -> None:
    from ..benchmarks import JUDGED

    p.add_argument("--run", required=True,
                   help="run folder: scores go to <run>/evaluations/<name>/ (created with --benchmark if new)")
    p.add_argument("--benchmark", default=None, choices=JUDGED,
                   help="benchmark of a new run (an existing run knows its own)")
    p.add_argument("--data", default=None, help="Hub dataset id or built folder of a new run (default: the shipped sample)")
    p.add_argument("--configs", nargs="+", default=None, help="configs of a new run (default: all)")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N prompts (new run)")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="score the images of only N of the run's prompts, drawn stratified by category (each its share), e.g. the "
                        "sample a paid judge scores to certify a cheaper one (`t2ireason certify`)")
    p.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    p.add_argument("--data-revision", default=None, help="revision of a Hub dataset --data (new run)")
    p.add_argument("--images", default=None,
                   help="folder of images to score (generate output, or the official layout); default: <run>/images")
    _add_scoring_args(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars (logs, CI)")


def _open_or_create(args: argparse.Namespace):
    from ..runs import Run

    if args.benchmark:
        return Run.create(args.run, args.benchmark, data=args.data, configs=args.configs, limit=args.limit,
                          revision=args.data_revision)
    if any(getattr(args, k) is not None for k in ("data", "configs", "limit", "data_revision")):
        raise ValueError("--data, --configs, --limit and --data-revision describe a new run: give --benchmark too")
    return Run.open(args.run)


def check_hub_args(args: argparse.Namespace) -> None:
    """What a run records for the Hub (a release's license, a dataset revision), by its form, first."""
    from ..hub_ids import check_license, check_revision

    if getattr(args, "license", None) is not None:
        args.license = check_license(args.license)
    if args.data_revision is not None:
        check_revision(args.data_revision, "--data-revision")


def run_evaluate(args: argparse.Namespace) -> int:
    check_hub_args(args)
    if args.benchmark:
        setting = _check_scoring(args, args.benchmark, args.run)
        images = Path(args.images or Path(args.run) / "images")
        if not (Path(args.run) / "run.json").is_file():  # a new run: its images and rows, before the judge is asked
            from ..data import check_data

            if not images.is_dir():
                raise ValueError(f"no images to score in {images}: generate them first (`t2ireason run`, which also "
                                 f"scores them, or `t2ireason generate --out {images}`), or give --images <folder>")
            check_data(args.benchmark, args.data, args.configs, revision=args.data_revision)
    elif not (Path(args.run) / "run.json").is_file():
        _open_or_create(args)  # says what is missing
    else:
        from ..runs import Run

        setting = _check_scoring(args, Run.open(args.run).manifest["benchmark"], args.run)
    if (Path(args.run) / "run.json").is_file() and not args.images and not _finished(args.run, args, setting) \
            and not args.allow_failed:  # with --allow-failed, a missing image is counted as not scored
        from ..runs import Run

        Run.open(args.run).image_items()  # a prompt without its image: said before the judge is asked
    _preflight(args, setting, args.run)  # a missing key or a judge that cannot score: nothing made
    run = _open_or_create(args)
    if args.images:
        run.use_images(args.images)
    return _evaluation_status(run, _evaluate(run, args), args)


def add_run_args(p: argparse.ArgumentParser) -> None:
    from ..benchmarks import JUDGED

    p.add_argument("--benchmark", required=True, choices=JUDGED, help="which benchmark")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--source", default=None,
                        help="the official release folder: build the dataset from it first (build step)")
    source.add_argument("--data", default=None,
                        help="Hub dataset id or built folder (default: the small sample shipped with the package)")
    p.add_argument("--license", default=None, help="with --source: the release's license, when not known")
    p.add_argument("--configs", nargs="+", default=None, help="configs to use (default: all)")
    p.add_argument("--limit", type=positive_int, default=None, help="use only the first N prompts (quick runs)")
    p.add_argument("--data-revision", default=None, help="revision (branch, tag, commit) of a Hub dataset --data")
    p.add_argument("--out", required=True, help="run folder (data, images, evaluations, report); reused to resume")
    p.add_argument("--run-name", default=None, help="the run's name in reports (default: the folder's name)")
    add_generation_args(p)
    _add_scoring_args(p)
    p.add_argument("--embed-images", action="store_true", help="embed the images in the HTML report")


def run_run(args: argparse.Namespace) -> int:
    from ..runs import Run

    main = processes().is_main  # in a launch, the processes share each step; one of them speaks and reports
    say = print if main else (lambda *a, **k: None)
    check_hub_args(args)
    if args.source:  # a release without a known license is refused before any judge is asked or folder made
        from ..benchmarks import get_benchmark
        from ..build import require_license

        require_license(get_benchmark(args.benchmark), args.license)
    config = generation_config(args, Path(args.out) / "images")
    setting = _check_scoring(args, args.benchmark, args.out)
    if not args.source:
        from ..data import check_data

        check_data(args.benchmark, args.data, args.configs, revision=args.data_revision)
    _preflight(args, setting, args.out)  # nothing generated for a judge that cannot score
    data = Path(args.out) / "data" if args.source else args.data  # built into the run folder
    run = Run.create(args.out, args.benchmark, data=data, configs=args.configs, limit=args.limit, name=args.run_name,
                     revision=args.data_revision)
    if args.source:
        say(f"[1/4] build {args.benchmark} from {args.source}")
        run.build(args.source, license=args.license)
    else:
        say(f"[1/4] rows of {args.benchmark} from {args.data or 'the sample shipped with t2i-reason'}")
    say("[2/4] generate")
    counts = run.generate(config, prompts=load_prompt_overrides(args.prompts), progress=not args.no_progress,
                          lock_timeout=args.lock_timeout, retry_failed=args.retry_failed,
                          generator_kwargs=args.generator_kwargs)
    shares = processes().gather(counts)  # each process's counts of its share, summed
    counts = {k: sum(c.get(k, 0) for c in shares) for k in dict.fromkeys(k for c in shares for k in c)}
    say(f"      {generation_said(counts, run.images_dir)} -> {run.images_dir}")
    say("[3/4] evaluate")
    scores = _evaluate(run, args)
    if main:
        say("[4/4] report")
        args.evaluation, args.title = scores["evaluation"], None
        from .report import print_report

        print_report([run], args, run.path / "report")
        say(f"run folder: {run.path}")
    return _evaluation_status(run, scores, args)
