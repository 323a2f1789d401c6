"""A study rated in a real headless Chromium as people would rate it: three scripted raters, each in a
browser of their own, keyboard only, one of them reloading the page mid-study; their exported files go to
``t2ireason agreement``, whose figures must be the ones computed here by hand (scipy, krippendorff)."""

from __future__ import annotations

import hashlib
import json
import math

import krippendorff
import numpy as np
import pytest
from scipy import stats

from t2ireason import cli
from t2ireason.runs import Run

from .runs import EVALUATION, judge_scores, scored_run

pytestmark = pytest.mark.slow


def _noise(*parts: str) -> int:
    """-1, 0 or +1, fixed by ``parts``."""
    return hashlib.sha256("/".join(parts).encode()).digest()[0] % 3 - 1


def _open(browser, study_dir):
    context = browser.new_context(accept_downloads=True)  # a browser of the rater's own: its own storage
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((study_dir / "index.html").as_uri())
    return context, page, errors


def _export(page, ratings_dir):
    with page.expect_download() as download:
        page.click("#export")
    file = ratings_dir / download.value.suggested_filename
    download.value.save_as(file)
    return json.loads(file.read_text())


def _current(page) -> str:
    return page.locator("#study").get_attribute("data-item")


def _rate_all(page, study, answer, reload_after=None):
    """Go through the rater's queue with the keyboard: ``answer(item, page)`` presses the key(s); the
    page is reloaded once after ``reload_after`` answers, and must come back where the rater was."""
    queue = study["queues"][page.locator("#rater").input_value()]
    for n, entry in enumerate(queue):
        assert _current(page) == entry["item"]  # the rater's own order, as the study recorded it
        answer(entry, page)
        if n + 1 == reload_after:
            rater, progress = page.locator("#rater").input_value(), page.locator("#progress").inner_text()
            page.reload()
            page.wait_for_load_state("load")
            assert page.locator("#rater").input_value() == rater  # the rater is still named
            assert _current(page) == entry["item"]  # and still on the item they were on
            assert page.locator("#progress").inner_text() == progress == f"{n + 1} of {len(queue)} rated"
            assert page.locator("#answer button[aria-pressed=true]").count() == 1  # the answer given is there
        page.keyboard.press("n" if n % 2 else "ArrowRight")
    assert page.locator("#progress").inner_text() == f"{len(queue)} of {len(queue)} rated"


def test_scale_study_rated_by_three_raters_in_a_browser(browser, tmp_path, capsys):
    runs = [scored_run(tmp_path, "t2i-reasonbench", name) for name in ("model-a", "model-b")]
    study_dir = tmp_path / "study"
    assert cli.main(["rate", *(str(r.path) for r in runs), "--out", str(study_dir), "--per-group", "2"]) == 0
    printed = capsys.readouterr().out
    study = json.loads((study_dir / "study.json").read_text())
    assert study["kind"] == "scale" and study["protocol"]["scale"] == [1, 5] and study["raters"] == [
        "rater1", "rater2", "rater3"]
    assert len(study["items"]) == 16 and f"study {study['id']}: 16 items" in printed  # 2 prompts x 4 dims x 2 runs
    items = {it["id"]: it for it in study["items"]}
    scores = {r.name: judge_scores(r) for r in runs}
    judge = {i: scores[it["images"][0]["run"]][it["images"][0]["key"]] for i, it in items.items()}

    def rating(rater: str, item: str) -> int:  # the judge's view, give or take one point
        return min(5, max(1, round(1 + 4 * judge[item]) + _noise(rater, item)))

    for k, rater in enumerate(study["raters"]):
        context, page, errors = _open(browser, study_dir)
        assert page.locator("#study").is_hidden() and page.locator("#export").is_disabled()
        page.select_option("#rater", rater)
        _rate_all(page, study, lambda entry, p: p.keyboard.press(str(rating(p.locator("#rater").input_value(),
                                                                              entry["item"]))),
                  reload_after=7 if k == 1 else None)
        exported = _export(page, study_dir / "ratings")
        assert exported["rater"] == rater and exported["study"] == study["id"] and exported["complete"]
        assert exported["order"] == [e["item"] for e in study["queues"][rater]]  # the order shown
        assert {i: a["value"] for i, a in exported["answers"].items()} == {
            i: rating(rater, i) for i in exported["order"]}
        assert all(a["at"].endswith("Z") for a in exported["answers"].values())
        assert errors == []
        context.close()

    assert cli.main(["agreement", *(str(r.path) for r in runs), "--ratings", str(study_dir / "ratings")]) == 0
    printed = capsys.readouterr().out
    result = json.loads((runs[0].path / "agreement" / study["id"] / "agreement.json").read_text())
    assert result["problems"] == [] and len(result["files"]) == 3

    # by hand: the mean of the three raters against the judge's score, per dimension and pooled
    ids = sorted(items)
    human = {i: np.mean([rating(r, i) for r in study["raters"]]) for i in ids}
    figures = result["evaluations"][EVALUATION]
    taus = []
    for dim in ("idiom", "textual", "entity", "scientific"):
        sel = [i for i in ids if items[i]["group"] == dim]
        tau = stats.kendalltau([judge[i] for i in sel], [human[i] for i in sel]).statistic
        rho = stats.spearmanr([judge[i] for i in sel], [human[i] for i in sel]).statistic
        assert math.isclose(figures["per_group"][dim]["kendall_tau"], tau, abs_tol=1e-12)
        assert math.isclose(figures["per_group"][dim]["spearman_rho"], rho, abs_tol=1e-12)
        taus.append(tau)
    assert math.isclose(figures["group_average"]["kendall_tau"], np.mean(taus), abs_tol=1e-12)
    pooled = stats.kendalltau([judge[i] for i in ids], [human[i] for i in ids]).statistic
    assert math.isclose(figures["kendall_tau"], pooled, abs_tol=1e-12) and figures["n"] == 16
    low, high = figures["kendall_tau_ci"]
    assert low <= pooled <= high
    data = [[rating(r, i) for i in ids] for r in study["raters"]]
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert math.isclose(result["raters"]["alpha"], alpha, abs_tol=1e-12)
    # the paper's table, printed and written
    assert "T2I-ReasonBench Table 1: correlation with human ratings" in printed
    assert f"| {EVALUATION} | {figures['per_group']['idiom']['kendall_tau']:.4f}" in printed
    assert f"[{low:.4f}, {high:.4f}]" in printed
    folder = runs[1].path / "agreement" / study["id"]
    assert "Idiom τ" in (folder / "tables.md").read_text() and "\\toprule" in (folder / "tables.tex").read_text()


