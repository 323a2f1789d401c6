"""The t2i_reasonscore evaluate module end to end: sample rows in, the paper's table out, through
``evaluate.load`` with a scripted judge; presets, text mode and input errors."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import datasets
import evaluate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.t2i_reasonbench import DIMENSIONS
from t2ireason.benchmarks.t2i_reasonbench.questions import _Q
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
METRIC = str(ROOT / "metrics" / "t2i_reasonscore")
BENCH = get_benchmark("t2i-reasonbench")


@pytest.fixture(scope="module")
def rows():
    release = BENCH.read_release(BENCH.sample_path())
    return release.configs["all"]  # every dimension's rows


def questions_asked(text: str) -> int:
    """How many questions a group turn asks: its JSON object of renumbered pairs (the paper's template), or the
    release's group printed as a Python dict (the official scripts' template)."""
    sent = re.search(r"criteria: (\{.*\})$", text, re.M).group(1)
    try:
        return sum(1 for k in json.loads(sent) if re.fullmatch(r"q\d+", k))
    except json.JSONDecodeError:
        return sum(1 for k in ast.literal_eval(sent) if _Q.match(k))


def half_on_first(request):
    """Describe; then score the first question of every group 0.5 and the others 1."""
    text = request.messages[-1].text
    if text == "Describe this image.":
        return "An image."
    n = questions_asked(text)
    return json.dumps({"reason": ["seen"] * n, "score": [0.5] + [1] * (n - 1)})


def expected(row, aggregation="paper", mode="image"):
    """The image score computed by hand from the row's group sizes."""
    means = {}
    for g in row["evaluation"]:
        n = len(g["pairs"])
        role = {"other_details_evaluation": "detail", "quality_evaluation": "quality"}.get(g["group"], "reason")
        means[role] = (0.5 + (n - 1)) / n
    if aggregation == "official":
        return means["reason"] if "detail" not in means else 0.7 * means["reason"] + 0.3 * means["detail"]
    w = {"idiom": (0.9, 0, 0.1), "textual": (0.9, 0, 0.1)}.get(row["dimension"], (0.7, 0.2, 0.1))
    total = w[0] * means["reason"] + w[1] * means.get("detail", 0)
    return total if mode == "text" else total + w[2] * means["quality"]


def images(n):
    return [Image.new("RGB", (16, 16), (10 * i, 0, 0)) for i in range(n)]


def test_end_to_end_paper_preset(rows):
    judge = ScriptedJudge(half_on_first)
    metric = evaluate.load(METRIC, judge=judge, cache=False, progress=False)
    out = metric.compute(predictions=images(len(rows)), references=rows)
    assert out["scores"] == pytest.approx([expected(r) for r in rows])
    for dim in DIMENSIONS:  # the configs but "all", which holds every row
        mine = [expected(r) for r in rows if r["dimension"] == dim]
        assert out[dim] == pytest.approx(100 * sum(mine) / len(mine))
    assert out["overall"] == pytest.approx(sum(out[d] for d in DIMENSIONS) / 4)
    assert out["num_images"] == 16 and out["num_failed"] == 0 and out["num_reasks"] == 0
    assert out["judge"]["preset"] == "paper" and out["aggregation"] == "paper"
    # 16 describe turns, then one turn per group: 2 per idiom/textual row, 3 per entity/scientific row
    assert len(judge.requests) == 16 + 4 * 2 * 2 + 4 * 2 * 3
    first = out["per_image"][0]
    assert first["id"] == "idiom-0001" and first["config"] == "idiom"
    assert [q["score"] for q in first["questions"]] == [0.5, 1, 1, 1, 0.5, 1]


def test_rows_through_a_dataset_and_image_paths(rows, tmp_path):
    """Rows as load_dataset gives them (decoded from Arrow) and images as file paths."""
    ds = datasets.Dataset.from_list(rows[8:12], features=BENCH.features)  # the entity rows
    paths = []
    for i, img in enumerate(images(4)):
        paths.append(str(tmp_path / f"{i + 1:04d}.png"))
        img.save(paths[-1])
    metric = evaluate.load(METRIC, judge=ScriptedJudge(half_on_first), cache=False, progress=False)
    out = metric.compute(predictions=paths, references=list(ds))
    assert out["scores"] == pytest.approx([expected(r) for r in rows[8:12]])
    assert [p["image"] for p in out["per_image"]] == paths


