"""Figures for a paper, drawn from each judged benchmark's real tables (scripted judges, one and three
models): every table gets its bars (and a radar over three or more categories) as PNG and vector PDF,
on 0-100, in the paper's shape (PRISM-Bench: its seven tracks, alignment and aesthetics as series; no
Overall axis), each bar's value printed, and no label overlaps another or is cut by the figure's edge
as matplotlib's renderer lays them out."""

from __future__ import annotations

import json
import random

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from t2ireason.benchmarks import JUDGED, get_benchmark
from t2ireason.benchmarks.prism_bench import TRACKS
from t2ireason.data import load_rows
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.report import plots
from t2ireason.report.tables import side_by_side
from t2ireason.results import Cell, PaperTable

MODELS = ("sd3-medium", "flux-dev", "a-much-longer-model-name/checkpoint-12000")


def _answer(schema, rnd):
    """A random answer within a reply schema: every figure differs from the others."""
    if "enum" in schema:
        return rnd.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return {k: _answer(v, rnd) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_answer(schema.get("items", {}), rnd) for _ in range(schema.get("minItems", 1))]
    if kind in ("integer", "number"):
        return rnd.randint(schema.get("minimum", 0), schema.get("maximum", 1))
    return "ok"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """{benchmark: (its tables for one model, for three models side by side)}."""
    image = tmp_path_factory.mktemp("img") / "x.png"
    Image.new("RGB", (16, 16)).save(image)
    out = {}
    for name in JUDGED:
        bench = get_benchmark(name)
        rows = load_rows(name)
        per_model = []
        for seed, label in enumerate(MODELS):
            rnd = random.Random(seed)
            judge = ScriptedJudge(lambda r, rnd=rnd: json.dumps(_answer(r.json_schema, rnd)) if r.json_schema
                                  else "A picture.")
            results = bench.score(rows, [str(image)] * len(rows), judge, structured_output=True)
            per_model.append(bench.paper_tables(bench.aggregate(results), label))
        out[name] = (side_by_side(per_model[:1]), side_by_side(per_model))
    return out


@pytest.mark.parametrize("models", ["one", "three"])
@pytest.mark.parametrize("name", JUDGED)
def test_every_table_is_drawn_legibly(tables, name, models):
    for table in tables[name][models == "three"]:
        lay = plots.layout(table)
        assert lay.axes and not any(a.lower().startswith("overall") for a in lay.axes)
        makers = [plots.bars_figure] + ([plots.radar_figure] if len(lay.axes) >= 3 else [])
        # each run's images scored, under the title (issue 40 item 4): as long as a partial run's
        note = "images scored: " + "; ".join(f"{label}: 3 of 10 (5 not generated, 2 missing from the image folder)"
                                             for label in table.rows)
        for make in makers:
            with plt.rc_context(plots._STYLE):
                fig = make(table, note)
                try:
                    assert plots.label_problems(fig) == [], (table.title, make.__name__)
                    assert "3 of 10 (5 not generated" in " ".join(fig.get_suptitle().split())
                    width = fig.get_size_inches()[0]
                    assert width <= plots.PAGE_WIDTH  # one column, or both
                    texts = [t.get_text() for t in fig.findobj(plt.Text) if t.get_visible()]
                    if make is plots.bars_figure:  # every bar carries its value
                        values = [c.value for cells in table.rows.values() for col, c in cells.items()
                                  if col in lay.columns.values() and c.value is not None]
                        printed = [f"{v:.{table.decimals}f}" for v in values]
                        assert all(p in texts for p in printed)
                        assert all(ax.get_xlim()[0] == 0 and ax.get_xticks()[-1] == 100
                                   for ax in fig.axes)  # 0-100 on every benchmark
                    else:
                        assert all(ax.get_ylim() == (0, 100) for ax in fig.axes)
                finally:
                    plt.close(fig)


def test_prism_is_drawn_over_its_seven_tracks_with_two_series(tables):
    one, three = tables["prism-bench"]
    lay = plots.layout(one[0])
    assert lay.axes == list(TRACKS.values()) and lay.series == ["Ali.", "Aes."]  # no Overall, no Avg.
    with plt.rc_context(plots._STYLE):
        fig = plots.bars_figure(three[0])  # three models: a panel per series, a bar per model
        assert [ax.get_title() for ax in fig.axes] == ["Ali.", "Aes."]
        assert [t.get_text() for t in fig.legends[0].get_texts()] == list(MODELS)
        # the CIs the table has are drawn: an error bar per bar
        assert sum(len(c.lines[2][0].get_segments()) for ax in fig.axes for c in ax.containers
                   if hasattr(c, "lines") and c.lines[2]) == 2 * 3 * 7
        plt.close(fig)
        fig = plots.radar_figure(one[0])  # one model: the two series as two lines of one radar
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Ali.", "Aes."]
        assert [t.get_text().replace("\n", " ") for t in fig.axes[0].get_xticklabels()] == list(TRACKS.values())
        plt.close(fig)


