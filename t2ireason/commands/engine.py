"""Command-line glue: ``t2ireason engine {run,estimate,sample,curate,zh,gcot-review,gcot-agreement,status,agreement}`` (registered by ``t2ireason.cli``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..benchmarks.flux_reason import CHARACTERISTICS
from ..engine.work import STAGE_NAMES

__all__ = ["add_engine_args", "run_engine_command"]


def _key_values(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    try:
        if not sep or not key.strip():
            raise ValueError
        return key.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KEY=NUMBER, got {text!r}") from None


def _add_work_args(p: argparse.ArgumentParser, seed: bool = True) -> None:
    from .options import positive_int

    p.add_argument("--work", required=True, help="work folder: the shards of every stage, the images, the review "
                                                 "sample; run the same command again to resume")
    g = p.add_argument_group("prompt sources (section 2.2)")
    g.add_argument("--captions", default=None, help="captions to rewrite (LAION-Aesthetics): .txt/.jsonl/.parquet/"
                                                    ".csv, a folder or a Hub dataset id, optionally with an image column")
    g.add_argument("--caption-column", default=None, help="column of --captions (default: caption, text, prompt...)")
    g.add_argument("--seed-prompts", default=None, help="imaginative seed prompts (.txt one a line, or a prompt column)")
    g.add_argument("--imagination", type=int, default=0, help="imagination candidates to expand from the seeds")
    g.add_argument("--mine-images", default=None, help="images to mine for legible text (LAION-2B): a folder of "
                                                       "images or a dataset with an image column")
    g.add_argument("--limit", type=positive_int, default=None, help="at most N items from each input")
    g.add_argument("--sample", action="store_true",
                   help="the small inputs shipped with the package instead (t2ireason/samples/engine: 4 captions, "
                        "12 seed prompts for --imagination (default 4 with it), 2 images to mine): a first run, offline")
    s = p.add_argument_group("settings (kept with the work folder; changing one after its stage ran is refused)")
    s.add_argument("--shard-size", type=positive_int, default=256,
                   help="records per shard: the unit of work and resumption (a stage holds its images in memory)")
    if seed:  # `run` has it among the generation options
        s.add_argument("--seed", type=int, default=0, help="mixed into every image seed and sampled request")
    s.add_argument("--imagination-examples", type=positive_int, default=10, help="seed prompts shown per expansion")
    s.add_argument("--imagination-temperature", type=float, default=1.0, help="sampling temperature of expansions")
    s.add_argument("--thresholds", nargs="+", type=_key_values, default=[], metavar="NAME=SCORE",
                   help="label thresholds (1-10) per characteristic, e.g. entity=8 style=6 (default: 7 for each)")
    s.add_argument("--original-threshold", type=float, default=7.0, help="alignment (1-10) to keep an original caption")
    s.add_argument("--gcot-attempts", type=positive_int, default=2, help="GCoT plans per image at most")
    s.add_argument("--max-reasks", type=int, default=2, help="re-asks of an unparsable reply before it is a failure")
    s.add_argument("--on-judge-error", choices=["retry", "record"], default="retry",
                   help="a judge backend failure leaves the shard for the next run (retry) or is recorded (record)")
    s.add_argument("--quality-filter", choices=["apply", "record"], default="apply",
                   help="drop what the quality filter rejects (apply, the paper) or keep it with its verdict "
                        "(record: for a smoke run with tiny random models, whose judge rejects everything)")
    s.add_argument("--review-size", type=int, default=500, help="images per verdict in the quality review sample")


def _key_strings(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE or KEY, got {text!r}")
    return key.strip().lstrip("-"), value if sep else ""


def _add_execution_args(p: argparse.ArgumentParser) -> None:
    from .options import json_dict, positive_int

    g = p.add_argument_group("where the stages run (datatrove executors; run the same command again to resume)")
    g.add_argument("--executor", choices=["local", "slurm"], default="local",
                   help="local: this machine (default); slurm: one job array per stage, each after the one before")
    g.add_argument("--tasks", type=positive_int, default=None,
                   help="datatrove tasks per stage (default: one per shard); task i takes shards i, i+N, i+2N...")
    g.add_argument("--workers", type=int, default=None,
                   help="tasks running at once: local processes, one GPU each where there are GPUs (default 1); "
                        "slurm array tasks (default: no limit)")
    s = p.add_argument_group("Slurm (with --executor slurm)")
    s.add_argument("--partition", default=None, help="Slurm partition (required with --executor slurm)")
    s.add_argument("--time", default="24:00:00", help="time limit per task (default 24:00:00)")
    s.add_argument("--gpus-per-task", type=int, default=1, help="GPUs per task of the model stages (default 1)")
    s.add_argument("--cpus-per-task", type=positive_int, default=8, help="CPUs per task (default 8)")
    s.add_argument("--mem-per-cpu-gb", type=positive_int, default=4, help="memory per CPU in GB (default 4)")
    s.add_argument("--no-requeue", dest="requeue", action="store_false",
                   help="do not requeue a pre-empted task (default: requeue it; it starts again from its shards)")
    s.add_argument("--sbatch-args", nargs="+", type=_key_strings, default=[], metavar="KEY=VALUE",
                   help="more #SBATCH options, e.g. account=myproject constraint=h100 exclusive")
    s.add_argument("--slurm-logs", default=None, help="folder for Slurm's output files (default: in each stage folder)")
    s.add_argument("--qos", default=None, help="Slurm quality of service")
    s.add_argument("--env-command", default=None,
                   help="shell line run before each task, e.g. 'source ~/venv/bin/activate' (default: this Python's "
                        "bin folder first on PATH)")
    i = p.add_argument_group("datatrove's inference runner (instead of loading --judge in each task)")
    i.add_argument("--server", choices=["vllm", "sglang", "endpoint"], default=None,
                   help="serve --judge with a vLLM or SGLang server per task, or send to a running endpoint "
                        "(--judge openai:<model>@<url>); many requests in flight, parsed and re-asked as always")
    i.add_argument("--server-options", type=json_dict, default={},
                   help='datatrove InferenceConfig options as JSON, e.g. \'{"tp": 2, "max_concurrent_generations": 256}\'')


def _add_run_args(p: argparse.ArgumentParser) -> None:
    from .options import add_generation_args, add_judge_args, json_dict

    _add_work_args(p, seed=False)
    p.add_argument("--out", default=None, help="release folder (default: <work>/dataset)")
    p.add_argument("--license", default=None, help="license of the release (required to write it), e.g. apache-2.0")
    p.add_argument("--repo-id", default=None, help="Hub repository the card's examples name")
    p.add_argument("--until", choices=[*STAGE_NAMES[1:], "export"], default="export", help="last stage to run")
    _add_execution_args(p)
    g = p.add_argument_group("models (loaded in each task, never in the launching process)")
    add_judge_args(g)
    g.add_argument("--llm", default=None, help="text model for imagination, GCoT checks and translation (default: --judge)")
    g.add_argument("--llm-kwargs", type=json_dict, default={}, help="backend options of --llm as JSON")
    add_generation_args(g)  # the same diffusion options as `t2ireason generate` (FLUX.1-dev in the paper)


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """The ``engine`` subcommand's actions and options."""
    from .options import positive_int

    sub = parser.add_subparsers(dest="engine_action", required=True, metavar="ACTION")
    _add_run_args(sub.add_parser(
        "run", help="run the pipeline (resumes where it stopped) and write the release",
        description="Run the FLUX-Reason-6M curation pipeline: each stage a datatrove executor (on this machine, or "
                    "Slurm job arrays), each starting once every task of the stage before completed. Run the same "
                    "command again to resume: completed tasks are skipped, committed shards kept, answers come from "
                    "the response cache. See t2ireason.engine."))
    est = sub.add_parser("estimate", help="count the candidates and estimate images, judge calls and tokens per stage")
    _add_work_args(est)
    est.add_argument("--image-tokens", type=positive_int, default=1280, help="tokens per image for the judge")
    est.add_argument("--assume", nargs="+", type=_key_values, default=[], metavar="NAME=VALUE",
                     help="override an assumption, e.g. quality_pass_rate=0.8 labels_per_image=2.5")
    sample = sub.add_parser("sample", help="PRISM-Bench representative prompts: top prompts per track, k-means, "
                                           "the prompt nearest each centroid")
    sample.add_argument("--data", required=True, help="a release folder of the engine, or FLUX-Reason-6M (Hub id or copy)")
    sample.add_argument("--embedder", required=True, help="text embedding model (folder or Hub id), e.g. a "
                                                          "sentence-transformers checkpoint or a CLIP model")
    sample.add_argument("--tracks", nargs="+", choices=CHARACTERISTICS, default=list(CHARACTERISTICS))
    sample.add_argument("--k", type=positive_int, default=50, help="clusters, hence prompts, per track")
    sample.add_argument("--top", type=positive_int, default=10_000, help="highest-scored prompts clustered per track")
    sample.add_argument("--seed", type=int, default=0, help="k-means seed")
    sample.add_argument("--limit", type=positive_int, default=None, help="read at most N rows of --data")
    sample.add_argument("--out", required=True, help="folder for captions/{en,zh}/<track>.jsonl (PRISM-Bench layout)")
    _add_curation_args(sub)
    status = sub.add_parser("status", help="each stage's tasks and statistics, from datatrove's logs in the work folder")
    status.add_argument("--work", required=True, help="work folder of a run")
    agree = sub.add_parser("agreement", help="agreement of the quality filter with the filled-in human review")
    agree.add_argument("review", help="review.csv of <work>/review/quality with human_verdict columns filled in")


