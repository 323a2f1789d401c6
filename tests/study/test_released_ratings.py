"""Released human ratings as studies (seed 002, Tables 1-2): TIFA160's Likert ratings as DSG releases them, TIFA's
own and GenAI-Bench's, read by ``t2ireason ratings import`` into a study ``agreement``'s reader reads, and correlated
with a metric's per-image scores in the same command; on the excerpts of the releases in tests/data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.commands.mt2ie import add_mt2ie_args
from t2ireason.study.ratings import merge, read_ratings
from t2ireason.study.released import read_released, write_study
from t2ireason.study.sample import StudyError, file_digest, load_study

DATA = Path(__file__).resolve().parents[1] / "data"
DSG = DATA / "dsg"
RELEASED = DATA / "released_ratings"


@pytest.fixture(scope="module")
def expected():
    return json.loads((DSG / "expected_official.json").read_text())


def test_tifa160s_released_ratings_give_table_1s_dsg_row_in_one_command(tmp_path, capsys, expected):
    out = tmp_path / "tifa160"
    assert cli.main(["ratings", "import", "tifa160", str(DSG / "tifa160-likert-anns.csv"), "--out", str(out),
                     "--scores", f"DSG (PaLI)=vqa-answers:{DSG / 'pali17b_dsg.csv'}"]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "agreement.json").read_text())
    # the authors' compute_correlation on their calc_vqa_score of the released answers (dependencies as parse_utils
    # reads them), against each image's mean Likert rating: Table 1's DSG (PaLI) row on the excerpt
    authors = expected["correlation"]["dsg, dependencies as parse_utils reads them"]
    figures = result["evaluations"]["DSG (PaLI)"]
    assert figures["spearman_rho"] == pytest.approx(authors["spearman"], abs=1e-12)
    assert figures["kendall_tau"] == pytest.approx(authors["kendall"], abs=1e-12) and figures["n"] == authors["n"]
    assert {k: v["human"] for k, v in result["merged"].items()} == pytest.approx(expected["human_mean_likert"])
    assert "### MT2IE Tables 1 and 2: correlation with human ratings over every image" in printed
    assert "| DSG (PaLI) | 37.0 [" in printed and "| 29.3 [" in printed
    assert (out / "tables.md").read_text().count("DSG (PaLI)") == 1
    # each model's mean rating: a reference ranking MT2IE's --reference reads from the file
    reference = json.loads((out / "reference.json").read_text())
    assert list(reference) == ["sd1dot5", "sd2dot1", "mini-dalle", "sd1dot1", "vq-diffusion"]
    p = argparse.ArgumentParser()
    add_mt2ie_args(p)
    assert p.parse_args(["--model", "a=x", "--out", "o", "--reference", str(out / "reference.json")]).reference \
        == reference


def test_the_study_is_one_agreements_reader_reads(tmp_path, expected):
    study = write_study("tifa160", [DSG / "tifa160-likert-anns.csv"], tmp_path / "s")
    loaded = load_study(tmp_path / "s")
    assert loaded["id"] == study["id"] and loaded["kind"] == "scale" and loaded["protocol"]["scale"] == [1, 5]
    read = read_ratings(loaded, [tmp_path / "s" / "ratings"])
    assert read.problems == [] and sum(len(v) for v in read.answers.values()) == 150
    assert {k: v["human"] for k, v in merge(loaded, read).items()} == pytest.approx(expected["human_mean_likert"])
    item = next(it for it in loaded["items"] if it["id"] == "sd2dot1/tifa160_30")
    assert item["released"]["source_id"] == "partiprompt_76" and item["images"][0] == {
        "run": "sd2dot1", "key": "tifa160_30", "path": None, "sha256": None}
    assert write_study("tifa160", [DSG / "tifa160-likert-anns.csv"], tmp_path / "again")["id"] == study["id"]


def test_items_name_the_released_images_the_user_points_to(tmp_path):
    images = tmp_path / "images"
    (images / "sd2dot1").mkdir(parents=True)
    Image.new("RGB", (4, 4), (1, 2, 3)).save(images / "sd2dot1" / "tifa160_30.png")
    study = write_study("tifa160", [DSG / "tifa160-likert-anns.csv"], tmp_path / "s", images=images)
    found = {it["id"]: it["images"][0] for it in study["items"] if it["images"][0]["path"]}
    assert list(found) == ["sd2dot1/tifa160_30"]
    assert found["sd2dot1/tifa160_30"]["sha256"] == file_digest(images / "sd2dot1" / "tifa160_30.png")


def test_tifas_own_annotations_and_genai_bench(tmp_path, capsys):
    items, ratings = read_released("tifa-v1", [RELEASED / "human_annotations.json"])
    assert len(items) == 10 and items["mini_dalle/coco_669925"]["prompt"] == "A Christmas tree with lights and teddy bear"
    assert ratings["stable_diffusion_v1_1/coco_325049"] == {"rater1": 2.0, "rater2": 3.0}
    released = json.loads((RELEASED / "human_annotations.json").read_text())
    for name, rec in released.items():  # each image's mean is the release's human_avg
        key = f"{name[len(rec['text_id']) + 1:]}/{rec['text_id']}"
        assert sum(ratings[key].values()) / len(ratings[key]) == rec["human_avg"]
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({f"{n[len(r['text_id']) + 1:]}/{r['text_id']}": r["human_avg"] / 5
                                  for n, r in released.items()}))
    assert cli.main(["ratings", "import", "tifa-v1", str(RELEASED / "human_annotations.json"), "--out",
                     str(tmp_path / "tifa"), "--scores", f"as the people={scores}"]) == 0
    assert "| as the people | 100.0 [" in capsys.readouterr().out  # the people's own means agree with them

    items, ratings = read_released("genai-bench", [RELEASED / "genai_image.json"])
    assert sorted(items)[:2] == ["DALLE_3/00001", "DALLE_3/00002"]
    assert items["SDXL_Turbo/00002"]["image"] == "SDXL_Turbo/00002.jpeg"
    assert ratings["SDXL_Turbo/00002"] == {"rater1": 2.0, "rater2": 1.0, "rater3": 2.0}
    csv_scores = tmp_path / "scores.csv"
    csv_scores.write_text("t2i_model,item_id,score\n" + "".join(
        f"{k.split('/')[0]},{k.split('/')[1]},{sum(v.values())}\n" for k, v in ratings.items()))
    assert cli.main(["ratings", "import", "genai-bench", str(RELEASED / "genai_image.json"), "--out",
                     str(tmp_path / "genai"), "--scores", f"sum={csv_scores}"]) == 0
    assert json.loads((tmp_path / "genai" / "agreement.json").read_text())["evaluations"]["sum"]["n"] == 6


def test_bad_releases_and_scores_are_named(tmp_path, capsys):
    bad = tmp_path / "likert.csv"
    bad.write_text((DSG / "tifa160-likert-anns.csv").read_text().replace(",5\n", ",7\n", 1))
    with pytest.raises(StudyError, match=r"likert.csv, line \d+: rating '7' is off the 1-5 scale"):
        read_released("tifa160", [bad])
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(StudyError, match="not a TIFA160 Likert line"):
        read_released("tifa160", [other])
    with pytest.raises(StudyError, match="released ratings not found"):
        read_released("tifa160", [tmp_path / "nowhere.csv"])
    assert cli.main(["ratings", "import", "tifa160", str(DSG / "tifa160-likert-anns.csv"), "--out", str(tmp_path / "o"),
                     "--scores", f"x={tmp_path / 'missing.json'}"]) != 0
    assert "scores not found" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing written before the scores were read
    with pytest.raises(SystemExit):
        cli.main(["ratings", "import", "parti", str(bad), "--out", str(tmp_path / "p")])


LIKERT_HEADER = "dsg_prompt_split,t2i_model,item_id,source_id,worker_id,question,answer\n"
ANSWERS_HEADER = "dsg_prompt_split,qg_model,t2i_model,item_id,question,answer\n"  # the tifa and vq2a files' header
ASK = "How consistent is the image with the text description?"


def test_vq2a_answers_score_the_share_answered_yes_and_tifas_its_own_answers(tmp_path, capsys):
    from scipy.stats import kendalltau, spearmanr

    questions = json.loads((DATA / "tifa" / "sample_question_answers.json").read_text())
    tifa = [q for q in questions if q["id"] == "coco_301091"]  # 11 questions, 4 of them multiple choice
    likert = tmp_path / "likert.csv"
    ratings = {"m1": (5, 4), "m2": (2, 3), "m3": (3, 3)}
    likert.write_text(LIKERT_HEADER + "".join(f"tifa160,{m},tifa160_7,coco_301091,{w},{ASK},{r}\n"
                                              for m, rs in ratings.items() for w, r in zip((11, 12), rs)))
    # m1 answers every question as TIFA does; m2 says "yes" to all (right only on yes/no ones); m3 misses two
    said = {"m1": [q["answer"] for q in tifa], "m2": ["yes"] * 11,
            "m3": [q["answer"] for q in tifa[:9]] + ["no", "red"]}
    answers = tmp_path / "instructblip_tifa.csv"
    answers.write_text(ANSWERS_HEADER + "".join(f'tifa160,tifa,{m},tifa160_7,"{q["question"]}",{a}\n'
                                                for m, xs in said.items() for q, a in zip(tifa, xs)))
    vq2a = tmp_path / "instructblip_vq2a.csv"
    vq2a.write_text(ANSWERS_HEADER + "tifa160,vq2a,m1,tifa160_7,Who is on the beach? A surfer?,yes\n"
                    "tifa160,vq2a,m1,tifa160_7,What is the surfer carrying? board?,yes\n"
                    "tifa160,vq2a,m2,tifa160_7,Who is on the beach? A surfer?,no\n"
                    "tifa160,vq2a,m2,tifa160_7,What is the surfer carrying? board?,yes\n"
                    "tifa160,vq2a,m3,tifa160_7,Who is on the beach? A surfer?,\n"  # no answer: a failure
                    "tifa160,vq2a,m3,tifa160_7,What is the surfer carrying? board?,no\n")
    assert cli.main(["ratings", "import", "tifa160", str(likert), "--out", str(tmp_path / "s"),
                     "--tifa-questions", str(DATA / "tifa" / "sample_question_answers.json"),
                     "--scores", f"TIFA (Instruct-BLIP)=vqa-answers:{answers}",
                     "--scores", f"VQ2A (Instruct-BLIP)=vqa-answers:{vq2a}"]) == 0
    result = json.loads((tmp_path / "s" / "agreement.json").read_text())
    human = [4.5, 2.5, 3.0]
    for label, scores in (("TIFA (Instruct-BLIP)", [1.0, 7 / 11, 9 / 11]), ("VQ2A (Instruct-BLIP)", [1.0, 0.5, 0.0])):
        figures = result["evaluations"][label]
        assert figures["spearman_rho"] == pytest.approx(spearmanr(scores, human).statistic), label
        assert figures["kendall_tau"] == pytest.approx(kendalltau(scores, human).statistic), label
    # without TIFA's answers, a multiple-choice answer is no "yes": m1 would lose its 4 of them
    from t2ireason.study.released import read_scores

    assert read_scores(f"vqa-answers:{answers}")[0]["m1/tifa160_7"] == pytest.approx(7 / 11)


def test_a_rated_image_without_answers_counts_zero_as_the_authors_count_it(tmp_path, capsys):
    out = tmp_path / "s"
    answers = tmp_path / "pali17b_dsg.csv"
    lines = (DSG / "pali17b_dsg.csv").read_text().splitlines(keepends=True)
    answers.write_text("".join(line for line in lines if "vq-diffusion,tifa160_6," not in line))
    assert cli.main(["ratings", "import", "tifa160", str(DSG / "tifa160-likert-anns.csv"), "--out", str(out),
                     "--scores", f"DSG=vqa-answers:{answers}", "--scores", f"DSG scores={tmp_path / 's.json'}"]) != 0
    (tmp_path / "s.json").write_text(json.dumps({"mini-dalle/tifa160_0": 1.0, "sd1dot1/tifa160_0": 0.5}))
    assert cli.main(["ratings", "import", "tifa160", str(DSG / "tifa160-likert-anns.csv"), "--out", str(out),
                     "--scores", f"DSG=vqa-answers:{answers}", "--scores", f"two={tmp_path / 's.json'}"]) == 0
    printed = capsys.readouterr().out
    assert ("DSG: 1 rated image(s) have no answer (e.g. vq-diffusion/tifa160_6); counted 0, as the authors' "
            "tifa160_correlation.py counts them") in printed
    assert "two: 28 rated image(s) have no score (e.g. mini-dalle/tifa160_108); left out" in printed
    result = json.loads((out / "agreement.json").read_text())
    assert result["evaluations"]["DSG"]["n"] == 30 and result["evaluations"]["two"]["n"] == 2