def test_figures_are_png_and_vector_pdf(tables, tmp_path):
    table = tables["r2i-bench"][1][0]
    png, pdf = plots.table_bars(table, tmp_path / "sub" / "r2i_bars")
    with Image.open(png) as img:
        assert img.format == "PNG" and img.info["dpi"][0] == pytest.approx(300, abs=0.01)
        assert img.width == pytest.approx(plots.COLUMN_WIDTH * 300, abs=2)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/FontFile2" in data  # text as embedded TrueType: editable, sharp
    assert [p.suffix for p in plots.table_radar(table, tmp_path / "r2i_radar")] == [".png", ".pdf"]


def test_layout_reads_any_table():
    plain = PaperTable("T", ["Overall", "A", "B", "Mean", "failed"],
                       {"m": {"Overall": Cell(50.0), "A": Cell(40.0), "B": Cell(60.0), "Mean": Cell(1.0),
                              "failed": Cell(3)}})
    assert plots.layout(plain).axes == ["A", "B"] and plots.layout(plain).series == [""]
    # a suffix that repeats over one category only is part of a name, not a series
    names = PaperTable("T", ["spatial relation", "object counting", "colour"], {"m": {}})
    assert plots.layout(names).axes == ["spatial relation", "object counting", "colour"]


def test_score_distribution_counts_whole_images(tmp_path):
    with plt.rc_context(plots._STYLE):
        png, _ = plots.score_distribution({"a": [0.1, 0.5, None, 1.0], "b": [0.9]}, tmp_path / "s")
    with Image.open(png) as img:
        assert len(img.convert("L").getcolors(maxcolors=1 << 16) or []) > 10  # drawn, not blank


def test_plots_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no models"):
        plots.table_bars(PaperTable("T", ["A"], {}), tmp_path / "x")
    with pytest.raises(ValueError, match="at least 3 categories"):
        plots.table_radar(PaperTable("T", ["A", "B"], {"m": {"A": Cell(1.0), "B": Cell(2.0)}}), tmp_path / "x")
    with pytest.raises(ValueError, match="no models"):
        plots.score_distribution({}, tmp_path / "x")


# -- issue 34 item 12: what a reader of the figures and the page saw wrong ------------------------------------

def test_a_label_breaks_between_words_never_inside_one(tables):
    """As found: the radar of R2I-Bench's Table 3 read "Compositiona" over "l" (textwrap broke long words)."""
    table = tables["r2i-bench"][0][0]
    words = {w for axis in plots.layout(table).axes for w in axis.split()}
    assert "Compositional" in words
    with plt.rc_context(plots._STYLE):
        for make in (plots.radar_figure, plots.bars_figure):
            fig = make(table)
            labels = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()]
            pieces = {p for label in labels for line in label.split("\n") for p in line.split()}
            assert "Compositional" in pieces or make is plots.bars_figure
            assert pieces & words == pieces - {p for p in pieces if p.replace(".", "").isdigit()}, make.__name__
            plt.close(fig)
    assert plots._wrap("Mathematical reasoning", 5) == "Mathematical\nreasoning"


def test_per_image_scores_on_0_100_and_unscorable_prompts_apart():
    """As found: the histogram was on 0-1 beside tables on 0-100, and an unscorable prompt (no questions,
    no judge asked) was counted as failed."""
    with plt.rc_context(plots._STYLE):
        fig = plots.distribution_figure({"a": [0.1, 0.55, None, None, 1.0], "b": [0.9, None]},
                                        unscorable={"a": 1})
        ax = fig.axes[0]
        assert ax.get_xlim() == (0, 100) and list(ax.get_xticks()) == [0, 20, 40, 60, 80, 100]
        assert ax.get_xlabel() == "per-image score (0-100)"
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["a (n=3, 1 failed, 1 not scorable)",
                                                                      "b (n=1, 1 failed)"]
        # the outline of a's histogram: the 0.55 image one image high over the 55-60 bin of the 0-100 axis
        outline = {(round(x, 6), round(y, 6)) for x, y in ax.patches[1].get_xy()}
        assert {(55.0, 1.0), (60.0, 1.0)} <= outline and max(x for x, _ in outline) == 100.0
        plt.close(fig)


