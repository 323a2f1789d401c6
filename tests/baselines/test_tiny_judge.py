"""DSG, VIEScore and TIFA end to end with a real model: the tiny random LLaVA-layout VLM of
``t2ireason.testing`` loaded through ``hf:<folder>`` (the transformers backend, the response cache), the way a
user's judge is. Its answers mean nothing; what is checked is that they travel the real path: answer
probabilities teacher-forced on the model, JSON replies decoded under a schema, unreadable free text recorded
as failures with its raw text, never scored."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import numpy as np
import pytest
from PIL import Image

from t2ireason import testing
from t2ireason.baselines.tifa import TIFA, read_tifa_questions
from t2ireason.judges import AnswerQuery, load_judge
from t2ireason.judges.scripted import ScriptedJudge

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DSG_REPLIES = {"tuple": "1 | entity - whole (cat)\n2 | attribute - color (cat, orange)",
               "dependency": "1 | 0\n2 | 1", "question": "1 | Is there a cat?\n2 | Is the cat orange?"}


def pictures(n: int) -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)) for _ in range(n)]


@pytest.fixture(scope="module")
def vlm(tiny_models):
    return str(tiny_models["vlm"])


@pytest.fixture(scope="module")
def judge_kwargs(vlm):
    return {**testing.tiny_judge_kwargs(vlm), "device": "cpu", "batch_size": 8}


def scripted_llm() -> ScriptedJudge:
    def reply(request):
        text = request.messages[0].text
        task = ("tuple" if "describe each scene" in text else "dependency" if "parent tuples" in text else "question")
        return DSG_REPLIES[task]

    return ScriptedJudge(reply, model="scripted-llm")


def test_dsg_with_the_tiny_judge_answering_by_probability_and_in_chat(vlm, judge_kwargs, tmp_path):
    dsg = evaluate.load(str(ROOT / "metrics" / "dsg"), judge=f"hf:{vlm}", judge_kwargs=judge_kwargs,
                        llm=scripted_llm(), store=str(tmp_path / "criteria.sqlite"),
                        cache=str(tmp_path / "cache.sqlite"), progress=False)
    images = pictures(2)
    out = dsg.compute(predictions=images, references=["an orange cat", "an orange cat"], answers="probability")
    judge = dsg.judge
    assert type(judge).__name__ == "CachedJudge" and type(judge.judge).__name__ == "TransformersJudge"
    assert out["num_failed"] == 0 and out["judge"]["model"] == vlm
    assert out["judge"]["questions_by"]["model"] == "scripted-llm"
    direct = load_judge(f"hf:{vlm}", cache=False, **judge_kwargs)
    try:
        for result, picture in zip(out["per_image"], images):
            probabilities = result["context"]["probabilities"]
            assert set(probabilities) == {"1", "2"} and 0 <= result["score"] <= 1
            # what the model itself gives the question's "yes", asked directly
            question = ("Answer only with 'yes' or 'no'. Do not give other outputs or punctuation marks. "
                        "Question: Is there a cat?")
            [p_yes] = direct.answer_probability([AnswerQuery(picture, question, "yes")])
            assert probabilities["1"]["yes"] == pytest.approx(p_yes, rel=1e-4)
    finally:
        direct.close()
    # chat: the random model writes no "yes" or "no": each question fails with its raw text, the image unscored
    chat = dsg.compute(predictions=images[:1], references=["an orange cat"], max_reasks=0,
                       sampling={"temperature": 0.0, "max_tokens": 20})
    [result] = chat["per_image"]
    assert chat["num_failed"] == 1 and chat["scores"] == [None] and chat["dsg"] is None
    assert result["failure"].startswith("2 of 2 questions without an answer that counts; question 1")
    assert ("is not one of 'yes', 'no'" in result["failure"] or "cut off at the token limit" in result["failure"])
    assert len(result["replies"]) == 2 and all(q["score"] is None for q in result["questions"])


def test_viescore_with_the_tiny_judge_under_the_reply_schema(vlm, judge_kwargs, tmp_path):
    vie = evaluate.load(str(ROOT / "metrics" / "viescore"), judge=f"hf:{vlm}", judge_kwargs=judge_kwargs,
                        cache=str(tmp_path / "cache.sqlite"), progress=False)
    out = vie.compute(predictions=pictures(1), references=["an orange cat"], structured_output=True)
    [result] = out["per_image"]
    assert out["num_failed"] == 0, result["failure"]
    assert [q["question"] for q in result["questions"]] == ["semantic consistency", "naturalness", "artifacts"]
    sc, pq = (json.loads(text) for text in result["replies"])  # what the model wrote, parsed as the metric did
    assert result["subscores"]["SC"] == min(sc["score"]) and result["subscores"]["PQ"] == min(pq["score"])
    assert result["questions"][0]["reasoning"] == sc["reasoning"]
    assert out["scores"][0] == pytest.approx((min(sc["score"]) * min(pq["score"])) ** 0.5 / 10)


def test_tifa_with_the_tiny_judge_choosing_by_probability(vlm, judge_kwargs):
    rows = read_tifa_questions(ROOT / "tests" / "data" / "tifa" / "sample_question_answers.json")[1:]
    judge = load_judge(f"hf:{vlm}", cache=False, **judge_kwargs)
    try:
        [result] = TIFA(store=False).score(rows, pictures(1), judge, answers="probability")
    finally:
        judge.close()
    assert result.failure is None and len(result.questions) == 8
    for q, given in zip(result.questions, rows[0]["tifa_questions"]):
        probabilities = result.context["probabilities"][q.question]
        assert set(probabilities) == set(given["choices"]) and q.reasoning == max(probabilities, key=probabilities.get)
        assert q.score == float(q.reasoning == given["answer"])
    assert result.score == pytest.approx(sum(q.score for q in result.questions) / 8)
