"""``t2ireason rate`` and ``t2ireason agreement``: a human study of a judge, from the command line."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..study.protocols import KINDS, PROTOCOLS

__all__ = ["add_rate_args", "run_rate", "add_agreement_args", "run_agreement"]


def _positive(text: str) -> int:
    from .options import positive_int

    return positive_int(text)


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"a seed is a whole number >= 0, got {text!r}")
    return seed


def _raters(text: str) -> int | list[str]:
    """``3`` (rater1..rater3) or ``ana,ben,chloe``."""
    if text.strip().isdigit():
        return int(text)
    return [name.strip() for name in text.split(",")]


def add_rate_args(p: argparse.ArgumentParser) -> None:
    defaults = "; ".join(f"{b}: {pr.kind}" + (f" {pr.scale[0]}-{pr.scale[1]}" if pr.scale else "")
                         for b, pr in PROTOCOLS.items())
    p.add_argument("runs", nargs="+", help="run folders of one benchmark whose images are rated (two for A/B/tie)")
    p.add_argument("--out", required=True,
                   help="the raters' folder to write (index.html, images/, ratings/: it names no run), and beside it "
                        "the study's key, <out>.key.json, which stays with you (agreement reads it)")
    p.add_argument("--kind", choices=KINDS, default=None,
                   help=f"what the raters answer (default: what the benchmark's paper asked; {defaults}); "
                        "questions: the judge's own questions of --evaluation")
    p.add_argument("--per-group", type=_positive, default=None,
                   help="prompts drawn per dimension, track or category (default: the paper's 20)")
    p.add_argument("--raters", type=_raters, default=None,
                   help="how many raters (named rater1, rater2...) or their names, comma-separated "
                        "(default: as many as each image needs)")
    p.add_argument("--raters-per-item", type=_positive, default=None,
                   help="raters of each image (default: the paper's 3)")
    p.add_argument("--seed", type=_seed, default=None,
                   help="seed of the sample, the ids, names, sides and the raters' assignment and order (default: a "
                        "secret one, kept in the key; one given here draws a reproducible study that anyone who "
                        "guesses it can unblind)")
    p.add_argument("--evaluation", default=None, help="with --kind questions: the evaluation whose questions are asked")
    p.add_argument("--title", default=None, help="the study's title on the page (one that names a run or its model "
                                                  "is refused: the raters would read it)")


def run_rate(args: argparse.Namespace) -> int:
    import sys

    from ..study.sample import PAGE_FILE, RATINGS_DIR, make_study

    if args.seed is not None and args.seed < 2 ** 64:
        print(f"warning: --seed {args.seed}: the ids, image names and sides follow from the seed alone; a rater who "
              "guesses it can recompute which run made each image from two runs of their own over the same prompts. "
              "Without --seed a secret one is drawn and kept in the key", file=sys.stderr)

    study = make_study(args.runs, args.out, kind=args.kind, per_group=args.per_group, raters=args.raters,
                       raters_per_item=args.raters_per_item, seed=args.seed, evaluation=args.evaluation,
                       title=args.title)
    out = Path(args.out)
    groups = ", ".join(f"{study['groups'][g]} {len(ids)}" for g, ids in study["sample"].items())
    print(f"study {study['id']}: {len(study['items'])} items ({study['kind']}; prompts per group: {groups}), "
          f"each rated by {study['raters_per_item']} of {len(study['raters'])} raters "
          f"({', '.join(f'{r} {len(q)}' for r, q in study['queues'].items())})")
    if study["unscorable"]:
        rid, why = next(iter(study["unscorable"].items()))
        print(f"{len(study['unscorable'])} prompt(s) left out of the sample: the benchmark cannot score them "
              f"({rid}: {why}{'; the key lists them' if len(study['unscorable']) > 1 else ''})")
    print(f"rating page: {out / PAGE_FILE} (send the folder {out}: it names no run; each rater opens the page, names "
          "themself, rates and exports one file)")
    print(f"key: {study['key_file']} (keep it, do not send it: it says which run made each image)")
    print(f"then put the raters' files in {out / RATINGS_DIR} and run: t2ireason agreement "
          f"{' '.join(args.runs)} --ratings {out / RATINGS_DIR}")
    return 0


def add_agreement_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="the run folders the study rated, with their evaluations")
    # one value an option, repeated for several: `--ratings <folder> runs/a runs/b` must leave the runs to `runs`
    p.add_argument("--ratings", action="append", default=None, metavar="FILE_OR_FOLDER",
                   help="the raters' exported files, or a folder of them; repeat for several (or, for two judges, "
                        "--reference and --substitute)")
    p.add_argument("--reference", default=None, metavar="EVALUATION",
                   help="two judges instead of people: the evaluation of the paper's judge (on a sample: evaluate "
                        "--sample), against which --substitute is certified")
    p.add_argument("--substitute", default=None, metavar="EVALUATION",
                   help="the evaluation of the substitute judge, on the same images: its certificate (each cell's "
                        "offset with its interval, image-level tau and rho, the runs' rank agreement) is written "
                        "into each run, <run>/certificates/<substitute>-vs-<reference>/, and cited by its reports")
    p.add_argument("--study", default=None,
                   help="the study's key, <study>.key.json, or the raters' folder beside it (default: the one the "
                        "ratings sit in, <study>/ratings)")
    p.add_argument("--evaluation", action="append", default=None,
                   help="an evaluation compared, a row each; repeat for several (default: every one finished in all "
                        "the runs, whatever its metric; the rows in the order of the paper's table, then the metrics "
                        "it has not)")
    p.add_argument("--export", default=None, metavar="FOLDER",
                   help="also write the study, its sample and the merged ratings as a Hub dataset folder")
    p.add_argument("--license", default=None, help="with --export: the license of the images and ratings")
    p.add_argument("--repo", default=None, help="with --export: publish the folder to this Hub dataset repository")
    p.add_argument("--private", action="store_true", help="with --repo: create the repository as private")
    p.add_argument("--dry-run", action="store_true", help="with --repo: list what would be uploaded, send nothing")


def run_agreement(args: argparse.Namespace) -> int:
    if args.reference or args.substitute:
        return _certify(args)
    if not args.ratings:
        raise ValueError("give --ratings (the raters' files: people against the judges) or --reference and "
                         "--substitute (two judges' evaluations: a substitute judge certified)")
    from ..report.tables import to_markdown
    from ..study.agreement import compute_agreement, find_study, write_agreement

    if args.export and not args.license:
        raise ValueError("--export needs --license: the license of the images and ratings (e.g. cc-by-4.0)")
    if args.repo and not args.export:
        raise ValueError("--repo publishes the --export folder: give --export too")
    if args.export:  # the card's metadata checked before the agreement is computed and written
        from ..hub_ids import check_license, check_repo_id

        args.license = check_license(args.license)
        if args.repo:
            check_repo_id(args.repo)
    study = find_study(args.ratings, args.study)
    result = compute_agreement(study, args.runs, args.ratings, evaluations=args.evaluation)
    for line in result["problems"]:
        print(line)
    print(f"{len(result['files'])} raters' files read: {', '.join(f['file'] for f in result['files'])}")
    print(to_markdown(result["tables"]))
    folders = write_agreement(result, args.runs)
    print(f"tables: {', '.join(str(f) for f in folders)} (the runs' report shows them: t2ireason report)")
    if args.export:
        from ..publish import folder_files, publish
        from ..study.export import export_study

        folder = export_study(study, result, args.export, license=args.license, repo_id=args.repo)
        print(f"study dataset in {folder} ({len(folder_files(folder))} files)")
        if args.repo:
            plan = publish(folder, args.repo, private=args.private or None, dry_run=args.dry_run)
            print(f"{'would upload' if args.dry_run else 'uploaded'} {len(plan['files'])} files to dataset "
                  f"{plan['repo_id']}")
    return 0


def _certify(args: argparse.Namespace) -> int:
    from ..runs import Run
    from ..study.certificate import CERTIFICATE_DIR, certificate_line, certify, write_certificate

    if not (args.reference and args.substitute):
        raise ValueError("a certificate needs both --reference and --substitute (the two judges' evaluations)")
    if args.ratings:
        raise ValueError("--ratings compares people with judges; --reference and --substitute two judges: one or "
                         "the other")
    runs = [Run.open(path) for path in args.runs]
    cert = certify(runs, args.reference, args.substitute)
    for run in runs:
        write_certificate(cert, run.path / CERTIFICATE_DIR / f"{args.substitute}-vs-{args.reference}")
    print(certificate_line(cert))
    print(f"certificate: <run>/{CERTIFICATE_DIR}/{args.substitute}-vs-{args.reference}/certificate.json in each run "
          "(the runs' reports cite it)")
    return 0
