"""Stage I of T2I-ReasonBench: question-criterion generation for new prompts, its re-asks and failures."""

from __future__ import annotations

import json

import datasets
import pytest
from PIL import Image

from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.prompts import render

from .conftest import BENCH, answering

# -- stage I: criteria generation ---------------------------------------------------------------------

def _criteria_reply(groups: dict[str, int], start: int = 1, drop: str | None = None) -> str:
    value = {"id": 1, "prompt": "p", "image_content": "what the image shows"}
    for name, n in groups.items():
        value[name] = {}
        for k in range(start, start + n):
            value[name][f"q{k}"] = f"{name} question {k}?"
            value[name][f"c{k}"] = f"1: yes 0.5: partly 0: no ({name} {k})"
        if drop:
            value[name].pop(drop, None)
    return "Here is my analysis.\n```json\n" + json.dumps(value) + "\n```"


IDIOM_RECORD = {"id": 11, "prompt": "After three weeks of burning the midnight oil, she finally submitted her dissertation.",
                "idiom": "Burning the midnight oil", "idiom_meaning": "To work or study late into the night.", "tag": "work"}


def test_criteria_generation_valid_reply_gives_a_schema_row():
    judge = ScriptedJudge([_criteria_reply({"reason_evaluation": 3, "quality_evaluation": 2})])
    (row,) = BENCH.generate_criteria([IDIOM_RECORD], "idiom", judge)
    request = judge.requests[0]
    assert request.images == [] and len(request.messages) == 1
    text = request.messages[0].text
    assert text == render("t2i_reasonbench", "criteria_idiom", **{k: IDIOM_RECORD[k] for k in ("id", "prompt", "idiom", "idiom_meaning")})
    assert text.startswith("I have a text-to-image generation model that can generate images based on given prompts.")
    assert "'idiom': Burning the midnight oil, 'idiom_meaning': To work or study late into the night.}" in text
    assert "here should be a dictionary with 3-5 pairs of question and criterion" in text
    assert [len(g["pairs"]) for g in row["evaluation"]] == [3, 2]
    assert row["dimension"] == "idiom" and row["id"] == 11 and row["image_content"] == "what the image shows"
    datasets.Dataset.from_list([row], features=BENCH.features)  # fits the schema
    # and it can be scored like a release row
    scores = {p["question"]: 1 for g in row["evaluation"] for p in g["pairs"]}
    (result,) = BENCH.score([row], [Image.new("RGB", (8, 8))], ScriptedJudge(answering(scores)))
    assert result.score == pytest.approx(1.0)


@pytest.mark.parametrize("bad, complaint", [
    (_criteria_reply({"entity_evaluation": 1, "quality_evaluation": 1}), "other_details_evaluation"),
    (_criteria_reply({"entity_evaluation": 6, "other_details_evaluation": 1, "quality_evaluation": 1}), "6 pairs"),
    (_criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 1, "quality_evaluation": 1}, start=2), "numbered [2, 3]"),
    (_criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 2, "quality_evaluation": 1}, drop="c2"), "'q2' has no criterion"),
    ("I cannot help with that.", "no JSON"),
])
def test_criteria_generation_reasks_invalid_replies(bad, complaint):
    good = _criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 1, "quality_evaluation": 1})
    judge = ScriptedJudge([bad, good])
    record = {"id": 31, "prompt": "The CEO of Tesla unveiling the first electric car in 2008",
              "explicit_meaning": "Elon Musk unveiling the first electric car at Tesla in 2008"}
    (row,) = BENCH.generate_criteria([record], "entity", judge)
    assert complaint in judge.requests[1].messages[-1].text
    assert [g["group"] for g in row["evaluation"]] == ["entity_evaluation", "other_details_evaluation", "quality_evaluation"]
    assert json.loads(row["extra"])["criteria"]["reasks"] == 1


def test_groups_with_fewer_or_more_pairs_than_their_figure_asks_are_reasked():
    """Issue 40 item 8: Figures 9 to 12 ask 3-5 reason pairs and 1-3 quality pairs of an idiom (1-3 entity, 2-4
    scientific pairs...); a group of 1 to 5 pairs was accepted whatever its figure asked. The counts are read from
    the templates themselves; a group outside them is re-asked, naming it and the counts asked."""
    from t2ireason.benchmarks.t2i_reasonbench.criteria import pair_counts

    assert pair_counts("idiom") == {"reason_evaluation": (3, 5), "quality_evaluation": (1, 3)}
    assert pair_counts("scientific")["scientific_evaluation"] == (2, 4)
    assert pair_counts("entity")["entity_evaluation"] == (1, 3)
    replies = [_criteria_reply({"reason_evaluation": 2, "quality_evaluation": 1}),
               _criteria_reply({"reason_evaluation": 4, "quality_evaluation": 4}),
               _criteria_reply({"reason_evaluation": 5, "quality_evaluation": 3})]
    judge = ScriptedJudge(replies)
    (row,) = BENCH.generate_criteria([IDIOM_RECORD], "idiom", judge)
    assert "reason_evaluation: 2 pairs, where the template asks 3-5" in judge.requests[1].messages[-1].text
    assert "quality_evaluation: 4 pairs, where the template asks 1-3" in judge.requests[2].messages[-1].text
    assert [len(g["pairs"]) for g in row["evaluation"]] == [5, 3]
    assert json.loads(row["extra"])["criteria"]["reasks"] == 2


def test_criteria_generation_failure_is_kept_and_reported():
    record = {"id": 7, "prompt": "Two springs hanging in a row: one empty, one with a ball",
              "explicit_meaning": "One spring is stretched by a ball"}
    judge = ScriptedJudge(lambda r: "no idea")
    with pytest.warns(UserWarning, match="failed for 1 of 1 scientific"):
        (row,) = BENCH.generate_criteria([record], "scientific", judge, max_reasks=1)
    assert row["evaluation"] == [] and len(judge.requests) == 2
    info = json.loads(row["extra"])["criteria"]
    assert "no JSON" in info["failure"] and info["replies"] == ["no idea", "no idea"]
    with pytest.raises(ValueError, match="failed for 1 of 1"):
        BENCH.generate_criteria([record], "scientific", ScriptedJudge(lambda r: "no idea"), max_reasks=0, strict=True)
    # a row without questions is a counted failure when scored, and costs no group request
    (result,) = BENCH.score([row], [Image.new("RGB", (8, 8))], ScriptedJudge(["An image."]))
    assert result.score is None and "no reason, detail, quality questions" in result.failure
    with pytest.raises(ValueError, match=r"records\[0\] lacks \['explicit_meaning'\]"):
        BENCH.generate_criteria([{"id": 1, "prompt": "p"}], "entity", judge)
