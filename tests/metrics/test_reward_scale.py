"""Every judged metric module, loaded with evaluate.load and a scripted judge that gives every
question its best answer: the module returns a key named after itself, its table on 0-100, and its
per-image rewards (``scores``) on one scale, 0-1, the best image scoring exactly 1."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from t2ireason.benchmarks import JUDGED, get_benchmark
from t2ireason.data import load_rows
from t2ireason.judges.scripted import ScriptedJudge, best_answer
from t2ireason.metric import load_metric


@pytest.mark.parametrize("name", JUDGED)
def test_one_reward_scale_and_a_key_named_after_the_module(name):
    bench = get_benchmark(name)
    rows = load_rows(name)
    judge = ScriptedJudge(lambda r: json.dumps(best_answer(r.json_schema)) if r.json_schema else "A picture.")
    metric = load_metric(bench.metric, judge=judge, cache=False, progress=False)
    out = metric.compute(predictions=[Image.new("RGB", (16, 16))] * len(rows), references=rows,
                         structured_output=True)
    headline = out[bench.metric]
    assert isinstance(headline, float) and 1 < headline <= 100  # the table's scale: 0-100
    scored = [s for s in out["scores"] if s is not None]
    assert scored and all(0 <= s <= 1 for s in scored), out["scores"]
    assert max(scored) == pytest.approx(1.0)  # a perfect image is 1, not 10 or 100
