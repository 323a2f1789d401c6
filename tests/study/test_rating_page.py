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
from _browser import wait_until
from scipy import stats

from t2ireason import cli
from t2ireason.runs import Run
from t2ireason.study.sample import run_letter

from .runs import EVALUATION, judge_scores, scored_run, study_key

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


def _rate_all(page, study, answer, reload_after=None, empty_local_store=False):
    """Go through the rater's queue with the keyboard: ``answer(item, page)`` presses the key(s); the
    page is reloaded once after ``reload_after`` answers, and must come back where the rater was, even
    when the reloaded page is handed an empty localStorage (``empty_local_store``: what Chromium sometimes
    does to a page opened from disk)."""
    queue = study["queues"][page.locator("#rater").input_value()]
    for n, entry in enumerate(queue):
        assert _current(page) == entry["item"]  # the rater's own order, as the study recorded it
        answer(entry, page)
        if n + 1 == reload_after:
            rater, progress = page.locator("#rater").input_value(), page.locator("#progress").inner_text()
            if empty_local_store:
                page.evaluate("localStorage.clear()")
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
    study = study_key(study_dir)
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
                  reload_after=7 if k else None, empty_local_store=k == 2)
        if k == 2:  # the answers given after the reload put every answer back in localStorage, for other tabs
            stored = json.loads(page.evaluate(f"localStorage.getItem('t2ireason-study:{study['id']}:{rater}')"))
            assert len(stored["answers"]) == len(study["queues"][rater])
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
    label = result["rows"][0]["label"]  # the metric and its judge, as the paper labels its rows
    assert label == "T2I-ReasonScore (scripted)"
    assert f"| {label} | {figures['per_group']['idiom']['kendall_tau']:.4f}" in printed
    assert f"[{low:.4f}, {high:.4f}]" in printed
    folder = runs[1].path / "agreement" / study["id"]
    assert "Idiom τ" in (folder / "tables.md").read_text() and "\\toprule" in (folder / "tables.tex").read_text()


