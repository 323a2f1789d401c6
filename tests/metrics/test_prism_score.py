"""The prism_score evaluate module end to end: evaluate.load with a scripted judge, the sample
release's rows in both languages, the paper's table by hand, stable ids for pairing judges, and the
official preset's table on a battery of well-formed, failing and odd replies, every cell computed by
hand from the authors' rules as formats.md documents them."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.prism_bench import TRACKS
from t2ireason.judges.base import Reply
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
    assert metric.judge_kwargs["processor_kwargs"]["max_pixels"] == 1280 * 28 * 28
    assert metric.preset["options"] == {"protocol": "official", "system_prompt": None, "image_first": True,
                                        "image_preparation": "qwen_vl_utils"}
    # a judge object keeps the preset's options; its backend settings are its own, and the record says so
    mine = load(ScriptedJudge([]), preset="qwen")
    assert mine.judge_kwargs == {} and mine.preset["options"]
    assert set(mine.judge_setting.preset_settings.not_applied) == set(metric.judge_kwargs)
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['track'"):
        load(ScriptedJudge([])).compute(predictions=[Image.new("RGB", (8, 8))], references=[{"id": "x", "prompt": "p"}])


# -- the official preset on a battery of replies --------------------------------------------------------

def W(score) -> str:
    return json.dumps({"justification": "One sentence.", "score": score})


JUDGE_ERROR = Reply(text="", model="gpt-4.1", sampling={}, error="HTTP 500 after 3 attempts", transient=True)
#: (track, image index) -> (alignment reply, aesthetic reply), for the 15 English images of the sample
BATTERY = {
    ("imagination", 0): (W(8), '```json\n{"justification": "Fenced.", "score": 7}\n```'),
    ("imagination", 1): ("7", W(6)),                                           # a bare number: their summary raises
    ("entity", 0): ('{"justification": "Trailing comma.", "score": 5,}', W(9)),
    ("entity", 1): (W("8"), W(True)),                                          # a string score; a boolean
    ("entity", 2): (W(85), JUDGE_ERROR),                                       # out of range; a failed call
    ("text_rendering", 0): ('```python\n{"justification": "x", "score": 9}\n```',  # fenced with another tag
                            W(6) + "\nI hope this helps."),                    # trailing text
    ("text_rendering", 1): (W(4) + W(5), ""),                                  # two objects; empty
    ("style", 0): (W(10), W(4)),
    ("style", 1): (W(6), '"score: 8"'),                                        # a string holding "score": theirs raises
    ("affection", 0): (W(7.5), '```json\n{"justification": "a", "score": 2,}\n```'),
    ("affection", 1): ('{"justification": "no score"}', W(-3)),
    ("composition", 0): (W(9), W(8)),
    ("composition", 1): (W(7), W(6)),
    ("long_text", 0): (W(3), W(None)),
    ("long_text", 1): (W(5), W(10)),
}

# Every cell by hand (0-10 as the authors' summarize_results computes it, x 10 as the paper prints it).
# Counted, per the rules: alignment / aesthetic
#   imagination  [8]      / [7, 6]   -> Ali 80, Aes 65, Combined mean(8, 7, 6) = 7 -> 70
#   entity       [5, 85]  / [9, 1]   -> Ali 450, Aes 50, Combined (5 + 85 + 9 + 1) / 4 = 25 -> 250
#   text render. []       / []       -> 0.00 for all three, as their summary prints an empty axis
#   style        [10, 6]  / [4]      -> Ali 80, Aes 40, Combined 20 / 3 -> 66.67
#   affection    [7.5]    / [2, -3]  -> Ali 75, Aes -5, Combined 6.5 / 3 -> 21.67
#   composition  [9, 7]   / [8, 6]   -> Ali 80, Aes 70, Combined 7.5 -> 75
#   long text    [3, 5]   / [10]     -> Ali 40, Aes 100, Combined 6 -> 60
#   overall      145.5/10 / 50/10    -> Ali 145.5, Aes 50, final (145.5 + 50) / 20 = 9.775 -> 97.75
OFFICIAL_TABLE = {
    "Imagination": {"Ali.": 80, "Aes.": 65, "Avg.": 70},
    "Entity": {"Ali.": 450, "Aes.": 50, "Avg.": 250},
    "Text rendering": {"Ali.": 0, "Aes.": 0, "Avg.": 0},
    "Style": {"Ali.": 80, "Aes.": 40, "Avg.": 200 / 3},
    "Affection": {"Ali.": 75, "Aes.": -5, "Avg.": 65 / 3},
    "Composition": {"Ali.": 80, "Aes.": 70, "Avg.": 75},
    "Long text": {"Ali.": 40, "Aes.": 100, "Avg.": 60},
    "Overall": {"Ali.": 145.5, "Aes.": 50, "Avg.": 97.75},
}


def battery_judge(rows):
    where = {r["prompt"]: (r["track"], r["index"]) for r in rows}

    def reply(request):
        text = request.messages[-1].text
        prompt = next(p for p in where if text.endswith(f"text prompt: {p}\n"))  # the authors' text ends so
        return BATTERY[where[prompt]][1 if "hyper-critical" in text else 0]

    return ScriptedJudge(reply)


def test_the_official_preset_gives_the_authors_table_on_mixed_replies(release):
    rows = release.configs["en"]
    assert sorted((r["track"], r["index"]) for r in rows) == sorted(BATTERY)
    judge = battery_judge(rows)
    out = load(judge, preset="official").compute(predictions=[Image.new("RGB", (8, 8))] * len(rows), references=rows)
    assert len(judge.requests) == 30 and out["num_reasks"] == 0  # one request per judgement: no re-asks
    assert out["protocol"] == "official" and list(out["table"]) == list(OFFICIAL_TABLE)
    for name, cells in OFFICIAL_TABLE.items():  # all 24 cells
        for column, expected in cells.items():
            assert out["table"][name][column] == pytest.approx(expected, abs=1e-9), (name, column)
    assert out["prism_score"] == pytest.approx(97.75) and out["combined"] == pytest.approx(97.75)
    # the paper's definition on the same counted scores, under its own name
    assert out["average"] == pytest.approx((145.5 + 50) / 2)
    assert out["tracks"]["entity"]["average"] == pytest.approx(250) and out["tracks"]["style"]["average"] == 60
    assert out["tracks"]["text_rendering"]["average"] is None  # no counted score on either axis
    # what was not counted, per cause
    outcomes = out["outcomes"]
    assert outcomes["alignment"].get("summary_raises") == 1 and outcomes["aesthetic"].get("summary_raises") == 1
    assert outcomes["alignment"]["no_number"] == 2 and outcomes["aesthetic"]["no_number"] == 1
    assert outcomes["aesthetic"]["judge_error"] == 1
    not_read = {k: sum(o.get(k, 0) for o in outcomes.values()) for k in ("unparsable", "unparsed_no_demjson3")}
    assert sum(not_read.values()) == 4  # other fence, trailing text, two objects, empty
    assert outcomes["alignment"]["counted"] == 10 and outcomes["aesthetic"]["counted"] == 10
    assert out["failed_replies"] == {"alignment": 5, "aesthetic": 5}
    assert any("summarize_results raises" in note for note in out["notes"])
    assert any("shows 0.0" in note for note in out["notes"])
    # per image: both axes counted, or a failure that says why
    by_id = {p["id"]: p for p in out["per_image"]}
    assert by_id["imagination_en_0"]["score"] == 75 and by_id["entity_en_0"]["score"] == 70
    assert by_id["imagination_en_1"]["score"] is None
    assert "summarize_results raises" in by_id["imagination_en_1"]["failure"]
    assert by_id["entity_en_1"]["subscores"] == {"alignment": None, "aesthetic": 10.0}  # true counts as 1
    assert by_id["entity_en_2"]["subscores"]["alignment"] == 850 and by_id["entity_en_2"]["retryable"]
    assert out["scores"].count(None) == 8  # the images with an axis not counted


def test_the_paper_preset_reads_the_same_replies_strictly(release):
    rows = release.configs["en"]
    judge = battery_judge_paper(rows)
    out = load(judge, preset="paper").compute(predictions=[Image.new("RGB", (8, 8))] * len(rows),
                                             references=rows, max_reasks=0)
    # counted under the paper's rules: a string "8" is a score, booleans and out-of-range scores are not,
    # and the last JSON object of a reply counts
    entity = out["tracks"]["entity"]
    assert entity["alignment"] == pytest.approx((50 + 80) / 2) and entity["aesthetic"] == 90
    assert out["table"]["Entity"]["Avg."] == pytest.approx((65 + 90) / 2)
    assert out["protocol"] == "paper" and out["prism_score"] == out["average"]


def battery_judge_paper(rows):
    """The same replies, for the paper protocol's templates (which end with the prompt)."""
    where = {r["prompt"]: (r["track"], r["index"]) for r in rows}

    def reply(request):
        text = request.messages[-1].text
        prompt = next(p for p in where if text.endswith(f"text prompt: {p}"))
        return BATTERY[where[prompt]][1 if "hyper-critical" in text else 0]

    return ScriptedJudge(reply)