def _add_curation_args(sub: Any) -> None:
    from .options import add_judge_args, positive_int

    tracks = ("imagination", "entity", "text_rendering", "style", "affection", "composition", "long_text")
    curate = sub.add_parser("curate", help="PRISM-Bench's curated half (appendix C.1): elements drawn from each "
                                           "track's pools, composed into prompts by an LLM",
                            description="Write the curated 50 prompts of each track (seed 004, appendix C.1) into "
                                        "OUT/captions/en/<track>.jsonl beside the representative half of `engine "
                                        "sample`. Long Text expands the captions of the dataset's best images "
                                        "(--data). See t2ireason.engine.curation.")
    add_judge_args(curate)
    curate.add_argument("--out", required=True, help="folder for captions/en/<track>.jsonl (PRISM-Bench layout)")
    curate.add_argument("--tracks", nargs="+", choices=tracks, default=[t for t in tracks if t != "long_text"],
                        help="tracks to curate (default: all but long_text, which needs --data)")
    curate.add_argument("--n", type=positive_int, default=50, help="curated prompts per track (50 in the paper)")
    curate.add_argument("--seed", type=int, default=0, help="the elements drawn, and the LLM's sampling seed")
    curate.add_argument("--temperature", type=float, default=1.0, help="the LLM's sampling temperature")
    curate.add_argument("--data", default=None, help="for long_text: an engine release folder or FLUX-Reason-6M")
    curate.add_argument("--limit", type=positive_int, default=None, help="read at most N rows of --data")
    curate.add_argument("--max-reasks", type=int, default=2, help="re-asks of a reply that misses a check")
    review = sub.add_parser("gcot-review", help="the human review of GCoT annotations (appendix B.5): a sample "
                                                "of images with their captions and GCoT on a review page",
                            description="Draw N images with a GCoT into OUT: the images, review.json and "
                                        "review.html (open it in a browser: accept, reject or correct each GCoT, "
                                        "then export; each reviewer sends one file). Then: t2ireason engine "
                                        "gcot-agreement OUT FILES... [--apply RELEASE].")
    review.add_argument("--data", required=True, help="an engine release folder, or FLUX-Reason-6M (Hub id or copy)")
    review.add_argument("--out", required=True, help="a new folder for the review")
    review.add_argument("--n", type=positive_int, default=500, help="GCoTs to review (500 in the paper)")
    review.add_argument("--reviewers", nargs="+", default=["2"],
                        help="how many reviewers (a number) or their names (every item goes to every reviewer)")
    review.add_argument("--seed", default=None, help="the draw's seed (default: a fresh one, kept in review.json)")
    review.add_argument("--limit", type=positive_int, default=None, help="read at most N rows of --data")
    verdicts = sub.add_parser("gcot-agreement", help="the GCoT review's pass rate (the paper's 96%%) and the "
                                                     "reviewers' agreement; --apply writes the decisions back")
    verdicts.add_argument("review", help="the review folder of `engine gcot-review`")
    verdicts.add_argument("ratings", nargs="+", help="the reviewers' exported files (or folders of them)")
    verdicts.add_argument("--apply", default=None, metavar="RELEASE",
                          help="write the decisions into this engine release: corrected GCoTs replace theirs, "
                               "rejected ones are emptied")
    zh = sub.add_parser("zh", help="PRISM-Bench-ZH (section 3.1): every English prompt translated by an LLM, "
                                   "Text rendering's text adapted to a Chinese context",
                        description="Translate CAPTIONS/captions/en/<track>.jsonl into captions/zh/<track>.jsonl.")
    add_judge_args(zh)
    zh.add_argument("--captions", required=True, help="a PRISM-Bench layout folder with captions/en/<track>.jsonl")
    zh.add_argument("--tracks", nargs="+", choices=tracks, default=None, help="tracks to translate (default: all found)")
    zh.add_argument("--seed", type=int, default=0, help="the LLM's sampling seed")
    zh.add_argument("--max-reasks", type=int, default=2, help="re-asks of a reply that is not Chinese")


