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


# -- re-asks: the first valid answer of each question (issue 35.4) ------------------------------------------


def test_every_question_answered_across_the_reasks_is_scored_whatever_a_later_reply_says(rows):
    """As found: an instance whose every question got a valid score across its re-asks failed when a later
    reply carried an invalid value (or another one) for a question already answered, naming no question."""
    row = rows["logical/disjunctive/41"]  # weights 10, 4, 2
    judge = ScriptedJudge([answer({"1": 1, "2": 7, "3": 1}), answer({"1": 7, "2": 0.5, "3": 0})])
    [result] = BENCH.score([row], images(1), judge)
    assert result.failure is None and result.reasks == 1 and len(judge.requests) == 2
    assert [q.score for q in result.questions] == [1.0, 0.5, 1.0]  # question 3 keeps its first answer, 1
    assert result.score == pytest.approx((10 + 2 + 2) / 16)


def test_a_failure_names_the_questions_still_without_a_valid_score(rows):
    row = rows["logical/disjunctive/41"]
    replies = [answer({"1": 1, "2": 7, "3": 1}), answer({"1": 7, "2": "x"}), answer({"2": 2, "3": 9})]
    [result] = BENCH.score([row], images(1), ScriptedJudge(replies))
    assert result.score is None and result.context["unanswered"] == ["2"]
    assert result.failure.startswith("question(s) 2 unanswered after 2 re-ask(s): unparsable reply: no valid score "
                                     "for question(s) 2; question 2 2 is above the maximum 1")
    assert "question 1" not in result.failure and "question 3" not in result.failure  # answered: not read again
    [partial] = BENCH.score([row], images(1), ScriptedJudge(replies), missing="answered")
    assert partial.score == pytest.approx((10 + 2) / 12) and partial.context["unanswered"] == ["2"]


def test_a_score_within_rounding_of_a_level_is_that_level(rows):
    """Issue 35.10: 0.9999999999 is 1, as in T2I-ReasonBench and WorldGenBench (parsing.snapped): the
    official two-decimal rounding then gives the same cell as the exact 1 (0.38, not 0.37)."""
    weights = [8.0, 9.0, 7.0, 5.0, 3.0]
    row = dict(rows["logical/disjunctive/41"], questions=[
        {"id": str(i), "question": f"Is part {i} right?", "criterion": "1: right. 0.5: partly. 0: wrong.",
         "weight": w} for i, w in enumerate(weights, 1)])
    official = BENCH.presets["official"]["options"]
    scores = {}
    for one in (1, 0.9999999999, 1.0000000001):
        [result] = BENCH.score([row], images(1), ScriptedJudge([answer({"1": 0, "2": 0, "3": one, "4": one,
                                                                        "5": 0})]), **official)
        assert [q.score for q in result.questions] == [0, 0, 1, 1, 0] and result.failure is None
        scores[one] = result.score
    assert scores == {1: 0.38, 0.9999999999: 0.38, 1.0000000001: 0.38}  # round(12 / 32, 2)
    quarters = dict(row, questions=[dict(q, criterion="1: all. 0.75: most. 0.25: few. 0: none.") for q in row["questions"]])
    [result] = BENCH.score([quarters], images(1), ScriptedJudge([answer(dict.fromkeys("12345", 0.7499999999))]))
    assert [q.score for q in result.questions] == [0.75] * 5


# -- the official template read as the authors' evaluation.py reads replies (issue 34.15) -------------------


def test_the_official_template_reads_the_first_json_block_as_the_authors_do(rows):
    """evaluation.py: ``re.search(r'```json\\n(.*?)\\n```')``, the FIRST block; the paper template reads the last."""
    row = rows["logical/disjunctive/41"]
    reply = ('Draft:\n```json\n{"1": 0, "2": 0, "3": 0}\n```\nCorrected:\n```json\n{"1": 1, "2": 1, "3": 1}\n```')
    official = BENCH.presets["official"]["options"]
    [first] = BENCH.score([row], images(1), ScriptedJudge([reply]), **official)
    [last] = BENCH.score([row], images(1), ScriptedJudge([reply]), **BENCH.presets["paper"]["options"])
    [chosen] = BENCH.score([row], images(1), ScriptedJudge([reply]), **official, reply_json="last")
    assert (first.score, last.score, chosen.score) == (0.0, 1.0, 1.0)
    # no ```json block: the whole reply must be JSON (control characters removed), as theirs
    [bare] = BENCH.score([row], images(1), ScriptedJudge(['{"1": 1,\n\t"2": 0.5, "3": 0}']), **official)
    assert bare.score == round((10 + 2) / 16, 2) and bare.reasks == 0
    judge = ScriptedJudge(['My scores: {"1": 1, "2": 0.5, "3": 0}', '```json\n{"1": 1, "2": 0.5, "3": 0}\n```'])
    [prose] = BENCH.score([row], images(1), judge, **official)
    assert prose.reasks == 1 and "no ```json block closed in it) is not valid JSON" in judge.requests[1].messages[-1].text
    with pytest.raises(ValueError, match="reply_json must be one of last, first, got 'middle'"):
        BENCH.score([row], images(1), ScriptedJudge([reply]), reply_json="middle")


def test_a_reply_cut_inside_its_json_is_never_scored_under_the_official_preset(rows):
    """A reply whose JSON stops half way with ``finish_reason`` "stop": the authors' ``json.loads`` fails and
    their script skips the instance; the official preset neither repairs it nor scores part of its questions."""
    row = rows["logical/disjunctive/41"]
    cut = 'Analysis.\n```json\n{\n    "1": 1,\n    "2": 0.'
    judge = ScriptedJudge([cut] * 3)
    [result] = BENCH.score([row], images(1), judge, **BENCH.presets["official"]["options"])
    assert result.score is None and [q.score for q in result.questions] == [None, None, None]
    assert len(judge.requests) == 3 and "the reply (no ```json block closed in it) is not valid JSON" in result.failure
    assert result.context["unanswered"] == ["1", "2", "3"]  # a failure, not a score on part of the questions


@pytest.mark.parametrize("preset, tries", [("official", 3), ("paper", 7)])
def test_the_official_preset_tries_a_request_as_often_as_the_authors_client(rows, preset, tries):
    """instance.py calls ``OpenAI(api_key=...)``: the openai package's 2 retries, 3 tries in all; the
    project's default is 6 retries."""
    from t2ireason.judges import load_judge
    from t2ireason.testing_http import Fail, serve

    kwargs = {**BENCH.presets[preset]["judge_kwargs"], "check": False, "on_unavailable": "record",
              "backoff_base": 0.001, "backoff_max": 0.002}
    with serve(Fail(500), models=["gpt-4o"]) as server:
        judge = load_judge(f"openai:gpt-4o@{server.base_url}", **kwargs)
        try:
            [result] = BENCH.score([rows["logical/disjunctive/41"]], images(1), judge,
                                   **BENCH.presets[preset]["options"])
        finally:
            judge.close()
    assert len(server.requests) == tries
    assert result.score is None and result.retryable and "500" in result.failure
