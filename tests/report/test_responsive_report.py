"""The HTML report reads on a phone (400 px) and on a wide screen (1,400 px), in real Chromium:
reports of four benchmarks scored by a scripted judge, PRISM-Bench's 24-column table among them.
The page never scrolls sideways (wide tables scroll in their own box), nothing is cut off at the
right edge, the header leaves the screen to the images on a phone, a thumbnail opens its image at
full size, the filters work, and nothing reaches the console."""

from __future__ import annotations

import json

import pytest
from _browser import wait_until
from PIL import Image

from t2ireason.benchmarks import JUDGED, get_benchmark
from t2ireason.data import load_rows
from t2ireason.judges.scripted import ScriptedJudge, best_answer
from t2ireason.report import plots
from t2ireason.report.html import Section, write_html_report
from t2ireason.report.tables import side_by_side

pytestmark = pytest.mark.slow

WIDTHS = [400, 1400]
MODELS = ("model-a", "a-much-longer-model-name/checkpoint-12000")
LONG = "https://example.org/" + "a-very-long-unbroken-token-" * 12  # no place to wrap but anywhere



def _reply(request):
    if request.json_schema is None:
        return "A picture of the prompt."
    return json.dumps(best_answer(request.json_schema, "Looks right, see " + LONG))


def _figures(tables, folder):
    """Every figure ``t2ireason report`` draws for these tables (PNG paths)."""
    pngs = []
    for i, table in enumerate(tables, 1):
        pngs.append(plots.table_bars(table, folder / f"table{i}_bars")[0])
        if len(plots.layout(table).axes) >= 3:
            pngs.append(plots.table_radar(table, folder / f"table{i}_radar")[0])
    return pngs


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One report per judged benchmark, its tables holding two models (as ``t2ireason report`` writes it),
    and the comparison page of two models over every benchmark (``"compare"``)."""
    root = tmp_path_factory.mktemp("reports")
    big, small = root / "images" / "big.png", root / "images" / "small.png"
    big.parent.mkdir()
    Image.new("RGB", (1200, 900), (30, 120, 200)).save(big)
    Image.new("RGB", (64, 64), (200, 30, 30)).save(small)
    pages, sections = {}, []
    for name in JUDGED:
        bench = get_benchmark(name)
        rows = load_rows(name)
        images = [str(big if i % 2 == 0 else small) for i in range(len(rows))]
        results = bench.score(rows, images, ScriptedJudge(_reply), structured_output=True)
        results[0].prompt += " " + LONG
        other = bench.score(rows, images[::-1], ScriptedJudge(_reply), structured_output=True)
        aggregate = bench.aggregate(results)
        tables = side_by_side([bench.paper_tables(aggregate, label) for label in MODELS])
        figures = _figures(tables, root / "plots" / name)
        runs = [{"model": m, "judge": "scripted:" + LONG, "images": len(results)} for m in MODELS]
        section = Section(bench.pretty_name, {MODELS[0]: results}, tables, figures, runs[:1])
        pages[name] = (write_html_report([section], root / name, title=f"{bench.pretty_name}: model-a",
                                         meta={"t2i-reason": "0.2.0"}), results)
        sections.append(Section(bench.pretty_name, {MODELS[0]: results, MODELS[1]: other}, tables, figures, runs))
    assert max(len(t.columns) for t in tables) > 20  # PRISM-Bench's table is among them (24 columns)
    pages["compare"] = (write_html_report(sections, root / "compare", title="four benchmarks, two models"),
                        sections)
    return pages


GEOMETRY = """() => {
  const width = document.documentElement.clientWidth;
  const cut = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(".scroll, dialog, .hidden") || el.getClientRects().length === 0) continue;
    const r = el.getBoundingClientRect();
    if (r.right > width + 0.5 || r.left < -0.5) cut.push(el.tagName + "." + el.className + " " + Math.round(r.right));
  }
  const boxes = Array.from(document.querySelectorAll(".scroll")).filter(b => !b.closest(".hidden"));
  return {
    pageWidth: document.documentElement.scrollWidth, width,
    cut: cut.slice(0, 5),
    boxesFit: boxes.every(b => b.getBoundingClientRect().right <= width + 0.5),
    summaryScrolls: (() => { const b = document.querySelector("#table-1").parentElement;
                              return b.scrollWidth > b.clientWidth; })(),
    figures: Array.from(document.querySelectorAll(".figures img")).map(i => [i.naturalWidth, i.getBoundingClientRect().width]),
  };
}"""


def _open(browser, path, width):
    """The page at ``width`` px, loaded: the page, the errors its scripts log, its geometry."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, errors, page.evaluate(GEOMETRY)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", JUDGED)
