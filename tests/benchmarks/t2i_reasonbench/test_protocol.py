"""The T2I-ReasonBench judge protocol: the describe turn then one turn per group in one conversation
(one encoding per image), the paper's and the official scripts' texts, reply reading (first or last JSON, any
reasoning shape), re-asks and failures, the text score's requests, and the official image preparation."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from PIL import Image

from t2ireason.benchmarks.t2i_reasonbench import DIMENSIONS
from t2ireason.images import JudgeImage
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge

from .conftest import BENCH, CountingJudge, _row, answering, pairs_in

FIG14 = ("Based on the image and your previous description, answer the following questions: q1, q2, ...",
         "For each question, assign a score of 1, 0.5 or 0 according to the corresponding scoring criteria: c1, c2, ...",
         'provide your answer in json format: {"reason": [your detailed reasoning], "score": [s1,s2, ...]}')


def test_conversation_structure_and_one_encoding_per_image(scored_rows):
    rows, images, scores = scored_rows
    judge = ScriptedJudge(answering(scores, description="Four people at a table."))
    BENCH.score(rows, images, judge)
    describes, groups = judge.requests[:4], judge.requests[4:]
    for d in describes:
        assert len(d.messages) == 1 and d.messages[0].role == "user"
        img, text = d.messages[0].content
        assert isinstance(img, JudgeImage) and text == "Describe this image."
    for g in groups:
        assert [m.role for m in g.messages] == ["user", "assistant", "user"]
        assert g.messages[1].text == "Four people at a table."
        assert g.messages[2].images == []  # the image is sent once, in the first turn
        for sentence in FIG14:
            assert sentence in g.messages[2].text
    # the same JudgeImage object (one digest, one encoding) in every turn about an image
    owner = {id(d.messages[0].content[0]): i for i, d in enumerate(describes)}
    assert len(owner) == 4
    assert [owner[id(g.messages[0].content[0])] for g in groups] == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3]
    # irregular keys are renumbered q1.. for the judge, in order, with their criteria
    sci = pairs_in(groups[7])
    assert list(sci) == ["q1", "c1", "q2", "c2"] and sci["q1"].startswith("Does the ice cube float")


def _one_row(release):
    return [_row(release, "idiom", 2)], [Image.new("RGB", (8, 8), "gray")]  # reason: 3 questions, quality: aq1


@pytest.mark.parametrize("bad, complaint", [
    ("I think the image is fine.", "no JSON"),
    ('{"reason": ["a", "b"], "score": [1, 1]}', "expected 3 scores, got 2"),
    ('{"reason": ["a", "b", "c"], "score": [1, 0.7, 0]}', "0.7 is not one of 0, 0.5, 1"),
    ('{"reason": ["a", "b", "c"]}', 'no "score"'),
])
def test_bad_group_reply_is_reasked(release, bad, complaint):
    rows, images = _one_row(release)
    judge = ScriptedJudge(["A boy on a ladder.", bad, '{"reason": ["q"], "score": [1]}',
                           '{"reason": ["a", "b", "c"], "score": [1, 0.5, 0]}'])
    (result,) = BENCH.score(rows, images, judge)
    assert result.score == pytest.approx(0.9 * 0.5 + 0.1 * 1) and result.failure is None
    assert result.reasks == 1
    reask = judge.requests[3]
    assert [m.role for m in reask.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert reask.messages[3].text == bad and complaint in reask.messages[4].text
    assert len(result.replies) == 4  # describe, reason, quality, the re-asked reason


def test_failure_after_the_bound_is_recorded_not_zeroed(release):
    rows, images = _one_row(release)
    wrong = '{"reason": ["a"], "score": [1]}'  # one score for three questions, every time
    judge = ScriptedJudge(lambda r: "A boy." if r.messages[-1].text == "Describe this image." else wrong)
    (result,) = BENCH.score(rows, images, judge, max_reasks=1)
    assert result.score is None and result.failed
    assert "reason_evaluation" in result.failure and "expected 3 scores, got 1" in result.failure
    assert [q.score for q in result.questions] == [None, None, None, 1.0]  # aq1 answered fine
    assert result.subscores == {"reason": None, "quality": 1.0}
    assert result.reasks == 1
    table = BENCH.aggregate([result])
    assert table["dimensions"]["idiom"]["score"]["failed"] == 1 and math.isnan(table["idiom"])


def test_describe_failure_skips_the_questions(release):
    rows, images = _one_row(release)
    boom = Reply(text="", model="s", sampling={}, error="HTTP 500")
    judge = ScriptedJudge([boom, boom, boom])
    (result,) = BENCH.score(rows, images, judge)
    assert result.score is None and result.failure.startswith("describe turn: judge error: HTTP 500")
    assert len(judge.requests) == 1 and result.replies == ["[judge error] HTTP 500"]  # not re-sent
    assert [q.score for q in result.questions] == [None] * 4 and result.subscores == {"reason": None, "quality": None}


def test_unreadable_image_is_a_failure_not_a_crash(release, tmp_path):
    rows = [_row(release, "idiom", 1), _row(release, "idiom", 2), _row(release, "idiom", 3), _row(release, "idiom", 4)]
    scores = {p["question"]: 1 for r in rows for g in r["evaluation"] for p in g["pairs"]}
    (tmp_path / "empty.png").write_bytes(b"")
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, format="PNG")
    (tmp_path / "cut.png").write_bytes(buf.getvalue()[:-12])  # no IEND chunk: a torn write
    judge = ScriptedJudge(answering(scores))
    results = BENCH.score(rows, [tmp_path / "missing.png", tmp_path / "empty.png", tmp_path / "cut.png",
                                 Image.new("RGB", (8, 8))], judge)
    for r in results[:3]:
        assert r.score is None and r.failure.startswith("image could not be read") and not r.retryable
    assert results[3].score == pytest.approx(1.0)
    assert len(judge.requests) == 1 + 2  # only the readable image is described and asked about


#: the group turn of the authors' scripts (KaiyueSun98/T2I-ReasonBench, evaluation/Qwen2.5-VL/eval_*.py at
#: 83a91df3d36b43665bfc5e8166493665cc5a7f8f: the f-string q2/q3/q4, the group dict formatted into it)
def official_turn(group: dict) -> str:
    return ("Based on the image and your previous description, answer the following questions: q1, q2, ...\n"
            "For each question, assign a score of 1, 0.5 or 0 according to the corresponding scoring criteria: c1, c2, ...\n"
            f"Here are the questions and criteria: {group}\n"
            "Carefully consider the image and each question before responding, then provide your answer in json format:\n"
            '{"reason": [your detailed reasoning], "score": [s1,s2, ...]"}')


def test_official_template_sends_the_scripts_text_byte_for_byte(release):
    """Every group of every sample row (irregular keys, rubric objects, shuffled keys included) as the scripts
    would send it: the release's record loaded with json.load and printed into their f-string."""
    rows = release.configs["all"]
    judge = ScriptedJudge(lambda r: "An image." if r.messages[-1].text == "Describe this image."
                          else '{"reason": [], "score": []}')
    BENCH.score(rows, [Image.new("RGB", (8, 8))] * len(rows), judge, template="official", max_reasks=0)
    sent = {(r.metadata["id"], r.messages[2].text) for r in judge.requests if len(r.messages) == 3}
    expected = set()
    for dim, spec in DIMENSIONS.items():
        records = json.loads((BENCH.sample_path() / spec.files()[1]).read_text(encoding="utf-8"))
        for rec in records:
            for key, _ in spec.groups:
                expected.add((f"{dim}-{rec['id']:04d}", official_turn(rec[key])))
    assert sent == expected
    describe = judge.requests[0]
    assert [type(p).__name__ for p in describe.messages[0].content] == ["JudgeImage", "str"]  # image, then text