def test_official_preset_and_text_mode(rows):
    judge = ScriptedJudge(half_on_first)
    official = evaluate.load(METRIC, preset="official", judge=judge, cache=False, progress=False)
    out = official.compute(predictions=images(len(rows)), references=rows)
    assert out["scores"] == pytest.approx([expected(r, "official") for r in rows])
    assert out["aggregation"] == "official" and out["judge"]["preset"] == "official"
    assert "quality" in out["dimensions"]["idiom"]
    # the authors' text: the group as their scripts print it, the answer format on its own line
    turn = judge.requests[len(rows)].messages[-1].text
    assert "Here are the questions and criteria: {'q1': " in turn
    assert turn.endswith('json format:\n{"reason": [your detailed reasoning], "score": [s1,s2, ...]"}')

    judge = ScriptedJudge(half_on_first)
    text = evaluate.load(METRIC, judge=judge, cache=False, progress=False)
    out = text.compute(predictions=[f"description {i}" for i in range(len(rows))], references=rows, mode="text")
    assert out["scores"] == pytest.approx([expected(r, mode="text") for r in rows])
    assert out["mode"] == "text" and out["dimensions"]["idiom"]["max_score"] == pytest.approx(90)
    assert all(req.images == [] for req in judge.requests)
    assert "description 0" in judge.requests[0].messages[0].text
    # the official scripts have no text score: their template is refused in text mode
    with pytest.raises(ValueError, match="no text score"):
        official.compute(predictions=["a description"], references=rows[:1], mode="text")
    out = official.compute(predictions=["a description"], references=rows[:1], mode="text", template="paper")
    assert out["num_failed"] == 0


def test_input_errors_are_clear(rows):
    metric = evaluate.load(METRIC, judge=ScriptedJudge(half_on_first), cache=False, progress=False)
    with pytest.raises(ValueError, match="got 3 images"):
        metric.compute(predictions=images(3), references=rows[:4])
    r2i_like = {"id": "causal/x/1", "prompt": "p", "category": "causal", "questions": []}
    with pytest.raises(ValueError, match="lacks field"):
        metric.compute(predictions=images(1), references=[r2i_like])
    with pytest.raises(TypeError, match="unknown option"):
        metric.compute(predictions=images(1), references=rows[:1], temperature=0.5)
    with pytest.raises(ValueError, match="unknown preset 'gemini'"):
        evaluate.load(METRIC, preset="gemini", judge=ScriptedJudge([]), cache=False)


def test_presets_name_the_papers_judges():
    paper = BENCH.presets["paper"]
    assert paper["judge"] == "openai:gemini-2.5-pro@https://generativelanguage.googleapis.com/v1beta/openai/"
    assert paper["judge_kwargs"]["sampling"].temperature == 0
    assert paper["options"] == {"aggregation": "paper"}


def test_official_preset_declares_the_scripts_settings():
    """The authors' eval_*.py: Qwen2.5-VL-72B-Instruct, torch_dtype="auto", device_map="auto",
    generate(max_new_tokens=1000) with the checkpoint's own generation config; their prompt text, the first
    JSON object of a reply, their aggregation."""
    official = BENCH.presets["official"]
    assert official["judge"] == "hf:Qwen/Qwen2.5-VL-72B-Instruct"
    kwargs = official["judge_kwargs"]
    assert kwargs["generation_config"] == "model" and kwargs["sampling"].max_tokens == 1000
    assert (kwargs["dtype"], kwargs["device_map"]) == ("auto", "auto")
    assert official["options"] == {"aggregation": "official", "template": "official", "reply_json": "first",
                                   "image_preparation": "qwen_vl_utils"}


def test_the_transformers_backend_takes_the_official_presets_options():
    from t2ireason.judges import validate_judge
    from t2ireason.judges.transformers_judge import TransformersJudge

    if "generation_config" not in inspect.signature(TransformersJudge.__init__).parameters:
        pytest.skip("TransformersJudge(generation_config=...) has not landed on this branch yet")
    official = BENCH.presets["official"]
    validate_judge(official["judge"], official["judge_kwargs"])


# -- issue 16: no reply crashes the compute, none is silently a zero, scores stay in range -------------------

