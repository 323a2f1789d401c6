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
        for make in makers:
            with plt.rc_context(plots._STYLE):
                fig = make(table)
                try:
                    assert plots.label_problems(fig) == [], (table.title, make.__name__)
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
