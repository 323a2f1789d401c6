"""The R2I-Bench judge protocol (protocol.py) with scripted judge replies: the request each template
renders, re-asks naming what a reply left out, the presets' texts, layouts and request settings."""

from __future__ import annotations

import pytest

from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.benchmarks.r2i_bench.protocol import official_template
from t2ireason.images import JudgeImage
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import BENCH, CountingJudge, answer, by_prompt, ids_in, images


def test_request_holds_the_template_every_question_and_criterion(rows):
    row = rows["commonsense/color/11"]
    judge = by_prompt({"unpeeled": {"1": 1, "2": 1, "3": 1}})
    img = images(1)[0]
    BENCH.score([row], [img], judge)
    [request] = judge.requests
    text = request.messages[0].text
    assert "# Text-to-Image Quality Evaluation Protocol" in text and "ABSOLUTE RUTHLESSNESS" in text
    assert row["prompt"] in text
    for q in row["questions"]:
        assert q["question"] in text and q["criterion"] in text
    assert "[QUESTION" not in text and "[PROMPT]" not in text and "[IMPORTANT" not in text
    assert "1, 2, 3" in text and "0, 0.5 or 1" in text
    assert ids_in(request) == ["1", "2", "3"]
    [image] = request.images
    assert isinstance(image, JudgeImage) and image.size == img.size


def test_missing_answer_is_reasked_naming_it_and_merged(rows):
    row = rows["causal/cause_to_effect/2"]
    judge = CountingJudge([answer({"1": 1, "2": 1, "4": 0}), answer({"3": 0.5})])
    [result] = BENCH.score([row], images(1), judge)
    assert result.score == pytest.approx((5 + 10 + 3.5 + 0) / 23)
    assert result.reasks == 1 and result.failure is None and len(result.replies) == 2
    follow_up = judge.requests[1]
    assert "no valid score for question(s) 3" in follow_up.messages[-1].text
    assert follow_up.messages[1].role == "assistant"
    assert follow_up.images[0] is judge.requests[0].images[0]  # one JudgeImage, reused


def test_out_of_range_answer_is_reasked(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 0.7, "2": 1, "3": 2}), answer({"Q1": "0.5", "q3": 1})])
    [result] = BENCH.score([row], images(1), judge)
    reask = judge.requests[1].messages[-1].text
    assert "question 1 has 0.7, not a score its criteria define (one of the scores 0, 0.5 or 1)" in reask and "question 3 2" in reask
    assert result.score == pytest.approx((5 + 4 + 2) / 16)


def test_unparsable_reply_then_failure(rows):
    judge = ScriptedJudge(["I cannot judge this image."] * 2)
    [result] = BENCH.score([rows["logical/disjunctive/41"]], images(1), judge, max_reasks=1)
    assert result.score is None and "no JSON dict found" in result.failure
    assert result.replies == ["I cannot judge this image."] * 2


def test_repeated_question_ids_are_asked_by_position(rows):
    row = dict(rows["logical/disjunctive/41"])
    row["questions"] = [dict(q, id="1") for q in row["questions"]]
    judge = ScriptedJudge([answer({"1": 1, "2": 0, "3": 1})])
    [result] = BENCH.score([row], images(1), judge)
    assert ids_in(judge.requests[0]) == ["1", "2", "3"]
    assert result.score == pytest.approx(12 / 16)


def test_allowed_scores_option(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 0.7, "2": 1, "3": 0.25})])
    [result] = BENCH.score([row], images(1), judge, allowed_scores=None)
    assert result.score == pytest.approx((7 + 4 + 0.5) / 16)
    assert "a score between 0 and 1" in judge.requests[0].messages[0].text


# -- the official preset ---------------------------------------------------------------------------------