def test_ab_tie_study_rated_by_three_raters_in_a_browser(browser, tmp_path, capsys):
    runs = [scored_run(tmp_path, "r2i-bench", name) for name in ("lumina", "sana")]
    study_dir = tmp_path / "study"
    assert cli.main(["rate", *(str(r.path) for r in runs), "--out", str(study_dir), "--per-group", "2",
                     "--raters", "ana,ben,chloe"]) == 0
    study = json.loads((study_dir / "study.json").read_text())
    assert study["kind"] == "preference" and len(study["items"]) == 14  # 2 prompts x 7 categories, one pair each
    items = {it["id"]: it for it in study["items"]}
    scores = {r.name: judge_scores(r) for r in runs}
    a = {i: scores["lumina"][it["images"][0]["key"]] for i, it in items.items()}
    b = {i: scores["sana"][it["images"][1]["key"]] for i, it in items.items()}
    # the left/right order is randomised per rater, and recorded
    swaps = [e["swap"] for q in study["queues"].values() for e in q]
    assert any(swaps) and not all(swaps)

    def verdict(rater: str, item: str) -> int:  # +1 lumina's image better, -1 sana's, 0 a tie
        if a[item] is None or b[item] is None:
            return 0
        return int(np.sign(a[item] - b[item])) if _noise(rater, item) >= 0 else -int(np.sign(a[item] - b[item]))

    def answer(entry, page):
        rater = page.locator("#rater").input_value()
        left = page.locator("#images img").first.get_attribute("src")  # images/<item>-a.png: lumina's
        assert left.endswith("-b.png" if entry["swap"] else "-a.png")
        v = verdict(rater, entry["item"])
        page.keyboard.press("t" if v == 0 else "a" if (v > 0) == left.endswith("-a.png") else "b")

    for k, rater in enumerate(study["raters"]):
        context, page, errors = _open(browser, study_dir)
        page.select_option("#rater", rater)
        _rate_all(page, study, answer, reload_after=5 if k == 2 else None)
        exported = _export(page, study_dir / "ratings")
        for e in study["queues"][rater]:
            given = exported["answers"][e["item"]]
            assert given["shown"] == (["b", "a"] if e["swap"] else ["a", "b"])
            v = verdict(rater, e["item"])
            assert given["preferred"] == ("tie" if v == 0 else "a" if v > 0 else "b")
        assert errors == []
        context.close()

    assert cli.main(["agreement", *(str(r.path) for r in runs), "--ratings", str(study_dir / "ratings")]) == 0
    printed = capsys.readouterr().out
    result = json.loads((runs[0].path / "agreement" / study["id"] / "agreement.json").read_text())
    figures = result["evaluations"][EVALUATION]

    # by hand: the sign of the raters' mean verdict against the judge's verdict and margin
    ids = [i for i in sorted(items) if a[i] is not None and b[i] is not None]
    assert figures["n_excluded"] == len(items) - len(ids) > 0  # the sample's prompts without questions
    human = {i: np.sign(np.mean([verdict(r, i) for r in study["raters"]])) for i in items}
    judge = {i: np.sign(a[i] - b[i]) for i in ids}
    accuracy = np.mean([judge[i] == human[i] for i in ids])
    tau = stats.kendalltau([a[i] - b[i] for i in ids], [human[i] for i in ids]).statistic
    rho = stats.spearmanr([a[i] - b[i] for i in ids], [human[i] for i in ids]).statistic
    assert math.isclose(figures["pairwise_accuracy"], accuracy, abs_tol=1e-12)
    assert math.isclose(figures["kendall_tau"], tau, abs_tol=1e-12)
    assert math.isclose(figures["spearman_rho"], rho, abs_tol=1e-12)
    calibrated = figures["calibrated"]  # the best tie threshold, and the accuracy it gives
    eps = calibrated["tie_epsilon"]
    assert math.isclose(calibrated["pairwise_accuracy"], np.mean(
        [(0 if abs(a[i] - b[i]) <= eps else np.sign(a[i] - b[i])) == human[i] for i in ids]), abs_tol=1e-12)
    assert calibrated["pairwise_accuracy"] >= accuracy
    for category in ("commonsense", "logical"):
        sel = [i for i in ids if items[i]["group"] == category]
        assert math.isclose(figures["per_group"][category]["pairwise_accuracy"],
                            np.mean([judge[i] == human[i] for i in sel]), abs_tol=1e-12)
    assert "R2I-Bench Tables 4 and 21: agreement with human A/B/tie choices" in printed
    assert f"| {EVALUATION} |" in printed and f"{accuracy:.3f}" in printed
    assert "have no judge score" in printed  # said, not silently dropped

    # the report of either run gains the section
    assert cli.main(["report", str(runs[1].path)]) == 0
    html = (runs[1].path / "report" / "report.html").read_text()
    assert "Agreement with people" in html and "Overall acc." in html


