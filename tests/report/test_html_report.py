"""The HTML report in a real headless browser: loads cleanly, filters work, injected markup stays text."""

import pytest
from PIL import Image

from t2ireason.report.html import Section, write_html_report
from t2ireason.results import Cell, ImageResult, PaperTable, QuestionResult

EVIL = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def _results(tmp_path):
    img = tmp_path / "images" / "0001.png"
    img.parent.mkdir(parents=True)
    Image.new("RGB", (16, 16), (200, 30, 30)).save(img)
    ok = ImageResult(
        id="idiom/1", prompt="A person who spills the beans", score=0.75, config="idiom", image=str(img),
        context={"explicit meaning": "reveals a secret"}, subscores={"reason": 1.0, "quality": 0.5},
        questions=[QuestionResult("Is a secret being revealed?", 1.0, criterion="1 if yes", group="reason",
                                  reasoning="The person whispers." + EVIL)],
        replies=["Reply holding markup: " + EVIL])
    failed = ImageResult(
        id="entity/2", prompt="The tallest building in 2010 " + EVIL, score=None, config="entity",
        image="missing.png", failure="unparsable reply: no JSON dict or list found in reply",
        questions=[QuestionResult("Is it the Burj Khalifa?", None, group="entity")], replies=["garbage"], reasks=2)
    partial = ImageResult(id="entity/3", prompt="A durian", score=0.5, config="entity", image=str(img),
                          questions=[QuestionResult("Is it a durian?", 0.5)])
    return [ok, failed, partial]


@pytest.mark.slow
@pytest.mark.parametrize("embed", [False, True])
def test_report_in_browser(browser, tmp_path, embed):
    out = tmp_path / "report"
    table = PaperTable("Table 2", ["Idiom"], {"model-a": {"Idiom": Cell(75.0)}})
    section = Section("T2I-ReasonBench", {"model-a": _results(tmp_path)}, [table],
                      runs=[{"model": "model-a", "judge": "scripted", "settings": {"seed": 0}}])
    path = write_html_report([section], out, title="T2I-ReasonBench <b>run</b>", meta={"judge": "scripted"},
                             embed_images=embed)
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")

    # Injected markup neither runs nor becomes elements; it is shown as text.
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#gallery script").count() == 0
    assert page.locator("#gallery img[src='x']").count() == 0
    assert "<script>window.__pwned = 1</script>" in page.locator("#gallery").inner_text()
    assert page.title() == "T2I-ReasonBench <b>run</b>"
    # the table and what made the run, as plain text (a mapping as key: value, never a Python repr)
    assert page.locator("#table-1 tbody td").all_inner_texts() == ["model-a", "75.0"]
    assert page.locator("table.runs").inner_text().endswith("seed: 0") and "{" not in page.locator("table.runs").inner_text()

    cards = page.locator("#gallery .card")
    assert cards.count() == 3
    assert page.locator(".card.failed").count() == 1
    # the image loads from its relative path (or data URL) — the folder can be copied
    assert page.evaluate("Array.from(document.querySelectorAll('#gallery img')).every(i => i.naturalWidth === 16)")
    src = page.locator("#gallery img").first.get_attribute("src")
    assert src.startswith("data:image/png;base64,") if embed else src == "../images/0001.png"

    visible = lambda: page.locator("#gallery .card:not(.hidden)").count()  # noqa: E731
    page.select_option("#filter-config", "entity")
    assert visible() == 2
    page.check("#filter-failed")
    assert visible() == 1
    assert "entity/2" in page.locator("#gallery .card:not(.hidden)").inner_text()
    page.select_option("#filter-config", "idiom")
    assert visible() == 0
    page.select_option("#filter-config", "")
    page.uncheck("#filter-failed")
    page.fill("#filter-text", "durian")
    assert visible() == 1
    assert page.locator("#count").inner_text() == "1 of 3 images"
    assert errors == []
    page.close()


def test_what_measured_each_row_is_where_the_reader_looks_at_1400_px(browser, tmp_path):
    """Issue 40 item 1: at 1,400 px the table's note (what measured the paper's rows) sat under a long table, off
    the screen; and nothing marked the run judged otherwise ranked first among them. The note and each run's
    protocol stand above the table, visible when the table's title is reached (not under the sticky header),
    and the run measured otherwise is marked in its row, not ranked (no bold), under its own heading."""
    from study.runs import scored_run

    from t2ireason.report.writer import write_report

    run = scored_run(tmp_path, "t2i-reasonbench", "tiny-model")
    page_path = write_report([run], tmp_path / "report", published=True)["html"][0]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    page.evaluate("document.getElementById('table-1-title').scrollIntoView()")
    header = page.locator("header").bounding_box()
    for part in ("#table-1-protocol p.note", "#table-1-protocol li.apart"):
        box = page.locator(part).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1400, part  # not off to the side
        assert header["y"] + header["height"] <= box["y"] and box["y"] + box["height"] <= 900, part  # on screen
        hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('.protocol') !== null",
                            [box["x"] + 5, box["y"] + box["height"] / 2])
        assert hit, part  # seen, not covered
    said = page.locator("#table-1-protocol").inner_text()
    assert "judged by Gemini-2.5-pro" in said and "800 prompts" in said
    assert "not ranked among the paper's rows: tiny-model: judge scripted:scripted" in said
    assert "questions: the sample shipped with t2i-reason" in said
    # the runs' summary above the tables says the same words (it said "the release's (...)" of the sample)
    summary = page.locator("table.runs").first
    column = summary.locator("thead th").all_inner_texts().index("questions")
    assert summary.locator("tbody tr td").nth(column).inner_text() == "the sample shipped with t2i-reason"
    # the summary holds the paper's rows' citations too (judge, questions): they wrap, and it fits the page
    box = summary.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1400 and "section 4.2" in summary.inner_text()
    row = page.locator("#table-1 tr.apart")
    assert row.count() == 1 and row.locator("td").first.inner_text().startswith("tiny-model")
    assert row.locator("b").count() == 0 and "not ranked" in row.inner_text()
    headings = page.locator("#table-1 tr.group th").all_inner_texts()
    assert headings == ["Diffusion Models", "Unified Multimodal Models", "Proprietary Models",
                        "Runs measured otherwise: not ranked"]
    assert page.locator("#table-1 tbody b").first.inner_text() == "89.8"  # Nano-Banana's Idiom, not the run's
    page.close()