def _config(args: argparse.Namespace):
    from ..engine.pipeline import EngineConfig

    return EngineConfig(shard_size=args.shard_size, seed=args.seed, imagination_examples=args.imagination_examples,
                        imagination_temperature=args.imagination_temperature, thresholds=dict(args.thresholds),
                        original_threshold=args.original_threshold, gcot_attempts=args.gcot_attempts,
                        max_reasks=args.max_reasks, on_judge_error=args.on_judge_error, review_size=args.review_size,
                        quality_filter=args.quality_filter)


def _sources(args: argparse.Namespace):
    from ..engine.sources import Sources, sample_sources

    if args.sample:
        given = [o for o in ("captions", "seed_prompts", "mine_images") if getattr(args, o)]
        if given:
            raise ValueError(f"--sample gives the inputs: drop {', '.join('--' + o.replace('_', '-') for o in given)}")
        return sample_sources(args.imagination or 4, args.limit)
    return Sources(captions=args.captions, caption_column=args.caption_column, seed_prompts=args.seed_prompts,
                   imagination=args.imagination, mine_images=args.mine_images, limit=args.limit)


def _executor(args: argparse.Namespace):
    from ..engine.executors import Local, Slurm

    if args.executor == "local":
        return Local(tasks=args.tasks, workers=args.workers or 1)
    if not args.partition:
        raise ValueError("--executor slurm needs --partition")
    import shutil

    if shutil.which("sbatch") is None:  # before any stage folder is made
        raise ValueError("--executor slurm submits with Slurm's sbatch, which is not on this machine's PATH: run the "
                         "command on the cluster's login node (or load its Slurm module), or use --executor local")
    return Slurm(partition=args.partition, time=args.time, tasks=args.tasks, workers=args.workers or -1,
                 gpus_per_task=args.gpus_per_task, cpus_per_task=args.cpus_per_task,
                 mem_per_cpu_gb=args.mem_per_cpu_gb, requeue=args.requeue, sbatch_args=dict(args.sbatch_args),
                 logs=args.slurm_logs, env_command=args.env_command, qos=args.qos)


