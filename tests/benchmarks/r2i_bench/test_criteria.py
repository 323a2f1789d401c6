"""The appendix A.4 evaluation-criteria pipeline (criteria.py) with scripted replies: rows of the schema,
weights in their dimension's range, re-asks and failures."""

from __future__ import annotations

import json

import datasets
import pytest

from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import BENCH, answer, images

NEW = {"prompt": "A clock showing the time a quarter of an hour after noon.",
       "reference_caption": "An analog clock reading 12:15.", "assessment_point": "Time arithmetic",
       "category": "numerical", "subcategory": "time", "source_id": "900"}


GOOD = [
    {"id": 1, "dimension": "reasoning", "weight": 9, "question": "Does the clock read 12:15?",
     "evaluation_criteria": "1: exactly 12:15; 0.5: close; 0: another time"},
    {"id": 2, "dimension": "text-image alignment", "weight": "5", "question": "Is there an analog clock?",
     "evaluation_criteria": "1: an analog clock; 0.5: a digital clock; 0: none"},
    {"id": 3, "dimension": "quality", "weight": 2, "question": "Is the dial legible?",
     "evaluation_criteria": "1: legible; 0.5: partly; 0: illegible"},
]


def pipeline_judge(weight_replies):
    """Free text for the first two steps, then the scripted replies of the weight step in order."""
    weight_replies = list(weight_replies)

    def reply(request):
        last = request.messages[-1].text
        if "What do you think the correct image should look like" in last:
            return "A round analog clock, hour hand just past 12, minute hand on 3."
        if last.startswith("Now, create a set of evaluation questions"):
            return "1. Does the clock read 12:15? ..."
        return weight_replies.pop(0)

    return ScriptedJudge(reply)


def test_criteria_generation_produces_rows_of_the_schema():
    judge = pipeline_judge([f"```json\n{json.dumps(GOOD)}\n```"])
    [gen] = r2i.generate_criteria([NEW], judge)
    assert gen.ok and gen.adjustments == []
    row = gen.row
    assert row["id"] == "numerical/time/900" and row["has_questions"]
    assert [(q["id"], q["weight"], q["dimension"]) for q in row["questions"]] == [
        ("1", 9.0, "reasoning"), ("2", 5.0, "alignment"), ("3", 2.0, "quality")]
    assert row["questions"][0]["criterion"] == GOOD[0]["evaluation_criteria"]
    datasets.Dataset.from_list([row], features=BENCH.features)  # fits the schema
    assert len(judge.requests) == 3
    weight_request = judge.requests[2]
    assert [m.role for m in weight_request.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert weight_request.messages[0].text.startswith("This test case is designed to evaluate the image generation model.")
    assert "Expected: An analog clock reading 12:15." in weight_request.messages[0].text
    text = weight_request.messages[-1].text
    assert "# Image Generation Model Assessment" in text and "Assessment Points: Time arithmetic" in text
    assert "reasoning 7 to 10, alignment 4 to 6, quality 1 to 3" in text
    assert not weight_request.images and weight_request.sampling.temperature == 0.1


def test_generated_criteria_score_per_dimension():
    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(GOOD)]))
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})])
    [result] = BENCH.score([gen.row], images(1), judge)
    assert result.score == pytest.approx((9 + 2.5) / 16)
    assert result.subscores == {"reasoning": 1.0, "alignment": 0.5, "quality": 0.0}
    assert BENCH.aggregate([result], n_resamples=50)["dimensions"]["alignment"]["mean"] == pytest.approx(50.0)


