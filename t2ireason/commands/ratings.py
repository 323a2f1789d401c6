"""``t2ireason ratings import``: a released human rating set (TIFA160's, GenAI-Bench's) as a study, and MT2IE's
Tables 1 and 2 from it in the same command (:mod:`t2ireason.study.released`)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_ratings_args", "run_ratings"]


def _scores(text: str) -> tuple[str, str]:
    label, sep, spec = text.partition("=")
    if not sep or not label.strip() or not spec:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=FILE, e.g. 'DSG (PaLI)=dsg-answers:pali17b_dsg.csv' "
                                         "or 'VQAScore (Llava-v1.6-34b)=scores.json'")
    return label.strip(), spec


def add_ratings_args(p: argparse.ArgumentParser) -> None:
    from ..study.released import FORMATS

    p.add_argument("action", choices=["import"], help="import: read a released rating set as a study")
    p.add_argument("format", choices=list(FORMATS),
                   help="the release: " + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    p.add_argument("files", nargs="+", help="the released ratings file(s), as the authors release them")
    p.add_argument("--out", required=True,
                   help="the study's folder (ratings/<rater>.json, agreement.json, tables.md, reference.json), its key "
                        "<out>.key.json beside it")
    p.add_argument("--images", default=None,
                   help="the released images' folder (tifa160: <t2i_model>/<item_id>.<ext>; tifa-v1: the image_path "
                        "of each record; genai-bench: <model>/<prompt_idx>.jpeg): each item names its image")
    p.add_argument("--scores", action="append", type=_scores, default=[], metavar="LABEL=FILE",
                   help="per-image scores to correlate with the ratings, a row of MT2IE's Tables 1-2 each: a JSON "
                        "object '<model>/<item>' -> score, a CSV t2i_model,item_id,score, or vqa-answers:<file> (the "
                        "VQA answers DSG releases for TIFA160, vqa_answers_release/<vqa>_{dsg,tifa,vq2a}.csv, scored "
                        "as the authors' tifa160_correlation.py: DSG's with its dependency rule); repeat for several")
    p.add_argument("--tifa-questions", default=None, metavar="FILE",
                   help="TIFA's tifa_v1.0_question_answers.json: the right answers of the multiple-choice questions "
                        "of a vqa-answers:<vqa>_tifa.csv (without it, every TIFA question counts 'yes' as right)")


def run_ratings(args: argparse.Namespace) -> int:
    from ..report.tables import to_markdown
    from ..study.released import correlate, read_released, read_scores, tifa_gold, write_result, write_study
    from ..study.sample import RATINGS_DIR

    gold = None
    if args.tifa_questions:  # TIFA's own answers, by item: the Likert file names each item's TIFA prompt
        items, _ = read_released(args.format, args.files)
        gold = tifa_gold(args.tifa_questions, {it["item"]: it["source_id"] for it in items.values()
                                               if it.get("source_id")})
    scores = {label: read_scores(spec, gold) for label, spec in args.scores}  # read before anything is written
    study = write_study(args.format, args.files, args.out, images=args.images)
    out = Path(args.out)
    with_image = sum(it["images"][0]["path"] is not None for it in study["items"])
    print(f"study {study['id']}: {len(study['items'])} images of {len(study['runs'])} models rated by "
          f"{len(study['raters'])} raters; {with_image} with their released image"
          + ("" if args.images else " (give --images to name them)"))
    result = correlate(study, out / RATINGS_DIR, scores)
    for line in result["problems"]:
        print(line)
    print(to_markdown(result["tables"]))
    write_result(result, out)
    print(f"key: {out.parent / (out.name + '.key.json')}; "
          f"ratings: {out / RATINGS_DIR}; tables: {out / 'tables.md'}; reference ranking (each model's mean rating, "
          f"for t2ireason mt2ie --reference): {out / 'reference.json'}")
    return 0
