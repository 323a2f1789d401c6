"""Studies drawn as the papers drew them, raters' files that do not fit (one line each, never counted),
per-question agreement by hand, the report's section, the Hub dataset export and the README's commands.
The raters' files here are written as the page exports them (the page itself: test_rating_page.py)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
from collections import Counter
from pathlib import Path

import datasets
import numpy as np
import pytest
from huggingface_hub import DatasetCard
from PIL import Image
from scipy import stats

from t2ireason import cli
from t2ireason.study.protocols import level_of

from .runs import EVALUATION, ratings_file, scored_run, study_key

ROOT = Path(__file__).resolve().parents[2]


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("/".join(parts).encode()).digest()


def _write(folder: Path, name: str, content) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture(scope="module")
def t2i_run(tmp_path_factory):
    return scored_run(tmp_path_factory.mktemp("runs"), "t2i-reasonbench", "model-a")


def test_a_study_is_drawn_as_the_paper_drew_it_and_drawn_again_the_same(t2i_run, tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main(["rate", str(t2i_run.path), "--out", str(out), "--raters", "5", "--seed", "7"]) == 0
    study = study_key(out)
    # the paper's 20 prompts a dimension (the sample has 4 each: all of them), 3 raters an image
    assert study["per_group"] == 20 and study["raters_per_item"] == 3 and study["seed"] == 7
    assert {g: len(ids) for g, ids in study["sample"].items()} == {"idiom": 4, "textual": 4, "entity": 4,
                                                                   "scientific": 4}
    assert study["protocol"]["source"].startswith("seed 000 (T2I-ReasonBench)") and study["protocol"]["paper_sample"]
    assert all(len(set(it["raters"])) == 3 for it in study["items"])
    loads = Counter(r for it in study["items"] for r in it["raters"])
    assert max(loads.values()) - min(loads.values()) <= 1 and sum(loads.values()) == 48  # shared evenly
    for rater, queue in study["queues"].items():
        assert sorted(e["item"] for e in queue) == sorted(it["id"] for it in study["items"] if rater in it["raters"])
    for it in study["items"]:  # each image copied into the study, and its digest recorded
        copy = out / it["images"][0]["file"]
        assert copy.read_bytes() == (t2i_run.images_dir / it["images"][0]["key"]).read_bytes()
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == it["images"][0]["sha256"]
    # the criterion is the paper's figure with the row put in
    idiom = next(it for it in study["items"] if it["group"] == "idiom")
    assert idiom["criterion"][0]["text"].startswith(f"Given the prompt “{idiom['prompt']}”, idiom it contains “")
    assert "5 - The image independently and unambiguously depicts" in idiom["criterion"][0]["text"]
    page = (out / "index.html").read_text()
    assert "script-src 'nonce-" in page and "default-src 'none'" in page and "http" not in page.split("<body>")[1]

    # drawn again: the same study (the raters' saved answers still belong to it)
    assert cli.main(["rate", str(t2i_run.path), "--out", str(out), "--raters", "5", "--seed", "7"]) == 0
    assert study_key(out)["id"] == study["id"]
    # another draw into the same folder is refused, the folder left as it was
    capsys.readouterr()
    assert cli.main(["rate", str(t2i_run.path), "--out", str(out), "--seed", "8"]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning: --seed 8")]
    assert len(err) == 1 and f"{out} holds another study ({study['id']})" in err[0]
    assert study_key(out)["id"] == study["id"]
    # a seed of its own: another sample order and assignment, another id
    assert cli.main(["rate", str(t2i_run.path), "--out", str(tmp_path / "other"), "--raters", "5"]) == 0
    assert study_key(tmp_path / "other")["id"] != study["id"]


def test_misfit_ratings_are_named_one_line_each_and_never_counted(tmp_path, capsys):
    run = scored_run(tmp_path, "t2i-reasonbench", "model-a")
    out = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(out), "--per-group", "2", "--raters", "4"]) == 0
    study = study_key(out)
    folder = out / "ratings"
    rating = lambda it: {"value": 1 + _digest(it["id"])[0] % 5}  # noqa: E731
    _write(folder, "rater1.json", ratings_file(study, "rater1", rating))
    _write(folder, "rater1-first.json", ratings_file(study, "rater1", lambda it: {"value": 5},
                                                      exported="2025-01-01T10:45:00.000Z"))
    _write(folder, "rater2.json", ratings_file(study, "rater2", rating))
    bad = ratings_file(study, "rater3", rating)
    mine = [e["item"] for e in study["queues"]["rater3"]]
    theirs = next(i["id"] for i in study["items"] if "rater3" not in i["raters"])
    bad["answers"][mine[0]]["value"] = 7
    bad["answers"][mine[1]] = {"value": "four"}
    bad["answers"]["i9999"] = {"value": 3}
    bad["answers"][theirs] = {"value": 3}
    _write(folder, "rater3.json", bad)
    _write(folder, "notes.json", "{not json")
    _write(folder, "list.json", "[]")
    _write(folder, "other-study.json", {**ratings_file(study, "rater4", rating), "study": "prism-bench-scale-0"})
    _write(folder, "stranger.json", ratings_file(study, "rater4", rating) | {"rater": "zoe"})
    # an image replaced in the run after it was rated: its ratings are about another image
    changed, deleted = study["items"][2], study["items"][5]
    Image.new("RGB", (24, 24), (0, 0, 0)).save(run.images_dir / changed["images"][0]["key"])
    (run.images_dir / deleted["images"][0]["key"]).unlink()  # and one deleted

    assert cli.main(["agreement", str(run.path), "--ratings", str(folder)]) == 0
    printed = capsys.readouterr().out.splitlines()
    result = json.loads((run.path / "agreement" / study["id"] / "agreement.json").read_text())
    problems = result["problems"]
    expected = {
        "notes.json": "notes.json: not a ratings file (JSONDecodeError",
        "list.json": 'list.json: not a t2i-reason ratings file (no "format": "t2ireason-ratings"); left out',
        "other-study.json": f"other-study.json: a file of another study ('prism-bench-scale-0', not {study['id']}); "
                            "left out",
        "stranger.json": "stranger.json: rater 'zoe' is not one of the study's raters (rater1, rater2, rater3, "
                         "rater4); left out",
        "rater1-first.json": "rater1-first.json: a second file of rater rater1 (rater1.json, exported later, is "
                             "kept); left out",
    }
    for name, line in expected.items():  # each bad file: one line, naming it
        mentions = [p for p in problems if p.startswith(f"{name}:")]
        assert len(mentions) == 1 and mentions[0].startswith(line), (name, mentions)
        assert mentions[0] in printed
    assert f"rater3.json: item {mine[0]}: rating 7 is off the 1-5 scale; left out" in problems
    assert f"rater3.json: item {mine[1]}: rating 'four' is off the 1-5 scale; left out" in problems
    assert "rater3.json: item i9999 is not in the study; left out" in problems
    assert f"rater3.json: item {theirs} was not given to rater rater3; left out" in problems
    assert (f"item {changed['id']}: the image {changed['images'][0]['key']} of run model-a is another file now "
            "(not the image rated); its ratings are left out") in problems
    assert (f"item {deleted['id']}: the image {deleted['images'][0]['key']} of run model-a is gone (not the image "
            "rated); its ratings are left out") in problems
    assert len(problems) == len(expected) + 6

    # only what fits is counted: rater1's last file, rater2's, rater3's good answers; not the changed image
    kept = {f["file"]: f["answers"] for f in result["files"]}
    assert kept == {"rater1.json": 6, "rater2.json": 6, "rater3.json": 4}
    assert changed["id"] not in result["merged"] and deleted["id"] not in result["merged"]
    for item_id, m in result["merged"].items():
        assert all(v == 1 + _digest(item_id)[0] % 5 for v in m["ratings"].values())  # never rater1's first file
    counted = sum(len(m["ratings"]) for m in result["merged"].values())
    assert result["raters"]["ratings"] == counted == sum(
        1 for r in ("rater1", "rater2", "rater3") for e in study["queues"][r]
        if e["item"] not in (changed["id"], deleted["id"]) and not (r == "rater3" and e["item"] in mine[:2]))
    assert result["evaluations"][EVALUATION]["n"] == len(result["merged"])


def test_per_question_agreement_by_hand(tmp_path, capsys):
    run = scored_run(tmp_path, "r2i-bench", "model-a")
    out = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(out), "--kind", "questions", "--per-group", "1",
                     "--evaluation", EVALUATION]) == 0
    study = study_key(out)
    items = {it["id"]: it for it in study["items"]}
    for rater in study["raters"]:  # each rater answers on the question's own levels
        def answer(it, rater=rater):
            return {"questions": {q["id"]: sum(q["levels"][_digest(rater, it["id"], q["id"])[0] % len(q["levels"])]) / 2
                                  for q in it["questions"]}}
        _write(out / "ratings", f"{rater}.json", ratings_file(study, rater, answer))
    assert cli.main(["agreement", str(run.path), "--ratings", str(out / "ratings")]) == 0
    printed = capsys.readouterr().out
    result = json.loads((run.path / "agreement" / study["id"] / "agreement.json").read_text())
    figures = result["evaluations"][EVALUATION]

    judged = {r.id: r for r in run.results(EVALUATION)}
    judge, human, hits = [], [], []
    for item_id, it in items.items():
        result_of = judged[it["row"]]
        for n, q in enumerate(it["questions"]):
            answers = [sum(q["levels"][_digest(r, item_id, q["id"])[0] % len(q["levels"])]) / 2
                       for r in study["raters"]]
            j = result_of.questions[n].score
            if j is None:
                continue
            judge.append(j)
            human.append(np.mean(answers))
            top = Counter(answers).most_common()
            if len(top) == 1 or top[0][1] > top[1][1]:  # a majority answer
                hits.append(level_of(j, q["levels"]) == level_of(top[0][0], q["levels"]))
    assert figures["n"] == len(judge) > 10 and figures["n_accuracy"] == len(hits)
    assert math.isclose(figures["accuracy"], np.mean(hits), abs_tol=1e-12)
    assert math.isclose(figures["kendall_tau"], stats.kendalltau(judge, human).statistic, abs_tol=1e-12)
    assert math.isclose(figures["spearman_rho"], stats.spearmanr(judge, human).statistic, abs_tol=1e-12)
    assert "Per-question agreement with human answers" in printed and f"{np.mean(hits):.3f}" in printed


@pytest.mark.slow
def test_the_report_shows_the_agreement_and_the_study_exports_as_a_dataset(t2i_run, tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main(["rate", str(t2i_run.path), "--out", str(out), "--per-group", "2"]) == 0
    study = study_key(out)
    for rater in study["raters"]:
        _write(out / "ratings", f"{rater}.json",
               ratings_file(study, rater, lambda it, r=rater: {"value": 1 + _digest(r, it["id"])[0] % 5}))
    export = tmp_path / "dataset"
    assert cli.main(["agreement", str(t2i_run.path), "--ratings", str(out / "ratings"), "--export", str(export),
                     "--license", "cc-by-4.0"]) == 0
    result = json.loads((t2i_run.path / "agreement" / study["id"] / "agreement.json").read_text())

    assert cli.main(["report", str(t2i_run.path), "--out", str(tmp_path / "report")]) == 0
    tables = (tmp_path / "report" / "tables.md").read_text()
    assert f"## Agreement with people: {study['title']}" in tables and "Idiom τ" in tables
    assert "Inter-rater agreement (Krippendorff's α)" in (tmp_path / "report" / "tables.csv").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Agreement with people: " in html and "Krippendorff" in html

    items = datasets.load_dataset(str(export), "items", split="test")
    ratings = datasets.load_dataset(str(export), "ratings", split="test")
    assert len(items) == len(study["items"]) and len(ratings) == 3 * len(study["items"])
    for row in items:
        assert math.isclose(row["human"], result["merged"][row["item"]]["human"])
        assert row["image"].size == (24, 24) and row["run"] == "model-a" and row["criterion"].startswith("Human")
    assert {(r["item"], r["rater"]): r["value"] for r in ratings} == {
        (i, r): v for i, m in result["merged"].items() for r, v in m["ratings"].items()}
    card = DatasetCard.load(export / "README.md")
    assert card.data.license == "cc-by-4.0" and {c["config_name"] for c in card.data.configs} == {"items", "ratings"}
    assert json.loads((export / "study.json").read_text())["id"] == study["id"]


def test_what_cannot_be_a_study_is_one_line(t2i_run, tmp_path, capsys):
    def error(*argv: str) -> str:
        assert cli.main(list(argv)) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    out = str(tmp_path / "study")
    assert "an A/B/tie study compares two runs' images of each prompt; got 1 run(s)" in error(
        "rate", str(t2i_run.path), "--out", out, "--kind", "preference")
    assert "is not a run folder" in error("rate", str(tmp_path / "nowhere"), "--out", out)
    assert "each image goes to 3 raters (raters_per_item, --raters-per-item; the paper's: 3) but the study has 2" in error(
        "rate", str(t2i_run.path), "--out", out, "--raters", "2", "--raters-per-item", "3")
    # issue 43: "need ... got 20 and 3", naming no option, for the paper's 3 raters an image and --raters 2
    said = error("rate", str(t2i_run.path), "--out", out, "--raters", "2")
    assert "but the study has 2 (raters, --raters)" in said and "--raters 3 or more" in said, said
    assert "--raters-per-item 2 or fewer" in said
    assert not (tmp_path / "study").exists()  # nothing made
    assert "no study key (<study>.key.json beside the raters' folder <study>) found from the ratings given: name it " \
           "with --study" in error(
        "agreement", str(t2i_run.path), "--ratings", str(tmp_path))
    assert cli.main(["rate", str(t2i_run.path), "--out", out, "--per-group", "1"]) == 0
    capsys.readouterr()
    assert "no usable ratings file among" in error("agreement", str(t2i_run.path), "--ratings", out + "/ratings")
    assert "--export needs --license" in error("agreement", str(t2i_run.path), "--ratings", out, "--export", "x")


def test_a_placeholder_license_or_repo_for_the_study_dataset_is_one_line_before_anything_is_written(
        t2i_run, tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main(["rate", str(t2i_run.path), "--out", str(out), "--per-group", "1", "--seed", "3"]) == 0
    study = study_key(out)
    for rater in study["raters"]:
        _write(out / "ratings", f"{rater}.json",
               ratings_file(study, rater, lambda it, r=rater: {"value": 1 + _digest(r, it["id"])[0] % 5}))
    capsys.readouterr()
    export = tmp_path / "dataset"
    for extra, said in ((["--license", "<the images' license>"], "is not a license id the Hub knows"),
                        (["--license", "cc-by-4.0", "--repo", "<org>/study"], "is not a Hub repository id")):
        assert cli.main(["agreement", str(t2i_run.path), "--ratings", str(out / "ratings"),
                         "--export", str(export), *extra]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], lines
        assert not export.exists()  # no card written with it
    assert not (t2i_run.path / "agreement" / study["id"]).exists()  # nor the agreement computed for nothing
    assert cli.main(["agreement", str(t2i_run.path), "--ratings", str(out / "ratings"), "--export", str(export),
                     "--license", "CC-BY-4.0"]) == 0
    assert DatasetCard.load(export / "README.md").data.license == "cc-by-4.0"  # the Hub's id, as the results'


def _readme_commands() -> list[list[str]]:
    """The t2ireason commands of the README's section "Validate a judge against people"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Validate a judge against people", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith("t2ireason ")]