def test_replies_that_crashed_the_compute_are_scored(rows):
    """`{"reason": 5, ...}` (also true, 1.5) raised TypeError and aborted the whole compute."""
    row = rows[0]  # idiom: reason (4 questions), quality (2)
    for reason in ("5", "true", "1.5", '{"a": [1]}'):
        judge = ScriptedJudge(["An image.", f'{{"reason": {reason}, "score": [1, 1, 0.5, 0]}}',
                               f'{{"reason": {reason}, "score": [1.000000000035, 1]}}'])
        out = evaluate.load(METRIC, judge=judge, cache=False, progress=False).compute(
            predictions=images(1), references=[row])
        assert out["num_failed"] == 0 and out["scores"] == [pytest.approx(0.9 * 0.625 + 0.1)]
        assert 0 <= out["scores"][0] <= 1


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0, 0.5, 1, 1.000000000035, 0.4999999999999,
                                                                             -0.0, 2, 1e308, "1", "0.5", "0", "½"]),
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["reason", "score", "scores", "x"]),
                                                                 inner, max_size=3),
    max_leaves=8)


_score_items = st.sampled_from([0, 0.5, 1, 1.0, 1.000000000035, 0.4999999999999, -0.0, "1", "0.5", "0", " 1 ",
                                 True, False, None, 2, -0.5, "½", 1e308, [1], {"s": 1}])


@st.composite
def replies(draw, n: int):
    """What a judge may say to a group turn of ``n`` questions: valid answers, answers of the wrong shape or
    size, values of any type, prose, fences, a draft then a final answer, broken or cut JSON, nothing at all."""
    score = draw(st.one_of(st.lists(st.sampled_from([0, 0.5, 1]), min_size=n, max_size=n),
                           st.lists(_score_items, min_size=n, max_size=n),
                           st.lists(_score_items, max_size=n + 2), _json_values))
    value = {"reason": draw(_json_values), "score": score} if draw(st.integers(0, 4)) else draw(_json_values)
    body = json.dumps(value, allow_nan=True)
    shape = draw(st.sampled_from(["bare", "fenced", "prose", "draft", "cut", "python", "text"]))
    if shape == "fenced":
        return f"```json\n{body}\n```"
    if shape == "prose":
        return f"Looking at the image... {body} That is my answer."
    if shape == "draft":
        draft = draw(st.sampled_from(['{"score": [0]}', body]))
        return f"{draft} wait, corrected: {body}"
    if shape == "cut":
        return body[: draw(st.integers(0, len(body)))]
    if shape == "python":
        return repr(value)
    if shape == "text":
        return draw(st.text(max_size=40))
    return body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), reply_json=st.sampled_from(["last", "first"]))
def test_fuzzed_replies_never_crash_never_zero_silently_and_stay_in_range(rows, data, reply_json):
    # one reason group per image (official aggregation needs no other), so every reply is that group's
    picked = [r for r in rows if r["dimension"] in ("idiom", "textual")][:3]
    picked = [{**r, "evaluation": [g for g in r["evaluation"] if g["role"] == "reason"]} for r in picked]
    said: dict[str, list[str]] = {}

    def judge_reply(request):
        if request.messages[-1].text == "Describe this image.":
            return "An image."
        if data.draw(st.integers(0, 20), label="outage") == 0:
            return Reply(text="", model="s", sampling={}, error="HTTP 503", transient=True)
        text = data.draw(replies(questions_asked(request.messages[2].text)), label="reply")  # re-asks follow it
        said.setdefault(request.metadata["id"], []).append(text)
        return text

    results = BENCH.score(picked, images(len(picked)), ScriptedJudge(judge_reply), aggregation="official",
                          reply_json=reply_json, max_reasks=1)
    for row, result in zip(picked, results):
        texts = said.get(result.id, [])
        if result.score is None:
            assert result.failure  # a failure says why, and is counted
            continue
        assert result.failure is None and 0.0 <= result.score <= 1.0
        scores = [q.score for q in result.questions]
        assert all(s in (0.0, 0.5, 1.0) for s in scores) and len(scores) == len(row["evaluation"][0]["pairs"])
        assert result.score == pytest.approx(sum(scores) / len(scores))
        if 0.0 in scores:  # a zero comes from the judge's own words, never from a reply that could not be used
            assert any("0" in t for t in texts)
        if result.retryable:
            assert result.score is None
