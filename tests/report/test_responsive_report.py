"""The HTML report reads on a phone (400 px) and on a wide screen (1,400 px), in real Chromium:
reports of four benchmarks scored by a scripted judge, PRISM-Bench's 24-column table among them.
The page never scrolls sideways (wide tables scroll in their own box), nothing is cut off at the
right edge, the header leaves the screen to the images on a phone, a thumbnail opens its image at
full size, the filters work, and nothing reaches the console."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from t2ireason.benchmarks import JUDGED, get_benchmark
from t2ireason.data import load_rows
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.report.html import write_html_report
from t2ireason.report.tables import format_cell, side_by_side

pytestmark = pytest.mark.slow

WIDTHS = [400, 1400]
LONG = "https://example.org/" + "a-very-long-unbroken-token-" * 12  # no place to wrap but anywhere


def _fill(schema):
    """The largest answer a reply schema allows: every question passed."""
    if "enum" in schema:
        return schema["enum"][-1]
    kind = schema.get("type")
    if kind == "object":
        return {k: _fill(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_fill(schema.get("items", {})) for _ in range(schema.get("minItems", 1))]
    if kind in ("integer", "number"):
        return schema.get("maximum", 1)
    return "Looks right, see " + LONG if kind == "string" else 1


def _reply(request):
    return json.dumps(_fill(request.json_schema)) if request.json_schema else "A picture of the prompt."


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One report per judged benchmark, its summary holding two models (as ``t2ireason report`` writes it)."""
    root = tmp_path_factory.mktemp("reports")
    big, small = root / "images" / "big.png", root / "images" / "small.png"
    big.parent.mkdir()
    Image.new("RGB", (1200, 900), (30, 120, 200)).save(big)
    Image.new("RGB", (64, 64), (200, 30, 30)).save(small)
    pages = {}
    for name in JUDGED:
        bench = get_benchmark(name)
        rows = load_rows(name)
        images = [str(big if i % 2 == 0 else small) for i in range(len(rows))]
        results = bench.score(rows, images, ScriptedJudge(_reply), structured_output=True)
        results[0].prompt += " " + LONG
        aggregate = bench.aggregate(results)
        headline = side_by_side([bench.paper_tables(aggregate, label)
                                 for label in ("model-a", "a-much-longer-model-name/checkpoint-12000")])[0]
        summary = {"columns": ["Model", *headline.columns],
                   "rows": [[label, *(format_cell(cells.get(c), decimals=headline.decimals) for c in headline.columns)]
                            for label, cells in headline.rows.items()]}
        meta = {"benchmark": bench.pretty_name, "judge": "scripted:" + LONG, "images": len(results)}
        pages[name] = (write_html_report(results, root / name, title=f"{bench.pretty_name}: model-a", meta=meta,
                                         summary=summary), results)
    assert len(summary["columns"]) > 20  # PRISM-Bench's table is among them (24 columns and the model)
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
    summaryScrolls: (() => { const b = document.querySelector("#summary").parentElement;
                              return b.scrollWidth > b.clientWidth; })(),
  };
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", JUDGED)
def test_report_fits_the_screen(browser, reports, name, width):
    path, results = reports[name]
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")

    geometry = page.evaluate(GEOMETRY)
    assert geometry["pageWidth"] <= geometry["width"], f"the page scrolls sideways: {geometry}"
    assert geometry["cut"] == [] and geometry["boxesFit"], geometry
    if name == "prism-bench":  # 24 columns: wider than either screen, scrolled in its own box
        assert geometry["summaryScrolls"]
        box = page.locator("#summary").locator("xpath=..")
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