def _print_summary(result) -> None:
    print(f"candidates: {', '.join(f'{k} {v}' for k, v in result.candidates.items())}")
    waiting_for = None  # the first stage that did not complete: the ones after it have not started
    for summary in result.stages:
        if waiting_for and summary.completed == 0 and not summary.failures:
            print(f"  {summary.stage:<10} 0/{summary.tasks} tasks  not started ({waiting_for} did not complete)")
            continue
        print(f"  {summary.line()}")
        for rank, why in sorted(summary.failures.items()):
            print(f"    task {rank} did not complete: {why}")
        if not summary.complete and waiting_for is None:
            waiting_for = summary.stage


def _what_next(result) -> str:
    """The last line of a run that did not complete: run again, or first mend what would fail again."""
    stages = sum(1 for v in result.pending.values() if v)
    if result.lasting_failures:  # running again as it is would fail the same way
        return (f"{stages} stage(s) have tasks that did not complete, for a cause that running again as it is "
                f"meets again (above): fix it, then run the same command again to go on (completed tasks are "
                f"kept, answers already given come from the response cache)")
    return (f"{stages} stage(s) have tasks that did not complete: run the same command again to finish them "
            f"(answers already given come from the response cache)")


def _run(args: argparse.Namespace) -> int:
    from ..engine.models import Server
    from ..engine.pipeline import run_engine
    from ..engine.work import Workdir
    from ..judges import JudgeSpec, preflight_spec, validate_judge
    from ..judges.checkpoints import check_checkpoint
    from .options import generation_config

    if args.images_per_prompt != 1 or args.prompts or args.generator_kwargs:
        raise ValueError("the engine draws one image per prompt, from its own prompts, with the generator's "
                         "default options: --images-per-prompt, --prompts and --generator-kwargs are for "
                         "`t2ireason generate`")
    out = args.out or str(Path(args.work) / "dataset")
    if args.until == "export" and not args.license:
        raise ValueError("--license is needed to write the release (or stop earlier with --until)")
    if args.server and args.judge_kwargs:
        raise ValueError("--judge-kwargs do not reach a judge served by --server: give the server's options "
                         "with --server-options (datatrove's InferenceConfig)")
    judge, llm = JudgeSpec.parse(args.judge), args.llm and JudgeSpec.parse(args.llm)
    validate_judge(judge, args.judge_kwargs)
    if llm:
        validate_judge(llm, args.llm_kwargs)
    executor = _executor(args)
    if not args.server:  # before any image is drawn, the judge is asked what the stages ask (its key, its
        # endpoint, images with a JSON schema; the text model JSON); a served judge starts with its task
        if Workdir(args.work).settings("sources") is None:  # a new folder: a local model's checkpoint is
            # checked (a folder resumed was started with the same judge, which its stages' settings hold)
            for spec, kwargs in ((judge, args.judge_kwargs), (llm, args.llm_kwargs)):
                if spec:
                    check_checkpoint(spec, kwargs)
        preflight_spec(judge, args.judge_kwargs, structured=True)
        if llm:
            preflight_spec(llm, args.llm_kwargs, structured=True, images=False)
    result = run_engine(args.work, _sources(args), _config(args), judge=args.judge, judge_kwargs=args.judge_kwargs,
                        llm=args.llm, llm_kwargs=args.llm_kwargs, cache=args.cache,
                        drawer=generation_config(args), executor=executor,
                        server=Server(args.server, args.server_options) if args.server else None,
                        out=out if args.until == "export" else None, license=args.license, repo_id=args.repo_id,
                        until=args.until, progress=not args.no_progress)
    if result.jobs:
        print(f"submitted Slurm jobs {', '.join(result.jobs)} (one array per stage, each after the one before); "
              f"follow them with squeue, their task logs are in {args.work}/<NN-stage>/logs/logs/. When they end: "
              f"t2ireason engine status --work {args.work}; run this command again to submit what did not complete")
        return 0
    _print_summary(result)
    if not result.complete:
        print(_what_next(result))
        return 1
    if result.statistics is not None:
        s = result.statistics
        print(f"{s['kept']} of {s['candidates']} candidates kept, {s['captions_total']} captions -> {result.out} "
              f"(README.md, statistics.json, data/, provenance/)")
    if result.review is not None:
        print(f"quality review sample: {result.review} (fill human_verdict_1/2, then: t2ireason engine agreement "
              f"{result.review})")
    if result.statistics is None:
        print(f"work folder: {args.work} (stopped after {args.until})")
    return 0