def test_official_template_sends_the_authors_text_before_the_image(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})])
    [result] = BENCH.score([row], images(1), judge, template="official")
    [message] = judge.requests[0].messages
    assert [type(p).__name__ for p in message.content] == ["str", "JudgeImage"]  # text first, as the authors send it
    text = message.content[0]
    listed = "\n".join(f"{q['id']}. {q['question']} \nCriteria: {q['criterion']}" for q in row["questions"])
    assert text == official_template().replace("[PROMPT]", row["prompt"]).replace("[QUESTION LIST]", listed)
    # the authors' PROMPT string of instance.py, byte for byte around the filled slots
    assert text.startswith("\n# Text-to-Image Quality Evaluation Protocol \n# ## System Instruction \nYou are an AI "
                           "quality auditor for text-to-image generation. Answer these questions with ABSOLUTE "
                           "RUTHLESSNESS. \nOnly images meeting the HIGHEST standards should receive top scores.\n\n"
                           "## Task Overview\nThe image is prompt by the prompt: \n" + row["prompt"] + "\n\n## Question List\n1. ")
    assert "whether there are invalid permutations will both be 0.\n\n```json\n{\n    \"id\": score,\n    ...\n}\n``` \n]\n" in text
    assert text.endswith("``` \n]\n") and "[QUESTION" not in text and "[PROMPT]" not in text
    assert result.score == pytest.approx((10 + 2 + 0) / 16)


def test_official_preset_reproduces_what_the_card_says(rows):
    opts = BENCH.presets["official"]["options"]
    assert opts == {"missing": "answered", "template": "official", "round_scores": 2,
                    "subcategories": list(r2i.OFFICIAL_SUBCATEGORIES)}
    selected = [rows["commonsense/color/11"], rows["logical/disjunctive/41"], rows["causal/cause_to_effect/2"]]
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0.5}), answer({"1": 1, "2": 1, "3": 0})] + [
        answer({"1": 1, "2": 1, "3": 0})] * 2)
    results = BENCH.score(selected, images(3), judge, **opts)
    # commonsense/color is one of the four subcategories the official script never evaluates
    assert results[0].context["excluded"] and results[0].score is None and "not evaluated" in results[0].failure
    assert len(judge.requests) == 4  # two instances asked, question 4 of the second re-asked twice
    assert results[1].score == 0.81  # (10 + 2 + 1) / 16 = 0.8125, rounded to 2 decimals
    assert results[2].score == 0.68 and results[2].context["unanswered"] == ["4"]  # 15 / 22 over the answered ones
    agg = BENCH.aggregate(results, **opts, n_resamples=50)
    assert agg["num_excluded"] == 1 and agg["num_unscorable"] == 0 and agg["num_partial"] == 1
    assert agg["category_scores"] == {"logical": pytest.approx(81.0), "causal": pytest.approx(68.0)}
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0.5})])
    [paper] = BENCH.score(selected[1:2], images(1), judge, **BENCH.presets["paper"]["options"])
    assert paper.score == 0.8125  # the paper preset: not rounded, the paper's template, the image first
    assert ids_in(judge.requests[0]) == ["1", "2", "3"]
    assert [type(p).__name__ for p in judge.requests[0].messages[0].content] == ["JudgeImage", "str"]


def test_the_official_request_carries_only_model_and_temperature(rows):
    """instance.py's get_llm_response sends model, temperature 0.1 and the messages: no max_tokens, no top_p."""
    from t2ireason.judges import load_judge
    from t2ireason.testing_http import Answer, serve

    row = rows["logical/disjunctive/41"]
    preset = BENCH.presets["official"]
    with serve(Answer(answer({"1": 1, "2": 1, "3": 1, "4": 1})), models=["gpt-4o"]) as server:
        judge = load_judge(f"openai:gpt-4o@{server.base_url}", **preset["judge_kwargs"])
        try:
            [result] = BENCH.score([row], images(1), judge, **preset["options"])
        finally:
            judge.close()
    assert result.score == 1.0
    [received] = server.requests
    assert set(received.body) == {"model", "temperature", "messages"}
    assert (received.body["model"], received.body["temperature"]) == ("gpt-4o", 0.1)
