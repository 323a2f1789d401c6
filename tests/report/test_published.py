"""The papers' main tables shipped as cited data: every number checked against the table's text in the seed
paper (parsed here, so a typo in the data fails), and placed under a run's rows (marked, on the run's scale,
with the judge and question set the paper used said beside them)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from t2ireason.report import plots
from t2ireason.report.published import MARK, place, published_tables, standing_bars
from t2ireason.results import Cell, PaperTable

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
if not SEEDS.is_dir():
    SEEDS = Path("/work/shared/seeds")

#: benchmark -> (seed file prefix, per table: the line its header starts with, lines between header and rows)
TABLES = {
    "t2i-reasonbench": ("000", [("Model\tIdiom\tTextual\tEntity\tScientific\tOverall", 0)]),
    "r2i-bench": ("003", [("Model\tSize\tOverall\tCommonsense", 0)]),
    "worldgenbench": ("001", [("Continent Models\tAF", 0), ("Fields\tASTR", 0)]),
    "prism-bench": ("004", [("Model\tImagination", 1), ("Model\tImagination", 1)]),
}


def _seed_rows(text: str, header: str, skip: int, occurrence: int) -> list[tuple[str, list[str]]]:
    """(model as the seed's text prints it, its values as printed) for each model row of a table."""
    lines = text.splitlines()
    start = [i for i, line in enumerate(lines) if line.startswith(header)][occurrence]
    rows = []
    for line in lines[start + 1 + skip:]:
        if not line.strip():
            break
        cells = line.split("\t")
        if len(cells) < 3 or not cells[1].strip():  # a group's heading (<b>Diffusion Models</b>)
            continue
        name = re.sub(r"<sup>.*?</sup>|<[^>]+>|\[[\d, ]+\]|\*|\([^()]*\d{4}[a-z]?\)", "", cells[0])
        name = re.sub(r"\s*_\{(.*?)\}", r" (\1)", name)
        values = [re.sub(r"<[^>]+>|\s*_\{±[^}]*\}", "", c).strip() for c in cells[1:]]
        rows.append((" ".join(name.split()), [v for v in values if v]))
    return rows


@pytest.mark.parametrize("benchmark", list(TABLES))
def test_every_shipped_number_is_the_papers(benchmark):
    seed, specs = TABLES[benchmark]
    files = list(SEEDS.glob(f"{seed}_*.txt"))
    if not files:
        pytest.skip("the seed papers (../shared/seeds) are not here")
    text = files[0].read_text(encoding="utf-8")
    published = published_tables(benchmark)
    assert len(published) == len(specs)
    for n, (pub, (header, skip)) in enumerate(zip(published, specs)):
        occurrence = n if header == specs[0][0] and len(specs) > 1 and specs[1][0] == header else 0
        printed = _seed_rows(text, header, skip, occurrence)
        corrections = [c.split(" -> ") for c in re.sub(r"\s*\(.*\)$", "", pub.citation.get("corrected", "none"))
                       .split(", ") if " -> " in c]
        assert len(pub.rows) == len(printed), pub.citation["table"]
        for row, (name, values) in zip(pub.rows, printed):
            for wrong, right in corrections:  # the seed text's misreadings of a name, declared in the file
                name = name.replace(wrong, right)
            assert row["model"] == name
            shipped = [row["size"]] if "size" in row else []
            assert shipped + [row[c] for c in pub.columns] == values, (pub.citation["table"], name)
        for key in ("paper", "seed", "table", "page", "judge", "questions", "into", "scale"):
            assert pub.citation[key], key


def test_a_papers_rows_join_the_runs_table_marked_and_on_its_scale():
    run = PaperTable("R2I-Bench Table 3: R2I-Score", ["Overall", "Commonsense"],
                     {"my-model": {"Overall": Cell(50.0, 40.0, 60.0), "Commonsense": Cell(55.0)}},
                     note="0-100; overall is the micro average over instances")
    [table, *_], about = place([run], "r2i-bench", 100.0)
    labels = list(table.rows)
    assert labels[0] == "my-model" and len(labels) == 18 and all(label.endswith(f" {MARK}") for label in labels[1:])
    assert table.rows["GPT-Image-1 [paper]"]["Overall"].value == pytest.approx(77.0)  # printed 0.77
    assert table.rows["my-model"]["Overall"] == Cell(50.0, 40.0, 60.0) and run.rows.keys() == {"my-model"}
    assert table.columns[:2] == ["Overall", "Commonsense"] and "Causal" in table.columns
    assert table.note.startswith("0-100; overall is the micro average over instances; [paper]: as printed in R2I-Bench")
    assert "judged by GPT-4o" in table.note
    assert about == [{"model": "the 17 rows marked [paper] of R2I-Bench Table 3: R2I-Score",
                      "judge": published_tables("r2i-bench")[0].citation["judge"],
                      "questions": published_tables("r2i-bench")[0].citation["questions"],
                      "source": "R2I-Bench, Table 3 as printed (seed 003)"}]
    # on a run's 0-1 scale, the paper's numbers as printed
    [on_one], _ = place([PaperTable(run.title, ["Overall"], {"m": {"Overall": Cell(0.5)}})], "r2i-bench", 1.0)
    assert on_one.rows["GPT-Image-1 [paper]"]["Overall"].value == pytest.approx(0.77)
    # a table no run has (the official scripts' accuracy has another title) is shown on its own
    official = PaperTable("T2I-ReasonBench: accuracy (official scripts)", ["Idiom"], {"m": {"Idiom": Cell(40.0)}})
    tables, _ = place([official], "t2i-reasonbench")
    assert [t.title for t in tables] == [official.title, "T2I-ReasonBench Table 2: T2I-ReasonScore"]
    assert len(tables[1].rows) == 16 and tables[1].decimals == 1
    with pytest.raises(ValueError, match="a run is labelled 'GPT-Image-1 \\[paper\\]'"):
        place([PaperTable(run.title, ["Overall"], {"GPT-Image-1 [paper]": {"Overall": Cell(1.0)}})], "r2i-bench")
    assert place([], "mt2ie") == ([], [])  # a benchmark whose paper has no such table


@pytest.mark.parametrize("benchmark", list(TABLES))
def test_where_a_run_stands_is_drawn_without_overlaps(benchmark):
    tables, _ = place([], benchmark)
    for table in tables:
        table.rows = {"my-model": {c: Cell(50.0) for c in table.columns}, **table.rows}
        fig = standing_bars(table, ["my-model"])
        try:
            assert plots.label_problems(fig) == [], table.title
            bold = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_fontweight() == "bold"]
            assert bold == ["my-model"]
        finally:
            plt.close(fig)