def test_questions_study_answered_with_the_keyboard(browser, tmp_path):
    run = scored_run(tmp_path, "worldgenbench", "model-a")
    study_dir = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(study_dir), "--per-group", "1", "--raters", "1",
                     "--raters-per-item", "1"]) == 0
    study = json.loads((study_dir / "study.json").read_text())
    assert study["kind"] == "questions" and study["runs"][0]["evaluation"] == EVALUATION
    context, page, errors = _open(browser, study_dir)
    page.select_option("#rater", "rater1")
    first = study["items"][[it["id"] for it in study["items"]].index(_current(page))]
    n = len(first["questions"])
    keys = ["2", "1"] * n  # met, not met, ...: the next question is active once one is answered
    for key in keys[:n]:
        page.keyboard.press(key)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("1")  # the one before the last again, now not met
    exported = _export(page, study_dir / "ratings")
    answers = exported["answers"][first["id"]]["questions"]
    expected = [1.0 if k == "2" else 0.0 for k in keys[:n]]
    expected[-2 if n > 1 else -1] = 0.0
    assert [answers[q["id"]] for q in first["questions"]] == expected
    assert page.locator("#progress").inner_text() == f"1 of {len(study['queues']['rater1'])} rated"
    assert errors == []
    context.close()
    Run.open(run.path)  # the run is untouched by the study


EVIL = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def test_markup_in_a_prompt_or_criterion_stays_text(browser, tmp_path):
    from PIL import Image

    from t2ireason.study.page import render_page

    (tmp_path / "images").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "images" / "i0001-a.png")
    study = {"id": "evil-study", "title": "A study " + EVIL, "kind": "questions", "raters": ["r1"],
             "protocol": {"scale": None, "source": EVIL}, "groups": {"g": "Group " + EVIL},
             "queues": {"r1": [{"item": "i0001"}]},
             "items": [{"id": "i0001", "prompt": "A prompt " + EVIL, "group": "g",
                        "criterion": [{"title": "Criterion " + EVIL, "text": "Text " + EVIL}],
                        "images": [{"file": "images/i0001-a.png"}],
                        "questions": [{"id": "q1", "question": "Is it? " + EVIL, "criterion": EVIL,
                                       "levels": [[0, 0], [1, 1]]}]}]}
    (tmp_path / "index.html").write_text(render_page(study))
    context, page, errors = _open(browser, tmp_path)
    page.select_option("#rater", "r1")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main script").count() == 0 and page.locator("img[src='x']").count() == 0
    assert page.locator("#prompt").inner_text() == "A prompt " + EVIL
    assert EVIL in page.locator("#answer").inner_text() and EVIL in page.locator("#criterion").inner_text()
    assert page.title() == "A study " + EVIL
    assert errors == []
    context.close()