def test_report_fits_the_screen(browser, reports, name, width):
    path, results = reports[name]
    page, errors, geometry = _open(browser, path, width)
    assert geometry["pageWidth"] <= geometry["width"], f"the page scrolls sideways: {geometry}"
    assert geometry["cut"] == [] and geometry["boxesFit"], geometry
    # every figure loads and fits its screen
    assert geometry["figures"] and all(natural > 500 and 0 < shown <= width for natural, shown in geometry["figures"])
    if name == "prism-bench":  # 24 columns: wider than either screen, scrolled in its own box
        assert geometry["summaryScrolls"]
        box = page.locator("#table-1").locator("xpath=..")
        box.evaluate("b => b.scrollLeft = b.scrollWidth")
        assert box.evaluate("b => b.scrollLeft") > 0 and page.evaluate("window.scrollX") == 0

    # on a phone the header scrolls away with the page; on a wide screen it stays, small
    page.evaluate("window.scrollTo(0, 4000)")
    header = page.locator("header").bounding_box()
    visible = max(0.0, header["y"] + header["height"])
    assert visible <= (0 if width < 700 else 0.2 * 900), header
    page.evaluate("window.scrollTo(0, 0)")

    # filters: by category, by failure, by text
    cards = page.locator("#gallery .card")
    shown = lambda: page.locator("#gallery .card:not(.hidden)").count()  # noqa: E731
    assert cards.count() == len(results)
    config = results[-1].config
    page.select_option("#filter-config", config)
    assert shown() == sum(r.config == config for r in results)
    page.select_option("#filter-config", "")
    page.check("#filter-failed")
    assert shown() == sum(r.failed or bool(r.failure) or any(q.score is None for q in r.questions) for r in results)
    page.uncheck("#filter-failed")
    page.fill("#filter-text", "a-very-long-unbroken-token")
    assert shown() >= 1
    page.fill("#filter-text", "")
    assert shown() == len(results)
    assert page.evaluate(GEOMETRY)["pageWidth"] <= width
    assert errors == []
    page.close()


@pytest.mark.parametrize("embed", [False, True], ids=["linked", "embedded"])
@pytest.mark.parametrize("width", WIDTHS)
def test_a_thumbnail_opens_the_image_at_full_size(browser, reports, width, embed):
    path, results = reports["prism-bench"]
    if embed:  # one self-contained file: the images are data URLs, which a new tab would refuse to open
        path = write_html_report(results[:3], path.parent, title="embedded", filename="embedded.html", embed_images=True)
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    thumb = page.locator("#gallery a.thumb img").first
    thumb.scroll_into_view_if_needed()  # the gallery follows the tables and figures; its images load lazily
    wait_until(page, "i => i.complete && i.naturalWidth > 0", thumb.element_handle())
    assert thumb.evaluate("i => i.naturalWidth") == 1200
    assert thumb.bounding_box()["width"] <= (330 if width >= 700 else width)  # a thumbnail, within its card
    thumb.click()
    viewer = page.locator("#viewer")
    assert viewer.evaluate("d => d.open")
    full = page.locator("#viewer-image")
    assert full.evaluate("i => i.naturalWidth") == 1200 and full.bounding_box()["width"] == 1200  # not scaled down
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the viewer scrolls, not the page
    page.keyboard.press("Escape")
    assert not viewer.evaluate("d => d.open")
    # the link also opens the file itself (a new tab, a download), relative to the report
    href = page.locator("#gallery a.thumb").first.get_attribute("href")
    assert href == (None if embed else "../images/big.png")
    assert errors == []
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_comparison_page(browser, reports, width):
    """Several runs on one page: every benchmark's tables and figures, one card per prompt holding each
    model's image and score side by side (one above the other on a phone), filters over all of them."""
    path, sections = reports["compare"]
    page, errors, geometry = _open(browser, path, width)
    assert geometry["pageWidth"] <= geometry["width"] and geometry["cut"] == [] and geometry["boxesFit"], geometry
    assert page.locator("section.bench h2").all_inner_texts() == [s.title for s in sections]
    assert page.locator("table.paper").count() == sum(len(s.tables) for s in sections)
    assert len(geometry["figures"]) == sum(len(s.figures) for s in sections)
    assert all(natural > 500 and 0 < shown <= width for natural, shown in geometry["figures"])

    cards = page.locator("#gallery .card")
    prompts = sum(len(s.results[MODELS[0]]) for s in sections)
    assert cards.count() == prompts and page.locator("#count").inner_text() == f"{prompts} of {prompts} prompts"
    first = cards.first
    assert first.locator(".model").all_inner_texts() == list(MODELS)
    boxes = [e.bounding_box() for e in first.locator(".entry").all()]
    side_by_side_ = boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"]
    assert side_by_side_ if width >= 700 else boxes[0]["y"] < boxes[1]["y"]
    # each model's own score under its own image
    r2i = next(s for s in sections if s.title == "R2I-Bench")
    page.select_option("#filter-config", f"R2I-Bench · {r2i.results[MODELS[0]][0].config}")
    shown = page.locator("#gallery .card:not(.hidden)")
    assert shown.count() == sum(r.config == r2i.results[MODELS[0]][0].config for r in r2i.results[MODELS[0]])
    assert shown.locator(".entry").count() == 2 * shown.count()
    page.select_option("#filter-config", "")
    page.fill("#filter-text", "a-very-long-unbroken-token")
    assert 1 <= page.locator("#gallery .card:not(.hidden)").count() < prompts
    assert errors == []
    page.close()
