"""The t2i_reasonscore evaluate module end to end: sample rows in, the paper's table out, through
``evaluate.load`` with a scripted judge; presets, text mode and input errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import evaluate
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
METRIC = str(ROOT / "metrics" / "t2i_reasonscore")
BENCH = get_benchmark("t2i-reasonbench")


@pytest.fixture(scope="module")
def rows():
    release = BENCH.read_release(BENCH.sample_path())
    return [r for config in BENCH.configs for r in release.configs[config]]


def half_on_first(request):
    """Describe; then score the first question of every group 0.5 and the others 1."""
    text = request.messages[-1].text
    if text == "Describe this image.":
        return "An image."
    n = len(json.loads(re.search(r"criteria: (\{.*\})$", text, re.M).group(1))) // 2
    return json.dumps({"reason": ["seen"] * n, "score": [0.5] + [1] * (n - 1)})


def expected(row, aggregation="paper", mode="image"):
    """The image score computed by hand from the row's group sizes."""
    means = {}
    for g in row["evaluation"]:
        n = len(g["pairs"])
        role = {"other_details_evaluation": "detail", "quality_evaluation": "quality"}.get(g["group"], "reason")
        means[role] = (0.5 + (n - 1)) / n
    if aggregation == "official":
        return means["reason"] if "detail" not in means else 0.7 * means["reason"] + 0.3 * means["detail"]
    w = {"idiom": (0.9, 0, 0.1), "textual": (0.9, 0, 0.1)}.get(row["dimension"], (0.7, 0.2, 0.1))
    total = w[0] * means["reason"] + w[1] * means.get("detail", 0)
    return total if mode == "text" else total + w[2] * means["quality"]


def images(n):
    return [Image.new("RGB", (16, 16), (10 * i, 0, 0)) for i in range(n)]


def test_end_to_end_paper_preset(rows):
    judge = ScriptedJudge(half_on_first)
    metric = evaluate.load(METRIC, judge=judge, cache=False, progress=False)
    out = metric.compute(predictions=images(len(rows)), references=rows)
    assert out["scores"] == pytest.approx([expected(r) for r in rows])
    for dim in BENCH.configs:
        mine = [expected(r) for r in rows if r["dimension"] == dim]
        assert out[dim] == pytest.approx(100 * sum(mine) / len(mine))
    assert out["overall"] == pytest.approx(sum(out[d] for d in BENCH.configs) / 4)
    assert out["num_images"] == 16 and out["num_failed"] == 0 and out["num_reasks"] == 0
    assert out["judge"]["preset"] == "paper" and out["aggregation"] == "paper"
    # 16 describe turns, then one turn per group: 2 per idiom/textual row, 3 per entity/scientific row
    assert len(judge.requests) == 16 + 4 * 2 * 2 + 4 * 2 * 3
    first = out["per_image"][0]
    assert first["id"] == "idiom-0001" and first["config"] == "idiom"
    assert [q["score"] for q in first["questions"]] == [0.5, 1, 1, 1, 0.5, 1]


def test_rows_through_a_dataset_and_image_paths(rows, tmp_path):
    """Rows as load_dataset gives them (decoded from Arrow) and images as file paths."""
    ds = datasets.Dataset.from_list(rows[8:12], features=BENCH.features)  # the entity rows
    paths = []
    for i, img in enumerate(images(4)):
        paths.append(str(tmp_path / f"{i + 1:04d}.png"))
        img.save(paths[-1])
    metric = evaluate.load(METRIC, judge=ScriptedJudge(half_on_first), cache=False, progress=False)
    out = metric.compute(predictions=paths, references=list(ds))
    assert out["scores"] == pytest.approx([expected(r) for r in rows[8:12]])
    assert [p["image"] for p in out["per_image"]] == paths


def test_official_preset_and_text_mode(rows):
    official = evaluate.load(METRIC, preset="official", judge=ScriptedJudge(half_on_first), cache=False, progress=False)
    out = official.compute(predictions=images(len(rows)), references=rows)
    assert out["scores"] == pytest.approx([expected(r, "official") for r in rows])
    assert out["aggregation"] == "official" and out["judge"]["preset"] == "official"
    assert "quality" in out["dimensions"]["idiom"]

    judge = ScriptedJudge(half_on_first)
    text = evaluate.load(METRIC, judge=judge, cache=False, progress=False)
    out = text.compute(predictions=[f"description {i}" for i in range(len(rows))], references=rows, mode="text")
    assert out["scores"] == pytest.approx([expected(r, mode="text") for r in rows])
    assert out["mode"] == "text" and out["dimensions"]["idiom"]["max_score"] == pytest.approx(90)
    assert all(req.images == [] for req in judge.requests)
    assert "description 0" in judge.requests[0].messages[0].text


def test_input_errors_are_clear(rows):
    metric = evaluate.load(METRIC, judge=ScriptedJudge(half_on_first), cache=False, progress=False)
    with pytest.raises(ValueError, match="got 3 images"):
        metric.compute(predictions=images(3), references=rows[:4])
    r2i_like = {"id": "causal/x/1", "prompt": "p", "category": "causal", "questions": []}
    with pytest.raises(ValueError, match="lacks field"):
        metric.compute(predictions=images(1), references=[r2i_like])
    with pytest.raises(TypeError, match="unknown option"):
        metric.compute(predictions=images(1), references=rows[:1], temperature=0.5)
    with pytest.raises(ValueError, match="unknown preset 'gemini'"):
        evaluate.load(METRIC, preset="gemini", judge=ScriptedJudge([]), cache=False)


def test_presets_name_the_papers_judges():
    paper, official = BENCH.presets["paper"], BENCH.presets["official"]
    assert paper["judge"] == "openai:gemini-2.5-pro@https://generativelanguage.googleapis.com/v1beta/openai/"
    assert official["judge"] == "hf:Qwen/Qwen2.5-VL-72B-Instruct"
    assert paper["judge_kwargs"]["sampling"].temperature == 0 == official["judge_kwargs"]["sampling"].temperature
    assert official["options"] == {"aggregation": "official"}
