"""A report's paired comparisons of runs, rank intervals and smallest detectable difference (issue 49)."""

import csv
import io
import math

import numpy as np
import pytest

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.prism_bench.release import TRACKS
from t2ireason.report.comparisons import COLUMNS, MARK, compare_runs
from t2ireason.report.tables import side_by_side, to_csv, to_markdown
from t2ireason.results import ImageResult

BENCH = get_benchmark("prism-bench")


class FakeRun:
    """What the comparisons read of a run: its benchmark, its scores' record and its manifest."""

    def __init__(self, results, judge="openai:gpt-4.1", preset="paper", data="some/release"):
        self.bench, self.manifest = BENCH, {"data": data}
        self._scores = {"aggregate": BENCH.aggregate(results),
                        "judge": {"backend": judge.split(":")[0], "model": judge.split(":")[1], "preset": preset}}

    def scores(self, evaluation):
        return self._scores


def prism_results(base, shift, noise_seed, *, prompts=700):
    """PRISM-Bench images over ``prompts`` prompts of the seven tracks: each prompt's difficulty ``base`` (shared
    by every run: what pairing removes), the run's ``shift`` and its own noise, on the judge's 0-10 scale x 10."""
    rng = np.random.default_rng(noise_seed)
    tracks = list(TRACKS)
    out = []
    for i in range(prompts):
        ali, aes = (float(10 * np.clip(np.rint(b + shift + rng.normal(0, 0.8)), 0, 10)) for b in base[i])
        out.append(ImageResult(id=f"en/{tracks[i % 7]}/{i}", prompt=f"prompt {i}", score=(ali + aes) / 200,
                               subscores={"alignment": ali, "aesthetic": aes},
                               context={"track": tracks[i % 7], "language": "en", "protocol": "paper"}))
    return out


def report(results, runs=None, **kw):
    runs = runs or {label: FakeRun(rs) for label, rs in results.items()}
    group = [(runs[label], "e", label) for label in results]
    per_run = [BENCH.paper_tables(run.scores("e")["aggregate"], label) for run, _, label in group]
    tables = side_by_side(per_run)
    found = compare_runs(BENCH, group, results, per_run, **kw)
    found.annotate(tables)
    return found, tables


@pytest.fixture(scope="module")
def three_runs():
    """Issue 49's "done when": three runs over the same 700 PRISM-Bench prompts, one clearly better (by half a
    point of the judge's 0-10 on every image), two drawn alike."""
    base = np.random.default_rng(0).uniform(2, 8, size=(700, 2))
    results = {"better": prism_results(base, 0.5, 1), "alike A": prism_results(base, 0.0, 2),
               "alike B": prism_results(base, 0.0, 3)}
    return results, *report(results)


def test_one_clearly_better_run_and_two_alike(three_runs):
    results, found, tables = three_runs
    rows = {(r["run_a"], r["run_b"], r["column"]): r for r in found.rows}
    first, second = rows[("better", "alike A", "Overall Avg.")], rows[("alike A", "alike B", "Overall Avg.")]
    assert first["significant"] and first["ci_low"] > 0 and first["n"] == 700
    assert not second["significant"] and second["ci_low"] < 0 < second["ci_high"]
    # the difference is of the two cells as the table computes them (the mean over the tracks)
    table = tables[0]
    assert first["difference"] == pytest.approx(table.rows["better"]["Overall Avg."].value
                                                - table.rows["alike A"]["Overall Avg."].value)
    # the rank intervals: the better run alone at rank 1, the other two overlapping
    ranks = {label: (cells["Overall Avg."].rank_low, cells["Overall Avg."].rank_high)
             for label, cells in table.rows.items()}
    assert ranks["better"] == (1, 1)
    assert ranks["alike A"][0] == ranks["alike B"][0] == 2 and ranks["alike A"][1] == ranks["alike B"][1] == 3
    # tables.csv carries them; the alike runs are marked below the best, the rule in the caption
    written = list(csv.DictReader(io.StringIO(to_csv(tables))))
    row = next(r for r in written if r["model"] == "alike B" and r["column"] == "Overall Avg.")
    assert (row["rank_low"], row["rank_high"]) == ("2", "3")
    assert table.rows["alike A"]["Overall Avg."].mark == MARK and not table.rows["better"]["Overall Avg."].mark
    assert "differs from the column's best run" in table.note
    md = to_markdown(tables[:1])
    assert f"{MARK} [" in md and "within noise" in md


