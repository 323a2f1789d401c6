"""Issue 43: a prompt's card in report.html showed R2I-Bench's score on 0-100 beside its dimensions' badges on
0-1 (66.7 beside 0.667). Every number of a card is on the tables' 0-100 now, each benchmark saying the scale of
its subscores (PRISM-Bench's are on 0-100 already, WorldGenBench's are counts). (Here for the study tests'
scored runs.)"""

from __future__ import annotations

import html

import pytest

from t2ireason.benchmarks import get_benchmark
from t2ireason.report.writer import write_report

from .runs import scored_run


@pytest.mark.parametrize("benchmark", ["r2i-bench", "t2i-reasonbench", "prism-bench"])
def test_a_cards_badges_are_on_the_scale_of_its_score(tmp_path, benchmark):
    run = scored_run(tmp_path, benchmark, "model-a", limit=3)
    report = write_report([run], tmp_path / "report")
    page = html.unescape((tmp_path / "report" / "report.html").read_text())
    results = [r for r in run.results(run.evaluations()[0]) if r.subscores]
    assert results, "the scripted run has subscores"
    scale = get_benchmark(benchmark).subscore_scale
    for r in results:
        for key, value in r.subscores.items():
            if value is None:
                continue
            on_100 = value * scale
            assert 0 <= on_100 <= 100, (key, value)
            shown = f"{on_100:.1f}" if scale != 1 else f"{on_100:.3g}"
            assert f'<span class="badge">{key}: {shown}</span>' in page, (key, value)
    assert report["html"]