def _status(args: argparse.Namespace) -> int:
    from ..engine.pipeline import RELEASE, EngineResult, stage_summary
    from ..engine.sources import candidate_counts
    from ..engine.work import STAGE_NAMES, Workdir

    work = Workdir(args.work)
    if work.settings("sources") is None:
        raise ValueError(f"{args.work} is not an engine work folder (nothing was ingested there)")
    stages = [stage_summary(s, work.logs(s)) for s in STAGE_NAMES[1:] if (work.logs(s) / "executor.json").is_file()]
    for part, name in (("export", "export"), ("card", "release")):
        logs = work.root / RELEASE / "logs" / part
        if (logs / "executor.json").is_file():
            stages.append(stage_summary(name, logs))
    result = EngineResult(candidate_counts(work), stages)
    _print_summary(result)
    return 0 if result.complete and stages else 1


def _estimate(args: argparse.Namespace) -> int:
    from ..engine.cost import CostAssumptions, estimate_cost, format_cost
    from ..engine.sources import ingest
    from ..engine.work import Workdir

    config = _config(args)
    work = Workdir(args.work)
    counts = ingest(work, _sources(args), config)
    known = set(CostAssumptions.__dataclass_fields__) - {"output_tokens"}
    unknown = [k for k, _ in args.assume if k not in known]
    if unknown:
        raise ValueError(f"unknown assumption(s) {unknown}; known: {', '.join(sorted(known))}")
    assumptions = CostAssumptions(image_tokens=args.image_tokens,
                                  **{k: type(getattr(CostAssumptions, k))(v) for k, v in args.assume})
    print(f"candidates: {', '.join(f'{k} {v}' for k, v in counts.items())} (ingested into {args.work})")
    print(format_cost(estimate_cost(work, config, assumptions), assumptions))
    return 0