def test_the_readme_study_commands_run(tmp_path, monkeypatch, capsys):
    commands = _readme_commands()
    assert [c[1] for c in commands] == ["rate", "agreement"]
    rate, agreement = commands
    monkeypatch.chdir(tmp_path)
    for folder in rate[2:rate.index("--out")]:
        scored_run(tmp_path / Path(folder).parent, "t2i-reasonbench", Path(folder).name)
    assert cli.main(rate[1:]) == 0
    study_dir = Path(rate[rate.index("--out") + 1])
    study = study_key(study_dir)
    ratings = Path(agreement[agreement.index("--ratings") + 1])
    for rater in study["raters"]:  # the raters' part: what each one's "Export my answers" downloads
        _write(ratings, f"{study['id']}-{rater}.json",
               ratings_file(study, rater, lambda it, r=rater: {"value": 1 + _digest(r, it["id"])[0] % 5}))
    assert cli.main(agreement[1:]) == 0
    assert "T2I-ReasonBench Table 1: correlation with human ratings" in capsys.readouterr().out
    for folder in rate[2:rate.index("--out")]:  # each run holds the figures, for its report
        assert (Path(folder) / "agreement" / study["id"] / "agreement.json").is_file()


def test_ratings_saved_with_a_bom_an_upper_case_extension_or_a_key_twice_are_read_or_named(tmp_path, capsys):
    """Issue 43: a file saved with a UTF-8 byte-order mark was left out whole; an item given twice in one file kept
    its last answer in silence; `ann.JSON` was skipped without a line."""
    run = scored_run(tmp_path, "t2i-reasonbench", "model-a")
    out = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(out), "--per-group", "2", "--raters", "3"]) == 0
    study = study_key(out)
    folder = out / "ratings"
    rating = lambda it: {"value": 1 + _digest(it["id"])[0] % 5}  # noqa: E731
    folder.mkdir(exist_ok=True)
    (folder / "rater1.json").write_text(json.dumps(ratings_file(study, "rater1", rating)), encoding="utf-8-sig")
    (folder / "rater2.JSON").write_text(json.dumps(ratings_file(study, "rater2", rating)))
    third = ratings_file(study, "rater3", rating)
    first = study["queues"]["rater3"][0]["item"]
    answers = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in third.pop("answers").items()]
    answers.append(f'{json.dumps(first)}: {{"value": 1}}')  # the first item answered again, with another value
    twice = json.dumps(third)[:-1] + ', "answers": {' + ", ".join(answers) + "}}"
    (folder / "rater3.json").write_text(twice)
    (folder / "notes.txt").write_text("rater2 took a break at item 4")
    assert cli.main(["agreement", str(run.path), "--ratings", str(folder)]) == 0
    capsys.readouterr()
    result = json.loads((run.path / "agreement" / study["id"] / "agreement.json").read_text())
    kept = {f["file"]: f["answers"] for f in result["files"]}
    queue = {r: len(study["queues"][r]) for r in ("rater1", "rater2", "rater3")}
    assert kept == {"rater1.json": queue["rater1"], "rater2.JSON": queue["rater2"], "rater3.json": queue["rater3"] - 1}
    assert f"rater3.json: item {first} is answered more than once in the file; left out" in result["problems"]
    assert "notes.txt: not a .json file; not read" in result["problems"]
    assert "rater3" not in result["merged"].get(first, {}).get("ratings", {})
