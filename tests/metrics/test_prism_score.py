"""The prism_score evaluate module end to end: evaluate.load with a scripted judge, the sample
release's rows in both languages, the paper's table by hand, stable ids for pairing judges."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.prism_bench import TRACKS
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
METRIC = str(ROOT / "metrics" / "prism_score")
BENCH = get_benchmark("prism-bench")
AESTHETIC_START = "You are a hyper-critical quality assurance inspector"


@pytest.fixture(scope="module")
def release():
    return BENCH.read_release(BENCH.sample_path())


def load(judge, **kw):
    return evaluate.load(METRIC, judge=judge, cache=False, progress=False, **kw)


def by_track(alignment: dict[str, int], aesthetic: int):
    """A judge giving each track's alignment score from ``alignment`` (found by the track's template
    wording) and ``aesthetic`` to every aesthetic request."""
    marks = {"imagination": "imaginative object", "entity": "naming a specific entity",
             "text_rendering": "should contain rendered text", "style": "requesting a specific style",
             "affection": "strict, two-step process", "composition": "object count and spatial",
             "long_text": "long, detailed text prompt"}

    def reply(request):
        text = request.messages[-1].text
        if text.startswith(AESTHETIC_START):
            score = aesthetic
        else:
            score = next(alignment[t] for t, mark in marks.items() if mark in text)
        return json.dumps({"justification": "One sentence.", "score": score})

    return ScriptedJudge(reply)


def test_end_to_end_all_tracks_and_languages(release):
    rows = release.configs["all"]
    alignment = {"imagination": 9, "entity": 8, "text_rendering": 3, "style": 7, "affection": 6,
                 "composition": 5, "long_text": 4}
    judge = by_track(alignment, aesthetic=7)
    out = load(judge).compute(predictions=[Image.new("RGB", (8, 8))] * len(rows), references=rows)
    assert len(judge.requests) == 2 * len(rows) == 58 and out["num_failed"] == 0
    assert all(r.messages[0].text == "You are a helpful assistant." for r in judge.requests)
    for track, value in alignment.items():
        assert out["tracks"][track]["alignment"] == value * 10
        assert out["table"][TRACKS[track]] == {"Ali.": value * 10, "Aes.": 70, "Avg.": (value * 10 + 70) / 2}
    # pooled: entity has 3 English prompts, every other track 2 per language
    n = {t: len(release.configs[f"{t}_en"]) + len(release.configs[f"{t}_zh"]) for t in alignment}
    pooled = sum(alignment[t] * 10 * n[t] for t in alignment) / sum(n.values())
    assert out["alignment"] == pytest.approx(pooled) and out["aesthetic"] == 70
    assert out["prism_score"] == pytest.approx((pooled + 70) / 2)
    assert out["overall_track_mean"] == pytest.approx(sum(v * 10 + 70 for v in alignment.values()) / 2 / 7)
    assert set(out["by_language"]) == {"en", "zh"}
    assert out["by_language"]["zh"]["tracks"]["entity"]["n"] == 2
    assert out["per_image"][0]["id"] == "imagination_en_0"


def test_per_image_ids_pair_two_judges(release):
    rows = release.configs["composition_zh"] + release.configs["composition_en"]
    images = [Image.new("RGB", (8, 8))] * len(rows)
    a = load(by_track({"composition": 9}, 8)).compute(predictions=images, references=rows)
    b = load(by_track({"composition": 6}, 5)).compute(predictions=images, references=rows)
    pairs = {p["id"]: p["score"] for p in a["per_image"]}
    assert [(p["id"], pairs[p["id"]], p["score"]) for p in b["per_image"]][0] == ("composition_zh_0", 85, 55)
    assert len(pairs) == len(rows)


def test_failed_replies_are_counted(release):
    rows = release.configs["style_zh"][:1]
    judge = ScriptedJudge(['{"justification": "x", "score": 8}', "five", "5/10", "5 out of 10"])
    out = load(judge).compute(predictions=[Image.new("RGB", (8, 8))], references=rows)
    assert out["scores"] == [None] and out["failed_replies"] == {"alignment": 0, "aesthetic": 1}
    assert out["tracks"]["style"]["alignment"] == 80 and out["tracks"]["style"]["aesthetic"] is None
    assert out["num_failed"] == 1 and out["num_reasks"] == 2
    assert out["per_image"][0]["failure"].startswith("aesthetic:")


def test_presets_and_inputs(release):
    metric = evaluate.load(METRIC, preset="qwen", cache=False)  # nothing is loaded until a compute
    assert metric.judge_spec == "hf:Qwen/Qwen2.5-VL-72B-Instruct"
    assert metric.judge_kwargs["max_pixels"] == 1280 * 28 * 28 and metric.preset["options"]["system_prompt"]
    # another judge keeps the preset's options and sampling, not its backend settings
    mine = load(ScriptedJudge([]), preset="qwen")
    assert mine.judge_kwargs == {"sampling": metric.judge_kwargs["sampling"]} and mine.preset["options"]
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['track'"):
        load(ScriptedJudge([])).compute(predictions=[Image.new("RGB", (8, 8))], references=[{"id": "x", "prompt": "p"}])