def test_ab_tie_study_rated_by_three_raters_in_a_browser(browser, tmp_path, capsys):
    runs = [scored_run(tmp_path, "r2i-bench", name) for name in ("lumina", "sana")]
    study_dir = tmp_path / "study"
    assert cli.main(["rate", *(str(r.path) for r in runs), "--out", str(study_dir), "--per-group", "2",
                     "--raters", "ana,ben,chloe"]) == 0
    study = study_key(study_dir)
    # 2 prompts x 7 categories, one pair each, less the prompts the release gives no questions (never sampled: their
    # ratings could not meet a judge's score); the sample shipped has 3 such prompts, where Con.Mix. and Logical lose one
    assert study["kind"] == "preference" and len(study["items"]) == 12
    assert sorted(study["unscorable"]) == ["concept_mixing/functional_mixing/31", "concept_mixing/functional_mixing/32",
                                           "logical/disjunctive/42"]
    assert not set(study["unscorable"]) & {rid for ids in study["sample"].values() for rid in ids}
    items = {it["id"]: it for it in study["items"]}
    scores = {r.name: judge_scores(r) for r in runs}
    a = {i: scores["lumina"][it["images"][0]["key"]] for i, it in items.items()}
    b = {i: scores["sana"][it["images"][1]["key"]] for i, it in items.items()}
    run_of = {img["file"]: img["run"] for it in study["items"] for img in it["images"]}  # the key's, not the page's
    # which run's image the page lists first is drawn per item, and the left/right order per rater, both recorded
    firsts = [it["images"][it["sides"][0]]["run"] for it in study["items"]]
    assert "lumina" in firsts and "sana" in firsts
    swaps = [e["swap"] for q in study["queues"].values() for e in q]
    assert any(swaps) and not all(swaps)

    def verdict(rater: str, item: str) -> int:  # +1 lumina's image better, -1 sana's, 0 a tie
        if a[item] is None or b[item] is None:
            return 0
        return int(np.sign(a[item] - b[item])) if _noise(rater, item) >= 0 else -int(np.sign(a[item] - b[item]))

    def answer(entry, page):
        rater = page.locator("#rater").input_value()
        left = page.locator("#images img").first.get_attribute("src")  # an opaque name: the key says whose
        it = items[entry["item"]]
        listed = [it["images"][i]["file"] for i in it["sides"]]  # the page's order of the item's images
        assert left == listed[1 if entry["swap"] else 0]
        v = verdict(rater, entry["item"])
        page.keyboard.press("t" if v == 0 else "a" if (v > 0) == (run_of[left] == "lumina") else "b")

    for k, rater in enumerate(study["raters"]):
        context, page, errors = _open(browser, study_dir)
        page.select_option("#rater", rater)
        _rate_all(page, study, answer, reload_after=5 if k == 2 else None)
        exported = _export(page, study_dir / "ratings")
        for e in study["queues"][rater]:
            given = exported["answers"][e["item"]]
            assert given["shown"] == (["b", "a"] if e["swap"] else ["a", "b"])  # as the page listed them
            v = verdict(rater, e["item"])
            chosen = "tie" if given["preferred"] == "tie" else run_letter(items[e["item"]], given["preferred"])
            assert chosen == ("tie" if v == 0 else "a" if v > 0 else "b")  # a: lumina's, b: sana's
        assert errors == []
        context.close()

    assert cli.main(["agreement", *(str(r.path) for r in runs), "--ratings", str(study_dir / "ratings")]) == 0
    printed = capsys.readouterr().out
    result = json.loads((runs[0].path / "agreement" / study["id"] / "agreement.json").read_text())
    figures = result["evaluations"][EVALUATION]

    # by hand: the sign of the raters' mean verdict against the judge's verdict and margin
    ids = [i for i in sorted(items) if a[i] is not None and b[i] is not None]
    assert figures["n_excluded"] == len(items) - len(ids) == 0  # every prompt sampled is one the judge scored
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
        # a category's one or two pairs: its accuracy withheld (issue 50: 1.000 from one pair read as perfect), kept
        # aside in agreement.json, its n printed beside
        group = figures["per_group"][category]
        assert group["n"] == len(sel) < 3 and group["pairwise_accuracy"] is None
        assert math.isclose(group["withheld"]["pairwise_accuracy"], np.mean([judge[i] == human[i] for i in sel]),
                            abs_tol=1e-12)
    assert "R2I-Bench Table 4: agreement with human A/B/tie choices" in printed
    assert "R2I-Bench Table 21: agreement with human A/B/tie choices per category" in printed
    assert "| R2I-Score (scripted) | " in printed and f"{accuracy:.3f}" in printed
    assert "have no score" not in printed

    # the report of either run gains the section
    assert cli.main(["report", str(runs[1].path)]) == 0
    html = (runs[1].path / "report" / "report.html").read_text()
    assert "Agreement with people" in html and "All acc." in html and "Tie-calibrated acc." in html


def test_questions_study_answered_with_the_keyboard(browser, tmp_path):
    run = scored_run(tmp_path, "worldgenbench", "model-a")
    study_dir = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(study_dir), "--per-group", "1", "--raters", "1",
                     "--raters-per-item", "1"]) == 0
    study = study_key(study_dir)
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


# -- issue 40 item 6: a blind study ---------------------------------------------------------------------------


def _boxes(page):
    return [page.locator("#images img").nth(i).bounding_box() for i in range(page.locator("#images img").count())]