def test_mt2ie_iterations_on_whole_iterations_and_the_whole_scale():
    """As found: with one iteration the axis read -0.045, -0.03...; a flat score of 0.71 filled the height
    from 0.67 to 0.75, noise drawn as change."""
    for per_iteration, ticks in [({"m": {0: {"score": 0.71, "difficulty": 12.0}}}, [0]),
                                 ({"m": {i: {"score": 0.7 + i / 1000, "difficulty": 10.0 + i} for i in range(3)},
                                   "n": {i: {"score": 0.4, "difficulty": -2.0} for i in range(3)}}, [0, 1, 2]),
                                 ({"m": {i: {"score": 0.5, "difficulty": 3.0} for i in range(1, 31)}},
                                  list(range(1, 31, 3)))]:
        with plt.rc_context(plots._STYLE):
            fig = plots.iterations_figure(per_iteration)
            score, difficulty = fig.axes[:2]
            for ax in (score, difficulty):
                assert [float(t) for t in ax.get_xticks()] == ticks
            assert score.get_ylim() == (0, 1.0)
            lows = [it["difficulty"] for its in per_iteration.values() for it in its.values()]
            assert difficulty.get_ylim()[0] == min(0.0, *lows) and difficulty.get_ylim()[1] > max(lows)
            assert plots.label_problems(fig) == []
            plt.close(fig)


def test_the_report_numbers_figures_as_the_paper_numbers_its_tables(tmp_path):
    """As found: R2I-Bench's Table 3 was drawn into r2i-bench_table1_*, its Table 13 into table2_*."""
    from study.runs import scored_run

    from t2ireason.report.writer import figure_name, write_report

    assert figure_name("R2I-Bench Table 3: R2I-Score", "R2I-Bench") == "table3"
    assert figure_name("PRISM-Bench Table 2 (PRISM-Bench-ZH)", "PRISM-Bench") == "table2"
    assert figure_name("R2I-Bench: Con.Mix. by subcategory", "R2I-Bench") == "con-mix-by-subcategory"
    run = scored_run(tmp_path, "r2i-bench", "sd")
    report = write_report([run], tmp_path / "report")
    names = {p.name for p in report["plots"]}
    assert {"r2i-bench_table3_bars.png", "r2i-bench_table3_radar.png", "r2i-bench_table13_bars.png",
            "r2i-bench_commonsense-by-subcategory_bars.png", "r2i-bench_con-mix-by-subcategory_bars.png",
            "r2i-bench_scores.png"} <= names
    assert not any(n.startswith(("r2i-bench_table1_", "r2i-bench_table2_")) for n in names)
    # the gallery: each image's score on 0-100 as the tables; an unscorable prompt is "not scorable", not failed
    page = report["html"][0].read_text()
    results = run.results("scripted")
    scored = next(r for r in results if r.score is not None)
    assert f"<b>score</b> {100 * scored.score:.1f}" in page
    unscorable = [r for r in results if r.unscorable]
    assert unscorable and page.count('<span class="badge">not scorable</span>') == len(unscorable)
    assert page.count('<span class="badge fail">failed</span>') == sum(r.failed and not r.unscorable for r in results)


# -- issue 50: names users give ------------------------------------------------------------------------------

def test_names_with_dollar_signs_are_drawn_as_text_not_math(tmp_path):
    """As found: a run named ``ev$\\undefinedmacro$il`` stopped the report (matplotlib read it as mathtext and
    raised), and ``$\\frac{1}{2}$`` was drawn as a fraction."""
    from matplotlib.text import Text

    names = ["plain", r"ev$\undefinedmacro$il", r"$\frac{1}{2}$ model"]
    columns = ["Logical $x$", "Numerical", "Causal"]
    table = PaperTable(title="Runs of $5", columns=columns,
                       rows={n: {c: Cell(50.0 + i) for c in columns} for i, n in enumerate(names)})
    assert all(p.is_file() for p in plots.table_bars(table, tmp_path / "bars") + plots.table_radar(table, tmp_path / "radar"))
    assert all(p.is_file() for p in plots.score_distribution({n: [10.0, 50.0, None] for n in names}, tmp_path / "dist",
                                                              title="$\\bad$"))
    with plt.rc_context(plots._STYLE):
        fig = plots.bars_figure(table)
    fig.canvas.draw()
    drawn = [t for t in fig.findobj(Text) if "$" in t.get_text()]
    assert {r"ev$\undefinedmacro$il", r"$\frac{1}{2}$ model"} <= {t.get_text() for t in drawn}
    assert not [t.get_text() for t in drawn if t.get_parse_math()]
    plt.close(fig)