def test_the_smallest_detectable_difference_is_said_under_the_table(three_runs):
    _, found, tables = three_runs
    line = next(r for r in tables[0].remarks if "within noise" in r)
    assert line.startswith("with 700 prompts, differences under ") and "in Overall Avg." in line
    # the paired standard deviation of the alike runs' difference, by hand: a plain check of the magnitude
    mdd = float(line.split("differences under ")[1].split(" ")[0])
    assert 0.2 < mdd < 3.0


def test_shuffled_prompts_break_the_pairing(three_runs):
    """The same runs with one's images moved to other prompts (ids kept): the per-prompt pairing lost, the
    better run's lead no longer stands out so clearly (its interval wider); the statistics read the pairing."""
    results, found, _ = three_runs
    moved = results["better"]
    rng = np.random.default_rng(5)
    shuffled = list(moved)
    for track in TRACKS:  # each track's scores moved among its prompts: every cell of the table the same
        at = [i for i, r in enumerate(moved) if r.context["track"] == track]
        for i, j in zip(at, rng.permutation(at)):
            shuffled[i] = ImageResult(id=moved[i].id, prompt=moved[i].prompt, score=moved[j].score,
                                      subscores=dict(moved[j].subscores), context=dict(moved[i].context))
    found2, _ = report({"better": shuffled, "alike A": results["alike A"]})
    paired = next(r for r in found.rows if r["run_b"] == "alike A" and r["column"] == "Overall Avg.")
    broken = next(r for r in found2.rows if r["column"] == "Overall Avg.")
    assert broken["difference"] == pytest.approx(paired["difference"])
    assert broken["ci_high"] - broken["ci_low"] > 1.5 * (paired["ci_high"] - paired["ci_low"])


def test_runs_of_another_judge_or_other_prompts_are_left_out_and_said():
    base = np.random.default_rng(0).uniform(2, 8, size=(60, 2))
    results = {"a": prism_results(base, 0, 1, prompts=60), "b": prism_results(base, 0, 2, prompts=60),
               "c": prism_results(base, 0, 3, prompts=50)}
    runs = {"a": FakeRun(results["a"]), "b": FakeRun(results["b"], judge="openai:gpt-4o"),
            "c": FakeRun(results["c"])}
    found, tables = report(results, runs, n_resamples=200)
    assert not found.rows
    said = "\n".join(found.left_out)
    assert "a and b: judge openai:gpt-4.1 against openai:gpt-4o" in said
    assert "a and c: different prompts (60 and 50, 50 in common)" in said
    assert all(cell.rank_low is None for cells in tables[0].rows.values() for cell in cells.values())
    assert found.to_csv().splitlines() == [",".join(COLUMNS)]


def test_each_cell_compared_is_the_tables_own(three_runs):
    """The per-prompt form of every cell gives the value PRISM-Bench's aggregate printed, paper protocol and
    official: nothing is left out as differing from it."""
    results, found, tables = three_runs
    assert not found.left_out
    assert {r["column"] for r in found.rows} == set(tables[0].columns)
    official = {label: [ImageResult(**{**r.__dict__, "context": {**r.context, "protocol": "official"}})
                        for r in rs[:140]] for label, rs in results.items()}
    found_official, tables_official = report(official, n_resamples=200)
    assert not found_official.left_out
    assert {r["column"] for r in found_official.rows} == set(tables_official[0].columns)
    assert all(math.isfinite(r["p_value"]) for r in found_official.rows)


def test_the_standing_figure_draws_the_runs_rank_intervals(three_runs):
    """Beside the paper's rows, each run's bar carries its interval and its rank interval among the runs; the
    paper's rows, with no per-prompt scores, are said to have none known."""
    import copy

    from t2ireason.report.published import standing_bars
    from t2ireason.results import Cell, RowProtocol

    table = copy.deepcopy(three_runs[2][0])
    table.rows["SD1.5 [paper]"] = {"Overall Avg.": Cell(50.0)}
    table.protocols["SD1.5 [paper]"] = RowProtocol(paper=True)
    fig = standing_bars(table, ["better", "alike A", "alike B"])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum(t.endswith("rank 1") for t in texts) == 1 and sum(t.endswith("rank 2–3") for t in texts) == 2
    assert not any("rank" in t for t in texts if t.strip() == "50.0")
    assert "intervals are unknown" in fig.get_supxlabel().replace("\n", " ")


