"""DSG and VIEScore through an OpenAI-compatible judge over real HTTP (a local server on 127.0.0.1): the
preset's settings reach the request body when the judge is the preset's model behind another URL, the text
comes before the image, answer probabilities come from the top log-probabilities of a one-token reply."""

from __future__ import annotations

import math

import evaluate
import pytest
from PIL import Image

from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.testing_http import Answer, serve

KEY = "sk-test-baselines"


def test_viescore_sends_the_paper_presets_request_to_the_presets_model_behind_another_url():
    def behaviour(request):
        if "Text Prompt:" in request.text:
            return '{\n"score" : [9],\n"reasoning" : "the cube is red"\n}'
        return '{\n"score" : [8, 5],\n"reasoning" : "a seam"\n}'

    with serve(behaviour) as server:
        vie = evaluate.load("metrics/viescore", judge=f"openai:gpt-4o-2024-05-13@{server.base_url}",
                            judge_kwargs={"api_key": KEY}, cache=False, progress=False)
        out = vie.compute(predictions=[Image.new("RGB", (32, 32), "red")], references=["a red cube"])
        vie.judge.close()
    assert out["scores"] == [pytest.approx(math.sqrt(9 * 5) / 10)] and out["num_failed"] == 0
    asked = [r.body for r in server.requests if r.image_urls]  # the judgements (the client probes the endpoint first)
    assert len(asked) == 2
    # the SC and PQ requests are in flight together: the server may take either first
    [body] = [b for b in asked if "Text Prompt:" in b["messages"][0]["content"][0]["text"]]
    # only max_tokens, as the authors' payload: the API's default temperature and top_p stand (issue 50)
    assert body["model"] == "gpt-4o-2024-05-13" and "temperature" not in body and "top_p" not in body
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 1400  # the paper preset's, applied
    [message] = body["messages"]
    assert message["role"] == "user" and [p["type"] for p in message["content"]] == ["text", "image_url"]
    assert message["content"][0]["text"].endswith("Text Prompt: a red cube\n")
    assert out["judge"]["preset_settings"]["same_model"] and "sampling" in out["judge"]["preset_settings"]["applied"]


def test_dsg_reads_yes_and_no_from_the_top_log_probabilities():
    def writes(request):
        text = request.messages[0].text
        if "describe each scene" in text:
            return "1 | entity - whole (cube)\n2 | attribute - color (cube, red)"
        return "1 | 0\n2 | 1" if "parent tuples" in text else "1 | Is there a cube?\n2 | Is the cube red?"

    def behaviour(request):
        yes = math.log(0.8) if "cube?" in request.text else math.log(0.3)
        return Answer("yes", top_logprobs=[{"yes": yes, "no": math.log(1 - math.exp(yes)) - 0.01}])

    with serve(behaviour) as server:
        dsg = evaluate.load("metrics/dsg", judge=f"openai:gpt-4o@{server.base_url}", judge_kwargs={"api_key": KEY},
                            llm=ScriptedJudge(writes), store=False, cache=False, progress=False)
        out = dsg.compute(predictions=[Image.new("RGB", (32, 32), "red")], references=["a red cube"],
                          answers="probability")
        dsg.judge.close()
    [result] = out["per_image"]
    assert [q["reasoning"] for q in result["questions"]] == ["yes", "no"] and out["scores"] == [0.5]
    assert result["context"]["probabilities"]["1"]["yes"] == pytest.approx(0.8)
    bodies = [r.body for r in server.requests if r.image_urls]
    assert len(bodies) == 4 and all(b["max_tokens"] == 1 and b["top_logprobs"] == 20 and b["logprobs"] for b in bodies)