def test_the_raters_folder_names_no_run_and_shows_a_and_b_at_one_size(browser, tmp_path, capsys):
    """As found: study.json in the raters' folder mapped each image to its run, the page's title listed the runs,
    the files were named -a/-b in run order, R2I-Bench's text told the raters they compared "Lumina-Image 2.0 and
    Sana-1.5", and a 128 px image was shown beside a 256 px one at its own size."""
    from PIL import Image, PngImagePlugin

    names = ("secret-alpha-xl", "secret-beta-turbo")
    runs = [scored_run(tmp_path, "r2i-bench", name) for name in names]
    for run, size in zip(runs, (256, 128)):  # each run's images: their own size, and metadata naming the model
        for _, _, path in run.image_items():
            info = PngImagePlugin.PngInfo()
            info.add_text("parameters", f"model: {run.name}")
            Image.new("RGB", (size, size), (200, 80, 40)).save(path, pnginfo=info)
    study_dir = tmp_path / "study"
    assert cli.main(["rate", *(str(r.path) for r in runs), "--out", str(study_dir), "--per-group", "2",
                     "--raters", "1", "--raters-per-item", "1"]) == 0
    printed = capsys.readouterr().out
    key = tmp_path / "study.key.json"
    assert f"key: {key} (keep it, do not send it" in printed and not (study_dir / "study.json").exists()
    assert ("3 prompt(s) left out of the sample: the benchmark cannot score them (concept_mixing/functional_mixing/31: "
            "the release has no evaluation questions for this prompt; the key lists them)") in printed
    study = study_key(study_dir)
    # nothing in the folder sent to the raters names a run or the paper's models, in a file's name or its bytes
    sent = [p for p in study_dir.rglob("*") if p.is_file()]
    assert {p.relative_to(study_dir).parts[0] for p in sent} == {"index.html", "images"}
    for p in sent:
        data = p.read_bytes()
        for word in (*names, "secret", "Lumina", "Sana"):
            assert word.encode() not in data and word not in p.name, (word, p)
        if p.suffix == ".png":
            with Image.open(p) as im:
                assert "parameters" not in im.info and p.stem.isalnum() and len(p.stem) == 12
    html = (study_dir / "index.html").read_text()
    title = study["title"]
    assert title == "R2I-Bench human study: which of two images fits its prompt better" and f"<title>{title}" in html
    data = json.loads(html.split('id="study-data">', 1)[1].split("</script>", 1)[0])
    assert not {"run", "key", "sha256", "sides", "runs"} & ({k for it in data["items"].values() for k in it} | set(data))
    assert list(data["items"]) == sorted(data["items"])  # listed by their opaque ids, nothing in run order
    for it in study["items"]:  # the page lists each item's images in the order drawn for it
        assert data["items"][it["id"]]["images"] == [it["images"][i]["file"] for i in it["sides"]]
    # a title naming a run is refused before anything is written
    assert cli.main(["rate", *(str(r.path) for r in runs), "--out", str(tmp_path / "other"),
                     "--title", "Secret-Alpha-XL against the other"]) == 2
    assert "names 'secret-alpha-xl' (run secret-alpha-xl), which the raters would read" in capsys.readouterr().err
    assert not (tmp_path / "other").exists() and not (tmp_path / "other.key.json").exists()

    context, page, errors = _open(browser, study_dir)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.select_option("#rater", "rater1")
    criterion = page.locator("#criterion").inner_text()
    assert "Compare the two images" in criterion and "Lumina" not in criterion
    sizes = set()
    for _ in study["queues"]["rater1"]:
        wait_until(page, "[...document.querySelectorAll('#images img')].every((i) => i.complete && i.naturalWidth)")
        sizes |= {(page.evaluate(f"document.querySelectorAll('#images img')[{i}].naturalWidth")) for i in (0, 1)}
        first, second = _boxes(page)
        assert first["width"] == second["width"] > 256 and first["height"] == second["height"]  # one size, both
        page.keyboard.press("n")
    assert sizes == {128}  # every copy one size (issue 50: each run's own size told its copies apart)
    page.screenshot(path=str(tmp_path.parent / "ab.png"))
    assert errors == []
    context.close()


