"""ScriptedJudge: a real Judge whose replies are scripted (the stand-in for models in scoring tests)."""

import math

import pytest
from PIL import Image

from t2ireason.judges import AnswerQuery, ChatRequest, Judge, JudgeError, Reply, Sampling
from t2ireason.judges.scripted import ScriptedJudge


def req(text, **kw):
    return ChatRequest.simple(text, **kw)


def test_list_replies_are_consumed_in_order_across_calls_and_batches():
    judge = ScriptedJudge(["a", "b", "c"], batch_size=2)
    assert isinstance(judge, Judge)
    assert [r.text for r in judge.chat([req("1"), req("2")])] == ["a", "b"]
    assert [r.text for r in judge.chat([req("3")])] == ["c"]
    assert [r.messages[-1].text for r in judge.requests] == ["1", "2", "3"]
    with pytest.raises(JudgeError, match="ran out of scripted replies after 3"):
        judge.chat([req("4")])


def test_function_replies_see_the_request():
    judge = ScriptedJudge(lambda r: f"{len(r.images)} image(s): {r.messages[-1].text}")
    [reply] = judge.chat([ChatRequest.simple(Image.new("RGB", (4, 4)), "what?")])
    assert reply.text == "1 image(s): what?" and reply.ok and reply.finish_reason == "stop"


def test_reply_objects_pass_through_so_failures_can_be_simulated():
    failure = Reply(text="", model="scripted", sampling={}, error="HTTP 500")
    out = ScriptedJudge([failure, "fine"]).chat([req("a"), req("b")])
    assert out[0] is failure and not out[0].ok and out[1].ok


def test_sampling_is_recorded_with_each_reply():
    judge = ScriptedJudge(lambda r: "x", sampling=Sampling(max_tokens=64), model="m")
    default, explicit = judge.chat([req("a"), req("b", sampling=Sampling(temperature=0.7, seed=1))])
    assert default.sampling == Sampling(max_tokens=64).to_dict() and default.model == "m"
    assert explicit.sampling["temperature"] == 0.7 and explicit.sampling["seed"] == 1
    assert judge.identity() == {"backend": "scripted", "model": "m", "revision": None}


def test_on_reply_sees_every_reply_with_its_index():
    seen = []
    ScriptedJudge(list("abcde"), batch_size=2).chat([req(str(i)) for i in range(5)],
                                                    on_reply=lambda i, r: seen.append((i, r.text)))
    assert seen == list(enumerate("abcde"))


def test_probabilities_from_list_and_function():
    img = Image.new("RGB", (4, 4))
    judge = ScriptedJudge(probabilities=[0.9, 0.0])
    assert judge.yes_probability([img, img], ["a?", "b?"]) == [pytest.approx(0.9), 0.0]
    assert [q.question for q in judge.queries] == ["a?", "b?"] and judge.queries[0].answer == "Yes"
    fn = ScriptedJudge(probabilities=lambda q: 0.2 if q.answer == "No" else 0.8)
    assert fn.answer_probability([AnswerQuery(img, "q", "No"), AnswerQuery(img, "q")]) == [
        pytest.approx(0.2), pytest.approx(0.8)]


def test_probability_errors():
    img = Image.new("RGB", (4, 4))
    with pytest.raises(JudgeError, match="outside \\[0, 1\\]"):
        ScriptedJudge(probabilities=[1.5]).yes_probability([img], ["q"])
    with pytest.raises(JudgeError, match="ran out of scripted probabilities after 1"):
        ScriptedJudge(probabilities=[0.5]).yes_probability([img, img], ["q", "r"])
    with pytest.raises(ValueError, match="2 images but 1 questions"):
        ScriptedJudge(probabilities=[0.5]).yes_probability([img, img], ["q"])


def test_no_script_means_no_answers():
    with pytest.raises(JudgeError, match="ran out of scripted replies after 0"):
        ScriptedJudge().chat([req("a")])
    assert ScriptedJudge().chat([]) == []
    assert math.isclose(ScriptedJudge(probabilities=[1.0]).yes_probability([Image.new("RGB", (2, 2))], ["q"])[0], 1.0)
