"""The knowledge_checklist_score evaluate module end to end: evaluate.load with a scripted judge,
the sample release's rows (both domains), hand-computed tables, paths as predictions, clear errors."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
METRIC = str(ROOT / "metrics" / "knowledge_checklist_score")
BENCH = get_benchmark("worldgenbench")


@pytest.fixture(scope="module")
def rows():
    release = BENCH.read_release(BENCH.sample_path())
    return release.configs["humanities"] + release.configs["nature"]


def load(judge, **kw):
    return evaluate.load(METRIC, judge=judge, cache=False, progress=False, **kw)


def first_k_satisfied(k_by_first_item: dict[str, int]):
    """A judge satisfying the first k items of each checklist (k looked up by the first item's text)."""

    def reply(request):
        text = request.messages[0].content[0]
        n = int(text.split("Checklist (", 1)[1].split(" items", 1)[0])
        k = next(v for item, v in k_by_first_item.items() if f"1. Item: {item}\n" in text)
        return str([1] * k + [0] * (n - k))

    return ScriptedJudge(reply)


def test_end_to_end_on_the_sample(rows, tmp_path):
    # every row satisfies its first item only, except Japan (4 items, all) and the eclipse (none)
    ks = {r["checklist"][0]["item"]: 1 for r in rows}
    ks[rows[2]["checklist"][0]["item"]] = 4
    ks[rows[7]["checklist"][0]["item"]] = 0
    paths = []
    for i, row in enumerate(rows):  # paths as predictions, where the generator writes them
        path = tmp_path / BENCH.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (24, 24), (i * 15, 0, 0)).save(path)
        paths.append(str(path))
    judge = first_k_satisfied(ks)
    out = load(judge).compute(predictions=paths, references=rows)
    assert len(judge.requests) == len(rows) == 13 and out["num_failed"] == 0
    expected = [1 / 3, 1 / 3, 1.0, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0.0] + [1 / 3] * 5
    assert out["scores"] == pytest.approx(expected)
    assert out["humanities"] == pytest.approx(100 * (6 / 3 + 1) / 7)
    assert out["nature"] == pytest.approx(100 * (5 / 3) / 6)
    assert out["knowledge_checklist_score"] == pytest.approx(100 * sum(expected) / 13)
    assert out["by_continent"]["AS"] == 100 and out["by_discipline"]["ASTR"] == 0
    assert out["table"]["humanities"]["Avg."] == out["humanities"]
    assert out["per_image"][2]["id"] == "humanities-2" and out["per_image"][2]["image"].endswith("humanities/2.png")
    assert out["judge"]["backend"] == "scripted" and out["judge"]["preset"] == "paper"


def test_failures_are_counted_through_the_metric(rows):
    judge = ScriptedJudge(["[1, 1, 1]", "no idea", "still none", "none again"])
    out = load(judge).compute(predictions=[Image.new("RGB", (8, 8))] * 2, references=rows[:2])
    assert out["scores"] == [1.0, None] and out["num_failed"] == 1 and out["num_reasks"] == 2
    assert out["summary"]["humanities"]["failed"] == 1 and out["knowledge_checklist_score"] == 100
    assert out["per_image"][1]["replies"] == ["no idea", "still none", "none again"]


def test_compute_options_reach_scoring(rows):
    judge = ScriptedJudge(["nope"])
    out = load(judge).compute(predictions=[Image.new("RGB", (8, 8))], references=rows[:1], max_reasks=0)
    assert out["scores"] == [None] and len(judge.requests) == 1
    with pytest.raises(TypeError, match="unknown WorldGenBench option"):
        load(ScriptedJudge([])).compute(predictions=[Image.new("RGB", (8, 8))], references=rows[:1], reasks=1)


def test_wrong_inputs_get_clear_errors(rows):
    metric = load(ScriptedJudge([]))
    with pytest.raises(ValueError, match="got 2 images .* but 1 rows"):
        metric.compute(predictions=[Image.new("RGB", (8, 8))] * 2, references=rows[:1])
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['domain'.*'checklist'.*is it a worldgenbench row"):
        metric.compute(predictions=[Image.new("RGB", (8, 8))], references=[{"id": "1", "prompt": "p"}])
    with pytest.raises(ValueError, match="unknown preset 'official'"):
        load(ScriptedJudge([]), preset="official")
