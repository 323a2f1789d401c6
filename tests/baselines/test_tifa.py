"""TIFA with scripted judges: the authors' question-generation prompt and its reply format (the prompt's own
examples parse), questions made once per prompt and kept, multiple-choice answers read strictly, and the
released sample scored as the authors' tifa_score_benchmark scored it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from PIL import Image

from t2ireason.baselines.tifa import TIFA, parse_questions, question_request, read_tifa_questions
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ReplyParseError
from t2ireason.prompts import verbatim

DATA = Path(__file__).resolve().parents[1] / "data" / "tifa"

REPLY = """: cat, sofa
Activities: sleeping
Colors: orange
Counting:
Other attributes:
Questions and answers are below:
About cat (animal):
Q: is there a cat?
Choices: yes, no
A: yes
Q: what animal is on the sofa?
Choices: cat, dog, rabbit, bird
A: cat
About orange (color):
Q: what color is the cat?
Choices: orange, black, white, gray
A: orange
About sleeping (activity):
Q: is the cat sleeping?
Choices: yes, no
A: yes"""


def image() -> Image.Image:
    return Image.new("RGB", (8, 8))


def is_generation(request) -> bool:
    return "Given a image descriptions, generate" in request.messages[0].text


def test_the_prompt_is_the_authors_and_its_own_examples_parse():
    text = verbatim("tifa", "question_generation")
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "634c3cc842052abf6d7674b433d84cbc47c863782d79a9952c2afb475c94cd60")
    assert text.startswith("\nGiven a image descriptions, generate one or two multiple-choice questions")
    assert question_request("A red colored dog.", None).messages[0].text.endswith(
        "\n\nDescription: A red colored dog.\nEntities")
    examples = text.strip().split("\n\n")[1:-1]
    assert len(examples) == 12
    parsed = [parse_questions(e.split("\nEntities", 1)[1]) for e in examples]
    assert parsed[2][0] == [  # "A red colored dog."
        {"element": "dog", "element_type": "animal/human", "question": "is this a dog?", "choices": ["yes", "no"],
         "answer": "yes"},
        {"element": "dog", "element_type": "animal/human", "question": "what animal is in the picture?",
         "choices": ["dog", "cat", "bird", "fish"], "answer": "dog"},
        {"element": "red", "element_type": "color", "question": "is the dog red?", "choices": ["yes", "no"],
         "answer": "yes"},
        {"element": "red", "element_type": "color", "question": "what color is the dog?",
         "choices": ["red", "black", "white", "yellow"], "answer": "red"}]
    assert sum(len(p[0]) for p in parsed) == 109
    assert parsed[0][0][5]["choices"] == ["jacket", "t-shirt", "tuxedo", "swearter"]  # "Choices:jacket, ..." as printed


def test_the_filter_keeps_what_needs_no_second_model():
    reply = REPLY + "\nAbout sofa (furniture):\nQ: is there a sofa?\nChoices: yes, no\nA: yes"  # no such type
    reply += "\nAbout cat (animal):\nQ: is there a cat?\nChoices: yes, no\nA: yes"  # asked twice
    reply += "\nAbout cat (animal):\nQ: how many cats?\nChoices: 1, 2, 3\nA: one"  # its answer is no choice
    reply += "\n\nDescription: another caption\nEntities: x"  # past the stop sequence
    questions, notes = parse_questions(reply)
    assert [q["question"] for q in questions] == ["is there a cat?", "what animal is on the sofa?",
                                                  "what color is the cat?", "is the cat sleeping?"]
    assert notes == ["'is there a sofa?': element type 'furniture' is not one of the paper's",
                     "'is there a cat?': asked twice", "'how many cats?': its answer 'one' is none of its choices"]
    with pytest.raises(ReplyParseError, match="no question in the asked format"):
        parse_questions("Entities: cat\nI think there is a cat.")


def test_the_released_sample_scores_as_the_authors_scored_it():
    """The judge gives, for each released question, the answer mPLUG-large gave in the authors' released run:
    the same per-caption scores, tifa_average and accuracy_by_type."""
    rows = read_tifa_questions(DATA / "sample_question_answers.json")
    result = json.loads((DATA / "sample_evaluation_result.json").read_text())
    details = result["question_details"]
    # two captions, 11 and 8 questions
    assert [r["id"] for r in rows] == list(details) and sum(len(r["tifa_questions"]) for r in rows) == 19

    def reply(request):
        question = request.messages[0].content[1].split("Question: ", 1)[1].split(" Choices: ")[0]
        return next(d[question]["multiple_choice_vqa"] for d in details.values() if question in d)

    scripted = ScriptedJudge(reply)
    tifa = TIFA(store=False)
    scored = tifa.score(rows, [image()] * len(rows), scripted)
    assert [r.score for r in scored] == [pytest.approx(result["caption_scores"][r["id"]]) for r in rows]
    aggregate = tifa.aggregate(scored)
    assert aggregate["tifa"] == pytest.approx(100 * result["tifa_average"])
    assert aggregate["accuracy_by_type"] == {k: pytest.approx(100 * v) for k, v in result["accuracy_by_type"].items()}
    first = scripted.requests[0].messages[0]
    assert [type(p).__name__ for p in first.content] == ["JudgeImage", "str"]  # the image, then the question
    assert first.content[1] == ("Answer the multiple-choice question. Question: is this a surfer? Choices: yes, no "
                                "Answer:")
    assert not any(is_generation(r) for r in scripted.requests)  # given questions: no LLM


def test_questions_are_made_once_and_answers_must_be_a_choice(tmp_path):
    def reply(request):
        if is_generation(request):
            return REPLY
        question = request.messages[0].content[1]
        if "what color" in question:
            return "Orange."  # a choice, case and period aside
        if "what animal" in question:
            return "It looks like a fox."
        return "yes"

    scripted = ScriptedJudge(reply)
    tifa = TIFA(store=tmp_path / "q.sqlite")
    [result] = tifa.score(["an orange cat sleeping on a sofa"], [image()], scripted, max_reasks=1)
    assert result.score is None and "'what animal is on the sofa?'" in result.failure
    assert "is not one of 'cat', 'dog', 'rabbit', 'bird'" in result.failure
    assert [q.score for q in result.questions] == [1.0, None, 1.0, 1.0] and result.reasks == 1
    again = ScriptedJudge(lambda r: next((a for q, a in (("what animal", "cat"), ("what color", "black"))
                                          if q in r.messages[0].content[1]), "yes"))
    [result] = TIFA(store=tmp_path / "q.sqlite").score(["an orange cat sleeping on a sofa"], [image()], again)
    assert not any(is_generation(r) for r in again.requests)  # kept
    assert result.score == pytest.approx(3 / 4) and result.questions[2].reasoning == "black"


def test_answers_by_probability_take_the_likeliest_choice():
    given = [{"element": "cat", "element_type": "animal/human", "question": "what animal is this?",
              "choices": ["cat", "dog"], "answer": "cat"}]
    scripted = ScriptedJudge(probabilities=lambda q: {"cat": 0.3, "dog": 0.6}[q.answer])
    [result] = TIFA(store=False).score([{"prompt": "a cat", "tifa_questions": given}], [image()], scripted,
                                       answers="probability")
    assert result.score == 0.0 and result.questions[0].reasoning == "dog"
    assert result.context["probabilities"] == {"what animal is this?": {"cat": 0.3, "dog": 0.6}}


def test_a_prompt_whose_questions_cannot_be_written_fails_once_with_every_raw_reply(tmp_path):
    """The card says a failed question-writing step keeps every raw reply: each image's ``replies`` hold the
    LLM's, and a later evaluation reads the recorded failure without asking again (issue 50)."""
    never = ScriptedJudge(lambda r: "I would rather not." if is_generation(r) else "yes")
    [failed] = TIFA(store=tmp_path / "q.sqlite").score(["an orange cat"], [image()], never)
    assert failed.score is None and failed.replies == ["I would rather not."] * 3
    def answers(request):
        if is_generation(request):
            return REPLY
        question = request.messages[0].content[1]
        return "cat" if "what animal" in question else "orange" if "what color" in question else "yes"

    again = ScriptedJudge(answers)
    [still] = TIFA(store=tmp_path / "q.sqlite").score(["an orange cat"], [image()], again)
    assert again.requests == [] and still.replies == ["I would rather not."] * 3 and "not asked again" in still.failure
    [scored] = TIFA(store=tmp_path / "q.sqlite").score(["an orange cat"], [image()], again, retry_failed=True)
    assert scored.score == 1.0