def test_a_report_of_runs_writes_its_comparisons(tmp_path):
    """``write_report`` of three runs of the shipped sample (one judge, one preset, the same prompts):
    comparisons.csv with the issue's columns, its Markdown and LaTeX, a section of the page, rank intervals in
    tables.csv and the line under each table; one run alone: no comparisons, the line still said."""
    from study.runs import scored_run

    from t2ireason.report.writer import write_report

    runs = [scored_run(tmp_path, "prism-bench", name) for name in ("A", "B", "C")]
    report = write_report(runs, tmp_path / "report", n_resamples=300)
    rows = list(csv.DictReader(io.StringIO(report["comparisons_csv"].read_text())))
    assert tuple(rows[0]) == COLUMNS and {r["run_a"] + r["run_b"] for r in rows} == {"AB", "AC", "BC"}
    assert all(r["significant"] in ("yes", "no") and float(r["ci_low"]) <= float(r["difference"]) <= float(r["ci_high"])
               for r in rows if r["difference"])
    assert "paired comparisons over prompts" in report["comparisons_md"].read_text()
    assert "\\begin{tabular}" in report["comparisons_tex"].read_text()
    page = report["html"][0].read_text()
    assert "PRISM-Bench: paired comparisons" in page and "within noise" in page
    assert page.count('<table class="comparisons">') == 1
    ranked = [r for r in csv.DictReader(io.StringIO(report["tables_csv"].read_text())) if r["rank_low"]]
    assert ranked and all(1 <= int(r["rank_low"]) <= int(r["rank_high"]) <= 3 for r in ranked)
    alone = write_report(runs[:1], tmp_path / "alone", n_resamples=300)
    assert "comparisons_csv" not in alone and "within noise" in alone["tables_md"].read_text()


def test_r2i_bench_cells_are_compared_as_its_tables_compute_them(tmp_path):
    """R2I-Bench's Table 3 (the micro Overall, each category's mean), Table 13 and the per-category tables: each
    cell's per-prompt form gives the printed value, so every one is compared; a benchmark that declares none is
    said to be left out."""
    from study.runs import scored_run

    bench = get_benchmark("r2i-bench")
    runs = [scored_run(tmp_path, "r2i-bench", name) for name in ("A", "B")]
    group = [(run, "scripted", run.name) for run in runs]
    results = {run.name: run.results("scripted") for run in runs}
    per_run = [bench.paper_tables(run.scores("scripted")["aggregate"], run.name) for run in runs]
    found = compare_runs(bench, group, results, per_run, n_resamples=200)
    assert not found.left_out
    compared = {(r["table"], r["column"]) for r in found.rows}
    assert {(t.title, c) for t in per_run[0] for c in t.columns} == compared
    assert ("R2I-Bench Table 3: R2I-Score", "Overall") in compared
    other = [scored_run(tmp_path / "w", "worldgenbench", name) for name in ("A", "B")]
    wgb = get_benchmark("worldgenbench")
    found = compare_runs(wgb, [(r, "scripted", r.name) for r in other], {r.name: r.results("scripted") for r in other},
                         [wgb.paper_tables(r.scores("scripted")["aggregate"], r.name) for r in other], n_resamples=100)
    assert not found.rows and "declares no per-prompt form" in found.left_out[0]


def test_the_judges_measured_noise_changes_the_detectable_line(three_runs):
    """Runs whose scores.json holds ``judge_noise`` (``evaluate --repeats K``): the line under the table keeps the
    difference detectable and says the judge's part of it, what a K-reply mean and a noiseless judge would bring
    it to; a larger measured share is a larger part."""
    results, _, _ = three_runs
    pair = {k: results[k] for k in ("alike A", "alike B")}

    def lines(share):
        runs = {label: FakeRun(rs) for label, rs in pair.items()}
        if share:
            runs["alike A"]._scores["judge_noise"] = {"images": 700, "repeats": 3, "judge_share": share}
        _, tables = report(pair, runs, n_resamples=50)
        return [r for r in tables[0].remarks if "within noise" in r or "judge" in r]

    def number(text, after):
        return float(text.split(after)[1].split(" ")[0].rstrip("%,"))

    plain, low, high = lines(None), lines(0.1), lines(0.3)
    assert len(plain) == 1 and low[0] == plain[0] == high[0]  # the detectable difference itself is as before
    assert "judge's own noise" in low[1] and "alike A (K=3)" in low[1] and "alike B" not in low[1]
    mdd = number(plain[0], "differences under ")
    repeats, noiseless = number(low[1], "would be "), number(low[1], "noiseless judge ")
    assert noiseless < repeats < mdd
    assert number(low[1], "of that variance of d, ") < number(high[1], "of that variance of d, ")
