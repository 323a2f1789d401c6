"""tables.tex: booktabs tables with each column's best value in bold (the least for a rank or a
spread), intervals on request, LaTeX's special characters escaped, wide tables scaled to the page."""

from __future__ import annotations

from t2ireason.report.tables import best_rows, to_latex
from t2ireason.results import Cell, PaperTable

TABLE = PaperTable("R2I-Bench Table 3: R2I-Score", ["Overall", "Con.Mix.", "n_failed & 50%"], {
    "sd3_medium": {"Overall": Cell(61.54, 54.0, 70.1), "Con.Mix.": Cell(40.0), "n_failed & 50%": Cell(3)},
    "flux-dev": {"Overall": Cell(58.0, 50.0, 66.0), "Con.Mix.": Cell(40.04), "n_failed & 50%": Cell(5)},
}, note="0-100; overall is the micro average")


def test_latex_marks_the_best_and_escapes():
    tex = to_latex([TABLE])
    lines = tex.splitlines()
    assert lines[1:6] == ["\\begin{table}[t]", "\\centering", "\\small", "\\begin{tabular}{lrrr}", "\\toprule"]
    assert "Model & Overall & Con.Mix. & n\\_failed \\& 50\\% \\\\" in lines
    # the best per column in bold; a tie as printed (40.0 and 40.0) bolds both; counts: the larger
    assert "sd3\\_medium & \\textbf{61.5} & \\textbf{40.0} & 3 \\\\" in lines
    assert "flux-dev & 58.0 & \\textbf{40.0} & \\textbf{5} \\\\" in lines
    assert "\\midrule" in lines and "\\bottomrule" in lines and "\\end{table}" in lines
    assert "\\caption{R2I-Bench Table 3: R2I-Score. 0-100; overall is the micro average.}" in lines
    assert "[54.0, 70.1]" not in tex  # intervals only when asked
    with_ci = to_latex([TABLE], intervals=True)
    assert "\\textbf{61.5} {\\scriptsize [54.0, 70.1]}" in with_ci and "95\\% bootstrap" in with_ci


def test_best_is_the_least_for_ranks_and_wide_tables_fit_the_page():
    ranking = PaperTable("MT2IE ranking", ["score", "mean rank"], {
        "a": {"score": Cell(0.8), "mean rank": Cell(1.0)}, "b": {"score": Cell(0.4), "mean rank": Cell(2.0)}},
        decimals=3)
    assert best_rows(ranking) == {"score": {"a"}, "mean rank": {"a"}}
    assert best_rows(PaperTable("one model", ["x"], {"a": {"x": Cell(1.0)}})) == {}  # nothing to compare
    wide = PaperTable("PRISM-Bench Table 1", [f"c{i}" for i in range(24)], {"a": {}})
    tex = to_latex([wide])
    assert "\\begin{table*}[t]" in tex and "\\resizebox{\\textwidth}{!}{%" in tex and "\\end{tabular}}" in tex
    assert "&  --" not in tex and " & --" in tex  # an empty cell is a dash
