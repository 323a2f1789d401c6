"""Agreement tables on small groups and in the paper's order (issue 50): each figure's n printed beside it, a figure
from one or two items withheld (τ of two items is ±1, an accuracy of one is 0 or 1: both read as perfect or awful
agreement), and the rows in the order of the paper's table, not alphabetical after the benchmark's own."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
from pathlib import Path

import pytest

from t2ireason import cli

from .runs import EVALUATION, metric_evaluation, ratings_file, scored_run, study_key


def _none(value) -> bool:
    """NaN in the figures, null in agreement.json."""
    return value is None or math.isnan(value)


def _rate(study: dict, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rater in study["raters"]:
        answers = ratings_file(study, rater, lambda it: {"value": 1 + hashlib.sha256(it["id"].encode()).digest()[0] % 5})
        (folder / f"{rater}.json").write_text(json.dumps(answers))


@pytest.fixture(scope="module")
def agreed(tmp_path_factory):
    """A T2I-ReasonBench study of two images a dimension, rated by three, against the benchmark's metric and three
    baselines: what ``agreement`` printed and wrote."""
    tmp_path = tmp_path_factory.mktemp("small")
    run = scored_run(tmp_path, "t2i-reasonbench", "model-a")
    # baselines named so that neither their names nor their labels sort into the paper's order
    for name, metric in (("a-dsg", "dsg"), ("b-vqa", "vqascore"), ("c-clip", "clip_score")):
        metric_evaluation(run, name, metric, f"judge-{metric}")
    out = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(out), "--per-group", "2", "--raters", "3"]) == 0
    study = study_key(out)
    _rate(study, out / "ratings")
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert cli.main(["agreement", str(run.path), "--ratings", str(out / "ratings")]) == 0
    return printed.getvalue(), json.loads((run.path / "agreement" / study["id"] / "agreement.json").read_text())


def test_rows_in_the_order_of_the_papers_table(agreed):
    _, result = agreed
    # T2I-ReasonBench Table 1: T2I-ReasonScore, then CLIPscore and VQAscore as the paper lists them; DSG after
    assert [r["metric"] for r in result["rows"]] == ["t2i_reasonscore", "clip_score", "vqascore", "dsg"]
    table = result["tables"][0]
    assert [label.split(" (")[0] for label in table["rows"]] == ["T2I-ReasonScore", "CLIPScore", "VQAScore", "DSGScore"]


def test_figures_of_two_items_are_withheld_with_their_n_beside(agreed):
    printed, result = agreed
    own = result["evaluations"][EVALUATION]
    for figures in own["per_group"].values():  # two images a dimension: τ and ρ withheld, said
        assert figures["n"] == 2 and _none(figures["kendall_tau"]) and _none(figures["spearman_rho"])
        assert set(figures.get("withheld", {})) <= {"kendall_tau", "spearman_rho", "pairwise_accuracy"}
        assert figures["kendall_tau_ci"] == [None, None]
    assert any(f.get("withheld") for f in own["per_group"].values())  # some were ±1 or so: kept aside, not printed
    assert _none(own["group_average"]["kendall_tau"])  # an average of withheld figures is none
    assert own["n"] == 8 and not _none(own["kendall_tau"])  # every image pooled: 8, kept

    table = result["tables"][0]
    cells = table["rows"][next(iter(table["rows"]))]
    assert cells["Idiom n"]["value"] == 2 and cells["Idiom τ"]["value"] is None and cells["All n"]["value"] == 8
    assert cells["All τ"]["value"] is not None
    assert "a figure from fewer than 3 is withheld" in table["note"]
    header = next(line for line in printed.splitlines() if "Idiom τ" in line)
    assert "Idiom n" in header and "All n" in header  # the n printed beside, in the console's table too


def test_the_raters_alpha_of_a_small_group_is_withheld_with_its_n(agreed):
    printed, result = agreed
    raters = result["raters"]
    assert raters["per_group_n"] == {g: 2 for g in ("idiom", "textual", "entity", "scientific")}
    assert all(_none(a) for a in raters["per_group"].values()) and raters["n"] == 8
    table = next(t for t in result["tables"] if t["title"].startswith("Inter-rater agreement"))
    cells = table["rows"]["raters"]
    assert cells["Idiom n"]["value"] == 2 and cells["Idiom α"]["value"] is None
    assert "an α from fewer than 3 is withheld" in table["note"]