def _sample(args: argparse.Namespace) -> int:
    from ..benchmarks.flux_reason import stream
    from ..engine.sampling import TextEmbedder, representative_prompts, write_prism_captions

    embed = TextEmbedder(args.embedder)
    selected = representative_prompts(stream(args.data, limit=args.limit), embed, tracks=args.tracks, k=args.k,
                                      top=args.top, seed=args.seed)
    paths = write_prism_captions(selected, args.out)
    ids = Path(args.out) / "selected_ids.json"
    ids.write_text(json.dumps({t: [s["id"] for s in items] for t, items in selected.items()}, indent=2) + "\n")
    for track, items in selected.items():
        print(f"{track}: {len(items)} prompts")
    print(f"{len(paths)} track files under {Path(args.out) / 'captions'}; ids in {ids}")
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from ..engine.export import review_agreement

    result = review_agreement(args.review)
    if not result["images"]:
        raise ValueError(f"{args.review}: no row has a human verdict yet (columns human_verdict_*)")
    print(f"{result['agree']} of {result['images']} reviewed images agree with the quality filter "
          f"({100 * result['agreement']:.1f}%; the paper reports 95%); {result['unreviewed']} not reviewed")
    for verdict, r in result["by_vlm_verdict"].items():
        print(f"  filter {verdict}: {r['images']} images, {100 * r['agreement']:.1f}% agree")
    return 0