def test_weights_outside_the_dimension_range_clamped_or_rejected():
    off = [dict(GOOD[0], weight=5), dict(GOOD[1], weight=9), GOOD[2]]
    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(off)]))
    assert gen.ok and [q["weight"] for q in gen.row["questions"]] == [7.0, 6.0, 2.0]
    assert gen.adjustments == ["question 1: weight 5 clamped to 7 (reasoning range 7-10)",
                               "question 2: weight 9 clamped to 6 (alignment range 4-6)"]

    judge = pipeline_judge([json.dumps(off), json.dumps(GOOD)])
    [gen] = r2i.generate_criteria([NEW], judge, weights="reject")
    assert gen.ok and [q["weight"] for q in gen.row["questions"]] == [9.0, 5.0, 2.0]
    assert "item 1 (reasoning) has weight 5, outside its range 7 to 10" in judge.requests[-1].messages[-1].text
    assert len(gen.replies["weight"]) == 2

    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(off)] * 3), weights="reject")
    assert not gen.ok and gen.row["questions"] == [] and not gen.row["has_questions"]
    assert gen.failure.startswith("weight step:") and len(gen.replies["weight"]) == 3


def test_malformed_criteria_replies_are_reasked():
    broken = [dict(GOOD[0], weight=15), {k: v for k, v in GOOD[1].items() if k != "evaluation_criteria"},
              dict(GOOD[2], dimension="style")]
    judge = pipeline_judge(["Here are the weights, as discussed.", json.dumps(broken), json.dumps(GOOD)])
    [gen] = r2i.generate_criteria([NEW], judge, max_reasks=2)
    assert gen.ok and len(gen.replies["weight"]) == 3
    second = judge.requests[-2].messages[-1].text
    assert "no JSON" in second
    last = judge.requests[-1].messages[-1].text
    assert "item 1 weight 15 is above the maximum 10" in last  # out of 1-10: re-asked even when clamping
    assert "item 2 has no evaluation_criteria" in last and "item 3 has dimension 'style'" in last


def test_criteria_failures_in_early_steps_and_bad_input():
    judge = ScriptedJudge(lambda request: "   ")
    [gen] = r2i.generate_criteria([dict(NEW, category=None, subcategory=None, source_id=None)], judge, max_reasks=1)
    assert not gen.ok and gen.failure == "imagine step: unparsable reply: empty reply"
    assert gen.row["id"] == "custom/custom/1" and len(judge.requests) == 2
    with pytest.raises(ValueError, match=r"prompts\[0\] needs a non-empty 'prompt' and 'reference_caption'"):
        r2i.generate_criteria([{"prompt": "x"}], judge)
    with pytest.raises(ValueError, match="weights must be"):
        r2i.generate_criteria([NEW], judge, weights="ignore")


def test_each_generated_criterion_keeps_the_levels_it_defines_as_the_paper_asks():
    """Issue 40 item 8: the WEIGHT step asked every criterion as exactly 1 / 0.5 / 0, where the paper's
    DESIGN_EVALUATION_QUESTIONS lets each define its levels on [0, 1] (a quarter of the release's do). The prompt
    now asks for the levels as designed; a criterion of four levels is kept and scored on its own levels, and
    one whose levels cannot be read is re-asked."""
    four = dict(GOOD[0], evaluation_criteria="1: 12:15 exactly; 0.7: within five minutes; 0.3: the hour right; "
                                             "0: another time")
    vague = dict(GOOD[1], evaluation_criteria="Full marks for an analog clock, fewer otherwise")
    judge = pipeline_judge([json.dumps([four, vague, GOOD[2]]), json.dumps([four, GOOD[1], GOOD[2]])])
    [gen] = r2i.generate_criteria([NEW], judge)
    weight_prompt = judge.requests[2].messages[-1].text
    assert "of 1, of 0.5 and of 0" not in weight_prompt and "scale from 0 to 1" in weight_prompt
    assert "item 2's evaluation_criteria defines no levels that can be read" in judge.requests[3].messages[-1].text
    assert gen.ok and gen.row["questions"][0]["criterion"] == four["evaluation_criteria"]
    [result] = BENCH.score([gen.row], images(1), ScriptedJudge([answer({"1": 0.7, "2": 1, "3": 1})]))
    assert result.score == pytest.approx((9 * 0.7 + 5 + 2) / 16) and result.reasks == 0