def test_first_or_last_json_of_a_reply(release):
    rows, images = _one_row(release)  # reason: 3 questions, quality: 1
    draft_then_final = ('Draft: {"reason": ["a", "b", "c"], "score": [0, 0, 0]}\nOn reflection:\n'
                        '```json\n{"reason": ["a", "b", "c"], "score": [1, 1, 1]}\n```')
    replies = ["A boy on a ladder.", draft_then_final, '{"reason": ["q"], "score": [1]}']
    (last,) = BENCH.score(rows, images, ScriptedJudge(replies))
    (first,) = BENCH.score(rows, images, ScriptedJudge(replies), reply_json="first")
    assert last.subscores["reason"] == 1.0 and first.subscores["reason"] == 0.0
    assert BENCH.presets["official"]["options"]["reply_json"] == "first"
    with pytest.raises(ValueError, match="reply_json must be one of"):
        BENCH.score(rows, images, ScriptedJudge(replies), reply_json="middle")


@pytest.mark.parametrize("reply", [
    '{"reason": 5, "score": [1, 0.5, 0]}', '{"reason": true, "score": [1, 0.5, 0]}',
    '{"reason": 1.5, "score": [1, 0.5, 0]}', '{"reason": null, "score": [1, 0.5, 0]}',
    '{"reason": [{"q1": "x"}, 2, null], "score": [1, 0.5, 0]}', '{"reason": {"q1": "x"}, "score": ["1", "0.5", "0"]}',
    '{"reason": ["a"], "score": [1.000000000035, 0.4999999999999, 0]}',
])
def test_any_reasoning_shape_is_kept_and_scores_stay_exact(release, reply):
    """Issue 16: these replies crashed the compute (TypeError) or gave 1.000000000035."""
    rows, images = _one_row(release)
    (result,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", reply, '{"reason": ["q"], "score": [1]}']))
    assert result.failure is None and [q.score for q in result.questions[:3]] == [1.0, 0.5, 0.0]
    assert result.score == pytest.approx(0.9 * 0.5 + 0.1) and 0 <= result.score <= 1
    assert all(q.reasoning is None or isinstance(q.reasoning, str) for q in result.questions)


@pytest.mark.parametrize("transient, retryable", [(True, True), (False, False)])
def test_a_failure_from_the_judges_infrastructure_is_retryable(release, transient, retryable):
    rows, images = _one_row(release)
    down = Reply(text="", model="s", sampling={}, error="connection refused", transient=transient)
    (result,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", down, '{"reason": ["q"], "score": [1]}']))
    assert result.score is None and "connection refused" in result.failure and result.retryable is retryable
    (described,) = BENCH.score(rows, images, ScriptedJudge([down]))
    assert described.score is None and described.retryable is retryable
    # an unusable reply is the judge's answer, not an outage: not retryable
    (unusable,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", "no idea", '{"reason": ["q"], "score": [1]}']),
                              max_reasks=0)
    assert unusable.score is None and not unusable.retryable


def test_text_mode_scores_descriptions_without_quality(scored_rows):
    rows, _, scores = scored_rows
    judge = CountingJudge(answering(scores))
    texts = ["A girl tells a secret.", "Recycling bins.", "Van Gogh painting.", "An ice cube floats."]
    results = BENCH.score(rows, texts, judge, mode="text")
    assert [r.score for r in results] == pytest.approx([0.9 * 0.625, 0.9 * 2.5 / 3, 0.7 * 0.5 + 0.2 * 0.5, 0.7 * 0.75])
    assert judge.batches == [6]  # no describe turn; reason + detail groups only (1+1+2+2)
    for req in judge.requests:
        assert len(req.messages) == 1 and req.images == []
        assert "Here is a textual description of an image" in req.messages[0].text
    assert "A girl tells a secret." in judge.requests[0].messages[0].text
    assert all(q.group != "quality" for r in results for q in r.questions)
    table = BENCH.aggregate(results)
    assert table["mode"] == "text" and table["dimensions"]["entity"]["max_score"] == pytest.approx(90)
    with pytest.raises(ValueError, match="text mode scores descriptions"):
        BENCH.score(rows[:1], [Image.new("RGB", (8, 8))], judge, mode="text")


def test_the_official_preset_composites_transparent_pixels_on_white_as_qwen_vl_utils(release, tmp_path):
    """The authors' eval_*.py hand qwen_vl_utils the file's path: its fetch_image pastes an RGBA image on
    white through its alpha and resizes it to multiples of 28 before the processor sees it."""
    pixels = np.zeros((30, 40, 4), dtype=np.uint8)
    pixels[..., 0] = 250  # red everywhere, transparent on the left half, opaque on the right
    pixels[:, 20:, 3] = 255
    path = tmp_path / "0001.png"
    Image.fromarray(pixels, "RGBA").save(path)
    row = _row(release, "idiom", 1)
    seen = {}
    for preset in ("official", "paper"):
        judge = ScriptedJudge(lambda r: "An image.")
        BENCH.score([row], [str(path)], judge, **{**BENCH.presets[preset]["options"], "max_reasks": 0})
        seen[preset] = judge.requests[0].messages[0].images[0]
    official, paper = seen["official"], seen["paper"]
    # 30 -> 28, 40 / 28 = 1.43 -> 28: 784 < 4*28*28, scaled up by sqrt(3136 / 1200) = 1.617 and rounded up:
    # 30 * 1.617 / 28 = 1.73 -> 56, 40 * 1.617 / 28 = 2.31 -> 84
    assert official.size == (84, 56) and paper.size == (40, 30)
    assert official.image.getpixel((5, 28)) == (255, 255, 255) and official.image.getpixel((80, 28)) == (250, 0, 0)
    assert paper.image.getpixel((5, 15)) == (250, 0, 0)  # as it is: PIL's conversion drops the alpha


@pytest.mark.parametrize("description", ["", "  \n"])
def test_an_empty_description_goes_on_under_the_official_template(release, description):
    """Issue 34.16: the scripts take whatever the describe turn gives (``out1``, unchecked) as the assistant
    turn of every group turn, an empty text too, and score the groups; the paper's template asks again."""
    rows, images = _one_row(release)  # reason: 3 questions, quality: 1
    groups = ['{"reason": ["a", "b", "c"], "score": [1, 0.5, 0]}', '{"reason": ["q"], "score": [1]}']
    judge = ScriptedJudge([description, *groups])
    (result,) = BENCH.score(rows, images, judge, **BENCH.presets["official"]["options"])
    assert result.failure is None and result.reasks == 0 and len(judge.requests) == 3
    assert all(r.messages[1].text == description for r in judge.requests[1:])  # the empty turn, as sent
    assert result.context["description"] == description and result.score == pytest.approx(0.5)
    paper = ScriptedJudge([description] * 3)
    (result,) = BENCH.score(rows, images, paper)
    assert result.score is None and "the description is empty" in result.failure and len(paper.requests) == 3