def _written(result: Any, out: str, language: str, what: str) -> int:
    """Write each track made whole (a track with a failure is left as it was), say what was made and paid."""
    from ..engine.curation import write_subset
    from ..files import atomic_write_text

    failed = {f["track"] for f in result.failures}
    for track, lines in result.lines.items():
        if track not in failed:
            path = write_subset(out, language, track, lines)
            print(f"{track}: {len(lines)} {what} -> {path}")
    print(f"{result.requests} requests ({result.cached} from the response cache)")
    if result.failures:
        path = Path(out) / f"{'curation' if language == 'en' else 'zh'}_failures.jsonl"
        atomic_write_text(path, "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in result.failures))
        print(f"{len(result.failures)} prompts got no usable reply; tracks {', '.join(sorted(failed))} were not "
              f"written (each failure and every raw reply: {path}). Run again to ask only those (the rest comes "
              f"from the response cache), or with another --seed")
        return 1
    return 0


def _curate(args: argparse.Namespace) -> int:
    from ..engine.curation import CURATED_TRACKS, curate, expand_long_text, long_text_sources
    from ..judges import load_judge, validate_judge

    if "long_text" in args.tracks and not args.data:
        raise ValueError("the long_text track expands the captions of the dataset's images: give --data (an engine "
                         "release folder or FLUX-Reason-6M)")
    validate_judge(args.judge, args.judge_kwargs)
    rows = None
    if "long_text" in args.tracks:  # read before anything is paid for
        from ..benchmarks.flux_reason import stream

        rows = long_text_sources(stream(args.data, limit=args.limit), args.n)
        if not rows:
            raise ValueError(f"{args.data}: no row has a caption to expand")
    llm = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    result = curate(llm, [t for t in args.tracks if t in CURATED_TRACKS], n=args.n, seed=args.seed,
                    temperature=args.temperature, max_reasks=args.max_reasks, progress=True)
    if rows is not None:
        more = expand_long_text(llm, rows, seed=args.seed, max_reasks=args.max_reasks, progress=True)
        result.lines.update(more.lines)
        result.failures += more.failures
        result.requests += more.requests
        result.cached += more.cached
    return _written(result, args.out, "en", "curated prompts")


def _gcot_review(args: argparse.Namespace) -> int:
    from ..benchmarks.flux_reason import stream
    from ..study.gcot_review import PAGE_FILE, make_gcot_review

    reviewers = int(args.reviewers[0]) if len(args.reviewers) == 1 and args.reviewers[0].isdigit() \
        else args.reviewers
    review = make_gcot_review(stream(args.data, limit=args.limit), args.out, n=args.n, reviewers=reviewers,
                              seed=args.seed)
    print(f"{len(review['items'])} GCoTs to review by {', '.join(review['raters'])}: open "
          f"{Path(args.out) / PAGE_FILE} in a browser (each reviewer exports one file), then: t2ireason engine "
          f"gcot-agreement {args.out} <files>")
    return 0


def _gcot_agreement(args: argparse.Namespace) -> int:
    from ..study.gcot_review import apply_gcot_review, load_gcot_review, review_result

    result = review_result(load_gcot_review(args.review), args.ratings)
    for problem in result["problems"]:
        print(f"note: {problem}")
    if not result["reviewed"]:
        raise ValueError(f"no usable review answer in {' '.join(args.ratings)}")
    alpha = result["alpha"]
    print(f"{result['passed']} of {result['reviewed']} reviewed GCoTs passed ({100 * result['pass_rate']:.1f}%; the "
          f"paper reports {100 * result['paper_pass_rate']:.0f}%): {result['corrected']} corrected, "
          f"{result['removed']} removed; {result['unreviewed']} not reviewed")
    if result["items_with_two_reviewers"]:
        print(f"reviewers agree on {100 * result['agreement']:.1f}% of {result['items_with_two_reviewers']} items "
              f"reviewed twice or more (accept or not); Krippendorff's alpha "
              + ("undefined (every verdict the same)" if alpha != alpha else f"{alpha:.3f}"))
    if args.apply:
        counts = apply_gcot_review(args.apply, result)
        print(f"written into {args.apply}: {counts['corrected']} GCoTs corrected, {counts['removed']} emptied "
              f"(decisions in {Path(args.apply) / 'gcot_review.json'})")
    return 0


def _zh(args: argparse.Namespace) -> int:
    from ..engine.curation import adapt_zh
    from ..judges import load_judge, validate_judge

    validate_judge(args.judge, args.judge_kwargs)
    llm = load_judge(args.judge, cache=args.cache, **args.judge_kwargs)
    result = adapt_zh(llm, args.captions, args.tracks, seed=args.seed, max_reasks=args.max_reasks, progress=True)
    return _written(result, args.captions, "zh", "Chinese prompts")


def run_engine_command(args: argparse.Namespace) -> int:
    """Run the action chosen on the command line; 0 when done, 1 when shards are left for another run."""
    actions = {"run": _run, "estimate": _estimate, "sample": _sample, "agreement": _agreement, "status": _status,
               "curate": _curate, "zh": _zh, "gcot-review": _gcot_review, "gcot-agreement": _gcot_agreement}
    return actions[args.engine_action](args)
