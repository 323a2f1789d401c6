"""The knowledge_checklist_score evaluate module end to end: evaluate.load with a scripted judge,
the sample release's rows (both domains), hand-computed tables, paths as predictions, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


# -- fuzzed judge replies: never a crash, never a silent zero, scores in range ---------------------------



_ITEMS = st.one_of(st.sampled_from([0, 1, "0", "1", 0.0, 1.0]), st.none(), st.booleans(), st.integers(-2, 3),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4))
_VALUE = st.one_of(st.lists(_ITEMS, max_size=5), st.dictionaries(st.sampled_from(["answers", "scores", "x"]),
                                                                 st.lists(_ITEMS, max_size=5), max_size=2), _ITEMS)


@st.composite
def replies(draw):
    try:
        body = json.dumps(draw(_VALUE), allow_nan=True)
    except (TypeError, ValueError):
        body = "[]"
    shape = draw(st.sampled_from(["bare", "fenced", "prose", "broken", "nested", "text"]))
    if shape == "fenced":
        return f"```json\n{body}\n```"
    if shape == "prose":
        return f"{draw(st.text(max_size=20))} {body} {draw(st.text(max_size=20))}"
    if shape == "broken":
        return body[: draw(st.integers(0, max(0, len(body) - 1)))]
    if shape == "nested":
        return "[" * draw(st.integers(1, 40)) + body
    if shape == "text":
        return draw(st.text(max_size=40))
    return body


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(replies(), min_size=1, max_size=3))
def test_fuzzed_replies_never_crash_and_never_score_in_silence(rows, texts):
    row = rows[0]  # three checklist items
    judge = ScriptedJudge(list(texts) * 3)
    [result] = BENCH.score([row], [Image.new("RGB", (8, 8))], judge, max_reasks=2)
    if result.score is None:
        assert result.failure
        assert all(q.score is None for q in result.questions)
    else:
        values = [q.score for q in result.questions]
        assert all(v in (0.0, 1.0) for v in values) and len(values) == len(row["checklist"])
        assert 0.0 <= result.score <= 1.0 and result.score == pytest.approx(sum(values) / len(values))
        assert result.failure is None
    assert len(result.replies) == len(judge.requests) <= 3
