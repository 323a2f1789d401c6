"""tables.tex: booktabs tables with each column's best value in bold (the least for a rank or a
spread), intervals on request, LaTeX's special characters escaped; without a width, wide tables scaled to
the page; with one, laid out to fit it (compiled by pdflatex)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from t2ireason.report.cells import best_rows
from t2ireason.report.latex import ONE_COLUMN, ONE_COLUMN_HEIGHT, to_latex
from t2ireason.report.tables import side_by_side
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


# -- issue 34 item 11: tables.tex fits one column, as the papers lay out a table too wide for theirs ----------

PDFLATEX = shutil.which("pdflatex")
#: the models of PRISM-Bench's Table 1 (FLUX-Reason-6M & PRISM-Bench, section 4): the widest table a report holds
PRISM_MODELS = ["SD1.5", "SD2.1", "SDXL", "JanusPro-7B", "Playground", "FLUX.1-schnell", "Bagel", "Bagel-CoT",
                "SD3-Medium", "SD3.5-Medium", "HiDream-I1-Dev", "SD3.5-Large", "FLUX.1-dev", "FLUX.1-Krea-dev",
                "HiDream-I1-Full", "SEEDream 3.0", "Qwen-Image", "Gemini2.5-Flash-Image", "GPT-Image-1 [High]"]


def _compiled(folder: Path, tex: str) -> str:
    """The log of ``tex`` (tables) compiled by pdflatex in LaTeX's one-column article."""
    (folder / "tables.tex").write_text(tex)
    (folder / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
                                    "\\begin{document}\n\\typeout{textwidth=\\the\\textwidth}\n\\input{tables.tex}\n"
                                    "\\end{document}\n")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=folder,
                          capture_output=True, text=True, timeout=120)
    log = (folder / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert f"textwidth={ONE_COLUMN:.1f}pt" in log  # the width the tables were laid out for
    return log


@pytest.mark.slow
@pytest.mark.skipif(PDFLATEX is None, reason="needs pdflatex (Debian's texlive-latex-base; `make test` installs it)")
def test_every_benchmarks_tables_fit_one_column_without_scaling(tmp_path):
    """As found: PRISM-Bench's 24 columns were scaled to the page (about 3 pt type) and R2I-Bench's Table 3 was
    131 pt wider than a column. Each benchmark's tables of three runs side by side, and PRISM-Bench's Table 1
    with the paper's 19 models, compile in a one-column article with no overfull line and nothing scaled."""
    from study.runs import scored_run

    from t2ireason.benchmarks import JUDGED
    from t2ireason.report.writer import write_report

    tables, prism_runs, all_runs = [], [], []
    for bench_name in JUDGED:
        runs = [scored_run(tmp_path / bench_name, bench_name, name)
                for name in ("Stable Diffusion 3.5 Large", "FLUX.1-dev", "GPT-Image-1 [High]")]
        all_runs += runs
        tables += side_by_side([run.bench.paper_tables(run.scores("scripted")["aggregate"], run.name) for run in runs])
        prism_runs = runs if bench_name == "prism-bench" else prism_runs
    paper = next(t for t in tables if t.title == "PRISM-Bench Table 1")
    rng = random.Random(0)
    tables.append(PaperTable("PRISM-Bench Table 1 (19 models)", paper.columns, {
        m: {c: Cell(round(rng.uniform(5, 95), 1)) for c in paper.columns} for m in PRISM_MODELS}, paper.note))
    tex = to_latex(tables, width=ONE_COLUMN, height=ONE_COLUMN_HEIGHT)
    assert "\\resizebox" not in tex and "table*" not in tex
    assert tex.count("\\caption{") == len(tables)  # a table the page cannot hold goes on in a float of its own
    log = _compiled(tmp_path, tex)
    assert "Overfull \\hbox" not in log, [line for line in log.splitlines() if "Overfull" in line]
    assert "Float too large" not in log, [line for line in log.splitlines() if "Float too large" in line]
    # PRISM-Bench's tracks as rows for a report's few models; the paper's 19 models as rows, in panels
    prism = tex.split("\\caption{PRISM-Bench Table 1.")[0].rsplit("\\begin{table}", 1)[1]
    assert "\nImagination & " in prism and "\\multicolumn{3}{c}" in prism
    nineteen = tex.split("\\caption{PRISM-Bench Table 1 (19 models)")[0].rsplit("\\begin{table}", 1)[1]
    assert "\nSD1.5 & " in nineteen and nineteen.count("\\begin{tabular}") >= 2
    assert "\\multicolumn{3}{c}{Imagination}" in nineteen
    # the report's tables.tex is laid out so
    report = write_report(prism_runs, tmp_path / "report", compare=False)
    written = report["tables_tex"].read_text()
    assert written == to_latex(side_by_side([run.bench.paper_tables(run.scores("scripted")["aggregate"], run.name)
                                             for run in prism_runs]), width=ONE_COLUMN, height=ONE_COLUMN_HEIGHT)
    assert "Overfull \\hbox" not in _compiled(tmp_path / "report", written)
    # issue 49: with the runs compared (marks, the lines under each table), and the pairwise tables, it still fits
    compared = write_report(prism_runs, tmp_path / "compared")
    log = _compiled(tmp_path / "compared", compared["tables_tex"].read_text())
    assert "Overfull \\hbox" not in log and "Float too large" not in log
    (tmp_path / "pairs").mkdir()
    log = _compiled(tmp_path / "pairs", compared["comparisons_tex"].read_text())
    assert "Float too large" not in log
    # issue 40 item 7: with the papers' rows (--published), every benchmark's tables.tex compiles and fits the
    # page: PRISM-Bench's Table 1 was 243 pt taller than it ("Float too large"), never placed
    for bench_name in JUDGED:
        runs = [run for run in all_runs if run.bench.name == bench_name]
        written = write_report(runs, tmp_path / f"published-{bench_name}", published=True)["tables_tex"].read_text()
        log = _compiled(tmp_path / f"published-{bench_name}", written)
        assert "Float too large" not in log and "Overfull \\hbox" not in log, (bench_name, [
            line for line in log.splitlines() if "Float too large" in line or "Overfull" in line])
        assert "\\resizebox" not in written, bench_name
        if bench_name == "prism-bench":
            assert "Table~\\ref{tab:prism-bench-table-1}, continued (2 of" in written
        if bench_name == "t2i-reasonbench":  # the paper's row groups, and the runs measured otherwise apart
            assert "\\textit{Unified Multimodal Models}" in written and "$^\\dagger$" in written


def test_a_narrow_table_is_laid_out_as_before_and_a_wide_one_in_panels():
    tex = to_latex([TABLE], width=ONE_COLUMN)
    assert tex == to_latex([TABLE])  # what fits keeps its one line per model
    columns = [f"Track {i} {part}" for i in range(8) for part in ("Ali.", "Aes.", "Avg.")]
    wide = PaperTable("wide", columns, {f"model-{m}": {c: Cell(50.0 + m) for c in columns} for m in range(12)})
    tex = to_latex([wide], width=ONE_COLUMN)
    assert "\\resizebox" not in tex and tex.count("\\begin{tabular}") >= 2 and "\\medskip" in tex
    assert "\\multicolumn{3}{c}{Track 0}" in tex and "\\cmidrule(lr){2-4}" in tex
    assert tex.count("model-11 & ") == tex.count("\\begin{tabular}")  # every panel holds every model


def test_t2i_reasonbench_table_3_draws_the_rewritten_prompts_change_from_the_originals(tmp_path):
    """Issue 40 item 7: T2I-ReasonBench's Table 3 (each score with LLM-rewritten prompts beside its change from the
    same model's scores on the original prompts, section 5.2) was not drawn. A run of rewritten prompts beside
    the run of the original prompts with the same generator, judge and preset gives it: signed changes, never
    ranked, the dimension over its score and change in LaTeX."""
    from study.runs import scored_run

    from t2ireason.report.tables import to_markdown
    from t2ireason.report.writer import write_report

    original = scored_run(tmp_path, "t2i-reasonbench", "sd3-original")
    rewritten = scored_run(tmp_path, "t2i-reasonbench", "sd3-rewritten")
    for run, flag in ((original, False), (rewritten, True)):
        run.update(lambda m, flag=flag: m.update(generation={"model": "stabilityai/sd3", "rewritten_prompts": flag}))
    report = write_report([original, rewritten], tmp_path / "report")
    table = report["markdown"].split("### T2I-ReasonBench Table 3: with LLM-rewritten prompts")[1].split("###")[0]
    now = rewritten.scores("scripted")["aggregate"]
    then = original.scores("scripted")["aggregate"]
    idiom = now["dimensions"]["idiom"]["score"]["mean"]
    change = idiom - then["dimensions"]["idiom"]["score"]["mean"]
    assert "| Model | Idiom score | Idiom change |" in table
    row = next(line for line in table.splitlines() if line.startswith("| sd3-rewritten |"))
    assert row.startswith(f"| sd3-rewritten | {idiom:.1f} | {change:+.1f} |"), row
    assert "| sd3-original |" not in table  # a row for the rewritten run only
    assert "change from sd3-original's, the same model judged alike on the original prompts" in table
    tex = report["tables_tex"].read_text()
    section = tex.split("T2I-ReasonBench Table 3: with LLM-rewritten prompts")[0].rsplit("\\begin{table}", 1)[1]
    assert f"{change:+.1f}" in section and "change" in section and "\\textbf{" not in section.split("change")[-1]
    changes = PaperTable("t", ["Idiom change"], {"a": {"Idiom change": Cell(-3.0)}, "b": {"Idiom change": Cell(2.0)}})
    assert best_rows(changes) == {} and "| a | -3.0 |" in to_markdown([changes])
    # with the paper's rows (--published): the paper's Table 3 joins the run's, the run set apart (a scripted judge),
    # its standing drawn on Overall score, and the LaTeX compiles and fits the page
    published = write_report([original, rewritten], tmp_path / "published", published=True)
    table = published["markdown"].split("### T2I-ReasonBench Table 3: with LLM-rewritten prompts")[1].split("###")[0]
    assert "| Nano-Banana [paper] | 87.7 | -2.2 | 92.2 | -2.6 |" in table and "| SD-3-Medium [paper] | 76.7 | +34.9 |" in table
    assert table.index("Nano-Banana [paper]") < table.index("| sd3-rewritten |")  # below the paper's: not ranked
    assert (tmp_path / "published" / "plots" / "t2i-reasonbench_table3_standing.png").is_file()
    if PDFLATEX is not None:
        log = _compiled(tmp_path / "published", published["tables_tex"].read_text())
        assert "Overfull \\hbox" not in log and "Float too large" not in log


def test_greek_letters_are_latex_math_and_a_table_too_tall_with_its_intervals_drops_them():
    """As found: the agreement tables.tex wrote raw τ, ρ, α, which pdflatex refuses ("Unicode character τ"); and a
    table laid out to fit the width could be taller than the page."""
    from t2ireason.report.latex import ONE_COLUMN_HEIGHT

    small = PaperTable("Agreement (Krippendorff's α)", ["Idiom τ", "All ρ"], {"judge": {"Idiom τ": Cell(0.5),
                                                                                      "All ρ": Cell(0.6)}})
    tex = to_latex([small])
    assert "Idiom $\\tau$" in tex and "All $\\rho$" in tex and "Krippendorff's $\\alpha$" in tex
    assert not {"τ", "ρ", "α"} & set(tex)
    columns = [f"{g} {s}" for g in ("Idiom", "Textual", "Entity", "Scientific", "All") for s in ("τ", "ρ")]
    tall = PaperTable("Table 1", columns, {f"metric {m} (judge-{m})": {c: Cell(0.5 + m / 100, 0.1, 0.9) for c in columns}
                                           for m in range(12)}, note="a note", decimals=4)
    wide_only = to_latex([tall], intervals=True, width=ONE_COLUMN)
    assert "[0.1000, 0.9000]" in wide_only  # fits the width with its intervals, in five panels: far taller than a page
    # (twelve rows: with eight, \scriptsize holds them with their intervals on one page, and keeps them)
    fitted = to_latex([tall], intervals=True, width=ONE_COLUMN, height=ONE_COLUMN_HEIGHT)
    assert "[0.1000, 0.9000]" not in fitted and "intervals are left out here to fit the page" in fitted
    assert fitted.count("\\begin{tabular}") < wide_only.count("\\begin{tabular}") and "\\resizebox" not in fitted
    assert to_latex([small], intervals=True, width=ONE_COLUMN, height=ONE_COLUMN_HEIGHT) == to_latex(
        [small], intervals=True, width=ONE_COLUMN)  # what fits is laid out as before


# -- issue 50: names users give ------------------------------------------------------------------------------

NAMES = ["plain", "[oops] model", "[2cm] ours", "*starred", "a<b>c|d", "x_y & 50% $#{}~^\\", " [spaced] out"]


def test_rows_named_with_latex_specials_start_no_line_latex_reads_as_an_argument():
    """A row after ``\\\\`` (or ``\\midrule``) starting with ``[`` was read as that command's optional argument;
    one starting with ``*`` as ``\\\\*``; ``<``, ``>``, ``|`` came out as other glyphs in pdflatex's OT1 fonts."""
    table = PaperTable("Runs", ["Overall", "[a] col"], {n: {"Overall": Cell(61.0), "[a] col": Cell(50.0)} for n in NAMES})
    for width in (None, ONE_COLUMN):
        lines = to_latex([table], width=width).splitlines()
        assert not [line for line in lines if line.lstrip()[:1] in ("[", "*")]
        starts = {line.split(" & ")[0] for line in lines}
        assert {"{}[oops] model", "{}*starred", "a\\textless{}b\\textgreater{}c\\textbar{}d"} <= starts


@pytest.mark.skipif(PDFLATEX is None, reason="needs pdflatex (Debian's texlive-latex-base; `make test` installs it)")
def test_rows_named_with_latex_specials_compile(tmp_path):
    """As found: a run named "[oops] model" stopped pdflatex ("Missing number", "Illegal unit of measure")."""
    table = PaperTable("Runs", ["Overall", "Logical"], {n: {"Overall": Cell(61.0), "Logical": Cell(50.0)} for n in NAMES})
    log = _compiled(tmp_path, to_latex([table], width=ONE_COLUMN))
    assert "! " not in log and "Missing number" not in log
