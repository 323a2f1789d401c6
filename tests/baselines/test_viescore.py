"""VIEScore with scripted judges: the paper's text-to-image prompts (the text of its released GPT-4o results),
the reply format they ask for and the variants the authors' parser takes, malformed replies re-asked then
recorded, O = sqrt(min(SC) x min(PQ)) on 0-1, reasoning kept."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from PIL import Image

from t2ireason.baselines.viescore import VIEScore, parse_reply, reply_schema, viescore_requests
from t2ireason.images import as_image
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ReplyParseError
from t2ireason.prompts import verbatim

DATA = Path(__file__).resolve().parents[1] / "data" / "viescore"


def released(kind: str) -> dict:
    return json.loads((DATA / f"gpt4o_0shot_t2i_SD_{kind}.json").read_text())


def kind_of(request) -> str:
    return "SC" if "Text Prompt:" in request.messages[0].text else "PQ"


def test_the_prompts_are_the_text_of_the_papers_released_gpt4o_results():
    sc, pq = released("SC"), released("PQ")
    assert hashlib.sha256(verbatim("viescore", "sc_t2i").encode()).hexdigest() == (
        "17cc0818cedb3bf27b342aefcc9c43819740ba00422696aa4e02beaf67717d1a")
    for key, entry in sc.items():
        prompt = entry["prompt_input"].rsplit("Text Prompt: ", 1)[1].removesuffix("\n")
        requests = viescore_requests(prompt, as_image(Image.new("RGB", (8, 8))))
        assert requests["SC"].messages[0].content[0] == entry["prompt_input"], key
        assert requests["PQ"].messages[0].content[0] == pq[key]["prompt_input"], key
        # one user message: the text, then the image, as the authors' GPT-4o wrapper sends them
        assert [type(p).__name__ for p in requests["SC"].messages[0].content] == ["str", "JudgeImage"]
        assert len(requests["SC"].messages) == 1


def test_the_released_replies_give_sc_pq_and_o():
    sc, pq = released("SC"), released("PQ")
    replies = []
    for key in sc:  # each image's SC then PQ reply, in the format the context asks for
        replies += [json.dumps({"score": sc[key]["score"], "reasoning": sc[key]["reasoning"]}),
                    json.dumps({"score": pq[key]["score"], "reasoning": pq[key]["reasoning"]})]
    images = [Image.new("RGB", (8, 8))] * len(sc)
    prompts = [e["prompt_input"].rsplit("Text Prompt: ", 1)[1].removesuffix("\n") for e in sc.values()]
    results = VIEScore().score(prompts, images, ScriptedJudge(replies))
    for result, key in zip(results, sc):
        s, p = min(sc[key]["score"]), min(pq[key]["score"])
        assert result.subscores == {"SC": s, "PQ": p, "O": pytest.approx(math.sqrt(s * p))}
        assert result.score == pytest.approx(math.sqrt(s * p) / 10)
        assert [q.question for q in result.questions] == ["semantic consistency", "naturalness", "artifacts"]
        assert result.questions[0].reasoning == sc[key]["reasoning"]
        assert result.questions[2].reasoning == pq[key]["reasoning"]
    assert [r.subscores["SC"] for r in results] == [8.0, 0.0, 8.0]  # sample_1: "does not depict a blue bird"
    aggregate = VIEScore().aggregate(results)
    assert aggregate["viescore"] == pytest.approx(10 * sum(r.subscores["O"] for r in results) / 3)
    assert aggregate["SC"] == pytest.approx(16 / 3)


@pytest.mark.parametrize("text, n, expected", [
    ('{\n"score" : [7],\n"reasoning" : "The cat is there."\n}', 1, ([7.0], "The cat is there.")),
    ('||V^=^V||\n{\n"score" : [3, 9],\n"reasoning" : "odd light"\n}\n||V^=^V||', 2, ([3.0, 9.0], "odd light")),
    ('```json\n{"score": 6, "reasoning": "ok"}\n```', 1, ([6.0], "ok")),  # a bare score wrapped, as the authors do
    ("[6, 0]", 2, ([6.0, 0.0], None)),  # only the scores: taken, as the authors' parser takes them
    ("8", 1, ([8.0], None)),
])
def test_the_reply_formats_the_authors_parser_takes(text, n, expected):
    assert parse_reply(text, n) == expected


@pytest.mark.parametrize("text, n, match", [
    ('{"reasoning": "no score"}', 1, 'has no "score"'),
    ('{"score": [11], "reasoning": "x"}', 1, "above the maximum 10"),
    ('{"score": [7], "reasoning": "x"}', 2, "expected 2 scores, got 1"),
    ('{"score": [7, 8], "reasoning": ["x"]}', 2, '"reasoning" is not text'),
    ("I would rate it highly.", 1, "no JSON"),
    ('{"score": ["70%"], "reasoning": "x"}', 1, "percentage"),
])
def test_malformed_replies_are_refused(text, n, match):
    with pytest.raises(ReplyParseError, match=match):
        parse_reply(text, n)


def test_a_malformed_reply_is_re_asked_then_the_image_fails_with_every_reply():
    def reply(request):
        if kind_of(request) == "SC":
            return "Looks good to me."
        return '{"score": [7, 6], "reasoning": "natural"}'

    scripted = ScriptedJudge(reply)
    [result] = VIEScore().score(["a cat"], [Image.new("RGB", (8, 8))], scripted, max_reasks=1)
    assert result.score is None and result.failure.startswith("SC: unparsable reply: no JSON")
    assert result.replies == ["Looks good to me.", "Looks good to me.", '{"score": [7, 6], "reasoning": "natural"}']
    assert result.subscores == {"PQ": 6.0} and result.reasks == 1
    assert "could not be used" in scripted.requests[-1].messages[-1].text
    aggregate = VIEScore().aggregate([result])
    assert aggregate["viescore"] is None and aggregate["num_failed"] == 1 and aggregate["SC"] is None


def test_a_judge_that_could_not_answer_is_retryable_and_an_unreadable_image_is_not_asked(tmp_path):
    bad = tmp_path / "x.png"
    bad.write_bytes(b"")
    error = Reply(text="", model="m", sampling={}, error="timed out", transient=True)
    scripted = ScriptedJudge([error, '{"score": [1, 2], "reasoning": "r"}'])
    results = VIEScore().score(["a", "b"], [Image.new("RGB", (8, 8)), str(bad)], scripted)
    assert results[0].retryable and results[0].failure.startswith("SC: judge error: timed out")
    assert results[1].failure.startswith("image:") and len(scripted.requests) == 2


def test_structured_output_sends_the_reply_schema_and_options_are_checked():
    scripted = ScriptedJudge(['{"score": [5], "reasoning": "a"}', '{"score": [5, 5], "reasoning": "b"}'])
    [result] = VIEScore().score(["a"], [Image.new("RGB", (8, 8))], scripted, structured_output=True,
                                sampling={"temperature": 0.0, "max_tokens": 300})
    assert result.score == pytest.approx(0.5)
    assert scripted.requests[0].json_schema == reply_schema(1) and scripted.requests[1].json_schema == reply_schema(2)
    assert scripted.requests[0].sampling.max_tokens == 300
    with pytest.raises(TypeError, match="unknown viescore option"):
        VIEScore().score([], [], ScriptedJudge([]), answers="chat")
    setting = VIEScore().setting()
    assert setting.judge == "openai:gpt-4o-2024-05-13" and setting.judge_kwargs["sampling"].max_tokens == 1400


def test_the_aggregate_makes_a_table_of_the_mean_and_its_interval():
    vie = VIEScore()
    scripted = ScriptedJudge(lambda r: '{"score": [8], "reasoning": "a"}' if kind_of(r) == "SC"
                             else '{"score": [2, 6], "reasoning": "b"}')
    results = vie.score(["a", "b", "c"], [Image.new("RGB", (8, 8))] * 3, scripted)
    [table] = vie.paper_tables(vie.aggregate(results, n_resamples=200), "my-model")
    cell = table.rows["my-model"]["VIEScore"]
    assert table.title == "VIEScore (0-100)" and cell.value == pytest.approx(40.0)  # sqrt(8 x 2) x 10
    assert cell.low == pytest.approx(40.0) and cell.high == pytest.approx(40.0)


# -- issue 50: read strictly, and half scores as the authors' analysis reads them ------------------------------

@pytest.mark.parametrize("text, match", [
    ("{'score': [7], 'reasoning': 'single quotes'}", "not repaired"),
    ('{"score": [7], "reasoning": "a trailing comma",}', "not repaired"),
    ('{"score": [2], "reasoning": "first"} On second thought: {"score": [9], "reasoning": "last"}', "2 JSON objects"),
    ('||V^=^V||{"score": [7], "reasoning": "x",}||V^=^V||', "delimiters is not JSON"),
])
def test_a_reply_is_read_strictly_never_repaired_nor_read_by_its_last_object(text, match):
    with pytest.raises(ReplyParseError, match=match):
        parse_reply(text, 1)


def test_the_official_preset_truncates_half_scores_as_the_authors_analysis_does():
    def reply(request):
        if kind_of(request) == "SC":
            return '{"score": [7.5], "reasoning": "mostly"}'
        return '{"score": [9, 8.5], "reasoning": "natural"}'

    vie = VIEScore()
    [paper] = vie.score(["a cat"], [Image.new("RGB", (8, 8))], ScriptedJudge(reply))
    assert paper.subscores["SC"] == 7.5 and paper.subscores["PQ"] == 8.5  # read as given
    [official] = vie.score(["a cat"], [Image.new("RGB", (8, 8))], ScriptedJudge(reply),
                           **vie.setting("official").options)
    assert official.subscores["SC"] == 7.0 and official.subscores["PQ"] == 8.0  # int(): 7.5 -> 7 -> 0.7
    assert official.score == pytest.approx(math.sqrt(7 * 8) / 10)
    assert official.context["scores_as_given"] == {"SC": [7.5], "PQ": [9.0, 8.5]}
    with pytest.raises(ValueError, match="fractional_scores must be one of keep, truncate"):
        vie.score(["a cat"], [Image.new("RGB", (8, 8))], ScriptedJudge(reply), fractional_scores="round")