def test_each_tab_asks_who_rates_and_two_tabs_of_one_rater_add_up(browser, tmp_path):
    """As found: a second tab opened as the last rater, silently. Now a tab asks; a reload keeps its rater; two
    tabs of one rater add to the same answers."""
    run = scored_run(tmp_path, "t2i-reasonbench", "model-a")
    study_dir = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(study_dir), "--per-group", "1", "--raters", "ana,ben",
                     "--raters-per-item", "2"]) == 0
    study = study_key(study_dir)
    queue = [e["item"] for e in study["queues"]["ana"]]
    context = browser.new_context(accept_downloads=True)  # one browser: its storage shared by its tabs
    first = context.new_page()
    first.goto((study_dir / "index.html").as_uri())
    first.select_option("#rater", "ana")
    first.keyboard.press("3")
    second = context.new_page()
    second.goto((study_dir / "index.html").as_uri())
    assert second.locator("#rater").input_value() == "" and second.locator("#study").is_hidden()  # asked
    second.select_option("#rater", "ana")
    assert second.locator("#progress").inner_text() == f"1 of {len(queue)} rated"  # ana's answer, from the other tab
    second.keyboard.press("n")
    second.keyboard.press("4")
    # the first tab is told (the browser's storage event), as a rater coming back to it would see
    wait_until(first, f"document.getElementById('progress').textContent === '2 of {len(queue)} rated'")
    first.keyboard.press("n")
    first.keyboard.press("n")
    first.keyboard.press("5")
    first.reload()
    first.wait_for_load_state("load")
    assert first.locator("#rater").input_value() == "ana"  # a reload keeps the tab's rater
    with first.expect_download() as download:
        first.click("#export")
    exported = json.loads(open(download.value.path()).read())
    assert {i: a["value"] for i, a in exported["answers"].items()} == {queue[0]: 3, queue[1]: 4, queue[2]: 5}
    third = context.new_page()
    third.goto((study_dir / "index.html").as_uri())
    assert third.locator("#rater").input_value() == ""  # still asked, whoever rated last in this browser
    context.close()


def test_any_question_id_is_an_answer(browser, tmp_path):
    """As found: an answer to the question whose id is __proto__ was lost, and questions named constructor or
    toString counted as answered before they were. The page's answers and the reader of its files take any id."""
    from PIL import Image

    from t2ireason.study.page import render_page
    from t2ireason.study.ratings import merge, read_ratings

    (tmp_path / "images").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "images" / "x.png")
    ids = ["q1", "__proto__", "constructor", "toString", "hasOwnProperty"]
    study = {"id": "proto-study", "title": "A study", "kind": "questions", "raters": ["r1"], "raters_per_item": 1,
             "protocol": {"scale": None, "source": "ours"}, "groups": {"g": "Group"},
             "queues": {"r1": [{"item": "i1"}]},
             "items": [{"id": "i1", "prompt": "A prompt", "group": "g", "criterion": [],
                        "images": [{"file": "images/x.png"}], "raters": ["r1"],
                        "questions": [{"id": q, "question": f"Is it {q}?", "criterion": "", "group": "g",
                                       "levels": [[0, 0], [1, 1]]} for q in ids]}]}
    (tmp_path / "index.html").write_text(render_page(study))
    context, page, errors = _open(browser, tmp_path)
    page.select_option("#rater", "r1")
    page.keyboard.press("2")  # q1: yes; the others not answered yet
    assert page.locator("#progress").inner_text() == "0 of 1 rated"
    for key in ("2", "1", "2", "1"):
        page.keyboard.press(key)
    assert page.locator("#progress").inner_text() == "1 of 1 rated"
    page.reload()
    page.wait_for_load_state("load")
    assert page.locator("#answer button[aria-pressed=true]").count() == len(ids)  # each kept through a reload
    exported = _export(page, tmp_path / "ratings")
    assert exported["answers"]["i1"]["questions"] == {"q1": 1, "__proto__": 1, "constructor": 0, "toString": 1,
                                                      "hasOwnProperty": 0}
    read = read_ratings(study, [tmp_path / "ratings"])
    assert read.problems == [] and read.answers["i1"]["r1"] == exported["answers"]["i1"]["questions"]
    merged = merge(study, read)
    assert {q: m["human"] for q, m in merged["i1"]["questions"].items()} == {"q1": 1, "__proto__": 1, "constructor": 0,
                                                                           "toString": 1, "hasOwnProperty": 0}
    assert errors == []
    context.close()
