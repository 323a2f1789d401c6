"""FLUX-Reason-6M's human review of GCoTs (seed 004, appendix B.5): drawn from a release, reviewed on the study
kit's page in a real browser, read back with the pass rate and the reviewers' agreement, written into the release."""

from __future__ import annotations

import io
import json

import datasets
import krippendorff
import numpy as np
import pyarrow.parquet as pq
import pytest
from _browser import wait_until
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks.flux_reason import FEATURES
from t2ireason.study.gcot_review import load_gcot_review, review_result
from t2ireason.study.page import RATINGS_FORMAT


def _png(value: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (value, 0, 0)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def release(tmp_path):
    """An engine release's shape: data/train-*.parquet in the flux-reason-6m schema, statistics.json."""
    rows = []
    for i in range(6):
        rows.append({"id": f"r{i}", "image": {"bytes": _png(40 * i), "path": f"r{i}.png"},
                     "characteristics": ["style"], "characteristic_scores": {"style": 8.0},
                     "captions": {"style": f"style caption {i}"}, "gcot": None if i == 5 else f"gcot {i}",
                     "original_caption": None, "captions_zh": {}, "gcot_zh": None, "original_caption_zh": None,
                     "source": "laion"})
    out = tmp_path / "release"
    (out / "data").mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=FEATURES).to_parquet(str(out / "data" / "train-00000.parquet"))
    (out / "statistics.json").write_text("{}")
    return out


def _answers_file(folder, review, rater, verdicts):
    answers = {item: ({"verdict": "edit", "text": v[1]} if isinstance(v, tuple) else {"verdict": v})
               | {"at": "2026-11-29T00:00:00Z"} for item, v in verdicts.items()}
    path = folder / f"{rater}.json"
    path.write_text(json.dumps({"format": RATINGS_FORMAT, "version": 1, "study": review["id"], "rater": rater,
                                "exported": "2026-11-29T00:00:00Z", "answers": answers}))
    return path


def test_review_drawn_decided_and_written_back(release, tmp_path, capsys):
    out = tmp_path / "review"
    assert cli.main(["engine", "gcot-review", "--data", str(release), "--out", str(out), "--n", "4",
                     "--reviewers", "ana", "ben", "--seed", "s1"]) == 0
    review = load_gcot_review(out)
    ids = [it["id"] for it in review["items"]]
    assert len(ids) == 4 and "r5" not in ids  # a row without a GCoT is never drawn
    assert all((out / it["images"][0]["file"]).is_file() for it in review["items"])
    assert (out / "review.html").is_file() and review["seed"] == "s1"
    again = tmp_path / "again"
    cli.main(["engine", "gcot-review", "--data", str(release), "--out", str(again), "--n", "4", "--seed", "s1"])
    assert [it["id"] for it in load_gcot_review(again)["items"]] == ids  # the seed fixes the draw

    a, b, c, d = ids
    files = tmp_path / "files"
    files.mkdir()
    _answers_file(files, review, "ana", {a: "accept", b: ("edit", "fixed gcot"), c: "accept", d: "accept"})
    _answers_file(files, review, "ben", {a: "accept", b: ("edit", "fixed gcot "), c: "reject", d: "bogus"})
    result = review_result(review, [files])
    assert result["problems"] == [f"ben.json: item {d}: verdict 'bogus' is not accept, reject or edit; left out"]
    decisions = result["decisions"]
    assert [decisions[x]["decision"] for x in (a, b, c, d)] == ["passed", "corrected", "removed", "passed"]
    assert result["pass_rate"] == pytest.approx(2 / 4) and result["items_with_two_reviewers"] == 3
    assert result["agreement"] == pytest.approx(2 / 3)
    data = np.array([[1, 0, 1], [1, 0, 0]], dtype=float)  # accept (1) or not, items a, b, c
    assert result["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))

    capsys.readouterr()
    assert cli.main(["engine", "gcot-agreement", str(out), str(files), "--apply", str(release)]) == 0
    said = capsys.readouterr().out
    assert "2 of 4 reviewed GCoTs passed (50.0%; the paper reports 96%)" in said
    assert "1 GCoTs corrected, 1 emptied" in said
    gcots = dict(zip(*pq.read_table(release / "data" / "train-00000.parquet", columns=["id", "gcot"])
                     .to_pydict().values()))
    assert gcots[b] == "fixed gcot" and gcots[c] is None and gcots[a] == f"gcot {a[1:]}"
    assert datasets.load_dataset(str(release), split="train").num_rows == 6  # still a loadable release
    assert json.loads((release / "gcot_review.json").read_text())["decisions"][b]["decision"] == "corrected"


def test_apply_refuses_a_folder_the_engine_did_not_write(release, tmp_path, capsys):
    out = tmp_path / "review"
    cli.main(["engine", "gcot-review", "--data", str(release), "--out", str(out), "--n", "2", "--reviewers", "1"])
    review = load_gcot_review(out)
    _answers_file(tmp_path, review, "reviewer-1", {it["id"]: "reject" for it in review["items"]})
    (release / "statistics.json").unlink()
    assert cli.main(["engine", "gcot-agreement", str(out), str(tmp_path / "reviewer-1.json"),
                     "--apply", str(release)]) != 0
    assert "not a release the engine wrote" in capsys.readouterr().err


@pytest.mark.slow
def test_a_reviewer_accepts_rejects_and_corrects_in_the_browser(browser, release, tmp_path):
    out = tmp_path / "review"
    cli.main(["engine", "gcot-review", "--data", str(release), "--out", str(out), "--n", "3", "--reviewers", "ana"])
    review = load_gcot_review(out)
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "review.html").as_uri())
    page.select_option("#rater", "ana")
    queue = [q["item"] for q in review["queues"]["ana"]]
    items = {it["id"]: it for it in review["items"]}
    wait_until(page, "document.querySelector('textarea.edit') !== null")
    assert page.locator("textarea.edit").input_value() == items[queue[0]]["reviewed"]  # the GCoT, to correct
    assert page.locator("#criterion").inner_text().count("caption") >= 1
    page.keyboard.press("a")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("r")
    page.keyboard.press("ArrowRight")
    page.fill("textarea.edit", "a corrected GCoT")
    page.click("text=Save my edit")
    with page.expect_download() as download:
        page.click("#export")
    file = tmp_path / "ana.json"
    download.value.save_as(file)
    context.close()
    assert not errors
    result = review_result(review, [file])
    assert [result["decisions"][i]["decision"] for i in queue] == ["passed", "removed", "corrected"]
    assert result["decisions"][queue[2]]["gcot"] == "a corrected GCoT"
